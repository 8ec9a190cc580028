"""tether pull: on the trunk, an object at a detached `at` moves onto its
upstream branch; off it, a working branch behind its base is fast-forwarded (backends.md, Conventions: `at` is pinned by the first
commit until a trunk `pull` moves the object onto the branch).

The move is the working manifest's (its locator loses `at`); the next
commit pins the branch head. Off the trunk, and on a stale workspace, pull
is refused. Plans, --dry-run, --from-plan, the conditional re-read of the
branch head (a racing writer), a kill mid-run (the re-run finishes), and
the journal, on git and jj datasets with git objects, and on Icechunk
repositories checked with the icechunk library.
"""
import json
import os
import signal
import subprocess
import tomllib

import icechunk_oracle as oracle  # first: it quiets icechunk's logging
import pytest

from conftest import TETHER_BIN, check_sanitizers, run_stopped, stopped
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


def test_off_the_trunk_a_detached_object_stays_and_a_stale_workspace_is_refused(gds, code):
    detached(gds, code)
    gds.tether("new", "-b", "feat")
    r = gds.tj("pull")
    assert r["bookmark"] == "feat"
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "up-to-date"), ("old/code", "stay")]
    assert r["objects"][1]["detail"] == ("at a detached `at`: only a pull on the trunk (main) moves it onto its "
                                         "branch")
    assert "at" in gds.manifest("old/code")["locator"]
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


# ---------------------------------------------------------------------------
# Off the trunk: working branches brought up to date with their base
# ---------------------------------------------------------------------------

def fork_name(ds, bookmark="feat"):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


def head_of(repo, branch):
    return repo.git("rev-parse", f"refs/heads/{branch}").strip()


def write_on(repo, branch, files, message):
    repo.git("checkout", "-q", branch)
    try:
        return code_commit(repo, files, message)
    finally:
        repo.git("checkout", "-q", "main")


def forked(ds, code):
    add_code(ds, code)
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "feat")
    return fork_name(ds)


def pull_entries(ds):
    return [e for e in ds.tj("ops")["ops"] if e["op"] == "pull"]


def test_a_working_branch_behind_its_base_is_fast_forwarded(dsv, code):
    branch = forked(dsv, code)
    at = head_of(code, branch)
    moved = code_commit(code, {"main.py": "upstream\n"}, "upstream")
    plan = dsv.tj("pull", "--dry-run")["plan"]
    assert plan["bookmark"] == "feat"
    assert plan["actions"] == [{"key": "code", "action": "fast-forward", "branch": branch, "from": {"sha": at},
                                "to": {"sha": moved}}]
    assert head_of(code, branch) == at  # a dry run moves nothing
    out = dsv.tether("pull").stdout.splitlines()
    assert out[0] == "pull on feat"
    assert out[1] == (f'  fast-forwarded code: {branch} {{"sha":"{at}"}} -> its base branch\'s head '
                      f'{{"sha":"{moved}"}}'), out
    assert head_of(code, branch) == moved and head_of(code, "main") == moved
    assert {o["key"]: o["status"] for o in dsv.tj("status")["objects"]} == {"code": "modified"}
    dsv.tether("commit", "-m", "pulled")
    assert dsv.manifest("code")["state"]["sha"] == moved
    assert [o["action"] for o in dsv.tj("pull")["objects"]] == ["up-to-date"]
    assert [e["status"] for e in pull_entries(dsv)] == ["COMPLETE"]
    dsv.tether("verify")


def test_a_diverged_working_branch_is_reported_and_left(dsv, code):
    branch = forked(dsv, code)
    mine = write_on(code, branch, {"main.py": "mine\n"}, "fork work")
    dsv.tether("commit", "-m", "fork work")
    # Not moved on: the work is the fork's own.
    [a] = dsv.tj("pull")["objects"]
    assert (a["action"], a["detail"]) == ("ahead", "the working branch has work of its own and its base has not "
                                                   "moved on: `tether promote code` lands it")
    theirs = code_commit(code, {"other.py": "theirs\n"}, "upstream")
    [a] = dsv.tj("pull")["objects"]
    assert (a["action"], a["from"], a["to"]) == ("diverged", {"sha": mine}, {"sha": theirs})
    assert a["detail"] == ("the working branch has work of its own and its base has moved on: `tether merge code` "
                           "merges the two")
    out = dsv.tether("pull").stdout.splitlines()
    assert out[1] == ("  diverged  code (the working branch has work of its own and its base has moved on: "
                      "`tether merge code` merges the two)"), out
    assert head_of(code, branch) == mine and head_of(code, "main") == theirs
    assert pull_entries(dsv) == []  # nothing to move: nothing journalled


def test_a_stale_plan_names_the_head_that_moved(gds, code, tmp_path):
    branch = forked(gds, code)
    at = head_of(code, branch)
    moved = code_commit(code, {"main.py": "upstream\n"}, "upstream")
    plan_file = tmp_path / "pull.json"
    gds.tether("pull", "--plan", plan_file)
    again = code_commit(code, {"main.py": "again\n"}, "again")
    p = gds.tether("pull", "--from-plan", plan_file, check_rc=3)
    assert p.stderr.splitlines()[0] == (f'tether: error: stale plan: code\'s base branch moved since the plan '
                                        f'(at {{"sha":"{moved}"}}, now at {{"sha":"{again}"}})'), p.stderr
    gds.tether("pull", "--plan", plan_file)
    raced = write_on(code, branch, {"x.py": "raced\n"}, "working write")
    p = gds.tether("pull", "--from-plan", plan_file, check_rc=3)
    assert p.stderr.splitlines()[0] == (f'tether: error: stale plan: code\'s working branch moved since the plan '
                                        f'(at {{"sha":"{at}"}}, now at {{"sha":"{raced}"}})'), p.stderr
    assert head_of(code, branch) == raced


def test_a_writer_racing_the_fast_forward_is_refused_and_kept(gds, code):
    branch = forked(gds, code)
    code_commit(code, {"main.py": "upstream\n"}, "upstream")
    env = dict(gds.env, TETHER_FAULT="pull:journal-written:stop")
    proc = subprocess.Popen([TETHER_BIN, "pull"], cwd=str(gds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    raced = []
    try:
        assert stopped(proc.pid), "tether did not stop at pull:journal-written"
        raced.append(write_on(code, branch, {"x.py": "raced\n"}, "working write"))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert err.startswith(f"tether: error: code: cannot fast-forward {branch}: "), err
    assert head_of(code, branch) == raced[0]
    assert pull_entries(gds)[-1]["status"] == "ABORTED"
    [a] = gds.tj("pull")["objects"]
    assert a["action"] == "diverged"


def test_a_kill_at_the_fast_forward_is_finished_by_the_rerun(dsv, code):
    branch = forked(dsv, code)
    moved = code_commit(code, {"main.py": "upstream\n"}, "upstream")
    env = dict(dsv.env, TETHER_FAULT="pull:forked")
    p = subprocess.run([TETHER_BIN, "pull"], cwd=str(dsv.root), env=env, capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == -signal.SIGKILL
    assert head_of(code, branch) == moved
    assert [e["status"] for e in pull_entries(dsv)] == ["INCOMPLETE"]
    ws = tomllib.loads(dsv.p(".tether/workspace.toml").read_text())
    assert ws["working"]["code"]["heads"][branch]["sha"] != moved  # killed before the workspace was saved
    assert [o["action"] for o in dsv.tj("pull")["objects"]] == ["up-to-date"]
    assert [e["status"] for e in pull_entries(dsv)] == ["COMPLETE"]
    # The re-run records where the branch now stands: the next fork's condition.
    ws = tomllib.loads(dsv.p(".tether/workspace.toml").read_text())
    assert ws["working"]["code"]["heads"][branch]["sha"] == moved
    dsv.tether("commit", "-m", "pulled")
    assert dsv.manifest("code")["state"]["sha"] == moved
    dsv.tether("verify")


def test_icechunk_working_branch_behind_is_fast_forwarded_and_diverged_left(dsv, store):
    dsv.tether("add", "img", str(store), "--kind", "icechunk")
    dsv.tether("commit", "-m", "base")
    dsv.tether("new", "-b", "feat")
    branch = fork_name(dsv)
    at = oracle.branch_head(store, branch)
    moved = oracle.commit(store, "main")
    [a] = dsv.tj("pull", "--dry-run")["plan"]["actions"]
    assert (a["action"], a["from"], a["to"]) == ("fast-forward", {"snapshot_id": at}, {"snapshot_id": moved})
    [a] = dsv.tj("pull")["objects"]
    assert a["action"] == "fast-forwarded"
    assert oracle.branch_head(store, branch) == moved
    assert oracle.read_data(store, branch=branch) == oracle.read_data(store, snapshot_id=moved)
    dsv.tether("commit", "-m", "pulled")
    assert dsv.manifest("img")["state"] == {"snapshot_id": moved}
    mine = oracle.commit(store, branch)
    dsv.tether("commit", "-m", "fork work")
    theirs = oracle.commit(store, "main")
    [a] = dsv.tj("pull")["objects"]
    assert (a["action"], a["detail"]) == ("diverged", "the working branch has work of its own and its base has "
                                                      "moved on, and this system cannot merge: re-apply the work "
                                                      "on a fresh fork (`tether new`)")
    assert oracle.branch_head(store, branch) == mine and oracle.branch_head(store, "main") == theirs


def test_icechunk_writer_racing_the_fast_forward_is_refused(gds, store):
    gds.tether("add", "img", str(store), "--kind", "icechunk")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    branch = fork_name(gds)
    oracle.commit(store, "main")
    env = dict(gds.env, TETHER_FAULT="pull:journal-written:stop")
    proc = subprocess.Popen([TETHER_BIN, "pull"], cwd=str(gds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    raced = []
    try:
        assert stopped(proc.pid), "tether did not stop at pull:journal-written"
        raced.append(oracle.commit(store, branch))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert err.startswith(f"tether: error: img: cannot fast-forward {branch}: "), err
    assert oracle.branch_head(store, branch) == raced[0]
