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

import os
import signal
import subprocess

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import pytest

from conftest import TETHER_BIN, check_sanitizers, ops, run_stopped, stopped
from test_abandon import History, a_late_commit, git_tags, ice_tags, store  # noqa: F401 (fixtures)
from test_git_backend import code, code_commit, dsv, gds, jj_problem  # noqa: F401 (fixtures)
from test_new import where, workspace_text, ws_branches
from test_promote import fork_name, head_of, write_on


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


# ---------------------------------------------------------------------------
# promote: each base branch moved back, only while it is where promote left it
# ---------------------------------------------------------------------------

def promoted(ds, code, store):
    """code (git) and img (Icechunk) added, committed, forked on `feat`,
    written on there, committed and promoted. The bases' heads before and
    after the promote, as git and the icechunk library read them."""
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tether("add", "img", str(store), "--kind", "icechunk")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "feat")
    branch = fork_name(ds)
    before = {"code": head_of(code, "main"), "img": oracle.branch_head(store, "main")}
    sha = write_on(code, branch, {"main.py": "fork\n"}, "fork write")
    snap = oracle.commit(store, branch)
    ds.tether("commit", "-m", "fork writes")
    r = ds.tj("promote")
    assert {o["key"]: o["action"] for o in r["objects"]} == {"code": "promoted", "img": "promoted"}
    after = {"code": sha, "img": snap}
    assert {"code": head_of(code, "main"), "img": oracle.branch_head(store, "main")} == after
    return before, after


def base_heads(code, store):
    return {"code": head_of(code, "main"), "img": oracle.branch_head(store, "main")}


def test_undo_a_promote(dsv, code, store):
    before, after = promoted(dsv, code, store)
    data_promoted = oracle.read_data(store, branch="main")
    ops0 = ops(dsv)

    dry = dsv.tj("undo", "--dry-run")
    assert (dry["undone"]["op"], dry["dry_run"]) == ("promote", True)
    assert [s.split(" back to ")[0] for s in dry["steps"]] == ["code: move main", "img: move main"]
    assert (base_heads(code, store), ops(dsv)) == (after, ops0), "a dry run moves nothing"

    u = dsv.tj("undo")
    assert u["undone"]["op"] == "promote" and u["undone"]["id"] == ops0[-1]["id"]
    assert {o["key"]: (o["action"], o["base"]["to"]) for o in u["objects"]} == {
        "code": ("moved-back", before["code"]), "img": ("moved-back", before["img"])}
    assert base_heads(code, store) == before
    assert oracle.read_data(store, branch="main") != data_promoted
    assert code.git("status", "--porcelain") == "" and code.p("main.py").read_text() != "fork\n", \
        "the checked-out base follows it back, clean"
    # The working branches still hold the promoted work, which the dataset records.
    assert head_of(code, fork_name(dsv)) == after["code"]
    assert oracle.branch_head(store, fork_name(dsv)) == after["img"]
    assert [(o["key"], o["status"]) for o in dsv.tj("status")["objects"]] == [("code", "clean"), ("img", "clean")]
    last = ops(dsv)[-1]
    assert (last["op"], last["status"], last["undoes_op"], last["progress"]["moves"]) == (
        "undo", "COMPLETE", "promote", [1, 0])
    assert_consistent(dsv)

    # Promoting again lands the same work: the undo lost nothing.
    dsv.tj("promote")
    assert base_heads(code, store) == after
    assert_consistent(dsv)


def test_undo_of_promote_refuses_a_base_moved_on_since(gds, code, store):
    before, after = promoted(gds, code, store)
    late = code_commit(code, {"late.txt": "late\n"}, "landed on main since")
    ops0 = ops(gds)
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: code: main moved on since the promote (promote left it at "
                               f'{{"sha":"{after["code"]}"}}, it is at {{"sha":"{late}"}} now)'), p.stderr
    assert "moving it back would lose what was written there" in p.stderr
    assert base_heads(code, store) == {"code": late, "img": after["img"]}, "nothing moved, img neither"
    assert ops(gds) == ops0


def test_undo_of_promote_refuses_an_icechunk_base_moved_on_since(gds, code, store):
    before, after = promoted(gds, code, store)
    late = oracle.commit(store, "main")
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith("tether: error: img: main moved on since the promote"), p.stderr
    assert base_heads(code, store) == {"code": after["code"], "img": late}


def test_a_writer_racing_the_undo_of_a_promote_fails_its_move(gds, code):
    """The base moves after undo checked it, before the move back: the
    backend's compare-and-swap refuses, the racer's commit stands."""
    gds.tether("add", "code", code.root, "--kind", "git")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    before = head_of(code, "main")
    sha = write_on(code, fork_name(gds), {"main.py": "fork\n"}, "fork write")
    gds.tether("commit", "-m", "fork write")
    gds.tj("promote")
    racer = []
    env = dict(gds.env, TETHER_FAULT="undo:journal-written:stop")
    proc = subprocess.Popen([TETHER_BIN, "undo"], cwd=str(gds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at undo:journal-written"
        racer.append(code_commit(code, {"race.txt": "r\n"}, "racer"))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert err.startswith("tether: error: code: main moved on since the promote"), err
    assert head_of(code, "main") == racer[0] != sha != before
    assert ops(gds)[-1]["op"] == "undo" and ops(gds)[-1]["status"] == "ABORTED"


@pytest.mark.parametrize("step", ["journal-written", "base-moved-back"])
def test_a_killed_undo_of_a_promote_is_finished_by_the_next(dsv, code, store, step):
    before, after = promoted(dsv, code, store)
    dsv.tether("undo", check_rc=-9, env={"TETHER_FAULT": f"undo:{step}"})
    left = [e for e in ops(dsv) if e["status"] == "INCOMPLETE"]
    assert [(e["op"], e["undoes_op"]) for e in left] == [("undo", "promote")]
    # the newest move (img) goes back first
    assert base_heads(code, store) == (after if step == "journal-written" else
                                       {"code": after["code"], "img": before["img"]})
    u = dsv.tj("undo")
    assert (u["resumed"], u["undone"]["op"]) == (True, "promote")
    assert base_heads(code, store) == before
    assert_consistent(dsv)


def test_undo_of_promote_plans(gds, code, store, tmp_path):
    before, after = promoted(gds, code, store)
    plan = tmp_path / "undo.json"
    gds.tether("undo", "--plan", plan)
    assert base_heads(code, store) == after
    code_commit(code, {"late.txt": "late\n"}, "late")
    p = gds.tether("undo", "--from-plan", plan, check_rc=3)
    assert p.stderr.startswith("tether: error: code: main moved on since the promote"), p.stderr


# ---------------------------------------------------------------------------
# merge: the base back before the merge commit, the working branch back at its own head
# ---------------------------------------------------------------------------

def merged(ds, code):
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "feat")
    fork = write_on(code, fork_name(ds), {"main.py": "fork\n"}, "fork write")
    ds.tether("commit", "-m", "fork write")
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves on")
    ds.tj("merge", "-m", "land feat")
    m = head_of(code, "main")
    assert code.git("log", "-1", "--format=%P", "main").split() == [moved, fork]
    assert head_of(code, fork_name(ds)) == m
    return moved, fork, m


def test_undo_a_merge(dsv, code):
    moved, fork, m = merged(dsv, code)
    [entry] = [e for e in ops(dsv) if e["op"] == "merge"]
    assert (entry["moves"][0]["after"], entry["moves"][0]["followed"]) == ({"sha": m}, True)
    dry = dsv.tj("undo", "--dry-run")
    assert dry["steps"] == [f"code: move main back to {{\"sha\":\"{moved}\"}}",
                            f"code: move working branch {fork_name(dsv)} back to {{\"sha\":\"{fork}\"}}"]
    assert head_of(code, "main") == m
    u = dsv.tj("undo")
    assert u["undone"]["op"] == "merge"
    assert (head_of(code, "main"), head_of(code, fork_name(dsv))) == (moved, fork)
    assert code.git("status", "--porcelain") == "" and not code.p("main.py").read_text() == "fork\n"
    # The working branch is where the dataset records it: clean, not the merge's "modified".
    assert [(o["key"], o["status"]) for o in dsv.tj("status")["objects"]] == [("code", "clean")]
    assert_consistent(dsv)
    # Merging again makes a merge again.
    dsv.tj("merge", "-m", "again")
    assert code.git("log", "-1", "--format=%P", "main").split() == [moved, fork]


def test_undo_of_a_merge_refuses_a_working_branch_written_since(gds, code):
    moved, fork, m = merged(gds, code)
    late = write_on(code, fork_name(gds), {"late.txt": "l\n"}, "on the fork after the merge")
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: code: working branch {fork_name(gds)} moved since the merge"), \
        p.stderr
    assert (head_of(code, "main"), head_of(code, fork_name(gds))) == (m, late), "nothing moved"


def test_a_killed_undo_of_a_merge_is_finished_by_the_next(gds, code):
    moved, fork, m = merged(gds, code)
    gds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:base-moved-back"})
    assert (head_of(code, "main"), head_of(code, fork_name(gds))) == (moved, m)
    u = gds.tj("undo")
    assert u["resumed"] is True
    assert (head_of(code, "main"), head_of(code, fork_name(gds))) == (moved, fork)
    assert_consistent(gds)


# ---------------------------------------------------------------------------
# pull: the manifests' `at` put back, while they are the ones pull wrote
# ---------------------------------------------------------------------------

def pulled(ds, code):
    from test_pull import detached
    older, newer = detached(ds, code)
    before = ds.manifest_path("old/code").read_bytes()
    ds.tj("pull")
    assert "at" not in ds.manifest("old/code")["locator"]
    return older, newer, before


def test_undo_a_pull(dsv, code):
    older, newer, before = pulled(dsv, code)
    [entry] = [e for e in ops(dsv) if e["op"] == "pull"]
    assert [(m["key"], m["at"]) for m in entry["moved"]] == [("old/code", older)]
    dry = dsv.tj("undo", "--dry-run")
    assert dry["steps"] == [f'old/code: put it back at "{older}", off its branch']
    u = dsv.tj("undo")
    assert u["undone"]["op"] == "pull"
    assert dsv.manifest_path("old/code").read_bytes() == before
    assert {o["key"]: o["status"] for o in dsv.tj("status")["objects"]} == {"code": "clean", "old/code": "clean"}
    assert_consistent(dsv)


def test_undo_of_a_pull_refuses_a_manifest_changed_since(gds, code):
    older, newer, before = pulled(gds, code)
    path = gds.manifest_path("old/code")
    path.write_text(path.read_text() + "# edited\n")
    edited = path.read_bytes()
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith("tether: error: old/code: its manifest changed since the pull"), p.stderr
    assert path.read_bytes() == edited


def test_undo_a_commit_then_the_pull_it_recorded(gds, code):
    """The commit of a pull goes first (the manifest is the parent's again,
    at its `at`); the pull's undo then finds it back already."""
    older, newer, before = pulled(gds, code)
    gds.tether("commit", "-m", "pulled")
    assert gds.tj("undo")["undone"]["op"] == "commit"
    u = gds.tj("undo")
    assert u["undone"]["op"] == "pull" and u["steps"] == [f'old/code: at "{older}" again already']
    assert gds.manifest_path("old/code").read_bytes() == before
    assert_consistent(gds)


def test_a_killed_undo_of_a_pull_is_finished_by_the_next(gds, code):
    older, newer, before = pulled(gds, code)
    gds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:at-put-back"})
    assert gds.manifest_path("old/code").read_bytes() == before
    u = gds.tj("undo")
    assert u["resumed"] is True and u["undone"]["op"] == "pull"
    assert gds.manifest_path("old/code").read_bytes() == before
    assert_consistent(gds)


# ---------------------------------------------------------------------------
# restore: each reset working branch back at its head before, conditionally
# ---------------------------------------------------------------------------

def restored(ds, code):
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tether("commit", "-m", "one")
    ds.tether("new", "-b", "feat")
    recorded = head_of(code, fork_name(ds))
    written = write_on(code, fork_name(ds), {"main.py": "uncommitted\n"}, "uncommitted")
    ws = workspace_text(ds)
    r = ds.tj("restore")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "reset")]
    assert head_of(code, fork_name(ds)) == recorded
    return recorded, written, ws


def test_undo_a_restore(dsv, code):
    recorded, written, ws = restored(dsv, code)
    [entry] = [e for e in ops(dsv) if e["op"] == "restore"]
    assert [(r["key"], r["before"], r["after"]) for r in entry["resets"]] == [
        ("code", {"sha": written}, {"sha": recorded})]
    dry = dsv.tj("undo", "--dry-run")
    assert dry["steps"] == [f'code: move working branch {fork_name(dsv)} back to {{"sha":"{written}"}}',
                            "put .tether/workspace.toml back as it was before `restore`"]
    u = dsv.tj("undo")
    assert u["undone"]["op"] == "restore"
    assert head_of(code, fork_name(dsv)) == written, "the discarded writes are back"
    assert workspace_text(dsv) == ws
    assert dsv.tj("status")["objects"][0]["status"] == "modified"
    assert_consistent(dsv)


def test_undo_of_a_restore_refuses_a_branch_written_since(gds, code):
    recorded, written, ws = restored(gds, code)
    late = write_on(code, fork_name(gds), {"late.txt": "l\n"}, "late")
    p = gds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: code: working branch {fork_name(gds)} moved since the restore"), \
        p.stderr
    assert head_of(code, fork_name(gds)) == late


def test_a_killed_undo_of_a_restore_is_finished_by_the_next(gds, code):
    recorded, written, ws = restored(gds, code)
    gds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:reset-undone"})
    assert head_of(code, fork_name(gds)) == written
    u = gds.tj("undo")
    assert u["resumed"] is True and workspace_text(gds) == ws
    assert head_of(code, fork_name(gds)) == written
    assert_consistent(gds)
