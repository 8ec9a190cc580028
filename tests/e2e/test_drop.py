"""`tether drop KEY...`: objects removed from the dataset.

The manifest leaves the working copy and the next commit records that, as
`git rm` does; every earlier commit keeps its manifest and the pins it
names. This workspace's working branch goes when a pin in history holds its
head, and is kept (and said so) when it holds writes no commit pinned,
unless --force. --delete-store deletes a store tether created when nothing
else names it and nothing is recorded in it, the backend re-checking
ownership and emptiness just before. Locked, journaled, planned; a writer
that moves the branch between plan and apply is refused; a kill at each
store-writing step is finished by the re-run. The objects are git
repositories, checked with git itself; Icechunk is
test_lifecycle_restore.py's. Run in git, colocated jj and jj datasets.
"""
import json
import os
import signal
import subprocess

from conftest import TETHER_BIN, check_sanitizers, ops, run_stopped, stopped
from test_git_backend import add_code, code, code_commit, dsv, jj_problem, rev, tags  # noqa: F401 (fixtures)
from test_new import workspace_text
from test_restore import branch_of, forked, write_on


def branches(repo):
    return repo.git("branch", "--format=%(refname:short)").split()


def test_drop_removes_the_manifest_and_the_pinned_fork(dsv, code):
    _, sha1, branch = forked(dsv, code)
    pin_tags = tags(code)
    r = dsv.tj("drop", "code")
    assert r["dry_run"] is False
    assert r["objects"] == [{"key": "code", "manifest": "removed", "branch": branch, "fork": "delete",
                             "fork_reason": "its head is pinned", "head": {"sha": sha1}, "store": "none",
                             "done": True}]
    assert not dsv.manifest_path("code").exists()
    assert branch not in branches(code)
    assert tags(code) == pin_tags, "drop released a pin history names"
    assert "code" not in (workspace_text(dsv) or "")
    st = dsv.tj("status")
    assert [(o["key"], o["manifest"]) for o in st["objects"]] == [("code", "removed")] and st["clean"] is False
    c = dsv.tj("commit", "-m", "drop code")
    assert c["commit"] == dsv.vcs_head()
    assert dsv.tj("status")["objects"] == []
    log = dsv.tj("log")["commits"]
    assert log[0]["objects"] == [{"key": "code", "change": "removed", "pin": log[1]["objects"][0]["pin"]}]
    assert dsv.tj("verify", "--all-history")["ok"] is True
    gc = dsv.tj("gc")
    assert gc["release"] == [], "the dropped object's pins are still named by history"
    assert [(o["op"], o["status"], o["keys"]) for o in ops(dsv) if o["op"] == "drop"] == [
        ("drop", "COMPLETE", ["code"])]


def test_an_unpinned_fork_is_kept_unless_forced(dsv, code):
    _, sha1, branch = forked(dsv, code)
    sha2 = write_on(code, branch, "uncommitted\n")
    out = dsv.tether("drop", "code", "--dry-run").stdout.splitlines()
    assert out == [
        "plan: drop 1 object",
        "  code: manifest would be removed",
        f"  code: would keep branch {branch} (its head {{\"sha\":\"{sha2}\"}} is pinned by no commit: deleting the "
        "branch would lose those writes)",
        "  hint: `tether commit` first keeps those writes in history; `tether drop --force code` deletes the branch "
        "anyway",
        "dry run: nothing written",
    ]
    assert dsv.manifest_path("code").exists()
    forced = dsv.tj("drop", "code", "--force", "--dry-run")["plan"]["actions"][0]
    assert (forced["fork"], forced["fork_reason"]) == ("delete", "--force: its head is pinned by nothing")
    r = dsv.tj("drop", "code")
    assert (r["objects"][0]["fork"], r["objects"][0]["done"]) == ("keep", True)
    assert rev(code, f"refs/heads/{branch}") == sha2, "writes nobody pinned were deleted"
    assert not dsv.manifest_path("code").exists()


def test_force_deletes_an_unpinned_fork(dsv, code):
    _, _, branch = forked(dsv, code)
    write_on(code, branch, "uncommitted\n")
    dsv.tether("drop", "--force", "code")
    assert branch not in branches(code)


def test_unknown_keys_and_bad_input_write_nothing(dsv, code, tmp_path):
    forked(dsv, code)
    ws, manifest = workspace_text(dsv), dsv.manifest_path("code").read_text()
    for args, rc, says in [
        (["nope"], 1, "tether: error: no object 'nope' in this dataset (no .tether/objects/nope.toml)\n"),
        (["code", "nope"], 1, "tether: error: no object 'nope' in this dataset (no .tether/objects/nope.toml)\n"),
        ([], 2, "tether: error: missing argument KEY for 'drop'\nhint: see 'tether drop --help'\n"),
        (["../x"], 2, None),
        (["code", "--from-plan", tmp_path / "p.json"], 2, None),
    ]:
        p = dsv.tether("drop", *args, check_rc=rc)
        assert p.stdout == ""
        if says:
            assert p.stderr == says
        assert len(p.stderr.splitlines()) <= 2, p.stderr
    assert workspace_text(dsv) == ws and dsv.manifest_path("code").read_text() == manifest
    assert [o for o in ops(dsv) if o["op"] == "drop"] == []


def test_plan_from_plan_and_a_stale_plan(dsv, code, tmp_path):
    _, sha1, branch = forked(dsv, code)
    pf = tmp_path / "drop.json"
    out = dsv.tether("drop", "code", "--plan", pf).stdout
    assert out.splitlines()[-1] == f"plan saved to {pf}; apply it with `tether drop --from-plan {pf}`"
    plan = json.loads(pf.read_text())
    assert plan["op"] == "drop" and plan["keys"] == ["code"] and plan["force"] is False
    assert dsv.manifest_path("code").exists() and branch in branches(code)
    # The manifest changes: the plan is stale, naming it.
    text = dsv.manifest_path("code").read_text()
    dsv.manifest_path("code").write_text(text + "# a comment\n")
    p = dsv.tether("drop", "--from-plan", pf, check_rc=3)
    assert p.stderr.startswith("tether: error: stale plan: code's manifest changed since the plan"), p.stderr
    dsv.manifest_path("code").write_text(text)
    # A write on the branch since: the plan said delete at sha1.
    sha2 = write_on(code, branch, "after the plan\n")
    p = dsv.tether("drop", "--from-plan", pf, check_rc=3)
    assert p.stderr.startswith("tether: error: stale plan: code: the plan says `drop"), p.stderr
    assert rev(code, f"refs/heads/{branch}") == sha2 and dsv.manifest_path("code").exists()
    code.git("update-ref", f"refs/heads/{branch}", sha1)
    r = dsv.tj("drop", "--from-plan", pf)
    assert r["objects"][0]["fork"] == "delete" and not dsv.manifest_path("code").exists()
    assert branch not in branches(code)


def test_a_racing_writer_keeps_the_branch_and_the_manifest(dsv, code):
    _, sha1, branch = forked(dsv, code)
    p, sha2 = run_stopped(dsv, ["drop", "code"], "drop:planned:stop",
                          lambda: write_on(code, branch, "the racer's write\n"))
    err = p.stderr
    assert p.returncode == 3, err
    assert err.splitlines()[0] == (
        f"tether: error: code: {branch} moved since the plan (at {{\"sha\":\"{sha1}\"}}, now at "
        f"{{\"sha\":\"{sha2}\"}}): not deleted; nothing was removed from the working copy"), err
    assert rev(code, f"refs/heads/{branch}") == sha2
    assert dsv.manifest_path("code").exists()
    assert [o["status"] for o in ops(dsv) if o["op"] == "drop"] == ["ABORTED"]


def continued(ds, args, fault, race):
    """tether stopped at `fault`, race() run meanwhile, then continued: the
    finished process."""
    env = dict(ds.env, TETHER_FAULT=fault)
    proc = subprocess.Popen([TETHER_BIN, *args], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), f"tether did not stop at {fault}"
        race()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    check_sanitizers(p)
    return p


def test_a_write_between_the_recheck_and_the_delete_is_kept(dsv, code):
    """drop re-reads the branch just before deleting it; a write landing
    after that re-read is the race a re-read cannot close. The delete is
    conditional on the reviewed head (delete_working_ref_if: git compares
    under the ref's lock), so the write stays and drop refuses."""
    _, sha1, branch = forked(dsv, code)
    racer = []
    p = continued(dsv, ["drop", "code"], "drop:branch-checked:stop",
                  lambda: racer.append(write_on(code, branch, "the racer's write\n")))
    assert p.returncode == 3, p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith(f"tether: error: code: {branch} was written to while drop deleted it: not deleted "
                            f"(git repository "), first
    assert f"refs/heads/{branch} moved: expected {sha1}, found {racer[0]}; not deleted)" in first, first
    assert first.endswith("; nothing was removed from the working copy"), first
    assert rev(code, f"refs/heads/{branch}") == racer[0], "the racer's write was deleted"
    assert dsv.manifest_path("code").exists()
    assert [o["status"] for o in ops(dsv) if o["op"] == "drop"] == ["ABORTED"]
    # Once the write is committed (pinned), drop deletes the branch.
    dsv.tether("commit", "-m", "the racer's write")
    r = dsv.tj("drop", "code")
    assert (r["objects"][0]["fork"], r["objects"][0]["head"]) == ("delete", {"sha": racer[0]})
    assert branch not in branches(code)


def test_an_icechunk_write_between_the_recheck_and_the_delete_is_kept(dsv, tmp_path):
    """The same race on an Icechunk repository: the branch deletion is a
    repository update that compares the branch's snapshot on the file it
    rewrites; checked with the icechunk library."""
    import icechunk_oracle as ico
    store = tmp_path / "imaging.icechunk"
    ico.create(store)
    dsv.tether("add", "img", store, "--kind", "icechunk")
    dsv.tether("commit", "-m", "one")
    dsv.tether("new", "-b", "feat", "HEAD")
    branch = f"tether.ws.{dsv.dataset_id()[:8]}.feat"
    head0 = ico.branch_head(store, branch)
    racer = []
    p = continued(dsv, ["drop", "img"], "drop:branch-checked:stop", lambda: racer.append(ico.commit(store, branch)))
    assert p.returncode == 3, p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith(f"tether: error: img: {branch} was written to while drop deleted it: not deleted ("), first
    assert f"branch {branch} is at {racer[0]}, expected {head0}; not deleted" in first, first
    assert ico.branch_head(store, branch) == racer[0], "the racer's snapshot was deleted"
    assert dsv.manifest_path("img").exists()


def test_a_kill_after_the_branch_is_deleted_is_finished_by_the_rerun(dsv, code):
    _, _, branch = forked(dsv, code)
    dsv.tether("drop", "code", check_rc=-9, env={"TETHER_FAULT": "drop:branch-deleted"})
    assert branch not in branches(code) and dsv.manifest_path("code").exists()
    assert [o["status"] for o in ops(dsv) if o["op"] == "drop"] == ["INCOMPLETE"]
    r = dsv.tj("drop", "code")
    assert (r["objects"][0]["fork"], r["objects"][0]["fork_reason"]) == ("gone", "it is deleted already")
    assert not dsv.manifest_path("code").exists()
    entries = [o for o in ops(dsv) if o["op"] == "drop"]
    assert [o["status"] for o in entries] == ["COMPLETE", "COMPLETE"]
    assert entries[0]["finished_by"] == entries[1]["id"] + ".json"


def test_delete_store_deletes_a_created_empty_store(dsv, tmp_path):
    scratch = tmp_path / "scratch"
    dsv.tether("add", "scratch", scratch, "--kind", "git", "--create")
    assert (scratch / ".git").is_dir()
    plan = dsv.tj("drop", "scratch", "--delete-store", "--dry-run")["plan"]["actions"][0]
    assert (plan["fork"], plan["store"]) == ("none", "delete")
    assert scratch.exists()
    r = dsv.tj("drop", "scratch", "--delete-store")
    assert (r["objects"][0]["store"], r["objects"][0]["done"]) == ("delete", True)
    assert not scratch.exists() and not dsv.manifest_path("scratch").exists()
    assert [o["delete_store"] for o in ops(dsv) if o["op"] == "drop"] == [["scratch"]]


def test_delete_store_keeps_what_it_must(dsv, code, tmp_path):
    # Not created by tether: the backend refuses, before any manifest goes.
    add_code(dsv, code)
    p = dsv.tether("drop", "code", "--delete-store", check_rc=3)
    assert p.stderr.splitlines()[0] == (
        f"tether: error: code: the store was not deleted: git repository {code.root} was not created by this "
        "dataset (tether.owner is unset); not deleted; nothing was removed from the working copy"), p.stderr
    assert dsv.manifest_path("code").exists() and (code.root / ".git").is_dir()
    # Recorded in a commit: kept, and said why.
    scratch = tmp_path / "scratch"
    dsv.tether("add", "scratch", scratch, "--kind", "git", "--create")
    dsv.tether("commit", "-m", "one")
    a = dsv.tj("drop", "scratch", "--delete-store", "--dry-run")["plan"]["actions"][0]
    assert (a["store"], a["store_reason"]) == (
        "keep", "a commit records a state of it: deleting the store would lose that state")
    # Another key names the same store: kept.
    other = tmp_path / "other"
    dsv.tether("add", "o1", other, "--kind", "git", "--create")
    dsv.tether("add", "o2", other, "--kind", "git")
    a = dsv.tj("drop", "o1", "--delete-store", "--dry-run")["plan"]["actions"][0]
    assert (a["store"], a["store_reason"]) == ("keep", "o2 names the same store")
    # Both dropped at once: deleted.
    r = dsv.tj("drop", "o1", "o2", "--delete-store")
    assert [(o["store"], o["done"]) for o in r["objects"]] == [("delete", True), ("delete", True)]
    assert not other.exists()
    # A kind without CREATE.
    dsv.write("data/x", "1\n")
    dsv.tether("add", "files", "data/x", "--kind", "file")
    a = dsv.tj("drop", "files", "--delete-store", "--dry-run")["plan"]["actions"][0]
    assert (a["store"], a["store_reason"]) == ("keep", "kind file does not create its stores, so tether deletes none")


def test_a_kill_after_the_store_is_deleted_is_finished_by_the_rerun(dsv, tmp_path):
    scratch = tmp_path / "scratch"
    dsv.tether("add", "scratch", scratch, "--kind", "git", "--create")
    dsv.tether("drop", "scratch", "--delete-store", check_rc=-9, env={"TETHER_FAULT": "drop:store-deleted"})
    assert not scratch.exists() and dsv.manifest_path("scratch").exists()
    r = dsv.tj("drop", "scratch", "--delete-store")
    assert r["objects"][0]["store"] == "gone" and not dsv.manifest_path("scratch").exists()
    assert [o["status"] for o in ops(dsv) if o["op"] == "drop"] == ["COMPLETE", "COMPLETE"]
    assert dsv.tether("drop", "scratch", check_rc=1).stderr.startswith("tether: error: no object 'scratch'")


def test_hostile_and_stale_plans(dsv, code, tmp_path):
    forked(dsv, code)
    pf = tmp_path / "drop.json"
    dsv.tether("drop", "code", "--plan", pf)
    doc = json.loads(pf.read_text())
    for field, value, says in [
        ("keys", ["../../etc/passwd"], "keys[0]: \"../../etc/passwd\" is not an object key"),
        ("keys", [], "keys: names no object"),
        ("keys", "code", "keys: must be an array of object keys"),
        ("force", "yes", "force: must be true or false"),
    ]:
        bad = dict(doc, **{field: value})
        pf.write_text(json.dumps(bad))
        p = dsv.tether("drop", "--from-plan", pf, check_rc=2)
        assert p.stderr == f"tether: error: malformed plan {pf}: {says}\n", p.stderr
    bad = json.loads(json.dumps(doc))
    bad["actions"][0]["branch"] = "-x"
    pf.write_text(json.dumps(bad))
    p = dsv.tether("drop", "--from-plan", pf, check_rc=2)
    assert p.stderr.startswith(f"tether: error: malformed plan {pf}: actions[0].branch: "), p.stderr
    pf.write_text(json.dumps(dict(doc, op="restore")))
    assert dsv.tether("drop", "--from-plan", pf, check_rc=3).stderr == (
        "tether: error: plan is for `restore`, not `drop`\n")
    assert dsv.manifest_path("code").exists()
    # Applied once, the plan is stale: the object is gone.
    pf.write_text(json.dumps(doc))
    dsv.tether("drop", "--from-plan", pf)
    p = dsv.tether("drop", "--from-plan", pf, check_rc=3)
    assert p.stderr == "tether: error: stale plan: code was removed since the plan\n"


def test_a_kill_after_the_journal_entry_is_finished_by_the_rerun(dsv, code):
    _, _, branch = forked(dsv, code)
    pin_tags = tags(code)
    dsv.tether("drop", "code", check_rc=-9, env={"TETHER_FAULT": "drop:journal-written"})
    assert branch in branches(code) and dsv.manifest_path("code").exists()
    dsv.tether("drop", "code")
    assert branch not in branches(code) and not dsv.manifest_path("code").exists()
    dsv.tether("commit", "-m", "dropped")
    # verify and gc agree: every recorded state is held, nothing to release.
    assert dsv.tj("verify", "--all-history")["ok"] is True
    assert dsv.tj("gc", "--no-dry-run")["release"] == []
    assert tags(code) == pin_tags
    assert [o["status"] for o in ops(dsv) if o["op"] == "drop"] == ["COMPLETE", "COMPLETE"]
