"""tether log: the dataset's commits, newest first, with their object changes;
commits of other files of the repository are not the dataset's."""
import os
from datetime import datetime, timezone

import pytest

from conftest import AUTHOR_EMAIL, AUTHOR_NAME, dated

T0 = 1_700_000_000  # commit times of history(): T0, T0+60, ... one a minute


def history(ds):
    """c1 adds a and d; an unrelated git commit; c2 changes d and adds b; another
    unrelated commit; c3 removes b (the manifest) with a two-line message.
    Returns the three tether commits' ids and the pins at each."""
    ds.write("data/a", "a")
    ds.write("data/d/x", "x")
    ds.tether("add", "a", "data/a", "--kind", "file")
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    c1 = ds.tj("commit", "-m", "first", env=dated(T0))["commit"]
    pins1 = {k: ds.manifest(k)["pin"] for k in ("a", "d")}
    ds.write("README.md", "readme\n")
    ds.git_commit_all("docs only", "README.md", env=dated(T0 + 60))
    ds.write("data/d/y", "y")
    ds.write("data/b", "b")
    ds.tether("add", "b", "data/b", "--kind", "file")
    c2 = ds.tj("commit", "-m", "second", env=dated(T0 + 120))["commit"]
    pins2 = {k: ds.manifest(k)["pin"] for k in ("a", "b", "d")}
    ds.write("README.md", "readme\nmore\n")
    ds.git_commit_all("more docs", "README.md", env=dated(T0 + 180))
    os.remove(ds.manifest_path("b"))
    c3 = ds.tj("commit", "-m", "third: drop b\n\nb was a mistake", env=dated(T0 + 240))["commit"]
    return (c1, c2, c3), (pins1, pins2)


def test_log_lists_dataset_commits_newest_first(ds):
    (c1, c2, c3), (pins1, pins2) = history(ds)
    assert ds.commit_count() == 5
    r = ds.tj("log")
    commits = r["commits"]
    assert [c["id"] for c in commits] == [c3, c2, c1]
    assert [c["short"] for c in commits] == [c3[:7], c2[:7], c1[:7]]
    assert [c["summary"] for c in commits] == ["third: drop b", "second", "first"]
    assert commits[0]["message"].rstrip("\n") == "third: drop b\n\nb was a mistake"
    for c in commits:
        assert c["author"] == AUTHOR_NAME
        assert c["email"] == AUTHOR_EMAIL
    assert [c["time"] for c in commits] == [T0 + 240, T0 + 120, T0]
    for c in commits:
        assert c["time"] == int(ds.git("log", "-1", "--format=%at", c["id"]).strip())
    assert commits[2]["objects"] == [
        {"key": "a", "change": "added", "pin": pins1["a"]},
        {"key": "d", "change": "added", "pin": pins1["d"]},
    ]
    assert commits[1]["objects"] == [
        {"key": "b", "change": "added", "pin": pins2["b"]},
        {"key": "d", "change": "changed", "pin": pins2["d"]},
    ]
    assert commits[0]["objects"] == [{"key": "b", "change": "removed", "pin": pins2["b"]}]


def test_log_max_count_and_start_revision(ds):
    (c1, c2, c3), _ = history(ds)
    assert [c["id"] for c in ds.tj("log", "-n", "1")["commits"]] == [c3]
    assert [c["id"] for c in ds.tj("log", "--max-count=2")["commits"]] == [c3, c2]
    assert [c["id"] for c in ds.tj("log", c2)["commits"]] == [c2, c1]
    # from a commit that is not the dataset's: the dataset's commits before it
    assert [c["id"] for c in ds.tj("log", "HEAD~1")["commits"]] == [c2, c1]
    assert [c["id"] for c in ds.tj("log", "HEAD~1", "-n", "1")["commits"]] == [c2]


def test_log_text(ds):
    (c1, c2, c3), (pins1, pins2) = history(ds)
    p = ds.tether("log", "-n", "2")

    def date(cid):
        t = int(ds.git("log", "-1", "--format=%at", cid).strip())
        return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")

    assert p.stdout == (
        f"commit {c3}\n"
        f"Author: {AUTHOR_NAME} <{AUTHOR_EMAIL}>\n"
        f"Date:   {date(c3)}\n"
        "\n"
        "    third: drop b\n"
        "\n"
        "    b was a mistake\n"
        "\n"
        f"    - b pin {pins2['b']}\n"
        "\n"
        f"commit {c2}\n"
        f"Author: {AUTHOR_NAME} <{AUTHOR_EMAIL}>\n"
        f"Date:   {date(c2)}\n"
        "\n"
        "    second\n"
        "\n"
        f"    + b pin {pins2['b']}\n"
        f"    ~ d pin {pins2['d']}\n"
    )


def test_log_before_any_commit(ds):
    assert ds.tj("log") == {"commits": []}
    assert ds.tether("log").stdout == ""
    # a repository with commits, none of them the dataset's
    ds.write("README.md", "r\n")
    ds.git_commit_all("unrelated", "README.md")
    assert ds.tj("log") == {"commits": []}


def test_log_unknown_revision(ds):
    history(ds)
    p = ds.tether("log", "nope", check_rc=1)
    assert "unknown revision 'nope'" in p.stderr
    assert p.stdout == ""


def test_log_bad_count(ds):
    for bad in ("0", "-1", "x", ""):
        p = ds.tether("log", "-n", bad, check_rc=2)
        assert "for 'log'" in p.stderr


def test_log_orders_same_second_commits_by_ancestry(ds):
    ids = []
    for i in range(4):
        ds.write(f"data/f{i}", str(i))
        ds.tether("add", f"f{i}", f"data/f{i}", "--kind", "file")
        ids.append(ds.tj("commit", "-m", f"c{i}", env=dated(T0))["commit"])
    assert ds.git("log", "--format=%H").split() == ids[::-1]
    assert [c["id"] for c in ds.tj("log")["commits"]] == ids[::-1]


def test_log_dates_are_local_iso_8601(ds):
    ds.write("data/a", "a")
    ds.tether("add", "a", "data/a", "--kind", "file")
    ds.tether("commit", "-m", "dated", env=dated(T0))  # 2023-11-14T22:13:20Z
    p = ds.tether("log", env={"TZ": "XYZ-02:30"})  # POSIX TZ: 2 h 30 east of UTC
    assert "Date:   2023-11-15T00:43:20+02:30\n" in p.stdout
    p = ds.tether("log", env={"TZ": "ABC+05"})
    assert "Date:   2023-11-14T17:13:20-05:00\n" in p.stdout
