"""gc --prune-workspaces: the working branches of workspaces that are gone.

A code repository is a git object of the dataset; `tether new -b feature`
forks tether.ws.<dataset8>.feature in it, `tether new -b other` moves the
dataset on, and the feature bookmark is then deleted with the VCS itself
(git branch -D / jj bookmark delete). The feature workspace is dead: gc
lists its working branch, deletes it when its head is pinned, keeps it
while it holds unpinned commits unless --force-prune, and keeps it when
--keep-workspace names it. The live bookmark's branch is never touched.
Run in git, colocated jj and jj datasets.
"""
import json
import os
import signal
import subprocess

from conftest import TETHER_BIN, check_sanitizers, stopped
from test_git_backend import (  # noqa: F401 (fixtures)
    add_code,
    code,
    code_commit,
    dsv,
    gds,
    jj_problem,
    rev,
)


def branches(code):
    return sorted(code.git("branch", "--list", "--format=%(refname:short)").split())


def kill_bookmark(ds, name):
    """Delete a bookmark the way a user of that VCS would."""
    if ds.vcs == "git":
        ds.git("branch", "-q", "-D", name)
    else:
        p = subprocess.run(["jj", "bookmark", "delete", name], cwd=str(ds.root), env=ds.env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def dead_feature(ds, code):
    """A dataset whose feature workspace is gone; (feature branch, live
    branch, the pinned sha the feature branch was forked at)."""
    sha1 = code.head()
    add_code(ds, code)
    ds.tether("commit", "-m", "one")
    ds8 = ds.dataset_id()[:8]
    ds.tether("new", "-b", "feature")
    ds.tether("new", "-b", "other")
    kill_bookmark(ds, "feature")
    feature, other = f"tether.ws.{ds8}.feature", f"tether.ws.{ds8}.other"
    assert branches(code) == sorted(["main", feature, other])
    return feature, other, sha1


def prune(ds, *args, check_rc=0):
    return ds.tj("gc", "--prune-workspaces", *args, check_rc=check_rc)


def test_dead_pinned_branch_is_listed_then_deleted(dsv, code):
    feature, other, sha1 = dead_feature(dsv, code)
    r = prune(dsv)
    assert r["dry_run"] is True
    assert r["prune"] == [{"kind": "git", "identity": {"path": str(code.root)}, "branch": feature,
                           "head": {"sha": sha1}, "pinned": True, "action": "delete",
                           "reason": "its head is pinned", "done": False}]
    assert feature in branches(code)

    text = dsv.tether("gc", "--prune-workspaces").stdout
    assert f"would delete   git branch {feature} (its head is pinned)" in text

    r = prune(dsv, "--no-dry-run")
    assert [(p["branch"], p["action"], p["done"]) for p in r["prune"]] == [(feature, "delete", True)]
    assert branches(code) == sorted(["main", other])
    assert rev(code, f"refs/heads/{other}") == sha1
    assert prune(dsv, "--no-dry-run")["prune"] == []
    # The pin that held the head is still there: gc released nothing.
    assert r["release"] == []
    assert dsv.tj("verify", "--all-history")["ok"] is True


def test_unpinned_work_needs_force_prune(dsv, code):
    feature, other, sha1 = dead_feature(dsv, code)
    code.git("checkout", "-q", feature)
    sha2 = code_commit(code, {"main.py": "unrecorded work\n"}, "wip")
    code.git("checkout", "-q", "main")

    r = prune(dsv, "--no-dry-run")
    assert [(p["branch"], p["head"], p["pinned"], p["action"], p["done"]) for p in r["prune"]] == [
        (feature, {"sha": sha2}, False, "keep", False)]
    assert "--force-prune" in r["prune"][0]["reason"]
    assert rev(code, f"refs/heads/{feature}") == sha2

    r = prune(dsv, "--force-prune")  # still a dry run
    assert [(p["action"], p["done"]) for p in r["prune"]] == [("delete", False)]
    assert rev(code, f"refs/heads/{feature}") == sha2

    r = prune(dsv, "--force-prune", "--no-dry-run")
    assert [(p["branch"], p["action"], p["done"]) for p in r["prune"]] == [(feature, "delete", True)]
    assert branches(code) == sorted(["main", other])
    assert rev(code, f"refs/heads/{other}") == sha1


def test_keep_workspace_keeps_its_branch(dsv, code):
    feature, other, _ = dead_feature(dsv, code)
    r = prune(dsv, "--keep-workspace", "feature", "--force-prune", "--no-dry-run")
    assert r["prune"] == []
    assert branches(code) == sorted(["main", feature, other])
    # Kept by another name: only the named workspaces stay.
    r = prune(dsv, "--keep-workspace", "nothing", "--keep-workspace", "else", "--no-dry-run")
    assert [p["branch"] for p in r["prune"]] == [feature]
    assert branches(code) == sorted(["main", other])


def test_live_and_current_bookmarks_are_never_touched(dsv, code):
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    ds8 = dsv.dataset_id()[:8]
    dsv.tether("new", "-b", "feature")
    dsv.tether("new", "-b", "other")
    # feature is still a bookmark, other is the checkout's own.
    for extra in ((), ("--force-prune",)):
        assert prune(dsv, *extra, "--no-dry-run")["prune"] == []
    assert branches(code) == sorted(["main", f"tether.ws.{ds8}.feature", f"tether.ws.{ds8}.other"])
    # gc without the flag reports no pruning at all.
    assert dsv.tj("gc", "--no-dry-run")["prune"] == []


def test_other_datasets_branches_are_not_ours(gds, code):
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    code.git("branch", "tether.ws.00000000.feature")
    code.git("branch", "tether.ws.feature")
    assert prune(gds, "--force-prune", "--no-dry-run")["prune"] == []
    assert "tether.ws.00000000.feature" in branches(code)


def test_prune_options_are_checked(gds, code):
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    for args in (["--force-prune"], ["--keep-workspace", "x"],
                 ["--prune-workspaces", "--plan", str(gds.root / "plan.json")]):
        p = gds.tether("gc", *args, check_rc=2)
        assert "prune" in p.stderr, p.stderr


def test_a_write_after_the_listing_keeps_the_branch(gds, code):
    """gc lists the dead branch at its pinned head and decides to delete
    it; a write lands on it before the delete (gc:pruning): the delete is
    conditional on the listed head (delete_working_ref_if), so the write
    stays, and gc says why."""
    feature, other, sha1 = dead_feature(gds, code)
    env = dict(gds.env, TETHER_FAULT="gc:pruning:stop")
    proc = subprocess.Popen([TETHER_BIN, "gc", "--prune-workspaces", "--no-dry-run", "--json"], cwd=str(gds.root),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at gc:pruning"
        code.git("checkout", "-q", feature)
        racer = code_commit(code, {"main.py": "the racer\n"}, "racer")
        code.git("checkout", "-q", "main")
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode != 0, (out, err)
    r = json.loads(out)
    assert [(p["branch"], p["action"], p["done"]) for p in r["prune"]] == [(feature, "delete", False)]
    assert f"refs/heads/{feature} moved: expected {sha1}, found {racer}; not deleted" in err, err
    assert rev(code, f"refs/heads/{feature}") == racer, "the racer's commit was deleted"
    # Unpinned now: the next gc keeps it unless --force-prune.
    again = prune(gds, "--no-dry-run")["prune"]
    assert [(p["branch"], p["action"], p["head"]) for p in again] == [(feature, "keep", {"sha": racer})]
    assert feature in branches(code)
