"""fake-gcs-server for the GCS store's tests, started on 127.0.0.1 and
stopped by PID, at most once per test session and only when a test asks
for it (the fixture is session-scoped and lazy).

  gcs_server  a GCSServer: `endpoint` (http://127.0.0.1:PORT), `host`
              (127.0.0.1:PORT, what STORAGE_EMULATOR_HOST holds), `pid`;
              `bucket(name, versioned=False)` makes a fresh bucket and
              returns its name; `api(method, path, body=None)` one JSON API
              call of the test's own (an oracle independent of tether's
              client); `env(base)` the environment a tether process needs
              to reach it as Google's clients do.

fake-gcs-server is built by scripts/install-deps ($TETHER_FAKE_GCS names
another binary). Not installed: a skip, which conftest.py turns into a
failure under TETHER_REQUIRE_TOOLS=1 (`make check`).

What it does differently from Cloud Storage, found while writing these
(tests/e2e/test_gcs_store.py relies on none of it silently):
  - It checks no credentials at all: any Authorization header, or none,
    is accepted. The store's authentication is tested against the fakes
    of tests/e2e/gcsauth.py instead.
  - Only `-backend memory` keeps generations and lists `versions=true`.
  - rewriteTo and copyTo ignore ifGenerationMatch and
    ifSourceGenerationMatch (the copy happens anyway); uploads honour
    ifGenerationMatch.
  - Deleting the live object of a versioned bucket lists an extra
    noncurrent generation.
  - A 416 (range past the end) answers in XML, not JSON.
  - It loads objects from -data (default /data) at start: it is pointed
    at an empty directory of the test's.
"""
import itertools
import json
import os
import re
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path
from shutil import which

import pytest

from s3servers import READY_TIMEOUT, TETHER_DEPS, S3Server, free_ports

_bucket_serial = itertools.count(1)


def fake_gcs_binary():
    """fake-gcs-server: $TETHER_FAKE_GCS, scripts/install-deps' link, or PATH."""
    for candidate in (os.environ.get("TETHER_FAKE_GCS"), TETHER_DEPS / "bin" / "fake-gcs-server"):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return which("fake-gcs-server")


class GCSServer(S3Server):
    """One running fake-gcs-server. S3Server's process handling (spawn with
    die-with-parent, readiness read from /proc, stop by PID) is reused as
    it is; nothing S3 about it is."""

    def __init__(self, workdir):
        super().__init__("fake-gcs-server", workdir)

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def api(self, method, path, body=None, headers=None, raw=False):
        """(status, answer) of one request to the server, made with urllib:
        JSON decoded unless raw."""
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        req = urllib.request.Request(self.endpoint + path, data=data, method=method, headers=dict(headers or {}))
        if isinstance(body, (dict, list)):
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        if raw:
            return status, text
        return status, (json.loads(text) if text.strip() else None)

    def bucket(self, name="t", versioned=False):
        stem = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "t"
        bucket = f"{stem}-{next(_bucket_serial):05d}-{secrets.token_hex(3)}"
        status, answer = self.api("POST", "/storage/v1/b?project=tether-tests",
                                  {"name": bucket, "versioning": {"enabled": bool(versioned)}})
        assert status == 200, f"making bucket {bucket}: HTTP {status} {answer}"
        return bucket

    def env(self, base=None):
        """base (default: this process's environment) without any variable
        a Google client reads, plus STORAGE_EMULATOR_HOST for this server."""
        base = dict(os.environ if base is None else base)
        env = {k: v for k, v in base.items()
               if not k.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_", "STORAGE_EMULATOR_HOST", "NO_GCE_CHECK"))}
        env["STORAGE_EMULATOR_HOST"] = self.host
        return env


def start_fake_gcs(srv, binary):
    (srv.port,) = free_ports(1)
    data = srv.workdir / "data"
    data.mkdir()
    argv = [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(srv.port), "-backend", "memory",
            "-public-host", srv.host, "-external-url", srv.endpoint, "-data", str(data), "-log-level", "warn"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GCE_", "STORAGE_"))}
    env["HOME"] = str(srv.workdir)
    t0 = time.monotonic()
    srv._spawn(argv, env)
    deadline = t0 + READY_TIMEOUT
    srv._wait_listening(deadline)
    while time.monotonic() < deadline:
        try:
            if srv.api("GET", "/storage/v1/b?project=tether-tests")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)
    else:
        srv._fail(f"the JSON API not answering after {READY_TIMEOUT:.0f} s")
    srv.started_in = time.monotonic() - t0


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory):
    """fake-gcs-server on 127.0.0.1 (started on first use, once per session)."""
    binary = fake_gcs_binary()
    if binary is None:
        pytest.skip("fake-gcs-server is not installed (run scripts/install-deps)")
    srv = GCSServer(tmp_path_factory.mktemp("fake-gcs"))
    try:
        start_fake_gcs(srv, binary)
        yield srv
    finally:
        srv.stop()
