"""tether publish --to postgresql://...: the export's tables upserted into a
real Postgres (dbservers.py's postgres_server, password enforced), read
back with psycopg2 and compared with export_expect.py's tables from git:
the first publish, an incremental one (only the new commits sent), a
repeated one (nothing changes), and one after `git rebase` dropped a
commit (its rows, and those of the commits rewritten after it, leave the
tables). Refusals: a wrong or missing password, a password in the URL,
another dataset's schema, tables that are not tether's, a newer schema
version."""
import psycopg2
import pytest

from conftest import dated
from export_expect import COLUMNS, all_commits, expected_tables, git_refs, meta_subset, sorted_rows

TABLES = list(COLUMNS)


def url(pg, db):
    return f"postgresql://{pg.user}@{pg.host}:{pg.port}/{db}"


def publish(ds, pg, db, *extra, check_rc=0, password=True):
    env = {"PGPASSWORD": pg.password} if password else {"PGPASSWORD": ""}
    if check_rc == 0:
        return ds.tj("publish", "--to", url(pg, db), *extra, env=env)
    return ds.tether("publish", "--to", url(pg, db), *extra, env=env, check_rc=check_rc)


def read_pg(pg, db, schema="tether"):
    conn = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, password=pg.password, dbname=db)
    got = {}
    with conn, conn.cursor() as cur:
        for table in TABLES:
            cur.execute(f'SELECT * FROM "{schema}".{table}')
            assert [d[0] for d in cur.description] == COLUMNS[table]
            got[table] = [tuple(r) for r in cur.fetchall()]
    conn.close()
    return got


def check(got, ds):
    want = expected_tables(str(ds.root), all_commits(ds.root), ds.dataset_id(), git_refs(str(ds.root)))
    for table in TABLES:
        if table != "meta":
            assert sorted_rows(got[table]) == sorted_rows(want[table]), table
    assert sorted_rows(meta_subset(got["meta"])) == sorted_rows(want["meta"])


def step(ds, i):
    ds.write("data/plates/p%d.csv" % i, f"well\nA{i}\n")
    ds.write("data/samples.csv", f"s{i}\n")
    ds.tether("commit", "-m", f"step {i}", env=dated(1_700_000_000 + 60 * i))


@pytest.fixture
def pds(ds):
    ds.write("data/plates/p0.csv", "well\nA0\n")
    ds.write("data/samples.csv", "s0\n")
    ds.tether("add", "raw/plates", "data/plates", "--kind", "file", "--file", "mutable")
    ds.tether("add", "raw/samples", "data/samples.csv", "--kind", "file", "--file", "mutable")
    for i in range(4):
        step(ds, i)
    return ds


def test_first_incremental_and_repeated_publish(pds, postgres_server):
    pg, db = postgres_server, postgres_server.database("publish")
    r = publish(pds, pg, db)
    assert (r["new_commits"], r["removed_commits"], r["unchanged_commits"]) == (4, 0, 0)
    check(read_pg(pg, db), pds)
    step(pds, 4)
    step(pds, 5)
    r = publish(pds, pg, db)
    # only the two new commits and their objects went over
    assert (r["new_commits"], r["new_objects"], r["removed_commits"], r["unchanged_commits"]) == (2, 4, 0, 4)
    check(read_pg(pg, db), pds)
    before = read_pg(pg, db)
    r = publish(pds, pg, db)
    assert (r["new_commits"], r["new_objects"], r["removed_commits"]) == (0, 0, 0)
    assert read_pg(pg, db) == before


def test_a_commit_dropped_by_a_rebase_leaves_the_tables(pds, postgres_server):
    pg, db = postgres_server, postgres_server.database("rebase")
    # a commit that touches only a file of the checkout, so the rebase is clean
    pds.write("NOTES.md", "notes\n")
    pds.git("add", "NOTES.md")
    pds.git("commit", "-q", "-m", "notes")
    dropped = pds.head()
    step(pds, 9)
    publish(pds, pg, db)
    assert dropped in {r[0] for r in read_pg(pg, db)["commits"]}
    old_tip = pds.head()
    pds.git("rebase", "-q", "--onto", f"{dropped}~1", dropped)
    r = publish(pds, pg, db)
    # the dropped commit and the old copy of the one after it are gone
    assert (r["new_commits"], r["removed_commits"]) == (1, 2)
    got = read_pg(pg, db)
    ids = {row[0] for row in got["commits"]}
    assert dropped not in ids and old_tip not in ids
    assert not {row[0] for row in got["objects"]} - ids
    check(got, pds)


def test_passwords_come_from_the_environment_or_secrets_never_the_url(pds, postgres_server):
    pg, db = postgres_server, postgres_server.database("auth")
    p = publish(pds, pg, db, check_rc=1, password=False)
    assert url(pg, db) in p.stderr and "password" in p.stderr
    p = pds.tether("publish", "--to", pg.url(db), check_rc=2)
    assert "carries a password" in p.stderr and pg.password not in p.stderr
    p = pds.tether("publish", "--to", url(pg, db), check_rc=1, env={"PGPASSWORD": "wrong"})
    assert "cannot connect" in p.stderr
    assert "tether" not in pg.psql("SELECT nspname FROM pg_namespace", db)
    (pds.root / ".tether" / "secrets.toml").write_text(
        f'[databases."postgresql://{pg.user}@{pg.host}:{pg.port}/"]\npassword = "{pg.password}"\n')
    r = pds.tj("publish", "--to", url(pg, db), env={"PGPASSWORD": ""})
    assert r["new_commits"] == 4


def test_schemas_that_are_not_this_datasets_are_refused(pds, postgres_server, new_repo):
    pg, db = postgres_server, postgres_server.database("foreign")
    publish(pds, pg, db)
    other = new_repo("other")
    other.tether("init")
    other.write("x.csv", "x\n")
    other.tether("add", "x", "x.csv", "--kind", "file")
    other.tether("commit", "-m", "x")
    p = publish(other, pg, db, check_rc=3)
    assert "holds dataset" in p.stderr
    assert publish(other, pg, db, "--schema", "other")["new_commits"] == 1
    pg.psql("UPDATE tether.meta SET value = '99' WHERE name = 'schema_version'", db)
    p = publish(pds, pg, db, check_rc=3)
    assert "newer tether" in p.stderr
    pg.psql("CREATE SCHEMA mine; CREATE TABLE mine.commits (id int)", db)
    p = publish(pds, pg, db, "--schema", "mine", check_rc=3)
    assert "not one tether writes" in p.stderr
    assert pg.psql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'mine'", db).strip() == "1"


def test_a_dataset_with_no_commit_publishes_empty_tables_then_its_first(ds, postgres_server):
    """Before the first commit the tables are created empty (meta aside);
    the first commits then go over as new ones."""
    pg, db = postgres_server, postgres_server.database("empty")
    r = publish(ds, pg, db)
    assert (r["new_commits"], r["new_objects"], r["removed_commits"], r["created"]) == (0, 0, 0, True)
    got = read_pg(pg, db)
    assert all(got[t] == [] for t in TABLES if t != "meta") and len(got["meta"]) == 6
    ds.write("data/samples.csv", "s0\n")
    ds.tether("add", "raw/samples", "data/samples.csv", "--kind", "file", "--file", "mutable")
    step(ds, 0)
    r = publish(ds, pg, db)
    assert (r["new_commits"], r["new_objects"], r["created"]) == (1, 1, False)
    check(read_pg(pg, db), ds)
