"""The ducklake backend against real DuckLake catalogs: DuckDB 1.5.5 with its
ducklake extension makes and writes them on SQLite, Postgres, MySQL
(MariaDB) and a DuckDB file (tests/e2e/ducklakes.py); tether records their
snapshots, lists their history, diffs them, and hands out an attach
statement that DuckDB then reads the recorded snapshot through. Bad input
is refused with one line, and nothing is written."""
import json
import shutil
import socket
import threading

import pytest

from ducklakes import connect, duckdb_catalog, server_catalog, set_version, sqlite_catalog

KINDS = ["sqlite", "duckdb", "postgres", "mysql"]

# The second write of the main test, and the diff it makes. DuckDB 1.5.5's
# MySQL connector cannot update a table's statistics on MariaDB ("Unsupported
# operator type HASH_JOIN in UPDATE statement"), so a table there takes one
# insert: on MySQL the second write makes new tables instead.
SECOND = {
    "default": (["INSERT INTO l.t SELECT i, 'bulk' FROM range(5000) r(i)", "DELETE FROM l.t WHERE a = 1 AND b = 'x'"],
                {"main.t": ("modified", 5000, 1)}, "modified main.t (+5000 rows, -1 rows)"),
    "mysql": (["CREATE TABLE l.big AS SELECT i AS a FROM range(5000) r(i)"],
              {"main.big": ("added", 5000, 0)}, "added main.big (created, 5000 rows)"),
}


@pytest.fixture(params=KINDS)
def cat(request, tmp_path):
    if request.param == "sqlite":
        return sqlite_catalog(tmp_path)
    if request.param == "duckdb":
        return duckdb_catalog(tmp_path)
    server = "postgres_server" if request.param == "postgres" else "mariadb_server"
    return server_catalog(request.param, tmp_path, request.getfixturevalue(server))


def add(ds, cat, key="lake", *extra, check_rc=0):
    if cat.secrets:
        (ds.root / ".tether").mkdir(exist_ok=True)
        with open(ds.root / ".tether" / "secrets.toml", "a") as f:
            f.write(cat.secrets_toml(key))
    return ds.tether("add", key, cat.uri, "--kind", "ducklake", "--data_path", str(cat.data), *extra,
                     env=cat.env, check_rc=check_rc)


def one_line_error(p):
    lines = [l for l in p.stderr.splitlines() if l.startswith("tether: error:")]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_records_lists_diffs_and_attaches_the_recorded_snapshot(ds, cat, tmp_path):
    cat.write("CREATE TABLE l.t(a INTEGER, b VARCHAR)", "INSERT INTO l.t VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    add(ds, cat, "lake", "--table", "t")
    ds.tether("commit", "-m", "one", env=cat.env)
    first = cat.latest()
    state = ds.manifest("lake")["state"]
    assert (state["snapshot_id"], state["snapshot_time_us"]) == first
    rows_then = sorted(cat.query("SELECT * FROM l.t"))

    writes, changed, line = SECOND.get(cat.kind, SECOND["default"])
    cat.write(*writes, 'CREATE SCHEMA l."a.child"', 'CREATE TABLE l."a.child".t(x INTEGER)',
              'INSERT INTO l."a.child".t VALUES (7), (8)')
    st = ds.tj("status", env=cat.env)
    assert [o["status"] for o in st["objects"]] == ["modified"], st
    ds.tether("commit", "-m", "two", env=cat.env)
    second = cat.latest()
    assert ds.manifest("lake")["state"] == {"snapshot_id": second[0], "snapshot_time_us": second[1]}
    assert [o["status"] for o in ds.tj("status", env=cat.env)["objects"]] == ["clean"]

    # History: DuckDB's own list of snapshots, newest first.
    log = ds.tj("log", "lake", env=cat.env)
    entries = log["entries"] if isinstance(log, dict) else log
    assert [int(e["id"]) for e in entries] == [s for s, _ in reversed(cat.snapshots())]
    assert entries[-1]["message"] == 'created_schema:"main"'

    # Diff: per table, with row counts.
    d = ds.tj("diff", "HEAD~1", "HEAD", "--content", env=cat.env)
    content = d["objects"][0]["content"]
    assert content["unit"] == "tables"
    got = {e["path"]: (e["change"], e["inserted"], e["deleted"]) for e in content["entries"]}
    assert got == {**changed, '"a.child".t': ("added", 2, 0)}, content
    text = ds.tether("diff", "HEAD~1", "HEAD", "--content", env=cat.env).stdout
    assert line in text, text
    # Read backwards, the same changes undone.
    back = ds.tj("diff", "HEAD", "HEAD~1", "--content", env=cat.env)["objects"][0]["content"]
    got = {e["path"]: (e["change"], e["inserted"], e["deleted"]) for e in back["entries"]}
    undone = {"added": "removed", "removed": "added", "modified": "modified"}
    assert got == {p: (undone[c], d, i) for p, (c, i, d) in {**changed, '"a.child".t': ("added", 2, 0)}.items()}

    # The handle at the first commit: DuckDB attaches it and reads what
    # AT (VERSION => N) reads.
    h = ds.tj("open", "lake", "-r", "HEAD~1", env=cat.env)
    assert h["snapshot_id"] == first[0] and h["read_only"] is True
    assert f"SNAPSHOT_VERSION {first[0]}" in h["attach_sql"]
    assert "password" not in json.dumps(h)
    con = connect(cat.ext_dir, *([cat.extension] if cat.extension else []))
    try:
        # The reader brings its own credentials (a server's password).
        con.execute(h["attach_sql"].replace(cat.uri, cat.writer, 1))
        pinned = sorted(con.execute(f"SELECT * FROM {h['table_ref']}").fetchall())
    finally:
        con.close()
    assert pinned == rows_then
    assert sorted(cat.query(f"SELECT * FROM l.t AT (VERSION => {first[0]})")) == rows_then


def test_add_at_records_that_snapshot(ds, cat):
    cat.write("CREATE TABLE l.t(a INTEGER)", "INSERT INTO l.t VALUES (1)")
    at = cat.latest()
    cat.write("CREATE TABLE l.t2 AS SELECT 2 AS a")
    add(ds, cat, "lake", "--at", str(at[0]))
    ds.tether("commit", "-m", "at", env=cat.env)
    assert ds.manifest("lake")["state"] == {"snapshot_id": at[0], "snapshot_time_us": at[1]}
    v = ds.tj("verify", env=cat.env)
    assert v["objects"][0]["ok"] is True, v


# -- bad input ---------------------------------------------------------------


def test_a_newer_ducklake_version_is_refused(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    set_version(cat, "1.1-dev1")
    before = ds.tree()
    p = ds.tether("commit", "-m", "x", check_rc=None)
    assert p.returncode != 0
    msg = one_line_error(p)
    assert "DuckLake 1.1-dev1, newer than tether reads (1.0)" in msg, msg
    assert ds.tree() == before and ds.commit_count() == 0


@pytest.mark.parametrize("conn", ["dbname=lake host=127.0.0.1 password=hunter2",
                                  "dbname=lake host=127.0.0.1 passfile=/etc/shadow"])
def test_a_committed_credential_is_refused(ds, conn):
    before = ds.tree()
    p = ds.tether("add", "lake", f"ducklake:postgres:{conn}", "--kind", "ducklake", check_rc=2)
    assert "secrets.toml" in one_line_error(p)
    assert ds.tree() == before


def test_a_credential_in_a_cloned_manifest_is_refused(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    ds.tether("commit", "-m", "one")
    m = ds.manifest_path("lake")
    m.write_text(m.read_text().replace(f"ducklake:sqlite:{cat.path}",
                                       "ducklake:postgres:dbname=x host=127.0.0.1 password=hunter2"))
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and "credential" in p.stderr and "hunter2" in p.stderr.split("error:")[1]


def _listener():
    """A TCP listener on 127.0.0.1 counting the connections it accepts."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    accepted = []

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            accepted.append(c.recv(4096))
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s, accepted


def test_credentials_go_only_to_the_server_they_name(ds):
    s, accepted = _listener()
    port = s.getsockname()[1]
    try:
        ds.tether("add", "lake", f"ducklake:postgres:dbname=x host=127.0.0.1 port={port} user=u", "--kind",
                  "ducklake")
        ds.write(".tether/secrets.toml", '[objects."lake"]\nserver = "db.example:5432"\npassword = "hunter2"\n')
        before = ds.tree()
        p = ds.tether("commit", "-m", "x", check_rc=None)
        assert p.returncode != 0
        msg = one_line_error(p)
        assert "credentials are for server db.example:5432" in msg and f"127.0.0.1:{port}" in msg, msg
        assert accepted == [] and ds.tree() == before
        # Without an entry, nothing is sent that the environment holds.
        ds.write(".tether/secrets.toml", "")
        p = ds.tether("status", check_rc=None, env={"PGPASSWORD": "hunter2"})
        assert "PGPASSWORD" in p.stderr and accepted == []
    finally:
        s.close()


def test_init_sql_in_tether_toml_is_refused(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    with open(ds.root / "tether.toml", "a") as f:
        f.write('\n[backends.ducklake]\ninit_sql = ["CREATE SECRET s (TYPE s3)"]\n')
    before = ds.tree()
    p = ds.tether("commit", "-m", "x", check_rc=None)
    assert p.returncode != 0
    assert "init_sql" in one_line_error(p) and "secrets.toml" in p.stderr
    assert ds.tree() == before and ds.commit_count() == 0


def test_a_missing_table_is_refused(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat, "lake", "--table", "nope")
    before = ds.tree()
    p = ds.tether("commit", "-m", "x", check_rc=None)
    assert p.returncode != 0
    assert "has no table main.nope at snapshot" in one_line_error(p)
    assert ds.tree() == before and ds.commit_count() == 0


def test_a_recreated_catalog_is_drift(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    ops = ("CREATE TABLE l.t(a INTEGER)", "INSERT INTO l.t VALUES (1)")
    cat.write(*ops)
    add(ds, cat)
    ds.tether("commit", "-m", "one")
    recorded = ds.manifest("lake")["state"]
    cat.path.unlink()
    shutil.rmtree(cat.data)
    cat.data.mkdir()
    cat.write(*ops)  # the same snapshot ids, taken again
    assert cat.latest()[0] == recorded["snapshot_id"] and cat.latest()[1] != recorded["snapshot_time_us"]
    assert [o["status"] for o in ds.tj("status")["objects"]] == ["modified"]
    p = ds.tether("verify", check_rc=3)
    assert "the catalog was recreated" in p.stdout + p.stderr


def test_a_missing_libduckdb_is_named(ds, tmp_path):
    cat = duckdb_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    p = ds.tether("status", check_rc=None, env={"TETHER_LIBDUCKDB": str(tmp_path / "no-libduckdb.so")})
    assert "libduckdb could not be loaded" in p.stdout + p.stderr
    assert "TETHER_LIBDUCKDB" in p.stdout + p.stderr


def test_not_a_ducklake_catalog(ds, tmp_path):
    import sqlite3
    path = tmp_path / "plain.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE x(a)")
    ds.tether("add", "lake", f"ducklake:sqlite:{path}", "--kind", "ducklake")
    p = ds.tether("commit", "-m", "x", check_rc=None)
    assert "is not a DuckLake catalog" in one_line_error(p)


def test_an_expired_snapshot_fails_verify(ds, tmp_path):
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)", "INSERT INTO l.t VALUES (1)")
    add(ds, cat)
    ds.tether("commit", "-m", "one")
    recorded = ds.manifest("lake")["state"]["snapshot_id"]
    cat.write("INSERT INTO l.t VALUES (2)")
    assert ds.tj("verify")["ok"] is True
    cat.write(f"CALL ducklake_expire_snapshots('l', versions => [{recorded}])")
    p = ds.tether("verify", check_rc=3)
    assert f"snapshot {recorded} is no longer in the catalog" in p.stdout + p.stderr


def test_init_sql_from_secrets_runs_on_a_duckdb_connection(ds, tmp_path):
    cat = duckdb_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    ds.write(".tether/secrets.toml", '[objects."lake"]\ninit_sql = ["SET threads = 1", "SELECT error(\'init_sql ran\')"]\n')
    p = ds.tether("status", check_rc=None, env=cat.env)
    assert "init_sql ran" in p.stdout + p.stderr
    ds.write(".tether/secrets.toml", '[objects."lake"]\ninit_sql = "SET threads = 1"\n')
    p = ds.tether("status", check_rc=None, env=cat.env)
    assert "init_sql must be an array of strings" in p.stdout + p.stderr
    ds.write(".tether/secrets.toml", '[objects."lake"]\ninit_sql = ["SET threads = 1"]\n')
    assert [o["status"] for o in ds.tj("status", env=cat.env)["objects"]] == ["never-recorded"]


def test_a_sqlite_catalog_maps_no_server_client_library(ds, tmp_path):
    """The Postgres and MySQL connections are modules of their own, loaded
    on first need: a status of a SQLite catalog maps neither libpq nor
    libmariadb (nor the thirty libraries they pull)."""
    cat = sqlite_catalog(tmp_path)
    cat.write("CREATE TABLE l.t(a INTEGER)")
    add(ds, cat)
    p = ds.tether("status", env={"LD_DEBUG": "files"})
    loaded = p.stderr
    assert "tether-backend-ducklake.so" in loaded and "libsqlite3" in loaded
    for lib in ("libpq", "libmariadb", "tether-ducklake-pg", "tether-ducklake-mysql", "libduckdb"):
        assert lib not in loaded, lib
