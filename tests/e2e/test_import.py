"""tether import SOURCE --query SQL, from a real Postgres (dbservers.py)
and from SQLite: the README's query over Icechunk repositories, adds,
updates, --sync removals, --dry-run / --plan / --from-plan, and rows that
are refused (unknown kind, a repeated key, a key outside the dataset, SQL
that fails), each naming its row and column, with nothing written."""
import json
import sqlite3

import icechunk_oracle as oracle  # first: it quiets icechunk's logging
import psycopg2
import pytest

README_QUERY = ("SELECT 'zarr/' || plate_name AS key, 'icechunk' AS kind, object_uri AS uri "
                "FROM data_object")


@pytest.fixture
def stores(tmp_path):
    paths = {}
    for name in ("plate1", "plate2", "plate3"):
        paths[name] = tmp_path / f"{name}.icechunk"
        oracle.create(paths[name])
    return paths


class SQLiteRegistry:
    def __init__(self, path):
        self.path = path
        self.source = str(path)
        self.env = {}

    def run(self, sql, rows=()):
        db = sqlite3.connect(self.path)
        with db:
            if rows:
                db.executemany(sql, rows)
            else:
                db.executescript(sql)
        db.close()


class PostgresRegistry:
    def __init__(self, pg, db):
        self.pg, self.db = pg, db
        self.source = f"postgresql://{pg.user}@{pg.host}:{pg.port}/{db}"
        self.env = {"PGPASSWORD": pg.password}

    def run(self, sql, rows=()):
        conn = psycopg2.connect(host=self.pg.host, port=self.pg.port, user=self.pg.user,
                                password=self.pg.password, dbname=self.db)
        with conn, conn.cursor() as cur:
            if rows:
                cur.executemany(sql.replace("?", "%s"), rows)
            else:
                cur.execute(sql)
        conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def registry(request, tmp_path, stores):
    if request.param == "sqlite":
        reg = SQLiteRegistry(tmp_path / "registry.db")
    else:
        pg = request.getfixturevalue("postgres_server")
        reg = PostgresRegistry(pg, pg.database("registry"))
    reg.run("CREATE TABLE data_object (plate_name text, object_uri text, kind text)")
    reg.run("INSERT INTO data_object VALUES (?, ?, 'icechunk')",
            [(name, str(path)) for name, path in sorted(stores.items())])
    return reg


def imp(ds, reg, *args, check_rc=0):
    if check_rc == 0:
        return ds.tj("import", reg.source, *args, env=reg.env)
    return ds.tether("import", reg.source, *args, env=reg.env, check_rc=check_rc)


def test_the_readme_query_plans_then_adds_and_never_records(ds, registry, stores):
    r = imp(ds, registry, "--query", README_QUERY, "--dry-run")
    actions = r["plan"]["actions"]
    assert [(a["action"], a["key"]) for a in actions] == [("add", "zarr/plate1"), ("add", "zarr/plate2"),
                                                         ("add", "zarr/plate3")]
    assert ds.objects_files() == []
    r = imp(ds, registry, "--query", README_QUERY)
    assert r["added"] == ["zarr/plate1", "zarr/plate2", "zarr/plate3"]
    for name, path in stores.items():
        m = ds.manifest(f"zarr/{name}")
        assert m["kind"] == "icechunk" and m["locator"]["uri"] == str(path)
        assert "state" not in m and "pin" not in m  # nothing recorded
    # the same rows again: nothing to do
    assert imp(ds, registry, "--query", README_QUERY) == {"added": [], "updated": [], "removed": []}
    ds.tether("commit", "-m", "imported")
    assert "state" in ds.manifest("zarr/plate1")


def test_update_and_sync_remove(ds, registry, stores):
    imp(ds, registry, "--query", README_QUERY)
    ds.tether("commit", "-m", "imported")
    state = ds.manifest("zarr/plate2")["state"]
    registry.run("DELETE FROM data_object WHERE plate_name = 'plate3'")
    q = README_QUERY + " ORDER BY plate_name"
    # without --sync an object no row names stays
    assert imp(ds, registry, "--query", q)["removed"] == []
    r = imp(ds, registry, "--query", q, "--sync")
    assert r["removed"] == ["zarr/plate3"]
    assert not (ds.root / ".tether/objects/zarr/plate3.toml").exists()
    # a policy column updates the manifest; the recorded state of the same
    # system stays
    q2 = ("SELECT 'zarr/' || plate_name AS key, kind, object_uri AS uri, 'record' AS pin FROM data_object "
          "WHERE plate_name = 'plate2'")
    r = imp(ds, registry, "--query", q2)
    assert r["updated"] == ["zarr/plate2"]
    m = ds.manifest("zarr/plate2")
    assert m["policy"]["pin"] == "record" and m["state"] == state


def test_plan_and_from_plan(ds, registry, tmp_path):
    plan = tmp_path / "import.plan.json"
    r = imp(ds, registry, "--query", README_QUERY, "--plan", plan)
    assert r["plan_file"] == str(plan) and ds.objects_files() == []
    saved = json.loads(plan.read_text())
    assert saved["op"] == "import" and len(saved["actions"]) == 3
    r = ds.tj("import", "--from-plan", plan)
    assert len(r["added"]) == 3
    # applied again, the plan is stale: its manifests are there now
    p = ds.tether("import", "--from-plan", plan, check_rc=3)
    assert "stale plan" in p.stderr
    p = ds.tether("import", registry.source, "--from-plan", plan, check_rc=2)
    assert "--from-plan takes no SOURCE" in p.stderr


@pytest.mark.parametrize("query, says", [
    ("SELECT 'zarr/a' AS key, 'no-such-kind' AS kind, object_uri AS uri FROM data_object",
     "row 1, column kind: unknown kind 'no-such-kind'"),
    ("SELECT 'zarr/same' AS key, kind, object_uri AS uri FROM data_object",
     "row 2, column key: 'zarr/same' repeats row 1"),
    ("SELECT '../outside/' || plate_name AS key, kind, object_uri AS uri FROM data_object",
     "row 1, column key: invalid object key '../outside/plate1'"),
    ("SELECT 'zarr/' || plate_name AS key, kind, object_uri AS uri, 'sometimes' AS write FROM data_object",
     "row 1, column write: --write must be"),
    ("SELECT plate_name AS key FROM data_object", "no 'kind' column"),
    ("SELECT nothing FROM no_such_table", "the query failed"),
])
def test_bad_rows_and_bad_sql_are_refused_and_nothing_is_written(ds, registry, query, says):
    ds.write("keep.csv", "k\n")
    ds.tether("add", "keep", "keep.csv", "--kind", "file")
    before = ds.tree()
    p = imp(ds, registry, "--query", query + " ORDER BY 1" if "FROM data_object" in query else query,
            "--sync", check_rc=2)
    assert says in p.stderr, p.stderr
    assert ds.tree() == before


def test_a_query_that_writes_is_refused(ds, registry):
    p = imp(ds, registry, "--query", "DELETE FROM data_object RETURNING plate_name AS key, kind", check_rc=2)
    assert "read-only transaction" in p.stderr or "the query would write" in p.stderr, p.stderr
    registry_rows = imp(ds, registry, "--query", README_QUERY, "--dry-run")["plan"]["actions"]
    assert len(registry_rows) == 3


def test_a_source_that_is_no_database_is_refused(ds, tmp_path):
    p = ds.tether("import", tmp_path / "absent.db", "--query", README_QUERY, check_rc=1)
    assert "absent.db: cannot read" in p.stderr
    (tmp_path / "notes.db").write_text("not a database\n")
    p = ds.tether("import", tmp_path / "notes.db", "--query", README_QUERY, check_rc=2)
    assert "notes.db: the query failed: file is not a database" in p.stderr
    p = ds.tether("import", "mysql://h/db", "--query", README_QUERY, check_rc=2)
    assert "import reads postgresql:// URLs and SQLite files" in p.stderr
    assert ds.objects_files() == []
