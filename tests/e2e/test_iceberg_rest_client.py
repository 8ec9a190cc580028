"""tether's Iceberg REST catalog client (src/backends/iceberg/catalog_rest.c)
against the Iceberg project's own REST catalog server (icebergrest.py),
driven through tests/tools/iceberg-rest-tool: tables made and written by
pyiceberg's RestCatalog; loads, tags, branches and a fast-forward committed
by tether's client with the requirements tether sends; pyiceberg reading
what it committed; and the server (or a fault-injecting proxy in front of
it) answering 401, 404, 409 and 503."""
import json
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import SANITIZER_MARKERS, TETHER_BIN
from icebergrest import FaultProxy

BUILD = Path(TETHER_BIN).resolve().parent
TOOL = next((str(p) for p in (BUILD / "tests" / "iceberg-rest-tool", BUILD / "iceberg-rest-tool") if p.exists()), None)
_serial = iter(range(1, 1_000_000))


class Result:
    def __init__(self, p):
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr

    def json(self):
        return json.loads(self.out)


def tool(tmp_path, secrets, *args, props=None, timeout=120):
    """iceberg-rest-tool with a catalog of these secrets; a Result."""
    assert TOOL, f"iceberg-rest-tool is not built beside {TETHER_BIN}"
    cfg = tmp_path / f"catalog-{next(_serial)}.json"
    cfg.write_text(json.dumps({"name": "lake", "props": props if props is not None else {"type": "rest"},
                               "secrets": secrets}))
    p = subprocess.run([TOOL, str(cfg), *args], capture_output=True, text=True, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, p.stderr
    return Result(p)


def one_line_error(r, code):
    """r failed with this TETHER_E* code and said so on one line."""
    assert r.rc != 0, r.out
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith(f"iceberg-rest-tool: {code}: iceberg catalog 'lake': "), r.err
    return lines[0]


def make_table(server, rows=(1, 2, 3)):
    """A new table in a two-level namespace, one append; (ns, name, table)."""
    cat = server.catalog()
    ns = ("lake", f"n{next(_serial)}")
    cat.create_namespace_if_not_exists(ns)
    name = f"t{next(_serial)}"
    t = cat.create_table(ns + (name,), schema=pa.schema([("x", pa.int64())]))
    t.append(pa.table({"x": list(rows)}))
    return ".".join(ns), name, cat.load_table(ns + (name,))


def tag(ref, snap):
    return json.dumps([{"action": "set-snapshot-ref", "ref-name": ref, "type": "tag", "snapshot-id": snap}])


def branch(ref, snap):
    return json.dumps([{"action": "set-snapshot-ref", "ref-name": ref, "type": "branch", "snapshot-id": snap}])


def at(ref, snap):
    return json.dumps([{"type": "assert-ref-snapshot-id", "ref": ref, "snapshot-id": snap}])


def refs_of(server, ns, name):
    t = server.catalog().load_table(tuple(ns.split(".")) + (name,))
    return {k: (v.snapshot_id, v.snapshot_ref_type.value) for k, v in t.metadata.refs.items()}


def test_load_matches_pyiceberg(iceberg_rest_server, tmp_path):
    ns, name, t = make_table(iceberg_rest_server)
    r = tool(tmp_path, iceberg_rest_server.secrets(), "load", ns, name)
    assert r.rc == 0, r.err
    got = r.json()
    assert got["metadata-location"] == t.metadata_location
    assert got["metadata"]["current-snapshot-id"] == t.current_snapshot().snapshot_id
    assert got["metadata"]["table-uuid"] == str(t.metadata.table_uuid)


def test_pin_fork_append_promote_seen_by_pyiceberg(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    uuid = str(t.metadata.table_uuid)
    sec = srv.secrets()
    # pin: a tag that must not exist yet, on a table that must be this one
    reqs = json.dumps([{"type": "assert-table-uuid", "uuid": uuid},
                       {"type": "assert-ref-snapshot-id", "ref": "tether.p1", "snapshot-id": None}])
    r = tool(tmp_path, sec, "commit", ns, name, reqs, tag("tether.p1", s1))
    assert r.rc == 0, r.err
    assert r.json()["refs"]["tether.p1"] == {"snapshot-id": s1, "type": "tag"}
    # fork: a working branch at the pinned snapshot
    r = tool(tmp_path, sec, "commit", ns, name, at("tether.ws.w1", None), branch("tether.ws.w1", s1))
    assert r.rc == 0, r.err
    assert refs_of(srv, ns, name) == {"main": (s1, "branch"), "tether.p1": (s1, "tag"),
                                      "tether.ws.w1": (s1, "branch")}
    # pyiceberg reads the tag and appends on the fork
    cat = srv.catalog()
    t = cat.load_table(tuple(ns.split(".")) + (name,))
    assert t.scan(snapshot_id=t.metadata.refs["tether.p1"].snapshot_id).to_arrow().num_rows == 3
    t.append(pa.table({"x": [4, 5]}), branch="tether.ws.w1")
    s2 = refs_of(srv, ns, name)["tether.ws.w1"][0]
    assert s2 != s1
    # promote: main fast-forwards to the fork, only if main is still at s1
    r = tool(tmp_path, sec, "commit", ns, name, at("main", s1), branch("main", s2))
    assert r.rc == 0, r.err
    t = cat.load_table(tuple(ns.split(".")) + (name,))
    assert t.current_snapshot().snapshot_id == s2
    assert t.scan().to_arrow().num_rows == 5
    # unpin: remove the tag, on condition of its value
    r = tool(tmp_path, sec, "commit", ns, name, at("tether.p1", s1),
             json.dumps([{"action": "remove-snapshot-ref", "ref-name": "tether.p1"}]))
    assert r.rc == 0, r.err
    assert "tether.p1" not in refs_of(srv, ns, name)


def test_racing_forks_one_wins(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    s2 = srv.catalog().load_table(tuple(ns.split(".")) + (name,))
    s2.append(pa.table({"x": [9]}))
    s2 = s2.current_snapshot().snapshot_id
    results = [None, None]
    barrier = threading.Barrier(2)

    def fork(i, snap):
        barrier.wait()
        results[i] = tool(tmp_path, srv.secrets(), "commit", ns, name, at("tether.ws.race", None),
                          branch("tether.ws.race", snap))

    threads = [threading.Thread(target=fork, args=(0, s1)), threading.Thread(target=fork, args=(1, s2))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rcs = sorted(r.rc for r in results)
    assert rcs == [0, 3], [(r.rc, r.err) for r in results]
    winner = next(i for i, r in enumerate(results) if r.rc == 0)
    loser = results[1 - winner]
    line = one_line_error(loser, "EREFUSED")
    assert f"table {ns}.{name}, ref tether.ws.race: refused, the head moved (409" in line
    assert refs_of(srv, ns, name)["tether.ws.race"] == ((s1, s2)[winner], "branch")


def test_stale_head_409_changes_nothing(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    before = refs_of(srv, ns, name)
    r = tool(tmp_path, srv.secrets(), "commit", ns, name, at("main", s1 + 1), branch("main", s1))
    line = one_line_error(r, "EREFUSED")
    assert "ref main: refused, the head moved (409 CommitFailedException" in line
    assert r.rc == 3
    assert refs_of(srv, ns, name) == before


def test_not_found(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, _ = make_table(srv)
    r = tool(tmp_path, srv.secrets(), "load", ns, "absent")
    line = one_line_error(r, "ENOTFOUND")
    assert f"table {ns}.absent: not found" in line and "NoSuchTableException" in line
    r = tool(tmp_path, srv.secrets(), "load", "no.such.ns", name)
    assert "not found" in one_line_error(r, "ENOTFOUND")
    r = tool(tmp_path, srv.secrets(), "commit", ns, "absent", "[]", tag("x", 1))
    one_line_error(r, "ENOTFOUND")
    r = tool(tmp_path, srv.secrets(), "load", "a..b", name)
    assert r.rc == 2 and "empty level" in one_line_error(r, "EUSAGE")


def test_auth_refused_is_one_line(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, _ = make_table(srv)
    for sec in ({"uri": srv.uri, "allow_http": True, "token": "wrong"},
                {"uri": srv.uri, "allow_http": True}):
        r = tool(tmp_path, sec, "load", ns, name)
        line = one_line_error(r, "EAUTH")
        assert "the catalog refused the credentials (401 NotAuthorizedException" in line
        assert "secrets.toml" in line
    r = tool(tmp_path, {"uri": srv.uri, "allow_http": True, "credential": f"{srv.client_id}:wrong"},
             "load", ns, name)
    line = one_line_error(r, "EAUTH")
    assert "/v1/oauth/tokens: the token endpoint answered 401 (invalid_client" in line or \
        "the token endpoint answered 401" in line


def test_oauth2_client_credentials(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    before = srv.tokens_issued()
    r = tool(tmp_path, srv.secrets("credential"), "load", ns, name)
    assert r.rc == 0, r.err
    assert r.json()["metadata"]["current-snapshot-id"] == t.current_snapshot().snapshot_id
    assert srv.tokens_issued() == before + 1  # one token for config and load


def test_oauth2_token_refreshed_on_401_once(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    # the catalog refuses the first table request: a new token, then it passes
    rest_proxy.rules.append({"method": "GET", "path": "/tables/", "status": 401, "times": 1})
    before = srv.tokens_issued()
    r = tool(tmp_path, srv.secrets("credential", uri=rest_proxy.uri), "load", ns, name)
    assert r.rc == 0, r.err
    assert srv.tokens_issued() == before + 2
    # refused every time: one renewal, then the refusal is reported
    rest_proxy.seen.clear()
    rest_proxy.rules[:] = [{"method": "GET", "path": "/tables/", "status": 401}]
    r = tool(tmp_path, srv.secrets("credential", uri=rest_proxy.uri), "load", ns, name)
    one_line_error(r, "EAUTH")
    assert [s[3] for s in rest_proxy.seen if "/tables/" in s[1]] == [401, 401]
    # a static token cannot be renewed: one try
    rest_proxy.seen.clear()
    r = tool(tmp_path, srv.secrets("token", uri=rest_proxy.uri), "load", ns, name)
    one_line_error(r, "EAUTH")
    assert len([s for s in rest_proxy.seen if "/tables/" in s[1]]) == 1


def test_oauth2_token_refreshed_when_it_expires(start_iceberg_rest, tmp_path):
    srv = start_iceberg_rest(token_ttl=2)
    ns, name, t = make_table(srv)
    proxy = FaultProxy(srv.uri)
    try:
        r = tool(tmp_path, srv.secrets("credential", uri=proxy.uri), "watch", ns, name, "main", "3", "1500")
        assert r.rc == 0, r.err
        assert r.out.split() == [str(t.current_snapshot().snapshot_id)] * 3
        # the expired token was replaced before use, not after a refusal;
        # reads 1.5 s apart under a 2 s lifetime need at least one refresh,
        # and a loaded machine stretching the gaps may make it two
        assert 401 not in [s[3] for s in proxy.seen]
        assert 2 <= len([s for s in proxy.seen if s[1] == "/v1/oauth/tokens"]) <= 3
    finally:
        proxy.close()


def test_503_retried_then_given_up(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    rest_proxy.rules.append({"method": "GET", "path": "/tables/", "status": 503, "times": 2})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "load", ns, name)
    assert r.rc == 0, r.err
    assert [s[3] for s in rest_proxy.seen if "/tables/" in s[1]] == [503, 503, 200]
    rest_proxy.seen.clear()
    rest_proxy.rules[:] = [{"method": "GET", "path": "/tables/", "status": 503}]
    t0 = time.monotonic()
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "load", ns, name)
    assert time.monotonic() - t0 < 30  # bounded
    line = one_line_error(r, "ETRANSIENT")
    assert "503 InjectedByProxy: injected 503 (gave up after retrying)" in line
    assert len([s for s in rest_proxy.seen if "/tables/" in s[1]]) == 5


def test_commit_503_before_the_server_is_rechecked_and_resent(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "status": 503, "times": 1})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "commit", ns, name, at("tether.p", None), tag("tether.p", s1))
    assert r.rc == 0, r.err
    assert refs_of(srv, ns, name)["tether.p"] == (s1, "tag")
    calls = [(s[0], s[3]) for s in rest_proxy.seen if "/tables/" in s[1]]
    # the lost POST, a load to see it did not go in, the POST again
    assert calls == [("POST", 503), ("GET", 200), ("POST", 200)], calls


def test_commit_throttled_is_resent_after_a_check(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "status": 429, "times": 1})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "commit", ns, name, at("tether.q", None), tag("tether.q", s1))
    assert r.rc == 0, r.err
    calls = [(s[0], s[3]) for s in rest_proxy.seen if "/tables/" in s[1]]
    assert calls == [("POST", 429), ("GET", 200), ("POST", 200)], calls


def test_commit_without_a_token_is_never_sent(iceberg_rest_server, rest_proxy, tmp_path):
    """The token endpoint failing is not a commit of unknown outcome: the
    commit was never sent, and the error names the token endpoint."""
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    rest_proxy.rules.append({"method": "POST", "path": "^/v1/oauth/tokens", "status": 503})
    r = tool(tmp_path, srv.secrets("credential", uri=rest_proxy.uri), "commit", ns, name, at("tether.q", None),
             tag("tether.q", t.current_snapshot().snapshot_id))
    line = one_line_error(r, "ETRANSIENT")
    assert "the token endpoint answered 503" in line and "outcome" not in line, line
    assert not [s for s in rest_proxy.seen if "/tables/" in s[1]]


def test_commit_whose_answer_is_lost_is_not_resent(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "status": 504, "times": 1, "after": True})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "commit", ns, name, at("tether.ws.l", None),
             branch("tether.ws.l", s1))
    assert r.rc == 0, r.err
    assert r.json()["refs"]["tether.ws.l"] == {"snapshot-id": s1, "type": "branch"}
    calls = [(s[0], s[3]) for s in rest_proxy.seen if "/tables/" in s[1]]
    assert calls == [("POST", 504), ("GET", 200)], calls


def test_commit_503_every_time_changes_nothing(iceberg_rest_server, rest_proxy, tmp_path):
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    s1 = t.current_snapshot().snapshot_id
    before = refs_of(srv, ns, name)
    rest_proxy.rules.append({"method": "POST", "path": "/tables/", "status": 503})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "commit", ns, name, at("tether.p", None), tag("tether.p", s1))
    line = one_line_error(r, "ETRANSIENT")
    assert "ref tether.p: not committed (POST answered 503, 5 attempts); nothing changed" in line
    assert refs_of(srv, ns, name) == before
    assert len([s for s in rest_proxy.seen if s[0] == "POST"]) == 5


def test_server_config_cannot_move_credentials(iceberg_rest_server, rest_proxy, tmp_path):
    """/v1/config overrides naming another uri or token are not followed:
    the token goes only to the uri of secrets.toml."""
    srv = iceberg_rest_server
    ns, name, t = make_table(srv)
    rest_proxy.rules.append({"method": "GET", "path": "^/v1/config", "status": 200, "body": json.dumps(
        {"defaults": {}, "overrides": {"uri": "http://127.0.0.1:9/", "token": "x",
                                       "oauth2-server-uri": "http://127.0.0.1:9/t"}})})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "load", ns, name)
    assert r.rc == 0, r.err
    assert [s[1] for s in rest_proxy.seen][0].startswith("/v1/config")


def test_committed_secrets_and_bad_settings_refused(iceberg_rest_server, tmp_path):
    srv = iceberg_rest_server
    r = tool(tmp_path, srv.secrets(), "load", "a", "b", props={"type": "rest", "uri": srv.uri})
    assert "'uri' is committed" in one_line_error(r, "ECONFIG")
    r = tool(tmp_path, srv.secrets(), "load", "a", "b", props={"type": "rest", "credential": "a:b"})
    assert "'credential' is committed" in one_line_error(r, "ECONFIG")
    r = tool(tmp_path, {"token": srv.token}, "load", "a", "b")
    assert "no uri" in one_line_error(r, "ECONFIG")
    sec = srv.secrets()
    del sec["allow_http"]
    r = tool(tmp_path, sec, "load", "a", "b")
    assert r.rc == 2 and "allow_http" in r.err


@pytest.mark.parametrize("path,body,said", [
    ("/tables/", "not json at all", "the answer is not a table result"),
    ("/tables/", '{"metadata-location": "x"}', "the answer is not a table result (no metadata object)"),
    ("/tables/", '{"metadata": {}, "metadata-location": 5}', "the answer is not a table result"),
    ("^/v1/config", '{"overrides": []}', "the answer is not a config object"),
    ("^/v1/config", '{"defaults": {"prefix": 7}}', "a prefix or warehouse that is not a string"),
])
def test_malformed_answers_are_refused_on_one_line(iceberg_rest_server, rest_proxy, tmp_path, path, body, said):
    srv = iceberg_rest_server
    ns, name, _ = make_table(srv)
    rest_proxy.rules.append({"method": "GET", "path": path, "status": 200, "body": body})
    r = tool(tmp_path, srv.secrets(uri=rest_proxy.uri), "load", ns, name)
    assert said in one_line_error(r, "EIO")
