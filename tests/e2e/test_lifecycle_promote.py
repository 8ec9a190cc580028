"""The landing steps of the lifecycle, per kind: `tether promote` (and
`tether merge` where the kind declares MERGE) after a write on the fork,
run through the adapters of lifecycle_adapters.py, so that every backend
whose flags allow it (today git and Icechunk, spec 2 and spec 1) is held
to the same checks, and where branches point is asked of the system's own
tool or library (git, icechunk), never of tether.

The checks: promote fast-forwards the base to the fork's head, which is the
recorded state, so the dataset is clean afterwards; a dry run and a plan
write nothing, and a plan whose base moved since is refused naming it; a
writer that moves the base between the plan and the move makes the move
fail (the backend compares on the reviewed head) with the writer's state
kept; a diverged base is refused (with the merge command where the kind
can merge); a merge whose sides conflict writes nothing; a promote killed at each of its kill points
(TETHER_FAULT=promote:<step>) is finished by the re-run, and verify and gc
agree afterwards.

Which checks apply is decided, as in test_lifecycle.py, by what the
backend declares in `tether backends --json`.
"""
import json
import os
import signal
import subprocess

import pytest

from conftest import TETHER_BIN, check_sanitizers, stopped
from lifecycle_adapters import ADAPTERS  # noqa: F401 (the suite's kinds)
from test_git_backend import jj_problem  # noqa: F401 (fixture)
from test_lifecycle import KEY, declared, life, life_vcs, vcs  # noqa: F401 (fixtures)


def fork_branch(ds, bookmark="feature"):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


def fork_written(L):
    """KEY added, committed, forked on `feature`, written through its
    writable handle and committed: (base head, fork head)."""
    L.need("FORK", "PROMOTE")
    ds, a = L.ds, L.a
    L.add()
    s1, _, _ = L.commit("base")
    ds.tether("new", "-b", "feature")
    s2 = a.write_via_handle(ds.tj("open", KEY))
    s2_, _, _ = L.commit("fork write")
    assert s2_ == s2 and a.head(L.store) == s1
    return s1, s2


def promote_entries(ds, op="promote"):
    return [e for e in ds.tj("ops")["ops"] if e["op"] == op]


def test_promote_lands_the_fork(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    s1, s2 = fork_written(L)
    pins = L.pins()
    r = ds.tj("promote")
    [o] = r["objects"]
    assert (o["key"], o["action"], o["branch"]) == (KEY, "promoted", fork_branch(ds))
    assert (o["base"]["branch"], o["base"]["from"], o["base"]["to"]) == (a.base_branch, s1, s2)
    assert a.head(L.store) == s2 == a.head(L.store, fork_branch(ds)), "the base is at the fork's head"
    assert a.content(L.store, a.base_branch) == a.content(L.store, L.pin_ref())
    assert L.pins() == pins, "promote makes and releases no pin"
    assert L.statuses() == [(KEY, "clean")], "the manifest records the promoted state"
    assert ds.tj("verify")["ok"] is True
    [entry] = promote_entries(ds)
    assert entry["status"] == "COMPLETE" and [m["done"] for m in entry["moves"]] == [True]
    assert [o["action"] for o in ds.tj("promote")["objects"]] == ["up-to-date"]


def test_promote_dry_run_plan_and_stale_plan(life, tmp_path):
    L, ds, a = life, life.ds, life.a
    s1, s2 = fork_written(L)
    witness = a.witness(L.store)
    plan = ds.tj("promote", "--dry-run")["plan"]
    assert [(x["key"], x["action"], a.state_id(x["expect"]), a.state_id(x["head"])) for x in plan["actions"]] == \
        [(KEY, "promote", s1, s2)]
    f = tmp_path / "plan.json"
    ds.tether("promote", "--plan", f)
    assert a.witness(L.store) == witness, "a dry run and a plan write nothing"
    assert promote_entries(ds) == []

    moved = a.mutate(L.store)
    p = ds.tether("promote", "--from-plan", f, check_rc=3)
    assert p.stderr.startswith(f"tether: error: stale plan: {KEY}: its base branch moved since the plan"), p.stderr
    assert a.head(L.store) == moved


def test_a_writer_racing_the_move_makes_it_fail(life):
    L, ds, a = life, life.ds, life.a
    fork_written(L)
    racer = []
    env = dict(ds.env, TETHER_FAULT="promote:journal-written:stop")
    proc = subprocess.Popen([TETHER_BIN, "promote"], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at promote:journal-written"
        racer.append(a.mutate(L.store))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert err.startswith(f"tether: error: {KEY}: cannot promote: ") and "moved" in err.splitlines()[0], err
    assert a.head(L.store) == racer[0], "the racing writer's state stands"
    [entry] = promote_entries(ds)
    assert entry["status"] == "ABORTED"


def test_a_diverged_base_is_refused(life):
    L, ds, a = life, life.ds, life.a
    _, s2 = fork_written(L)
    moved = a.mutate(L.store)
    p = ds.tether("promote", check_rc=3)
    hint = [line for line in p.stderr.splitlines() if line.startswith("hint: ")]
    if "MERGE" in L.caps:
        assert hint[0] == (f"hint: its base branch has moved on: `tether merge {KEY}` merges the two, then "
                           "`tether promote` lands the rest")
    else:
        assert hint[0].startswith("hint: its base branch has moved on and this system cannot merge"), hint
    assert a.head(L.store) == moved and a.head(L.store, fork_branch(ds)) == s2


def test_a_diverged_base_shows_in_the_dry_run(life):
    """Every kind here answers descends: the plan marks the base that moved
    on `diverged` before anything moves, and the dry run is refused."""
    L, ds, a = life, life.ds, life.a
    _, s2 = fork_written(L)
    moved = a.mutate(L.store)
    p = ds.tether("promote", "--dry-run", "--json", check_rc=3)
    [action] = json.loads(p.stdout)["plan"]["actions"]
    assert action["action"] == "diverged", action
    assert ("tether merge" in action["detail"]) == ("MERGE" in L.caps), action
    assert "diverged" in p.stderr.splitlines()[0] and "nothing was moved" in p.stderr.splitlines()[0]
    assert a.head(L.store) == moved and a.head(L.store, fork_branch(ds)) == s2
    assert promote_entries(ds) == []


@pytest.mark.parametrize("step", ["journal-written", "moved"])
def test_kill_mid_promote(life, step):
    L, ds, a = life, life.ds, life.a
    s1, s2 = fork_written(L)
    ds.tether("promote", check_rc=-9, env={"TETHER_FAULT": f"promote:{step}"})
    assert a.head(L.store) == (s2 if step == "moved" else s1)
    [entry] = promote_entries(ds)
    assert entry["status"] == "INCOMPLETE"

    r = ds.tj("promote")
    assert [o["action"] for o in r["objects"]] == ["up-to-date" if step == "moved" else "promoted"]
    assert a.head(L.store) == s2
    assert [e for e in ds.tj("ops")["ops"] if e["status"] == "INCOMPLETE"] == []
    assert {e["id"]: e for e in promote_entries(ds)}[entry["id"]]["status"] == "COMPLETE"
    assert ds.tj("verify", "--all-history")["ok"] is True
    pins = L.pins()
    assert ds.tj("gc")["release"] == []
    ds.tether("gc", "--no-dry-run")
    assert L.pins() == pins


def test_merge_of_a_conflicting_fork_writes_nothing(life):
    """Both sides change the same data (the adapter's mutate writes the
    same place each time): the merge conflicts, is reported for the object
    (exit 3, the report still printed), and nothing is written to the
    store. (A clean merge is in test_promote.py, where the git data can be
    made not to overlap.)"""
    L, ds, a = life, life.ds, life.a
    L.need("FORK")
    _, s2 = fork_written(L)
    moved = a.mutate(L.store)
    witness = a.witness(L.store)
    if "MERGE" not in L.caps:
        # A kind that cannot merge: the named key is refused before
        # anything is read, saying why, and nothing moves.
        p = ds.tether("merge", KEY, "-m", "land it", check_rc=3)
        assert p.stderr.startswith(f"tether: error: {KEY}: cannot merge it: its backend cannot merge (no MERGE)"), \
            p.stderr
        assert a.witness(L.store) == witness
        assert (a.head(L.store), a.head(L.store, fork_branch(ds))) == (moved, s2)
        assert promote_entries(ds, "merge") == []
        return
    p = ds.tether("merge", "-m", "land it", "--json", check_rc=3)
    [o] = json.loads(p.stdout)["objects"]
    assert (o["key"], o["action"]) == (KEY, "conflict")
    assert p.stderr.startswith(f"tether: error: 1 object was not merged (nothing was written for it): {KEY}: ")
    assert a.witness(L.store) == witness
    assert (a.head(L.store), a.head(L.store, fork_branch(ds))) == (moved, s2)
    [entry] = promote_entries(ds, "merge")
    assert entry["status"] == "ABORTED"
