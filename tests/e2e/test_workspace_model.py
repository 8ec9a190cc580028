"""The workspace model (issue 12, items 10-12).

- The trunk bookmark stands for every object's upstream branch: on it
  objects work on the locator's branch and nothing is forked; any other
  bookmark forks tether.ws.<dataset8>.<bookmark>. The trunk is `[new]
  trunk` in tether.toml, else the first of main, master, trunk that exists.
- An object at a detached `at` (add --at / --pick) is pinned there by the
  first commit and stays there: `new` never forks it (reported "detached"),
  so two keys of one store at two states coexist.
- Stale workspaces: .tether/workspace.toml records the bookmark and commit
  `new` put the checkout on. When the checkout moves without tether (a
  plain `git checkout`, `jj new`, a crash after the move), status says so
  and commit / writable open refuse, naming both and the fix, until `tether
  new` or `tether new --adopt` reconciles them. A missing workspace.toml is
  explained by status and rebuilt by `new --adopt`; a tracked one refused.

Run in git, colocated jj and jj datasets, with git repositories as
objects (Icechunk's detached keys are in test_icechunk.py and
test_pull.py).
"""
import os
import subprocess

from conftest import TETHER_BIN, check_sanitizers
from test_git_backend import add_code, code, code_commit, dsv, gds, jj_problem, rev  # noqa: F401


def ds8(ds):
    return ds.dataset_id()[:8]


def ws_branches(code, ds):
    return code.git("branch", "--list", f"tether.ws.{ds8(ds)}.*", "--format=%(refname:short)").split()


def jj(ds, *args):
    p = subprocess.run(["jj", "--no-pager", *args], cwd=str(ds.root), env=ds.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def baseline(ds, code):
    """code registered and committed, and a trunk bookmark `main` on that
    commit in either VCS (jj makes none by itself)."""
    add_code(ds, code)
    ds.tether("commit", "-m", "baseline")
    if ds.vcs != "git":
        jj(ds, "bookmark", "create", "main", "-r", "@-")


def vcs_checkout(ds, bookmark):
    """Move the checkout with the VCS itself, behind tether's back."""
    if ds.vcs == "git":
        ds.git("checkout", "-q", bookmark)
    else:
        jj(ds, "new", bookmark)


def vcs_branch(ds, name):
    """A new bookmark at the checkout, made with the VCS itself."""
    if ds.vcs == "git":
        ds.git("checkout", "-q", "-b", name)
    else:
        jj(ds, "bookmark", "create", name, "-r", "@-")


def workspace(ds):
    import tomllib
    path = ds.p(".tether/workspace.toml")
    return tomllib.loads(path.read_text()) if path.exists() else None


# ---------------------------------------------------------------------------
# Item 10: the trunk stands for the upstream branch
# ---------------------------------------------------------------------------

def test_new_on_the_trunk_forks_nothing_and_works_on_the_upstream_branch(dsv, code):
    baseline(dsv, code)
    r = dsv.tj("new", "main")
    assert r["bookmark"] == "main"
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "upstream")]
    assert r["objects"][0]["detail"] == "on the trunk: works on its upstream branch"
    assert ws_branches(code, dsv) == []
    assert workspace(dsv)["bookmark"] == "main" and workspace(dsv)["working"] == {}
    # The handle is the object's own branch, writable.
    h = dsv.tj("open", "code")
    assert (h["ref"], h["read_only"]) == ("main", False)
    # A write there is the next commit's, and no commit forks on the trunk.
    sha2 = code_commit(code, {"main.py": "on main\n"}, "c2")
    assert [o["status"] for o in dsv.tj("status")["objects"]] == ["modified"]
    c = dsv.tj("commit", "-m", "two")
    assert c["forks"] == [] and dsv.manifest("code")["state"]["sha"] == sha2
    assert ws_branches(code, dsv) == []
    out = dsv.tether("new", "main", "--dry-run").stdout.splitlines()
    assert out[1] == "  upstream  code (on the trunk: works on its upstream branch)", out


def test_other_bookmarks_fork_their_own_branch(dsv, code):
    baseline(dsv, code)
    sha = code.head()
    r = dsv.tj("new", "main", "-b", "feat")
    assert [(o["key"], o["action"], o.get("branch")) for o in r["objects"]] == [
        ("code", "forked", f"tether.ws.{ds8(dsv)}.feat")]
    assert ws_branches(code, dsv) == [f"tether.ws.{ds8(dsv)}.feat"]
    assert rev(code, f"refs/heads/tether.ws.{ds8(dsv)}.feat") == sha
    # Back on the trunk the object works on main again; feat's branch stays.
    r = dsv.tj("new", "main")
    assert [o["action"] for o in r["objects"]] == ["upstream"]
    assert dsv.tj("open", "code")["ref"] == "main"


def test_a_lazy_open_off_the_trunk_records_the_workspace(gds, code):
    add_code(gds, code)
    gds.tether("commit", "-m", "baseline")
    gds.git("checkout", "-q", "-b", "side")
    assert workspace(gds) is None
    h = gds.tj("open", "code")
    assert h["ref"] == f"tether.ws.{ds8(gds)}.side"
    ws = workspace(gds)
    assert ws["bookmark"] == "side" and ws["head"] == gds.head()
    # On the trunk a lazy open forks nothing.
    gds.git("checkout", "-q", "main")
    gds.tether("new", "--adopt")
    assert gds.tj("open", "code")["ref"] == "main"


def test_the_trunk_is_master_when_there_is_no_main_and_can_be_configured(gds, code):
    gds.git("branch", "-m", "main", "master")  # an unborn branch renamed: no main at all
    add_code(gds, code)
    gds.tether("commit", "-m", "baseline")
    assert gds.git("branch", "--format=%(refname:short)").split() == ["master"]
    assert [o["action"] for o in gds.tj("new", "master")["objects"]] == ["upstream"]
    # [new] trunk names another: master is then an ordinary bookmark.
    text = gds.p("tether.toml").read_text().replace("[new]\n", '[new]\ntrunk = "release"\n')
    gds.p("tether.toml").write_text(text)
    r = gds.tj("new", "master")
    assert [o["action"] for o in r["objects"]] == ["forked"]
    gds.git("checkout", "-q", "-b", "release")
    assert [o["action"] for o in gds.tj("new", "release")["objects"]] == ["upstream"]


def test_a_trunk_that_is_no_bookmark_name_is_refused(gds):
    text = gds.p("tether.toml").read_text()
    for bad in ("3", '""', '"a b"', '"-x"'):
        gds.p("tether.toml").write_text(text.replace("[new]\n", f"[new]\ntrunk = {bad}\n"))
        p = gds.tether("status", check_rc=1)
        assert "new.trunk must be a bookmark name" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# Item 12: keys of one store at different states coexist
# ---------------------------------------------------------------------------

def test_the_pick_example_does_not_block_new(dsv, code):
    """add old/code <same store> --at <older>, commit: every later `new`
    used to refuse ("recorded at different states")."""
    older = code.head()
    newer = code_commit(code, {"main.py": "v2\n"}, "c2")
    add_code(dsv, code)
    dsv.tether("add", "old/code", code.root, "--kind", "git", "--at", older)
    dsv.tether("commit", "-m", "both")
    if dsv.vcs != "git":
        jj(dsv, "bookmark", "create", "main", "-r", "@-")
    assert dsv.manifest("code")["state"]["sha"] == newer
    assert dsv.manifest("old/code")["state"]["sha"] == older
    assert dsv.manifest("old/code")["locator"]["at"] == older
    r = dsv.tj("new", "main", "-b", "feat")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "forked"), ("old/code", "detached")]
    assert ws_branches(code, dsv) == [f"tether.ws.{ds8(dsv)}.feat"]
    # The detached key reads its `at`, read-only.
    h = dsv.tj("open", "old/code")
    assert h["read_only"] is True and h["sha"] == older
    # And `new` keeps working, on any bookmark.
    assert [o["action"] for o in dsv.tj("new", "main")["objects"]] == ["upstream", "detached"]
    assert [o["action"] for o in dsv.tj("new", "main", "-b", "two")["objects"]] == ["forked", "detached"]
    # A write on two's branch: the commit pins each key at its own state and
    # re-forks only the attached one.
    two = f"tether.ws.{ds8(dsv)}.two"
    code.git("checkout", "-q", two)
    third = code_commit(code, {"main.py": "v3 on two\n"}, "c3")
    code.git("checkout", "-q", "main")
    c = dsv.tj("commit", "-m", "again")
    assert [(f["key"], f["action"]) for f in c["forks"]] == [("code", "reforked")]
    assert dsv.manifest("code")["state"]["sha"] == third
    assert dsv.manifest("old/code")["state"]["sha"] == older


# ---------------------------------------------------------------------------
# Item 11: stale workspaces
# ---------------------------------------------------------------------------

def test_a_checkout_moved_behind_tethers_back_is_stale_until_new(dsv, code):
    baseline(dsv, code)
    dsv.tether("new", "main", "-b", "feat")
    feat = f"tether.ws.{ds8(dsv)}.feat"
    vcs_checkout(dsv, "main")
    st = dsv.tj("status")
    assert st["workspace"]["stale"] is True and st["clean"] is False
    reason = "the checkout is on main, but .tether/workspace.toml works on feat"
    assert st["workspace"]["reason"] == reason
    out = dsv.tether("status").stdout.splitlines()
    assert out[0] == f"workspace stale: {reason}", out
    assert out[1].startswith("  `tether new` works on main"), out
    # Writes through feat's working refs are refused, saying both and the fix.
    code_commit(code, {"main.py": "written on feat?\n"}, "w")
    for args, what in ((["commit", "-m", "x"], "commit"), (["open", "code"], "open for writing")):
        p = dsv.tether(*args, check_rc=3)
        assert p.stderr.splitlines()[0] == f"tether: error: {what} refused: the workspace is stale: {reason}", p.stderr
        assert "`tether new --adopt`" in p.stderr.splitlines()[1]
    # A read at a revision is no write.
    dsv.tj("open", "code", "-r", "HEAD")
    # `tether new` reconciles: main is the trunk.
    r = dsv.tj("new")
    assert r["bookmark"] == "main" and [o["action"] for o in r["objects"]] == ["upstream"]
    st = dsv.tj("status")
    assert st["workspace"]["stale"] is False and st["workspace"]["bookmark"] == "main"
    dsv.tether("commit", "-m", "the write on main")
    assert rev(code, f"refs/heads/{feat}") != code.head()  # feat's fork untouched


def test_adopt_takes_the_checkouts_bookmark_and_its_existing_branches(dsv, code):
    baseline(dsv, code)
    dsv.tether("new", "main", "-b", "feat")
    feat = f"tether.ws.{ds8(dsv)}.feat"
    # Work on feat's branch, then the user leaves and comes back by hand.
    code.git("checkout", "-q", feat)
    work = code_commit(code, {"main.py": "work on feat\n"}, "w")
    code.git("checkout", "-q", "main")
    vcs_checkout(dsv, "main")
    vcs_checkout(dsv, "feat")
    if dsv.vcs == "git":  # git: back on feat by name, so current again
        assert dsv.tj("status")["workspace"]["stale"] is False
    # Lose the workspace file: status explains, plain `new` refuses to fork
    # over the branch it did not make here, --adopt takes it as it is.
    dsv.p(".tether/workspace.toml").unlink()
    st = dsv.tj("status")
    assert st["workspace"]["saved"] == "missing"
    assert "`tether new --adopt` takes the ones the stores hold" in st["workspace"]["hint"]
    p = dsv.tether("new", check_rc=3)
    assert f"cannot fork {feat}: it exists already" in p.stderr
    plan = dsv.tj("new", "--adopt", "--dry-run")["plan"]
    assert plan["adopt"] is True
    assert plan["actions"] == [{"key": "code", "action": "adopt", "branch": feat, "head": {"sha": work}}]
    r = dsv.tj("new", "--adopt")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "adopted")]
    assert rev(code, f"refs/heads/{feat}") == work  # nothing moved
    assert workspace(dsv)["working"]["code"]["heads"] == {feat: {"sha": work}}
    assert dsv.tj("open", "code")["ref"] == feat
    assert [o["status"] for o in dsv.tj("status")["objects"]] == ["modified"]
    # The write on feat is committed, and the branch re-forked from it.
    dsv.tether("commit", "-m", "feat's work")
    assert dsv.manifest("code")["state"]["sha"] == work


def test_adopt_forks_what_is_missing_on_a_new_bookmark(gds, code):
    baseline(gds, code)
    gds.tether("new", "main", "-b", "feat")
    gds.git("checkout", "-q", "-b", "other")
    assert gds.tj("status")["workspace"]["stale"] is True
    r = gds.tj("new", "--adopt")
    assert r["bookmark"] == "other"
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "forked")]
    assert sorted(ws_branches(code, gds)) == [f"tether.ws.{ds8(gds)}.feat", f"tether.ws.{ds8(gds)}.other"]
    assert gds.tj("status")["workspace"]["stale"] is False
    # --adopt takes no REV and no -b.
    for extra in (["main"], ["-b", "x"]):
        p = gds.tether("new", "--adopt", *extra, check_rc=2)
        assert "--adopt takes no REV and no -b" in p.stderr


def test_adopt_refuses_a_branch_that_moved_since_its_plan(gds, code, tmp_path):
    baseline(gds, code)
    gds.tether("new", "main", "-b", "feat")
    feat = f"tether.ws.{ds8(gds)}.feat"
    gds.p(".tether/workspace.toml").unlink()
    plan = tmp_path / "adopt.json"
    gds.tether("new", "--adopt", "--plan", plan)
    code.git("checkout", "-q", feat)
    code_commit(code, {"main.py": "raced\n"}, "race")
    code.git("checkout", "-q", "main")
    p = gds.tether("new", "--from-plan", plan, check_rc=3)
    assert "stale plan: code:" in p.stderr
    assert workspace(gds) is None  # nothing written


def test_a_detached_checkout_elsewhere_is_stale_but_a_later_commit_is_not(gds, code):
    baseline(gds, code)
    gds.tether("new", "main", "-b", "feat")
    first = gds.head()
    gds.write("notes.txt", "n\n")
    gds.git_commit_all("a commit of the user's", "notes.txt")
    gds.git("checkout", "-q", "--detach")  # at a descendant of the recorded commit
    assert gds.tj("status")["workspace"]["stale"] is False
    gds.git("checkout", "-q", "--detach", "HEAD~1")
    gds.git("checkout", "-q", "--detach", first)
    assert gds.tj("status")["workspace"]["stale"] is False  # the recorded commit itself
    gds.git("checkout", "-q", "main")
    assert gds.tj("status")["workspace"]["stale"] is True
    # Detached somewhere that does not follow the recorded commit.
    gds.tether("new", "feat")
    gds.git("checkout", "-q", "--orphan", "elsewhere")
    gds.git("rm", "-rq", "--cached", ".")
    gds.write("x", "x\n")
    gds.git("add", "x")
    gds.git("commit", "-qm", "unrelated")
    gds.git("checkout", "-q", "--detach")
    st = gds.tj("status")["workspace"]
    assert st["stale"] is True and "names no bookmark and does not follow" in st["reason"], st
    p = gds.tether("commit", "-m", "x", check_rc=3)
    assert "`tether new feat` to go back" in p.stderr


def test_a_crash_after_the_checkout_moved_leaves_a_stale_workspace_new_reconciles(gds, code):
    baseline(gds, code)
    gds.tether("new", "main")
    env = dict(gds.env, TETHER_FAULT="new:switched")
    p = subprocess.run([TETHER_BIN, "new", "main", "-b", "feat"], cwd=str(gds.root), env=env,
                       capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == -9
    # The checkout moved; the workspace still says main.
    assert gds.git("branch", "--show-current").strip() == "feat"
    st = gds.tj("status")["workspace"]
    assert st["stale"] is True and st["reason"] == "the checkout is on feat, but .tether/workspace.toml works on main"
    gds.tether("commit", "-m", "x", check_rc=3)
    # `tether new` on feat settles it.
    r = gds.tj("new")
    assert r["bookmark"] == "feat" and [o["action"] for o in r["objects"]] == ["forked"]
    assert gds.tj("status")["workspace"]["stale"] is False


def test_jj_commits_on_a_bookmark_keep_the_workspace_current(dsv, code):
    """jj's working-copy commit moves on every snapshot, and a bookmark stays
    on the change it was made on: neither is a disagreement."""
    baseline(dsv, code)
    dsv.tether("new", "main", "-b", "feat")
    for n in range(3):
        code_commit(code, {"main.py": f"v{n}\n"}, f"c{n}")
        dsv.tether("commit", "-m", f"commit {n}")
        assert dsv.tj("status")["workspace"]["stale"] is False
    if dsv.vcs != "git":
        jj(dsv, "new")  # a new empty change on top: still this workspace
        assert dsv.tj("status")["workspace"]["stale"] is False


def test_a_force_tracked_workspace_toml_is_refused(gds, code):
    baseline(gds, code)
    gds.tether("new", "main", "-b", "feat")
    gds.git("add", "-f", ".tether/workspace.toml")
    for args in (["commit", "-m", "x"], ["open", "code"], ["status"], ["pull"]):
        p = gds.tether(*args, check_rc=3)
        assert "workspace.toml" in p.stderr and "tracked" in p.stderr, (args, p.stderr)


def test_a_second_jj_bookmark_on_the_change_is_no_disagreement(dsv, code):
    """jj puts several bookmarks on one change: the workspace's being one of
    them is agreement, whichever one jj lists first (checkout_bookmarks).
    In git a second branch at the same commit is another checkout."""
    baseline(dsv, code)
    dsv.tether("new", "main", "-b", "zz")
    if dsv.vcs == "git":
        dsv.git("checkout", "-q", "-b", "aa")
        assert dsv.tj("status")["workspace"]["stale"] is True
        return
    jj(dsv, "bookmark", "create", "aa", "-r", "@")  # sorts before zz
    st = dsv.tj("status")["workspace"]
    assert st["stale"] is False and st["bookmark"] == "zz", st
    dsv.tether("commit", "-m", "on both bookmarks")


def test_a_workspace_on_a_commit_is_gone_back_to_by_id(gds, code):
    baseline(gds, code)
    gds.write("notes.txt", "n\n")
    gds.git_commit_all("a commit of the user's", "notes.txt")
    second = gds.head()
    assert gds.tj("new", second)["bookmark"] == f"detached-{second[:12]}"
    gds.git("checkout", "-q", "--detach", "HEAD~1")  # before it: does not follow it
    st = gds.tj("status")["workspace"]
    assert st["stale"] is True and st["hint"].startswith(f"`tether new {second}` goes back"), st
    p = gds.tether("commit", "-m", "x", check_rc=3)
    assert f"`tether new {second}` to go back" in p.stderr, p.stderr
    gds.tether("new", second)
    assert gds.tj("status")["workspace"]["stale"] is False
