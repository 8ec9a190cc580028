"""tether undo: take back the last operation of the journal.

A commit: its VCS commit removed (while it is HEAD and no other ref holds
it), the pins it created released (git tags read back with git, Icechunk
tags with the icechunk library); the data stays, uncommitted again. A new:
the working branches it forked deleted while untouched, workspace.toml and
the checkout put back. A second undo takes back the operation before, never
the undo. Refused, saying why, when history or a store moved on, and for an
op with no inverse; a dry run writes nothing; a kill part-way is finished
by the next undo; verify and gc agree afterwards. In git, colocated jj and
jj datasets.
"""

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import pytest

from conftest import ops, run_stopped
from test_abandon import History, a_late_commit, git_tags, ice_tags, store  # noqa: F401 (fixtures)
from test_git_backend import code, code_commit, dsv, gds, jj_problem  # noqa: F401 (fixtures)
from test_new import where, workspace_text, ws_branches


def assert_consistent(ds):
    for args in (("verify",), ("verify", "--all-history")):
        v = ds.tj(*args)
        assert v["ok"] is True, v
    ds.tj("gc", "--no-dry-run")
    assert ds.tj("gc")["release"] == []
    assert not [e for e in ops(ds) if e["status"] == "INCOMPLETE"]


def ice_branches(store):
    return sorted(oracle.open_repo(store).list_branches())


def test_undo_a_commit(dsv, code, store):
    h = History(dsv, code, store)
    tags0, ice0 = git_tags(code), ice_tags(store)
    manifests0 = {k: dsv.manifest_path(k).read_bytes() for k in ("code", "img")}
    code_commit(code, {"main.py": "more\n"}, "more")
    oracle.commit(store)
    r = dsv.tj("commit", "-m", "more")
    c, pins = r["commit"], {o["key"]: o["pin"] for o in r["objects"]}
    made = {f"tether.{pins['code']}"}, {f"tether.{pins['img']}"}
    assert (git_tags(code) - tags0, ice_tags(store) - ice0) == made
    ops0 = ops(dsv)

    dry = dsv.tj("undo", "--dry-run")
    assert (dry["undone"]["op"], dry["undone"]["commit"], dry["undone"]["message"], dry["dry_run"]) == (
        "commit", c, "more", True)
    assert dry["steps"][0] == f"remove commit {c[:12]} (HEAD back to {h.result[:12]})"
    assert len(dry["steps"]) == 3
    assert (dsv.vcs_head(), git_tags(code) - tags0, ops(dsv)) == (c, made[0], ops0)

    u = dsv.tj("undo")
    assert (u["undone"]["id"], u["dry_run"], u["resumed"], u["errors"]) == (ops0[-1]["id"], False, False, [])
    assert sorted(p["pin"] for p in u["released"]) == sorted(pins.values())
    assert dsv.vcs_head() == h.result == u["head"]
    assert dsv.commit_ids() == [h.result, h.try_, h.base]
    assert (git_tags(code), ice_tags(store)) == (tags0, ice0)
    assert {k: dsv.manifest_path(k).read_bytes() for k in ("code", "img")} == manifests0
    # The data is where the commit found it: uncommitted again.
    assert {o["key"]: o["status"] for o in dsv.tj("status")["objects"]} == {"code": "modified", "img": "modified"}
    last = ops(dsv)[-1]
    assert (last["op"], last["status"], last["undoes"], last["undoes_op"]) == ("undo", "COMPLETE",
                                                                              ops0[-1]["id"], "commit")
    assert_consistent(dsv)

    # A second undo takes back the commit before, not the undo.
    u2 = dsv.tj("undo")
    assert u2["undone"]["commit"] == h.result
    assert dsv.commit_ids() == [h.try_, h.base]
    assert f"tether.{h.result_pins['code']}" not in git_tags(code)
    assert_consistent(dsv)

    # Committing again records the same states under the same pins.
    r = dsv.tj("commit", "-m", "again")
    assert {o["key"]: o["pin"] for o in r["objects"]} == pins
    assert_consistent(dsv)


def test_text_output(gds, code, store):
    History(gds, code, store)
    c = gds.head()
    p = gds.tether("undo", "--dry-run")
    lines = p.stdout.splitlines()
    assert lines[0].startswith("dry run: would undo commit ") and lines[0].endswith(' ("result")')
    assert lines[1] == f"  remove commit {c[:12]} (HEAD back to {gds.git('rev-parse', 'HEAD~1').strip()[:12]})"
    assert lines[-1] == "dry run: nothing written"


def test_undo_refuses_when_history_moved_on(gds, code, store):
    h = History(gds, code, store)
    gds.write("README", "r\n")
    late = gds.git_commit_all("by hand", "README")
    before = (gds.head(), git_tags(code), ice_tags(store), ops(gds))
    p = gds.tether("undo", check_rc=3)
    assert p.stderr == (f"tether: error: history moved on since the commit: HEAD is {late[:12]}, not "
                        f"{h.result[:12]}, the commit to undo\n")
    assert (gds.head(), git_tags(code), ice_tags(store), ops(gds)) == before


def test_undo_refuses_a_pushed_commit(gds, code, store, tmp_path):
    History(gds, code, store)
    remote = tmp_path / "remote.git"
    gds.git("init", "-q", "--bare", remote)
    gds.git("remote", "add", "origin", remote)
    gds.git("push", "-q", "origin", "main")
    p = gds.tether("undo", check_rc=3)
    assert "is already pushed: it is in refs/remotes/origin/main" in p.stderr


def test_undo_refuses_an_op_it_cannot_invert_and_an_empty_journal(gds, code, store):
    p = gds.tether("undo", check_rc=3)
    assert p.stderr == "tether: error: nothing to undo: no operation in the journal is left to take back\n"
    h = History(gds, code, store)
    gds.tether("abandon", h.try_)
    entry = ops(gds)[-1]
    p = gds.tether("undo", check_rc=3)
    assert p.stderr == (f"tether: error: the last operation, abandon (journal entry {entry['id']}, "
                        f"{entry['started']}), has no inverse that tether undo knows\n"
                        f"hint: the VCS's own undo takes it back (its reflog or operation log): HEAD was "
                        f"{h.result[:12]} before it\n")


def test_undo_a_new(dsv, code, store):
    History(dsv, code, store)
    where0, ws0 = where(dsv), workspace_text(dsv)
    branches0 = ice_branches(store)
    r = dsv.tj("new", "-b", "feature")
    assert {o["key"]: o["action"] for o in r["objects"]} == {"code": "forked", "img": "forked"}
    branch = f"tether.ws.{dsv.dataset_id()[:8]}.feature"
    assert ws_branches(code, dsv) == [branch] and branch in ice_branches(store)
    entry = ops(dsv)[-1]
    assert (entry["op"], entry["status"], entry["created_branch"]) == ("new", "COMPLETE", "feature")
    assert [f["key"] for f in entry["forks"]] == ["code", "img"]

    dry = dsv.tj("undo", "--dry-run")
    assert dry["steps"][:3] == [f"code: delete working branch {branch}", f"img: delete working branch {branch}",
                                "put .tether/workspace.toml back as it was before `new`"]
    assert dry["steps"][3].startswith("move the checkout back") and len(dry["steps"]) == 4
    assert ws_branches(code, dsv) == [branch]

    u = dsv.tj("undo")
    assert u["undone"]["op"] == "new"
    assert ws_branches(code, dsv) == [] and ice_branches(store) == branches0
    assert (where(dsv), workspace_text(dsv)) == (where0, ws0)
    assert_consistent(dsv)


def test_undo_of_new_refuses_a_fork_written_since(gds, code, store):
    History(gds, code, store)
    gds.tj("new", "-b", "feature")
    branch = f"tether.ws.{gds.dataset_id()[:8]}.feature"
    code.git("checkout", "-q", branch)
    code_commit(code, {"main.py": "on the fork\n"}, "work")
    code.git("checkout", "-q", "main")
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: code: working branch {branch} moved since `new` forked it"), p.stderr
    assert ws_branches(code, gds) == [branch]
    assert gds.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"


def test_undo_of_new_refuses_a_checkout_moved_since(gds, code, store):
    History(gds, code, store)
    gds.tj("new", "-b", "feature")
    gds.git("checkout", "-q", "main")
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith("tether: error: the checkout moved on since `new`"), p.stderr


def test_commit_after_new_then_undo_twice(gds, code, store):
    """undo walks back: the commit made on the new branch goes; the new
    then is refused, since the fork holds the work the commit had recorded,
    uncommitted again; once that commit is made again and undone with its
    fork reset by hand, the new goes too."""
    History(gds, code, store)
    where0 = where(gds)
    gds.tj("new", "-b", "feature")
    branch = f"tether.ws.{gds.dataset_id()[:8]}.feature"
    code.git("checkout", "-q", branch)
    code_commit(code, {"main.py": "feature\n"}, "feature")
    code.git("checkout", "-q", "main")
    assert gds.tj("commit", "-m", "on feature")["commit"]
    assert gds.tj("undo")["undone"]["op"] == "commit"
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: code: working branch {branch} moved since `new` forked it")
    forked_at = [f for f in ops(gds) if f["op"] == "new"][-1]["forks"][0]["after"]["sha"]
    code.git("branch", "-f", branch, forked_at)  # the user drops that work
    assert gds.tj("undo")["undone"]["op"] == "new"
    assert where(gds) == where0 and ws_branches(code, gds) == []
    p = gds.tether("undo", "--dry-run")
    assert "would undo commit" in p.stdout  # then the History's own commits
    assert_consistent(gds)


@pytest.mark.parametrize("step", ["journal-written", "vcs-removed"])
def test_a_killed_undo_of_a_commit_is_finished_by_the_next(gds, code, store, step):
    h = History(gds, code, store)
    gds.tether("undo", check_rc=-9, env={"TETHER_FAULT": f"undo:{step}"})
    left = [e for e in ops(gds) if e["status"] == "INCOMPLETE"]
    assert [(e["op"], e["undoes_op"]) for e in left] == [("undo", "commit")]
    assert gds.head() == (h.result if step == "journal-written" else h.try_)
    u = gds.tj("undo")
    assert (u["resumed"], u["undone"]["commit"]) == (True, h.result)
    assert gds.commit_ids() == [h.try_, h.base]
    assert f"tether.{h.result_pins['code']}" not in git_tags(code)
    assert f"tether.{h.result_pins['img']}" not in ice_tags(store)
    assert_consistent(gds)


def test_a_killed_undo_of_a_new_is_finished_by_the_next(gds, code, store):
    History(gds, code, store)
    where0, ws0 = where(gds), workspace_text(gds)
    gds.tj("new", "-b", "feature")
    gds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:fork-undone"})
    branch = f"tether.ws.{gds.dataset_id()[:8]}.feature"
    # the newest fork (img) was taken back; code's is still there
    assert ws_branches(code, gds) == [branch]
    u = gds.tj("undo")
    assert u["resumed"] is True and u["undone"]["op"] == "new"
    assert ws_branches(code, gds) == [] and (where(gds), workspace_text(gds)) == (where0, ws0)
    assert_consistent(gds)


def test_plans(gds, code, store, tmp_path):
    h = History(gds, code, store)
    plan = tmp_path / "undo.json"
    p = gds.tether("undo", "--plan", plan)
    assert p.stdout.endswith(f"plan saved to {plan}; apply it with `tether undo --from-plan {plan}`\n")
    assert gds.head() == h.result
    u = gds.tj("undo", "--from-plan", plan)
    assert u["undone"]["commit"] == h.result and gds.head() == h.try_
    # The same plan again: the operation it names is undone now.
    p = gds.tether("undo", "--from-plan", plan, check_rc=3)
    assert p.stderr.startswith("tether: error: stale plan: the operation to undo is now commit"), p.stderr
    assert gds.head() == h.try_


def test_a_killed_commit_finished_by_its_rerun_is_undone_once(gds, code, store):
    """The dead commit's entry is closed by the re-run (finished_by): undo
    takes back the re-run's commit, then the commit before, not the same
    commit twice."""
    h = History(gds, code, store)
    code_commit(code, {"main.py": "more\n"}, "more")
    oracle.commit(store)
    gds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:journal-written"})
    c = gds.tj("commit", "-m", "x")["commit"]
    assert [e.get("finished_by") for e in ops(gds) if e["op"] == "commit"][-2:] == [c, None]
    assert gds.tj("undo")["undone"]["commit"] == c
    assert gds.tj("undo")["undone"]["commit"] == h.result
    assert gds.commit_ids() == [h.try_, h.base]
    assert_consistent(gds)


def test_a_writer_racing_the_undo_makes_it_fail_and_changes_nothing(gds, code, store):
    h = History(gds, code, store)
    tags0, ice0 = git_tags(code), ice_tags(store)
    p, late = run_stopped(gds, ["undo"], "undo:journal-written:stop", lambda: a_late_commit(gds))
    err = p.stderr
    assert p.returncode == 3, err
    assert err.startswith(f"tether: error: HEAD moved: it is {late[:12]}, not {h.result[:12]} as planned"), err
    assert gds.git("rev-list", "HEAD").split() == [late, h.result, h.try_, h.base]
    assert (git_tags(code), ice_tags(store)) == (tags0, ice0)
    assert ops(gds)[-1]["op"] == "undo" and ops(gds)[-1]["status"] == "ABORTED"
