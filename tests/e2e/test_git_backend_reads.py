"""The git backend's read path without libgit2 (docs/PERFORMANCE.md, "The
git backend's read path without libgit2").

tether-backend-git.so answers the calls of commands that read history
(identity, check_state, list_pins, verify, verify_many) on the native git
reader and loads tether-gitbe-libgit2.so only for the rest. Traced with
strace: `tether log -n 1`, `tether gc` and `tether verify --all-history`
on a dataset of git objects never open the backend's libgit2 module, and
libgit2 itself only through the VCS module's libgit2 side (the history
walk: once that reads natively too, none of them opens libgit2 at all),
while `tether commit` and `tether status` still work and do load it, and
the answers are what git says: a moved pin tag, a missing one, packed and
annotated ones. test_backend_git_front.c holds the two modules' answers
equal on many more cases.
"""
import re
import shutil
import subprocess

import pytest

STRACE = shutil.which("strace")
pytestmark = pytest.mark.skipif(STRACE is None, reason="strace is not installed")


def code_repo(new_repo, name):
    c = new_repo(name)
    c.write("README", f"{name}\n")
    c.git_commit_all("root", "README")
    return c


@pytest.fixture
def fx(ds, new_repo):
    """A dataset with two git objects and three commits of it."""
    codes = [code_repo(new_repo, f"code{j}") for j in range(2)]
    for j, c in enumerate(codes):
        ds.tether("add", f"o{j}", str(c.root), "--kind", "git")
    for i in range(3):
        c = codes[i % 2]
        c.git("commit", "-q", "--allow-empty", "-m", f"s{i}")
        ds.tether("commit", "-m", f"step {i}")
    return ds, codes


def traced_env(ds):
    """LeakSanitizer cannot run under ptrace: off for traced runs."""
    env = dict(ds.env)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    return env


def opened(ds, *args):
    """Run tether under strace; the shared objects it opened, in order."""
    trace = ds.root.parent / "trace"
    p = subprocess.run([STRACE, "-f", "-qq", "-e", "trace=openat,open", "-o", str(trace), "--", ds_bin(), *args],
                       cwd=ds.root, env=traced_env(ds), capture_output=True, text=True)
    assert p.returncode == 0, f"tether {' '.join(args)} failed: {p.stderr}"
    libs = []
    for line in trace.read_text().splitlines():
        m = re.search(r'"([^"]*\.so[^"/]*)"', line)
        if m and not line.rstrip().endswith(("ENOENT (No such file or directory)",)):
            libs.append(m.group(1).rsplit("/", 1)[-1])
    return p, libs


def ds_bin():
    from conftest import TETHER_BIN
    return TETHER_BIN


def assert_no_libgit2_backend(libs):
    assert "tether-backend-git.so" in libs, libs
    assert "tether-gitbe-libgit2.so" not in libs, libs
    git2 = [i for i, name in enumerate(libs) if name.startswith("libgit2.so")]
    if git2:
        # only the VCS module's libgit2 side (the history walk) may load it
        assert "tether-vcs-libgit2.so" in libs[:git2[0]], libs


def test_history_reads_open_no_libgit2(fx):
    ds, _ = fx
    p, libs = opened(ds, "log", "-n", "1")
    assert "step 2" in p.stdout
    assert_no_libgit2_backend(libs)
    assert not [n for n in libs if n.startswith("libgit2.so")], libs
    p, libs = opened(ds, "gc")
    assert "dry run" in p.stdout
    assert_no_libgit2_backend(libs)
    p, libs = opened(ds, "verify", "--all-history")
    assert "objects verified" in p.stdout
    assert_no_libgit2_backend(libs)
    p, libs = opened(ds, "verify")
    assert_no_libgit2_backend(libs)
    assert not [n for n in libs if n.startswith("libgit2.so")], libs


def test_writes_and_status_still_load_the_libgit2_backend(fx):
    ds, codes = fx
    codes[0].git("commit", "-q", "--allow-empty", "-m", "later")
    p, libs = opened(ds, "status")
    assert "o0" in p.stdout
    assert "tether-gitbe-libgit2.so" in libs
    p, libs = opened(ds, "commit", "-m", "step 3")
    assert "tether-gitbe-libgit2.so" in libs
    assert codes[0].git("tag", "--points-at", "HEAD", "-l", "tether.*").strip(), "the commit pinned code0's head"


def pins_of(code):
    return dict(line.split() for line in code.git("for-each-ref", "--format=%(refname:short) %(objectname)",
                                                   "refs/tags/tether.*").splitlines())


def test_verify_answers_on_packed_annotated_moved_and_missing_tags(fx):
    ds, codes = fx
    c0, c1 = codes
    tags0 = sorted(pins_of(c0))
    tags1 = sorted(pins_of(c1))
    assert tags0 and tags1
    assert ds.tj("verify", "--all-history")["ok"] is True
    # packed, and annotated (loose, then packed with its peel line)
    c0.git("pack-refs", "--all")
    sha = c0.git("rev-parse", f"refs/tags/{tags0[0]}").strip()
    c0.git("tag", "-f", "-a", "-m", "annotated", tags0[0], sha)
    assert ds.tj("verify", "--all-history")["ok"] is True
    c0.git("pack-refs", "--all")
    assert "^" in (c0.root / ".git" / "packed-refs").read_text()
    assert ds.tj("verify", "--all-history")["ok"] is True
    _, libs = opened(ds, "verify", "--all-history")
    assert_no_libgit2_backend(libs)
    # moved: the pin tag of code1 now names another commit
    other = c1.git("rev-parse", "HEAD~1").strip()
    recorded = c1.git("rev-parse", f"refs/tags/{tags1[-1]}").strip()
    if other == recorded:
        other = c1.git("rev-parse", "HEAD").strip()
    c1.git("tag", "-f", tags1[-1], other)
    out = ds.tether("verify", "--all-history", check_rc=3)
    assert f"tag {tags1[-1]} in git repository {c1.root} moved: it names {other}, the recorded state is {recorded}" \
        in out.stdout + out.stderr
    # missing
    c1.git("tag", "-d", tags1[-1])
    out = ds.tether("verify", "--all-history", check_rc=3)
    assert f"tag {tags1[-1]} is missing from git repository {c1.root}" in out.stdout + out.stderr
    trace = subprocess.run([STRACE, "-f", "-qq", "-e", "trace=openat", "--", ds_bin(), "verify", "--all-history"],
                           cwd=ds.root, env=traced_env(ds), capture_output=True, text=True)
    assert trace.returncode == 3 and "tether-gitbe-libgit2.so" not in trace.stderr
    # gc lists the pins of both (a dry run releases nothing: every pin is named)
    assert "0 pins" in ds.tether("gc").stdout
