"""Hostile clones: helpers that build a dataset as an attacker would commit
it, clone it as a victim would, and run every tether command in the clone
under strace, asserting what the spec promises ("A clone is untrusted
input"): nothing is executed, no connection is attempted, nothing outside
the dataset (and the directories tether legitimately uses) is created,
written, renamed or deleted, nothing a committed link points at is even
opened, and each command fails with its documented exit code and one
error line. Every run has a timeout, so a hang fails instead of blocking.

How to add a clone case (any test file may import this module):

    from hostile import Sandbox, COMMANDS

    def test_my_clone(tmp_path):
        sb = Sandbox(tmp_path)
        a = sb.attacker()                  # a git repo holding a committed dataset
        secret = sb.trap_file("x")         # outside the dataset; must stay untouched
        a.symlink(".tether/cache", sb.trap)  # whatever the attack commits...
        a.commit("hostile")                # ... force-added and committed
        clone = sb.clone(a)                # `git clone`: links arrive as links
        sb.mkfifo(clone / "tether.toml")   # things git cannot carry: made in the checkout
        sb.run_all(clone, rc=3, message=r"\\.tether/cache is a symbolic link")

`run_all` runs every command in COMMANDS (or `commands=`, or COMMANDS plus
`extra=`), each expected to exit `rc` with one `tether: error:` line
matching `message`; `expect=` maps a command (its whole argument tuple, or
just its first word, "init") to its own (rc, message): rc None accepts any
exit, message None checks the exit code only. `cwd=` is the dataset's
directory when it is not the clone's top. Pass `may_write=[...]` for
further directories a case's commands may write in (the clone, HOME and
the clone's .git are always allowed), `programs={"jj"}` for executables
a case may run and `sockets=[path]` for local sockets they may connect to
(libc's user lookup asks nscd's); `leaks=False` skips the untraced second run of each
refusal (LeakSanitizer cannot run under strace) where another case already
covers the same refusal path. `sb.trace(argv, cwd)` returns a Trace for
checks of your own (`trace.violations(...)`).

Clones that need more than a committed file (a crafted git directory, a
crafted tree, a branch of the attacker's) build on `sb.attacker(ds_rel=)`,
`Attacker.commit`, `sb.clone(a, branches=[...])` (local branches of the
attacker's branches, as a victim who checked them out has) and the
helpers `free_port()` and `literal_tree()` below.
"""
import codecs
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conftest import TETHER_BIN, Repo, _new_repo, base_env, check_sanitizers, describe

STRACE = shutil.which("strace") or "/usr/bin/strace"
# How many refused commands of one clone run at once.
JOBS = int(os.environ.get("TETHER_HOSTILE_JOBS") or 4)
TRACED = "execve,connect,openat,open,creat,unlink,unlinkat,rmdir,rename,renameat,renameat2,mkdir,mkdirat,symlink,symlinkat,link,linkat"
TIMEOUT = 60

# Every tether command that takes a dataset, in a form that does real work.
COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("commit", "-m", "hostile"),
    ("commit", "-m", "hostile", "--dry-run"),
    ("diff",),
    ("diff", "HEAD", "--content"),
    ("log",),
    ("log", "code"),
    ("verify",),
    ("verify", "--all-history"),
    ("gc",),
    ("gc", "--no-dry-run"),
    ("new", "-b", "feature"),
    ("open", "code"),
    ("open", "code", "-r", "HEAD"),
    ("add", "extra", "extra.txt", "--kind", "file"),
    ("repair",),
    ("repair", "--all-history"),
    ("ops",),
    ("init",),
]

# Commands that never change the dataset, the repository or a store (a
# cache aside, which tether writes atomically for concurrent readers).
READ_ONLY = {"status", "diff", "log", "verify", "ops"}


def _together(item):
    """May this (cmd, rc, message) run beside others of its kind?"""
    cmd, want_rc, _ = item
    return bool(want_rc) or cmd[0] in READ_ONLY or cmd == ("gc",) or "--dry-run" in cmd or \
        (cmd[0] == "open" and "-r" in cmd)


WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")


def _split_args(s):
    """strace's argument list, split at top-level commas."""
    out, cur, depth, quote, esc = [], [], 0, False, False
    for ch in s:
        if quote:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quote = False
            continue
        if ch == '"':
            quote = True
        elif ch in "[{(<":
            depth += 1
        elif ch in "]})>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _string(arg):
    """A quoted strace string as text."""
    m = re.match(r'^"(.*)"(\.\.\.)?$', arg, re.S)
    if not m:
        return None
    return codecs.escape_decode(m.group(1).encode())[0].decode("utf-8", "surrogateescape")


def _fd_path(arg):
    """The path strace -y shows for a descriptor ("3</a/b>", "AT_FDCWD</c>")."""
    m = re.search(r"<(.*)>$", arg)
    return m.group(1) if m else None


def _real(path):
    """A path as the kernel would resolve it: its parent fully, its last
    component not (unlink, rename and mkdir do not follow it)."""
    p = Path(path)
    return Path(os.path.realpath(p.parent)) / p.name


@dataclass
class Event:
    pid: int
    call: str
    args: list
    ret: str

    @property
    def ok(self):
        return re.match(r"^\d", self.ret) is not None

    def _at(self, dir_arg, name_arg):
        name = _string(name_arg)
        if name is None:
            return None
        if name.startswith("/"):
            return name
        base = _fd_path(dir_arg)
        return os.path.join(base, name) if base else name

    def paths(self):
        """(what, path) this event touched, for a successful call: "read"
        or "write" for an open (path as the kernel resolved it), "change"
        for a create, delete or rename (each side)."""
        a, c = self.args, self.call
        if c in ("openat", "open", "creat"):
            flags = a[2] if c == "openat" else (a[1] if c == "open" else "O_CREAT|O_WRONLY")
            resolved = _fd_path(self.ret)
            name = self._at(a[0], a[1]) if c == "openat" else _string(a[0])
            path = resolved or (str(_real(name)) if name else None)
            kind = "write" if any(f in flags for f in WRITE_FLAGS) else "read"
            return [(kind, path)] if path else []
        if c in ("unlink", "rmdir", "mkdir"):
            return [("change", str(_real(_string(a[0]))))]
        if c in ("unlinkat", "mkdirat", "symlinkat"):
            d, n = (a[1], a[2]) if c == "symlinkat" else (a[0], a[1])
            return [("change", str(_real(self._at(d, n))))]
        if c == "symlink":
            return [("change", str(_real(_string(a[1]))))]
        if c in ("rename", "link"):
            return [("change", str(_real(_string(a[0])))), ("change", str(_real(_string(a[1]))))]
        if c in ("renameat", "renameat2", "linkat"):
            return [("change", str(_real(self._at(a[0], a[1])))),
                    ("change", str(_real(self._at(a[2], a[3]))))]
        return []


_SECCOMP = []


def _seccomp():
    """--seccomp-bpf when this strace has it: the traced process then stops
    only at the calls traced, not at every one (ASan makes many)."""
    if not _SECCOMP:
        ok = subprocess.run([STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-o", os.devnull,
                             "true"], capture_output=True).returncode == 0
        _SECCOMP.append(["--seccomp-bpf"] if ok else [])
    return _SECCOMP[0]


LINE = re.compile(r"^(\w+)\((.*)\)\s+=\s+(.*)$", re.S)


def parse_trace(prefix):
    """Every event of every process of one `strace -ff -o prefix` run."""
    events = []
    files = Path(prefix).parent.glob(Path(prefix).name + ".*")
    for f in sorted(files, key=lambda f: int(f.name.rsplit(".", 1)[1])):
        pid = int(f.name.rsplit(".", 1)[1])
        for line in f.read_text(errors="replace").splitlines():
            m = LINE.match(line)
            if m:
                events.append(Event(pid, m.group(1), _split_args(m.group(2)), m.group(3)))
    return events


def free_port():
    """A 127.0.0.1 port nothing listens on (bound, then closed): a remote
    there makes an attempted connection harmless but visible."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _under(path, roots):
    p = Path(path)
    return any(p == r or r in p.parents for r in roots)


@dataclass
class Trace:
    proc: subprocess.CompletedProcess
    events: list = field(default_factory=list)

    def violations(self, may_write, never_read, programs=(), sockets=()):
        """What this run did that a hostile clone must never make tether do
        (`sockets`: local socket paths a program allowed may connect to)."""
        bad = []
        # The first event of the first process is strace starting tether.
        execs = [e for e in self.events if e.call == "execve"]
        for e in execs[1 if self.events and self.events[0].call == "execve" else 0:]:
            prog = _string(e.args[0]) or "?"
            if Path(prog).name not in programs:
                bad.append(f"executed {prog}")
        for e in self.events:
            if e.call == "connect":
                if any(f'sun_path="{s}"' in e.args[1] for s in sockets if len(e.args) > 1):
                    continue
                bad.append(f"connect({', '.join(e.args[1:2])}) = {e.ret}")
                continue
            if not e.ok:
                continue
            for what, path in e.paths():
                if path is None:
                    continue
                if _under(path, never_read):
                    bad.append(f"{e.call} {what} {path} (a place a committed link points at)")
                elif what != "read" and not _under(path, may_write):
                    bad.append(f"{e.call} {what} {path} (outside the dataset)")
        return bad


class Attacker(Repo):
    """The attacker's repository: a dataset committed normally, then bent."""

    def symlink(self, rel, target):
        link = self.root / rel
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.is_dir():
            shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(str(target), link)
        return link

    def commit(self, message):
        self.git("add", "-A", "-f", ".")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def git_out(self, *args, data=None):
        """git with bytes in, its output's text out."""
        p = subprocess.run(["git", *map(str, args)], cwd=self.root, env=self.env, input=data,
                           capture_output=True, check=True)
        return p.stdout.decode().strip()

    def literal_tree(self, entries):
        """A tree object written as given, [(mode, name, sha)] in bytes, as
        only a crafted one can be (git mktree refuses a name with '/')."""
        raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
        return self.git_out("hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)


class Sandbox:
    """One test's world: a HOME, the victim's own code repository (an object
    the hostile dataset names), a bare `sink` a hostile remote would push to,
    and a trap directory outside every dataset whose files carry a marker
    that must never show up in tether's output."""

    def __init__(self, tmp_path):
        self.tmp = Path(tmp_path).resolve()
        self.home = self.tmp / "home"
        self.home.mkdir(exist_ok=True)
        # Untraced runs (building the clones, and run_all's second run of
        # each refusal) keep LeakSanitizer on; under ptrace it
        # cannot run, so traced runs turn only it off.
        self.plain_env = base_env(self.home)
        self.env = dict(self.plain_env)
        self.env["ASAN_OPTIONS"] = ":".join(filter(None, [self.env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
        self.marker = "TRAP-" + uuid.uuid4().hex
        self.trap = self.tmp / "trap"
        self.trap.mkdir()
        self.code = self._code_repo()
        self.sink = self.tmp / "sink.git"
        subprocess.run(["git", "init", "-q", "--bare", str(self.sink)], check=True, env=self.env)
        self._n = 0
        self._traces = itertools.count(1)  # next() is atomic: runs may be traced from threads

    def _code_repo(self):
        code = _new_repo(self.tmp, "code")
        code.write("main.py", "print('victim')\n")
        code.git_commit_all("victim code", "main.py")
        return code

    # -- building -------------------------------------------------------
    def trap_file(self, name, text=None):
        """A file outside the dataset; its bytes hold the marker."""
        path = self.trap / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else f"{self.marker}\n[x]\nkey = \"{self.marker}\"\n")
        return path

    def attacker(self, name="attacker", ds_rel="."):
        """A repository with a committed dataset (at ds_rel) naming the
        victim's code repository as object `code`, and a file `extra.txt`
        beside its tether.toml."""
        a = Attacker(self.tmp / name, self.home)
        a.root.mkdir()
        for args in (("init", "-q", "-b", "main"), ("config", "user.name", "Mallory"),
                     ("config", "user.email", "m@example.org"), ("config", "commit.gpgsign", "false")):
            a.git(*args)
        ds = a.root / ds_rel
        ds.mkdir(exist_ok=True)
        self._tether(ds, "init")
        self._tether(ds, "add", "code", str(self.code.root), "--kind", "git")
        a.write(f"{ds_rel}/extra.txt", "extra\n")
        a.git("add", "-A")
        a.git("commit", "-q", "-m", "dataset")
        self._tether(ds, "commit", "-m", "record code")
        return a

    def clone(self, attacker, name=None, branches=()):
        """The victim's clone: a plain `git clone`, committed symlinks and
        all, with the victim's identity, and a local branch for each of
        `branches` (as a victim who once checked them out has)."""
        self._n += 1
        dest = self.tmp / (name or f"clone{self._n}")
        subprocess.run(["git", "clone", "-q", str(attacker.root), str(dest)], check=True, env=self.env,
                       capture_output=True)
        for args in (("config", "user.name", "Victim"), ("config", "user.email", "v@example.org"),
                     ("config", "commit.gpgsign", "false"),
                     *(("branch", "-q", b, f"origin/{b}") for b in branches)):
            subprocess.run(["git", "-C", str(dest), *args], check=True, env=self.env)
        return dest

    def mkfifo(self, path):
        path = Path(path)
        if path.exists() or path.is_symlink():
            path.unlink()
        os.mkfifo(path)
        return path

    def mksocket(self, path):
        """A listening-less bound UNIX socket file (git cannot carry one)."""
        path = Path(path)
        if path.exists() or path.is_symlink():
            path.unlink()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        s.close()
        return path

    def _tether(self, cwd, *args):
        p = subprocess.run([TETHER_BIN, *args], cwd=str(cwd), env=self.plain_env, capture_output=True,
                           text=True, timeout=TIMEOUT)
        check_sanitizers(p)
        assert p.returncode == 0, describe(p)
        return p

    # -- running --------------------------------------------------------
    def snapshot(self, skip=()):
        """Every file of the trap, the victim's code repository and the
        sink (less those under skip), with its bytes, to compare after a
        run."""
        out = {}
        for base in (self.trap, self.code.root, self.sink):
            if _under(base, skip):
                continue
            for p in sorted(base.rglob("*")):
                if p.is_symlink():
                    out[p] = ("link", os.readlink(p))
                elif p.is_file():
                    out[p] = ("file", p.read_bytes())
                elif p.is_dir():
                    out[p] = ("dir", None)
                else:
                    out[p] = ("special", None)
        return out

    def trace(self, argv, cwd, timeout=TIMEOUT):
        """Run argv under strace (following every process and thread)."""
        prefix = self.tmp / "traces" / f"t{next(self._traces)}"
        prefix.parent.mkdir(exist_ok=True)
        full = [STRACE, "-f", "-ff", "-qq", "-y", *_seccomp(), "-e", f"trace={TRACED}", "-o", str(prefix), "--",
                *map(str, argv)]
        # A session of its own, so a hang is ended with everything it started
        # (strace and the traced tether both).
        proc = subprocess.Popen(full, cwd=str(cwd), env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                errors="replace", start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"{' '.join(map(str, argv))} in {cwd} hung (> {timeout} s)") from e
        p = subprocess.CompletedProcess(list(map(str, argv)), proc.returncode, out, err)
        return Trace(p, parse_trace(prefix))

    def run_all(self, clone, rc, message, commands=COMMANDS, expect=None, may_write=(), programs=(),
                cwd=None, extra=(), leaks=True, sockets=()):
        """Every command in the clone (run in cwd, default the clone's
        top): exit rc, one error line matching message, and none of the
        violations above. Returns {command tuple: Trace}.

        Commands expected to be refused (a non-zero exit) and commands
        that only read (READ_ONLY) change nothing a later command could
        see, so consecutive ones run together (JOBS at a time); any other,
        expected to succeed or with its exit left open, runs alone, in
        order, so every command sees what the writing ones before it did.
        Each run is traced on its own, so every check stays per command but
        the comparison of the files outside the dataset, which is per
        group. With `leaks` (the default), each refusal then runs once more
        untraced, with LeakSanitizer on, and must exit the same."""
        clone = Path(clone).resolve()
        cwd = Path(cwd).resolve() if cwd else clone
        allowed = [clone, self.home.resolve(), *[Path(os.path.realpath(p)) for p in may_write]]
        never = [self.trap.resolve()]
        before = self.snapshot(allowed)
        expect = expect or {}
        planned = []
        for cmd in [*commands, *extra]:
            cmd = tuple(map(str, cmd))
            want_rc, want_msg = expect.get(cmd, expect.get(cmd[0], (rc, message)))
            if want_rc is None:  # any exit, no message check (a benign control)
                want_msg = None
            planned.append((cmd, want_rc, want_msg))
        groups = []
        for item in planned:
            if groups and _together(item) and _together(groups[-1][-1]):
                groups[-1].append(item)
            else:
                groups.append([item])
        traces = {}
        with ThreadPoolExecutor(max_workers=JOBS) as pool:
            for group in groups:
                runs = list(pool.map(lambda item: self.trace([TETHER_BIN, *item[0]], cwd), group))
                after = self.snapshot(allowed)
                changed = sorted(str(k) for k in set(before) | set(after) if before.get(k) != after.get(k))
                for (cmd, want_rc, want_msg), t in zip(group, runs):
                    self._check(cmd, t, want_rc, want_msg, allowed, never, programs,
                                changed, [" ".join(c) for c, _, _ in group], sockets)
                    traces[cmd] = t
                # A refusal runs again untraced, for LeakSanitizer: an error
                # path is where a leak hides, and a refusal changed nothing.
                refused = [(cmd, t) for (cmd, want_rc, _), t in zip(group, runs) if want_rc and leaks]
                for (cmd, t), again in zip(refused, pool.map(lambda r: self._plain(r[0], cwd), refused)):
                    assert again.returncode == t.proc.returncode, \
                        f"{' '.join(cmd)}: exit {t.proc.returncode} traced, {again.returncode} untraced{describe(again)}"
        return traces

    def _plain(self, cmd, cwd):
        p = subprocess.run([TETHER_BIN, *cmd], cwd=str(cwd), env=self.plain_env, capture_output=True, text=True,
                           errors="replace", stdin=subprocess.DEVNULL, timeout=TIMEOUT)
        check_sanitizers(p)
        return p

    def _check(self, cmd, t, want_rc, want_msg, allowed, never, programs, changed, group, sockets=()):
        p = t.proc
        check_sanitizers(p)
        where = describe(p)
        # What it did first, so a failure names the worst of it.
        bad = t.violations(allowed, never, programs, sockets)
        assert not bad, f"{' '.join(cmd)}:\n  " + "\n  ".join(bad) + where
        assert not changed, f"{' or '.join(group)} changed files outside the dataset: {changed}{where}"
        assert want_rc is None or p.returncode == want_rc, f"expected exit {want_rc}:{where}"
        assert p.returncode >= 0, f"killed by a signal:{where}"
        assert self.marker not in p.stdout + p.stderr, f"trap content in the output:{where}"
        if want_rc and want_msg is not None:
            errors = [ln for ln in p.stderr.splitlines() if ln.startswith("tether: error:")]
            others = [ln for ln in p.stderr.splitlines()
                      if ln and not ln.startswith(("tether: error:", "hint:"))]
            assert len(errors) == 1 and not others, f"want one error line:{where}"
            assert re.search(want_msg, errors[0]), f"message should match {want_msg!r}:{where}"
