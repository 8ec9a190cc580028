"""Azurite, Microsoft's Azure Storage emulator, for the Azure store's tests:
its blob service started on 127.0.0.1 and stopped by PID.

  azurite_server  a session fixture, lazy: a session that selects no Azure
                  test starts nothing. scripts/install-deps installs
                  Azurite from npm and links $TETHER_DEPS/bin/azurite-blob
                  ($TETHER_AZURITE names another); not installed is a skip,
                  which conftest.py turns into a failure under
                  TETHER_REQUIRE_TOOLS=1 (`make check`).

An AzuriteServer has `endpoint` (http://127.0.0.1:PORT/devstoreaccount1:
Azurite addresses the account in the path), `account`, `key` (Azurite's
development account and its key, which Microsoft publishes for the
emulator: not a secret), `pid`; `container(name)` makes a fresh container
and returns its name; `request(...)` one REST call signed with SharedKey
by the small signer below, written from Microsoft's documentation of the
algorithm, independently of tether's (so a test that sets something up
through it and reads it through tether checks one against the other);
`account_sas(...)` an account SAS token; `env(base)` the environment a
tether process needs to reach it as Azure's tools do (a connection string).

What Azurite does differently from Azure (test-servers.md): no blob
versioning (no x-ms-version-id, include=versions lists current blobs
only); telemetry is on unless --disableTelemetry; it refuses API versions
newer than it knows unless --skipApiVersionCheck.
"""
import base64
import datetime
import hashlib
import hmac
import itertools
import os
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from s3servers import S3Server, free_ports, installed_binary, listening_sockets

ACCOUNT = "devstoreaccount1"
# Azurite's development account key, published by Microsoft for the
# emulator (https://learn.microsoft.com/azure/storage/common/storage-use-azurite).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
API_VERSION = "2021-08-06"
READY_TIMEOUT = 60.0

_container_serial = itertools.count(1)


def azurite_binary():
    """$TETHER_AZURITE, scripts/install-deps' link, or PATH."""
    return installed_binary("TETHER_AZURITE", "azurite-blob")


def shared_key_signature(key, account, method, path, query, headers, body_len):
    """SharedKey's Authorization value for one request, as Microsoft documents
    it for the Blob service (version 2015-02-21 and later): the standard
    headers in their fixed order, the x-ms-* headers sorted, then
    /ACCOUNT + the URL's path and the query's parameters, sorted, decoded."""
    h = {k.lower(): v for k, v in headers.items()}
    standard = ["content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
                "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range"]
    lines = [method]
    for name in standard:
        if name == "content-length":
            lines.append(str(body_len) if body_len else "")
        else:
            lines.append(h.get(name, ""))
    ms = sorted((k, v.strip()) for k, v in h.items() if k.startswith("x-ms-"))
    canon_headers = "".join(f"{k}:{v}\n" for k, v in ms)
    params = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        params.setdefault(k.lower(), []).append(v)
    resource = f"/{account}{path}" + "".join(f"\n{k}:{','.join(sorted(v))}" for k, v in sorted(params.items()))
    to_sign = "\n".join(lines) + "\n" + canon_headers + resource
    mac = hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()
    return f"SharedKey {account}:{base64.b64encode(mac).decode()}"


class AzuriteServer(S3Server):
    """One running Azurite blob service (see the module's docstring). It
    borrows S3Server's process handling (spawn, die with parent, stop by
    PID, log tail)."""

    def __init__(self, workdir):
        super().__init__("azurite", workdir)
        self.account = ACCOUNT
        self.key = KEY

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}/{self.account}"

    def request(self, method, path, query="", headers=None, body=b"", key=None, sign=True):
        """One REST call to path (under the account, e.g. "/c/blob"), signed
        with SharedKey (key overrides the account's). Returns (status,
        headers (case-insensitive), body); an HTTP error status is returned,
        not raised."""
        headers = dict(headers or {})
        headers.setdefault("x-ms-date", datetime.datetime.now(datetime.timezone.utc)
                           .strftime("%a, %d %b %Y %H:%M:%S GMT"))
        headers.setdefault("x-ms-version", API_VERSION)
        if method in ("PUT", "POST"):
            # urllib would add a form Content-Type after signing.
            headers.setdefault("Content-Type", "application/octet-stream")
        url_path = f"/{self.account}{path}"
        if sign:
            headers["Authorization"] = shared_key_signature(key or self.key, self.account, method, url_path,
                                                            query, headers, len(body))
        url = f"http://127.0.0.1:{self.port}{url_path}" + (f"?{query}" if query else "")
        req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def container(self, name="t"):
        """A new, empty container named after `name` plus a counter."""
        stem = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "t"
        container = f"{stem}-{next(_container_serial):05d}-{secrets.token_hex(3)}"
        status, _, body = self.request("PUT", f"/{container}", "restype=container")
        assert status == 201, f"create container {container}: {status} {body[:300]!r}"
        return container

    def put_blob(self, container, name, data):
        status, headers, body = self.request("PUT", f"/{container}/{urllib.parse.quote(name)}",
                                             headers={"x-ms-blob-type": "BlockBlob"}, body=data)
        assert status == 201, f"put {container}/{name}: {status} {body[:300]!r}"
        return headers["ETag"]

    def account_sas(self, permissions="rwdlac", resource_types="sco", expiry_hours=2):
        """An account SAS token for the blob service (no leading '?'), signed
        as Microsoft documents for version 2020-12-06 and later."""
        now = datetime.datetime.now(datetime.timezone.utc)
        start = (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        expiry = (now + datetime.timedelta(hours=expiry_hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = [self.account, permissions, "b", resource_types, start, expiry, "", "http,https", API_VERSION, ""]
        to_sign = "\n".join(fields) + "\n"
        sig = base64.b64encode(hmac.new(base64.b64decode(self.key), to_sign.encode(), hashlib.sha256).digest())
        return urllib.parse.urlencode({"sv": API_VERSION, "ss": "b", "srt": resource_types, "sp": permissions,
                                       "st": start, "se": expiry, "spr": "http,https", "sig": sig.decode()})

    def connection_string(self, key=None):
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account};AccountKey={key or self.key};"
                f"BlobEndpoint={self.endpoint};")

    def env(self, base=None, **conn):
        """The environment a tether process needs to reach this server as
        Azure's tools do: AZURE_STORAGE_CONNECTION_STRING (conn: its
        connection_string's arguments). With base, a copy of it without any
        AZURE_* variable of its own, plus that."""
        ours = {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string(**conn)}
        if base is None:
            return ours
        env = {k: v for k, v in base.items() if not k.startswith("AZURE_")}
        env.update(ours)
        return env


def start_azurite(srv, binary):
    """azurite-blob on 127.0.0.1 and a free port, its data in the work
    directory, telemetry off; ready when a signed List Containers answers."""
    (srv.port,) = free_ports(1)
    data = srv.workdir / "data"
    data.mkdir()
    argv = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(srv.port), "--location", str(data),
            "--disableTelemetry", "--skipApiVersionCheck"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "AZURITE_"))}
    env["HOME"] = str(srv.workdir)
    t0 = time.monotonic()
    srv._spawn(argv, env)
    deadline = t0 + READY_TIMEOUT
    srv._wait_listening(deadline)
    # Only the blob port, only on loopback.
    socks = listening_sockets(srv.pid)
    if socks != [("127.0.0.1", srv.port, "tcp")]:
        srv._fail(f"listens on {socks}, expected only 127.0.0.1:{srv.port}")
    last = None
    while time.monotonic() < deadline:
        try:
            status, _, body = srv.request("GET", "/", "comp=list")
            if status == 200:
                srv.started_in = time.monotonic() - t0
                return
            last = f"HTTP {status} {body[:200]!r}"
        except OSError as e:
            last = e
        time.sleep(0.2)
    srv._fail(f"blob service not answering after {READY_TIMEOUT:.0f} s: {last}")


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory):
    """Azurite's blob service, started on first use, once per session."""
    binary = azurite_binary()
    if binary is None:
        pytest.skip("Azurite's azurite-blob is not installed (run scripts/install-deps)")
    srv = AzuriteServer(tmp_path_factory.mktemp("azurite"))
    try:
        start_azurite(srv, binary)
        yield srv
    finally:
        srv.stop()
