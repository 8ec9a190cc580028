"""gc and verify --all-history of a dataset of file objects walk the history
without libgit2: tether-vcs-git serves the walk natively (each_commit and
history_files), and no file backend needs libgit2, so no process of the
command opens libgit2.so or tether-vcs-libgit2.so (strace). A repository
whose refs the native walk leaves to libgit2 (a symbolic ref to nothing)
still gets libgit2's walk, and its answer."""
import json
import shutil
import subprocess

import pytest

from conftest import TETHER_BIN, check_sanitizers, dated

STRACE = shutil.which("strace")
pytestmark = pytest.mark.skipif(STRACE is None, reason="strace is not installed")

T0 = 1_700_000_000


def history(ds):
    """Six commits of three file objects, a side branch merged back, a tag."""
    for i in range(3):
        ds.write(f"data/o{i}", f"v0-{i}")
        ds.tether("add", f"o{i}", f"data/o{i}", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "c0", env=dated(T0))
    for i in range(1, 4):
        ds.write(f"data/o{i % 3}", f"v{i}")
        ds.tether("commit", "-m", f"c{i}", env=dated(T0 + 60 * i))
    ds.git("tag", "-a", "-m", "release", "v1")
    ds.git("branch", "side", "HEAD~2")
    ds.git("merge", "-q", "--no-ff", "--no-edit", "-s", "ours", "side", env=dated(T0 + 600))
    ds.git("gc", "-q")


def traced(ds, tmp_path, *args):
    """Run tether under strace -f: the process and every path any of its
    processes tried to open."""
    trace = tmp_path / "trace"
    p = subprocess.run(
        [STRACE, "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(trace), TETHER_BIN, *args, "--json"],
        cwd=str(ds.root),
        env={**ds.env, "ASAN_OPTIONS": "detect_leaks=0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    check_sanitizers(p)
    paths = [line.split('"')[1] for line in trace.read_text().splitlines() if '"' in line]
    return p, paths


def opened(ds, tmp_path, *args):
    """tether's JSON answer, and every path it tried to open."""
    p, paths = traced(ds, tmp_path, *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), paths


def libgit2_opens(paths):
    return [p for p in paths if "libgit2.so" in p or "tether-vcs-libgit2" in p]


def test_gc_and_verify_all_history_load_no_libgit2(ds, tmp_path):
    history(ds)
    # twice each: cold (no walk cache yet) and warm
    for _ in range(2):
        gc, paths = opened(ds, tmp_path, "gc")
        assert libgit2_opens(paths) == []
        assert any(p.endswith("tether-vcs-git.so") for p in paths)
        assert gc["commits"] == ds.commit_count()
        v, paths = opened(ds, tmp_path, "verify", "--all-history")
        assert libgit2_opens(paths) == []
        assert v["ok"] is True


def test_refs_left_to_libgit2_get_libgit2s_walk(ds, tmp_path):
    history(ds)
    native = ds.tj("gc")
    ds.git("symbolic-ref", "refs/heads/dangling", "refs/heads/none")
    # libgit2 refuses a walk over a symbolic ref to nothing; so must tether
    p, paths = traced(ds, tmp_path, "gc")
    assert any("tether-vcs-libgit2" in path for path in paths)
    assert p.returncode == 1, p.stderr
    assert "history" in p.stderr
    ds.git("update-ref", "-d", "--no-deref", "refs/heads/dangling")
    assert ds.tj("gc")["commits"] == native["commits"]


def test_commands_open_no_dev_urandom(ds, tmp_path):
    """libtether seeds jansson's hash tables from the kernel's AT_RANDOM
    bytes: no command opens /dev/urandom (jansson would, on its first
    object, in every command)."""
    history(ds)
    for args in (["status"], ["gc"], ["log", "-n", "1"]):
        _, paths = opened(ds, tmp_path, *args)
        assert "/dev/urandom" not in paths, args
