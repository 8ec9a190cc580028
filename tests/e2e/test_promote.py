"""`tether promote` and `tether merge`: landing working branches on their
base branches.

A dataset works on bookmark `feat`, so each forkable object writes on its
working branch tether.ws.<dataset8>.feat; `tether commit` records (and
pins) that branch's head. `promote` fast-forwards each base branch to it,
conditional on the base head the plan reviewed; `merge` three-way merges a
diverged one (git) and moves the working branch to the merged head. Where
branches point is asked of the system itself: git for the git objects, the
icechunk library (icechunk_oracle.py) for Icechunk repositories.

Races and crashes are made as in test_new.py and test_crash.py:
TETHER_FAULT=promote:<step>:stop stops tether at a step so that the test
can move a branch before it goes on; TETHER_FAULT=promote:<step> kills it
there, and the re-run must finish the work.

Run in git, colocated jj and jj datasets where the enclosing repository
matters (the landing itself is the objects' business).
"""
import json

import pytest

from conftest import run_stopped
from test_git_backend import (  # noqa: F401 (fixtures)
    add_code,
    code,
    code_commit,
    dsv,
    gds,
    jj_problem,
)


def fork_name(ds, bookmark="feat"):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


def head_of(repo, branch):
    return repo.git("rev-parse", f"refs/heads/{branch}").strip()


def write_on(repo, branch, files, message):
    """A commit on `branch` of a code repository, made the way a user
    would: check it out, commit, go back to main."""
    repo.git("checkout", "-q", branch)
    try:
        return code_commit(repo, files, message)
    finally:
        repo.git("checkout", "-q", "main")


def forked(ds, *repos):
    """Each repository added (keys in order), committed, forked on `feat`;
    the working branch's name."""
    for key, repo in repos:
        add_code(ds, repo, key=key)
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "feat")
    return fork_name(ds)


def worked(ds, code, n=1):
    """The fork of `code` written on and committed; its new head."""
    branch = fork_name(ds)
    sha = write_on(code, branch, {"main.py": f"fork {n}\n"}, f"fork write {n}")
    ds.tether("commit", "-m", f"fork write {n}")
    assert ds.manifest("code")["state"]["sha"] == sha
    return sha


def promote_entries(ds, op="promote"):
    return [e for e in ds.tj("ops")["ops"] if e["op"] == op]


# ---------------------------------------------------------------------------
# promote
# ---------------------------------------------------------------------------

def test_promote_fast_forwards_the_base(dsv, code):
    base0 = code.head()
    branch = forked(dsv, ("code", code))
    sha = worked(dsv, code)
    assert head_of(code, "main") == base0, "the fork's write must not touch the base"

    r = dsv.tj("promote")
    assert r["dry_run"] is False
    assert r["objects"] == [{"key": "code", "action": "promoted", "branch": branch,
                             "base": {"branch": "main", "from": base0, "to": sha, "moved": True,
                                      "worktree": str(code.root)}}]
    assert head_of(code, "main") == sha == head_of(code, branch)
    assert code.git("status", "--porcelain") == "", "the checked-out base follows the move, clean"
    assert (code.p("main.py")).read_text() == "fork 1\n"
    # The manifests record the promoted state already: nothing to commit.
    assert [(o["key"], o["status"]) for o in dsv.tj("status")["objects"]] == [("code", "clean")]
    assert dsv.tj("verify")["ok"] is True

    [entry] = promote_entries(dsv)
    assert entry["status"] == "COMPLETE" and entry["id"] == r["journal"]
    [move] = entry["moves"]
    assert (move["key"], move["from"], move["to"], move["done"]) == ("code", {"sha": base0}, {"sha": sha}, True)
    assert move["branch"] == branch
    line = [l for l in dsv.tether("ops").stdout.splitlines() if " promote " in l]
    assert line and line[0].startswith("COMPLETE   promote ") and "1/1 move " in line[0]

    # Again: nothing to move, nothing journaled.
    again = dsv.tj("promote")
    assert [(o["key"], o["action"]) for o in again["objects"]] == [("code", "up-to-date")]
    assert again["journal"] is None and len(promote_entries(dsv)) == 1
    text = dsv.tether("promote").stdout
    assert text == "  up-to-date code (the base branch is at the working branch's head)\n"


def test_promote_text(gds, code):
    base0 = code.head()
    branch = forked(gds, ("code", code))
    sha = worked(gds, code)
    out = gds.tether("promote").stdout
    assert out == f"  promoted   code: main {base0[:12]} -> {sha[:12]} (from {branch})\n"


def test_uncommitted_work_on_the_fork_is_refused(dsv, code):
    base0 = code.head()
    branch = forked(dsv, ("code", code))
    sha = write_on(code, branch, {"main.py": "not committed\n"}, "uncommitted")
    p = dsv.tether("promote", check_rc=3)
    assert p.stdout == ""
    assert p.stderr.splitlines() == [
        "tether: error: cannot promote: 1 object has uncommitted work on its working branch: code: "
        f'{branch} is at {{"sha":"{sha}"}}, the manifest records {{"sha":"{base0}"}}',
        "hint: `tether commit -m MSG` records it (and pins it), then run `tether promote` again; nothing was moved",
    ]
    assert head_of(code, "main") == base0
    assert promote_entries(dsv) == []
    # merge says the same, and --dry-run refuses as a run would
    assert "cannot merge: 1 object has uncommitted work" in dsv.tether("merge", check_rc=3).stderr
    dsv.tether("promote", "--dry-run", check_rc=3)


def test_keys_select_and_are_checked(gds, code, new_repo):
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    forked(gds, ("code", code), ("other", other))
    sha = worked(gds, code)
    other0 = other.head()
    r = gds.tj("promote", "code")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "promoted")]
    assert head_of(code, "main") == sha and head_of(other, "main") == other0

    p = gds.tether("promote", "nope", check_rc=1)
    assert p.stderr.startswith("tether: error: no object 'nope' in this dataset")
    gds.write("notes.txt", "n\n")
    gds.tether("add", "notes", "notes.txt", "--kind", "file")
    p = gds.tether("promote", "notes", check_rc=3)
    assert p.stderr.startswith("tether: error: notes: cannot promote it: no working branch in this checkout")


def test_dry_run_writes_nothing_and_plans_apply(gds, code, tmp_path):
    base0 = code.head()
    branch = forked(gds, ("code", code))
    sha = worked(gds, code)
    refs = code.git("for-each-ref")

    r = gds.tj("promote", "--dry-run")
    assert r["dry_run"] is True and r["plan_file"] is None and "objects" not in r
    plan = r["plan"]
    assert (plan["op"], plan["tether_plan"], plan["dataset"]) == ("promote", 1, gds.dataset_id())
    assert plan["actions"] == [{"key": "code", "action": "promote", "branch": branch, "expect": {"sha": base0},
                                "head": {"sha": sha}}]
    assert plan["preconditions"]["objects"] == [{"key": "code", "base": {"sha": base0}, "head": {"sha": sha}}]
    text = gds.tether("promote", "--dry-run").stdout.splitlines()
    assert text == ["plan: promote",
                    f'  promote    code from {branch} (if its base branch is still at {{"sha":"{base0}"}}; '
                    f'its working branch is at {{"sha":"{sha}"}})',
                    "dry run: nothing written"]
    assert code.git("for-each-ref") == refs and promote_entries(gds) == []

    f = tmp_path / "p.json"
    out = gds.tether("promote", "--plan", f).stdout
    assert out.endswith(f"plan saved to {f}; apply it with `tether promote --from-plan {f}`\n")
    assert json.loads(f.read_text())["actions"] == plan["actions"]
    assert code.git("for-each-ref") == refs

    gds.tether("promote", "--from-plan", f, "code", check_rc=2)
    r = gds.tj("promote", "--from-plan", f)
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "promoted")]
    assert head_of(code, "main") == sha


def test_a_stale_plan_names_the_head_that_moved(gds, code, tmp_path):
    base0 = code.head()
    branch = forked(gds, ("code", code))
    sha = worked(gds, code)
    f = tmp_path / "p.json"
    gds.tether("promote", "--plan", f)

    # The base moved on since the plan.
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves")
    p = gds.tether("promote", "--from-plan", f, check_rc=3)
    assert p.stderr.splitlines()[0] == (f'tether: error: stale plan: code: its base branch moved since the plan '
                                        f'(from {{"sha":"{base0}"}} to {{"sha":"{moved}"}})')
    assert head_of(code, "main") == moved and promote_entries(gds) == []
    code.git("reset", "-q", "--hard", base0)

    # The working branch moved (and was committed) since the plan.
    sha2 = worked(gds, code, n=2)
    p = gds.tether("promote", "--from-plan", f, check_rc=3)
    assert p.stderr.splitlines()[0] == (f"tether: error: stale plan: code: its working branch {branch} moved since "
                                        f'the plan (from {{"sha":"{sha}"}} to {{"sha":"{sha2}"}})')
    assert head_of(code, "main") == base0

    # A plan of another command, or edited to name a bad branch.
    gds.tether("new", "--plan", tmp_path / "n.json")
    p = gds.tether("promote", "--from-plan", tmp_path / "n.json", check_rc=3)
    assert "plan is for `new`, not `promote`" in p.stderr
    bad = json.loads(f.read_text())
    bad["actions"][0]["branch"] = "../x"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    p = gds.tether("promote", "--from-plan", tmp_path / "bad.json", check_rc=2)
    assert 'actions[0].branch: "../x" is not a valid branch name' in p.stderr
    bad = json.loads(f.read_text())
    bad["actions"][0]["expect"] = "HEAD"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    p = gds.tether("promote", "--from-plan", tmp_path / "bad.json", check_rc=2)
    assert "actions[0].expect: must be a state (an object)" in p.stderr


def test_a_writer_racing_the_move_makes_it_fail(gds, code):
    """The base moves after the plan, just before the move: the backend's
    compare-and-swap on the reviewed head refuses, nothing is moved."""
    forked(gds, ("code", code))
    worked(gds, code)
    p, racer = run_stopped(gds, ["promote"], "promote:journal-written:stop",
                           lambda: code_commit(code, {"race.txt": "r\n"}, "racer"))
    assert p.returncode == 3, p.stderr
    assert p.stdout == ""
    first = p.stderr.splitlines()[0]
    assert first.startswith("tether: error: code: cannot promote: git repository ") and " moved: expected " in first
    assert first.endswith("nothing was changed; no base was moved"), first
    assert head_of(code, "main") == racer, "the racer's commit stands"
    [entry] = promote_entries(gds)
    assert entry["status"] == "ABORTED" and [m["done"] for m in entry["moves"]] == [False]


@pytest.mark.parametrize("step", ["journal-written", "moved"])
def test_a_kill_at_each_step_is_finished_by_the_rerun(dsv, code, new_repo, step):
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    base_code, base_other = code.head(), other.head()
    branch = forked(dsv, ("code", code), ("other", other))
    sha = write_on(code, branch, {"main.py": "fork\n"}, "fork code")
    sha_other = write_on(other, branch, {"x": "2\n"}, "fork other")
    dsv.tether("commit", "-m", "fork writes")

    dsv.tether("promote", check_rc=-9, env={"TETHER_FAULT": f"promote:{step}"})
    [entry] = promote_entries(dsv)
    assert entry["status"] == "INCOMPLETE"
    assert [(m["key"], m["done"]) for m in entry["moves"]] == [("code", step == "moved"), ("other", False)]
    assert head_of(code, "main") == (sha if step == "moved" else base_code)
    assert head_of(other, "main") == base_other

    # A commit finishes only a commit: the promote's entry stays open.
    dsv.tether("commit", "-m", "nothing")
    assert [e["status"] for e in promote_entries(dsv)] == ["INCOMPLETE"]
    assert dsv.tj("gc")["release"] == []

    r = dsv.tj("promote")
    assert [(o["key"], o["action"]) for o in r["objects"]] == \
        [("code", "up-to-date" if step == "moved" else "promoted"), ("other", "promoted")]
    assert (head_of(code, "main"), head_of(other, "main")) == (sha, sha_other)
    entries = {e["id"]: e for e in promote_entries(dsv)}
    assert entries[entry["id"]]["status"] == "COMPLETE"
    assert entries[entry["id"]]["finished_by"] == r["journal"]
    assert [e for e in dsv.tj("ops")["ops"] if e["status"] == "INCOMPLETE"] == []
    assert dsv.tj("verify", "--all-history")["ok"] is True
    assert dsv.tj("gc")["release"] == []


DIVERGED = "its base branch has moved on since the fork (diverged: its head is not in the working branch's history)"


def test_a_diverged_base_is_refused_with_the_merge_command(gds, code):
    """The plan asks git whether the base head is in the working branch's
    history (descends): it is not, so the run is refused before anything
    moves, and nothing is journaled."""
    forked(gds, ("code", code))
    worked(gds, code)
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves on")
    p = gds.tether("promote", check_rc=3)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert lines[0] == f"tether: error: code: cannot promote: {DIVERGED}; nothing was moved"
    assert lines[1] == ("hint: its base branch has moved on: `tether merge code` merges the two, then "
                        "`tether promote` lands the rest")
    assert head_of(code, "main") == moved
    assert promote_entries(gds) == []


def test_a_base_that_already_holds_the_work_is_up_to_date(gds, code):
    """The fork was promoted, then the base moved on from there (another
    writer built on it): the working head is in the base's history, so
    there is nothing to land, which is not a divergence to merge."""
    forked(gds, ("code", code))
    sha = worked(gds, code)
    gds.tether("promote")
    assert head_of(code, "main") == sha
    ahead = code_commit(code, {"other.txt": "x\n"}, "base builds on the promoted work")
    before = promote_entries(gds)
    r = gds.tj("promote")
    [o] = r["objects"]
    assert (o["key"], o["action"]) == ("code", "up-to-date"), o
    assert o["detail"] == "the base branch already holds the working branch's head"
    assert head_of(code, "main") == ahead
    assert head_of(code, fork_name(gds)) == sha
    assert promote_entries(gds) == before


def test_a_dry_run_shows_a_diverged_base(gds, code, tmp_path):
    """--dry-run prints the plan, with the object `diverged` and the merge
    to run, then refuses (exit 3); --plan saves no plan for it."""
    branch = forked(gds, ("code", code))
    sha = worked(gds, code)
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves on")
    p = gds.tether("promote", "--dry-run", check_rc=3)
    assert p.stdout.splitlines() == [
        "plan: promote",
        "  diverged   code (its base branch has moved on since the fork: `tether merge code` merges the two)",
        "dry run: nothing written",
    ]
    assert p.stderr.splitlines()[0] == f"tether: error: code: cannot promote: {DIVERGED}; nothing was moved"
    r = json.loads(gds.tether("promote", "--dry-run", "--json", check_rc=3).stdout)
    [a] = r["plan"]["actions"]
    assert (a["action"], a["branch"], a["expect"], a["head"]) == ("diverged", branch, {"sha": moved}, {"sha": sha})
    assert r["dry_run"] is True and r["plan_file"] is None
    f = tmp_path / "plan.json"
    gds.tether("promote", "--plan", f, check_rc=3)
    assert not f.exists()
    # merge lands it, after which the plan is a promote again (up to date).
    gds.tether("merge")
    gds.tether("commit", "-m", "merged")
    assert gds.tj("promote", "--dry-run")["plan"]["actions"][0]["action"] == "up-to-date"
    assert head_of(code, "main") != moved and promote_entries(gds) == []


def test_diverged_objects_are_refused_together_before_any_moves(gds, code, new_repo):
    """Two objects, the second diverged: the first is not landed either,
    since the plan saw the divergence before anything moved."""
    zed = new_repo("zed")
    code_commit(zed, {"z": "1\n"}, "z1")
    branch = forked(gds, ("code", code), ("zed", zed))
    base0 = code.head()
    write_on(code, branch, {"main.py": "fork\n"}, "fork code")
    write_on(zed, branch, {"z": "2\n"}, "fork zed")
    gds.tether("commit", "-m", "fork writes")
    zed_moved = code_commit(zed, {"other": "o\n"}, "zed base moves on")
    p = gds.tether("promote", check_rc=3)
    assert p.stderr.splitlines()[0] == f"tether: error: zed: cannot promote: {DIVERGED}; nothing was moved"
    assert head_of(code, "main") == base0 and head_of(zed, "main") == zed_moved
    code_moved = code_commit(code, {"other": "o\n"}, "code base moves on")
    p = gds.tether("promote", check_rc=3)
    assert p.stderr.splitlines()[:2] == [
        "tether: error: cannot promote: 2 objects' base branches have moved on since the fork (diverged): code, zed; "
        "nothing was moved",
        "hint: their base branches have moved on: `tether merge code zed` merges the two, then `tether promote` "
        "lands the rest",
    ]
    assert head_of(code, "main") == code_moved and promote_entries(gds) == []


def test_a_failure_part_way_leaves_the_earlier_ones_landed(gds, code, new_repo):
    """Objects land in key order; a writer moves the second's base after
    the first landed: the first stays promoted, the message says so, the
    journal says which moved."""
    zed = new_repo("zed")
    code_commit(zed, {"z": "1\n"}, "z1")
    branch = forked(gds, ("code", code), ("zed", zed))
    base0 = code.head()
    sha = write_on(code, branch, {"main.py": "fork\n"}, "fork code")
    write_on(zed, branch, {"z": "2\n"}, "fork zed")
    gds.tether("commit", "-m", "fork writes")
    p, raced = run_stopped(gds, ["promote"], "promote:moved:stop",
                           lambda: code_commit(zed, {"other": "o\n"}, "zed base moves on"))
    assert p.returncode == 3, p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith("tether: error: zed: cannot promote: git repository ") and " moved: expected " in first
    assert first.endswith(f"; landed before it: code (main {base0[:12]} → {sha[:12]})"), first
    assert head_of(code, "main") == sha and head_of(zed, "main") == raced
    [entry] = promote_entries(gds)
    assert entry["status"] == "PARTIAL"
    assert [(m["key"], m["done"]) for m in entry["moves"]] == [("code", True), ("zed", False)]


def test_a_backend_without_merge_says_so(tmp_path, gds):
    """Icechunk: the plan walks the working head's snapshot parents, the
    base head is not among them: diverged, and no merge to offer."""
    import icechunk_oracle as ico
    store = tmp_path / "imaging.icechunk"
    ico.create(store)
    gds.tether("add", "img", store, "--kind", "icechunk")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    fork = ico.commit(store, fork_name(gds))
    gds.tether("commit", "-m", "fork")
    moved = ico.commit(store, "main")
    p = gds.tether("promote", "--dry-run", check_rc=3)
    assert p.stdout.splitlines()[1] == ("  diverged   img (its base branch has moved on since the fork, and this "
                                        "system cannot merge)")
    r = json.loads(gds.tether("promote", "--dry-run", "--json", check_rc=3).stdout)
    [a] = r["plan"]["actions"]
    assert (a["action"], a["expect"], a["head"]) == ("diverged", {"snapshot_id": moved}, {"snapshot_id": fork})
    p = gds.tether("promote", check_rc=3)
    lines = p.stderr.splitlines()
    assert lines[0] == f"tether: error: img: cannot promote: {DIVERGED}; nothing was moved"
    assert lines[1] == ("hint: its base branch has moved on and this system cannot merge: re-apply the work on a "
                        "fresh fork of it (`tether new`)"), lines
    assert ico.branch_head(store, "main") == moved and ico.branch_head(store, fork_name(gds)) == fork
    assert promote_entries(gds) == []
    p = gds.tether("merge", "img", check_rc=3)
    assert p.stderr.startswith("tether: error: img: cannot merge it: its backend cannot merge (no MERGE)")
    r = gds.tj("merge")
    assert r["objects"] == [{"key": "img", "action": "skipped", "detail": "its backend cannot merge (no MERGE)"}]


def test_an_icechunk_base_written_after_the_plan_is_refused_by_the_move(tmp_path, gds):
    """The plan saw a fast-forward; a writer commits on main between the
    plan and the move: Icechunk's compare on the reviewed head refuses, and
    the writer's snapshot stands."""
    import icechunk_oracle as ico
    store = tmp_path / "imaging.icechunk"
    ico.create(store)
    gds.tether("add", "img", store, "--kind", "icechunk")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    ico.commit(store, fork_name(gds))
    gds.tether("commit", "-m", "fork")
    p, raced = run_stopped(gds, ["promote"], "promote:journal-written:stop", lambda: ico.commit(store, "main"))
    assert p.returncode == 3, p.stderr
    assert p.stderr.startswith(f"tether: error: img: cannot promote: {store}: main moved: expected "), p.stderr
    assert ico.branch_head(store, "main") == raced


def test_promote_icechunk(tmp_path, gds):
    """Checked with the icechunk library: the base branch is at the fork's
    head and reads the fork's data; the plan's condition is the snapshot
    id."""
    import icechunk_oracle as ico
    store = tmp_path / "imaging.icechunk"
    ico.create(store)
    base0 = ico.branch_head(store, "main")
    gds.tether("add", "img", store, "--kind", "icechunk")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    fork = ico.commit(store, fork_name(gds))
    gds.tether("commit", "-m", "fork")
    plan = gds.tj("promote", "--dry-run")["plan"]
    assert plan["actions"][0]["expect"] == {"snapshot_id": base0}
    assert plan["actions"][0]["head"] == {"snapshot_id": fork}
    r = gds.tj("promote")
    assert r["objects"][0]["base"] == {"branch": "main", "from": base0, "to": fork, "moved": True}
    assert ico.branch_head(store, "main") == fork
    assert ico.read_data(store, branch="main") == ico.read_data(store, branch=fork_name(gds))
    assert gds.tj("verify")["ok"] is True


# ---------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------

def test_merge_without_conflicts(dsv, code):
    branch = forked(dsv, ("code", code))
    fork = worked(dsv, code)
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves on")

    plan = dsv.tj("merge", "-m", "land feat", "--dry-run")["plan"]
    assert plan["message"] == "land feat"
    assert [(a["key"], a["action"], a["expect"], a["head"]) for a in plan["actions"]] == \
        [("code", "merge", {"sha": moved}, {"sha": fork})]
    r = dsv.tj("merge", "-m", "land feat")
    [o] = r["objects"]
    merged = head_of(code, "main")
    assert (o["key"], o["action"], o["base"]["from"], o["base"]["to"]) == ("code", "merged", moved, merged)
    assert code.git("log", "-1", "--format=%P%n%s", "main").splitlines() == [f"{moved} {fork}", "land feat"]
    assert head_of(code, branch) == merged, "the working branch follows to the merged head"
    assert code.git("status", "--porcelain") == ""
    [entry] = promote_entries(dsv, "merge")
    assert entry["status"] == "COMPLETE" and entry["message"] == "land feat"

    # The next commit records the merged state; promote has nothing to do.
    st = dsv.tj("status")["objects"][0]
    assert (st["status"], st["current"]["sha"]) == ("modified", merged)
    dsv.tether("commit", "-m", "merged")
    assert dsv.manifest("code")["state"]["sha"] == merged
    assert [o["action"] for o in dsv.tj("promote")["objects"]] == ["up-to-date"]


def test_merge_fast_forwards_a_base_that_did_not_move(gds, code):
    base0 = code.head()
    branch = forked(gds, ("code", code))
    fork = worked(gds, code)
    r = gds.tj("merge")
    assert r["objects"][0]["base"]["to"] == fork and r["objects"][0]["base"]["fast_forward"] is True
    assert head_of(code, "main") == fork == head_of(code, branch) != base0
    assert [(o["key"], o["status"]) for o in gds.tj("status")["objects"]] == [("code", "clean")]


def test_merge_conflicts_are_per_object(gds, code, new_repo):
    """`code` conflicts: nothing is written for it. `other` merges."""
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    branch = forked(gds, ("code", code), ("other", other))
    fork = write_on(code, branch, {"main.py": "fork side\n"}, "fork code")
    fork_other = write_on(other, branch, {"x": "2\n"}, "fork other")
    gds.tether("commit", "-m", "fork writes")
    moved = code_commit(code, {"main.py": "base side\n"}, "base code")
    moved_other = code_commit(other, {"y": "1\n"}, "base other")
    refs = code.git("for-each-ref")

    p = gds.tether("merge", "--json", check_rc=3)
    r = json.loads(p.stdout)
    by_key = {o["key"]: o for o in r["objects"]}
    assert by_key["code"]["action"] == "conflict"
    assert "conflicts in 1 path: main.py; nothing was changed" in by_key["code"]["detail"]
    assert by_key["other"]["action"] == "merged"
    assert p.stderr.splitlines()[0].startswith("tether: error: 1 object was not merged (nothing was written for "
                                               "it): code: ")
    assert code.git("for-each-ref") == refs, "nothing was written for the conflicting object"
    assert (head_of(code, "main"), head_of(code, branch)) == (moved, fork)
    merged_other = head_of(other, "main")
    assert other.git("log", "-1", "--format=%P", "main").split() == [moved_other, fork_other]
    assert head_of(other, branch) == merged_other

    # `other` moved to its merged head, which no commit records yet: a
    # second merge of everything is refused until `tether commit`; of
    # `code` alone it conflicts again, in text.
    assert "other: " in gds.tether("merge", check_rc=3).stderr
    text = gds.tether("merge", "code", check_rc=3).stdout
    assert text.startswith("  conflict   code (git repository ")


@pytest.mark.parametrize("step", ["journal-written", "merged", "followed"])
def test_a_merge_killed_at_each_step_is_finished(gds, code, step):
    """Killed before the merge, after it (the working branch not moved
    yet), or after the working branch followed: the re-run (after the
    commit that records the followed branch, in the last case) finishes,
    with one merge commit, and closes the dead entry."""
    branch = forked(gds, ("code", code))
    fork = worked(gds, code)
    moved = code_commit(code, {"other.txt": "x\n"}, "base moves on")
    gds.tether("merge", check_rc=-9, env={"TETHER_FAULT": f"merge:{step}"})
    [entry] = promote_entries(gds, "merge")
    assert entry["status"] == "INCOMPLETE"
    if step == "journal-written":
        assert (head_of(code, "main"), head_of(code, branch)) == (moved, fork)
    else:
        merged = head_of(code, "main")
        assert code.git("log", "-1", "--format=%P", "main").split() == [moved, fork]
        assert head_of(code, branch) == (merged if step == "followed" else fork)
    if step == "followed":
        p = gds.tether("merge", check_rc=3)
        assert "uncommitted work" in p.stderr
        gds.tether("commit", "-m", "merged")
    r = gds.tj("merge")
    assert [o["action"] for o in r["objects"]] == ["up-to-date" if step == "followed" else "merged"]
    merged = head_of(code, "main")
    assert code.git("log", "-1", "--format=%P", "main").split() == [moved, fork], "one merge commit"
    assert head_of(code, branch) == merged
    assert {e["id"]: e for e in promote_entries(gds, "merge")}[entry["id"]]["status"] == "COMPLETE"
    assert [e for e in gds.tj("ops")["ops"] if e["status"] == "INCOMPLETE"] == []


def test_usage_errors(gds, code, tmp_path):
    forked(gds, ("code", code))
    worked(gds, code)
    f = tmp_path / "p.json"
    gds.tether("merge", "--plan", f)
    p = gds.tether("merge", "--from-plan", f, "-m", "x", check_rc=2)
    assert "--from-plan takes no KEY and no -m" in p.stderr
    p = gds.tether("promote", "--plan", f, "--from-plan", f, check_rc=2)
    assert "--plan and --from-plan cannot be combined" in p.stderr
    p = gds.tether("promote", "--plan", tmp_path / "nope" / "p.json", check_rc=2)
    assert "the directory" in p.stderr and "does not exist" in p.stderr
    p = gds.tether("promote", "--from-plan", f, check_rc=3)
    assert "plan is for `merge`, not `promote`" in p.stderr
    # --from-plan --dry-run only checks the plan
    r = gds.tj("merge", "--from-plan", f, "--dry-run")
    assert r["dry_run"] is True and promote_entries(gds, "merge") == []


@pytest.mark.parametrize("command", ["promote", "merge"])
def test_two_keys_on_one_store_land_once(gds, code, command):
    """Keys on one store share its working branch: the first lands it, the
    second finds it landed."""
    branch = forked(gds, ("code", code), ("twin", code))
    fork = write_on(code, branch, {"main.py": "fork\n"}, "fork write")
    gds.tether("commit", "-m", "fork write")
    if command == "merge":
        code_commit(code, {"other.txt": "x\n"}, "base moves on")
    r = gds.tj(command)
    assert [(o["key"], o["action"]) for o in r["objects"]] == \
        [("code", "promoted" if command == "promote" else "merged"), ("twin", "up-to-date")]
    landed = head_of(code, "main")
    assert head_of(code, branch) == landed
    if command == "promote":
        assert landed == fork
    else:
        assert code.git("log", "-1", "--format=%P", "main").split()[1] == fork
    [entry] = promote_entries(gds, command)
    assert entry["status"] == "COMPLETE" and [m["done"] for m in entry["moves"]] == [True, True]


def test_two_keys_on_one_icechunk_store_promote_once(tmp_path, gds):
    import icechunk_oracle as ico
    store = tmp_path / "imaging.icechunk"
    ico.create(store)
    for key in ("img", "twin"):
        gds.tether("add", key, store, "--kind", "icechunk")
    gds.tether("commit", "-m", "base")
    gds.tether("new", "-b", "feat")
    fork = ico.commit(store, fork_name(gds))
    gds.tether("commit", "-m", "fork")
    r = gds.tj("promote")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("img", "promoted"), ("twin", "up-to-date")]
    assert ico.branch_head(store, "main") == fork
