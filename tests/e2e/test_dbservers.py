"""The database test servers themselves (tests/e2e/dbservers.py): they start on
127.0.0.1 only, enforce their passwords, and make fresh databases."""
import subprocess

import pytest

from dbservers import PG_BIN
from s3servers import listening_sockets


def test_postgres_listens_on_loopback_only_and_checks_passwords(postgres_server):
    socks = [s for s in listening_sockets(postgres_server.pid) if s[2].startswith("tcp")]
    assert socks and all(addr == "127.0.0.1" for addr, _, _ in socks), socks
    db = postgres_server.database("probe")
    assert postgres_server.psql("SELECT current_database()", db).strip() == db
    r = subprocess.run([str(PG_BIN / "psql"), "-X", "-h", "127.0.0.1", "-p", str(postgres_server.port),
                        "-U", postgres_server.user, "-d", db, "-c", "SELECT 1"],
                       env={"PGPASSWORD": "wrong", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode != 0 and "password authentication failed" in r.stderr


def test_mariadb_listens_on_loopback_only_and_checks_passwords(mariadb_server):
    socks = [s for s in listening_sockets(mariadb_server.pid) if s[2].startswith("tcp")]
    assert socks and all(addr == "127.0.0.1" for addr, _, _ in socks), socks
    db = mariadb_server.database("probe")
    assert mariadb_server.sql("SELECT DATABASE()", db).strip() == db
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P",
                        str(mariadb_server.port), "-u", mariadb_server.user, "-pwrong", "-e", "SELECT 1"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Access denied" in r.stderr
    with pytest.raises(RuntimeError):
        mariadb_server.sql("SELECT * FROM no_such_table", db)
