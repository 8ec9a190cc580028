"""tether export: the dataset's history as tables, read back by each
format's reference reader (Python's sqlite3, csv and json; pyarrow and
duckdb for Parquet) and compared with what export_expect.py computes from
git itself and the committed manifests.

The history: 50 commits over a mutable directory and a file (kind file),
another git repository (kind git) and an Icechunk repository, on two
branches (main and side), with a lightweight and an annotated tag; and a
small dataset in a jj repository for change ids and bookmarks."""
import csv
import json
import os
import sqlite3
import subprocess

import icechunk_oracle as oracle  # first: it quiets icechunk's logging
import pytest

from conftest import _new_repo, dated, describe
from export_expect import (BOOL_COLUMNS, COLUMNS, INT_COLUMNS, all_commits, expected_tables, git, git_refs,
                           meta_subset, sorted_rows)
from test_git_backend import find_jj, jj_init, jj_problem  # noqa: F401
from test_git_backend import jj_env, make_dataset

TABLES = list(COLUMNS)


def build_history(base):
    ds = _new_repo(base, "dataset")
    ds.tether("init")
    code = _new_repo(base, "code")
    code.write("README", "code v0\n")
    code.git_commit_all("code v0", "README")
    ic = base / "imaging.icechunk"
    oracle.create(ic)
    ds.write("data/plates/p0.csv", "well,value\nA1,0\n")
    ds.write("data/samples.csv", "sample\ns0\n")
    ds.tether("add", "raw/plates", "data/plates", "--kind", "file", "--file", "mutable")
    ds.tether("add", "raw/samples", "data/samples.csv", "--kind", "file", "--file", "mutable")
    ds.tether("add", "code", str(code.root), "--kind", "git", "--write", "none")
    ds.tether("add", "imaging", str(ic), "--kind", "icechunk", "--write", "none")
    for i in range(50):
        step = i % 4
        if step == 0:
            ds.write(f"data/plates/p{i}.csv", f"well,value\nA1,{i}\n")
        elif step == 1:
            ds.write("data/samples.csv", f"sample\ns{i}\n")
        elif step == 2:
            code.write("README", f"code v{i}\n")
            code.git_commit_all(f"code v{i}", "README")
        else:
            oracle.commit(ic)
        if i == 31:
            ds.tether("new", "-b", "side")
        if i == 41:
            ds.tether("new", "main")
        ds.tether("commit", "-m", f"step {i}\n\nbody of step {i}, with \"quotes\", commas\tand a tab", env=dated(1_700_000_000 + 60 * i))
        if i == 20:
            ds.git("tag", "v1")
    ds.git("tag", "-a", "-m", "release", "v2", "side")
    return ds


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    ds = build_history(tmp_path_factory.mktemp("export"))
    commits = all_commits(ds.root)
    assert len(commits) == 50
    return ds, expected_tables(str(ds.root), commits, ds.dataset_id(), git_refs(str(ds.root)))


def typed(table, row):
    """A row as read from text (CSV) or SQLite, in Python types."""
    out = []
    for name, v in zip(COLUMNS[table], row):
        if v is None or v == "":
            out.append(v if v is None else ("" if name not in INT_COLUMNS | BOOL_COLUMNS else None))
        elif name in INT_COLUMNS:
            out.append(int(v))
        elif name in BOOL_COLUMNS:
            out.append(v in (1, "true", True))
        else:
            out.append(v)
    return tuple(out)


def check_tables(got, want, revisions="all refs", vcs="git"):
    for table in TABLES:
        if table == "meta":
            continue
        g, w = sorted_rows(got[table]), sorted_rows(want[table])
        for a, b in zip(g, w):
            diff = {c: (x, y) for c, x, y in zip(COLUMNS[table], a, b) if x != y}
            assert not diff, f"{table}: {a[:2]}: {diff}"
        assert len(g) == len(w), table
    meta = dict(got["meta"])
    assert sorted_rows(meta_subset(got["meta"])) == sorted_rows(want["meta"])
    assert meta["revisions"] == revisions
    assert meta["vcs"] == vcs


def read_sqlite(path):
    db = sqlite3.connect(path)
    got = {}
    for table in TABLES:
        cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        assert cols == COLUMNS[table], table
        got[table] = [typed(table, r) for r in db.execute(f"SELECT * FROM {table}")]
    db.close()
    return got


def read_csv_dir(path):
    """CSV keeps no null apart from an empty string when read by Python's
    csv module; the expected side is read with the same loss."""
    got = {}
    for table in TABLES:
        with open(path / f"{table}.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        assert rows[0] == COLUMNS[table]
        got[table] = [typed(table, r) for r in rows[1:]]
    return got


def csv_view(want):
    """What survives CSV: a null and an empty string both read as ''."""
    out = {}
    for table, rows in want.items():
        out[table] = [tuple("" if v is None and name not in INT_COLUMNS | BOOL_COLUMNS else v
                            for name, v in zip(COLUMNS[table], r)) for r in rows]
    return out


def read_jsonl_dir(path):
    got = {}
    for table in TABLES:
        rows = []
        with open(path / f"{table}.jsonl", encoding="utf-8") as f:
            for line in f:
                o = json.loads(line)
                assert list(o) == COLUMNS[table]
                rows.append(tuple(o.values()))
        got[table] = rows
    return got


def test_sqlite_holds_the_history_git_and_the_manifests_hold(history, tmp_path):
    ds, want = history
    report = ds.tj("export", tmp_path / "h.sqlite")
    assert report["format"] == "sqlite"
    assert report["tables"]["commits"] == 50
    check_tables(read_sqlite(tmp_path / "h.sqlite"), want)


def test_csv_holds_the_same(history, tmp_path):
    ds, want = history
    ds.tether("export", tmp_path / "h.csv")
    got = read_csv_dir(tmp_path / "h.csv")
    check_tables(got, csv_view(want))


def test_csv_keeps_null_apart_from_an_empty_string(history, tmp_path):
    ds, _ = history
    ds.tether("export", tmp_path / "h.csv")
    lines = (tmp_path / "h.csv" / "commits.csv").read_bytes().split(b"\r\n")
    # change_id is null in a git repository: an empty unquoted field
    assert lines[1].split(b",")[1] == b""


def test_jsonl_holds_the_same(history, tmp_path):
    ds, want = history
    ds.tether("export", tmp_path / "out", "--format", "jsonl")
    check_tables(read_jsonl_dir(tmp_path / "out"), want)


def test_a_rerun_writes_the_same_bytes(history, tmp_path):
    ds, _ = history
    for name in ("a.sqlite", "b.sqlite"):
        ds.tether("export", tmp_path / name)
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    ds.tether("export", tmp_path / "c.jsonl")
    first = {p.name: p.read_bytes() for p in (tmp_path / "c.jsonl").iterdir()}
    ds.tether("export", tmp_path / "c.jsonl")  # replaces the earlier export
    assert {p.name: p.read_bytes() for p in (tmp_path / "c.jsonl").iterdir()} == first
    # a file export replaced (swapped into place, the earlier one removed)
    (tmp_path / "b.sqlite").write_bytes(b"an earlier file")
    ds.tether("export", tmp_path / "b.sqlite")
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.sqlite", "b.sqlite", "c.jsonl"]


def test_rev_exports_the_ancestors_only(history, tmp_path):
    ds, _ = history
    ds.tether("export", tmp_path / "side.sqlite", "--rev", "side")
    commits = [c for c in git(str(ds.root), "rev-list", "side").split("\n") if c]
    assert 0 < len(commits) < 50
    want = expected_tables(str(ds.root), commits, ds.dataset_id(), git_refs(str(ds.root)))
    check_tables(read_sqlite(tmp_path / "side.sqlite"), want, revisions='["side"]')


def test_refs_name_branches_and_peeled_tags(history, tmp_path):
    ds, _ = history
    ds.tether("export", tmp_path / "h.sqlite")
    db = sqlite3.connect(tmp_path / "h.sqlite")
    refs = {(t, n): c for t, n, c in db.execute("SELECT type, name, commit_id FROM refs")}
    assert refs[("branch", "main")] == ds.git("rev-parse", "main").strip()
    assert refs[("branch", "side")] == ds.git("rev-parse", "side").strip()
    assert refs[("tag", "v2")] == ds.git("rev-parse", "v2^{commit}").strip()
    assert refs[("tag", "v1")] == ds.git("rev-parse", "v1").strip()
    # every object row joins a commit, and every state id a state
    assert db.execute("SELECT count(*) FROM objects o LEFT JOIN commits c USING (commit_id) "
                      "WHERE c.commit_id IS NULL").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM objects o LEFT JOIN object_states s USING (state_id) "
                      "WHERE o.state_id IS NOT NULL AND s.state_id IS NULL").fetchone() == (0,)
    kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM objects")}
    assert kinds == {"file", "git", "icechunk"}


def test_bad_arguments_are_refused_and_nothing_is_written(history, tmp_path):
    ds, _ = history
    p = ds.tether("export", tmp_path / "h.txt", check_rc=2)
    assert "--format" in p.stderr and not (tmp_path / "h.txt").exists()
    p = ds.tether("export", tmp_path / "h.x", "--format", "xml", check_rc=2)
    assert "unknown format 'xml'" in p.stderr
    p = ds.tether("export", tmp_path / "h.sqlite", "--rev", "no-such-branch", check_rc=None)
    assert p.returncode != 0 and "no-such-branch" in p.stderr
    assert not (tmp_path / "h.sqlite").exists()
    # a directory that is no earlier export is not replaced
    keep = tmp_path / "mine.csv"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    p = ds.tether("export", keep, check_rc=3)
    assert "not an earlier export" in p.stderr
    assert (keep / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["mine.csv"]


def test_status_loads_no_sql_library(history):
    ds, _ = history
    p = ds.tether("status", env={"LD_DEBUG": "files"}, check_rc=None)
    loaded = p.stderr
    for lib in ("tether-sql.so", "libsqlite3", "libpq"):
        assert lib not in loaded, lib
    p = ds.tether("export", "/dev/null/x.sqlite", env={"LD_DEBUG": "files"}, check_rc=None)
    assert "tether-sql.so" in p.stderr
    # the history, its commits and refs are read without libgit2 in a plain
    # git repository (the native reader's commits_info and list_refs)
    p = ds.tether("export", "/dev/null/x.csv", env={"LD_DEBUG": "files"}, check_rc=None)
    assert "calling init: " in p.stderr and "libgit2" not in p.stderr
    # Postgres's module and libpq are publish's and import's, not a file export's
    assert "tether-sql-pg.so" not in p.stderr and "libpq" not in p.stderr


def jj_dataset(tmp_path, jj_problem):
    """A jj repository with one object and three commits of it."""
    ds = make_dataset(tmp_path, "jj", jj_problem)
    ds.write("data/a.csv", "a\n")
    ds.tether("add", "raw/a", "data/a.csv", "--kind", "file", "--file", "mutable")
    for i in range(3):
        ds.write("data/a.csv", f"a{i}\n")
        ds.tether("commit", "-m", f"jj step {i}")
    return ds


def test_jj_commits_carry_change_ids_and_bookmarks(tmp_path, jj_problem):  # noqa: F811
    ds = jj_dataset(tmp_path, jj_problem)
    p = subprocess.run(["jj", "bookmark", "create", "-r", "@-", "release"], cwd=ds.root, env=ds.env,
                       capture_output=True, text=True)
    assert p.returncode == 0, describe(p)
    ds.tether("export", tmp_path / "jj.jsonl")
    got = read_jsonl_dir(tmp_path / "jj.jsonl")
    p = subprocess.run(["jj", "log", "--ignore-working-copy", "--no-graph", "-r", "all() & ~root()", "-T",
                        'commit_id ++ " " ++ change_id ++ "\\n"'], cwd=ds.root, env=ds.env,
                       capture_output=True, text=True)
    change = dict(line.split(" ") for line in p.stdout.split("\n") if line)
    store_dir = ds.root / ".jj" / "repo" / "store"
    store = str((store_dir / (store_dir / "git_target").read_text().strip()).resolve())
    head = subprocess.run(["jj", "log", "--ignore-working-copy", "--no-graph", "-r", "@-", "-T", "commit_id"],
                          cwd=ds.root, env=ds.env, capture_output=True, text=True).stdout.strip()
    want = expected_tables(store, list(change), ds.dataset_id(), [("bookmark", "release", head)],
                           change_ids=change)
    # jj's commits hold the dataset's files at its root: no listings here
    check_tables(got, want, vcs="jj")
    assert all(row[1] for row in got["commits"])


def test_parquet_read_by_pyarrow_and_duckdb_holds_the_same(history, tmp_path):
    import duckdb
    import pyarrow.parquet as pq
    ds, want = history
    ds.tether("export", tmp_path / "h.parquet")
    by_arrow, by_duck = {}, {}
    for table in TABLES:
        f = tmp_path / "h.parquet" / f"{table}.parquet"
        t = pq.read_table(f)
        assert t.column_names == COLUMNS[table]
        by_arrow[table] = [tuple(r.values()) for r in t.to_pylist()]
        by_duck[table] = duckdb.sql(f"SELECT * FROM read_parquet('{f}')").fetchall()
    check_tables(by_arrow, want)
    check_tables(by_duck, want)
    first = {p.name: p.read_bytes() for p in (tmp_path / "h.parquet").iterdir()}
    ds.tether("export", tmp_path / "h.parquet")
    assert {p.name: p.read_bytes() for p in (tmp_path / "h.parquet").iterdir()} == first


def test_jsonl_and_csv_escape_control_characters(tmp_path):
    """The JSON Lines writer escapes strings itself: quote, backslash, the
    short escapes and every other control character as \\u00XX, the rest
    (DEL, non-ASCII, U+2028) as it is; CSV quotes what needs it."""
    ds = _new_repo(tmp_path, "ctl")
    ds.tether("init")
    ds.write("data/a.csv", "a\n")
    ds.tether("add", "a", "data/a.csv", "--kind", "file", "--file", "mutable")
    message = "ctl \x01\x08\x0c\x1b\x1f\x7f \\ \"q\" \t é \u2028 end"
    ds.tether("commit", "-m", message)
    ds.tether("export", tmp_path / "o.jsonl")
    raw = (tmp_path / "o.jsonl" / "commits.jsonl").read_bytes()
    want = ('"ctl \\u0001\\b\\f\\u001B\\u001F\x7f \\\\ \\"q\\" \\t é \u2028 end').encode()
    assert want in raw, raw
    messages = [json.loads(line)["message"] for line in raw.decode().split("\n") if line]
    assert any(m.rstrip("\n") == message for m in messages), messages
    ds.tether("export", tmp_path / "o.csv")
    with open(tmp_path / "o.csv" / "commits.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert any(r["message"].rstrip("\n") == message for r in rows)


def _written_rows(path, table):
    """A table's rows in the order a JSON Lines export wrote them (SQLite's
    tables are WITHOUT ROWID: their order is the key's anyway)."""
    return read_jsonl_dir(path)[table]


def test_keys_git_orders_apart_merges_and_overlapping_revs(tmp_path):
    """Keys git's tree order puts apart from byte order ("a-b", "a.b",
    "a/b", "a"), a key nested two directories down, a commit holding no
    .tether/objects, a commit whose objects tree is new but whose
    subdirectory is one met before, a merge, and --rev with revisions whose
    ancestry overlaps: the tables are what git and the manifests say, and
    the rows come written in their documented order (objects by commit id,
    then key bytewise; commits by commit time, then id)."""
    ds = _new_repo(tmp_path, "order")
    ds.write("README", "before tether\n")
    ds.git_commit_all("no dataset yet", "README", env=dated(1_700_000_000))
    ds.tether("init")
    keys = ["a-b", "a.b", "a/b", "a", "a/c/d", "b"]
    for k in keys:
        ds.write(f"data/{k.replace('/', '_')}.csv", f"{k}\n")
        ds.tether("add", k, f"data/{k.replace('/', '_')}.csv", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "all keys", env=dated(1_700_000_100))
    # the objects tree changes at its top only: "a/" is a subtree met before
    ds.write("data/a-b.csv", "a-b v2\n")
    ds.tether("commit", "-m", "a-b changed", env=dated(1_700_000_200))
    ds.git("branch", "side")
    ds.write("data/a_b.csv", "a/b v2\n")
    ds.tether("commit", "-m", "a/b changed on main", env=dated(1_700_000_300))
    ds.git("checkout", "-q", "side")
    ds.write("data/b.csv", "b v2\n")
    ds.tether("commit", "-m", "b changed on side", env=dated(1_700_000_400))
    ds.git("checkout", "-q", "main")
    ds.git("merge", "-q", "--no-edit", "side", env=dated(1_700_000_500))
    commits = all_commits(ds.root)
    assert len(commits) == 6
    refs = git_refs(str(ds.root))
    want = expected_tables(str(ds.root), commits, ds.dataset_id(), refs)
    objects_per_commit = {}
    for row in want["objects"]:
        objects_per_commit[row[0]] = objects_per_commit.get(row[0], 0) + 1
    assert sorted(objects_per_commit.values()) == [6] * 5  # the first commit holds none

    ds.tether("export", tmp_path / "all.sqlite")
    got = read_sqlite(tmp_path / "all.sqlite")
    check_tables(got, want)
    ds.tether("export", tmp_path / "all.jsonl")
    check_tables(read_jsonl_dir(tmp_path / "all.jsonl"), want)
    bykey = lambda r: (r[0].encode(), r[1].encode())  # noqa: E731
    objects = _written_rows(tmp_path / "all.jsonl", "objects")
    assert objects == sorted(objects, key=bykey)
    commits_rows = _written_rows(tmp_path / "all.jsonl", "commits")
    assert [r[0] for r in commits_rows] == [r[0] for r in sorted(commits_rows, key=lambda r: (r[9], r[0]))]

    # overlapping revisions: each commit once, the same tables as --rev main
    ds.tether("export", tmp_path / "revs.jsonl", "--rev", "main", "--rev", "side", "--rev", "main~1")
    ds.tether("export", tmp_path / "main.jsonl", "--rev", "main")
    check_tables(read_jsonl_dir(tmp_path / "revs.jsonl"), want, revisions='["main","side","main~1"]')
    for table in TABLES:
        if table != "meta":
            assert _written_rows(tmp_path / "revs.jsonl", table) == _written_rows(tmp_path / "main.jsonl",
                                                                                  table), table
    # the same bytes again
    ds.tether("export", tmp_path / "again.sqlite")
    assert (tmp_path / "again.sqlite").read_bytes() == (tmp_path / "all.sqlite").read_bytes()


def test_a_manifest_that_does_not_parse_names_its_file_and_commit(tmp_path):
    """A damaged manifest in any commit of the history fails the export
    with one line naming the file and the commit; nothing is written."""
    ds = _new_repo(tmp_path, "bad")
    ds.tether("init")
    ds.write("data/a.csv", "a\n")
    ds.tether("add", "a", "data/a.csv", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "good")
    ds.write(".tether/objects/sub/bad.toml", "kind = [unterminated\n")
    bad = ds.git_commit_all("a damaged manifest", ".tether/objects/sub/bad.toml")
    ds.git("rm", "-q", ".tether/objects/sub/bad.toml")
    ds.git("commit", "-q", "-m", "removed again")
    for out in ("h.sqlite", "h.csv", "h.parquet"):
        p = ds.tether("export", tmp_path / out, check_rc=None)
        assert p.returncode != 0, describe(p)
        err = p.stderr.strip()
        assert "\n" not in err, err
        assert ".tether/objects/sub/bad.toml" in err and bad[:12] in err, err
        assert not (tmp_path / out).exists()
    assert sorted(os.listdir(tmp_path)) == ["bad", "home"]


def test_a_damaged_history_cache_changes_nothing(history, tmp_path):
    """The history walk's cache (shared with gc) cut short or with a byte
    flipped: the export reads what it must again and writes the same
    bytes."""
    ds, _ = history
    ds.tether("export", tmp_path / "first.sqlite")
    cache = ds.root / ".git" / "tether" / "cache" / ds.dataset_id() / "history-walk"
    assert cache.is_file()
    good = cache.read_bytes()
    for damaged in (good[: len(good) // 2], good[:200] + bytes([good[200] ^ 0xFF]) + good[201:],
                    good[: len(good) - 1] + bytes([good[-1] ^ 0x01])):
        cache.write_bytes(damaged)
        out = tmp_path / "again.sqlite"
        ds.tether("export", out)
        assert out.read_bytes() == (tmp_path / "first.sqlite").read_bytes()
        out.unlink()


def test_a_dataset_with_no_commit_exports_empty_tables(tmp_path):
    """Before the first commit every table but meta is empty, in every
    format, and read back as such."""
    import pyarrow.parquet as pq
    ds = _new_repo(tmp_path, "empty")
    ds.tether("init")
    for out in ("e.sqlite", "e.csv", "e.jsonl", "e.parquet"):
        report = ds.tj("export", tmp_path / out)
        assert report["tables"] == {t: 6 if t == "meta" else 0 for t in TABLES}, report
    assert read_sqlite(tmp_path / "e.sqlite")["commits"] == []
    assert read_csv_dir(tmp_path / "e.csv")["objects"] == []
    assert read_jsonl_dir(tmp_path / "e.jsonl")["refs"] == []
    for table in TABLES:
        t = pq.read_table(tmp_path / "e.parquet" / f"{table}.parquet")
        assert t.column_names == COLUMNS[table] and t.num_rows == (6 if table == "meta" else 0)


def test_jj_rev_exports_the_ancestors_only(tmp_path, jj_problem):  # noqa: F811
    """--rev in a jj repository: the revision given (a jj revset naming
    one commit) and its ancestors, each once, with their change ids."""
    ds = jj_dataset(tmp_path, jj_problem)

    def jj_log(revset):
        p = subprocess.run(["jj", "log", "--ignore-working-copy", "--no-graph", "-r", revset, "-T",
                            'commit_id ++ " " ++ change_id ++ "\\n"'], cwd=ds.root, env=ds.env,
                           capture_output=True, text=True)
        assert p.returncode == 0, describe(p)
        return dict(line.split(" ") for line in p.stdout.split("\n") if line)

    want_ids = jj_log("::@-- & ~root()")
    assert 0 < len(want_ids) < len(jj_log("all() & ~root()"))
    ds.tether("export", tmp_path / "rev.jsonl", "--rev", "@--", "--rev", "@---")
    got = read_jsonl_dir(tmp_path / "rev.jsonl")
    assert sorted(r[0] for r in got["commits"]) == sorted(want_ids)
    assert {r[0]: r[1] for r in got["commits"]} == want_ids
    assert {r[0] for r in got["objects"]} <= set(want_ids)
    assert dict(got["meta"])["revisions"] == '["@--","@---"]'


def test_a_manifest_without_a_policy_table_exports_the_empty_policy(tmp_path):
    """A manifest may leave [policy] out (the defaults; status reads it so):
    objects.policy is NOT NULL, so it holds {} then, in every format, and
    write and pin_policy are null."""
    import pyarrow.parquet as pq
    ds = _new_repo(tmp_path, "nopolicy")
    ds.tether("init")
    ds.write("a.csv", "a\n")
    ds.tether("add", "a", "a.csv", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "with a policy")
    path = ds.manifest_path("a")
    text = path.read_text()
    start = text.index("[policy]\n")
    end = text.index("\n[", start) + 1
    path.write_text(text[:start] + text[end:])
    assert "[policy]" not in path.read_text()
    ds.git_commit_all("without one", str(path))
    ds.tether("status")
    want = expected_tables(str(ds.root), all_commits(ds.root), ds.dataset_id(), git_refs(str(ds.root)))
    assert sorted(r[5] for r in want["objects"]) == ['{"file":"mutable","pin":"native","write":"none"}', "{}"]
    ds.tether("export", tmp_path / "p.sqlite")
    check_tables(read_sqlite(tmp_path / "p.sqlite"), want)
    ds.tether("export", tmp_path / "p.jsonl")
    check_tables(read_jsonl_dir(tmp_path / "p.jsonl"), want)
    ds.tether("export", tmp_path / "p.parquet")
    t = pq.read_table(tmp_path / "p.parquet" / "objects.parquet")
    check_tables({**read_jsonl_dir(tmp_path / "p.jsonl"), "objects": [tuple(r.values()) for r in t.to_pylist()]},
                 want)
