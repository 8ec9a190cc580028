"""commit --force and gc --prune-bookmarks, from the command line.

commit asks every object whose backend has NEEDS_QUIESCENCE whether writers
are active, and refuses while one is unless --force. No backend that
persists between processes has the flag yet (Neon will): the refusal and
--force's skip are driven for real through the memory backend in
tests/unit/test_engine_flags.c. Here: the flag is parsed, documented and
changes nothing for objects that need no quiescence (no check, no
warning), in git and jj datasets; and `tether backends` shows the flag on
the one backend that declares it.

gc --prune-bookmarks is the caveats' spelling of --prune-workspaces (a
workspace is a bookmark's working branches, tether.ws.<dataset8>.
<bookmark>): the same report, the same deletions, the same refusals.
"""
from test_git_backend import add_code, code, dsv, gds, jj_problem  # noqa: F401 (fixtures)
from test_prune import branches, dead_feature


def test_force_commits_as_usual_when_nothing_needs_quiescence(dsv, code):
    add_code(dsv, code)
    r = dsv.tj("commit", "-m", "one", "--force")
    assert r["commit"] is not None
    assert r["warnings"] == []
    assert dsv.tj("verify")["ok"] is True
    # With a plan: --force is a run-time choice, the plan is the same.
    code.write("b.txt", "b\n")
    code.git_commit_all("c2", "b.txt")
    plan = dsv.root / "plan.json"
    dsv.tether("commit", "-m", "two", "--force", "--plan", str(plan))
    r = dsv.tj("commit", "--force", "--from-plan", str(plan))
    assert r["commit"] is not None and r["warnings"] == []


def test_force_in_help_and_the_flag_in_backends(gds):
    text = gds.tether("commit", "--help").stdout
    assert "commit -m MSG [--strict] [--force]" in text
    assert "--force" in text and "NEEDS_QUIESCENCE" in text
    rows = {b["kind"]: b for b in gds.tj("backends")}
    assert "NEEDS_QUIESCENCE" in rows["memory"]["flags"]
    assert "NEEDS_QUIESCENCE" not in rows["git"]["flags"]


def test_prune_bookmarks_is_prune_workspaces(dsv, code):
    feature, other, sha1 = dead_feature(dsv, code)
    a = dsv.tj("gc", "--prune-workspaces")
    b = dsv.tj("gc", "--prune-bookmarks")
    assert a["prune"] == b["prune"] and [p["branch"] for p in b["prune"]] == [feature]
    assert b["prune"][0]["action"] == "delete" and b["dry_run"] is True
    r = dsv.tj("gc", "--prune-bookmarks", "--keep-workspace", "feature", "--no-dry-run")
    assert r["prune"] == [] and feature in branches(code)  # kept: not even listed
    r = dsv.tj("gc", "--prune-bookmarks", "--no-dry-run")
    assert [(p["branch"], p["done"]) for p in r["prune"]] == [(feature, True)]
    assert branches(code) == sorted(["main", other])


def test_prune_bookmarks_refusals_and_help(gds):
    p = gds.tether("gc", "--force-prune", check_rc=2)
    assert "--force-prune and --keep-workspace need --prune-workspaces (or --prune-bookmarks)" in p.stderr
    p = gds.tether("gc", "--prune-bookmarks", "--plan", str(gds.root / "plan.json"), check_rc=2)
    assert "cannot go in a plan" in p.stderr
    text = gds.tether("gc", "--help").stdout
    assert "--prune-bookmarks" in text and "the same as --prune-workspaces" in text
