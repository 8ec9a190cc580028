"""The Azure Blob store (tether-store-az.so) against Azurite on 127.0.0.1.

Each operation runs through tether's public store API in store-tool
(tests/tools/store-tool.c: one operation, tether's message and error
code); what the server holds is set up and read back through the fixture's
own SharedKey signer (azureserver.py), written apart from tether's. The
store contract suite (tether-conformance --store) runs against an az://
and an abfs:// root.

Azurite keeps no blob versions: stat and listings give no version id
there, and a version id is looked up as far as the emulator allows (see
test_versions_on_azurite). Real Azure was not reachable from here.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from azureserver import KEY
from conftest import check_sanitizers

BUILD = Path(os.environ.get("TETHER_BIN") or Path(__file__).resolve().parents[2] / "build" / "tether").parent
STORE_TOOL = BUILD / "tests" / "store-tool"
CONFORMANCE = BUILD / "tether-conformance"

# TETHER_E* codes, as store-tool exits with them.
ENOTFOUND, EREFUSED, EAUTH, EUSAGE = 5, 3, 9, 2
OTHER_KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_")}
    env["TETHER_MODULE_PATH"] = str(BUILD)
    env.update(extra or {})
    return env


def tool(env, uri, *args, stdin=b"", options=None):
    """store-tool --raw-code URI ARGS with env (and the store options);
    its exit status is the TETHER_E* code."""
    if not os.access(STORE_TOOL, os.X_OK):
        pytest.fail(f"{STORE_TOOL} is not built")
    argv = [str(STORE_TOOL), "--raw-code"] + (["--options", json.dumps(options)] if options is not None else [])
    r = subprocess.run(argv + [uri, *args], env=env, input=stdin, capture_output=True, timeout=120)
    check_text_sanitizers(r)
    return r


def check_text_sanitizers(r):
    """conftest's check, on a run whose output was kept as bytes."""
    check_sanitizers(subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                                 r.stderr.decode(errors="replace")))


def ok(r):
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr.decode(errors='replace')}"
    return r.stdout


def listed(r):
    """store-tool list's "KEY SIZE TOKEN" lines (a key may hold spaces)."""
    out = []
    for line in ok(r).decode().splitlines():
        key, size, token = line.rsplit(" ", 2)
        out.append((key, int(size), token))
    return out


def keys(r):
    return [key for key, _, _ in listed(r)]


def refused(r, code, *words):
    err = r.stderr.decode(errors="replace")
    assert r.returncode == code, f"exit {r.returncode} (wanted {code}): {err}"
    assert err.count("\n") == 1 and err.startswith("store-tool: error: "), f"not one line: {err!r}"
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"
    return err


@pytest.fixture
def az(azurite_server):
    """A fresh container; .uri (az://CONTAINER/root), .env (the connection
    string), .srv, .container, .name(key) (the blob name of a key)."""
    class Az:
        srv = azurite_server
        container = azurite_server.container("store")
        uri = f"az://{container}/root"
        env = clean_env(azurite_server.env())

        @staticmethod
        def name(key):
            return f"root/{key}"

        def run(self, *args, **kw):
            return tool(self.env, self.uri, *args, **kw)

        def server_etag(self, key):
            status, headers, _ = self.srv.request("HEAD", f"/{self.container}/{self.name(key)}")
            assert status == 200, status
            return headers["ETag"]
    return Az()


def test_put_get_stat(az):
    version = ok(az.run("put", "a/b.txt", stdin=b"hello, azure")).decode().strip()
    assert version == az.server_etag("a/b.txt")
    assert ok(az.run("get", "a/b.txt")) == b"hello, azure"
    st = json.loads(ok(az.run("stat", "a/b.txt")))
    assert (st["exists"], st["size"], st["version"]) == (True, 12, version)
    # What the fixture's own client reads back.
    status, _, body = az.srv.request("GET", f"/{az.container}/root/a/b.txt")
    assert (status, body) == (200, b"hello, azure")
    # Ranges (x-ms-range), to the end, and past the end: nothing.
    assert ok(az.run("get", "a/b.txt", "7", "5")) == b"azure"
    assert ok(az.run("get", "a/b.txt", "7", "end")) == b"azure"
    assert ok(az.run("get", "a/b.txt", "100", "5")) == b""
    # An empty object, whole and ranged.
    ok(az.run("put", "empty", stdin=b""))
    assert ok(az.run("get", "empty")) == b""
    assert ok(az.run("get", "empty", "0", "10")) == b""
    # Overwrite changes the version.
    v2 = ok(az.run("put", "a/b.txt", stdin=b"second")).decode().strip()
    assert v2 != version and v2 == az.server_etag("a/b.txt")
    # A name that needs encoding in the URL (and in the signature).
    ok(az.run("put", "sp ace/ü+x=y&z", stdin=b"odd"))
    status, _, body = az.srv.request("GET", f"/{az.container}/root/sp%20ace/%C3%BC%2Bx%3Dy%26z")
    assert (status, body) == (200, b"odd")
    assert ok(az.run("get", "sp ace/ü+x=y&z")) == b"odd"


def test_absent_object(az):
    st = json.loads(ok(az.run("stat", "nope")))
    assert st["exists"] is False
    refused(az.run("get", "nope"), ENOTFOUND, f"{az.uri}/nope", "404", "BlobNotFound")
    refused(az.run("get", "nope", "5", "5"), ENOTFOUND, f"{az.uri}/nope")
    ok(az.run("delete", "nope"))  # already gone is not an error


def test_if_absent_is_409_refused(az):
    v = ok(az.run("put", "k", "absent", stdin=b"one")).decode().strip()
    refused(az.run("put", "k", "absent", stdin=b"two"), EREFUSED, f"{az.uri}/k", "409", "BlobAlreadyExists")
    assert ok(az.run("get", "k")) == b"one"
    assert az.server_etag("k") == v


def test_if_match_is_412_refused(az):
    v = ok(az.run("put", "k", stdin=b"one")).decode().strip()
    refused(az.run("put", "k", "match", '"0x8D0000000000000"', stdin=b"two"), EREFUSED, f"{az.uri}/k", "412",
            "ConditionNotMet")
    assert ok(az.run("get", "k")) == b"one"
    v2 = ok(az.run("put", "k", "match", v, stdin=b"two")).decode().strip()
    assert ok(az.run("get", "k")) == b"two"
    # The old version no longer matches; if-match on an absent key neither.
    refused(az.run("put", "k", "match", v, stdin=b"three"), EREFUSED, "412")
    refused(az.run("put", "gone", "match", v2, stdin=b"x"), EREFUSED)


def test_listing_pages(az):
    names = sorted([f"d/{i:03d}" for i in range(23)] + ["d/x y", "d/z/deep", "e", "d", "da"])
    for k in names:
        az.srv.put_blob(az.container, az.name(k), k.encode())
    az.srv.put_blob(az.container, "rootless", b"outside the root")  # not under root/
    az.srv.put_blob(az.container, "root2/k", b"a sibling root")
    # Every page size, including ones that end a page exactly at the end.
    for page in ("1", "4", "5", "28", "1000"):
        assert keys(az.run("list", "", page)) == names, page
    # The keys under a prefix: under it as under a directory ("d" holds
    # neither "d" nor "da").
    under_d = [k for k in names if k.startswith("d/")]
    assert keys(az.run("list", "d", "4")) == under_d
    assert keys(az.run("list", "d/z", "4")) == ["d/z/deep"]
    assert keys(az.run("list", "d/0", "4")) == []
    # start_after exact: after a key, after a name that is not a key.
    assert keys(az.run("list", "d", "3", "d/010")) == [k for k in under_d if k > "d/010"]
    assert keys(az.run("list", "", "7", "d/0105")) == [k for k in names if k > "d/0105"]
    assert keys(az.run("list", "", "7", "zzz")) == []
    assert keys(az.run("list", "nothing", "7")) == []
    # Sizes and versions from the listing, as the server has them.
    stats = listed(az.run("list", "d", "6"))
    assert [key for key, _, _ in stats] == under_d
    for key, size, version in stats[:5]:
        assert size == len(key.encode())
        assert version == az.server_etag(key)


def test_copy(az):
    v = ok(az.run("put", "src", stdin=b"payload")).decode().strip()
    ok(az.run("copy", "src", "dst"))
    assert ok(az.run("get", "dst")) == b"payload"
    # The target must not exist.
    refused(az.run("copy", "src", "dst"), EREFUSED, f"{az.uri}/dst", "409")
    # Only while the source is at the version named.
    ok(az.run("copy", "src", "dst2", v))
    refused(az.run("copy", "src", "dst3", '"0x8D0000000000000"'), EREFUSED, "412")
    assert json.loads(ok(az.run("stat", "dst3")))["exists"] is False
    refused(az.run("copy", "missing", "dst4"), ENOTFOUND, f"{az.uri}/missing")


def test_delete_and_root(az):
    assert ok(az.run("root-exists")).strip() == b"no"
    ok(az.run("make-root"))
    ok(az.run("put", "x/y", stdin=b"1"))
    assert ok(az.run("root-exists")).strip() == b"yes"
    refused(az.run("remove-root"), EREFUSED, az.uri, "objects are left")
    ok(az.run("delete", "x/y"))
    assert json.loads(ok(az.run("stat", "x/y")))["exists"] is False
    assert ok(az.run("root-exists")).strip() == b"no"
    ok(az.run("remove-root"))


def test_versions_on_azurite(az):
    """Azurite keeps no versions: no x-ms-version-id, and include=versions
    lists the current blob alone. As far as it allows: the store asks, and
    reports what it was told."""
    ok(az.run("put", "v", stdin=b"1"))
    st = json.loads(ok(az.run("stat", "v")))
    assert st["version_id"] == "" and st["is_latest"] is True
    versions = [json.loads(line) for line in ok(az.run("versions", "v")).decode().splitlines()]
    assert [(x["key"], x["size"], x["version_id"]) for x in versions] == [("v", 1, "")]
    assert versions[0]["version"] == az.server_etag("v")
    # Azurite ignores versionid and answers with the current blob: that is
    # not the version asked for, and the store says so.
    vid = "2026-01-01T00:00:00.0000000Z"
    refused(az.run("stat", "v", vid), ENOTFOUND, f"{az.uri}/v", f"no version '{vid}'")
    refused(az.run("get-version", "v", vid), ENOTFOUND, f"no version '{vid}'")


def test_wrong_key_is_eauth(az):
    env = clean_env(az.srv.env(key=OTHER_KEY))
    err = refused(tool(env, az.uri, "get", "k"), EAUTH, f"{az.uri}/k", "403", "signed with the account key from "
                  "the environment")
    assert OTHER_KEY not in err and KEY not in err
    refused(tool(env, az.uri, "list", "", "10"), EAUTH, az.uri, "403")
    refused(tool(env, az.uri, "put", "k", stdin=b"x"), EAUTH, "403")


def test_anonymous(az):
    """No key and no token: anonymous requests, refused by a private
    container, and the message says no credentials were found."""
    env = clean_env({"AZURE_STORAGE_CONNECTION_STRING": f"BlobEndpoint={az.srv.endpoint}"})
    r = tool(env, az.uri, "put", "anon", stdin=b"x")
    refused(r, EAUTH, f"{az.uri}/anon", "anonymous request")
    assert json.loads(ok(az.run("stat", "anon")))["exists"] is False


def test_missing_container(az):
    uri = "az://no-such-container-here/p"
    refused(tool(az.env, uri, "stat", "k"), ENOTFOUND, "container 'no-such-container-here' not found",
            "ContainerNotFound")
    refused(tool(az.env, uri, "make-root"), ENOTFOUND, "container 'no-such-container-here' not found")
    refused(tool(az.env, uri, "list", "", "10"), ENOTFOUND, "ContainerNotFound")
    refused(tool(az.env, uri, "put", "k", stdin=b"x"), ENOTFOUND, "ContainerNotFound")
    assert ok(tool(az.env, uri, "root-exists")).strip() == b"no"


def test_sas_token(az):
    # From the connection string (no key in it) and from the options.
    conn = f"BlobEndpoint={az.srv.endpoint};SharedAccessSignature={az.srv.account_sas()}"
    env = clean_env({"AZURE_STORAGE_CONNECTION_STRING": conn})
    ok(tool(env, az.uri, "put", "s/1", stdin=b"by sas"))
    assert ok(tool(env, az.uri, "get", "s/1")) == b"by sas"
    assert keys(tool(env, az.uri, "list", "s", "10")) == ["s/1"]
    ok(tool(env, az.uri, "copy", "s/1", "s/2"))
    assert ok(az.run("get", "s/2")) == b"by sas"
    options = {"account_name": az.srv.account, "sas_token": "?" + az.srv.account_sas(),
               "endpoint_url": az.srv.endpoint, "allow_http": True}
    assert ok(tool(clean_env(), az.uri, "get", "s/1", options=options)) == b"by sas"
    # The variables Azure's tools read, with the endpoint from the options.
    env = clean_env({"AZURE_STORAGE_ACCOUNT_NAME": az.srv.account, "AZURE_STORAGE_SAS_TOKEN": az.srv.account_sas()})
    assert ok(tool(env, az.uri, "get", "s/1", options={"endpoint_url": az.srv.endpoint, "allow_http": True})) \
        == b"by sas"
    # A read-only token cannot write.
    ro = clean_env({"AZURE_STORAGE_CONNECTION_STRING":
                    f"BlobEndpoint={az.srv.endpoint};SharedAccessSignature={az.srv.account_sas(permissions='rl')}"})
    assert ok(tool(ro, az.uri, "get", "s/1")) == b"by sas"
    refused(tool(ro, az.uri, "put", "s/3", stdin=b"x"), EAUTH, f"{az.uri}/s/3", "403")


def test_account_key_variables(az):
    env = clean_env({"AZURE_STORAGE_ACCOUNT": az.srv.account, "AZURE_STORAGE_KEY": az.srv.key})
    options = {"endpoint_url": az.srv.endpoint, "allow_http": True}
    ok(tool(env, az.uri, "put", "kv", stdin=b"key vars", options=options))
    assert ok(az.run("get", "kv")) == b"key vars"
    # Plain http to an endpoint named in the options needs allow_http.
    refused(tool(env, az.uri, "get", "kv", options={"endpoint_url": az.srv.endpoint}), EUSAGE, "allow_http")


def test_abfs_uris(az):
    for scheme in ("abfs", "abfss"):
        uri = f"{scheme}://{az.container}@{az.srv.account}.dfs.core.windows.net/root"
        ok(tool(az.env, uri, "put", f"{scheme}/k", stdin=scheme.encode()))
        assert ok(az.run("get", f"{scheme}/k")) == scheme.encode()
        assert keys(tool(az.env, uri, "list", scheme, "10")) == [f"{scheme}/k"]
    # Another account than the configuration's; no container; bad container.
    refused(tool(az.env, f"abfs://{az.container}@other.dfs.core.windows.net/r", "stat", "k"), EUSAGE,
            "account 'other'", az.srv.account)
    refused(tool(az.env, "abfs://acct.dfs.core.windows.net/r", "stat", "k"), EUSAGE, "CONTAINER@ACCOUNT")
    refused(tool(az.env, "abfs://Bad_Name@acct.dfs.core.windows.net/r", "stat", "k"), EUSAGE,
            "not an Azure container name")


def test_bad_configuration(az):
    refused(tool(az.env, "az://x/r", "stat", "k"), EUSAGE, "'x' is not an Azure container name")
    refused(tool(clean_env(), az.uri, "stat", "k"), EUSAGE, "no Azure storage account")
    bad = clean_env({"AZURE_STORAGE_CONNECTION_STRING": f"AccountName=a;AccountKey={KEY[:-3]}!!;Bogus"})
    err = refused(tool(bad, az.uri, "stat", "k"), EUSAGE, "AZURE_STORAGE_CONNECTION_STRING", az.uri)
    assert KEY[:20] not in err
    refused(tool(az.env, az.uri, "stat", "k", options={"account_key": "???"}), EUSAGE, "store option account_key")


def test_unreachable_endpoint(az):
    """Nothing listens: a transient error naming the URI, after the retries."""
    from s3servers import free_ports
    (port,) = free_ports(1)
    options = {"connection_string": f"AccountName=devstoreaccount1;AccountKey={KEY};"
                                    f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1",
               "connect_timeout": 2}
    refused(tool(clean_env(), az.uri, "stat", "k", options=options), 10, f"{az.uri}/k")


@pytest.mark.parametrize("form", ["az", "abfs"])
def test_store_contract(az, form):
    """tether-conformance --store: every check a byte store must pass."""
    if not os.access(CONFORMANCE, os.X_OK):
        pytest.fail(f"{CONFORMANCE} is not built")
    uri = az.uri if form == "az" else f"abfs://{az.container}@{az.srv.account}.dfs.core.windows.net/root"
    r = subprocess.run([str(CONFORMANCE), "--store", uri], env=az.env, capture_output=True, timeout=600)
    check_text_sanitizers(r)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    assert r.returncode == 0, out
    assert re.search(r"^\d+ passed, 0 failed$", out, re.M), out
    # What Azurite cannot do is all that is skipped: fault injection (a
    # fault+file:// store's) and versions (Azurite keeps none).
    skipped = [line for line in out.splitlines() if line.startswith("skip ")]
    assert all(line.startswith(("skip faults:", "skip versions:")) for line in skipped), skipped


BUSY = '<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>busy</Message></Error>'


@pytest.fixture
def proxied(az):
    """(make, env): make(plan) starts test_s3_store's FaultProxy (an HTTP
    proxy on 127.0.0.1 that answers, cuts or passes each request as plan
    says) in front of Azurite; env(proxy, key=None) is the environment that
    sends the store through it. Faults Azurite cannot make itself."""
    from test_s3_store import FaultProxy
    proxies = []

    def make(plan):
        proxies.append(FaultProxy(az.srv.port, plan))
        return proxies[-1]

    def env(proxy, key=None):
        return clean_env({"AZURE_STORAGE_CONNECTION_STRING":
                          f"AccountName={az.srv.account};AccountKey={key or az.srv.key};"
                          f"BlobEndpoint={proxy.endpoint}/{az.srv.account}"})
    yield make, env
    for p in proxies:
        p.close()


def test_retries_server_busy_and_cut_answers(az, proxied):
    make, env = proxied
    ok(az.run("put", "r", stdin=b"retried"))
    proxy = make(lambda n, method, path: ("status", 503, BUSY) if n <= 2 else None)
    assert ok(tool(env(proxy), az.uri, "get", "r")) == b"retried"
    assert len(proxy.requests) == 3  # two 503s, then the answer
    proxy = make(lambda n, method, path: ("cut", 3) if n == 1 else None)
    assert ok(tool(env(proxy), az.uri, "get", "r")) == b"retried"
    assert len(proxy.requests) == 2  # a reset mid-answer, then the whole
    proxy = make(lambda n, method, path: ("status", 503, BUSY))
    refused(tool(env(proxy), az.uri, "get", "r"), 10, f"{az.uri}/r", "503", "ServerBusy")
    assert len(proxy.requests) == 5  # the client's attempts, no more


def test_no_retry_on_refusal(az, proxied):
    make, env = proxied
    proxy = make(lambda n, method, path: None)
    refused(tool(env(proxy, key=OTHER_KEY), az.uri, "get", "r"), EAUTH, "403")
    assert len(proxy.requests) == 1


def test_listing_cut_short(az, proxied):
    make, env = proxied
    for i in range(5):
        az.srv.put_blob(az.container, az.name(f"c/{i}"), b"x")
    # The first page is whole; the second, asked with a marker, ends early.
    cut = '<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs><Blob><Name>root/c/3'
    proxy = make(lambda n, method, path: ("status", 200, cut) if "marker=" in path else None)
    refused(tool(env(proxy), az.uri, "list", "c", "2"), 7, az.uri, "List Blobs answer")


def test_directory_markers_are_not_objects(az):
    """A Data Lake account lists its directories as empty blobs with the
    metadata hdi_isfolder=true: not objects. Made here by hand on Azurite."""
    status, _, body = az.srv.request("PUT", f"/{az.container}/root/f/dir",
                                     headers={"x-ms-blob-type": "BlockBlob", "x-ms-meta-hdi_isfolder": "true"})
    assert status == 201, body
    az.srv.put_blob(az.container, az.name("f/dir/file"), b"data")
    az.srv.put_blob(az.container, az.name("f/plain"), b"")
    assert keys(az.run("list", "f", "10")) == ["f/dir/file", "f/plain"]


def test_if_match_on_a_blob_gone_as_404(az, proxied):
    """Azure may answer If-Match on a missing blob with 404 BlobNotFound
    (Azurite says 412): refused either way, as a precondition."""
    make, env = proxied
    gone = '<?xml version="1.0" encoding="utf-8"?><Error><Code>BlobNotFound</Code><Message>gone</Message></Error>'
    proxy = make(lambda n, method, path: ("status", 404, gone) if method == "PUT" else None)
    refused(tool(env(proxy), az.uri, "put", "k", "match", '"0x1"', stdin=b"x"), EREFUSED, f"{az.uri}/k",
            "not there")
    refused(tool(env(proxy), az.uri, "put", "k", stdin=b"x"), ENOTFOUND, "404 BlobNotFound")


def test_azurite_stays_on_loopback(az):
    """Azurite (telemetry off) listens on its blob port on 127.0.0.1 alone
    and, after the tests above, holds no connection to anywhere else."""
    import socket
    pid = az.srv.pid
    inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
              if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
    remote = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/{pid}/net/{proto}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] not in inodes:
                continue
            for addr_port in (fields[1], fields[2]):
                addr = addr_port.split(":")[0]
                if len(addr) == 8:
                    ip = socket.inet_ntoa(bytes.fromhex(addr)[::-1])
                    ok_addr = ip.startswith("127.") or ip == "0.0.0.0" and addr_port == fields[2]
                else:
                    ok_addr = addr in ("00000000000000000000000001000000", "0000000000000000FFFF00000100007F") or \
                        (addr == "0" * 32 and addr_port == fields[2])
                if not ok_addr:
                    remote.append((proto, fields[1], fields[2]))
    assert remote == [], remote
