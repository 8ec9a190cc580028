"""The neon backend against the fake Neon control plane (tests/e2e/neonfake.py),
which holds every request and answer to Neon's OpenAPI document and runs
each branch as a real Postgres cluster: the probe, quiescence and the
handle's URL go to real servers. The data is written and read with
psycopg2 on the branch's own server, never through tether.

What the lifecycle suite (adapter NeonAdapter) does not hold: the state's
shape and what counts as change, the shared endpoint, quiescence, pins as
child branches and the sibling rule, and bad input: a wrong key, a missing
project, a branch deleted behind tether's back, a compute that is gone, a
hostile manifest, 423/429/503 and slow operations.
"""
import json

import pytest

from conftest import expected_pin

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
