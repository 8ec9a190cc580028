"""A file written while tether hashes it: what is recorded is a state the
file really had (the one after the write, read again), never a mix of the
bytes before and after; a file written during every read is refused,
naming it, and nothing is recorded.

The writes land mid-read deterministically: with
TETHER_FAULT=scan:mid-read:stop the process stops itself after the first
buffer of every read of a file (src/core/filehash.c), the test writes, and
sends SIGCONT."""
import os
import signal
import subprocess
import time

import pytest

from conftest import TETHER_BIN, check_sanitizers, expected_dir_state, sha256_bytes

SIZE = 8 << 20  # many read buffers: the first write lands in read bytes, the last in unread ones


def state_of(proc_pid):
    try:
        with open(f"/proc/{proc_pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def run_with_stops(ds, args, at_stop, timeout=120.0):
    """Run tether with the mid-read stop; at_stop(n) runs at the n-th stop
    (from 1), before the process is continued. Returns (completed, stops)."""
    env = dict(ds.env, TETHER_FAULT="scan:mid-read:stop")
    proc = subprocess.Popen([TETHER_BIN, *args], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stops = 0
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if state_of(proc.pid) == "T":
                stops += 1
                at_stop(stops)
                os.kill(proc.pid, signal.SIGCONT)
                # Wait until it runs again before looking for the next stop.
                while state_of(proc.pid) == "T" and proc.poll() is None:
                    time.sleep(0.005)
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=timeout)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    check_sanitizers(done)
    return done, stops


def write_two_far_apart(path, byte):
    """Two writes at distant offsets, as an application updating a big file
    in place does."""
    with open(path, "r+b") as f:
        f.seek(0)
        f.write(byte)
        f.seek(SIZE - 1)
        f.write(byte)


def after_content():
    return b"B" + b"A" * (SIZE - 2) + b"B"


@pytest.fixture(params=["file", "dir"])
def big(request, ds):
    """A big mutable file registered as a one-file object or inside a
    directory object; returns (key, path of the file, the object's path)."""
    kind = request.param
    path = ds.write("data/obj/big.bin", b"A" * SIZE)
    ds.write("data/obj/small.txt", "small\n")
    target = "data/obj/big.bin" if kind == "file" else "data/obj"
    ds.tether("add", "raw", target, "--kind", "file", "--file", "mutable")
    return "raw", path, ds.root / target


def test_a_file_written_mid_hash_is_recorded_as_it_is_after(ds, big):
    key, path, target = big
    done, stops = run_with_stops(ds, ["commit", "-m", "one"],
                                 lambda n: n == 1 and write_two_far_apart(path, b"B"))
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == after_content()
    state = ds.manifest(key)["state"]
    if target.is_dir():
        assert state == expected_dir_state(target)
    else:
        assert state == {"type": "file", "size": SIZE, "sha256": sha256_bytes(after_content())}
    assert stops >= 2, "the write was not caught by a second read"
    # What was recorded is what is there: clean, nothing to commit.
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "clean", st


def test_a_file_written_during_every_read_is_refused(ds, big):
    key, path, target = big
    head = ds.head()
    done, stops = run_with_stops(ds, ["commit", "-m", "one"],
                                 lambda n: write_two_far_apart(path, bytes([ord("a") + n % 26])))
    assert done.returncode == 3, done.stderr
    assert stops == 4, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"tether: error: {key}: '{path}' kept changing while it was hashed (4 reads): refusing to record "
        "a state it never had; retry once nothing writes to it"), done.stderr
    assert "state" not in ds.manifest(key)
    assert ds.head() == head
    assert not (ds.root / ".tether" / "listings").exists() or not any((ds.root / ".tether" / "listings").iterdir())
