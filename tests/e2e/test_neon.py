"""The neon backend against the fake Neon control plane (tests/e2e/neonfake.py),
which holds every request and answer to Neon's OpenAPI document and runs
each branch as a real Postgres cluster: the probe, quiescence and the
handle's URL go to real servers. The data is written and read with
psycopg2 on the branch's own server, never through tether.

What the lifecycle suite (adapter NeonAdapter) does not hold: the state's
shape and what counts as change, the shared endpoint, quiescence, pins as
child branches and the sibling rule, and bad input: a wrong key, a missing
project, a branch deleted behind tether's back, a compute that is gone, a
hostile manifest, 423/429/503 and slow operations; gc --prune-workspaces
on Neon working branches (siblings listed under their workspace), and the
conditional delete (delete_working_ref_if) refusing a branch written to
after gc or drop read it.
"""
import json

import pytest

from conftest import expected_pin, run_stopped
from lifecycle_adapters import NeonAdapter

KEY = "pg"


class Neon:
    def __init__(self, server, ds, project):
        self.server, self.ds, self.project = server, ds, project
        self.pid = project["project_id"]

    def sql(self, sql, branch="main"):
        return self.server.sql(self.project, branch, sql)

    def branches(self):
        return self.server.branches(self.pid)

    def add(self, key=KEY, *extra, check_rc=0):
        return self.ds.tj("add", key, "--kind", "neon", "--project-id", self.pid, "--database", "neondb",
                          "--role", "neondb_owner", *extra, check_rc=check_rc)


def secrets_for(server, key=KEY, **extra):
    lines = [f'[objects."{key}"]', f'api_url = "{server.api_url}"', 'api_key_env = "TEST_NEON_KEY"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def neon(ds, neon_server):
    project = neon_server.project()
    ds.env["TEST_NEON_KEY"] = neon_server.key
    (ds.root / ".tether" / "secrets.toml").write_text(secrets_for(neon_server))
    n = Neon(neon_server, ds, project)
    n.sql("CREATE TABLE t (id int primary key, v text)")
    n.sql("INSERT INTO t VALUES (1, 'one')")
    yield n
    neon_server.clear_faults()
    neon_server.revive()
    assert neon_server.violations() == []
    neon_server.drop(n.pid)


def test_add_commit_pins_a_child_branch_at_the_lsn(neon):
    ds = neon.ds
    r = neon.add()
    assert r["tier"] == "forkable"
    assert ds.manifest(KEY)["locator"] == {"project_id": neon.pid, "database": "neondb", "role": "neondb_owner",
                                           "branch": "main"}
    r = ds.tj("commit", "-m", "first")
    m = ds.manifest(KEY)
    st = m["state"]
    assert set(st) == {"lsn", "commit_xid", "branch", "timeline"}
    assert st["branch"] == "main" and st["timeline"] == "main"
    (xid,) = neon.sql("SELECT xmin::text FROM t WHERE id = 1")[0]
    assert st["commit_xid"] == xid
    pin = expected_pin(ds.dataset_id(), "neon", {"project_id": neon.pid, "branch": "main"},
                       {"commit_xid": st["commit_xid"], "branch": "main"})
    assert r["objects"][0]["pin"] == pin
    b = neon.branches()
    assert b[f"tether.{pin}"]["parent_id"] == b["main"]["id"]
    assert b[f"tether.{pin}"]["parent_lsn"] == st["lsn"]
    assert m["pin_ref"]["branch"] == f"tether.{pin}"
    # The pin is the data as it was: read on its own server.
    neon.sql("INSERT INTO t VALUES (2, 'two')")
    assert neon.sql("SELECT count(*) FROM t", branch=f"tether.{pin}") == [(1,)]
    # Nothing committed since: no change, whatever the LSN did.
    neon.sql("DELETE FROM t WHERE id = 2")
    r2 = ds.tj("commit", "-m", "second")
    assert r2["commit"] is not None  # a delete is a commit
    neon.sql("SELECT 1")
    assert ds.tj("commit", "-m", "third")["commit"] is None


def test_fork_is_a_child_of_the_pin_and_a_pinned_fork_refork_lands_on_a_sibling(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "base")
    base = ds.head()
    pin1 = ds.manifest(KEY)["pin_ref"]["branch"]
    ds.tj("new", "-b", "feat")
    ws = f"tether.ws.{ds.dataset_id()[:8]}.feat"
    b = neon.branches()
    assert b[ws]["parent_id"] == b[pin1]["id"]
    h = ds.tj("open", KEY)
    assert h["read_only"] is False and h["branch"] == ws and f":{b[ws]['port']}/neondb" in h["uri"]
    neon.sql("INSERT INTO t VALUES (10, 'on the fork')", branch=ws)
    assert neon.sql("SELECT count(*) FROM t") == [(1,)]  # main untouched
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "modified" and st["current"]["timeline"] == ws and st["current"]["branch"] == "main"
    ds.tj("commit", "-m", "fork write")
    feat_head = ds.head()
    pin2 = ds.manifest(KEY)["pin_ref"]["branch"]
    b = neon.branches()
    assert b[pin2]["parent_id"] == b[ws]["id"], "a fork's pin hangs off the fork"
    # The pin is read on a read_only endpoint of its own branch.
    ro = ds.tj("open", KEY, "-r", "HEAD~1")
    assert ro["read_only"] is True and ro["branch"] == pin1 and "default_transaction_read_only" in ro["uri"]
    # Back onto the first pin (restore): the working branch has a pin
    # hanging off it, so the fork lands on a sibling and the old branch
    # stays.
    assert ws + ".2" not in neon.branches(), "a commit on the fork makes no sibling"
    r = ds.tj("restore", "-r", base, KEY)
    assert [o["action"] for o in r["objects"]] == ["reset"], r
    b = neon.branches()
    assert b[ws + ".2"]["parent_id"] == b[pin1]["id"] and ws in b
    assert neon.sql("SELECT count(*) FROM t", branch=ws + ".2") == [(1,)]
    assert ds.tj("open", KEY)["branch"] == ws + ".2"
    # The sibling is the branch in use: a restore onto the second pin
    # checks the condition there (nothing wrote to it) and restores it
    # onto that pin; the older branch is not reused.
    r = ds.tj("restore", "-r", feat_head, KEY)
    assert [o["action"] for o in r["objects"]] == ["reset"], r
    assert ds.tj("open", KEY)["branch"] == ws + ".2"
    assert neon.sql("SELECT count(*) FROM t", branch=ws + ".2") == [(2,)]
    assert ws + ".3" not in neon.branches()
    # Both are feat's (list_working_refs lists the sibling under its
    # workspace), and feat is live: gc prunes neither, even forced.
    assert ds.tj("gc", "--prune-workspaces", "--force-prune", "--no-dry-run")["prune"] == []
    assert {ws, ws + ".2"} <= set(neon.branches())
    # Once feat is gone both are listed as its, the one in use first.
    ds.tj("new", "-b", "other")
    ds.git("branch", "-q", "-D", "feat")
    r = ds.tj("gc", "--prune-workspaces", "--force-prune")
    assert [(p["branch"], p["head"]["timeline"], p["action"]) for p in r["prune"]] == [
        (ws, ws + ".2", "delete"), (ws, ws, "delete")], r


def dead_and_live(neon):
    """A committed dataset with workspaces dead (its bookmark deleted) and
    live (the checkout's); (dead branch, live branch, the pinned state)."""
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "base")
    ds8 = ds.dataset_id()[:8]
    ds.tj("new", "-b", "dead")
    ds.tj("new", "-b", "live")
    ds.git("branch", "-q", "-D", "dead")
    dead, live = f"tether.ws.{ds8}.dead", f"tether.ws.{ds8}.live"
    assert {dead, live} <= set(neon.branches())
    return dead, live, ds.manifest(KEY)["state"]


def prune_rows(r):
    return [(p["branch"], p["head"]["commit_xid"], p["head"]["timeline"], p["pinned"], p["action"], p["done"])
            for p in r["prune"]]


def test_gc_prunes_the_working_branch_of_a_dead_workspace_and_keeps_live_ones(neon):
    ds = neon.ds
    dead, live, st = dead_and_live(neon)
    pins = {n for n in neon.branches() if n.startswith("tether.") and not n.startswith("tether.ws.")}
    # A Neon branch is storage: listed, kept unless --force-prune.
    r = ds.tj("gc", "--prune-workspaces", "--no-dry-run")
    assert prune_rows(r) == [(dead, st["commit_xid"], dead, True, "keep", False)], r
    assert "only --force-prune deletes it" in r["prune"][0]["reason"]
    assert dead in neon.branches()
    r = ds.tj("gc", "--prune-workspaces", "--force-prune")  # a dry run
    assert prune_rows(r) == [(dead, st["commit_xid"], dead, True, "delete", False)], r
    assert dead in neon.branches()
    r = ds.tj("gc", "--prune-workspaces", "--force-prune", "--no-dry-run")
    assert prune_rows(r) == [(dead, st["commit_xid"], dead, True, "delete", True)], r
    b = neon.branches()
    assert dead not in b and live in b and pins <= set(b)
    assert ds.tj("gc", "--prune-workspaces", "--force-prune", "--no-dry-run")["prune"] == []
    assert ds.tj("verify", "--all-history")["ok"] is True
    # Another dataset's working branches are not this one's.
    main = neon.branches()["main"]["id"]
    NeonAdapter()._api_on(neon.server, "POST", f"/projects/{neon.pid}/branches",
                          {"branch": {"name": "tether.ws.00000000.dead", "parent_id": main}})
    assert ds.tj("gc", "--prune-workspaces", "--force-prune", "--no-dry-run")["prune"] == []
    assert "tether.ws.00000000.dead" in neon.branches()


def test_a_branch_written_to_after_gc_listed_it_is_not_deleted(neon):
    ds = neon.ds
    dead, _, st = dead_and_live(neon)
    args = ["gc", "--prune-workspaces", "--force-prune", "--no-dry-run", "--json"]

    def racer():
        neon.sql("INSERT INTO t VALUES (7, 'racer')", branch=dead)
        return neon.sql("SELECT xmin::text FROM t WHERE id = 7", branch=dead)[0][0]

    p, xid = run_stopped(ds, args, "gc:pruning:stop", racer)
    assert p.returncode != 0, p
    assert prune_rows(json.loads(p.stdout)) == [(dead, st["commit_xid"], dead, True, "delete", False)]
    assert (f"Neon project {neon.pid}: branch {dead} moved: expected commit {st['commit_xid']}, found {xid}; "
            "not deleted") in p.stderr, p.stderr
    assert neon.sql("SELECT v FROM t WHERE id = 7", branch=dead) == [("racer",)]

    # A writer in flight (a transaction holding an id) is refused too.
    import psycopg2
    holder = []

    def in_flight():
        port = neon.branches()[dead]["port"]
        conn = psycopg2.connect(host="127.0.0.1", port=port, dbname="neondb", user="neondb_owner",
                                password=neon.project["password"])
        conn.cursor().execute("INSERT INTO t VALUES (8, 'in flight')")
        holder.append(conn)

    try:
        p, _ = run_stopped(ds, args, "gc:pruning:stop", in_flight)
        assert p.returncode != 0, p
        assert f"branch {dead}: 1 session writing" in p.stderr and "not deleted while a session writes to it" \
            in p.stderr, p.stderr
        assert dead in neon.branches()
    finally:
        for conn in holder:
            conn.rollback()
            conn.close()
    # Nobody writing, and the head gc reads is the one it deletes at.
    r = ds.tj("gc", "--prune-workspaces", "--force-prune", "--no-dry-run")
    assert [(p["branch"], p["head"]["commit_xid"], p["pinned"], p["done"]) for p in r["prune"]] == [
        (dead, xid, False, True)]
    assert dead not in neon.branches()


def test_drop_does_not_delete_a_fork_written_to_while_it_ran(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "base")
    ds.tj("new", "-b", "feat")
    ws = f"tether.ws.{ds.dataset_id()[:8]}.feat"
    # A Neon branch is storage: drop keeps it unless --force.
    assert [a["fork"] for a in ds.tj("drop", KEY, "--dry-run")["plan"]["actions"]] == ["keep"]

    def racer():
        neon.sql("INSERT INTO t VALUES (9, 'racer')", branch=ws)

    p, _ = run_stopped(ds, ["drop", KEY, "--force"], "drop:branch-checked:stop", racer)
    assert p.returncode != 0, p
    assert f"{KEY}: {ws} was written to while drop deleted it: not deleted" in p.stderr, p.stderr
    assert f"branch {ws} moved" in p.stderr, p.stderr
    assert neon.sql("SELECT v FROM t WHERE id = 9", branch=ws) == [("racer",)]


def test_objects_of_one_project_share_one_read_write_endpoint(neon):
    ds = neon.ds
    neon.sql("CREATE DATABASE second")
    (ds.root / ".tether" / "secrets.toml").write_text(secrets_for(neon.server) + secrets_for(neon.server, "pg2"))
    neon.add()
    ds.tj("add", "pg2", "--kind", "neon", "--project-id", neon.pid, "--database", "second", "--role", "neondb_owner")
    neon.server.clear_requests()
    r = ds.tj("commit", "-m", "both")
    assert [o["action"] for o in r["objects"]] == ["pinned", "pinned"]
    assert ds.manifest(KEY)["pin"] == ds.manifest("pg2")["pin"], "one project, one state: one pin"
    posts = [q for q in neon.server.requests() if q["method"] == "POST" and q["path"].endswith("/endpoints")]
    assert len(posts) <= 1 and neon.branches()["main"]["endpoints"] == ["read_write"]
    assert len([n for n in neon.branches() if n.startswith("tether.")]) == 1


def test_commit_refuses_active_writers_unless_forced(neon):
    import psycopg2
    ds = neon.ds
    neon.add()
    b = neon.branches()["main"]
    conn = psycopg2.connect(host="127.0.0.1", port=b["port"], user="neondb_owner", dbname="neondb",
                            password=neon.project["password"])
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (5, 'in flight')")  # holds a transaction id, uncommitted
        objects, head = ds.tree(".tether/objects"), ds.head()
        p = ds.tether("commit", "-m", "busy", check_rc=3)
        assert "writing" in p.stderr and "neondb_owner" in p.stderr and "INSERT INTO t" in p.stderr, p.stderr
        assert ds.tree(".tether/objects") == objects and ds.head() == head
        assert not [n for n in neon.branches() if n.startswith("tether.")]
        ds.tj("commit", "-m", "forced", "--force")
        st = ds.manifest(KEY)["state"]
        (xid,) = neon.sql("SELECT xmin::text FROM t WHERE id = 1")[0]
        assert st["commit_xid"] == xid, "the uncommitted insert is not the newest commit"
    finally:
        conn.rollback()
        conn.close()


def test_busy_answers_are_retried_and_operations_polled(neon):
    ds = neon.ds
    neon.add()
    neon.server.clear_requests()
    neon.server.fault(r"/branches$", status=423, method="GET", count=2)
    neon.server.fault(r"/branches$", status=429, method="POST", count=1)
    neon.server.fault(r"/endpoints$", status=503, method="POST", count=1)
    neon.server.slow(0.6)
    r = ds.tj("commit", "-m", "through the weather")
    assert r["objects"][0]["action"] == "pinned"
    reqs = neon.server.requests()
    assert len([q for q in reqs if q["method"] == "POST" and q["path"].endswith("/branches")]) == 2
    assert any("/operations/" in q["path"] for q in reqs), "operations were polled"
    assert all(q["auth"] == "Bearer " for q in reqs)


# ---------------------------------------------------------------------------
# Bad input and faults
# ---------------------------------------------------------------------------

def one_line(p):
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("tether: error")]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_wrong_key_missing_project_and_no_key(neon):
    ds = neon.ds
    ds.env["TEST_NEON_KEY"] = "wrong"
    line = one_line(ds.tether("add", KEY, "--kind", "neon", "--project-id", neon.pid, "--database", "neondb",
                              "--role", "neondb_owner", check_rc=1))
    assert f"neon object {KEY}" in line and neon.pid in line and "401" in line and "authentication" in line
    ds.env["TEST_NEON_KEY"] = neon.server.key
    p = ds.tether("add", KEY, "--kind", "neon", "--project-id", "no-such-project", "--database", "neondb",
                  "--role", "neondb_owner", check_rc=1)
    assert "no-such-project" in one_line(p) and "404" in p.stderr and "not found" in p.stderr
    p = ds.tether("add", KEY, "--kind", "neon", "--project-id", neon.pid, "--database", "neondb", "--role",
                  "neondb_owner", "--branch", "nope", check_rc=2)
    assert 'has no branch "nope"' in p.stderr
    p = ds.tether("add", KEY, "--kind", "neon", "--project-id", neon.pid, check_rc=2)
    assert "needs --database" in p.stderr
    del ds.env["TEST_NEON_KEY"]
    p = ds.tether("add", KEY, "--kind", "neon", "--project-id", neon.pid, "--database", "neondb", "--role",
                  "neondb_owner", check_rc=1)
    assert "no Neon API key: set TEST_NEON_KEY" in one_line(p)
    assert ds.objects_files() == []


def test_a_deleted_pin_or_working_branch_is_reported(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "first")
    pin = ds.manifest(KEY)["pin_ref"]["branch"]
    NeonAdapter().delete_via(neon, pin)
    v = ds.tj("verify", check_rc=3)
    assert v["objects"][0]["ok"] is False and f"branch {pin} is gone" in v["objects"][0]["detail"]
    ds.tether("repair")
    assert ds.tj("verify")["ok"] is True
    ds.tj("new", "-b", "gone")
    ws = f"tether.ws.{ds.dataset_id()[:8]}.gone"
    NeonAdapter().delete_via(neon, ws)
    p = ds.tether("status", check_rc=None)
    assert f'has no branch "{ws}"' in p.stdout + p.stderr


def test_a_compute_that_is_gone_fails_in_one_line_and_writes_nothing(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "first")
    neon.sql("INSERT INTO t VALUES (2, 'two')")
    objects, head = ds.tree(".tether/objects"), ds.head()
    pins = {n for n in neon.branches() if n.startswith("tether.")}
    neon.server.kill(neon.pid, "main")
    p = ds.tether("commit", "-m", "no compute", check_rc=1)
    line = one_line(p)
    assert f"neon object {KEY}" in line and "branch main" in line and "connect" in line.lower(), line
    assert neon.project["password"] not in p.stderr
    assert ds.tree(".tether/objects") == objects and ds.head() == head
    assert {n for n in neon.branches() if n.startswith("tether.")} == pins


def test_promote_is_refused_with_instructions(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "first")
    ds.tj("new", "-b", "feat")
    p = ds.tether("promote", KEY, check_rc=None)
    assert p.returncode != 0 and "promote" in p.stderr.lower(), p.stderr
    assert neon.sql("SELECT count(*) FROM t") == [(1,)]


# ---------------------------------------------------------------------------
# Security: a manifest chooses nothing that receives the key
# ---------------------------------------------------------------------------

def test_a_manifest_cannot_choose_the_api_or_smuggle_names(neon):
    ds = neon.ds
    neon.add()
    path = ds.manifest_path(KEY)
    good = path.read_text()
    for bad in ('api_url = "http://127.0.0.1:9"', 'api_key_env = "HOME"', 'host = "evil.example"'):
        path.write_text(good.replace("[locator]", "[locator]\n" + bad))
        p = ds.tether("status", check_rc=1)
        assert "unknown key" in p.stderr and "secrets.toml" in p.stderr, p.stderr
    for field, value in (("project_id", "../../x"), ("project_id", "p?x=1"), ("database", "a\\u0001b")):
        old = {"project_id": neon.pid, "database": "neondb"}[field]
        path.write_text(good.replace(f'{field} = "{old}"', f'{field} = "{value}"'))
        p = ds.tether("status", check_rc=1)
        assert "neon locator" in p.stderr, p.stderr
    path.write_text(good)
    # secrets.toml may name a local fake over http, never a remote one.
    (ds.root / ".tether" / "secrets.toml").write_text(
        secrets_for(neon.server).replace(neon.server.api_url, "http://neon.example/api/v2"))
    p = ds.tether("status", check_rc=1)
    assert "not an https:// URL" in p.stderr
    (ds.root / ".tether" / "secrets.toml").write_text(secrets_for(neon.server))
    neon.server.clear_requests()
    ds.tj("status")
    assert neon.server.requests() and all(q["auth"] == "Bearer " for q in neon.server.requests())


def test_protected_pins_only_when_secrets_say_so(neon):
    ds = neon.ds
    neon.add()
    ds.tj("commit", "-m", "unprotected")
    pin1 = ds.manifest(KEY)["pin_ref"]["branch"]
    assert neon.branches()[pin1]["protected"] is False
    (ds.root / ".tether" / "secrets.toml").write_text(secrets_for(neon.server, protected_pins=True))
    neon.sql("INSERT INTO t VALUES (3, 'three')")
    ds.tj("commit", "-m", "protected")
    pin2 = ds.manifest(KEY)["pin_ref"]["branch"]
    assert neon.branches()[pin2]["protected"] is True
