"""The iceberg backend on a REST catalog, through the tether CLI, against
the Iceberg project's own REST catalog server (icebergrest.py): pyiceberg's
RestCatalog makes and writes the tables and reads every ref tether moves;
tether authenticates with a bearer token or the OAuth2 client-credentials
flow from .tether/secrets.toml; a fork racing a writer is refused by the
catalog's requirement (409); the server, or a fault-injecting proxy in
front of it, answering 401, 404 and 503 is refused or retried as it should,
with a one-line message and nothing half-written. The lifecycle suite runs
the rest of the kind's life on this server too (lifecycle_adapters.py,
iceberg-rest)."""
import itertools
import os

import pyarrow as pa
import pytest

import iceberg_oracle as ib

KEY = "tbl"
_serial = itertools.count(1)


def new_table(server, rows=3):
    """A table in a two-level namespace of its own, `rows` rows appended;
    (catalog dict, identifier, snapshot id)."""
    cat = ib.rest_catalog(server)
    identifier = f"rest.n{next(_serial)}_{os.getpid()}.t"
    ib.create_table(cat, identifier, rows=rows)
    return cat, identifier, ib.head(cat, identifier)


def configure(ds, server, uri=None, auth="token", token=None):
    """tether.toml commits only the catalog's type; secrets.toml has the rest."""
    toml = ds.p("tether.toml")
    if "[backends.iceberg]" not in toml.read_text():
        with open(toml, "a") as f:
            f.write('\n[backends.iceberg]\ncatalog = {type = "rest"}\n')
    sec = server.secrets(auth, uri=uri)
    if token:
        sec["token"] = token
    items = ", ".join(f'{k} = {"true" if v is True else chr(34) + v + chr(34)}' for k, v in sec.items())
    ds.p(".tether").mkdir(exist_ok=True)
    ds.p(".tether/secrets.toml").write_text(f"[backends.iceberg]\ncatalog = {{{items}}}\n")


def tether_refs(cat, identifier):
    return {k: v for k, v in ib.refs(cat, identifier).items() if k.startswith("tether.")}


def one_line(p):
    lines = p.stderr.strip().splitlines()
    assert len(lines) >= 1 and lines[0].startswith("tether: error: "), p.stderr
    assert all(line.startswith("hint: ") for line in lines[1:]), p.stderr
    return lines[0]


def test_pin_fork_write_diff_promote_with_oauth2(ds, iceberg_rest_server):
    srv = iceberg_rest_server
    cat, ident, s1 = new_table(srv)
    configure(ds, srv, auth="credential")
    ds.tether("add", KEY, ident, "--kind", "iceberg")
    ds.tether("commit", "-m", "base")
    # the pin is a tag pyiceberg reads
    [(tag, (sid, kind))] = tether_refs(cat, ident).items()
    assert (sid, kind) == (s1, "tag") and tag.startswith("tether.")
    assert ib.rows_at(cat, ident, s1) == 3

    r = ds.tj("new", "-b", "feat")
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feat"
    assert [(o["action"], o["branch"]) for o in r["objects"]] == [("forked", branch)]
    assert ib.refs(cat, ident)[branch] == (s1, "branch")
    s2 = ib.append(cat, ident, 2, branch=branch, start=100)
    assert ib.head(cat, ident) == s1, "a write on the fork leaves main"
    ds.tether("commit", "-m", "fork write")
    assert {v for v in tether_refs(cat, ident).values()} >= {(s1, "tag"), (s2, "tag"), (s2, "branch")}

    d = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert f"append {s2} (+2 rows, +1 files)" in d and "1 snapshot, +2 rows" in d, d

    ds.tether("promote")
    assert ib.head(cat, ident) == s2
    assert ib.rows_at(cat, ident, ib.head(cat, ident)) == 5
    assert srv.tokens_issued() > 0


def test_a_fork_racing_a_writer_is_refused(ds, iceberg_rest_server, rest_proxy):
    """Another writer makes the working branch between tether's load and
    its commit: the catalog's assert-ref-snapshot-id fails (409) and the
    fork is refused, the checkout rolled back, the racer's branch kept."""
    srv = iceberg_rest_server
    cat, ident, s1 = new_table(srv)
    configure(ds, srv, uri=rest_proxy.uri)
    ds.tether("add", KEY, ident, "--kind", "iceberg")
    ds.tether("commit", "-m", "base")
    s2 = ib.append(cat, ident, 1, start=50)
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feat"
    head = ds.head()

    def racer():
        ib.load(cat, ident).manage_snapshots().create_branch(s2, branch).commit()

    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "hook": racer, "times": 1})
    p = ds.tether("new", "-b", "feat", check_rc=3)
    line = one_line(p)
    assert "refused, the head moved (409 CommitFailedException" in line and f"ref {branch}" in line, line
    assert ib.refs(cat, ident)[branch] == (s2, "branch"), "the racer's branch stands"
    assert ds.head() == head and ds.git("branch", "--show-current").strip() == "main"


def test_wrong_token_is_refused_on_one_line(ds, iceberg_rest_server):
    srv = iceberg_rest_server
    cat, ident, _ = new_table(srv)
    configure(ds, srv, token="not-the-token")
    head = ds.head()
    p = ds.tether("add", KEY, ident, "--kind", "iceberg", check_rc=1)
    line = one_line(p)
    assert "the catalog refused the credentials (401 NotAuthorizedException" in line, line
    assert srv.token not in p.stderr
    assert ds.head() == head and not ds.p(".tether/objects").exists() or not any(ds.p(".tether/objects").iterdir())


def test_missing_table_is_not_found(ds, iceberg_rest_server):
    srv = iceberg_rest_server
    cat, ident, _ = new_table(srv)
    configure(ds, srv)
    p = ds.tether("add", KEY, ident + "_absent", "--kind", "iceberg", check_rc=2)
    line = one_line(p)
    assert "not found" in line and "NoSuchTableException" in line, line


def test_503s_are_retried(ds, iceberg_rest_server, rest_proxy):
    srv = iceberg_rest_server
    cat, ident, s1 = new_table(srv)
    configure(ds, srv, uri=rest_proxy.uri)
    rest_proxy.rules += [{"method": "GET", "path": "/tables/", "status": 503, "times": 2},
                    {"method": "POST", "path": "/tables/", "status": 503, "times": 1}]
    ds.tether("add", KEY, ident, "--kind", "iceberg")
    ds.tether("commit", "-m", "base")
    assert list(tether_refs(cat, ident).values()) == [(s1, "tag")]
    statuses = [s[3] for s in rest_proxy.seen]
    assert statuses.count(503) == 3, rest_proxy.seen


def test_a_catalog_that_keeps_failing_leaves_nothing_half_written(ds, iceberg_rest_server, rest_proxy):
    srv = iceberg_rest_server
    cat, ident, s1 = new_table(srv)
    configure(ds, srv, uri=rest_proxy.uri)
    ds.tether("add", KEY, ident, "--kind", "iceberg")
    head = ds.head()
    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "status": 503})
    p = ds.tether("commit", "-m", "base", check_rc=1)
    line = one_line(p)
    assert "503" in line and "nothing changed" in line, line
    assert tether_refs(cat, ident) == {}, "no tag was made"
    assert ds.head() == head, "no commit was made"
    # the catalog is back: the same commit goes through
    rest_proxy.rules.clear()
    ds.tether("commit", "-m", "base")
    assert list(tether_refs(cat, ident).values()) == [(s1, "tag")]


def test_committed_uri_is_refused(ds, iceberg_rest_server):
    srv = iceberg_rest_server
    cat, ident, _ = new_table(srv)
    with open(ds.p("tether.toml"), "a") as f:
        f.write(f'\n[backends.iceberg]\ncatalog = {{type = "rest", uri = "{srv.uri}"}}\n')
    p = ds.tether("add", KEY, ident, "--kind", "iceberg", check_rc=None)
    assert p.returncode != 0
    assert "uri" in one_line(p) and "secrets.toml" in p.stderr
