"""tether abandon REV: drop a dataset commit through the VCS (jj abandon; on
git a rebase of the current branch that leaves it out), then report the
pins only that commit named, which the next gc releases.

Each dataset holds a git repository (pins are tags, read back with git) and
an Icechunk repository (pins are tags, read back with the icechunk library),
in git, colocated jj and jj datasets. The refusals (pushed, in another
branch, a dirty tree, a merge in the way, the first commit), the dry run, a
kill at each step then a re-run, and a writer racing the branch move are
checked on git, whose rewrite is tether's own.
"""
import subprocess

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import pytest

from conftest import ops, run_stopped
from test_git_backend import code, code_commit, dsv, gds, jj_problem  # noqa: F401 (fixtures)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "imaging.icechunk"
    oracle.create(path)
    return path


def git_tags(code):
    return set(code.git("tag", "--list", "tether.*").split())


def ice_tags(store):
    return {t for t in oracle.open_repo(store).list_tags() if t.startswith("tether.")}


def commit(ds, message):
    """A tether commit: its id and {key: pin}."""
    r = ds.tj("commit", "-m", message)
    return r["commit"], {o["key"]: o["pin"] for o in r["objects"]}


class History:
    """base -> try (code and img changed) -> result (both changed again)."""

    def __init__(self, ds, code, store):
        ds.tether("add", "code", code.root, "--kind", "git")
        ds.tether("add", "img", str(store), "--kind", "icechunk")
        self.base, self.base_pins = commit(ds, "base")
        code_commit(code, {"main.py": "try\n"}, "try")
        oracle.commit(store)
        self.try_, self.try_pins = commit(ds, "try")
        code_commit(code, {"main.py": "result\n"}, "result")
        oracle.commit(store)
        self.result, self.result_pins = commit(ds, "result")


def try_pin_rows(h):
    return sorted([{"key": "code", "kind": "git", "pin": h.try_pins["code"]},
                   {"key": "img", "kind": "icechunk", "pin": h.try_pins["img"]}], key=lambda p: p["key"])


def assert_verify_and_gc_agree(ds, code, store, gone):
    """verify (and --all-history) clean; gc releases exactly the pins in
    `gone`, and afterwards every pin history names is still there."""
    for args in (("verify",), ("verify", "--all-history")):
        v = ds.tj(*args)
        assert v["ok"] is True, v
    g = ds.tj("gc")
    assert sorted(r["pin"] for r in g["release"]) == sorted(gone)
    ds.tj("gc", "--no-dry-run")
    assert ds.tj("gc")["release"] == []
    v = ds.tj("verify", "--all-history")
    assert v["ok"] is True, v
    assert not [e for e in ops(ds) if e["status"] == "INCOMPLETE"]


def test_abandon_drops_the_commit_and_names_its_pins(dsv, code, store):
    h = History(dsv, code, store)
    tags0, ice0 = git_tags(code), ice_tags(store)
    ops0 = ops(dsv)

    dry = dsv.tj("abandon", h.try_, "--dry-run")
    assert (dry["commit"], dry["head_before"], dry["head"], dry["dry_run"]) == (h.try_, h.result, None, True)
    assert sorted(dry["pins"], key=lambda p: p["key"]) == try_pin_rows(h)
    assert dsv.commit_ids() == [h.result, h.try_, h.base]
    assert (git_tags(code), ice_tags(store), ops(dsv)) == (tags0, ice0, ops0)

    r = dsv.tj("abandon", h.try_)
    assert (r["commit"], r["head_before"], r["dry_run"], r["finished"], r["refs"]) == (
        h.try_, h.result, False, False, [])
    # The result's snapshot stands on the base: the try is gone from history.
    assert dsv.commit_ids() == [r["head"], h.base]
    assert r["head"] == dsv.vcs_head()
    for key in ("code", "img"):
        assert dsv.manifest(key)["pin"] == h.result_pins[key]
    assert sorted(r["pins"], key=lambda p: p["key"]) == try_pin_rows(h)
    st = dsv.tj("status")
    assert {o["status"] for o in st["objects"]} == {"clean"}, st
    # Journalled: one COMPLETE abandon entry naming the new head.
    last = ops(dsv)[-1]
    assert (last["op"], last["status"], last["abandon"], last["head_before"], last["commit"]) == (
        "abandon", "COMPLETE", h.try_, h.result, r["head"])

    # The pins are still there until gc releases them, and then only they go.
    assert git_tags(code) == tags0 and ice_tags(store) == ice0
    assert_verify_and_gc_agree(dsv, code, store, [h.try_pins["code"], h.try_pins["img"]])
    assert git_tags(code) == tags0 - {f"tether.{h.try_pins['code']}"}
    assert f"tether.{h.try_pins['img']}" in ice0 and ice_tags(store) == ice0 - {f"tether.{h.try_pins['img']}"}


def test_text_output(gds, code, store):
    h = History(gds, code, store)
    p = gds.tether("abandon", "HEAD~1", "--dry-run")
    assert p.stdout == (f"dry run: would abandon {h.try_[:12]} (HEAD {h.result[:12]})\n"
                        "it brings in 2 pins:\n"
                        f"  code                     {h.try_pins['code']}\n"
                        f"  img                      {h.try_pins['img']}\n"
                        "dry run: nothing written\n")
    p = gds.tether("abandon", "HEAD~1")
    head = gds.head()
    assert p.stdout == (f"Abandoned {h.try_[:12]}; HEAD is now {head[:12]}\n"
                        "named by no commit now, released by the next `tether gc`: 2 pins:\n"
                        f"  code                     {h.try_pins['code']}\n"
                        f"  img                      {h.try_pins['img']}\n")


def unchanged(ds, code, store):
    return (ds.head(), ds.git("status", "--porcelain"), git_tags(code), ice_tags(store), ops(ds))


def test_refused_when_pushed_unless_forced(gds, code, store, tmp_path):
    h = History(gds, code, store)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    gds.git("remote", "add", "origin", str(remote))
    gds.git("push", "-q", "origin", "main")
    before = unchanged(gds, code, store)
    p = gds.tether("abandon", h.try_, check_rc=3)
    assert p.stderr.startswith(f"tether: error: commit {h.try_[:12]} is already pushed: it is in "
                               "refs/remotes/origin/main\n"), p.stderr
    assert "`tether abandon --force`" in p.stderr
    assert unchanged(gds, code, store) == before
    r = gds.tj("abandon", h.try_, "--force")
    assert r["refs"] == [{"ref": "refs/remotes/origin/main", "remote": True}]
    assert gds.commit_ids() == [r["head"], h.base]
    # origin/main still holds the try: its pins stay named, gc keeps them.
    assert r["pins"] == []
    assert_verify_and_gc_agree(gds, code, store, [])


def test_refused_when_another_branch_holds_it(gds, code, store):
    h = History(gds, code, store)
    gds.git("branch", "keep", h.try_)
    before = unchanged(gds, code, store)
    p = gds.tether("abandon", h.try_, check_rc=3)
    assert p.stderr.startswith(f"tether: error: commit {h.try_[:12]} is in another branch: refs/heads/keep\n")
    assert unchanged(gds, code, store) == before
    # The current branch itself does not count.
    p = gds.tether("abandon", h.result, "--dry-run")
    assert "is in another branch" not in p.stderr


def test_refused_for_a_dirty_tree_a_merge_the_first_commit_and_a_bad_rev(gds, code, store):
    h = History(gds, code, store)
    gds.write("README", "one\n")
    gds.git_commit_all("readme", "README")
    gds.write("README", "two\n")
    before = unchanged(gds, code, store)
    p = gds.tether("abandon", h.try_, check_rc=3)
    assert p.stderr.startswith("tether: error: the working tree has uncommitted changes (README)\n"), p.stderr
    assert unchanged(gds, code, store) == before
    gds.git("checkout", "-q", "README")

    p = gds.tether("abandon", h.base, check_rc=3)
    assert p.stderr == (f"tether: error: commit {h.base[:12]} is the branch's first commit: there is no parent "
                        "to rebase its descendants onto\n")
    p = gds.tether("abandon", "no-such-rev", check_rc=1)
    assert p.stderr.startswith("tether: error: REV: "), p.stderr
    p = gds.tether("abandon", check_rc=2)

    gds.git("checkout", "-q", "-b", "side", h.try_)
    gds.write("side.txt", "s\n")
    gds.git_commit_all("side", "side.txt")
    gds.git("checkout", "-q", "main")
    gds.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    gds.git("branch", "-D", "side")
    merge = gds.head()
    before = unchanged(gds, code, store)
    p = gds.tether("abandon", h.try_, check_rc=3)
    assert p.stderr == (f"tether: error: commit {merge[:12]}, between HEAD and {h.try_[:12]}, is a merge: abandon "
                        "rewrites linear history only\n")
    assert unchanged(gds, code, store) == before


def test_a_descendant_changing_the_same_file_outside_the_dataset_is_refused(gds, code, store):
    gds.tether("add", "code", code.root, "--kind", "git")
    commit(gds, "base")
    gds.write("notes.txt", "a\n")
    gds.git_commit_all("notes a", "notes.txt")
    c = gds.head()
    gds.write("notes.txt", "b\n")
    gds.git_commit_all("notes b", "notes.txt")
    d = gds.head()
    p = gds.tether("abandon", c, check_rc=3)
    assert p.stderr == (f"tether: error: commit {d[:12]}, a descendant of {c[:12]}, also changes notes.txt: "
                        f"removing {c[:12]} would conflict there\n")
    assert gds.head() == d


@pytest.mark.parametrize("step", ["journal-written", "rewritten"])
def test_a_kill_then_a_rerun_finishes(gds, code, store, step):
    h = History(gds, code, store)
    gds.tether("abandon", h.try_, check_rc=-9, env={"TETHER_FAULT": f"abandon:{step}"})
    left = [e for e in ops(gds) if e["status"] == "INCOMPLETE"]
    assert [(e["op"], e["abandon"], e["head_before"]) for e in left] == [("abandon", h.try_, h.result)]
    if step == "journal-written":
        assert gds.head() == h.result
    else:
        assert gds.commit_ids()[1:] == [h.base]
    # gc while the entry is open: keeps everything history or the entry names.
    assert gds.tj("gc")["errors"] == []
    r = gds.tj("abandon", h.try_)
    assert r["finished"] is (step == "rewritten")
    assert gds.commit_ids() == [r["head"], h.base]
    assert sorted(p["pin"] for p in r["pins"]) == sorted(h.try_pins.values())
    statuses = [e["status"] for e in ops(gds) if e["op"] == "abandon"]
    assert statuses == (["ABORTED", "COMPLETE"] if step == "journal-written" else ["COMPLETE"])
    assert gds.git("status", "--porcelain") == ""
    assert_verify_and_gc_agree(gds, code, store, sorted(h.try_pins.values()))


def a_late_commit(ds):
    """The racer of the branch move: a commit the checkout's branch moves on to."""
    ds.write("late.txt", "late\n")
    return ds.git_commit_all("late", "late.txt")


def test_a_writer_racing_the_branch_move_makes_it_fail(gds, code, store):
    h = History(gds, code, store)
    p, late = run_stopped(gds, ["abandon", h.try_], "abandon:journal-written:stop", lambda: a_late_commit(gds))
    err = p.stderr
    assert p.returncode == 3, err
    assert err.startswith(f"tether: error: HEAD moved: it is {late[:12]}, not {h.result[:12]} as planned"), err
    assert gds.head() == late
    assert gds.git("rev-list", "HEAD").split() == [late, h.result, h.try_, h.base]
    assert ops(gds)[-1]["status"] == "ABORTED"


def test_plans(gds, code, store, tmp_path):
    h = History(gds, code, store)
    plan = tmp_path / "abandon.json"
    before = unchanged(gds, code, store)
    p = gds.tether("abandon", h.try_, "--plan", plan)
    assert p.stdout.endswith(f"plan saved to {plan}; apply it with `tether abandon --from-plan {plan}`\n")
    assert unchanged(gds, code, store) == before
    saved = __import__("json").loads(plan.read_text())
    assert (saved["op"], saved["preconditions"]["commit"], saved["preconditions"]["head"], saved["force"]) == (
        "abandon", h.try_, h.result, False)
    gds.tether("abandon", h.try_, "--from-plan", plan, check_rc=2)
    r = gds.tj("abandon", "--from-plan", plan)
    assert gds.commit_ids() == [r["head"], h.base]
    assert sorted(p["pin"] for p in r["pins"]) == sorted(h.try_pins.values())


def test_a_stale_plan_is_refused(gds, code, store, tmp_path):
    h = History(gds, code, store)
    plan = tmp_path / "abandon.json"
    gds.tether("abandon", h.try_, "--plan", plan)
    gds.write("late.txt", "late\n")
    late = gds.git_commit_all("late", "late.txt")
    p = gds.tether("abandon", "--from-plan", plan, check_rc=3)
    assert p.stderr.startswith("tether: error: stale plan"), p.stderr
    assert gds.head() == late


def test_another_bookmark_holding_it_is_refused_in_every_vcs(dsv, code, store):
    h = History(dsv, code, store)
    if dsv.vcs == "git":
        dsv.git("branch", "keep", h.try_)
        name = "refs/heads/keep"
    else:
        subprocess.run(["jj", "bookmark", "create", "keep", "-r", h.try_], cwd=str(dsv.root), env=dsv.env,
                       check=True, capture_output=True)
        name = "keep"
    p = dsv.tether("abandon", h.try_, check_rc=3)
    assert p.stderr.startswith(f"tether: error: commit {h.try_[:12]} is in another branch: {name}\n"), p.stderr
    assert dsv.commit_ids() == [h.result, h.try_, h.base]
    # the first commit is refused in every VCS: it is where the dataset began
    p = dsv.tether("abandon", h.base, "--force", check_rc=3)
    assert "is the branch's first commit" in p.stderr
