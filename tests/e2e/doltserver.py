"""A real `dolt sql-server` for the Dolt backend's tests, on 127.0.0.1.

  dolt_server  Dolt v0.40.4 (scripts/install-deps builds it: the only
               version the Go module proxy serves), `dolt sql-server -H
               127.0.0.1 -P PORT -u USER -p PASSWORD` over a directory of databases in
               a fresh temporary directory, stopped by PID.

Session-scoped and lazy, as dbservers.py's servers are: a session that
selects no Dolt test starts nothing, and a missing binary is a skip that
conftest.py turns into a failure under TETHER_REQUIRE_TOOLS=1.

The server has `host`, `port`, `user` and `password` (v0.40.4's sql-server
takes its one user from the command line, and enforces the password), `pid`, `database(name)`
(a new database with one table and a first commit; returns its name),
`connect(database)` (a PyMySQL connection, the tests' oracle), `sql(sql,
database)` (run statements, return the rows of the last), `url(database)`,
`kill()` (SIGKILL, for fault tests; the next use restarts it on the same
port and data) and `stop()`.

Dolt's own HOME is the temporary directory, with metrics off, so the
server sends nothing anywhere (its telemetry would go to dolthub.com).
"""
import os
import secrets
import signal
import subprocess
import tempfile
import shutil
import time
from pathlib import Path

import pytest

from dbservers import _db_name
from s3servers import _die_with_parent, free_ports, installed_binary, listening_sockets

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


def dolt_binary():
    """$TETHER_DOLT, scripts/install-deps' link $TETHER_DEPS/bin/dolt, or PATH."""
    return installed_binary("TETHER_DOLT", "dolt")


class DoltServer:
    host = "127.0.0.1"
    user = "tether"

    def __init__(self, binary):
        self.binary = binary
        self.proc = None
        self.port = None
        self.workdir = Path(tempfile.mkdtemp(prefix="tether-dolt-"))
        self.home = self.workdir / "home"
        self.data = self.workdir / "data"
        self.log_path = self.workdir / "dolt.log"
        self.password = secrets.token_urlsafe(18)

    @property
    def pid(self):
        return self.proc.pid

    def env(self):
        return {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "DOLT_DISABLE_EVENT_FLUSH": "1"}

    def _dolt(self, *args, cwd=None):
        r = subprocess.run([self.binary, *args], cwd=cwd or self.data, env=self.env(),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"dolt {' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
        return r.stdout

    def start(self):
        self.home.mkdir()
        self.data.mkdir()
        for key, value in (("user.name", "tether tests"), ("user.email", "tests@tether.invalid"),
                           ("metrics.disabled", "true")):
            self._dolt("config", "--global", "--add", key, value)
        (self.port,) = free_ports(1)
        self._launch()
        return self

    def _launch(self):
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [self.binary, "sql-server", "-H", self.host, "-P", str(self.port), "-u", self.user,
                 "-p", self.password, "--multi-db-dir", str(self.data), "-l", "warning"],
                cwd=self.data, env=self.env(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dolt sql-server exited with status {self.proc.returncode}:\n"
                                   f"{self.log_path.read_text(errors='replace')[-3000:]}")
            if any(p == self.port and proto.startswith("tcp") for _, p, proto in listening_sockets(self.proc.pid)):
                try:
                    self.connect().close()
                    return
                except Exception:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"dolt sql-server not answering on 127.0.0.1:{self.port}")

    def ensure_running(self):
        if self.proc is None or self.proc.poll() is not None:
            self._launch()

    def kill(self):
        """SIGKILL the server (a fault); ensure_running() brings it back."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT)

    def connect(self, database=None, **kw):
        import pymysql
        return pymysql.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               database=database, autocommit=True, **kw)

    def sql(self, sql, database=None):
        """Run `;`-separated statements; the rows of the last one."""
        self.ensure_running()
        conn = self.connect(database)
        try:
            rows = ()
            with conn.cursor() as cur:
                for stmt in (s.strip() for s in sql.split(";")):
                    if stmt:
                        cur.execute(stmt)
                        rows = cur.fetchall()
            return rows
        finally:
            conn.close()

    def database(self, name="t"):
        """A new database with table t(id primary key, v) of two rows, committed on main."""
        db = _db_name(name)
        self.sql(f"CREATE DATABASE `{db}`")
        self.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40));"
                 "INSERT INTO t VALUES (1, 'one'), (2, 'two');"
                 "CALL DOLT_ADD('-A');"
                 "CALL DOLT_COMMIT('-m', 'two rows')", db)
        return db

    def head(self, database, branch="main"):
        rows = self.sql(f"SELECT hash FROM dolt_branches WHERE name = '{branch}'", database)
        return rows[0][0] if rows else None

    def url(self, database=""):
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __repr__(self):
        return f"<DoltServer 127.0.0.1:{self.port} pid {self.proc.pid if self.proc else None}>"


@pytest.fixture(scope="session")
def dolt_server():
    binary = dolt_binary()
    if binary is None:
        pytest.skip("no dolt (scripts/install-deps builds Dolt v0.40.4)")
    srv = DoltServer(binary)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
