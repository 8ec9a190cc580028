"""Hostile clones aimed at the VCS layer: what a clone commits must not
choose a repository's configuration (its remotes), switch a git checkout to
jj, or smuggle keys, refs and paths past the readers of history.

Each test builds the clone the way an attacker would: an "author"
repository with the trap committed, then a plain `git clone` of it, which is
what the victim runs tether in. Commands that could reach the network or run
something are run under `strace -f -e trace=connect,execve`: the log must
show no connection to an internet address and no program started besides
tether itself. Remotes point at 127.0.0.1 ports nobody listens on, so a
connection attempt is harmless but visible.

These helpers are local on purpose; they can move onto the shared hostile
harness (tests/e2e/hostile.py) once it lands: `traced()` is its
run-under-strace, `assert_quiet()` its "nothing ran, nothing connected".
"""
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import TETHER_BIN, Repo, _new_repo, check_sanitizers, describe

STRACE = shutil.which("strace")
JJ = shutil.which("jj")


# ---------------------------------------------------------------------------
# Tracing
# ---------------------------------------------------------------------------

def traced(repo, *args, cwd=None, tmp):
    """tether under strace; the CompletedProcess and the trace's lines."""
    assert STRACE, "strace is needed for the hostile-clone tests"
    log = Path(tmp) / f"strace.{os.getpid()}.{len(list(Path(tmp).glob('strace.*')))}"
    argv = [STRACE, "-f", "-qq", "-e", "trace=connect,execve", "-o", str(log), TETHER_BIN,
            *map(str, args)]
    # LeakSanitizer cannot run under ptrace; the untraced runs check leaks.
    env = dict(repo.env)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    p = subprocess.run(argv, cwd=str(cwd or repo.root), env=env, capture_output=True, text=True,
                       encoding="utf-8", errors="replace", timeout=120)
    check_sanitizers(p)
    lines = log.read_text().splitlines()
    log.unlink()
    return p, lines


def assert_quiet(p, lines):
    """Nothing but tether was executed and nothing connected to the network."""
    execs = [l for l in lines if re.search(r"\bexecve\(", l)]
    assert len(execs) == 1 and TETHER_BIN in execs[0], f"programs started: {execs[1:4]}{describe(p)}"
    inet = [l for l in lines if "connect(" in l and ("AF_INET" in l or "AF_INET6" in l)]
    assert inet == [], f"connections attempted: {inet}{describe(p)}"


def free_port():
    """A 127.0.0.1 port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clone_of(author, tmp_path, name="victim"):
    """What the victim gets: `git clone` of the author's repository."""
    dest = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(author.root), str(dest)], env=author.env, check=True,
                   capture_output=True)
    victim = Repo(dest, author.home)
    victim.git("config", "user.name", "Victim")
    victim.git("config", "user.email", "victim@example.org")
    return victim


# ---------------------------------------------------------------------------
# 11. A committed git directory must not choose the endpoint
# ---------------------------------------------------------------------------

def committed_git_dir(author, code, rel, worktree, remotes):
    """Commit, at `rel` in the author's repository, a copy of `code`'s git
    directory under another name than .git, configured as a clone would:
    not bare, a work tree elsewhere, and remotes of its choosing."""
    dest = author.root / rel
    shutil.copytree(code.root / ".git", dest)
    cfg = dest / "config"
    for key, value in [("core.bare", "false"), ("core.worktree", str(worktree)), *remotes]:
        subprocess.run(["git", "config", "--file", str(cfg), key, value], check=True)
    # git keeps empty directories out; libgit2 wants refs/ and objects/.
    (dest / "refs" / "tags" / ".keep").write_text("")
    author.git("add", "-f", "--", rel)


@pytest.mark.parametrize("layout", ["in-dataset", "beside-dataset"])
def test_committed_git_dir_chooses_no_endpoint(new_repo, tmp_path, layout):
    code = new_repo("code")
    code.write("main.py", "print('hi')\n")
    code.git_commit_all("c1", "main.py")
    worktree = tmp_path / "elsewhere"
    worktree.mkdir()
    subprocess.run(["cp", "-a", str(code.root / "main.py"), str(worktree)], check=True)
    ports = {name: free_port() for name in ("ssh", "http", "git")}
    remotes = [
        ("remote.origin.url", f"ssh://git@127.0.0.1:{ports['ssh']}/x.git"),
        ("remote.web.url", f"http://127.0.0.1:{ports['http']}/x.git"),
        ("remote.daemon.url", f"git://127.0.0.1:{ports['git']}/x.git"),
    ]

    author = new_repo("author")
    ds_rel = "." if layout == "in-dataset" else "data"
    ds_dir = author.root / ds_rel
    ds_dir.mkdir(exist_ok=True)
    author.tether("init", cwd=ds_dir)
    committed_git_dir(author, code, "evil", worktree, remotes)
    # Named through /proc/self/cwd: tether's cwd is the dataset root.
    path = "/proc/self/cwd/evil" if ds_rel == "." else "/proc/self/cwd/../evil"
    # Recorded, so that verify and the history walks open it too; and a
    # stray pin tag no manifest names, which gc would delete on the remote.
    sha = code.head()
    ds8 = author.dataset_id(ds_rel)[:8]
    (author.root / "evil" / "refs" / "tags" / f"tether.{ds8}.0000000000000000").write_text(sha + "\n")
    for n, (key, remote) in enumerate((("a", "origin"), ("b", "web"), ("c", "daemon"))):
        pin = f"{ds8}.{n:016x}"
        (author.root / "evil" / "refs" / "tags" / f"tether.{pin}").write_text(sha + "\n")
        author.write(f"{ds_rel}/.tether/objects/{key}.toml",
                     f'kind = "git"\npin = "{pin}"\nrecoverable = true\n\n'
                     f'[locator]\nallow_dirty = true\npath = "{path}"\nref = "HEAD"\n'
                     f'remote = "{remote}"\n\n[pin_ref]\npin = "{pin}"\nsha = "{sha}"\n'
                     f'tag = "tether.{pin}"\n\n[policy]\npin = "native"\nwrite = "fork"\n\n'
                     f'[state]\nsha = "{sha}"\n')
    author.git("add", "-A")
    author.git("commit", "-q", "-m", "a dataset with a present")

    victim = clone_of(author, tmp_path)
    vds = victim.root / ds_rel
    refs_before = sorted(p.name for p in (victim.root / "evil" / "refs" / "tags").iterdir())
    head = victim.head()
    for args in (("status",), ("status", "--json"), ("commit", "-m", "x"), ("verify",),
                 ("verify", "--all-history"), ("gc",), ("gc", "--no-dry-run"), ("diff", "HEAD", "--content"),
                 ("open", "a"), ("new", "-b", "feat"), ("log", "a")):
        p, lines = traced(victim, *args, cwd=vds, tmp=tmp_path)
        assert_quiet(p, lines)
        if args[0] in ("commit", "verify", "open") or args[-1] == "--no-dry-run":
            assert p.returncode == 3, describe(p)
            out = p.stderr + p.stdout
            assert "inside one another" in out or "committed content" in out, describe(p)
    assert victim.head() == head
    assert sorted(p.name for p in (victim.root / "evil" / "refs" / "tags").iterdir()) == refs_before


def test_a_committed_git_dir_outside_the_dataset_checkout_is_refused(new_repo, tmp_path):
    """The git directory lives in another clone (not the dataset's), where
    it is committed content: its config is that clone's choice too."""
    code = new_repo("code")
    code.write("main.py", "x\n")
    code.git_commit_all("c1", "main.py")
    other = new_repo("other")
    port = free_port()
    committed_git_dir(other, code, "inner", code.root,
                      [("remote.origin.url", f"git://127.0.0.1:{port}/x.git")])
    other.git("commit", "-q", "-m", "carry a git dir")
    theirs = clone_of(other, tmp_path, "theirs")

    ds = new_repo("ds")
    ds.tether("init")
    p = ds.tether("add", "code", theirs.root / "inner", "--kind", "git", "--option", "remote=origin",
                  "--option", "allow_dirty=true", check_rc=2)
    assert "committed content" in p.stderr, describe(p)
    # And a manifest naming it (a clone's) is refused at every use.
    ds.write(".tether/objects/code.toml",
             f'kind = "git"\n\n[locator]\nallow_dirty = true\npath = "{theirs.root / "inner"}"\n'
             'ref = "HEAD"\nremote = "origin"\n\n[policy]\npin = "native"\nwrite = "fork"\n')
    p, lines = traced(ds, "commit", "-m", "x", tmp=tmp_path)
    assert_quiet(p, lines)
    assert p.returncode == 3 and "committed content" in p.stderr, describe(p)


def test_a_symlinked_locator_is_resolved_before_the_checks(new_repo, tmp_path):
    """A path through a symbolic link into the dataset's checkout is the
    checkout: refused, whatever the spelling."""
    ds = new_repo("ds")
    ds.tether("init")
    inner = ds.root / "vendored"
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    (tmp_path / "link").symlink_to(inner)
    p = ds.tether("add", "code", tmp_path / "link", "--kind", "git", check_rc=2)
    assert "inside one another" in p.stderr, describe(p)


# ---------------------------------------------------------------------------
# 12. A committed .jj must not switch a git clone to jj
# ---------------------------------------------------------------------------

def fake_jj_dir(where, git_target):
    """The files jj reads to find its repository: a .jj whose store is a
    git directory of its author's choice."""
    store = Path(where) / ".jj" / "repo" / "store"
    store.mkdir(parents=True)
    (store / "type").write_text("git")
    (store / "git_target").write_text(str(git_target))
    (Path(where) / ".jj" / "working_copy").mkdir()
    (Path(where) / ".jj" / "working_copy" / "type").write_text("local")


@pytest.mark.parametrize("level", ["colocated", "in-dataset"])
def test_a_committed_dotjj_does_not_make_a_git_clone_jj(new_repo, tmp_path, level):
    trap = tmp_path / "trap.git"
    subprocess.run(["git", "init", "-q", "--bare", str(trap)], check=True)
    author = new_repo("author")
    ds_rel = "." if level == "colocated" else "data"
    (author.root / ds_rel).mkdir(exist_ok=True)
    author.tether("init", cwd=author.root / ds_rel)
    author.write(f"{ds_rel}/f.txt", "one\n")
    author.tether("add", "f", "f.txt", "--kind", "file", "--file", "mutable", cwd=author.root / ds_rel)
    author.tether("commit", "-m", "one", cwd=author.root / ds_rel)
    fake_jj_dir(author.root / ds_rel, trap)
    author.git("add", "-f", "--", f"{ds_rel}/.jj")
    author.git("commit", "-q", "-m", "a present")

    victim = clone_of(author, tmp_path)
    vds = victim.root / ds_rel
    (author.root / ds_rel / "f.txt").write_text("two\n")  # the file the manifest names
    jj_before = sorted(str(p.relative_to(vds)) for p in (vds / ".jj").rglob("*"))
    for args in (("status",), ("status", "--json"), ("log",), ("diff", "HEAD"), ("commit", "-m", "two"),
                 ("verify", "--all-history"), ("gc",), ("new", "-b", "feat")):
        p, lines = traced(victim, *args, cwd=vds, tmp=tmp_path)
        assert_quiet(p, lines)
        assert p.returncode == 0, describe(p)
    # git committed it, and tether's shared state is in .git, not in .jj.
    assert victim.commit_files("main") == [str(Path(ds_rel) / ".tether/objects/f.toml")]
    assert (victim.root / ".git" / "tether.lock").exists()
    assert sorted(str(p.relative_to(vds)) for p in (vds / ".jj").rglob("*")) == jj_before
    assert os.listdir(trap / "refs" / "heads") == []


def test_a_dotjj_that_disagrees_with_dotgit_is_refused(new_repo, tmp_path):
    """Untracked, beside .git, but naming another git directory as its
    store: not the repository this checkout is."""
    other = tmp_path / "other.git"
    subprocess.run(["git", "init", "-q", "--bare", str(other)], check=True)
    ds = new_repo("ds")
    ds.tether("init")
    fake_jj_dir(ds.root, other)
    with open(ds.root / ".git" / "info" / "exclude", "a") as f:
        f.write("/.jj/\n")
    p, lines = traced(ds, "log", tmp=tmp_path)
    assert_quiet(p, lines)
    assert p.returncode == 3 and "disagrees with .git" in p.stderr, describe(p)


def test_a_committed_git_dir_is_not_the_datasets_repository(new_repo, tmp_path):
    """A committed directory that is a git directory (HEAD, objects, refs,
    config with a work tree) holding a dataset: git's discovery would open
    it, and tether.lock and the journal would go inside committed content."""
    author = new_repo("author")
    author.write("README", "x\n")
    author.git_commit_all("c1", "README")
    sub = author.root / "sub"
    shutil.copytree(author.root / ".git", sub)
    subprocess.run(["git", "config", "--file", str(sub / "config"), "core.worktree", ".."], check=True)
    (sub / "refs" / "tags" / ".keep").write_text("")
    author.tether("init", cwd=author.root)  # a tether.toml to copy
    shutil.copy(author.root / "tether.toml", sub / "tether.toml")
    author.git("add", "-f", "--", "sub")
    author.git("commit", "-q", "-m", "a present")

    victim = clone_of(author, tmp_path)
    for args in (("log",), ("commit", "-m", "x"), ("gc",)):
        p, lines = traced(victim, *args, cwd=victim.root / "sub", tmp=tmp_path)
        assert_quiet(p, lines)
        assert p.returncode == 3 and "shared directory" in p.stderr, describe(p)
    assert not (victim.root / "sub" / "tether.lock").exists()
    assert not (victim.root / "sub" / "tether").exists()


# ---------------------------------------------------------------------------
# 13. Keys, refs and strings from history are validated by every reader
# ---------------------------------------------------------------------------

def git_bytes(repo, *args, data=None):
    p = subprocess.run(["git", *args], cwd=repo.root, env=repo.env, input=data, capture_output=True, check=True)
    return p.stdout.decode().strip()


def literal_tree(repo, entries):
    """A tree object written as given, as only a crafted one can be
    (git mktree refuses a name with '/')."""
    raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    return git_bytes(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)


def test_a_tree_entry_climbing_out_of_the_dataset_is_refused_by_every_reader(new_repo, tmp_path):
    ds = new_repo("ds")
    ds.tether("init")
    ds.write("f.txt", "one\n")
    ds.tether("add", "f", "f.txt", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "one")
    trap = tmp_path / "trap"
    trap.mkdir()
    (trap / "sentinel").write_text("untouched\n")

    # Branch `evil`: a commit whose .tether/objects holds the entry
    # "../../../trap/EVIL.toml", i.e. tmp_path/trap/EVIL.toml seen from the
    # dataset's objects directory.
    blob = git_bytes(ds, "hash-object", "-w", "--stdin", data=ds.manifest_path("f").read_bytes())
    objects = literal_tree(ds, [(b"100644", b"../../../trap/EVIL.toml", blob)])
    dot_tether = literal_tree(ds, [(b"40000", b"objects", objects)])
    config = git_bytes(ds, "rev-parse", "HEAD:tether.toml")
    root = literal_tree(ds, [(b"40000", b".tether", dot_tether), (b"100644", b"tether.toml", config)])
    commit = git_bytes(ds, "commit-tree", root, "-p", "HEAD", "-m", "evil")
    ds.git("branch", "evil", commit)

    for args in (("verify", "--all-history"), ("gc",), ("gc", "--no-dry-run"), ("diff", "HEAD", "evil")):
        p = ds.tether(*args, check_rc=None)
        assert p.returncode == 1, describe(p)
        assert "malformed tree" in p.stderr or "not a valid object key" in p.stderr, describe(p)
    assert sorted(os.listdir(trap)) == ["sentinel"]


def test_a_string_with_a_nul_byte_is_refused(new_repo, tmp_path):
    code = new_repo("code")
    code.write("main.py", "x\n")
    code.git_commit_all("c1", "main.py")
    ds = new_repo("ds")
    ds.tether("init")
    ds.write(".tether/objects/code.toml",
             f'kind = "git"\n\n[locator]\npath = "{code.root}"\nref = "HEAD\\u0000x"\n\n'
             '[policy]\npin = "native"\nwrite = "fork"\n')
    for args in (("status",), ("commit", "-m", "x"), ("verify",)):
        p = ds.tether(*args, check_rc=1)
        assert "NUL" in p.stderr and "locator.ref" in p.stderr and "code.toml" in p.stderr, describe(p)
    assert ds.head() is None

    # The same in a committed manifest met only by the history walk.
    ds.manifest_path("code").unlink()
    ds.write("f.txt", "one\n")
    ds.tether("add", "f", "f.txt", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "one")
    ds.git("checkout", "-q", "-b", "side")
    ds.write(".tether/objects/g.toml", 'kind = "file"\n\n[locator]\nuri = "/tmp/x\\u0000y"\n')
    ds.git_commit_all("nul", ".tether/objects/g.toml")
    ds.git("checkout", "-q", "main")
    for args in (("verify", "--all-history"), ("gc",)):
        p = ds.tether(*args, check_rc=1)
        assert "NUL" in p.stderr and "locator.uri" in p.stderr, describe(p)

    # workspace.toml and tether.toml are read the same way.
    ds.write(".tether/workspace.toml", 'workspace_id = "abcd1234"\n\n[working."../x"]\nbranch = "b"\n')
    p = ds.tether("new", "-b", "feat", check_rc=1)
    assert "not named by a valid object key" in p.stderr, describe(p)
    ds.p(".tether/workspace.toml").unlink()
    cfg = ds.p("tether.toml").read_text()
    ds.write("tether.toml", cfg.replace('write = "fork"', 'write = "fork\\u0000x"'))
    q = ds.tether("status", check_rc=1)
    assert "NUL" in q.stderr and "defaults.write" in q.stderr, describe(q)

    # secrets.toml is the user's own file, but a URL or token in it becomes a
    # C string too.
    ds.write("tether.toml", cfg)
    ds.write(".tether/secrets.toml", '[objects."f"]\nremote = "ssh://x\\u0000y"\n')
    q = ds.tether("commit", "-m", "s", check_rc=1)
    assert "NUL" in q.stderr and "secrets.toml" in q.stderr and "remote" in q.stderr, describe(q)
