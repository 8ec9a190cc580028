"""Layout versions and `tether upgrade`.

A layout-0 dataset is made the way a tether before layouts left it: the
current tether writes layout 1, and every `layout = 1` line is taken out of
tether.toml and the manifests again (the canonical writer puts it on a
line of its own, so what is left is byte for byte what the old writer
wrote), then committed. Such a dataset keeps working, and says that
`tether upgrade` is available; upgrade migrates the working copy on git and
jj, and with --all-history (git only) rewrites the branch's commits, on
confirmation, refusing published ones unless --force. A dataset of a newer
layout is refused by every command with the file and both layouts named.
"""
import json
import os
import re
import signal
import subprocess
import tomllib

import pytest

from conftest import TETHER_BIN, check_sanitizers, stopped
from test_git_backend import VCS_KINDS, code, code_commit, jj_problem, make_dataset  # noqa: F401

NEWER = "tether.toml: layout 2 is newer than this tether understands (layout 1 at most)"


def strip_layout(ds, sub="."):
    """Take every `layout = N` line out of the dataset's files: layout 0."""
    root = ds.root / sub
    paths = [root / "tether.toml", *sorted((root / ".tether" / "objects").rglob("*.toml"))]
    for p in paths:
        text = p.read_text()
        p.write_text(re.sub(r"(?m)^layout = \d+[^\n]*\n", "", text))


def layouts(ds, sub="."):
    """{dataset-relative path: layout} of tether.toml and the manifests."""
    root = ds.root / sub
    out = {"tether.toml": tomllib.loads((root / "tether.toml").read_text())["dataset"].get("layout", 0)}
    for p in sorted((root / ".tether" / "objects").rglob("*.toml")):
        out[p.relative_to(root).as_posix()] = tomllib.loads(p.read_text()).get("layout", 0)
    return out


def legacy(ds):
    """A layout-0 dataset with two commits: a directory and a file."""
    ds.write("data/plates/p1.csv", "well,value\nA1,0.5\n")
    ds.write("data/samples.csv", "s1\n")
    ds.tether("add", "raw/plates", "data/plates", "--kind", "file", "--file", "mutable")
    strip_layout(ds)
    ds.tether("commit", "-m", "one")
    ds.tether("add", "raw/samples", "data/samples.csv", "--kind", "file")
    ds.write("data/plates/p2.csv", "well,value\nB1,0.1\n")
    ds.tether("commit", "-m", "two")
    assert set(layouts(ds).values()) == {0}
    return ds


@pytest.fixture(params=VCS_KINDS)
def dsv(request, tmp_path, jj_problem):  # noqa: F811
    return make_dataset(tmp_path, request.param, jj_problem)


@pytest.fixture
def gds(tmp_path, jj_problem):  # noqa: F811
    return make_dataset(tmp_path, "git", jj_problem)


def test_init_writes_the_current_layout(gds):
    assert layouts(gds) == {"tether.toml": 1}
    gds.write("f.csv", "x\n")
    gds.tether("add", "f", "f.csv", "--kind", "file")
    assert layouts(gds)["tether.toml"] == 1 and layouts(gds)[".tether/objects/f.toml"] == 1
    assert gds.tj("status")["layout"] == {"dataset": 1, "current": 1, "upgrade": False}
    assert "tether upgrade" not in gds.tether("status").stdout


def test_a_layout0_dataset_works_says_upgrade_and_upgrades(dsv):
    ds = legacy(dsv)
    # Read commands work on it as they are, and status says upgrade is there.
    st = ds.tj("status")
    assert st["layout"] == {"dataset": 0, "current": 1, "upgrade": True}
    assert st["clean"] is True
    assert ds.tether("status").stdout.splitlines()[-1] == (
        "dataset layout 0 (this tether writes layout 1): run 'tether upgrade' to migrate it")
    assert [c["summary"] for c in ds.tj("log")["commits"]][:2] == ["two", "one"]
    ds.tj("diff", "HEAD~1", "HEAD")
    assert ds.tj("verify")["ok"] is True
    # A write keeps the dataset in its layout: no manifest of layout 1 appears.
    ds.write("data/plates/p3.csv", "well,value\nC1,0.2\n")
    ds.tether("commit", "-m", "three")
    assert set(layouts(ds).values()) == {0}

    # --dry-run lists and writes nothing.
    before_files, before_toml = ds.tree(), ds.p("tether.toml").read_bytes()
    r = ds.tj("upgrade", "--dry-run")
    assert r["dry_run"] is True and r["from"] == 0 and r["to"] == 1 and r["history"] is None
    assert [(f["path"], f["from"], f["to"]) for f in r["files"]] == [
        (".tether/objects/raw/plates.toml", 0, 1), (".tether/objects/raw/samples.toml", 0, 1), ("tether.toml", 0, 1)]
    assert ds.tree() == before_files and ds.p("tether.toml").read_bytes() == before_toml
    out = ds.tether("upgrade", "--dry-run").stdout.splitlines()
    assert out == ["  would migrate  .tether/objects/raw/plates.toml  (layout 0 -> 1)",
                   "  would migrate  .tether/objects/raw/samples.toml  (layout 0 -> 1)",
                   "  would migrate  tether.toml  (layout 0 -> 1)",
                   "dry run: 3 files would move to layout 1"]

    old_toml = ds.p("tether.toml").read_text()
    old_manifest = ds.manifest_path("raw/plates").read_text()
    out = ds.tether("upgrade").stdout.splitlines()
    assert out[-1] == "layout 1: 3 files migrated; commit them with 'tether commit'"
    assert set(layouts(ds).values()) == {1}
    # tether.toml keeps its comments: one line is added after [dataset].
    new_toml = ds.p("tether.toml").read_text()
    assert new_toml == old_toml.replace("[dataset]\n", "[dataset]\nlayout = 1\n", 1)
    # A manifest changes by its layout line only.
    new_manifest = ds.manifest_path("raw/plates").read_text()
    assert new_manifest.replace("layout = 1\n", "", 1) == old_manifest
    ops = ds.tj("ops")["ops"]
    assert ops[-1]["op"] == "upgrade" and ops[-1]["status"] == "COMPLETE"
    assert ops[-1]["message"] == "layout 0 -> 1: 3 files"

    st = ds.tj("status")
    assert st["layout"]["upgrade"] is False
    assert {o["key"]: o["manifest"] for o in st["objects"]} == {"raw/plates": "changed", "raw/samples": "changed"}
    assert [f["path"] for f in st["files"]] == ["tether.toml"]
    ds.tether("commit", "-m", "upgrade to layout 1")
    assert ds.tj("status")["clean"] is True
    assert ds.tj("upgrade")["files"] == []
    assert ds.tether("upgrade").stdout == "already at layout 1\n"
    assert ds.tj("verify", "--all-history")["ok"] is True
    assert ds.tj("gc")["release"] == []
    # The old commits stay readable as they are.
    ds.tj("diff", "HEAD~3", "HEAD")


COMMANDS = {
    "status": ["status"],
    "log": ["log"],
    "diff": ["diff"],
    "commit": ["commit", "-m", "x"],
    "new": ["new"],
    "gc": ["gc", "--no-dry-run"],
    "verify": ["verify"],
    "add": ["add", "g", "g.csv", "--kind", "file"],
    "upgrade": ["upgrade"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_refuses_a_newer_layout(gds, command):
    gds.write("g.csv", "x\n")
    toml = gds.p("tether.toml")
    # A newer tether may add tables too: the layout is what is refused.
    toml.write_text(toml.read_text().replace("layout = 1", "layout = 2") + "\n[future]\nthing = 1\n")
    before = gds.tree()
    p = gds.tether(*COMMANDS[command], check_rc=3)
    assert p.stderr.splitlines()[0] == f"tether: error: {gds.root}/{NEWER}", p.stderr
    assert p.stdout == ""
    assert gds.tree() == before


def test_a_newer_manifest_is_refused_by_name(gds):
    gds.write("g.csv", "x\n")
    gds.tether("add", "g", "g.csv", "--kind", "file")
    m = gds.manifest_path("g")
    m.write_text(m.read_text().replace("layout = 1", "layout = 7\nnext = true"))
    for args in (["status"], ["commit", "-m", "x"], ["upgrade"]):
        p = gds.tether(*args, check_rc=3)
        assert p.stderr.splitlines()[0] == (
            f"tether: error: {m}: layout 7 is newer than this tether understands (layout 1 at most)"), p.stderr
    m.write_text(m.read_text().replace("layout = 7", 'layout = "seven"'))
    p = gds.tether("status", check_rc=1)
    assert "layout must be a whole number" in p.stderr


@pytest.mark.parametrize("step", ["manifest-written", "config"])
def test_a_killed_upgrade_reads_as_it_is_and_the_rerun_finishes(gds, step):
    ds = legacy(gds)
    p = ds.tether("upgrade", check_rc=None, env={"TETHER_FAULT": f"upgrade:{step}"})
    assert p.returncode == -signal.SIGKILL, p.stderr
    half = layouts(ds)
    assert half["tether.toml"] == 0
    assert sorted(half.values()) == ([0, 0, 1] if step == "manifest-written" else [0, 1, 1])
    # Each file is read by its own layout; the dataset is still layout 0.
    st = ds.tj("status")
    assert st["layout"] == {"dataset": 0, "current": 1, "upgrade": True}
    assert [o["status"] for o in st["objects"]] == ["clean", "clean"]
    assert [e["status"] for e in ds.tj("ops")["ops"] if e["op"] == "upgrade"] == ["INCOMPLETE"]
    r = ds.tj("upgrade")
    assert [f["path"] for f in r["files"]] == [k for k, v in half.items() if v == 0 and k != "tether.toml"] + [
        "tether.toml"]
    assert set(layouts(ds).values()) == {1}
    assert ds.tj("ops")["ops"][-1]["status"] == "COMPLETE"
    ds.tether("commit", "-m", "upgraded")
    assert ds.tj("verify")["ok"] is True


def history_layouts(ds, rev, sub=""):
    """{path: layout} of the dataset's files in commit rev."""
    prefix = f"{sub}/" if sub else ""
    out = {}
    names = ds.git("ls-tree", "-r", "--name-only", rev, "--", f"{prefix}tether.toml", f"{prefix}.tether/objects")
    for name in names.split():
        doc = tomllib.loads(ds.git("show", f"{rev}:{name}"))
        out[name] = (doc["dataset"] if name.endswith("tether.toml") and "dataset" in doc else doc).get("layout", 0)
    return out


def commits(ds):
    return ds.git("rev-list", "--topo-order", "HEAD").split()


def test_all_history_rewrites_the_branch_on_confirmation(repo, code):  # noqa: F811
    """The dataset in a subdirectory, beside a file of the repository's own,
    with a git object whose pins are tags: the rewrite changes only the
    dataset's files, keeps authors, messages and the shape of history, and
    verify and gc agree on the pins afterwards."""
    ds = repo
    sub = ds.root / "ds"
    sub.mkdir()
    ds.write("README", "outside the dataset\n")
    ds.git_commit_all("readme", "README")
    ds.tether("init", cwd=sub)
    ds.tether("add", "code", str(code.root), "--kind", "git", cwd=sub)
    strip_layout(ds, "ds")
    ds.tether("commit", "-m", "one", cwd=sub)
    code_commit(code, {"main.py": "2\n"}, "c2")
    ds.write("ds/notes.txt", "not tether's\n")
    ds.git_commit_all("notes", "ds/notes.txt")
    ds.tether("commit", "-m", "two", cwd=sub)
    before = commits(ds)
    before_log = ds.git("log", "--format=%an|%ae|%at|%cn|%ct|%s")
    tags = code.git("tag", "-l", "tether.*").split()
    assert len(tags) == 2

    # Without --yes: the list, exit 3, nothing written.
    snapshot = (ds.tree("ds/.tether"), ds.p("ds/tether.toml").read_bytes(), commits(ds))
    p = ds.tether("upgrade", "--all-history", cwd=sub, check_rc=3)
    assert "would rewrite" in p.stdout
    assert p.stderr.splitlines()[0].startswith("tether: error: upgrade --all-history rewrites ")
    assert "pass --yes to confirm" in p.stderr
    assert (ds.tree("ds/.tether"), ds.p("ds/tether.toml").read_bytes(), commits(ds)) == snapshot
    r = ds.tj("upgrade", "--all-history", "--dry-run", cwd=sub)
    # Commits before the dataset existed hold none of its files: they stay.
    touched = [c["id"] for c in r["history"]["commits"]]
    assert touched == list(reversed(before[:-1]))  # every commit since the dataset's first, oldest first
    assert all(c["new"] is None for c in r["history"]["commits"])
    assert r["history"]["remote"] == []
    assert commits(ds) == before

    r = ds.tj("upgrade", "--all-history", "--yes", cwd=sub)
    after = commits(ds)
    assert len(after) == len(before)
    assert after[-1:] == before[-1:]  # the commit before the dataset: kept
    assert [c["new"] for c in r["history"]["commits"]] == list(reversed(after[:-1]))
    assert r["history"]["head"] == after[0] == ds.head()
    assert ds.git("log", "--format=%an|%ae|%at|%cn|%ct|%s") == before_log
    for new in after[:-1]:
        assert set(history_layouts(ds, new, "ds").values()) == {1}, new
    for old, new in zip(before, after):
        # Outside the dataset's own files, the trees are the same objects.
        assert ds.git("rev-parse", f"{old}:README") == ds.git("rev-parse", f"{new}:README")
        diff = ds.git("diff", "--name-only", old, new).split()
        assert all(d == "ds/tether.toml" or d.startswith("ds/.tether/objects/") for d in diff), diff
    # The checkout is clean: the working copy was migrated the same way.
    assert ds.git("status", "--porcelain", "--untracked-files=no") == ""
    assert ds.tj("status", cwd=sub)["clean"] is True
    # Pins name stores' states, not dataset commits: they all still hold.
    assert code.git("tag", "-l", "tether.*").split() == tags
    assert ds.tj("verify", "--all-history", cwd=sub)["ok"] is True
    assert ds.tj("gc", cwd=sub)["release"] == []
    assert ds.tj("upgrade", "--all-history", "--yes", cwd=sub)["history"]["commits"] == []


def test_all_history_refuses_published_commits_unless_forced(gds, tmp_path):
    ds = legacy(gds)
    bare = tmp_path / "remote.git"
    ds.git("init", "-q", "--bare", str(bare))
    ds.git("remote", "add", "origin", str(bare))
    ds.git("push", "-q", "origin", "main")
    before = commits(ds)
    p = ds.tether("upgrade", "--all-history", "--yes", check_rc=3)
    first = p.stderr.splitlines()[0]
    assert first.startswith("tether: error: upgrade --all-history: 2 of the 2 commits to rewrite are reached by "
                            "remote-tracking refs ("), p.stderr
    assert first.endswith(" by refs/remotes/origin/main): they are published"), p.stderr
    assert "pass --force" in p.stderr
    assert "  published  " in p.stdout
    assert commits(ds) == before and set(layouts(ds).values()) == {0}
    r = ds.tj("upgrade", "--all-history", "--yes", "--force")
    assert len(r["history"]["commits"]) == 2 and commits(ds) != before
    assert {e["ref"] for e in r["history"]["remote"]} == {"refs/remotes/origin/main"}
    assert ds.git("status", "--porcelain", "--untracked-files=no") == ""
    assert ds.tj("verify", "--all-history")["ok"] is True


def test_a_racing_commit_makes_the_branch_move_fail(gds):
    ds = legacy(gds)
    before = commits(ds)
    env = dict(ds.env, TETHER_FAULT="upgrade:history:stop")
    proc = subprocess.Popen([TETHER_BIN, "upgrade", "--all-history", "--yes"], cwd=str(ds.root), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at upgrade:history"
        ds.write("other.txt", "racing\n")
        ds.git_commit_all("a racing commit", "other.txt")
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert "refs/heads/main moved to " in err and "since the rewrite was reviewed" in err, err
    assert commits(ds)[1:] == before  # only the racing commit on top: nothing rewritten
    assert ds.tj("ops")["ops"][-1]["status"] == "ABORTED"
    # The re-run reviews the branch as it is now and rewrites it.
    r = ds.tj("upgrade", "--all-history", "--yes")
    assert len(r["history"]["commits"]) == 3
    assert ds.git("status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.parametrize("vcs", ["jj-colocated", "jj"])
def test_all_history_is_refused_on_jj_with_the_reason(tmp_path, jj_problem, vcs):  # noqa: F811
    ds = legacy(make_dataset(tmp_path, vcs, jj_problem))
    before = ds.tree(), ds.p("tether.toml").read_bytes()
    p = ds.tether("upgrade", "--all-history", "--yes", check_rc=3)
    assert p.stderr.splitlines()[0] == (
        "tether: error: upgrade --all-history: tether cannot rewrite the history of a jj repository")
    assert "without --all-history" in p.stderr
    assert (ds.tree(), ds.p("tether.toml").read_bytes()) == before
    ds.tether("upgrade")
    assert set(layouts(ds).values()) == {1}


def test_an_older_manifest_in_an_upgraded_dataset_is_named_and_migrated(gds):
    """A layout-0 manifest an old branch brings into a layout-1 dataset."""
    gds.write("g.csv", "x\n")
    gds.tether("add", "g", "g.csv", "--kind", "file")
    m = gds.manifest_path("g")
    m.write_text(m.read_text().replace("layout = 1\n", ""))
    st = gds.tj("status")
    assert st["layout"] == {"dataset": 1, "current": 1, "upgrade": True}
    assert gds.tether("status").stdout.splitlines()[-1] == (
        "some manifests are of a layout older than 1: run 'tether upgrade' to migrate them")
    r = gds.tj("upgrade")
    assert [(f["path"], f["from"]) for f in r["files"]] == [(".tether/objects/g.toml", 0)]
    assert layouts(gds) == {"tether.toml": 1, ".tether/objects/g.toml": 1}


def test_a_dotted_dataset_table_is_rewritten_canonically(gds):
    """No [dataset] header line to add the layout under: the file is
    written canonically, and reads as before plus the layout."""
    toml = gds.p("tether.toml")
    cfg = tomllib.loads(toml.read_text())
    text = toml.read_text()
    text = re.sub(r"\[dataset\]\nid = (\"[0-9a-f]+\")\nlayout = 1[^\n]*\n", r"dataset.id = \1\n", text)
    assert text.startswith("# tether dataset: committed with the repository.\ndataset.id = ")
    toml.write_text(text)
    assert gds.tj("status")["layout"]["dataset"] == 0
    gds.tether("upgrade")
    assert tomllib.loads(toml.read_text()) == cfg
    assert gds.tj("status")["layout"] == {"dataset": 1, "current": 1, "upgrade": False}


def test_a_kill_before_the_history_rewrite_is_finished_by_the_rerun(gds):
    ds = legacy(gds)
    before = commits(ds)
    p = ds.tether("upgrade", "--all-history", "--yes", check_rc=None, env={"TETHER_FAULT": "upgrade:history"})
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert set(layouts(ds).values()) == {1}  # the working copy is done
    assert commits(ds) == before  # the history is not
    r = ds.tj("upgrade", "--all-history", "--yes")
    assert r["files"] == [] and len(r["history"]["commits"]) == 2
    assert ds.git("status", "--porcelain", "--untracked-files=no") == ""
    for c in commits(ds):
        assert set(history_layouts(ds, c).values()) == {1}


def test_all_history_keeps_the_shape_of_merges(gds):
    ds = legacy(gds)
    ds.git("switch", "-q", "-c", "feat")
    ds.write("data/plates/p9.csv", "well,value\nZ9,9\n")
    ds.tether("commit", "-m", "on feat")
    ds.git("switch", "-q", "main")
    ds.write("side.txt", "main's\n")
    ds.git_commit_all("on main", "side.txt")
    ds.git("merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    shape = lambda: [len(line.split()) for line in ds.git("rev-list", "--parents", "--topo-order", "HEAD").splitlines()]
    before_shape, feat = shape(), ds.git("rev-parse", "feat").strip()
    r = ds.tj("upgrade", "--all-history", "--yes")
    assert len(r["history"]["commits"]) == 5  # one, two, on feat, on main, the merge
    assert shape() == before_shape
    assert ds.git("rev-parse", "feat").strip() == feat  # other branches keep the old commits
    for c in commits(ds)[:5]:
        assert set(history_layouts(ds, c).values()) == {1}, c
    assert ds.tj("verify", "--all-history")["ok"] is True
    assert ds.tj("gc")["release"] == []


def test_all_history_before_the_first_commit_and_on_a_detached_head(gds):
    gds.write("g.csv", "x\n")
    gds.tether("add", "g", "g.csv", "--kind", "file")
    strip_layout(gds)
    r = gds.tj("upgrade", "--all-history")  # nothing to confirm: no commits yet
    assert r["history"]["commits"] == [] and r["history"]["head"] is None
    assert set(layouts(gds).values()) == {1}
    gds.tether("commit", "-m", "one")
    gds.git("switch", "-q", "--detach", "HEAD")
    p = gds.tether("upgrade", "--all-history", "--yes", check_rc=3)
    assert p.stderr.splitlines()[0] == (
        "tether: error: HEAD is detached: a history rewrite moves a branch, so check one out")
