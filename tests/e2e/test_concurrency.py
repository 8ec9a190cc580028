"""Concurrent tether processes: the checkout lock (.tether/lock) and the
repository lock (tether.lock in the common git dir), per
caveats-and-performance.md, "One writer per checkout, one per repository".

Writers run as separate worker processes (a small Python script started
with subprocess.Popen, each running the built tether in a loop), so the
processes really overlap. Every worker reports one JSON line per iteration.

  - two writers in one checkout, 50 commits each: every change lands, in
    order, every pin is held, nothing is corrupt;
  - `gc --no-dry-run` in one checkout of a repository while another checkout
    commits: every pin history names survives, only the truly unreferenced
    one is released;
  - a lock held past TETHER_LOCK_TIMEOUT_MS: exit 4 and a message naming the
    lock and its holder, nothing written.
"""
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
import tomllib

import pytest

from conftest import SANITIZER_MARKERS, TETHER_BIN, expected_pin

ITERATIONS = 50          # per writer, in one checkout
WORKTREE_COMMITS = 30    # commits racing gc in another checkout
TIME_LIMIT = 60.0        # seconds, for each concurrent test's workers
LOCK_HINT = "hint: wait for the other tether command to finish, then run this one again\n"

WORKER = r'''
import json, os, subprocess, sys

mode, cwd, n, target, tether = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

def run(argv, where):
    return subprocess.run(argv, cwd=where, capture_output=True, text=True)

def tether_json(args):
    p = run([tether, *args, "--json"], cwd)
    out = {"rc": p.returncode, "stderr": p.stderr}
    if p.returncode == 0:
        out["report"] = json.loads(p.stdout)
    return out

def emit(rec):
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()

if mode == "code":              # target: a code repository
    for i in range(1, n + 1):
        # A new commit without touching the working tree: the other writer
        # may snapshot this repository at any moment, and a dirty checkout
        # is (rightly) refused.
        assert run(["git", "commit", "-q", "--allow-empty", "-m", f"c{i}"], target).returncode == 0
        sha = run(["git", "rev-parse", "HEAD"], target).stdout.strip()
        emit({"i": i, "sha": sha, **tether_json(["commit", "-m", f"{os.path.basename(target)} {i}"])})
elif mode == "file":            # target: a file of the dataset, replaced atomically
    for i in range(1, n + 1):
        text = f"file {i}\n"
        with open(target + ".tmp", "w") as f:
            f.write(text)
        os.replace(target + ".tmp", target)
        emit({"i": i, "text": text, **tether_json(["commit", "-m", f"file {i}"])})
elif mode == "gc":              # target: a file whose existence says stop
    i = 0
    while i < n and not os.path.exists(target):
        i += 1
        emit({"i": i, **tether_json(["gc", "--no-dry-run"])})
'''


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def code_advance(code, text):
    code.write("main.py", text)
    code.git("add", "-A")
    code.git("commit", "-q", "-m", text.strip())
    return code.head()


def tags(code):
    return set(code.git("tag", "-l", "tether.*").split())


def git_pin(ds, code, sha):
    return expected_pin(ds.dataset_id(), "git", {"path": str(code.root)}, {"sha": sha})


def sha256_text(text):
    return hashlib.sha256(text.encode()).hexdigest()


def dataset_commits(ds, rev="HEAD"):
    return ds.git("rev-list", rev, "--", ".tether").split()


def manifests_at(ds, revs, key):
    """rev -> the parsed manifest of `key` at rev (None when absent), read
    with one `git cat-file --batch`."""
    if not revs:
        return {}
    query = "".join(f"{r}:.tether/objects/{key}.toml\n" for r in revs).encode()
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=ds.root, env=ds.env, input=query,
                         capture_output=True, check=True).stdout
    result, pos = {}, 0
    for r in revs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode().split()
        pos = nl + 1
        if header[-1] == "missing":
            result[r] = None
            continue
        size = int(header[2])
        result[r] = tomllib.loads(out[pos:pos + size].decode())
        pos += size + 1
    return result


def history_pins(ds, key):
    """Every pin a manifest of `key` names in any commit of any ref (and
    every worktree's HEAD), plus the working copy."""
    pins = {m["pin"] for m in manifests_at(ds, ds.git("rev-list", "--all").split(), key).values()
            if m and "pin" in m}
    if ds.manifest_path(key).exists():
        pins.add(ds.manifest(key)["pin"])
    return pins


def start_worker(ds, tmp_path, mode, cwd, n, target):
    script = tmp_path / "worker.py"
    if not script.exists():
        script.write_text(WORKER)
    return subprocess.Popen([sys.executable, str(script), mode, str(cwd), str(n), str(target), TETHER_BIN],
                            env=ds.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"worker failed (exit {proc.returncode}):\n{err}"
    records = [json.loads(line) for line in out.splitlines()]
    for r in records:
        for marker in SANITIZER_MARKERS:
            assert marker not in r["stderr"], f"sanitizer report in iteration {r['i']}:\n{r['stderr']}"
    return records


def fsck_clean(repo):
    p = subprocess.run(["git", "fsck", "--full", "--strict", "--no-dangling"], cwd=repo.root, env=repo.env,
                       capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (0, ""), p.stderr


def assert_verified(ds, cwd=None):
    v = ds.tj("verify", cwd=cwd)
    assert v["ok"] is True and all(o["ok"] for o in v["objects"]), v
    vh = ds.tj("verify", "--all-history", cwd=cwd)
    assert vh["ok"] is True and all(o["ok"] for o in vh["objects"]), vh


def incomplete(ds, cwd=None):
    return [e for e in ds.tj("ops", cwd=cwd)["ops"] if e["status"] == "INCOMPLETE"]


# ---------------------------------------------------------------------------
# Two writers, one checkout
# ---------------------------------------------------------------------------

def test_two_writers_in_one_checkout_every_commit_lands(ds, new_repo, tmp_path):
    code = new_repo("code-w")
    sha0 = code_advance(code, "code-w 0\n")
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.write("data/w.txt", "file 0\n")
    ds.tether("add", "file", "data/w.txt", "--kind", "file", "--file", "mutable")
    base = ds.tj("commit", "-m", "base")["commit"]
    assert dataset_commits(ds) == [base]
    ops0 = ds.tj("ops")["ops"]

    t0 = time.monotonic()
    a = start_worker(ds, tmp_path, "code", ds.root, ITERATIONS, code.root)
    b = start_worker(ds, tmp_path, "file", ds.root, ITERATIONS, ds.p("data/w.txt"))
    ra, rb = finish(a, 2 * TIME_LIMIT), finish(b, 2 * TIME_LIMIT)
    elapsed = time.monotonic() - t0
    assert elapsed < TIME_LIMIT, f"{2 * ITERATIONS} concurrent commits took {elapsed:.1f} s"

    # Every tether commit succeeded.
    assert [r["i"] for r in ra] == [r["i"] for r in rb] == list(range(1, ITERATIONS + 1))
    for r in ra + rb:
        assert r["rc"] == 0, r["stderr"]
    shas = [sha0] + [r["sha"] for r in ra]
    texts = ["file 0\n"] + [r["text"] for r in rb]
    assert len(set(shas)) == ITERATIONS + 1

    # Every commit a worker reports is a distinct dataset commit, and they
    # are all the dataset's commits since the base.
    landed = [r["report"]["commit"] for r in ra + rb if r["report"]["commit"]]
    nothing = [r for r in ra + rb if r["report"]["commit"] is None]
    history = dataset_commits(ds)
    assert len(landed) == len(set(landed))
    assert history[-1] == base
    assert sorted(history[:-1]) == sorted(landed)
    assert len(history) == 1 + 2 * ITERATIONS - len(nothing)
    assert ds.git("rev-list", "--count", "HEAD").strip() == str(len(history))  # no other commits
    assert ds.git("rev-list", "--merges", "HEAD") == ""

    # Each worker's own commit recorded its own change.
    oldest_first = list(reversed(history))
    code_at = manifests_at(ds, oldest_first, "code")
    file_at = manifests_at(ds, oldest_first, "file")
    for r in ra:
        if r["report"]["commit"]:
            assert code_at[r["report"]["commit"]]["state"]["sha"] == r["sha"]
            assert ds.git("log", "-1", "--format=%s", r["report"]["commit"]).strip() == f"code-w {r['i']}"
    for r in rb:
        if r["report"]["commit"]:
            assert file_at[r["report"]["commit"]]["state"]["sha256"] == sha256_text(r["text"])
            assert ds.git("log", "-1", "--format=%s", r["report"]["commit"]).strip() == f"file {r['i']}"

    # "nothing to commit" only where the other writer had already committed
    # this change: every state of both objects is recorded, in order, once.
    def runs(seq):
        out = []
        for x in seq:
            if not out or out[-1] != x:
                out.append(x)
        return out

    assert runs(code_at[c]["state"]["sha"] for c in oldest_first) == shas
    assert runs(file_at[c]["state"]["sha256"] for c in oldest_first) == [sha256_text(t) for t in texts]
    for r in nothing:
        # the commit that recorded it is the other writer's
        own = "code-w " if "sha" in r else "file "
        first = next(c for c in oldest_first
                     if ("sha" in r and code_at[c]["state"]["sha"] == r["sha"])
                     or ("text" in r and file_at[c]["state"]["sha256"] == sha256_text(r["text"])))
        assert not ds.git("log", "-1", "--format=%s", first).startswith(own)

    # No pin lost, none leaked: exactly one tag per recorded code state.
    expected_tags = {f"tether.{git_pin(ds, code, s)}" for s in shas}
    assert tags(code) == expected_tags
    assert {f"tether.{p}" for p in history_pins(ds, "code")} == expected_tags
    assert_verified(ds)
    g = ds.tj("gc")
    assert (g["release"], g["errors"]) == ([], [])

    # The journal: one COMPLETE entry per commit that landed (undo reads
    # them), those that pinned naming their pins, none left open.
    all_new = ds.tj("ops")["ops"][len(ops0):]
    new_ops = [e for e in all_new if e["pins"]]
    assert incomplete(ds) == []
    assert {e["status"] for e in all_new} == {"COMPLETE"}
    assert sorted(e["commit"] for e in all_new) == sorted(landed)
    assert len(new_ops) == ITERATIONS
    assert {p["pin"] for e in new_ops for p in e["pins"]} == {git_pin(ds, code, s) for s in shas[1:]}

    # Nothing is corrupt.
    fsck_clean(ds)
    fsck_clean(code)
    st = ds.tj("status")
    assert st["clean"] is True
    assert [(o["key"], o["status"]) for o in st["objects"]] == [("code", "clean"), ("file", "clean")]
    assert ds.git("status", "--porcelain", "--", ".tether", "tether.toml") == ""


# ---------------------------------------------------------------------------
# gc in one checkout, commits in another
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("committer", ["main", "worktree"])
def test_gc_in_one_checkout_while_another_commits(ds, new_repo, tmp_path, committer):
    code = new_repo("code-g")
    sha0 = code_advance(code, "code-g 0\n")
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tj("commit", "-m", "base")

    # A pin no commit will name: committed on a branch that is then deleted.
    ds.git("checkout", "-q", "-b", "doomed")
    doomed_sha = code_advance(code, "code-g doomed\n")
    ds.tj("commit", "-m", "doomed")
    doomed_pin = git_pin(ds, code, doomed_sha)
    ds.git("checkout", "-q", "main")
    ds.git("branch", "-q", "-D", "doomed")
    assert f"tether.{doomed_pin}" in tags(code)

    wt = tmp_path / "wt"
    ds.git("worktree", "add", "-q", wt, "-b", "side")
    commit_dir, gc_dir = (ds.root, wt) if committer == "main" else (wt, ds.root)
    stop = tmp_path / "stop-gc"

    t0 = time.monotonic()
    gc = start_worker(ds, tmp_path, "gc", gc_dir, 500, stop)
    writer = start_worker(ds, tmp_path, "code", commit_dir, WORKTREE_COMMITS, code.root)
    rw = finish(writer, 2 * TIME_LIMIT)
    stop.write_text("")
    rg = finish(gc, 2 * TIME_LIMIT)
    elapsed = time.monotonic() - t0
    assert elapsed < TIME_LIMIT, f"took {elapsed:.1f} s"

    # Every commit landed (one writer: never "nothing to commit").
    for r in rw + rg:
        assert r["rc"] == 0, r["stderr"]
    assert [r["i"] for r in rw] == list(range(1, WORKTREE_COMMITS + 1))
    landed = [r["report"]["commit"] for r in rw]
    assert None not in landed
    branch = "main" if committer == "main" else "side"
    assert list(reversed(ds.git("rev-list", f"{branch}~{WORKTREE_COMMITS}..{branch}").split())) == landed
    # gc ran alongside, and released the doomed pin exactly once, nothing else.
    assert len(rg) >= 2
    released = [x["pin"] for r in rg for x in r["report"]["release"]]
    assert released == [doomed_pin]
    assert all(r["report"]["errors"] == [] for r in rg)

    # Every pin any history names still exists, from both checkouts.
    shas = [sha0] + [r["sha"] for r in rw]
    expected_tags = {f"tether.{git_pin(ds, code, s)}" for s in shas}
    assert tags(code) == expected_tags
    assert {f"tether.{p}" for p in history_pins(ds, "code")} == expected_tags
    for where in (ds.root, wt):
        assert_verified(ds, cwd=where)
        assert incomplete(ds, cwd=where) == []
        g = ds.tj("gc", cwd=where)
        assert (g["release"], g["errors"]) == ([], [])
    fsck_clean(ds)
    fsck_clean(code)


# ---------------------------------------------------------------------------
# A lock held past its timeout
# ---------------------------------------------------------------------------

class Held:
    """An fcntl (POSIX) lock on a file, held by the test process."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release(self):
        if self.fd is not None:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


@pytest.fixture
def pinned(ds, new_repo):
    """A dataset with one code repository, committed once, then changed: a
    commit now would create a pin."""
    code = new_repo("code-l")
    code_advance(code, "code-l 0\n")
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tj("commit", "-m", "base")
    code_advance(code, "code-l 1\n")
    return ds, code


def lock_message(which, path):
    return (f"tether: error: the {which} lock {path} is held by process {os.getpid()}; "
            f"gave up after 0.3 s\n" + LOCK_HINT)


def assert_times_out(ds, code, args, which, path, cwd=None):
    head, t0_tags, ops0 = ds.head(), tags(code), ds.tj("ops", cwd=cwd)["ops"]
    manifest = ds.manifest_path("code").read_bytes()
    t0 = time.monotonic()
    p = ds.tether(*args, cwd=cwd, check_rc=4, env={"TETHER_LOCK_TIMEOUT_MS": "300"})
    waited = time.monotonic() - t0
    assert (p.stdout, p.stderr) == ("", lock_message(which, path))
    assert 0.3 <= waited < 10
    # Nothing was written.
    assert (ds.head(), tags(code), ds.tj("ops", cwd=cwd)["ops"]) == (head, t0_tags, ops0)
    assert ds.manifest_path("code").read_bytes() == manifest


@pytest.mark.parametrize("args", [("commit", "-m", "x"), ("gc", "--no-dry-run")], ids=["commit", "gc"])
@pytest.mark.parametrize("which", ["checkout", "repository"])
def test_lock_held_past_timeout(pinned, which, args):
    ds, code = pinned
    path = ds.p(".tether/lock") if which == "checkout" else ds.p(".git/tether.lock")
    held = Held(path)
    try:
        assert_times_out(ds, code, args, which, path)
    finally:
        held.release()
    # Once the lock is free the same command goes through.
    r = ds.tj(*args, env={"TETHER_LOCK_TIMEOUT_MS": "300"})
    if args[0] == "commit":
        assert r["commit"] == ds.head()
        assert tags(code) == {f"tether.{ds.manifest_at('HEAD~1', 'code')['pin']}",
                              f"tether.{ds.manifest('code')['pin']}"}


def test_repository_lock_is_shared_by_worktrees_checkout_lock_is_not(pinned, tmp_path):
    ds, code = pinned
    wt = tmp_path / "wt"
    ds.git("worktree", "add", "-q", wt, "-b", "side")

    # The repository lock lives in the common git dir: a commit in the
    # worktree waits for the main checkout's holder, and names that file.
    held = Held(ds.p(".git/tether.lock"))
    try:
        assert_times_out(ds, code, ("commit", "-m", "x"), "repository", ds.p(".git/tether.lock"), cwd=wt)
    finally:
        held.release()

    # The checkout lock is per checkout: the worktree's does not stop a
    # commit in the main checkout, but stops one in the worktree.
    held = Held(wt / ".tether" / "lock")
    try:
        assert_times_out(ds, code, ("commit", "-m", "x"), "checkout", wt / ".tether" / "lock", cwd=wt)
        r = ds.tj("commit", "-m", "main", env={"TETHER_LOCK_TIMEOUT_MS": "300"})
        assert r["commit"] == ds.head()
    finally:
        held.release()
    r = ds.tj("commit", "-m", "side", cwd=wt, env={"TETHER_LOCK_TIMEOUT_MS": "300"})
    assert r["commit"] == ds.git("rev-parse", "side").strip()
    assert_verified(ds)
    assert_verified(ds, cwd=wt)
