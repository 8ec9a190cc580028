"""restore and drop in the lifecycle of every Forkable kind, run per kind
through the adapters of lifecycle_adapters.py (git; Icechunk spec 2 and
spec 1, checked with the icechunk library), as test_lifecycle.py runs the
rest of the lifecycle: what each command did is read back from the
system's own tool, never from tether.

restore puts the working branch back at a commit's state, moving only the
fork (never the base branch), conditional on the head the plan read; a
racing writer makes it fail, a kill is finished by the re-run. drop
removes the object, deletes a fork a pin holds, keeps one holding unpinned
writes, and with --delete-store deletes a store `add --create` made.
"""
import os
import signal
import subprocess

from conftest import TETHER_BIN, check_sanitizers, stopped
from test_git_backend import jj_problem  # noqa: F401 (fixture)
from test_lifecycle import KEY, declared, life, life_vcs, vcs  # noqa: F401 (fixtures)


def on_fork(L):
    """KEY committed at s1 and forked on bookmark feature: (s1, the fork)."""
    L.need("FORK")
    L.add()
    s1, _, _ = L.commit("base")
    L.ds.tether("new", "-b", "feature")
    return s1, f"tether.ws.{L.ds.dataset_id()[:8]}.feature"


def test_restore_discards_the_write_on_the_fork(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    s1, branch = on_fork(L)
    base = a.head(L.store)
    s2 = a.write_via_handle(ds.tj("open", KEY))
    assert a.head(L.store, branch) == s2 != s1
    pins = L.pins()
    r = ds.tj("restore")
    assert [(o["key"], o["action"], o["branch"]) for o in r["objects"]] == [(KEY, "reset", branch)]
    assert a.head(L.store, branch) == s1, "the fork is not back at the recorded state"
    assert a.head(L.store) == base, "restore moved the base branch"
    assert L.pins() == pins
    assert L.statuses() == [(KEY, "clean")]
    assert ds.tj("commit", "-m", "nothing")["commit"] is None
    # The fork works on from there: a write, and it is what the next
    # commit pins.
    s3 = a.write_via_handle(ds.tj("open", KEY))
    assert L.commit("after restore")[0] == s3


def test_restore_an_older_revision(life):
    L, ds, a = life, life.ds, life.a
    s1, branch = on_fork(L)
    first = ds.head()
    a.write_via_handle(ds.tj("open", KEY))
    L.commit("two")
    r = ds.tj("restore", "-r", first, KEY)
    assert [o["action"] for o in r["objects"]] == ["reset"]
    # The fork the restore left the object on: the same branch, or, where
    # the system will not move a branch a pin holds (Lance), a sibling
    # `<branch>.2` the backend made and the engine recorded.
    where = a.handle_ref(ds.tj("open", KEY))
    assert where == branch or where.startswith(branch + "."), where
    assert a.head(L.store, where) == s1
    assert a.content(L.store, where) == a.content(L.store, f"tether.{L.pin_of(s1)}")


def test_restore_refused_when_a_writer_moves_the_fork(life):
    L, ds, a = life, life.ds, life.a
    s1, branch = on_fork(L)
    a.write_via_handle(ds.tj("open", KEY))
    env = dict(ds.env, TETHER_FAULT="restore:planned:stop")
    proc = subprocess.Popen([TETHER_BIN, "restore"], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at restore:planned"
        raced = a.mutate(L.store, branch)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert err.startswith(f"tether: error: {KEY}: cannot reset {branch}: "), err
    assert a.head(L.store, branch) == raced, "the racer's write was discarded"


def test_a_killed_restore_is_finished_by_the_rerun(life):
    L, ds, a = life, life.ds, life.a
    s1, branch = on_fork(L)
    a.write_via_handle(ds.tj("open", KEY))
    ds.tether("restore", check_rc=-9, env={"TETHER_FAULT": "restore:journal-written"})
    assert [o["status"] for o in ds.tj("ops")["ops"] if o["op"] == "restore"] == ["INCOMPLETE"]
    ds.tether("restore")
    assert a.head(L.store, branch) == s1
    assert [o["status"] for o in ds.tj("ops")["ops"] if o["op"] == "restore"] == ["COMPLETE", "COMPLETE"]


def test_objects_of_one_store_are_restored_together(life):
    L, ds, a = life, life.ds, life.a
    L.need("FORK")
    L.add()
    L.add(key="twin")
    ds.tether("commit", "-m", "both")
    s1 = L.state()
    ds.tether("new", "-b", "feature")
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feature"
    s2 = a.write_via_handle(ds.tj("open", KEY))
    p = ds.tether("restore", KEY, check_rc=3)
    assert p.stderr.splitlines() == [
        f"tether: error: {KEY}: cannot restore {branch} alone: twin is an object of the same store and works on "
        "that branch too", f"hint: restore them together: tether restore {KEY} twin"]
    assert a.head(L.store, branch) == s2
    r = ds.tj("restore", KEY, "twin")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [(KEY, "reset"), ("twin", "reset")]
    assert a.head(L.store, branch) == s1
    assert L.statuses() == [(KEY, "clean"), ("twin", "clean")]


def test_drop_deletes_the_pinned_fork_and_keeps_the_pins(life):
    L, ds, a = life, life.ds, life.a
    s1, branch = on_fork(L)
    pins = L.pins()
    assert branch in a.refs(L.store)["branches"]
    # A kind whose branches are storage (Neon) deletes one only when forced;
    # the delete is still conditional on the head the plan read.
    force = ["--force"] if "BRANCH_IS_STORAGE" in L.caps else []
    r = ds.tj("drop", KEY, *force)
    assert [(o["fork"], o["done"]) for o in r["objects"]] == [("delete", True)]
    assert branch not in a.refs(L.store)["branches"]
    assert a.head(L.store) == s1
    assert L.pins() == pins
    ds.tether("commit", "-m", "dropped")
    assert not ds.manifest_path(KEY).exists()
    assert ds.tj("gc")["release"] == [], "history still names the dropped object's pin"
    assert ds.tj("verify", "--all-history")["ok"] is True


def test_drop_keeps_a_fork_with_unpinned_writes(life):
    L, ds, a = life, life.ds, life.a
    _, branch = on_fork(L)
    s2 = a.write_via_handle(ds.tj("open", KEY))
    r = ds.tj("drop", KEY)
    assert [o["fork"] for o in r["objects"]] == ["keep"]
    assert a.refs(L.store)["branches"][branch] == s2


def test_drop_delete_store_of_a_created_store(life, tmp_path):
    L, ds, a = life, life.ds, life.a
    L.need("CREATE")
    path = tmp_path / ("made.icechunk" if a.kind == "icechunk" else "made")
    ds.tether("add", "made", path, "--kind", a.kind, "--create")
    assert path.exists()
    r = ds.tj("drop", "made", "--delete-store")
    assert [(o["store"], o["done"]) for o in r["objects"]] == [("delete", True)]
    assert not path.exists()
    # A store tether did not create is refused by the backend, before the
    # manifest goes.
    L.add()
    p = ds.tether("drop", KEY, "--delete-store", check_rc=3)
    says = ("is a spec-1 repository, which tether never creates" if a.name == "icechunk-spec1"
            else "was not created by this dataset (tether.owner is unset)")
    assert says in p.stderr and p.stderr.endswith("; nothing was removed from the working copy\n"), p.stderr
    assert ds.manifest_path(KEY).exists() and L.store.exists()
