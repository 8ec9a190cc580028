"""Store sessions, cancellation and the deadline (docs/BACKENDS.md,
"Sessions" and "Cancellation and progress"; docs/CLI.md, exit codes).

Sessions: the engine opens at most one session per store identity per
command, whichever keys and threads touch the store, and closes it at the
end. TETHER_TRACE_SESSIONS=FILE makes the engine append "open KIND
IDENTITY" and "close KIND IDENTITY" to FILE for every open_store and
close_store, which is how these tests count them.

Cancellation: SIGINT and SIGTERM (and --timeout / TETHER_TIMEOUT) stop a
command at its next step with exit 130, 143 or 124 and "tether: error:
cancelled (...)". The signal lands at a known instant: TETHER_FAULT=...:stop
stops the process at a fault point, the test sends the signal and SIGCONT,
and the pending signal is delivered as the process resumes. A commit
stopped so is undone like any failure before the VCS commit; verify and gc
stay consistent and the re-run commits.
"""
import json
import os
import signal
import subprocess
import time

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import pytest

from conftest import TETHER_BIN, check_sanitizers
from test_crash import CODE_KEYS, assert_clean_and_exact, incomplete, scene, tags  # noqa: F401


# ---------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------

def traced(ds, tmp_path, *args, check_rc=0):
    """Run a command with the session trace on; its (open, close) lines."""
    trace = tmp_path / f"sessions-{time.monotonic_ns()}"
    ds.tether(*args, check_rc=check_rc, env={"TETHER_TRACE_SESSIONS": str(trace)})
    lines = trace.read_text().splitlines() if trace.exists() else []
    opens = [line.split(" ", 1)[1] for line in lines if line.startswith("open ")]
    closes = [line.split(" ", 1)[1] for line in lines if line.startswith("close ")]
    return opens, closes


def code_repo(new_repo, name):
    c = new_repo(name)
    c.write("README", f"{name}\n")
    c.git_commit_all("root", "README")
    return c


@pytest.fixture
def two_keys_one_repo(ds, new_repo):
    """Two git objects on one repository, a third on another, three commits."""
    shared, other = code_repo(new_repo, "shared"), code_repo(new_repo, "other")
    ds.tether("add", "a", str(shared.root), "--kind", "git")
    ds.tether("add", "b", str(shared.root), "--kind", "git")
    ds.tether("add", "c", str(other.root), "--kind", "git")
    for i in range(3):
        shared.git("commit", "-q", "--allow-empty", "-m", f"s{i}")
        other.git("commit", "-q", "--allow-empty", "-m", f"o{i}")
        ds.tether("commit", "-m", f"step {i}")
    return ds, shared, other


@pytest.mark.parametrize("args", [("status",), ("verify",), ("verify", "--all-history"), ("gc",),
                                  ("commit", "-m", "nothing new")])
def test_two_git_keys_on_one_repository_share_one_session(two_keys_one_repo, tmp_path, args):
    ds, shared, other = two_keys_one_repo
    opens, closes = traced(ds, tmp_path, *args)
    want = sorted(["git " + json.dumps({"path": str(r.root)}, separators=(",", ":")) for r in (shared, other)])
    assert sorted(opens) == want, opens
    assert sorted(closes) == want, closes


def test_a_command_that_touches_no_store_opens_no_session(two_keys_one_repo, tmp_path):
    ds, _, _ = two_keys_one_repo
    assert traced(ds, tmp_path, "log") == ([], [])


def test_two_icechunk_keys_on_one_repository_share_one_session(ds, tmp_path):
    store = tmp_path / "imaging.icechunk"
    oracle.create(store)
    for key in ("a", "b"):
        ds.tether("add", key, str(store), "--kind", "icechunk")
    ds.tether("commit", "-m", "first")
    oracle.commit(store)
    ds.tether("commit", "-m", "second")
    want = ["icechunk " + json.dumps({"uri": str(store)}, separators=(",", ":"))]
    for args in (("status",), ("verify", "--all-history"), ("gc",)):
        opens, closes = traced(ds, tmp_path, *args)
        assert (opens, closes) == (want, want), args


# ---------------------------------------------------------------------------
# Cancellation
# ---------------------------------------------------------------------------

def state_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def run_stopped_then_signalled(ds, args, fault, sig):
    """Run tether until it stops itself at `fault`, send `sig`, continue it."""
    env = dict(ds.env, TETHER_FAULT=fault)
    proc = subprocess.Popen([TETHER_BIN, *args], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while state_of(proc.pid) != "T" and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"tether did not stop at {fault}: {proc.communicate()}"
        os.kill(proc.pid, sig)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    check_sanitizers(done)
    return done


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_mid_commit_stops_it_and_leaves_everything_consistent(scene, sig, code, name):
    ds, codes = scene.ds, scene.codes
    head0 = ds.head()
    tags0 = {k: tags(c) for k, c in codes.items()}
    scene.change_everything(1)

    p = run_stopped_then_signalled(ds, ["commit", "-m", "x"], "commit:object-recorded:stop", sig)
    assert p.returncode == code, p.stderr
    assert p.stderr.startswith(f"tether: error: cancelled ({name}): commit stopped"), p.stderr
    # Nothing landed, and the one pin made before the stop was taken back.
    assert ds.head() == head0
    assert {k: tags(c) for k, c in codes.items()} == tags0
    assert incomplete(ds) == []

    r = ds.tj("commit", "-m", "x")
    assert [o["action"] for o in r["objects"]] == ["pinned", "pinned", "pinned", "recorded"]
    assert_clean_and_exact(ds, codes)


def test_sigint_while_hashing_a_large_file_stops_status(ds):
    ds.write("data/big.bin", "")
    with open(ds.p("data/big.bin"), "wb") as f:
        f.write(b"A" * (8 << 20))
    ds.tether("add", "big", "data", "--kind", "file", "--file", "mutable")
    p = run_stopped_then_signalled(ds, ["status"], "scan:mid-read:stop", signal.SIGINT)
    assert p.returncode == 130, p.stderr
    assert "cancelled (SIGINT): scanning" in p.stderr, p.stderr
    assert ds.tj("status")["objects"][0]["status"] == "never-recorded"


def test_the_deadline_stops_a_command_with_124(ds):
    ds.write("data/f.txt", "x\n")
    ds.tether("add", "f", "data/f.txt", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "base")
    head0 = ds.head()
    ds.write("data/f.txt", "y\n")
    # A deadline that passes while the process is stopped at the fault
    # point: the commit sees it at its next step.
    env = dict(ds.env, TETHER_FAULT="commit:journal-written:stop")
    proc = subprocess.Popen([TETHER_BIN, "--timeout", "0.2", "commit", "-m", "late"], cwd=str(ds.root), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while state_of(proc.pid) != "T" and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(0.4)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    check_sanitizers(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    # SIGALRM is held while the process is stopped: it is delivered on
    # SIGCONT, before the commit's next step.
    assert proc.returncode == 124, err
    assert err.startswith("tether: error: cancelled (deadline passed): commit stopped"), err
    assert ds.head() == head0
    assert ds.tj("status")["objects"][0]["status"] == "modified"


def test_timeout_env_and_bad_values(ds):
    ds.write("data/f.txt", "x\n")
    ds.tether("add", "f", "data/f.txt", "--kind", "file")
    # A generous deadline changes nothing.
    assert ds.tj("status", env={"TETHER_TIMEOUT": "600"})["objects"][0]["key"] == "f"
    p = ds.tether("--timeout", "soon", "status", check_rc=2)
    assert p.stderr.splitlines()[0] == "tether: error: --timeout 'soon': give a number of seconds greater than 0"
    p = ds.tether("status", check_rc=2, env={"TETHER_TIMEOUT": "-1"})
    assert p.stderr.splitlines()[0] == "tether: error: TETHER_TIMEOUT '-1': give a number of seconds greater than 0"


# ---------------------------------------------------------------------------
# Progress: the library reports, the CLI draws (on a terminal only)
# ---------------------------------------------------------------------------

def test_the_progress_line_is_drawn_on_a_terminal_and_not_elsewhere(ds):
    """Three files the scanner stops in (TETHER_FAULT=scan:mid-read:stop),
    held stopped past the 1 s the progress line waits for: with stderr a
    terminal the CLI draws `scanning: ...` from the library's reports and
    clears it; with stderr a pipe there is no line at all."""
    import pty
    for i in range(3):
        ds.write(f"data/f{i}.bin", "")
        with open(ds.p(f"data/f{i}.bin"), "wb") as f:
            f.write(bytes([65 + i]) * (4 << 20))
    ds.tether("add", "d", "data", "--kind", "file", "--file", "mutable")

    def run(stderr_tty):
        master, slave = pty.openpty() if stderr_tty else (None, None)
        env = dict(ds.env, TETHER_FAULT="scan:mid-read:stop", TETHER_THREADS="1")
        proc = subprocess.Popen([TETHER_BIN, "status"], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                                stderr=slave if stderr_tty else subprocess.PIPE)
        if slave is not None:
            os.close(slave)
        # Each stop is held 0.6 s, then continued. No wait for the state to
        # leave "T" after SIGCONT: on a loaded machine the process can run
        # on and stop at the next file before it is seen running, and such
        # a wait never ends; a stop seen twice only gets a second SIGCONT.
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if state_of(proc.pid) == "T":
                time.sleep(0.6)
                os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.005)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()
            pytest.fail("tether status did not finish within 120 s of its stops being continued")
        out = proc.stdout.read()
        err = b""
        if stderr_tty:
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                err += chunk
            os.close(master)
        else:
            err = proc.stderr.read()
        proc.wait(timeout=60)
        assert proc.returncode == 0, (out, err)
        return err.decode(errors="replace")

    drawn = run(True)
    assert "\rscanning: " in drawn and " MiB hashed\x1b[K" in drawn, repr(drawn)
    assert drawn.endswith("\r\x1b[K"), repr(drawn)
    assert run(False) == ""
