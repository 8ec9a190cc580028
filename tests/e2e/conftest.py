"""End-to-end tests: the built `tether` run as a user runs it, in real git
repositories made fresh for every test.

The binary is $TETHER_BIN (default: <repo>/build/tether). Every run is
checked for sanitizer reports, so the same suite doubles as the ASan/UBSan
run when TETHER_BIN points at a sanitizer build.

Fixtures:
  repo      a fresh git repository (`git init -b main`, identity configured
            in the repository), no dataset yet; a Repo (see below)
  new_repo  a factory for more repositories in the same test
  ds        `repo` after `tether init`
  plates    `ds` with a mutable directory and an immutable file registered
  run       tether in any directory (one that is not a repository, say)
  s3_server a real S3 server on 127.0.0.1, once per kind (SeaweedFS, moto);
            seaweedfs_server and moto_server for one of them (s3servers.py)
  gcs_server fake-gcs-server on 127.0.0.1, once per session (gcsserver.py)
  azurite_server  Azurite's blob service on 127.0.0.1 (azureserver.py)
  postgres_server, mariadb_server  Postgres 15 and MariaDB on 127.0.0.1,
            once per session, passwords enforced (dbservers.py)

`make check` runs the suite on two pytest-xdist workers (Makefile:
E2E_WORKERS, `--dist loadgroup`): each worker is a pytest session of its
own, so a session fixture runs once per worker, under the worker's own
basetemp, with its servers on ports the OS chooses. Nothing may be shared
between tests but through fixtures; tests that must share a worker would
carry one `xdist_group` mark (none does).

Every run gets a private HOME, no GIT_* variables from outside, NO_COLOR and
TZ=UTC. The helpers below compute what tether should record (states,
listings, pin ids) independently, with hashlib and json.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

# The S3 test servers (SeaweedFS, moto): session fixtures, each started only
# when a test asks for it (tests/e2e/s3servers.py).
from s3servers import moto_server, s3_server, seaweedfs_server  # noqa: F401
# fake-gcs-server, for the GCS store's tests (tests/e2e/gcsserver.py).
from gcsserver import gcs_server  # noqa: F401
# Azurite (Azure Blob), likewise (tests/e2e/azureserver.py).
from azureserver import azurite_server  # noqa: F401
# Postgres and MariaDB, for the catalogs and databases of the table and
# database backends (tests/e2e/dbservers.py).
from dbservers import mariadb_server, postgres_server  # noqa: F401
# The fake lakeFS API (tests/e2e/lakefsfake.py): lakeFS itself is not served here.
from lakefsfake import lakefs_server  # noqa: F401
# The Dolt backend's real server (tests/e2e/doltserver.py), started when a
# test asks for it.
from doltserver import dolt_server  # noqa: F401
# The Iceberg project's REST catalog server (tests/e2e/icebergrest.py).
from icebergrest import _iceberg_rest_classes, iceberg_rest_server, rest_proxy, start_iceberg_rest  # noqa: F401
# The fake Neon control plane over real Postgres clusters (tests/e2e/neonfake.py).
from neonfake import neon_server  # noqa: F401

SOURCE_ROOT = Path(__file__).resolve().parents[2]
TETHER_BIN = os.environ.get("TETHER_BIN") or str(SOURCE_ROOT / "build" / "tether")

AUTHOR_NAME = "Ada Lovelace"
AUTHOR_EMAIL = "ada@example.org"

# Any of these on stderr is a memory or undefined-behaviour bug in tether,
# whatever the exit code says.
SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "SUMMARY: UndefinedBehaviorSanitizer",
)

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


# `make check` sets TETHER_REQUIRE_TOOLS=1: there, a test skipped for want
# of a tool (jj, strace, a venv, a helper binary) fails instead, so a green
# run always ran everything. Only these skips stay skips: what no tool
# install can change.
# (A lifecycle check a kind's declared tier leaves out, test_lifecycle.py's
# "not applicable: kind K does not declare ...", is such a skip too.)
# And a check an adapter says its system itself cannot do (test_lifecycle.py's
# "not possible: K cannot: why", from the adapter's reviewed `cannot`).
ALLOWED_SKIPS = ("making a device needs root", "not applicable: kind ", "not possible: ",
                 # lifecycle_adapters.NO_DOLT_TAG: no Dolt with DOLT_TAG runs here
                 "the one Dolt that runs here, has no DOLT_TAG")


def _skip_is_allowed(report):
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return any(a in reason for a in ALLOWED_SKIPS)


def _fail_skip(report, where):
    if os.environ.get("TETHER_REQUIRE_TOOLS") == "1" and report.skipped and not _skip_is_allowed(report):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{where} skipped under TETHER_REQUIRE_TOOLS=1 ({reason}): run scripts/install-deps"


def _outside_its_scope(item):
    """A lifecycle check an adapter does not run: its `suites` (test modules)
    or `vcs_kinds` leave it out (lifecycle_adapters.py). Such a check is not
    collected at all, rather than skipped, so TETHER_REQUIRE_TOOLS=1 still
    fails every skip that is a missing tool."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for adapter in params.values():
        if not (hasattr(adapter, "suites") and hasattr(adapter, "vcs_kinds")):
            continue
        if adapter.suites is not None and item.module.__name__ not in adapter.suites:
            return True
        vcs = params.get("vcs", "git")
        if adapter.vcs_kinds is not None and vcs not in adapter.vcs_kinds:
            return True
    return False


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        (dropped if _outside_its_scope(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip(outcome.get_result(), collector.nodeid)


def pytest_sessionstart(session):
    if not os.access(TETHER_BIN, os.X_OK):
        raise pytest.UsageError(
            f"tether binary not found or not executable: {TETHER_BIN} "
            "(build it, or set TETHER_BIN)"
        )


def describe(p):
    """A failed run, for assertion messages."""
    return (
        f"\n$ {' '.join(map(str, p.args))}\nexit {p.returncode}\n"
        f"--- stdout ---\n{p.stdout}--- stderr ---\n{p.stderr}"
    )


def check_sanitizers(p):
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, f"sanitizer report ({marker!r}):{describe(p)}"


def stopped(pid, timeout=30.0):
    """Wait until process pid has stopped itself (state T)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return True
        time.sleep(0.02)
    return False


def run_stopped(ds, args, fault, race):
    """tether ARGS in ds stopped at the fault point `fault` (a TETHER_FAULT
    ending in :stop), race() run meanwhile, then continued. Returns the
    finished run, checked for sanitizer reports, and what race() returned."""
    env = dict(ds.env, TETHER_FAULT=fault)
    proc = subprocess.Popen([TETHER_BIN, *args], cwd=str(ds.root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert stopped(proc.pid), f"tether did not stop at {fault}"
        raced = race()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    check_sanitizers(p)
    return p, raced


def ops(ds):
    """The journal's entries, as `tether ops --json` lists them."""
    return ds.tj("ops")["ops"]


def base_env(home):
    """The environment every tether and git run gets: no inherited GIT_*
    variables, a private HOME (no user or system git config), no colour, a
    fixed time zone so that dates can be compared exactly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(Path(home) / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
        TZ="UTC",
        LC_ALL="C.UTF-8",
    )
    env.pop("TETHER_LOCK_TIMEOUT_MS", None)
    # A sanitizer build's leak check at exit crashes ("Tracer caught signal
    # 11", exit 1, no report) when a dynamic TLS block happens to start 16
    # bytes into a page: the runtime up to GCC 13 (Debian's is 12) takes it
    # for a glibc 2.19 block and reads a bogus range before it. Modules that
    # pull in TLS-using libraries (gnutls, p11-kit, com_err through libcurl
    # and libpq) make that likely in some commands. Not intercepting
    # __tls_get_addr avoids it; the blocks stay reachable (and scanned)
    # through the thread's DTV. A no-op for a build without sanitizers.
    opts = env.get("ASAN_OPTIONS", "")
    if "intercept_tls_get_addr" not in opts:
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "intercept_tls_get_addr=0"
    return env


def run_tether(args, cwd, env, check_rc=0, extra_env=None):
    """Run tether; assert no sanitizer report and (unless check_rc is None)
    the exit code. Returns the CompletedProcess."""
    e = dict(env)
    if extra_env:
        e.update(extra_env)
    argv = [TETHER_BIN] + [a if isinstance(a, bytes) else str(a) for a in args]
    p = subprocess.run(
        argv,
        cwd=str(cwd),
        env=e,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=120,
    )
    check_sanitizers(p)
    if check_rc is not None:
        assert p.returncode == check_rc, f"expected exit {check_rc}:{describe(p)}"
    return p


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    return sha256_bytes(Path(path).read_bytes())


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t"}


def _cjson_string(s):
    """A string as jansson writes it: UTF-8 as it is, the short escapes,
    other control characters as \\u00XX (upper-case hex). A name that is
    not valid UTF-8 reaches Python as str with lone surrogates
    (surrogateescape: byte 0xXX is U+DCXX) and tether writes each as
    \\uDCXX (scan.h), which no valid name can spell."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif o < 0x20:
            out.append(f"\\u{o:04X}")
        elif 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\u{o:04X}")
        elif 0xD800 <= o <= 0xDFFF:
            raise ValueError(f"not a name's character: U+{o:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def cjson(value):
    """tether's canonical JSON (jansson compact, sorted keys, UTF-8): what
    json.dumps(sort_keys, compact, ensure_ascii=False) writes, but with
    jansson's upper-case \\u00XX and names that are not UTF-8 spelled as
    tether spells them."""
    if isinstance(value, str):
        return _cjson_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(_cjson_string(k) + ":" + cjson(v) for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(cjson(v) for v in value) + "]"
    return json.dumps(value)


def expected_pin(dataset_id, kind, identity, state):
    """pin id = <dataset8>.<first 16 hex of sha256(cjson({identity, kind, state}))>
    (docs/ARCHITECTURE.md, Data model)."""
    doc = {"identity": identity, "kind": kind, "state": state}
    return dataset_id[:8] + "." + sha256_bytes(cjson(doc).encode())[:16]


def listing_entries(root):
    """(path, token, size) for every entry of a directory as tether lists it:
    regular files (and symlinks to files, read through) by sha256 and size;
    a symlink to a directory or a dangling one by "symlink:<target>", size 0.
    Sorted by the bytes of the path."""
    root = Path(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in list(dirnames):
            full = Path(dirpath) / name
            if full.is_symlink():
                dirnames.remove(name)
                out.append((full.relative_to(root).as_posix(), "symlink:" + os.readlink(full), 0))
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink() and not full.exists():
                out.append((rel, "symlink:" + os.readlink(full), 0))
            else:
                data = full.read_bytes()
                out.append((rel, sha256_bytes(data), len(data)))
    out.sort(key=lambda e: os.fsencode(e[0]))
    return out


def expected_listing(root):
    """The listing file's exact bytes: one canonical JSON line per entry."""
    return "".join(
        cjson({"k": k, "p": p, "s": s}) + "\n" for p, k, s in listing_entries(root)
    ).encode("utf-8")


def expected_dir_state(root):
    entries = listing_entries(root)
    return {
        "type": "dir",
        "count": len(entries),
        "size": sum(s for _, _, s in entries),
        "digest": sha256_bytes(expected_listing(root)),
    }


def expected_file_state(path):
    data = Path(path).read_bytes()
    return {"type": "file", "size": len(data), "sha256": sha256_bytes(data)}


class Repo:
    """A git repository in a temporary directory, with helpers to run tether
    and git in it and to look at what they left behind."""

    def __init__(self, root, home):
        self.root = Path(root).resolve()
        self.home = Path(home)
        self.env = base_env(home)

    # -- running things ---------------------------------------------------
    def tether(self, *args, cwd=None, check_rc=0, env=None):
        return run_tether(args, cwd or self.root, self.env, check_rc, env)

    def tj(self, *args, cwd=None, check_rc=0, env=None):
        """tether ... --json, parsed."""
        p = self.tether(*args, "--json", cwd=cwd, check_rc=check_rc, env=env)
        try:
            return json.loads(p.stdout)
        except json.JSONDecodeError as e:  # pragma: no cover - a failure message
            raise AssertionError(f"stdout is not JSON ({e}):{describe(p)}")

    def git(self, *args, cwd=None, check=True, env=None):
        p = subprocess.run(
            ["git", *map(str, args)],
            cwd=str(cwd or self.root),
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        if check:
            assert p.returncode == 0, f"git failed:{describe(p)}"
        return p.stdout

    def head(self):
        """HEAD's commit id, or None before the first commit."""
        p = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"],
            cwd=str(self.root),
            env=self.env,
            capture_output=True,
            text=True,
        )
        return p.stdout.strip() if p.returncode == 0 else None

    def commit_count(self):
        if self.head() is None:
            return 0
        return int(self.git("rev-list", "--count", "HEAD").strip())

    def commit_files(self, rev="HEAD"):
        """The paths a commit touched, as git lists them."""
        out = self.git("show", "--name-only", "--format=", "--no-renames", rev)
        return sorted(line for line in out.splitlines() if line)

    def git_commit_all(self, message, *paths, env=None):
        """A plain git commit of some files (not through tether)."""
        self.git("add", "--", *paths)
        self.git("commit", "-q", "-m", message, env=env)
        return self.head()

    # -- files ------------------------------------------------------------
    def p(self, rel):
        return self.root / rel

    def write(self, rel, data):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        return path

    def dataset_id(self, ds_rel="."):
        cfg = tomllib.loads((self.root / ds_rel / "tether.toml").read_text())
        return cfg["dataset"]["id"]

    def manifest_path(self, key, ds_rel="."):
        return self.root / ds_rel / ".tether" / "objects" / f"{key}.toml"

    def manifest(self, key, ds_rel="."):
        return tomllib.loads(self.manifest_path(key, ds_rel).read_text())

    def manifest_at(self, rev, key):
        return tomllib.loads(self.git("show", f"{rev}:.tether/objects/{key}.toml"))

    def listing_path(self, hexdigest, ds_rel="."):
        return self.root / ds_rel / ".tether" / "listings" / f"{hexdigest}.jsonl"

    def tree(self, rel=".tether", skip=("cache", "lock")):
        """Every file under rel (relative path -> bytes), leaving out the
        per-checkout files a read-only command may touch. Directories are
        not listed: git does not see an empty one."""
        base = self.root / rel
        out = {}
        if not base.exists():
            return out
        for path in sorted(base.rglob("*")):
            r = path.relative_to(base).as_posix()
            if r.split("/")[0] in skip:
                continue
            if not path.is_dir():
                out[r] = path.read_bytes()
        return out

    def objects_files(self):
        base = self.root / ".tether" / "objects"
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*"))

    def git_state(self):
        """What a user sees of the repository besides HEAD: staged and
        unstaged diffs, and the porcelain status."""
        return (
            self.git("diff", "--cached", "--binary"),
            self.git("diff", "--binary"),
            self.git("status", "--porcelain", "--untracked-files=all"),
        )


def dated(seconds):
    """Environment fixing a commit's author and committer time, for git and
    tether alike (both read GIT_AUTHOR_DATE / GIT_COMMITTER_DATE)."""
    stamp = f"{seconds} +0000"
    return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}


def _new_repo(tmp_path, name="repo"):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    root = tmp_path / name
    root.mkdir()
    r = Repo(root, home)
    r.git("init", "-q", "-b", "main")
    r.git("config", "user.name", AUTHOR_NAME)
    r.git("config", "user.email", AUTHOR_EMAIL)
    r.git("config", "commit.gpgsign", "false")
    return r


@pytest.fixture
def repo(tmp_path):
    return _new_repo(tmp_path)


@pytest.fixture
def new_repo(tmp_path):
    """A factory for further repositories in the same test."""
    return lambda name: _new_repo(tmp_path, name)


@pytest.fixture
def ds(repo):
    repo.tether("init")
    return repo


@pytest.fixture
def run(tmp_path):
    """Run tether in any directory: run(*args, cwd=..., check_rc=0)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = base_env(home)

    def _run(*args, cwd=None, check_rc=0, env_extra=None):
        return run_tether(args, cwd or tmp_path, env, check_rc, env_extra)

    return _run


@pytest.fixture
def code(new_repo):
    """A git repository outside the dataset's, to track as a `git` object."""
    c = new_repo("code")
    c.write("README", "code v1\n")
    c.git_commit_all("code v1", "README")
    return c


@pytest.fixture
def plates(ds):
    """A dataset holding a mutable directory (raw/plates: data/plates with
    two CSVs) and an immutable file (raw/samples: data/samples.csv)."""
    ds.write("data/plates/plate1.csv", "well,value\nA1,0.5\nA2,0.7\n")
    ds.write("data/plates/plate2.csv", "well,value\nB1,0.1\n")
    ds.write("data/samples.csv", "sample,plate\ns1,plate1\n")
    ds.tether("add", "raw/plates", "data/plates", "--kind", "file", "--file", "mutable")
    ds.tether("add", "raw/samples", "data/samples.csv", "--kind", "file")
    return ds
