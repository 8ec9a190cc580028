"""`tether new` never leaves a move half-done.

Every fork is conditional: the working branch tether.ws.<dataset8>.<bookmark>
must be absent (tether never made it in this checkout) or still at the head
tether last left it at. `new` checks every condition against the stores,
read-only, before it moves the checkout, so a refused fork leaves the
checkout, the workspace and every store as they were: exit 3, one line
naming the object and the branch. The plan shows each condition. When a
fork is still refused after the move (something raced it; here a test
stops tether with TETHER_FAULT=new:switched:stop and moves a branch), the
forks made are taken back and the checkout is moved back.

Run in git, colocated jj and jj datasets, with git repositories as objects.
"""
import os
import signal
import subprocess

from conftest import TETHER_BIN, check_sanitizers, stopped
from test_git_backend import (  # noqa: F401 (fixtures)
    add_code,
    code,
    code_commit,
    dsv,
    jj_problem,
    rev,
)


def where(ds):
    """Where the checkout stands, as the VCS itself says."""
    if ds.vcs == "git":
        return (ds.git("rev-parse", "--abbrev-ref", "HEAD").strip(), ds.head(),
                ds.git("branch", "--format=%(refname:short)").split(), ds.git("status", "--porcelain"))

    def jj(*args):
        p = subprocess.run(["jj", "--no-pager", "--ignore-working-copy", *args], cwd=str(ds.root), env=ds.env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    return (jj("log", "--no-graph", "-r", "@", "-T", "change_id"), jj("log", "--no-graph", "-r", "@-", "-T",
                                                                        "commit_id"),
            jj("bookmark", "list", "-T", 'name ++ "\\n"').split())


def workspace_text(ds):
    path = ds.p(".tether/workspace.toml")
    return path.read_text() if path.exists() else None


def ws_branches(code, ds):
    return code.git("branch", "--list", f"tether.ws.{ds.dataset_id()[:8]}.*", "--format=%(refname:short)").split()


def snapshot(ds):
    """Make jj record the working copy now, so that reading where it is
    later changes nothing."""
    ds.tether("status")


def committed(ds, code):
    add_code(ds, code)
    ds.tether("commit", "-m", "one")
    snapshot(ds)
    return f"tether.ws.{ds.dataset_id()[:8]}"


def test_an_existing_branch_is_refused_before_the_checkout_moves(dsv, code):
    prefix = committed(dsv, code)
    sha = code.head()
    code.git("branch", f"{prefix}.feat")  # someone else's branch
    before, ws = where(dsv), workspace_text(dsv)
    want = (f"tether: error: code: cannot fork {prefix}.feat: it exists already (at {{\"sha\":\"{sha}\"}}) and "
            "tether did not make it in this checkout")
    for extra in ([], ["--dry-run"]):
        p = dsv.tether("new", "-b", "feat", "HEAD", *extra, check_rc=3)
        assert p.stdout == ""
        assert p.stderr.splitlines()[0] == want, p.stderr
        assert p.stderr.splitlines()[1].startswith("hint: nothing was moved"), p.stderr
        assert where(dsv) == before
        assert workspace_text(dsv) == ws
        assert ws_branches(code, dsv) == [f"{prefix}.feat"]
        assert rev(code, f"refs/heads/{prefix}.feat") == sha
    # Once the branch is gone, the same command forks.
    code.git("branch", "-D", f"{prefix}.feat")
    r = dsv.tj("new", "-b", "feat", "HEAD")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("code", "forked")]


def test_a_branch_moved_since_tether_left_it_is_refused(dsv, code):
    prefix = committed(dsv, code)
    sha1 = code.head()
    dsv.tether("new", "-b", "feat", "HEAD")
    branch = f"{prefix}.feat"
    # The plan says what every fork is conditional on.
    plan = dsv.tj("new", "--dry-run")["plan"]
    assert plan["actions"] == [{"key": "code", "action": "fork", "branch": branch, "expect": {"sha": sha1}}]
    out = dsv.tether("new", "--dry-run").stdout.splitlines()
    assert out[1] == f"  fork      code -> {branch} (if the branch is still at {{\"sha\":\"{sha1}\"}})", out

    # A write on the working branch nobody committed.
    code.git("checkout", "-q", branch)
    sha2 = code_commit(code, {"main.py": "uncommitted work\n"}, "work")
    code.git("checkout", "-q", "main")
    snapshot(dsv)
    before, ws = where(dsv), workspace_text(dsv)
    for extra in ([], ["--dry-run"]):
        p = dsv.tether("new", *extra, check_rc=3)
        assert p.stderr.splitlines()[0] == (
            f"tether: error: code: cannot fork {branch}: it moved since tether last left it "
            f"(at {{\"sha\":\"{sha1}\"}}, now at {{\"sha\":\"{sha2}\"}})"), p.stderr
        assert where(dsv) == before and workspace_text(dsv) == ws
        assert rev(code, f"refs/heads/{branch}") == sha2


def test_a_fork_refused_after_the_move_moves_the_checkout_back(dsv, code, new_repo):
    """A race: the conditions held when checked, then a branch appeared
    before its fork. The fork made before it is taken back, the workspace
    file is as it was, the checkout is back where it was."""
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    add_code(dsv, other, key="b-other")
    prefix = committed(dsv, code)  # keys in order: b-other, code
    before, ws = where(dsv), workspace_text(dsv)

    env = dict(dsv.env, TETHER_FAULT="new:switched:stop")
    proc = subprocess.Popen([TETHER_BIN, "new", "-b", "feat", "HEAD"], cwd=str(dsv.root), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), "tether did not stop at new:switched"
        assert where(dsv) != before  # it has moved the checkout
        code.git("branch", f"{prefix}.feat")  # the race
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert proc.returncode == 3, err
    assert out == ""
    line = err.splitlines()[0]
    assert line.startswith(f"tether: error: code: cannot fork {prefix}.feat: "), err
    assert line.endswith("; the checkout is back where it was; the 1 fork this run made is taken back"), err
    assert where(dsv) == before
    assert workspace_text(dsv) == ws
    assert ws_branches(other, dsv) == []  # b-other's fork is gone again
    assert ws_branches(code, dsv) == [f"{prefix}.feat"]

    code.git("branch", "-D", f"{prefix}.feat")
    r = dsv.tj("new", "-b", "feat", "HEAD")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("b-other", "forked"), ("code", "forked")]
