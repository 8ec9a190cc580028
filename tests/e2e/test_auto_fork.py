"""new.auto_fork: after a commit lands on a bookmark `tether new` put the
checkout on, every forkable object with write = "fork" works on that
bookmark's branch tether.ws.<dataset8>.<bookmark>, at the state the commit
just pinned.

An object added after `new` gets its branch forked by the commit (the
branch must not exist yet); one already on the branch is re-forked to the
pinned state unless it is there (conditional on the head the commit read).
With `[new] auto_fork = false` the commit leaves working refs alone and the
fork happens at the next writable `open` (or `new`). A fork that fails
after the commit is a warning: the commit stands. A checkout `tether new`
never put on a bookmark works on every object's own branch, and commit
forks nothing there.

Run in git, colocated jj and jj datasets, with git repositories as objects.
"""
import os
import signal
import subprocess
import tomllib

from conftest import TETHER_BIN, check_sanitizers, stopped
from test_git_backend import (  # noqa: F401 (fixtures)
    add_code,
    code,
    code_commit,
    dsv,
    jj_problem,
    pin_of,
    rev,
)


def ws_branches(repo, ds):
    return repo.git("branch", "--list", f"tether.ws.{ds.dataset_id()[:8]}.*", "--format=%(refname:short)").split()


def on_feature(ds, code):
    """`code` committed, then `tether new -b feat`; the working branch name."""
    add_code(ds, code)
    ds.tether("commit", "-m", "one")
    ds.tether("new", "-b", "feat", "HEAD")
    return f"tether.ws.{ds.dataset_id()[:8]}.feat"


def second_object(ds, new_repo, key="lib"):
    lib = new_repo(key)
    code_commit(lib, {"lib.py": "v1\n"}, "l1")
    add_code(ds, lib, key=key)
    return lib


def workspace_entry(ds, key):
    return tomllib.loads(ds.p(".tether/workspace.toml").read_text())["working"].get(key)


def set_auto_fork(ds, value):
    text = ds.p("tether.toml").read_text()
    assert "auto_fork = true" in text
    ds.write("tether.toml", text.replace("auto_fork = true", f"auto_fork = {str(value).lower()}"))


def test_commit_forks_an_object_added_after_new(dsv, code, new_repo):
    branch = on_feature(dsv, code)
    lib = second_object(dsv, new_repo)
    sha = lib.head()
    pin = pin_of(dsv, lib, sha)

    # The plan says what the commit forks once it lands, and on what condition.
    plan = dsv.tj("commit", "-m", "two", "--dry-run")["plan"]
    assert plan["forks"] == [
        {"key": "code", "action": "refork", "branch": branch, "expect": {"sha": code.head()}},
        {"key": "lib", "action": "fork", "branch": branch, "expect": None},
    ]
    out = dsv.tether("commit", "-m", "two", "--dry-run").stdout.splitlines()
    assert out[-4:-1] == [
        "then, once the commit lands (new.auto_fork):",
        f"  refork    code -> {branch} (if the branch is still at {{\"sha\":\"{code.head()}\"}})",
        f"  fork      lib -> {branch} (if the branch does not exist)",
    ], out
    assert ws_branches(lib, dsv) == []

    p = dsv.tether("commit", "-m", "two")
    assert p.stderr == ""
    assert p.stdout.splitlines()[-1] == f"  forked    lib -> {branch}"
    assert dsv.vcs_head() is not None
    assert ws_branches(lib, dsv) == [branch]
    assert rev(lib, f"refs/heads/{branch}") == sha
    entry = workspace_entry(dsv, "lib")
    assert (entry["branch"], entry["ref"], entry["from_pin"]) == (branch, {"branch": branch}, pin)
    assert entry["heads"][branch]["sha"] == sha

    # From now on lib is read on its working branch, not on its own.
    code_commit(lib, {"lib.py": "on main\n"}, "l2")
    assert [(o["key"], o["status"]) for o in dsv.tj("status")["objects"]] == [("code", "clean"), ("lib", "clean")]
    lib.git("checkout", "-q", branch)
    sha3 = code_commit(lib, {"lib.py": "on the fork\n"}, "l3")
    lib.git("checkout", "-q", "main")
    st = dsv.tj("status")["objects"][1]
    assert (st["key"], st["status"], st["current"]["sha"]) == ("lib", "modified", sha3)
    r = dsv.tj("commit", "-m", "three")
    assert r["forks"] == [
        {"key": "code", "action": "reforked", "branch": branch, "ref": {"branch": branch}},
        {"key": "lib", "action": "reforked", "branch": branch, "ref": {"branch": branch}},
    ]
    assert rev(lib, f"refs/heads/{branch}") == sha3
    assert workspace_entry(dsv, "lib")["from_pin"] == pin_of(dsv, lib, sha3)


def test_auto_fork_false_leaves_working_refs_to_open(dsv, code, new_repo):
    branch = on_feature(dsv, code)
    set_auto_fork(dsv, False)
    lib = second_object(dsv, new_repo)
    sha = lib.head()
    assert dsv.tj("commit", "-m", "two", "--dry-run")["plan"]["forks"] == []
    r = dsv.tj("commit", "-m", "two")
    assert r["forks"] == [] and r["warnings"] == []
    assert ws_branches(lib, dsv) == []
    assert workspace_entry(dsv, "lib") is None
    # lib still follows its own branch...
    sha2 = code_commit(lib, {"lib.py": "v2\n"}, "l2")
    st = dsv.tj("status")["objects"][1]
    assert (st["key"], st["status"], st["current"]["sha"]) == ("lib", "modified", sha2)
    dsv.tether("commit", "-m", "three")
    assert ws_branches(lib, dsv) == []
    # ...until a writable open forks it, at the state last recorded.
    h = dsv.tj("open", "lib")
    assert (h["read_only"], h["ref"], h["sha"]) == (False, branch, sha2)
    assert rev(lib, f"refs/heads/{branch}") == sha2 != sha


def test_a_checkout_never_put_on_a_bookmark_forks_nothing(dsv, code):
    add_code(dsv, code)
    r = dsv.tj("commit", "-m", "one")
    assert r["forks"] == [] and ws_branches(code, dsv) == []
    assert not dsv.p(".tether/workspace.toml").exists()


def test_a_refused_fork_after_the_commit_is_a_warning(dsv, code, new_repo):
    branch = on_feature(dsv, code)
    lib = second_object(dsv, new_repo)
    lib.git("branch", branch, "HEAD")  # someone else's branch, by that name
    p = dsv.tether("commit", "-m", "two")
    head = dsv.vcs_head()
    assert dsv.manifest_at("HEAD", "lib")["pin"] == pin_of(dsv, lib, lib.head())  # the commit landed
    assert p.stderr.splitlines() == [
        f"warning: lib: cannot fork {branch}: git repository {lib.root}/: refs/heads/{branch} already exists "
        "(expected it absent); nothing was changed (after the commit, which stands); lib works on its own branch "
        "until `tether open lib` (or the next `tether new`) forks it"], p.stderr
    assert workspace_entry(dsv, "lib") is None
    # Dealt with, the fork the warning names succeeds.
    lib.git("branch", "-D", branch)
    assert dsv.tj("open", "lib")["ref"] == branch
    assert dsv.vcs_head() == head


def test_a_refused_refork_when_someone_moved_the_branch(dsv, code):
    """A write on the working branch while the commit runs (after it read
    the branch): the re-fork to the pinned state is refused, the write is
    kept and the commit stands."""
    branch = on_feature(dsv, code)
    code.git("checkout", "-q", branch)
    sha2 = code_commit(code, {"main.py": "2\n"}, "c2")
    env = dict(dsv.env, TETHER_FAULT="commit:vcs-committed:stop")
    proc = subprocess.Popen([TETHER_BIN, "commit", "-m", "two"], cwd=str(dsv.root), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at commit:vcs-committed"
        sha3 = code_commit(code, {"main.py": "3\n"}, "c3")  # the branch moves on
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    code.git("checkout", "-q", "main")
    assert proc.returncode == 0, err
    assert dsv.manifest_at("HEAD", "code")["state"]["sha"] == sha2  # what the commit read
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: code: cannot fork {branch}: "), err
    assert lines[0].endswith(" (re-forking after the commit, which stands); what was written on the branch "
                             "meanwhile is not in this commit: `tether status` shows it, `tether commit` "
                             "records it"), err
    assert rev(code, f"refs/heads/{branch}") == sha3
    st = dsv.tj("status")["objects"][0]
    assert (st["status"], st["current"]["sha"]) == ("modified", sha3)
    r = dsv.tj("commit", "-m", "three")
    assert r["warnings"] == [] and dsv.manifest("code")["state"]["sha"] == sha3


def test_a_commit_plan_whose_forks_changed_is_stale(dsv, code, new_repo, tmp_path):
    on_feature(dsv, code)
    second_object(dsv, new_repo)
    plan_file = tmp_path / "commit.json"
    dsv.tether("commit", "-m", "two", "--plan", plan_file)
    dsv.tether("new", "-b", "other")  # the same commit, another bookmark
    p = dsv.tether("commit", "--from-plan", plan_file, check_rc=3)
    assert p.stderr.splitlines()[0] == (
        "tether: error: stale plan: what new.auto_fork would fork after the commit changed since the plan "
        "(the workspace or its bookmark moved)"), p.stderr
    assert dsv.manifest("lib").get("pin") is None  # nothing was committed
