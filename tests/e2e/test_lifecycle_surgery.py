"""The history-surgery steps of the lifecycle, per kind: `tether abandon`,
`tether undo` of a commit, of a new and of a promote, and `tether pull`,
run through the adapters of lifecycle_adapters.py, so that every backend
whose flags allow it (today git and Icechunk, spec 2 and spec 1) is held to
the same checks, and which refs exist and where they point is asked of the
system's own tool or library (git, icechunk), never of tether.

The checks: an abandoned commit's pin is released by the next gc and by
nothing before; an undone commit's pin is released by the undo itself; an
undone new's working branch is gone; an undone promote's base is back at
the head it had before, while the fork keeps the promoted state; a pull
moves an object at a detached `at` onto its branch, whose head the next
commit pins. Each is killed once at one of its kill points
(TETHER_FAULT=<op>:<step>) and re-run, and verify and gc agree afterwards:
every pin history names is held, and gc has nothing left to release.

Which checks apply is decided, as in test_lifecycle.py, by what the
backend declares in `tether backends --json`.
"""
import pytest

from lifecycle_adapters import ADAPTERS  # noqa: F401 (the suite's kinds)
from test_git_backend import jj_problem  # noqa: F401 (fixture)
from test_lifecycle import KEY, declared, life, life_vcs, vcs  # noqa: F401 (fixtures)
from test_lifecycle_promote import fork_branch, fork_written


def ops(ds):
    return ds.tj("ops")["ops"]


def open_entries(ds):
    return [e for e in ops(ds) if e["status"] == "INCOMPLETE"]


def assert_verify_and_gc_agree(L, pins):
    """verify (HEAD and every commit) holds; gc releases nothing more; the
    system holds exactly `pins` ({ref name: state id}), as its tool says."""
    ds = L.ds
    for args in (("verify",), ("verify", "--all-history")):
        v = ds.tj(*args)
        assert v["ok"] is True, v
    ds.tj("gc", "--no-dry-run")
    assert ds.tj("gc")["release"] == []
    assert open_entries(ds) == []
    assert L.pins() == pins


def two_commits(L):
    """KEY added and committed twice (a state each): ((s1, pin1, ref1),
    (s2, pin2, ref2)), both pins held, as the system lists them."""
    L.need("PIN")
    L.add()
    first = L.commit("one")
    L.a.mutate(L.store)
    second = L.commit("two")
    assert L.pins() == {first[2]: first[0], second[2]: second[0]}
    return first, second


# ---------------------------------------------------------------------------
# abandon: the commit goes; the pin only it named is gc's to release
# ---------------------------------------------------------------------------

def test_abandon_then_gc_releases_its_pin(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    (s1, pin1, ref1), (s2, pin2, ref2) = two_commits(L)
    two = ds.vcs_head()

    r = ds.tj("abandon", two)
    assert [p["pin"] for p in r["pins"]] == [pin2], "the pins only that commit named"
    assert two not in ds.commit_ids()
    assert L.pins() == {ref1: s1, ref2: s2}, "abandon releases nothing itself"
    assert L.state() == s1, "the dataset files are the parent's again"

    rows = ds.tj("gc")["release"]
    assert [(x["kind"], x["pin"]) for x in rows] == [(a.kind, pin2)]
    # gc killed just after its release: the re-run finds nothing left to do.
    ds.tether("gc", "--no-dry-run", check_rc=-9, env={"TETHER_FAULT": "gc:released"})
    assert L.pins() == {ref1: s1}
    assert_verify_and_gc_agree(L, {ref1: s1})
    assert a.head(L.store) == s2, "the data stays where it was"


# ---------------------------------------------------------------------------
# undo of a commit: the commit goes and the undo releases its pin
# ---------------------------------------------------------------------------

def test_undo_a_commit(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    (s1, pin1, ref1), (s2, pin2, ref2) = two_commits(L)
    two = ds.vcs_head()
    ds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:vcs-removed"})
    assert [(e["op"], e["undoes_op"]) for e in open_entries(ds)] == [("undo", "commit")]
    assert two not in ds.commit_ids()
    assert L.pins() == {ref1: s1, ref2: s2}, "killed before the pin was released"

    u = ds.tj("undo")
    assert (u["resumed"], u["undone"]["commit"]) == (True, two)
    assert [p["pin"] for p in u["released"]] == [pin2]
    assert L.pins() == {ref1: s1}
    assert a.head(L.store) == s2 and L.statuses() == [(KEY, "modified")], "uncommitted again"
    assert_verify_and_gc_agree(L, {ref1: s1})
    # The next commit records it again, under the same pin id (a system
    # that never reuses a deleted tag's name, as Icechunk, gives it another
    # ref name: the manifest says which).
    s, pin, ref = L.commit("two again")
    assert (s, pin) == (s2, pin2) and L.pins() == {ref1: s1, ref: s2}
    assert_verify_and_gc_agree(L, {ref1: s1, ref: s2})


# ---------------------------------------------------------------------------
# undo of a new: the working branch it made is gone
# ---------------------------------------------------------------------------

def test_undo_a_new(life):
    L, ds, a = life, life.ds, life.a
    L.need("FORK")
    L.add()
    s1, pin1, ref1 = L.commit("base")
    branches0 = a.refs(L.store)["branches"]
    ds.tj("new", "-b", "feature")
    assert a.refs(L.store)["branches"] == {**branches0, fork_branch(ds): s1}

    ds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:fork-undone"})
    assert a.refs(L.store)["branches"] == branches0, "the branch went before the kill"
    u = ds.tj("undo")
    assert (u["resumed"], u["undone"]["op"]) == (True, "new")
    assert a.refs(L.store)["branches"] == branches0
    assert ds.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert_verify_and_gc_agree(L, {ref1: s1})


# ---------------------------------------------------------------------------
# undo of a promote: the base is back where it was
# ---------------------------------------------------------------------------

def test_undo_a_promote(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    s1, s2 = fork_written(L)
    content1 = a.content(L.store, a.base_branch)
    ds.tj("promote")
    assert a.head(L.store) == s2
    pins = L.pins()

    dry = ds.tj("undo", "--dry-run")
    assert dry["undone"]["op"] == "promote" and a.head(L.store) == s2
    ds.tether("undo", check_rc=-9, env={"TETHER_FAULT": "undo:base-moved-back"})
    assert a.head(L.store) == s1, "the base moved back before the kill"
    u = ds.tj("undo")
    assert (u["resumed"], u["undone"]["op"]) == (True, "promote")
    assert a.head(L.store) == s1 and a.content(L.store, a.base_branch) == content1
    assert a.head(L.store, fork_branch(ds)) == s2, "the fork keeps the promoted work"
    assert L.statuses() == [(KEY, "clean")]
    assert_verify_and_gc_agree(L, pins)
    # Promoting again lands it again.
    ds.tj("promote")
    assert a.head(L.store) == s2


def test_undo_of_a_promote_refuses_a_base_moved_on(life):
    L, ds, a = life, life.ds, life.a
    s1, s2 = fork_written(L)
    ds.tj("promote")
    moved = a.mutate(L.store)
    p = ds.tether("undo", check_rc=3)
    assert p.stderr.startswith(f"tether: error: {KEY}: {a.base_branch} moved on since the promote"), p.stderr
    assert a.head(L.store) == moved


# ---------------------------------------------------------------------------
# pull: an object at a detached `at` moves onto its branch on the trunk
# ---------------------------------------------------------------------------

def test_pull_moves_a_detached_object_onto_its_branch(life):
    L, ds, a = life, life.ds, life.a
    L.need("HISTORY", "PIN")
    first = a.head(L.store)
    newer = a.mutate(L.store)
    L.add("--at", first)
    s, pin1, ref1 = L.commit("at the older state")
    assert s == first and L.pins() == {ref1: first}
    ds.tether("new", "main")  # the trunk

    ds.tether("pull", check_rc=-9, env={"TETHER_FAULT": "pull:journal-written"})
    assert "at" in ds.manifest(KEY)["locator"], "killed before the manifest moved"
    r = ds.tj("pull")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [(KEY, "moved")]
    assert "at" not in ds.manifest(KEY)["locator"]
    assert L.statuses() == [(KEY, "modified")]
    s2, pin2, ref2 = L.commit("pulled")
    assert s2 == newer == a.head(L.store)
    assert L.pins() == {ref1: first, ref2: newer}
    assert a.content(L.store, ref2) == a.content(L.store, a.base_branch)
    assert_verify_and_gc_agree(L, {ref1: first, ref2: newer})
