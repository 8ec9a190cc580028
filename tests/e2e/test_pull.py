"""tether pull: on the trunk, an object at a detached `at` moves onto its
upstream branch (backends.md, Conventions: `at` is pinned by the first
commit until a trunk `pull` moves the object onto the branch).

The move is the working manifest's (its locator loses `at`); the next
commit pins the branch head. Off the trunk, and on a stale workspace, pull
is refused. Plans, --dry-run, --from-plan, the conditional re-read of the
branch head (a racing writer), a kill mid-run (the re-run finishes), and
the journal, on git and jj datasets with git objects, and on Icechunk
repositories checked with the icechunk library.
"""
import json
import signal
import subprocess

import icechunk_oracle as oracle  # first: it quiets icechunk's logging
import pytest

from conftest import TETHER_BIN, check_sanitizers, run_stopped
from test_git_backend import add_code, code, code_commit, dsv, gds, jj_problem  # noqa: F401


def jj(ds, *args):
    p = subprocess.run(["jj", "--no-pager", *args], cwd=str(ds.root), env=ds.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def on_trunk(ds):
    """The trunk bookmark main on the last commit (jj makes none itself),
    and the workspace on it."""
    if ds.vcs != "git":
        jj(ds, "bookmark", "set", "main", "-r", "@-", "--allow-backwards")
    ds.tether("new", "main")


def detached(ds, code):
    """code at its newest commit, old/code at the one before (--at), both
    committed: the spec's --pick example. Returns (older, newer)."""
    older = code.head()
    newer = code_commit(code, {"main.py": "v2\n"}, "c2")
    add_code(ds, code)
    ds.tether("add", "old/code", code.root, "--kind", "git", "--at", older)
    ds.tether("commit", "-m", "both")
    on_trunk(ds)
    return older, newer


def test_pull_moves_a_detached_object_onto_its_branch_and_commit_pins_the_head(dsv, code):
    older, newer = detached(dsv, code)
    assert dsv.manifest("old/code")["state"]["sha"] == older
    plan = dsv.tj("pull", "--dry-run")["plan"]
    assert plan["op"] == "pull" and plan["bookmark"] == "main"
    assert plan["actions"] == [
        {"key": "code", "action": "stay", "detail": "not at a detached `at`: nothing to move"},
        {"key": "old/code", "action": "move", "from": older, "to": {"sha": newer}},
    ]
    assert "at" in dsv.manifest("old/code")["locator"]  # a dry run writes nothing
    out = dsv.tether("pull").stdout.splitlines()
    assert out[0] == "pull on main"
    assert out[2] == f'  moved     old/code: at "{older}" -> the branch head {{"sha":"{newer}"}}', out
    assert out[-1] == "`tether commit` pins the object now on its branch head"
    m = dsv.manifest("old/code")
    assert "at" not in m["locator"] and m["state"]["sha"] == older  # pinned by the next commit
    st = {o["key"]: o["status"] for o in dsv.tj("status")["objects"]}
    assert st == {"code": "clean", "old/code": "modified"}
    dsv.tether("commit", "-m", "pulled")
    m = dsv.manifest("old/code")
    assert m["state"]["sha"] == newer and m["pin"] == dsv.manifest("code")["pin"]
    # Nothing detached is left: a second pull moves nothing.
    assert [o["action"] for o in dsv.tj("pull")["objects"]] == ["stay", "stay"]
    dsv.tether("verify")


def test_pull_is_refused_off_the_trunk_and_on_a_stale_workspace(gds, code):
    detached(gds, code)
    gds.tether("new", "-b", "feat")
    p = gds.tether("pull", check_rc=3)
    assert p.stderr.splitlines()[0] == "tether: error: pull works on the trunk (main); this workspace is on feat"
    assert p.stderr.splitlines()[1].startswith("hint: `tether new main` goes to the trunk")
    gds.git("checkout", "-q", "main")  # behind tether's back
    p = gds.tether("pull", check_rc=3)
    assert "pull refused: the workspace is stale" in p.stderr
    assert "at" in gds.manifest("old/code")["locator"]


def test_pull_takes_keys_and_names_an_unknown_one(gds, code):
    detached(gds, code)
    r = gds.tj("pull", "code")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "stay")]
    assert "at" in gds.manifest("old/code")["locator"]
    p = gds.tether("pull", "nope", check_rc=1)
    assert p.stderr.startswith("tether: error: pull: no object 'nope' in the working copy"), p.stderr
    r = gds.tj("pull", "old/code")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("old/code", "moved")]


def test_a_plan_is_performed_exactly_and_refused_when_the_branch_moved(gds, code, tmp_path):
    older, newer = detached(gds, code)
    plan_file = tmp_path / "pull.json"
    out = gds.tether("pull", "--plan", plan_file).stdout
    assert f"apply it with `tether pull --from-plan {plan_file}`" in out
    saved = json.loads(plan_file.read_text())
    assert saved["preconditions"]["objects"][0]["key"] == "old/code"
    # The branch moves after the review: the plan is stale, nothing written.
    newest = code_commit(code, {"main.py": "v3\n"}, "c3")
    before = gds.manifest_path("old/code").read_text()
    p = gds.tether("pull", "--from-plan", plan_file, check_rc=3)
    assert p.stderr.startswith("tether: error: stale plan"), p.stderr
    assert gds.manifest_path("old/code").read_text() == before
    # A fresh plan is performed as reviewed.
    gds.tether("pull", "--plan", plan_file)
    r = gds.tj("pull", "--from-plan", plan_file)
    assert [(o["key"], o["action"], o.get("to")) for o in r["objects"]] == [
        ("code", "stay", None), ("old/code", "moved", {"sha": newest})]
    assert gds.tether("pull", "--from-plan", plan_file, "code", check_rc=2)


def test_a_racing_writer_makes_the_conditional_move_fail_and_nothing_is_written(gds, code):
    older, newer = detached(gds, code)
    before = gds.manifest_path("old/code").read_text()
    p, raced = run_stopped(gds, ["pull"], "pull:journal-written:stop",
                           lambda: code_commit(code, {"main.py": "raced\n"}, "race"))
    err = p.stderr
    assert p.returncode == 3, err
    assert err.splitlines()[0] == (f"tether: error: old/code: its upstream branch moved since the plan "
                                   f"(at {{\"sha\":\"{newer}\"}}, now at {{\"sha\":\"{raced}\"}})"), err
    assert gds.manifest_path("old/code").read_text() == before
    last = gds.tj("ops")["ops"][-1]
    assert last["op"] == "pull" and last["status"] == "ABORTED"


def test_a_kill_mid_pull_is_finished_by_the_rerun(gds, code, new_repo):
    older, newer = detached(gds, code)
    other = new_repo("other")
    o1 = code_commit(other, {"x": "1\n"}, "x1")
    o2 = code_commit(other, {"x": "2\n"}, "x2")
    gds.tether("add", "p/other", other.root, "--kind", "git", "--at", o1)
    gds.tether("commit", "-m", "another detached")
    env = dict(gds.env, TETHER_FAULT="pull:moved")
    p = subprocess.run([TETHER_BIN, "pull"], cwd=str(gds.root), env=env, capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == -signal.SIGKILL
    # The first move landed (keys in order: code, old/code, p/other).
    assert "at" not in gds.manifest("old/code")["locator"]
    assert gds.manifest("p/other")["locator"]["at"] == o1
    assert [e["status"] for e in gds.tj("ops")["ops"] if e["op"] == "pull"] == ["INCOMPLETE"]
    r = gds.tj("pull")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "stay"), ("old/code", "stay"),
                                                                 ("p/other", "moved")]
    gds.tether("commit", "-m", "both pulled")
    # The commit that records the finished work closes the dead run's entry.
    assert [e["status"] for e in gds.tj("ops")["ops"] if e["op"] == "pull"] == ["COMPLETE", "COMPLETE"]
    assert gds.manifest("p/other")["state"]["sha"] == o2 and gds.manifest("old/code")["state"]["sha"] == newer
    # verify and gc agree: every pin a manifest names is held and kept.
    gds.tether("verify")
    named = {gds.manifest(k)["pin"] for k in ("code", "old/code", "p/other")}
    assert not named & {x["pin"] for x in gds.tj("gc", "--dry-run")["release"]}


# ---------------------------------------------------------------------------
# Icechunk, checked with the icechunk library
# ---------------------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    path = tmp_path / "imaging.icechunk"
    oracle.create(path)
    return path


def test_pull_moves_an_icechunk_key_onto_main_and_the_tag_names_the_head(dsv, store):
    repo = oracle.open_repo(store)
    first = repo.lookup_branch("main")
    second = oracle.commit(store)
    dsv.tether("add", "zarr/now", str(store), "--kind", "icechunk")
    dsv.tether("add", "zarr/then", str(store), "--kind", "icechunk", "--at", first)
    dsv.tether("commit", "-m", "both")
    on_trunk(dsv)
    assert dsv.manifest("zarr/then")["state"] == {"snapshot_id": first}
    assert oracle.open_repo(store).lookup_tag(dsv.manifest("zarr/then")["pin_ref"]["tag"]) == first
    r = dsv.tj("pull")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("zarr/now", "stay"), ("zarr/then", "moved")]
    assert r["objects"][1]["to"] == {"snapshot_id": second}
    # On the trunk the moved key writes main itself.
    h = dsv.tj("open", "zarr/then")
    assert (h["read_only"], h["branch"], h["snapshot_id"]) == (False, "main", second)
    third = oracle.commit(store)
    dsv.tether("commit", "-m", "pulled")
    for key in ("zarr/now", "zarr/then"):
        m = dsv.manifest(key)
        assert m["state"] == {"snapshot_id": third}
        assert oracle.open_repo(store).lookup_tag(m["pin_ref"]["tag"]) == third
    assert sorted(oracle.open_repo(store).list_branches()) == ["main"]  # nothing forked on the trunk
    assert oracle.read_data(store, branch="main") == oracle.read_data(store, snapshot_id=third)


def test_pull_names_a_working_branch_an_older_tether_forked_on_the_trunk(gds, code):
    """Before the trunk stood for the upstream branch, `new main` forked
    tether.ws.<dataset8>.main: such a workspace is said, not moved."""
    detached(gds, code)
    gds.tether("new", "-b", "feat")
    legacy = f"tether.ws.{gds.dataset_id()[:8]}.feat"
    gds.git("checkout", "-q", "main")
    ws = gds.p(".tether/workspace.toml")
    text = ws.read_text().replace('bookmark = "feat"', 'bookmark = "main"')
    ws.write_text(text)
    assert gds.tj("status")["workspace"]["stale"] is False
    r = gds.tj("pull", "code")
    assert r["objects"] == [{"key": "code", "action": "stay", "detail": (
        f"works on {legacy}, a working branch an older tether forked on the trunk: `tether new` moves it onto "
        "its upstream branch")}]
    assert [o["action"] for o in gds.tj("new")["objects"]] == ["upstream", "detached"]
    assert gds.tj("pull", "code")["objects"][0]["detail"] == "not at a detached `at`: nothing to move"
