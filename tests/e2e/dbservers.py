"""Real database servers for the tests, started on 127.0.0.1 and stopped by PID.

  postgres_server  Debian's postgresql-15 binaries (/usr/lib/postgresql/15/bin).
                   initdb refuses root, so the cluster directory belongs to the
                   `postgres` user and the server runs as that user; password
                   authentication (scram-sha-256) for TCP connections, so a test
                   can check that a wrong or missing password is refused.
  mariadb_server   Debian's mariadb-server (mariadbd), with a user and password
                   of its own.

Both are session-scoped and lazy: a session that selects no test using them
starts nothing. A server that is not installed is a skip, which conftest.py
turns into a failure under TETHER_REQUIRE_TOOLS=1 (`make check`).

Each server has `host` ("127.0.0.1"), `port`, `user`, `password`, `pid`,
`database(name)` (a new, empty database named after `name` plus a counter;
returns its name), `url(database)` (a URL with the password in it, for the
tests' own clients; tether gets its password from secrets.toml or the
environment, never from a committed URL), and `stop()`.
"""
import itertools
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from s3servers import _die_with_parent, free_ports, listening_sockets

PG_BIN = Path(os.environ.get("TETHER_PG_BIN", "/usr/lib/postgresql/15/bin"))
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
_db_serial = itertools.count(1)


def _db_name(name):
    stem = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")[:40] or "t"
    return f"{stem}_{next(_db_serial):04d}"


def _wait_port(proc, port, what, log_path):
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} while starting:\n"
                               f"{Path(log_path).read_text(errors='replace')[-3000:]}")
        if any(p == port and proto.startswith("tcp") for _, p, proto in listening_sockets(proc.pid)):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} not listening on 127.0.0.1:{port} after {READY_TIMEOUT:.0f} s")


def _stop(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT)


def _as_user(pw):
    """In the child before exec: become pw's user (when root) and die with
    the test process."""
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    _die_with_parent()


class _Server:
    """What both servers share: the PID tests stop them by, stopping, the
    repr."""
    host = "127.0.0.1"
    proc = None
    port = None
    workdir = None

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        _stop(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __repr__(self):
        return f"<{type(self).__name__} 127.0.0.1:{self.port} pid {self.proc.pid if self.proc else None}>"


class PostgresServer(_Server):
    def __init__(self):
        self.proc = None
        self.port = None
        self.user = "tether"
        self.password = secrets.token_urlsafe(18)
        # Not under pytest's tmp_path: that is root's 0700 directory, which
        # the postgres user cannot enter.
        self.workdir = Path(tempfile.mkdtemp(prefix="tether-pg-"))
        self.data = self.workdir / "data"
        self.log_path = self.workdir / "postgres.log"

    def start(self):
        pg = pwd.getpwnam("postgres")
        os.chown(self.workdir, pg.pw_uid, pg.pw_gid)
        pwfile = self.workdir / "pw"
        pwfile.write_text(self.password + "\n")
        os.chown(pwfile, pg.pw_uid, pg.pw_gid)
        as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run(as_pg + [str(PG_BIN / "initdb"), "-D", str(self.data), "-U", self.user,
                                f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
                                "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        pwfile.unlink()
        (self.port,) = free_ports(1)
        log = open(self.log_path, "wb")
        try:
            # The postmaster itself is the child (not runuser, which forks
            # and waits), so proc.pid is the PID the test stops.
            self.proc = subprocess.Popen(
                [str(PG_BIN / "postgres"), "-D", str(self.data), "-p", str(self.port),
                         "-k", str(self.workdir), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                         "-c", "max_connections=200", "-c", "max_prepared_transactions=20"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=lambda: _as_user(pg))
        finally:
            log.close()
        _wait_port(self.proc, self.port, "postgres", self.log_path)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            r = subprocess.run([str(PG_BIN / "pg_isready"), "-h", self.host, "-p", str(self.port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("postgres did not become ready")

    def psql(self, sql, database="postgres"):
        """Run SQL through psql as the server's user; returns stdout."""
        env = dict(os.environ, PGPASSWORD=self.password)
        r = subprocess.run([str(PG_BIN / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-h", self.host, "-p", str(self.port), "-U", self.user, "-d", database,
                            "-c", sql], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"psql: {sql!r}: {r.stderr.strip()}")
        return r.stdout

    def database(self, name="t"):
        db = _db_name(name)
        self.psql(f'CREATE DATABASE "{db}"')
        return db

    def url(self, database="postgres"):
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"



class MariaDBServer(_Server):
    def __init__(self):
        self.proc = None
        self.port = None
        self.user = "tether"
        self.password = secrets.token_urlsafe(18)
        self.workdir = Path(tempfile.mkdtemp(prefix="tether-mariadb-"))
        self.data = self.workdir / "data"
        self.socket = self.workdir / "mysqld.sock"
        self.log_path = self.workdir / "mariadb.log"

    def _client(self, sql, database=None, as_root=False):
        argv = ["mariadb", "--no-defaults", "-N", "-B"]
        if as_root:
            argv += [f"--socket={self.socket}", "-u", "root"]
        else:
            argv += ["--protocol=TCP", "-h", self.host, "-P", str(self.port), "-u", self.user,
                     f"-p{self.password}"]
        if database:
            argv.append(database)
        r = subprocess.run(argv + ["-e", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb: {sql!r}: {r.stderr.strip()}")
        return r.stdout

    def start(self):
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.data}", "--user=root",
                        "--auth-root-authentication-method=socket", "--skip-test-db"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        (self.port,) = free_ports(1)
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                ["mariadbd", "--no-defaults", f"--datadir={self.data}", f"--socket={self.socket}",
                 f"--port={self.port}", "--bind-address=127.0.0.1", "--user=root",
                 f"--pid-file={self.workdir / 'mariadb.pid'}", "--skip-log-bin",
                 "--innodb-flush-log-at-trx-commit=0", "--skip-name-resolve"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent)
        finally:
            log.close()
        _wait_port(self.proc, self.port, "mariadbd", self.log_path)
        self._client(f"CREATE USER '{self.user}'@'127.0.0.1' IDENTIFIED BY '{self.password}';"
                     f" GRANT ALL ON *.* TO '{self.user}'@'127.0.0.1' WITH GRANT OPTION;", as_root=True)
        return self

    def sql(self, sql, database=None):
        return self._client(sql, database)

    def database(self, name="t"):
        db = _db_name(name)
        self._client(f"CREATE DATABASE `{db}`")
        return db

    def url(self, database=""):
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"



def _started(server, needs):
    missing = [n for n in needs if not shutil.which(n) and not Path(n).exists()]
    if missing:
        server.stop()
        pytest.skip(f"no {', '.join(missing)} (scripts/install-deps installs it)")
    try:
        return server.start()
    except Exception:
        server.stop()
        raise


@pytest.fixture(scope="session")
def postgres_server():
    srv = _started(PostgresServer(), [str(PG_BIN / "initdb"), str(PG_BIN / "postgres"), "runuser"])
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def mariadb_server():
    srv = _started(MariaDBServer(), ["mariadbd", "mariadb-install-db", "mariadb"])
    yield srv
    srv.stop()
