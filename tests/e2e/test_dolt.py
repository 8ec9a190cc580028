"""The Dolt backend (`--kind dolt`, tether-backend-dolt.so on libmariadb).

Against the real `dolt sql-server` v0.40.4 (tests/e2e/doltserver.py), with
PyMySQL as the oracle: every operation that server supports (record,
history, diff, fork through DOLT_BRANCH + DOLT_RESET, promote and merge
through DOLT_MERGE in a transaction, conflicts rolled back, handles as
revision-database URLs), and its faults.

v0.40.4 has no DOLT_TAG procedure, no dolt_tags table and no
dolt_branches.dirty column. What tether does with them (pins, dirty
working sets) is tested against an emulation of exactly that SQL surface
in a real MariaDB server (dbservers.py's mariadb_server): tables
dolt_branches (with dirty), dolt_tags and dolt_commits, and a DOLT_TAG
procedure that makes and deletes tags as Dolt's does. The backend's
summary and docs/BACKENDS.md say so.

The security test runs a listener that speaks the first step of the MySQL
protocol and records what a client sends it: a manifest pointing at a host
without its own secrets.toml entry gets no password.
"""
import json
import socket
import struct
import threading

import pymysql
import pytest

from conftest import run_stopped


def secrets_for(ds, port, user, password, database=None, env=False):
    """A [uris] entry in .tether/secrets.toml for the server at port."""
    prefix = f"mysql://127.0.0.1:{port}" + (f"/{database}" if database else "")
    path = ds.root / ".tether" / "secrets.toml"
    old = path.read_text() if path.exists() else ""
    body = (f'user_env = "DOLT_TEST_USER"\npassword_env = "DOLT_TEST_PASSWORD"\n' if env
            else f'user = "{user}"\npassword = "{password}"\n')
    path.write_text(old + f'[uris."{prefix}"]\n' + body)


@pytest.fixture
def dolt(ds, dolt_server):
    """A dataset with the Dolt server's credentials, and a fresh database."""
    secrets_for(ds, dolt_server.port, dolt_server.user, dolt_server.password)
    dolt_server.ensure_running()
    return dolt_server.database("tt")


def add(ds, srv, db, *extra, key="db", check_rc=0):
    return ds.tether("add", key, f"mysql://127.0.0.1:{srv.port}/{db}", "--kind", "dolt", *extra,
                     check_rc=check_rc)


def write(srv, db, sql, branch="main", message="write"):
    """Statements on a branch, then a Dolt commit; the new head."""
    srv.sql(f"{sql}; CALL DOLT_COMMIT('-a', '-m', '{message}')", f"{db}/{branch}")
    return srv.head(db, branch)


def fork_name(ds, bookmark="work"):
    """The Dolt branch of a bookmark's fork: tether.ws.<dataset8>.<bookmark>
    with '/' for '.', which Dolt v0.40.4 refuses in branch names."""
    return f"tether/ws/{ds.dataset_id()[:8]}/{bookmark}"


def diverged(ds, srv, db, on_fork, on_main):
    """The object added, committed, forked on `work`, written there (SQL
    on_fork) and committed; then main written (on_main) behind tether's
    back: (the fork's branch, its head, main's head)."""
    add(ds, srv, db, "--pin", "record")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    branch = fork_name(ds)
    fork = write(srv, db, on_fork, branch)
    ds.tether("commit", "-m", "fork")
    return branch, fork, write(srv, db, on_main)


# ---------------------------------------------------------------------------
# The real server
# ---------------------------------------------------------------------------

def test_records_the_branch_head_and_sees_a_change(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    m = ds.manifest("db")
    assert m["locator"] == {"host": "127.0.0.1", "port": dolt_server.port, "database": dolt, "branch": "main"}
    ds.tether("commit", "-m", "base")
    head = dolt_server.head(dolt)
    # v0.40.4 has no dolt_branches.dirty: the state says it was not checked.
    assert ds.manifest("db")["state"] == {"commit": head, "dirty_unchecked": True}
    assert dolt_server.sql("SELECT HASHOF('main')", dolt)[0][0] == head
    assert [o["status"] for o in ds.tj("status")["objects"]] == ["clean"]
    moved = write(dolt_server, dolt, "INSERT INTO t VALUES (3, 'three')")
    st = ds.tj("status")["objects"][0]
    assert (st["status"], st["current"]["commit"]) == ("modified", moved)


def test_a_server_without_dirty_column_reads_clean_and_says_so(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    head = dolt_server.head(dolt)
    dolt_server.sql("INSERT INTO t VALUES (9, 'uncommitted')", dolt)
    assert dolt_server.sql("SELECT COUNT(*) FROM dolt_status", f"{dolt}/main")[0][0] == 1, "the oracle: dirty"
    p = ds.tether("status", "--json")
    st = json.loads(p.stdout)["objects"][0]
    # The warning is in the state (a volatile key), not on stderr: a library prints nothing.
    assert (st["status"], st["current"]) == ("clean", {"commit": head, "dirty_unchecked": True})
    assert p.stderr == ""
    assert ds.manifest("db")["state"] == {"commit": head, "dirty_unchecked": True}


def test_pin_is_refused_on_a_server_without_dolt_tag(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt)
    before = ds.head()
    p = ds.tether("commit", "-m", "pin", check_rc=3)
    err = p.stderr.strip().splitlines()
    assert "no DOLT_TAG procedure" in p.stderr and "--pin record" in p.stderr, p.stderr
    assert f"mysql://127.0.0.1:{dolt_server.port}/{dolt}" in err[0]
    assert ds.head() == before, "nothing committed"


def test_fork_write_commit_promote(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    base = dolt_server.head(dolt)
    ds.tether("new", "-b", "work")
    branch = fork_name(ds)
    assert dolt_server.head(dolt, branch) == base
    h = ds.tj("open", "db")
    assert (h["database_ref"], h["read_only"]) == (f"{dolt}/{branch}", False)
    assert h["url"] == f"mysql://{dolt_server.user}@127.0.0.1:{dolt_server.port}/{dolt}/{branch}"
    # The handle's URL is what a MySQL client opens (the password from elsewhere).
    conn = pymysql.connect(host="127.0.0.1", port=dolt_server.port, user=dolt_server.user,
                           password=dolt_server.password, database=h["database_ref"], autocommit=True)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (10, 'ten')")
        cur.execute("CALL DOLT_COMMIT('-a', '-m', 'on the fork')")
    conn.close()
    fork = dolt_server.head(dolt, branch)
    assert dolt_server.head(dolt) == base, "the fork's write does not touch main"
    ds.tether("commit", "-m", "fork write")
    assert ds.manifest("db")["state"]["commit"] == fork
    r = ds.tj("promote")
    [o] = r["objects"]
    assert (o["action"], o["base"]["from"], o["base"]["to"]) == ("promoted", base, fork)
    assert dolt_server.head(dolt) == fork
    assert dolt_server.sql("SELECT COUNT(*) FROM t", f"{dolt}/main")[0][0] == 3


def test_promote_refuses_a_diverged_base(ds, dolt_server, dolt):
    _, _, moved = diverged(ds, dolt_server, dolt, "INSERT INTO t VALUES (11, 'fork')",
                           "INSERT INTO t VALUES (12, 'main')")
    p = ds.tether("promote", check_rc=3)
    assert "merge" in p.stderr, "diverged: the refusal says to merge"
    assert dolt_server.head(dolt) == moved, "nothing moved"


def test_merge_and_a_conflict_rolled_back(ds, dolt_server, dolt):
    branch, fork, moved = diverged(ds, dolt_server, dolt, "UPDATE t SET v = 'fork' WHERE id = 1",
                                   "UPDATE t SET v = 'main' WHERE id = 1")
    p = ds.tether("merge", check_rc=3)
    assert "conflicts: t (1 conflict); rolled back" in p.stdout + p.stderr, p.stdout + p.stderr
    assert dolt_server.head(dolt) == moved and dolt_server.head(dolt, branch) == fork
    assert dolt_server.sql("SELECT COUNT(*) FROM dolt_status", f"{dolt}/main")[0][0] == 0
    assert dolt_server.sql("SELECT COUNT(*) FROM dolt_conflicts", f"{dolt}/main")[0][0] == 0
    assert dolt_server.sql("SELECT v FROM t WHERE id = 1", f"{dolt}/main")[0][0] == "main"

    # Without the conflict, the merge commits on main with both parents.
    dolt_server.sql("UPDATE t SET v = 'fork' WHERE id = 1; CALL DOLT_COMMIT('-a', '-m', 'agree')", f"{dolt}/main")
    agreed = dolt_server.head(dolt)
    write(dolt_server, dolt, "INSERT INTO t VALUES (20, 'fork only')", branch)
    ds.tether("commit", "-m", "fork 2")
    r = ds.tj("merge", "-m", "land work's rows \\ 100%")
    [o] = r["objects"]
    merged = dolt_server.head(dolt)
    assert (o["action"], o["base"]["from"], o["base"]["to"]) == ("merged", agreed, merged)
    parents = {row[0] for row in dolt_server.sql(
        f"SELECT parent_hash FROM dolt_commit_ancestors WHERE commit_hash = '{merged}'", dolt)}
    assert agreed in parents and len(parents) == 2
    assert dolt_server.sql("SELECT message FROM dolt_log LIMIT 1", f"{dolt}/main")[0][0] == "land work's rows \\ 100%"
    assert dolt_server.head(dolt, branch) == merged, "the working branch follows"


def test_a_merge_violating_a_foreign_key_is_rolled_back(ds, dolt_server, dolt):
    """DOLT_MERGE answers no conflict, but dolt_constraint_violations names
    the table: refused per table, the transaction rolled back."""
    dolt_server.sql("CREATE TABLE p (id INT PRIMARY KEY);"
                    "CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p(id));"
                    "INSERT INTO p VALUES (1), (2); CALL DOLT_ADD('-A'); CALL DOLT_COMMIT('-m', 'fk')", dolt)
    _, _, moved = diverged(ds, dolt_server, dolt, "INSERT INTO c VALUES (1, 2)", "DELETE FROM p WHERE id = 2")
    p = ds.tether("merge", check_rc=3)
    assert "conflicts: c (1 constraint violation); rolled back" in p.stdout + p.stderr, p.stdout + p.stderr
    assert dolt_server.head(dolt) == moved
    assert dolt_server.sql("SELECT COUNT(*) FROM dolt_status", f"{dolt}/main")[0][0] == 0
    assert dolt_server.sql("SELECT COUNT(*) FROM dolt_constraint_violations", f"{dolt}/main")[0][0] == 0


def test_log_is_dolt_log(ds, dolt_server, dolt):
    write(dolt_server, dolt, "INSERT INTO t VALUES (4, 'four')", message="four")
    add(ds, dolt_server, dolt, "--pin", "record")
    entries = ds.tj("log", "db")["entries"]
    oracle = dolt_server.sql("SELECT commit_hash, message FROM dolt_log", f"{dolt}/main")
    assert [(e["id"], e["message"]) for e in entries] == [tuple(r) for r in oracle]
    assert "main" in entries[0]["refs"]


def test_add_at_and_a_missing_revision(ds, dolt_server, dolt):
    first = dolt_server.head(dolt)
    write(dolt_server, dolt, "INSERT INTO t VALUES (5, 'five')")
    add(ds, dolt_server, dolt, "--pin", "record", "--at", first)
    ds.tether("commit", "-m", "at first")
    assert ds.manifest("db")["state"]["commit"] == first
    p = add(ds, dolt_server, dolt, "--at", "nosuchbranch", key="db2", check_rc=2)
    assert "--at:" in p.stderr and "nosuchbranch" in p.stderr


def test_diff_content_counts_rows_per_table(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "one")
    c1 = ds.head()
    dolt_server.sql("INSERT INTO t VALUES (6, 'six'), (7, 'seven'); DELETE FROM t WHERE id = 1;"
                    "UPDATE t SET v = 'TWO' WHERE id = 2;"
                    "CREATE TABLE u (id INT PRIMARY KEY); INSERT INTO u VALUES (1);"
                    "CALL DOLT_ADD('-A'); CALL DOLT_COMMIT('-m', 'more')", dolt)
    ds.tether("commit", "-m", "two")
    content = ds.tj("diff", c1, "HEAD", "--content")["objects"][0]["content"]
    assert content["unit"] == "tables"
    assert content["entries"] == [
        {"change": "modified", "table": "t", "rows_added": 2, "rows_deleted": 1, "rows_modified": 1},
        {"change": "added", "table": "u", "rows_added": 1, "rows_deleted": 0, "rows_modified": 0}]


def test_open_at_a_recorded_commit_is_read_only_and_readable(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "one")
    rec = ds.manifest("db")["state"]["commit"]
    write(dolt_server, dolt, "INSERT INTO t VALUES (8, 'eight')")
    h = ds.tj("open", "db", "-r", "HEAD")
    assert (h["ref"], h["read_only"], h["database_ref"]) == (rec, True, f"{dolt}/{rec}")
    conn = pymysql.connect(host="127.0.0.1", port=dolt_server.port, user=dolt_server.user,
                           password=dolt_server.password, database=h["database_ref"])
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone()[0] == 2
    conn.close()


# ---------------------------------------------------------------------------
# Bad input and faults
# ---------------------------------------------------------------------------

def test_wrong_password_is_one_line_naming_the_server(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    before = ds.head()
    (ds.root / ".tether" / "secrets.toml").write_text(
        f'[uris."mysql://127.0.0.1:{dolt_server.port}"]\nuser = "{dolt_server.user}"\npassword = "wrong"\n')
    p = ds.tether("commit", "-m", "again", check_rc=None)
    assert p.returncode != 0
    line = [l for l in p.stderr.splitlines() if l.startswith("tether: error")][0]
    assert f"mysql://127.0.0.1:{dolt_server.port}/{dolt}" in line and "the server said" in line
    assert ds.head() == before


def test_credentials_from_the_environment(ds, dolt_server):
    dolt_server.ensure_running()
    db = dolt_server.database("env")
    secrets_for(ds, dolt_server.port, None, None, env=True)
    env = {"DOLT_TEST_USER": dolt_server.user, "DOLT_TEST_PASSWORD": dolt_server.password}
    ds.tether("add", "db", f"mysql://127.0.0.1:{dolt_server.port}/{db}", "--kind", "dolt", "--pin", "record",
              env=env)
    p = ds.tether("status", env={"DOLT_TEST_USER": dolt_server.user}, check_rc=None)
    assert p.returncode != 0 and "DOLT_TEST_PASSWORD" in p.stderr


def test_a_database_entry_beats_the_server_entry(ds, dolt_server):
    dolt_server.ensure_running()
    db = dolt_server.database("entry")
    (ds.root / ".tether" / "secrets.toml").write_text(
        f'[uris."mysql://127.0.0.1:{dolt_server.port}"]\nuser = "{dolt_server.user}"\npassword = "wrong"\n'
        f'[uris."mysql://127.0.0.1:{dolt_server.port}/{db}"]\nuser = "{dolt_server.user}"\n'
        f'password = "{dolt_server.password}"\n')
    add(ds, dolt_server, db, "--pin", "record")
    other = dolt_server.database("other")
    p = add(ds, dolt_server, other, "--pin", "record", key="db2", check_rc=None)
    assert p.returncode != 0 and "Access denied" in p.stderr


def test_backends_lists_dolt(ds):
    [b] = [b for b in ds.tj("backends") if b["kind"] == "dolt"]
    assert b["tier"] == "forkable" and b["maturity"] == "experimental"
    assert {"ATOMIC_REF", "DIFF", "HISTORY", "PROMOTE", "MERGE"} <= set(b["flags"])
    assert "v0.40.4" in b["summary"] and "MariaDB emulation" in b["summary"]


def test_verify_without_pins_checks_the_commit(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    assert ds.tj("verify")["ok"] is True


def test_a_hostile_locator_is_refused(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    path = ds.manifest_path("db")
    path.write_text(path.read_text().replace(f'database = "{dolt}"', 'database = "x\'; DROP DATABASE y; --"'))
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and 'dolt locator: "database"' in p.stderr
    assert dolt_server.head(dolt), "the database is there"


def test_a_database_dropped_after_add(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    dolt_server.sql(f"DROP DATABASE `{dolt}`")
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and dolt in p.stderr and "the server said" in p.stderr
    v = ds.tether("verify", check_rc=None)
    assert v.returncode != 0 and dolt in v.stdout + v.stderr


@pytest.mark.parametrize("args, says", [
    (["mysql://127.0.0.1:{port}"], "a dolt URL names its database"),
    (["mysql://tether:secret@127.0.0.1:{port}/db"], "a password does not go in a committed locator"),
    (["mysql://127.0.0.1:99999/db"], "the port must be a number from 1 to 65535"),
    (["mysql://127.0.0.1:{port}/db/branch"], "names only its database"),
    (["http://127.0.0.1:{port}/db"], "begins mysql://"),
    (["mysql://127.0.0.1:{port}/a'b"], "holds a character tether does not send"),
    (["mysql://127.0.0.1:{port}/db", "--option", "port=5"], "--port and the URL name the same thing"),
    (["mysql://127.0.0.1:{port}/db", "--option", "bogus=1"], "unknown option '--bogus' for kind dolt"),
    (["mysql://127.0.0.1:{port}/db", "--branch", "no'pe"], "holds a character tether does not send"),
])
def test_bad_locators_are_refused_naming_what(ds, dolt_server, args, says):
    args = [a.format(port=dolt_server.port) for a in args]
    p = ds.tether("add", "db", *args, "--kind", "dolt", check_rc=2)
    assert says in p.stderr, p.stderr
    assert len([l for l in p.stderr.splitlines() if l.startswith("tether: error")]) == 1
    assert not ds.manifest_path("db").exists()


def test_a_missing_database_is_refused_at_add(ds, dolt_server, dolt):
    p = add(ds, dolt_server, "no_such_db", check_rc=None)
    assert p.returncode != 0 and "no_such_db" in p.stderr
    assert not ds.manifest_path("db").exists()


def test_a_server_killed_mid_session(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    before = ds.head()
    write(dolt_server, dolt, "INSERT INTO t VALUES (30, 'x')")
    dolt_server.kill()
    try:
        p = ds.tether("commit", "-m", "while down", check_rc=None)
        assert p.returncode != 0
        assert f"mysql://127.0.0.1:{dolt_server.port}" in p.stderr and "cannot connect" in p.stderr
        assert ds.head() == before, "nothing committed"
        v = ds.tether("verify", check_rc=None)
        assert v.returncode != 0
    finally:
        dolt_server.ensure_running()
    ds.tether("commit", "-m", "back")
    assert ds.head() != before


def test_the_server_killed_mid_promote(ds, dolt_server, dolt):
    """promote stopped once its plan is journalled, the server killed, then
    the promote goes on: it fails naming the server, and main stays."""
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    base = dolt_server.head(dolt)
    ds.tether("new", "-b", "work")
    write(dolt_server, dolt, "INSERT INTO t VALUES (40, 'fork')", fork_name(ds))
    ds.tether("commit", "-m", "fork")
    try:
        p, _ = run_stopped(ds, ["promote"], "promote:journal-written:stop", dolt_server.kill)
        assert p.returncode != 0
        line = [l for l in p.stderr.splitlines() if l.startswith("tether: error")][0]
        assert f"mysql://127.0.0.1:{dolt_server.port}" in line, p.stderr
    finally:
        dolt_server.ensure_running()
    assert dolt_server.head(dolt) == base, "nothing moved"
    r = ds.tj("promote")
    assert r["objects"][0]["action"] == "promoted"
    assert dolt_server.head(dolt) == dolt_server.head(dolt, fork_name(ds))


def test_a_writer_racing_the_promote_makes_it_fail(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    fork = write(dolt_server, dolt, "INSERT INTO t VALUES (42, 'fork')", fork_name(ds))
    ds.tether("commit", "-m", "fork")
    p, racer = run_stopped(ds, ["promote"], "promote:journal-written:stop",
                           lambda: write(dolt_server, dolt, "INSERT INTO t VALUES (43, 'racer')"))
    assert p.returncode == 3 and "moved" in p.stderr.splitlines()[0], p.stderr
    assert dolt_server.head(dolt) == racer, "the racing writer's commit stands"
    assert dolt_server.head(dolt, fork_name(ds)) == fork


def test_undo_takes_a_promote_back(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    base = dolt_server.head(dolt)
    ds.tether("new", "-b", "work")
    fork = write(dolt_server, dolt, "INSERT INTO t VALUES (41, 'fork')", fork_name(ds))
    ds.tether("commit", "-m", "fork")
    ds.tether("promote")
    assert dolt_server.head(dolt) == fork
    ds.tether("undo")
    assert dolt_server.head(dolt) == base
    assert dolt_server.sql("SELECT COUNT(*) FROM t", f"{dolt}/main")[0][0] == 2


def test_drop_on_a_server_that_cannot_delete_branches(ds, dolt_server, dolt):
    """v0.40.4 refuses DOLT_BRANCH('-D'): drop says so in one line naming
    the server, and the branch and the manifest stay."""
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    p = ds.tether("drop", "db", "--force", check_rc=None)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "Deleting branches is not supported" in out, out
    assert f"mysql://127.0.0.1:{dolt_server.port}/{dolt}" in out
    assert dolt_server.head(dolt, fork_name(ds)) is not None
    assert ds.manifest_path("db").exists(), "nothing half-done: the manifest stays"


def test_the_working_branch_gone_on_promote(ds, dolt_server, dolt):
    """v0.40.4 cannot delete a branch (DOLT_BRANCH -D says so), so the
    branch gone behind tether's back is one never made: a manifest naming a
    working branch the server does not have."""
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    loc_branch = fork_name(ds)
    # This workspace's record of the fork names a branch that is not there.
    path = ds.root / ".tether" / "workspace.toml"
    path.write_text(path.read_text().replace(loc_branch, loc_branch + "x"))
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and f'no branch "{loc_branch}x"' in p.stderr
    before = dolt_server.head(dolt)
    p = ds.tether("promote", check_rc=None)
    assert p.returncode != 0 and f"{loc_branch}x" in p.stderr
    assert dolt_server.head(dolt) == before


# ---------------------------------------------------------------------------
# Security: no credential for a host without its own entry
# ---------------------------------------------------------------------------

class MySQLListener:
    """Speaks the server's first packet of the MySQL protocol (a v10
    handshake offering mysql_native_password), records the user and the
    auth response each client sends, and refuses it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @staticmethod
    def _packet(seq, payload):
        return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                caps = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000
                greeting = (b"\x0a" + b"5.7.0-listener\x00" + struct.pack("<I", 1) + b"abcdefgh\x00"
                            + struct.pack("<H", caps & 0xffff) + b"\x21" + struct.pack("<H", 2)
                            + struct.pack("<H", caps >> 16) + bytes([21]) + b"\x00" * 10
                            + b"ijklmnopqrst\x00" + b"mysql_native_password\x00")
                conn.sendall(self._packet(0, greeting))
                data = b""
                try:
                    conn.settimeout(5)
                    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:3], "little"):
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    continue
                body = data[4:]
                if len(body) < 33:
                    continue
                rest = body[32:]
                user, _, rest = rest.partition(b"\x00")
                n = rest[0] if rest else 0
                self.seen.append((user.decode(), rest[1:1 + n]))
                err = b"\xff" + struct.pack("<H", 1045) + b"#28000" + b"Access denied (listener)"
                conn.sendall(self._packet(2, err))

    def close(self):
        self.sock.close()


def test_a_manifest_naming_another_host_gets_no_credential(ds, dolt_server, dolt):
    add(ds, dolt_server, dolt, "--pin", "record")
    ds.tether("commit", "-m", "base")
    listener = MySQLListener()
    try:
        # A clone rewrites the locator to a server of its choosing.
        path = ds.manifest_path("db")
        path.write_text(path.read_text().replace(f"port = {dolt_server.port}", f"port = {listener.port}"))
        p = ds.tether("status", check_rc=None)
        assert p.returncode != 0 and f"mysql://127.0.0.1:{listener.port}" in p.stderr
        assert listener.seen, "tether connected"
        assert all(auth == b"" for _, auth in listener.seen), "no password went to the other host"
        assert all(user == "root" for user, _ in listener.seen)
        # The same host with an entry of its own gets that entry's login.
        secrets_for(ds, listener.port, "someone", "its-own-password")
        listener.seen.clear()
        ds.tether("status", check_rc=None)
        assert listener.seen and all(user == "someone" and len(auth) == 20 for user, auth in listener.seen)
    finally:
        listener.close()


# ---------------------------------------------------------------------------
# Pins and dirty working sets: an emulation of the SQL surface v0.40.4 lacks
# ---------------------------------------------------------------------------

FAKE_SURFACE = [
    "CREATE TABLE dolt_branches (name VARCHAR(200) PRIMARY KEY, hash VARCHAR(64) NOT NULL,"
    " dirty TINYINT(1) NOT NULL DEFAULT 0)",
    "CREATE TABLE dolt_tags (tag_name VARCHAR(200) PRIMARY KEY, tag_hash VARCHAR(64) NOT NULL)",
    "CREATE TABLE dolt_commits (commit_hash VARCHAR(64) PRIMARY KEY)",
    # DOLT_TAG(name, ref) tags a branch's head or a commit; DOLT_TAG('-d', name) deletes.
    "CREATE PROCEDURE DOLT_TAG(IN a VARCHAR(200), IN b VARCHAR(200)) BEGIN"
    " DECLARE h VARCHAR(64);"
    " IF a = '-d' THEN"
    "  IF (SELECT COUNT(*) FROM dolt_tags WHERE tag_name = b) = 0 THEN"
    "   SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tag not found'; END IF;"
    "  DELETE FROM dolt_tags WHERE tag_name = b;"
    " ELSE"
    "  SET h = COALESCE((SELECT hash FROM dolt_branches WHERE name = b),"
    "                   (SELECT commit_hash FROM dolt_commits WHERE commit_hash = b));"
    "  IF h IS NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'invalid ref spec'; END IF;"
    "  INSERT INTO dolt_tags VALUES (a, h);"
    " END IF; END",
    # DOLT_BRANCH(name) makes a branch at main's head (the session's branch).
    "CREATE PROCEDURE DOLT_BRANCH(IN n VARCHAR(200)) BEGIN"
    " INSERT INTO dolt_branches SELECT n, hash, 0 FROM dolt_branches WHERE name = 'main'; END",
]
H1 = "0123456789abcdefghijklmnopqrstuv"
H2 = "vutsrqponmlkjihgfedcba9876543210"


@pytest.fixture
def fake(ds, mariadb_server):
    db = mariadb_server.database("doltfake")
    conn = pymysql.connect(host="127.0.0.1", port=mariadb_server.port, user=mariadb_server.user,
                           password=mariadb_server.password, database=db, autocommit=True)
    with conn.cursor() as cur:
        for stmt in FAKE_SURFACE:
            cur.execute(stmt)
        cur.execute(f"INSERT INTO dolt_commits VALUES ('{H1}'), ('{H2}')")
        cur.execute(f"INSERT INTO dolt_branches VALUES ('main', '{H1}', 0)")
    secrets_for(ds, mariadb_server.port, mariadb_server.user, mariadb_server.password)
    ds.tether("add", "db", f"mysql://127.0.0.1:{mariadb_server.port}/{db}", "--kind", "dolt")

    def q(sql):
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    yield q
    conn.close()


def test_pin_is_a_dolt_tag(ds, fake):
    ds.tether("commit", "-m", "pin")
    state = ds.manifest("db")["state"]
    assert state == {"commit": H1}
    tags = fake("SELECT tag_name, tag_hash FROM dolt_tags")
    assert len(tags) == 1 and tags[0][0].startswith("tether.") and tags[0][1] == H1
    assert ds.tj("verify")["ok"] is True
    # The tag deleted behind tether's back: verify names it.
    fake("DELETE FROM dolt_tags")
    p = ds.tether("verify", check_rc=3)
    assert f"tag {tags[0][0]} is missing" in p.stdout + p.stderr


def test_dirty_branch_shows_and_is_refused_at_commit(ds, fake):
    ds.tether("commit", "-m", "pin")
    fake("UPDATE dolt_branches SET dirty = 1")
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "modified" and st["current"] == {"commit": H1, "dirty": True}
    before = ds.head()
    p = ds.tether("commit", "-m", "dirty", check_rc=3)
    assert "uncommitted changes" in p.stderr
    assert ds.head() == before
    assert len(fake("SELECT * FROM dolt_tags")) == 1, "no second tag"
    fake(f"UPDATE dolt_branches SET dirty = 0, hash = '{H2}'")
    ds.tether("commit", "-m", "moved")
    assert {r[1] for r in fake("SELECT tag_name, tag_hash FROM dolt_tags")} == {H1, H2}


def test_gc_releases_exactly_the_unreferenced_tag(ds, fake):
    ds.tether("commit", "-m", "first")
    fake(f"UPDATE dolt_branches SET hash = '{H2}'")
    ds.tether("commit", "-m", "second")
    assert len(fake("SELECT * FROM dolt_tags")) == 2
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.git("reflog", "expire", "--expire=now", "--all")
    ds.tether("gc", "--no-dry-run")
    tags = fake("SELECT tag_name, tag_hash FROM dolt_tags")
    assert [t[1] for t in tags] == [H1], "the pin history names stays; the other is released"
    fake("INSERT INTO dolt_tags VALUES ('release-1', '%s')" % H2)
    ds.tether("gc", "--no-dry-run")
    assert {t[0] for t in fake("SELECT tag_name FROM dolt_tags")} == {tags[0][0], "release-1"}


def test_open_at_a_pin_names_its_tag_and_repair_remakes_a_lost_one(ds, fake):
    ds.tether("commit", "-m", "pin")
    [(tag,)] = fake("SELECT tag_name FROM dolt_tags")
    h = ds.tj("open", "db", "-r", "HEAD")
    assert (h["ref"], h["commit"], h["read_only"]) == (tag, H1, True)
    assert h["database_ref"].endswith(f"/{tag}")
    fake("DELETE FROM dolt_tags")
    ds.tether("verify", check_rc=3)
    ds.tether("repair")
    assert fake("SELECT tag_name, tag_hash FROM dolt_tags") == ((tag, H1),)
    assert ds.tj("verify")["ok"] is True


def test_restore_refuses_a_branch_with_uncommitted_changes(ds, fake):
    """restore would move the working branch back with DOLT_RESET --hard,
    which discards a working set: refused while dolt_branches.dirty says
    there is one, and nothing moves."""
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    branch = "tether/ws/%s/work" % ds.dataset_id()[:8]
    assert fake(f"SELECT hash FROM dolt_branches WHERE name = '{branch}'") == ((H1,),)
    fake(f"UPDATE dolt_branches SET hash = '{H2}' WHERE name = '{branch}'")
    ds.tether("commit", "-m", "fork write")
    fake(f"UPDATE dolt_branches SET dirty = 1 WHERE name = '{branch}'")
    p = ds.tether("restore", "-r", "HEAD~1", check_rc=3)
    assert "uncommitted changes, which moving it to" in p.stderr and branch in p.stderr, p.stderr
    assert fake(f"SELECT hash, dirty FROM dolt_branches WHERE name = '{branch}'") == ((H2, 1),)


def test_a_fork_that_cannot_move_its_new_branch_says_why(ds, fake):
    """The new branch is made at main's head (H2 by now) and cannot be
    moved to the pinned H1 (the emulation has no revision databases): the
    error is the move's, and tether tries to delete the branch it made
    (the emulation, like v0.40.4, cannot)."""
    ds.tether("commit", "-m", "base")
    fake(f"UPDATE dolt_branches SET hash = '{H2}' WHERE name = 'main'")
    p = ds.tether("new", "-b", "work", check_rc=None)
    assert p.returncode != 0
    line = [l for l in p.stderr.splitlines() if l.startswith("tether: error")][0]
    assert "cannot connect" in line and "Unknown database" in line and "/tether/ws/" in line, line


def test_a_branch_gone_behind_tethers_back(ds, fake):
    ds.tether("commit", "-m", "pin")
    fake("DELETE FROM dolt_branches")
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and 'has no branch "main"' in p.stderr
