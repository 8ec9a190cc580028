"""The iceberg backend against real SQL catalogs: pyiceberg 0.12's
SqlCatalog (the pinned oracle, tests/e2e/iceberg_oracle.py) on SQLite and
on a real Postgres (tests/e2e/dbservers.py), sharing the iceberg_tables
schema with Java's JdbcCatalog.

pyiceberg makes and writes every table; tether pins, forks, promotes and
diffs; pyiceberg then reads every tether.* tag and tether.ws.* branch,
appends on the fork and sees the promote. The lifecycle every Forkable kind
passes is test_lifecycle.py's, through lifecycle_adapters.IcebergSqlite;
this file holds what is Iceberg's own: the metadata tether writes, the
catalogs, races, refusals."""
import json
import subprocess
import threading
from pathlib import Path

import iceberg_oracle as ib
import pytest

from conftest import TETHER_BIN, check_sanitizers
from test_git_backend import gds, jj_problem  # noqa: F401


@pytest.fixture(params=["sqlite", "postgres"])
def cat(request, tmp_path):
    if request.param == "sqlite":
        return ib.sqlite_catalog(tmp_path)
    return ib.postgres_catalog(request.getfixturevalue("postgres_server"), tmp_path)


def catalog_secrets(cat):
    """secrets.toml's [backends.iceberg]: the catalog's URI (and Postgres's
    password), never committed."""
    uri = cat.get("tether_uri", cat["uri"])
    pw = f', password = "{cat["password"]}"' if "password" in cat else ""
    return f'[backends.iceberg]\ncatalog = {{uri = "{uri}"{pw}}}\n'


def configure(ds, cat, secrets=None):
    """tether.toml: the committed catalog properties; secrets.toml: secrets,
    by default catalog_secrets(cat)."""
    with open(ds.p("tether.toml"), "a") as f:
        f.write(f'\n[backends.iceberg]\ncatalog = {{type = "sql", warehouse = "{cat["warehouse"]}"}}\n')
    ds.write(".tether/secrets.toml", catalog_secrets(cat) if secrets is None else secrets)


def add(ds, key, identifier, *extra, check_rc=0, env=None):
    return ds.tether("add", key, identifier, "--kind", "iceberg", *extra, check_rc=check_rc, env=env)


def tether_refs(cat, identifier="ns.t"):
    return {n: r for n, r in ib.refs(cat, identifier).items() if n.startswith("tether.")}


def add_and_pin(ds, cat, identifier="ns.t"):
    """tbl added and committed: its state is the table's head, pinned by the
    tag tether.<pin id> and no other ref; (head, tag)."""
    add(ds, "tbl", identifier)
    ds.tether("commit", "-m", "first")
    m = ds.manifest("tbl")
    head = ib.head(cat, identifier)
    tag = m["pin_ref"]["tag"]
    assert m["state"] == {"snapshot_id": head} and tag == "tether." + m["pin"], m
    assert tether_refs(cat, identifier) == {tag: (head, "tag")}
    return head, tag


def test_pin_fork_write_promote_read_back_by_pyiceberg(gds, cat):
    ib.create_table(cat, "ns.t", rows=5)
    configure(gds, cat)
    s1, tag = add_and_pin(gds, cat)
    assert ib.rows_at(cat, "ns.t", ib.refs(cat)[tag][0]) == 5

    # A fork: a branch pyiceberg appends to; the trunk does not move.
    gds.tether("new", "-b", "feat")
    [fork] = [n for n in tether_refs(cat) if n.startswith("tether.ws.")]
    assert fork == f"tether.ws.{gds.dataset_id()[:8]}.feat" and ib.refs(cat)[fork] == (s1, "branch")
    s2 = ib.append(cat, "ns.t", 3, branch=fork, start=100)
    assert ib.head(cat) == s1
    r = gds.tj("commit", "-m", "on the fork")
    assert [o["action"] for o in r["objects"]] == ["pinned"]
    assert gds.manifest("tbl")["state"] == {"snapshot_id": s2}

    # diff: one entry per snapshot, from the summaries.
    d = gds.tj("diff", "--content", "HEAD~1", "HEAD")
    [o] = d["objects"]
    assert o["content"]["unit"] == "snapshots"
    assert [e["text"] for e in o["content"]["entries"]] == ["append: +3 rows, +1 files"]
    log = gds.tj("log", "tbl")["entries"]
    assert [e["id"] for e in log] == [str(s2), str(s1)] and log[0]["message"] == "append: +3 rows, +1 files"

    # Every tether.* ref reads back in pyiceberg.
    for name, (sid, kind) in tether_refs(cat).items():
        assert ib.rows_at(cat, "ns.t", sid) in (5, 8), name

    r = gds.tj("promote")
    assert r["objects"][0]["action"] == "promoted", r
    assert ib.head(cat) == s2 and ib.rows_at(cat, "ns.t", ib.head(cat)) == 8
    # pyiceberg keeps writing on main after tether's commits.
    s3 = ib.append(cat, "ns.t", 1, start=200)
    assert ib.rows_at(cat, "ns.t", s3) == 9


def test_metadata_tether_writes_follows_the_spec(gds, cat, tmp_path):
    t = ib.create_table(cat, "ns.t", rows=2)
    configure(gds, cat)
    before = ib.load(cat)
    old_md = json.loads(Path(before.metadata_location[len("file://"):]).read_text())
    add(gds, "tbl", "ns.t")
    gds.tether("commit", "-m", "pin")
    after = ib.load(cat)
    path = Path(after.metadata_location[len("file://"):])
    new_md = json.loads(path.read_text())
    # The name pyiceberg and Java give the next file, beside the others.
    old_n = int(Path(before.metadata_location).name.split("-")[0])
    assert path.name.startswith(f"{old_n + 1:05d}-") and path.name.endswith(".metadata.json")
    assert path.parent == Path(before.metadata_location[len("file://"):]).parent
    # Every field carried over; only refs, last-updated-ms and metadata-log move.
    changed = {k for k in set(old_md) | set(new_md) if old_md.get(k) != new_md.get(k)}
    assert changed == {"refs", "last-updated-ms", "metadata-log"}, changed
    assert new_md["last-sequence-number"] == old_md["last-sequence-number"]
    assert new_md["metadata-log"][-1] == {"metadata-file": before.metadata_location,
                                          "timestamp-ms": old_md["last-updated-ms"]}
    assert new_md["last-updated-ms"] >= old_md["last-updated-ms"]
    # The catalog row: previous_metadata_location is the file replaced.
    assert after.metadata_location != before.metadata_location
    del t


def test_v0_catalog_schema_and_java_style_local_paths(gds, tmp_path):
    """Java's JdbcCatalog v0 schema (no iceberg_type column) and its
    spelling of local metadata paths, file:/p, are read and written."""
    import sqlite3
    cat = ib.sqlite_catalog(tmp_path)
    ib.create_table(cat, "ns.t", rows=3)
    db = sqlite3.connect(cat["uri"][len("sqlite:///"):])
    db.execute("ALTER TABLE iceberg_tables DROP COLUMN iceberg_type")
    loc = db.execute("SELECT metadata_location FROM iceberg_tables").fetchone()[0]
    db.execute("UPDATE iceberg_tables SET metadata_location = ?", ("file:" + loc[len("file://"):],))
    db.commit()
    db.close()
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    gds.tether("commit", "-m", "v0")
    [tag] = tether_refs(cat)
    assert ib.rows_at(cat, "ns.t", ib.refs(cat)[tag][0]) == 3


def test_empty_table_records_minus_one_and_cannot_fork(gds, cat):
    ib.create_table(cat, "ns.empty")
    configure(gds, cat)
    add(gds, "e", "ns.empty")
    gds.tether("commit", "-m", "empty")
    m = gds.manifest("e")
    assert m["state"] == {"snapshot_id": -1} and "tag" not in m["pin_ref"]
    assert ib.refs(cat, "ns.empty") == {}
    v = gds.tj("verify")
    assert v["ok"] is True, v
    p = gds.tether("new", "-b", "feat", check_rc=3)
    assert "has no snapshot yet, so it cannot be forked" in p.stderr
    assert ib.refs(cat, "ns.empty") == {}


def test_racing_forks_one_wins_the_other_is_refused(gds, cat, tmp_path):
    """Two checkouts of one dataset fork the same bookmark's branch at once:
    each commit requires the branch absent (assert-ref-snapshot-id null),
    so the catalog lets one in and refuses the other."""
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    gds.tether("commit", "-m", "first")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(gds.root), str(other)], check=True)
    (other / ".tether").mkdir(exist_ok=True)
    (other / ".tether" / "secrets.toml").write_text(gds.p(".tether/secrets.toml").read_text())
    procs = []

    def run(root):
        p = subprocess.run([TETHER_BIN, "new", "-b", "race"], cwd=str(root), env=gds.env,
                           capture_output=True, text=True)
        procs.append(p)

    threads = [threading.Thread(target=run, args=(r,)) for r in (gds.root, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        check_sanitizers(p)
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 3], [(p.returncode, p.stderr) for p in procs]
    loser = [p for p in procs if p.returncode == 3][0]
    assert "tether.ws." in loser.stderr and ("exists already" in loser.stderr or "created concurrently"
                                              in loser.stderr or "already exists" in loser.stderr), loser.stderr
    assert [n for n in ib.refs(cat) if n.startswith("tether.ws.")] == [f"tether.ws.{gds.dataset_id()[:8]}.race"]


def written_fork(gds, cat, rows):
    """A table of `rows` rows recorded on main, then forked on bookmark
    feat, 2 rows appended there by pyiceberg and committed."""
    ib.create_table(cat, "ns.t", rows=rows)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    gds.tether("commit", "-m", "first")
    gds.tether("new", "-b", "feat")
    fork = [n for n in ib.refs(cat) if n.startswith("tether.ws.")][0]
    ib.append(cat, "ns.t", 2, branch=fork, start=10)
    gds.tether("commit", "-m", "fork work")


def test_promote_refused_when_not_a_fast_forward(gds, cat):
    written_fork(gds, cat, 1)
    main_head = ib.append(cat, "ns.t", 1, start=50)  # main moves on behind tether's back
    p = gds.tether("promote", "tbl", check_rc=3)
    assert "diverged" in p.stderr or "not a fast-forward" in p.stderr, p.stderr
    assert ib.head(cat) == main_head


def test_diff_of_diverged_states_compares_totals(gds, cat):
    written_fork(gds, cat, 4)
    gds.git("checkout", "-q", "main")
    gds.tether("new")
    ib.append(cat, "ns.t", 7, start=50)
    gds.tether("commit", "-m", "main")
    d = gds.tj("diff", "--content", "feat", "main")
    c = d["objects"][0]["content"]
    assert c.get("diverged") is True and "+5 rows" in c["summary"] and "6 -> 11 rows" in c["summary"], c


def test_add_at_ref_or_snapshot(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    s1 = ib.head(cat)
    ib.load(cat).manage_snapshots().create_tag(s1, "v1").commit()
    ib.append(cat, "ns.t", 1, start=5)
    configure(gds, cat)
    add(gds, "a", "ns.t", "--at", "v1")
    add(gds, "b", "ns.t", "--at", str(s1))
    gds.tether("commit", "-m", "old")
    assert gds.manifest("a")["state"] == gds.manifest("b")["state"] == {"snapshot_id": s1}
    p = add(gds, "c", "ns.t", "--at", "12345", check_rc=2)
    assert "12345" in p.stderr
    h = gds.tj("open", "a")
    assert (h["snapshot_id"], h["read_only"], h["catalog"], h["identifier"]) == (s1, True, "default", "ns.t"), h


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_unknown_format_version_is_refused_and_nothing_written(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    loc = ib.load(cat).metadata_location[len("file://"):]
    md = json.loads(Path(loc).read_text())
    md["format-version"] = 9
    Path(loc).write_text(json.dumps(md))
    p = add(gds, "tbl", "ns.t", check_rc=3)
    assert "format version 9 is not supported" in p.stderr and "ns.t" in p.stderr, p.stderr
    assert not gds.manifest_path("tbl").exists()


def test_damaged_or_missing_metadata_is_named(gds, tmp_path):
    cat = ib.sqlite_catalog(tmp_path)
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    loc = ib.load(cat).metadata_location[len("file://"):]
    text = Path(loc).read_text()
    Path(loc).write_text('{"format-version": 2,\n  "refs": [1, 2,\n')
    p = gds.tether("status", check_rc=None)
    assert p.returncode != 0 and f"{loc}:3:" in p.stderr.replace("file://", ""), p.stderr
    # A parent cycle ends the walk instead of looping.
    md = json.loads(text)
    s = md["snapshots"][0]
    s["parent-snapshot-id"] = s["snapshot-id"]
    Path(loc).write_text(json.dumps(md))
    assert len(gds.tj("log", "tbl")["entries"]) == 1
    Path(loc).unlink()
    p = gds.tether("status", check_rc=None)
    assert p.returncode != 0 and "metadata file" in p.stderr and "is missing" in p.stderr, p.stderr


def test_a_float_in_the_metadata_is_refused_before_rewriting(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    loc = ib.load(cat).metadata_location[len("file://"):]
    files = sorted(Path(loc).parent.iterdir())
    md = json.loads(Path(loc).read_text())
    md["x-vendor-ratio"] = 0.1
    Path(loc).write_text(json.dumps(md))
    p = gds.tether("commit", "-m", "x", check_rc=3)
    assert "floating-point" in p.stderr and "cannot carry" in p.stderr, p.stderr
    assert sorted(Path(loc).parent.iterdir()) == files and ib.refs(cat).keys() == {"main"}


@pytest.mark.parametrize("table", ['uri = "sqlite:////x.db"', 'token = "t0ps3cret"', 'credential = "a:b"'])
def test_a_committed_catalog_uri_or_token_is_refused(gds, tmp_path, table):
    cat = ib.sqlite_catalog(tmp_path)
    ib.create_table(cat, "ns.t", rows=1)
    with open(gds.p("tether.toml"), "a") as f:
        f.write(f'\n[backends.iceberg]\ncatalog = {{type = "sql", {table}}}\n')
    gds.write(".tether/secrets.toml", f'[backends.iceberg]\ncatalog = {{uri = "{cat["uri"]}"}}\n')
    p = add(gds, "tbl", "ns.t", check_rc=3)
    key = table.split(" ")[0]
    assert f'catalog property "{key}" may not be committed' in p.stderr and "secrets.toml" in p.stderr, p.stderr
    assert "t0ps3cret" not in p.stderr


def test_a_clones_locator_with_a_catalog_uri_is_refused(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    text = gds.manifest_path("tbl").read_text()
    gds.manifest_path("tbl").write_text(text + '\n[locator.catalog]\nuri = "http://evil.example/"\n')
    p = gds.tether("status", check_rc=None)
    assert p.returncode != 0 and 'catalog property "uri" may not be committed' in p.stderr, p.stderr


def test_missing_table_secrets_and_wrong_password(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    p = add(gds, "tbl", "ns.missing", check_rc=2)
    assert "ns.missing does not exist" in p.stderr, p.stderr
    gds.write(".tether/secrets.toml", "")
    p = add(gds, "tbl", "ns.t", check_rc=None)
    assert p.returncode != 0 and "has no uri" in p.stderr and "secrets.toml" in p.stderr, p.stderr
    if "password" in cat:
        configure_pw = f'[backends.iceberg]\ncatalog = {{uri = "{cat["tether_uri"]}", password = "wrong"}}\n'
        gds.write(".tether/secrets.toml", configure_pw)
        p = add(gds, "tbl", "ns.t", check_rc=None)
        assert p.returncode != 0 and "password authentication failed" in p.stderr, p.stderr
        assert "wrong" not in p.stderr.replace("password authentication failed", "")


def test_a_lost_compare_and_swap_is_refused_and_leaves_no_file(gds, tmp_path):
    """The catalog row never moves (a trigger ignores every UPDATE, as if a
    peer won each time): tether retries, then refuses, and deletes every
    metadata file it wrote; the table is as it was."""
    import sqlite3
    cat = ib.sqlite_catalog(tmp_path)
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat)
    add(gds, "tbl", "ns.t")
    db = sqlite3.connect(cat["uri"][len("sqlite:///"):])
    db.execute("CREATE TRIGGER lose BEFORE UPDATE ON iceberg_tables BEGIN SELECT RAISE(IGNORE); END")
    db.commit()
    db.close()
    meta = Path(ib.load(cat).metadata_location[len("file://"):]).parent
    files = sorted(meta.iterdir())
    p = gds.tether("commit", "-m", "x", check_rc=3)
    assert "refused, the head moved" in p.stderr and "nothing was changed" in p.stderr, p.stderr
    assert sorted(meta.iterdir()) == files and ib.refs(cat).keys() == {"main"}
    assert gds.commit_count() == 0


def test_postgres_password_from_the_environment(gds, postgres_server, tmp_path):
    cat = ib.postgres_catalog(postgres_server, tmp_path)
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat, secrets=f'[backends.iceberg]\ncatalog = {{uri = "{cat["tether_uri"]}"}}\n')
    p = add(gds, "tbl", "ns.t", check_rc=None, env={"PGPASSWORD": "", "PGPASSFILE": str(tmp_path / "none")})
    assert p.returncode != 0 and cat["password"] not in p.stderr, p.stderr
    add(gds, "tbl", "ns.t", env={"PGPASSWORD": cat["password"]})
    gds.tether("commit", "-m", "pg", env={"PGPASSWORD": cat["password"]})
    assert len(tether_refs(cat)) == 1


def test_secrets_in_a_misspelt_key_are_refused(gds, cat):
    ib.create_table(cat, "ns.t", rows=1)
    configure(gds, cat, secrets=f'[backends.iceberg]\ncatlog = {{uri = "{cat["uri"]}"}}\n')
    p = add(gds, "tbl", "ns.t", check_rc=None)
    assert p.returncode != 0 and "unknown key 'catlog' in backends.iceberg" in p.stderr, p.stderr
