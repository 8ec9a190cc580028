"""The GCS store (tether-store-gs.so) against fake-gcs-server: reads,
conditional writes (ifGenerationMatch: 0 for if-absent, a generation for
if-match; 412 refused), generations as version ids, paged listing with an
exact start-after, the root, and a missing bucket or object, each error
one line naming the gs:// URI and the server's status; then the store
contract suite (tether-conformance --store) on a bucket of its own. Every answer is
checked against the server's own JSON API, asked directly by the test.

fake-gcs-server checks no credentials: authentication is tested in
test_gcs_auth.py against fakes that do."""
import gzip
import json
import subprocess
import urllib.parse

import pytest

from s3servers import free_ports
from storetool import BUILD, drive, hexof, one

pytestmark = pytest.mark.usefixtures("gcs_server")

EREFUSED, ENOTFOUND, EUSAGE = -3, -5, -2


def meta(gcs, bucket, name, generation=None):
    q = f"?generation={generation}" if generation else ""
    return gcs.api("GET", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}{q}")


def test_put_get_stat_match_the_server(gcs_server):
    b = gcs_server.bucket("rw")
    uri = f"gs://{b}/data/set"
    env = gcs_server.env()
    put, get, rng, past, st, absent = drive(uri, [
        {"op": "put", "key": "dir/obj.bin", "data": hexof(b"\x00hello world\xff"), "mode": "if-absent"},
        {"op": "get", "key": "dir/obj.bin"},
        {"op": "get", "key": "dir/obj.bin", "offset": 1, "length": 5},
        {"op": "get", "key": "dir/obj.bin", "offset": 13},
        {"op": "stat", "key": "dir/obj.bin"},
        {"op": "stat", "key": "dir/none"},
    ], env)
    status, server = meta(gcs_server, b, "data/set/dir/obj.bin")
    assert status == 200
    gen = server["generation"]
    assert put == {"ok": True, "version": gen}
    assert get["data"] == hexof(b"\x00hello world\xff") and get["version"] == gen
    assert rng["data"] == hexof(b"hello") and rng["version"] == gen
    assert past["ok"] and past["data"] == "" and past["version"] == gen
    assert st["exists"] and st["size"] == 13 == int(server["size"])
    assert st["version"] == gen and st["version_id"] == gen
    assert absent["ok"] and not absent["exists"]
    # What the store wrote is what the server serves.
    status, body = gcs_server.api("GET", f"/storage/v1/b/{b}/o/data%2Fset%2Fdir%2Fobj.bin?alt=media", raw=True)
    assert status == 200 and body == b"\x00hello world\xff"


def test_if_absent_and_if_match_are_412_refusals(gcs_server):
    b = gcs_server.bucket("cas")
    uri = f"gs://{b}/p"
    env = gcs_server.env()
    first, again = drive(uri, [{"op": "put", "key": "ref", "data": hexof("one"), "mode": "if-absent"},
                               {"op": "put", "key": "ref", "data": hexof("two"), "mode": "if-absent"}], env)
    assert first["ok"]
    assert again["ok"] is False and again["code"] == EREFUSED and again["exit"] == 3
    assert again["error"].startswith(f"gs://{b}/p/ref: HTTP 412")
    assert "\n" not in again["error"]
    v1 = first["version"]
    moved, stale, wrong = drive(uri, [
        {"op": "put", "key": "ref", "data": hexof("three"), "mode": "if-match", "expect": v1},
        {"op": "put", "key": "ref", "data": hexof("four"), "mode": "if-match", "expect": v1},
        {"op": "put", "key": "ref", "data": hexof("five"), "mode": "if-match", "expect": "\"not-a-generation\""},
    ], env)
    assert moved["ok"] and moved["version"] != v1
    assert stale["code"] == EREFUSED and "HTTP 412" in stale["error"] and "no longer at the version" in stale["error"]
    assert wrong["code"] == EREFUSED
    # The server holds the one write whose precondition held.
    assert gcs_server.api("GET", f"/storage/v1/b/{b}/o/p%2Fref?alt=media", raw=True) == (200, b"three")
    assert meta(gcs_server, b, "p/ref")[1]["generation"] == moved["version"]
    # if-match on an object that is gone.
    gone = drive(uri, [{"op": "delete", "key": "ref"},
                       {"op": "put", "key": "ref", "data": "00", "mode": "if-match", "expect": moved["version"]}], env)
    assert gone[0]["ok"] and gone[1]["code"] == EREFUSED


def test_generations_are_version_ids(gcs_server):
    b = gcs_server.bucket("versions", versioned=True)
    uri = f"gs://{b}"
    env = gcs_server.env()
    # Two rounds: the first id is known only after the first write.
    p1, p2 = drive(uri, [{"op": "put", "key": "obj", "data": hexof("first version")},
                         {"op": "put", "key": "obj", "data": hexof("second")},
                         ], env)
    g1, g2 = p1["version"], p2["version"]
    assert int(g2) > int(g1)
    old, now, st_old, vs, never, notnum, sibling = drive(uri, [
        {"op": "get", "key": "obj", "version_id": g1},
        {"op": "get", "key": "obj"},
        {"op": "stat", "key": "obj", "version_id": g1},
        {"op": "versions", "key": "obj"},
        {"op": "stat", "key": "obj", "version_id": "12345"},
        {"op": "stat", "key": "obj", "version_id": "v-abc"},
        {"op": "put", "key": "obj2", "data": "00"},
    ], env)
    assert old["data"] == hexof("first version") and old["version_id"] == g1
    assert now["data"] == hexof("second") and now["version"] == g2
    assert st_old["exists"] and st_old["size"] == len("first version") and st_old["version_id"] == g1
    assert [(v["version_id"], v["is_latest"], v["size"]) for v in vs["items"]] == [(g2, True, 6), (g1, False, 13)]
    assert never["code"] == ENOTFOUND and f"gs://{b}/obj (generation 12345)" in never["error"]
    assert notnum["code"] == ENOTFOUND and "not a GCS generation" in notnum["error"]
    # The server's own listing of versions agrees; obj2 (a name beginning
    # with obj's) is not one of obj's versions.
    status, listing = gcs_server.api("GET", f"/storage/v1/b/{b}/o?versions=true&prefix=obj")
    assert sorted(i["generation"] for i in listing["items"] if i["name"] == "obj") == sorted([g1, g2])
    assert len(one(uri, {"op": "versions", "key": "obj"}, env)["items"]) == 2
    assert sibling["ok"]


def test_listing_pages_with_exact_start_after(gcs_server):
    b = gcs_server.bucket("list")
    uri = f"gs://{b}/root"
    env = gcs_server.env()
    keys = [f"k{i:02d}" for i in range(7)] + ["sub/a", "sub/b", "subway"]
    drive(uri, [{"op": "put", "key": k, "data": hexof(k * 2)} for k in keys], env)
    # Outside the root, and a Cloud Console "folder" (a name ending in /).
    gcs_server.api("POST", f"/upload/storage/v1/b/{b}/o?uploadType=media&name=rootless", b"x")
    gcs_server.api("POST", f"/upload/storage/v1/b/{b}/o?uploadType=media&name=root%2Ffolder%2F", b"")
    answers = drive(uri, [
        {"op": "list", "page_size": 2},
        {"op": "list", "page_size": 1000},
        {"op": "list", "page_size": 3, "start_after": "k03"},
        {"op": "list", "page_size": 2, "start_after": "k035"},
        {"op": "list", "page_size": 2, "prefix": "sub"},
        {"op": "list", "page_size": 2, "start_after": "subway"},
        {"op": "list_stat", "page_size": 4},
    ], env)
    everything = sorted(keys)
    assert answers[0]["keys"] == everything
    assert answers[1]["keys"] == everything
    assert answers[2]["keys"] == [k for k in everything if k > "k03"]
    assert answers[3]["keys"] == [k for k in everything if k > "k035"]
    assert answers[4]["keys"] == ["sub/a", "sub/b"]
    assert answers[5]["keys"] == []
    status, listing = gcs_server.api("GET", f"/storage/v1/b/{b}/o?prefix=root%2F")
    server = {i["name"][len("root/"):]: i for i in listing["items"]}
    stats = answers[6]["items"]
    assert [s["key"] for s in stats] == everything
    for s in stats:
        assert s["size"] == int(server[s["key"]]["size"]) == 2 * len(s["key"])
        assert s["version"] == s["version_id"] == server[s["key"]]["generation"]


def test_root_exists_make_and_remove(gcs_server):
    b = gcs_server.bucket("root")
    uri = f"gs://{b}/a/b"
    env = gcs_server.env()
    r = drive(uri, [{"op": "root_exists"}, {"op": "make_root"}, {"op": "root_exists"},
                    {"op": "put", "key": "x", "data": "00"}, {"op": "root_exists"}, {"op": "remove_root"},
                    {"op": "delete", "key": "x"}, {"op": "delete", "key": "x"}, {"op": "remove_root"},
                    {"op": "root_exists"}], env)
    assert [a.get("exists") for a in (r[0], r[2], r[4], r[9])] == [False, False, True, False]
    assert r[1]["ok"] and r[3]["ok"]
    assert r[5]["code"] == EREFUSED and f"gs://{b}/a/b/" in r[5]["error"]
    assert r[6]["ok"] and r[7]["ok"] and r[8]["ok"]


def test_copy_refuses_an_existing_target_and_a_moved_source(gcs_server):
    b = gcs_server.bucket("copy")
    uri = f"gs://{b}"
    env = gcs_server.env()
    put, cp, again, st = drive(uri, [{"op": "put", "key": "src", "data": hexof("payload")},
                                     {"op": "copy", "from": "src", "to": "dst"},
                                     {"op": "copy", "from": "src", "to": "dst"},
                                     {"op": "stat", "key": "src"}], env)
    assert put["ok"] and cp["ok"]
    assert again["code"] == EREFUSED
    assert gcs_server.api("GET", f"/storage/v1/b/{b}/o/dst?alt=media", raw=True) == (200, b"payload")
    moved = drive(uri, [{"op": "put", "key": "src", "data": hexof("changed")},
                        {"op": "copy", "from": "src", "to": "dst2", "if_match": st["version"]},
                        {"op": "copy", "from": "missing", "to": "dst3"}], env)
    assert moved[1]["code"] == EREFUSED
    assert moved[2]["code"] == ENOTFOUND and f"gs://{b}/missing" in moved[2]["error"]
    assert gcs_server.api("GET", f"/storage/v1/b/{b}/o/dst2")[0] == 404


def test_a_missing_bucket_is_named(gcs_server):
    uri = "gs://no-such-bucket-for-tether/p"
    env = gcs_server.env()
    answers = drive(uri, [{"op": "stat", "key": "k"}, {"op": "get", "key": "k"},
                          {"op": "put", "key": "k", "data": "00"}, {"op": "list"}, {"op": "delete", "key": "k"},
                          {"op": "make_root"}, {"op": "root_exists"}], env)
    for a in answers:
        assert a["ok"] is False and a["code"] == ENOTFOUND, a
        assert a["error"].startswith("gs://no-such-bucket-for-tether: the bucket does not exist (HTTP 404"), a


def test_a_missing_object(gcs_server):
    b = gcs_server.bucket("missing")
    env = gcs_server.env()
    get, rng, dele = drive(f"gs://{b}/p", [{"op": "get", "key": "nothing"},
                                           {"op": "get", "key": "nothing", "offset": 3, "length": 2},
                                           {"op": "delete", "key": "nothing"}], env)
    assert get["code"] == ENOTFOUND and get["error"] == f"gs://{b}/p/nothing: no such object (HTTP 404)"
    assert rng["code"] == ENOTFOUND
    assert dele["ok"]


@pytest.mark.parametrize("uri, why", [
    ("gs://ab/p", "is not a GCS bucket name"),
    ("gs://" + "x" * 223 + "/p", "is not a GCS bucket name"),
    ("gs://a+b.example/p", "is not a GCS bucket name"),
])
def test_bad_uris_are_usage_errors(gcs_server, uri, why):
    a = one(uri, {"op": "stat", "key": "k"}, gcs_server.env())
    assert a["ok"] is False and a["code"] == EUSAGE and why in a["error"]


def test_endpoint_forms(gcs_server):
    b = gcs_server.bucket("endpoint")
    # STORAGE_EMULATOR_HOST as a URL with its scheme (Google's clients take both).
    env = gcs_server.env()
    env["STORAGE_EMULATOR_HOST"] = gcs_server.endpoint + "/"
    assert one(f"gs://{b}", {"op": "put", "key": "k", "data": "00"}, env)["ok"]
    # A plain-http endpoint_url without allow_http is refused before any request.
    env.pop("STORAGE_EMULATOR_HOST")
    env["NO_GCE_CHECK"] = "true"
    key = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r",
           "token_uri": "http://127.0.0.1:9/token"}
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env,
            options={"endpoint_url": gcs_server.endpoint, "service_account_key": json.dumps(key)})
    assert a["ok"] is False and a["code"] == EUSAGE and "http" in a["error"]


@pytest.mark.parametrize("versioned, under", [(True, "/deep/prefix"), (False, "")])
def test_store_contract(gcs_server, versioned, under):
    """The store contract suite (tether-conformance --store) against a
    bucket of fake-gcs-server, at a prefix and at the bucket's root."""
    b = gcs_server.bucket("contract", versioned=versioned)
    env = gcs_server.env()
    env["TETHER_MODULE_PATH"] = str(BUILD)
    p = subprocess.run([str(BUILD / "tether-conformance"), "--store", f"gs://{b}{under}"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.rstrip().endswith(" passed, 0 failed"), p.stdout
    skipped = [line for line in p.stdout.splitlines() if line.startswith("skip")]
    # Only the fault store's checks are skipped, and, without versioning,
    # the checks of older versions.
    assert all(s.startswith("skip faults") or (not versioned and s.startswith("skip versions")) for s in skipped), \
        p.stdout
    assert len(skipped) == (1 if versioned else 3), p.stdout
    # The suite cleans up after itself.
    assert "items" not in gcs_server.api("GET", f"/storage/v1/b/{b}/o")[1]


def test_tether_keeps_an_icechunk_repository_in_gcs(ds, gcs_server):
    """The tether command itself loads tether-store-gs.so for a gs:// URI:
    an Icechunk repository created, committed and clean in a bucket; a
    missing bucket is one line naming it, and nothing is added."""
    b = gcs_server.bucket("ice")
    env = {"STORAGE_EMULATOR_HOST": gcs_server.host}
    ds.tether("add", "cube", f"gs://{b}/cube", "--kind", "icechunk", "--create", env=env)
    ds.tether("commit", "-m", "an icechunk repository in GCS", env=env)
    status = ds.tether("status", env=env).stdout
    assert "clean" in status and "cube" in status
    names = [i["name"] for i in gcs_server.api("GET", f"/storage/v1/b/{b}/o?prefix=cube%2F")[1]["items"]]
    assert "cube/repo" in names and any(n.startswith("cube/snapshots/") for n in names)
    p = ds.tether("add", "gone", "gs://no-such-bucket-for-tether/cube", "--kind", "icechunk", "--create", env=env,
                  check_rc=1)
    assert "gs://no-such-bucket-for-tether: the bucket does not exist (HTTP 404" in p.stderr
    assert "gone" not in ds.tether("status", env=env).stdout


def test_an_unreachable_server_is_transient(gcs_server):
    """Nothing listens: retried, then ETRANSIENT naming the object (and the
    URL the client tried), on one line."""
    (closed,) = free_ports(1)
    env = gcs_server.env()
    env["STORAGE_EMULATOR_HOST"] = f"127.0.0.1:{closed}"
    a = one("gs://some-bucket/p", {"op": "stat", "key": "k"}, env)
    assert a["code"] == -10 and a["error"].startswith("gs://some-bucket/p/k: ") and "\n" not in a["error"]
    assert f"127.0.0.1:{closed}" in a["error"]


def test_a_gzip_encoded_object_is_read_as_stored(gcs_server):
    """An object uploaded with Content-Encoding: gzip (by another tool) is
    read as the bytes stored, whose length is its size, and ranges apply
    to them: GCS (and fake-gcs-server) would otherwise decompress it and
    ignore the range."""
    b = gcs_server.bucket("gzip")
    stored = gzip.compress(b"hello hello hello hello " * 10)
    status, _ = gcs_server.api("POST", f"/upload/storage/v1/b/{b}/o?uploadType=media&name=z.gz&contentEncoding=gzip",
                               stored)
    assert status == 200
    whole, part, st = drive(f"gs://{b}", [{"op": "get", "key": "z.gz"},
                                          {"op": "get", "key": "z.gz", "offset": 0, "length": 2},
                                          {"op": "stat", "key": "z.gz"}], gcs_server.env())
    assert whole["data"] == stored.hex()
    assert part["data"] == "1f8b"
    assert st["size"] == len(stored)
