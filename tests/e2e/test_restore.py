"""`tether restore [-r REV] [KEY...]`: this workspace's working branches put
back to the states a revision records, as `jj restore` puts files back.

A reset is a fork onto the existing working branch, conditional on the head
the plan read: the writes it discards are exactly the ones reviewed. A base
branch is never moved, so an object without a working branch here, one
that writes upstream (write = track), a local file (tether keeps no copy of
its bytes) and one the revision does not record are refused when named and
skipped when not. A run that fails part-way takes its resets back; one
killed part-way is finished by running it again (TETHER_FAULT, as
test_crash.py kills commit). The objects are git repositories, checked
with git itself; Icechunk stores are test_lifecycle_restore.py's. Run in
git, colocated jj and jj datasets.
"""
import json

from conftest import ops, run_stopped
from test_git_backend import add_code, code, code_commit, dsv, jj_problem, rev  # noqa: F401 (fixtures)
from test_new import workspace_text


def branch_of(ds, bookmark="feat"):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


def write_on(code, branch, text):
    """A write on a working branch, as a user's program makes it: check the
    branch out, commit, come back (a checked-out branch is never moved)."""
    code.git("checkout", "-q", branch)
    sha = code_commit(code, {"main.py": text}, text.strip())
    code.git("checkout", "-q", "main")
    return sha


def forked(ds, code, key="code"):
    """code registered, committed, and forked on bookmark feat: (commit id,
    the recorded sha, the working branch)."""
    add_code(ds, code, key=key)
    commit = ds.tj("commit", "-m", "one")["commit"]
    ds.tether("new", "-b", "feat", "HEAD")
    return commit, code.head(), branch_of(ds)


def test_restore_discards_the_writes_on_the_fork(dsv, code):
    _, sha1, branch = forked(dsv, code)
    write_on(code, branch, "uncommitted 1\n")
    sha3 = write_on(code, branch, "uncommitted 2\n")
    assert dsv.tj("status")["objects"][0]["status"] == "modified"
    base = rev(code, "refs/heads/main")

    r = dsv.tj("restore")
    assert r["dry_run"] is False and r["rev"] == "HEAD"
    assert r["objects"] == [{"key": "code", "action": "reset", "branch": branch, "to": {"sha": sha1},
                             "from": {"sha": sha3}}]
    assert rev(code, f"refs/heads/{branch}") == sha1
    assert rev(code, "refs/heads/main") == base, "restore moved the base branch"
    assert dsv.tj("status")["objects"][0]["status"] == "clean"
    # The workspace says the branch is at the recorded state: the next new
    # or commit forks from there without a word.
    assert dsv.tj("new", "--dry-run")["plan"]["actions"][0]["expect"] == {"sha": sha1}
    assert [(o["op"], o["status"], o["keys"]) for o in ops(dsv) if o["op"] == "restore"] == [
        ("restore", "COMPLETE", ["code"])]
    # Nothing left to do: unchanged, and no journal entry for a run that
    # wrote nothing.
    again = dsv.tj("restore", "code")
    assert [(o["key"], o["action"]) for o in again["objects"]] == [("code", "unchanged")]
    assert len([o for o in ops(dsv) if o["op"] == "restore"]) == 1
    out = dsv.tether("restore").stdout.splitlines()
    assert out[0].startswith("Restored 0 branches to HEAD (")
    assert out[1] == f"  unchanged code -> {branch} (already at {{\"sha\":\"{sha1}\"}})"


def test_restore_an_older_revision(dsv, code):
    first, sha1, branch = forked(dsv, code)
    sha2 = write_on(code, branch, "two\n")
    second = dsv.tj("commit", "-m", "two")["commit"]
    assert dsv.manifest("code")["state"]["sha"] == sha2
    r = dsv.tj("restore", "-r", first, "code")
    assert r["commit"] == first
    assert [(o["action"], o["to"], o["from"]) for o in r["objects"]] == [("reset", {"sha": sha1}, {"sha": sha2})]
    assert rev(code, f"refs/heads/{branch}") == sha1
    # The manifest is the commit's to rewrite: the next commit records
    # the state the branch now holds.
    st = dsv.tj("status")["objects"][0]
    assert (st["status"], st["current"]["sha"]) == ("modified", sha1)
    third = dsv.tj("commit", "-m", "back")
    assert third["objects"][0]["action"] in ("pinned", "recorded") and dsv.manifest("code")["state"]["sha"] == sha1
    assert second != third["commit"]


def test_dry_run_plan_and_from_plan(dsv, code, tmp_path):
    _, sha1, branch = forked(dsv, code)
    sha2 = write_on(code, branch, "work\n")
    ws = workspace_text(dsv)
    r = dsv.tj("restore", "--dry-run")
    plan = r["plan"]
    assert r["dry_run"] is True and "objects" not in r
    assert plan["op"] == "restore" and plan["keys"] == [] and plan["rev"] == "HEAD"
    assert plan["actions"] == [{"key": "code", "action": "reset", "branch": branch, "to": {"sha": sha1},
                                "expect": {"sha": sha2}}]
    out = dsv.tether("restore", "--dry-run").stdout.splitlines()
    assert out[1] == (f"  reset     code -> {branch} (to {{\"sha\":\"{sha1}\"}}, if the branch is still at "
                      f"{{\"sha\":\"{sha2}\"}})")
    assert out[-1] == "dry run: nothing written"
    assert rev(code, f"refs/heads/{branch}") == sha2 and workspace_text(dsv) == ws

    pf = tmp_path / "restore.json"
    out = dsv.tether("restore", "--plan", pf).stdout
    assert out.splitlines()[-1] == f"plan saved to {pf}; apply it with `tether restore --from-plan {pf}`"
    assert json.loads(pf.read_text())["actions"] == plan["actions"]
    assert rev(code, f"refs/heads/{branch}") == sha2 and workspace_text(dsv) == ws
    r = dsv.tj("restore", "--from-plan", pf)
    assert [(o["action"], o["from"]) for o in r["objects"]] == [("reset", {"sha": sha2})]
    assert rev(code, f"refs/heads/{branch}") == sha1


def test_a_stale_plan_is_refused_naming_the_head(dsv, code, tmp_path):
    _, sha1, branch = forked(dsv, code)
    sha2 = write_on(code, branch, "reviewed\n")
    pf = tmp_path / "restore.json"
    dsv.tether("restore", "--plan", pf)
    sha3 = write_on(code, branch, "written after the review\n")
    ws = workspace_text(dsv)
    p = dsv.tether("restore", "--from-plan", pf, check_rc=3)
    assert p.stderr.splitlines()[0] == (
        f"tether: error: stale plan: code: the plan says `reset {branch}` with expect = {{\"sha\":\"{sha2}\"}}; "
        f"`restore` would now do `reset {branch}` with expect = {{\"sha\":\"{sha3}\"}}")
    assert rev(code, f"refs/heads/{branch}") == sha3, "a stale plan discarded writes nobody reviewed"
    assert workspace_text(dsv) == ws


def test_a_racing_writer_makes_the_reset_fail_and_earlier_resets_go_back(dsv, code, new_repo):
    """Two objects; the plan read both heads, then a writer moved the
    second branch before its reset: the backend's compare-and-swap refuses
    it, and the first object's reset is taken back."""
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    add_code(dsv, other, key="a-other")
    _, sha1, branch = forked(dsv, code)  # keys in order: a-other, code
    o1 = other.head()
    o2 = write_on(other, branch, "other work\n")
    c2 = write_on(code, branch, "code work\n")
    ws = workspace_text(dsv)

    p, c3 = run_stopped(dsv, ["restore"], "restore:planned:stop", lambda: write_on(code, branch, "the racer's write\n"))
    err = p.stderr
    assert p.returncode == 3, err
    line = err.splitlines()[0]
    assert line.startswith(f"tether: error: code: cannot reset {branch}: "), err
    assert line.endswith("; the 1 reset this run made is taken back"), err
    assert rev(code, f"refs/heads/{branch}") == c3, "the racer's write was discarded"
    assert rev(other, f"refs/heads/{branch}") == o2, "a-other's reset was not taken back"
    assert workspace_text(dsv) == ws
    assert [o["status"] for o in ops(dsv) if o["op"] == "restore"] == ["ABORTED"]
    assert o1 != o2 and c2 != c3


def test_a_kill_after_the_first_reset_is_finished_by_the_rerun(dsv, code, new_repo):
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    add_code(dsv, other, key="a-other")
    _, sha1, branch = forked(dsv, code)
    o1 = other.head()
    write_on(other, branch, "other work\n")
    write_on(code, branch, "code work\n")
    dsv.tether("restore", check_rc=-9, env={"TETHER_FAULT": "restore:reset"})
    assert rev(other, f"refs/heads/{branch}") == o1, "the first reset was not made before the kill"
    entries = [o for o in ops(dsv) if o["op"] == "restore"]
    assert [(o["status"], o["keys"]) for o in entries] == [("INCOMPLETE", ["a-other", "code"])]
    assert dsv.tether("ops").stdout.splitlines()[-1].startswith("INCOMPLETE restore ")

    r = dsv.tj("restore")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("a-other", "unchanged"), ("code", "reset")]
    assert rev(code, f"refs/heads/{branch}") == sha1 and rev(other, f"refs/heads/{branch}") == o1
    entries = [o for o in ops(dsv) if o["op"] == "restore"]
    assert [o["status"] for o in entries] == ["COMPLETE", "COMPLETE"]
    assert entries[0]["finished_by"] == entries[1]["id"] + ".json"
    assert [o["status"] for o in dsv.tj("status")["objects"]] == ["clean", "clean"]
    assert dsv.tj("verify")["ok"] is True


def test_a_kill_after_the_journal_entry_is_finished_by_the_rerun(dsv, code):
    _, sha1, branch = forked(dsv, code)
    sha2 = write_on(code, branch, "work\n")
    dsv.tether("restore", check_rc=-9, env={"TETHER_FAULT": "restore:journal-written"})
    assert rev(code, f"refs/heads/{branch}") == sha2
    dsv.tether("restore")
    assert rev(code, f"refs/heads/{branch}") == sha1
    assert [o["status"] for o in ops(dsv) if o["op"] == "restore"] == ["COMPLETE", "COMPLETE"]


def test_what_cannot_be_restored_is_refused_when_named(dsv, code, new_repo):
    add_code(dsv, code)
    dsv.write("data/x", "1\n")
    dsv.tether("add", "files", "data/x", "--kind", "file")
    dsv.tether("commit", "-m", "one")  # no `new`: code has no working branch here
    ws = workspace_text(dsv)
    cases = [
        (["code"], 3, "tether: error: cannot restore code: it has no working branch in this workspace, and "
                      "restore never moves a base branch",
         "hint: `tether new` (or a writable `tether open KEY`) forks a working branch; restore then resets it"),
        (["files"], 3, "tether: error: cannot restore files: kind file is observed: tether keeps no copy of its "
                       "data, so it cannot put it back; restore it with the system's own tools", None),
        (["nope"], 1, "tether: error: no object 'nope' in this dataset (no .tether/objects/nope.toml)", None),
        (["-r", "no-such-rev"], 1, None, None),
        (["../x"], 2, None, None),
    ]
    for args, code_rc, first, hint in cases:
        p = dsv.tether("restore", *args, check_rc=code_rc)
        assert p.stdout == ""
        assert len(p.stderr.splitlines()) in (1, 2), p.stderr
        if first:
            assert p.stderr.splitlines()[0] == first, p.stderr
        else:
            assert p.stderr.startswith("tether: error: "), p.stderr
        if hint:
            assert p.stderr.splitlines()[1] == hint
        assert workspace_text(dsv) == ws
    assert "-r no-such-rev" in dsv.tether("restore", "-r", "no-such-rev", check_rc=1).stderr
    # With no KEY, they are skipped, each with why.
    r = dsv.tj("restore")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "skip"), ("files", "skip")]


def test_a_key_the_revision_does_not_record_is_refused(dsv, code, new_repo):
    first, _, branch = forked(dsv, code)
    later = new_repo("later")
    code_commit(later, {"y": "1\n"}, "y1")
    add_code(dsv, later, key="later")
    dsv.tether("commit", "-m", "two")
    dsv.tether("open", "later")  # forks it on bookmark feat
    p = dsv.tether("restore", "-r", first, "later", check_rc=3)
    assert p.stderr == f"tether: error: cannot restore later: {first} ({first[:12]}) records no state of it\n"
    r = dsv.tj("restore", "-r", first)
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "unchanged"), ("later", "skip")]


def test_a_track_object_is_refused(dsv, code):
    add_code(dsv, code, "write=track")
    dsv.tether("commit", "-m", "one")
    dsv.tether("new", "-b", "feat", "HEAD")
    p = dsv.tether("restore", "code", check_rc=3)
    assert p.stderr == ("tether: error: cannot restore code: it writes to its upstream branch (write = track), "
                        "and restore never moves a base branch\n")


def test_bad_plans_and_options(dsv, code, tmp_path):
    forked(dsv, code)
    pf = tmp_path / "p.json"
    dsv.tether("restore", "--plan", pf)
    p = dsv.tether("restore", "code", "--from-plan", pf, check_rc=2)
    assert "--from-plan takes no -r and no KEY" in p.stderr
    dsv.tether("restore", "--plan", pf, "--from-plan", pf, check_rc=2)
    gc_plan = tmp_path / "gc.json"
    dsv.tether("gc", "--plan", gc_plan)
    p = dsv.tether("restore", "--from-plan", gc_plan, check_rc=3)
    assert p.stderr == "tether: error: plan is for `gc`, not `restore`\n"
    doc = json.loads(pf.read_text())
    doc["actions"][0]["branch"] = "bad..name"
    pf.write_text(json.dumps(doc))
    p = dsv.tether("restore", "--from-plan", pf, check_rc=2)
    assert p.stderr.startswith(f"tether: error: malformed plan {pf}: actions[0].branch: "), p.stderr
    doc["actions"][0]["branch"] = branch_of(dsv)
    doc["keys"] = ["../etc"]
    pf.write_text(json.dumps(doc))
    p = dsv.tether("restore", "--from-plan", pf, check_rc=2)
    assert p.stderr.startswith(f"tether: error: malformed plan {pf}: keys[0]: "), p.stderr
    dsv.tether("restore", "--plan", tmp_path / "no" / "such" / "dir.json", check_rc=2)
