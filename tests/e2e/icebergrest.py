"""The Iceberg project's own REST catalog server for the tests, started on
127.0.0.1 and stopped by PID, at most once per test session and only when a
test asks for it (session-scoped, lazy).

  iceberg_rest_server  an IcebergRestServer: Iceberg 1.10.0's
        RESTCatalogAdapter + RESTCatalogServlet (the code of
        RESTCatalogServer, from Maven Central; scripts/install-deps copies
        the jars into $TETHER_DEPS/iceberg-rest-1.10.0) on a JdbcCatalog
        over an SQLite file and a file:// warehouse, through the wrapper
        tests/iceberg-rest/TetherRestServer.java (compiled here with javac),
        which binds 127.0.0.1 only and checks credentials: a bearer `token`
        and an OAuth2 client (`client_id`, `client_secret`) whose tokens
        expire after `token_ttl` seconds. Attributes: `uri`, `pid`,
        `warehouse`, `token`, `client_id`, `client_secret`; `catalog()` a
        pyiceberg RestCatalog on it; `secrets(auth="token"|"credential",
        uri=None)` the catalog's secrets.toml entry as a dict;
        `tokens_issued()` how many tokens its token endpoint has handed out.
  start_iceberg_rest  a factory for a server of the test's own (say, with a
        two-second token life), stopped when the test ends.
  rest_proxy  a FaultProxy in front of iceberg_rest_server, for one test.
  FaultProxy  a small HTTP proxy of the test's own in front of a server,
        answering chosen requests itself (401, 503) or replacing the
        server's answer after forwarding (a commit applied whose answer is
        lost), and recording every request it saw.

Not installed (no java, javac or jars): a skip, which conftest.py turns
into a failure under TETHER_REQUIRE_TOOLS=1 (`make check`).

What the server does that a production catalog may not: it checks no
credentials of its own (its /v1/oauth/tokens hands a token to anyone,
which is why the wrapper checks them); its /v1/config answers no prefix.
"""
import http.client
import json
import os
import re
import secrets as pysecrets
import shutil
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from s3servers import TETHER_DEPS, _die_with_parent, free_ports, listening_sockets, stop_process

ICEBERG_VERSION = "1.10.0"
JARS = TETHER_DEPS / f"iceberg-rest-{ICEBERG_VERSION}"
WRAPPER = Path(__file__).resolve().parents[1] / "iceberg-rest" / "TetherRestServer.java"
READY_TIMEOUT = 90.0


def installed():
    """Why the server cannot run here, or None when it can."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not list(JARS.glob("iceberg-open-api-*-test-fixtures.jar")):
        return f"the Iceberg REST server's jars are not in {JARS} (run scripts/install-deps)"
    return None


def compile_wrapper(dest):
    """javac the wrapper into dest (a directory); returns dest."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-d", str(dest), "-cp", f"{JARS}/*", str(WRAPPER)], check=True,
                   capture_output=True, timeout=300)
    return dest


class IcebergRestServer:
    """One running REST catalog (see the module's docstring)."""

    def __init__(self, workdir, classes, token_ttl=3600):
        self.workdir = Path(workdir)
        self.classes = classes
        self.token_ttl = token_ttl
        self.warehouse = self.workdir / "warehouse"
        self.warehouse.mkdir()
        self.token = "tok-" + pysecrets.token_urlsafe(18)
        self.client_id = "tether-tests"
        self.client_secret = pysecrets.token_urlsafe(18)
        self.proc = None
        (self.port,) = free_ports(1)
        self.log_path = self.workdir / "server.log"

    @property
    def pid(self):
        return self.proc.pid

    @property
    def uri(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        argv = ["java", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", f"{JARS}/*:{self.classes}",
                "TetherRestServer", "--host", "127.0.0.1", "--port", str(self.port),
                "--sqlite", str(self.workdir / "catalog.db"), "--warehouse", str(self.warehouse),
                "--token", self.token, "--client-id", self.client_id, "--client-secret", self.client_secret,
                "--token-ttl", str(self.token_ttl)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JAVA_TOOL_OPTIONS"))}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, cwd=str(self.workdir), env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail(f"exited with status {self.proc.returncode} while starting")
            if "listening 127.0.0.1:" in self.log_path.read_text(errors="replace"):
                break
            time.sleep(0.2)
        else:
            self._fail(f"not listening after {READY_TIMEOUT:.0f} s")
        bound = [(a, p) for a, p, proto in listening_sockets(self.pid) if proto.startswith("tcp")]
        # loopback only (Java's IPv6 socket shows 127.0.0.1 as ::ffff:127.0.0.1)
        for addr, _ in bound:
            if addr not in ("127.0.0.1", "0000000000000000FFFF00000100007F"):
                self._fail(f"listens on {addr}, not loopback only: {bound}")
        return self

    def _fail(self, why):
        self.stop()
        tail = self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""
        raise RuntimeError(f"Iceberg REST server on {self.uri}: {why}\n--- {self.log_path} ---\n{tail}")

    def stop(self):
        stop_process(self.proc)

    # -- using it ---------------------------------------------------------
    def catalog(self, name="rest"):
        """pyiceberg's RestCatalog on this server, with the bearer token."""
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog(name, uri=self.uri, token=self.token)

    def secrets(self, auth="token", uri=None):
        """The catalog's entry of .tether/secrets.toml, as a dict."""
        out = {"uri": uri or self.uri, "allow_http": True}
        if auth == "token":
            out["token"] = self.token
        elif auth == "credential":
            out["credential"] = f"{self.client_id}:{self.client_secret}"
        return out

    def tokens_issued(self):
        with urllib.request.urlopen(f"{self.uri}/tether-test/tokens", timeout=10) as r:
            return json.load(r)["issued"]

    def __repr__(self):
        return f"<IcebergRestServer {self.uri} pid {self.proc.pid if self.proc else None}>"


@pytest.fixture(scope="session")
def _iceberg_rest_classes(tmp_path_factory):
    why = installed()
    if why:
        pytest.skip(why)
    return compile_wrapper(tmp_path_factory.mktemp("iceberg-rest-classes"))


@pytest.fixture(scope="session")
def iceberg_rest_server(tmp_path_factory, _iceberg_rest_classes):
    srv = IcebergRestServer(tmp_path_factory.mktemp("iceberg-rest"), _iceberg_rest_classes)
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.fixture
def start_iceberg_rest(tmp_path_factory, _iceberg_rest_classes):
    """start(token_ttl=...) -> a new IcebergRestServer, stopped after the test."""
    started = []

    def start(**kw):
        srv = IcebergRestServer(tmp_path_factory.mktemp("iceberg-rest-own"), _iceberg_rest_classes, **kw)
        started.append(srv)
        return srv.start()

    try:
        yield start
    finally:
        for srv in started:
            srv.stop()


@pytest.fixture
def rest_proxy(iceberg_rest_server):
    """A FaultProxy in front of the session's server, closed after the test."""
    proxy = FaultProxy(iceberg_rest_server.uri)
    try:
        yield proxy
    finally:
        proxy.close()


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 in front of `upstream` (http://host:port).

    rules: a list of dicts, tried in order for each request:
        method, path (a regex searched in the path and query),
        status (the answer to give), body (its JSON text, optional),
        times (how many requests it applies to; None: all),
        after (True: forward first, then replace the server's answer:
               the request took effect, its answer is lost),
        hook (a function run before the request is forwarded as it is:
              a racing writer between a client's read and its commit;
              no status then).
    `seen` lists [method, path, has_authorization, status answered] of
    every request."""

    def __init__(self, upstream):
        self.upstream = upstream.split("://", 1)[1].rstrip("/")
        self.rules = []
        self.seen = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rule, self.entry = proxy._match(self.command, self.path, "Authorization" in self.headers)
                if rule and rule.get("hook"):
                    rule["hook"]()
                    rule = None
                if rule and not rule.get("after"):
                    return self._answer(rule)
                conn = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if rule:
                    return self._answer(rule)
                self.entry[3] = resp.status
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, rule):
                status = rule["status"]
                body = rule.get("body") or json.dumps({"error": {
                    "message": f"injected {status}", "type": "InjectedByProxy", "code": status}})
                data = body.encode()
                self.entry[3] = status
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_HEAD = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def uri(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _match(self, method, path, has_auth):
        entry = [method, path, has_auth, None]
        with self.lock:
            self.seen.append(entry)
            for rule in self.rules:
                if rule.get("method", method) != method or not re.search(rule.get("path", ""), path):
                    continue
                if rule.get("times") is not None:
                    if rule["times"] <= 0:
                        continue
                    rule["times"] -= 1
                return rule, entry
        return None, entry

    def close(self):
        self.server.shutdown()
        self.server.server_close()
