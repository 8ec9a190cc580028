"""A fake Neon control plane for the neon backend's tests, and its fixture.

Neon cannot run here. This fake answers the API v2 routes tether uses,
held to Neon's own contract: every request it receives and every answer it
gives is validated against Neon's published OpenAPI document
(`public-v2-for-users.gen.yaml` from npm `@neondatabase/api-client`, which
scripts/install-deps fetches into $TETHER_DEPS). A request that does not
validate is answered 400 and recorded as a violation; an answer that does
not is answered 500 and recorded too; the tests assert there are none.

Behind it, real Postgres (Debian postgresql-15). Neon branches are
copy-on-write clusters with their own transaction ids, so each fake branch
is a cluster of its own: a project's root branch is an `initdb`, a child
branch a `pg_basebackup` of its parent's running server, started on its own
127.0.0.1 port, which every endpoint of the branch connects to (a read_only
endpoint's URI sets default_transaction_read_only). A branch at an LSN in
the past is the parent's current state only when no transaction committed
on the parent since that LSN (read with pg_walinspect); otherwise the fake
refuses the parent_lsn rather than pretend. Restoring a branch replaces its
cluster with a copy of the source's, on the same port.

Neon's rules it keeps: a branch with children cannot be deleted or
restored; a protected branch cannot be deleted; one read_write endpoint per
branch; operations (create_timeline, start_compute, ...) run for a while
(`slow` seconds) and are polled until finished. It caps the clusters alive
at once (MAX_CLUSTERS) and stops a branch's server when the branch goes.

Run as a program: `python neonfake.py PORT KEY WORKDIR SPEC`. Routes under
/_fake/ (no authentication) let a test make a project (POST
/_fake/projects), inject faults (POST /_fake/faults: {"method", "path_re",
"status" | "drop": true, "count"}), make operations slow (POST
/_fake/slow {"seconds"}), stop a branch's compute (POST /_fake/kill
{"project_id", "branch"}), and read the requests received and the contract
violations (GET /_fake/requests, /_fake/violations).
"""
import itertools
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

PG_BIN = Path(os.environ.get("TETHER_PG_BIN", "/usr/lib/postgresql/15/bin"))
SPEC_VERSION = "2.7.3"
MAX_CLUSTERS = int(os.environ.get("NEONFAKE_MAX_CLUSTERS", "14"))
OWNER = "neondb_owner"
DATABASE = "neondb"


def spec_path():
    deps = Path(os.environ.get("TETHER_DEPS", Path.home() / ".local/share/tether-deps"))
    return deps / f"neon-api-client-{SPEC_VERSION}" / "public-v2-for-users.gen.yaml"


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


# -- the contract -----------------------------------------------------------------

class Contract:
    """Neon's OpenAPI document: which route a request is, and validators
    for its body and its answers."""

    def __init__(self, path):
        import yaml
        from openapi_schema_validator import OAS30Validator
        self.doc = yaml.safe_load(Path(path).read_text())
        self.validator_cls = OAS30Validator
        self.routes = []
        for template, item in self.doc["paths"].items():
            rx = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, item))

    def route(self, method, path):
        for rx, template, item in self.routes:
            if rx.match(path) and method.lower() in item:
                return template, item[method.lower()]
        return None, None

    def _resolve(self, obj):
        while isinstance(obj, dict) and "$ref" in obj and len(obj) == 1:
            node = self.doc
            for part in obj["$ref"].lstrip("#/").split("/"):
                node = node[part]
            obj = node
        return obj

    def check(self, schema, data, what):
        # The document's components beside the schema, so that its
        # "#/components/..." references resolve.
        v = self.validator_cls({**schema, "components": self.doc["components"]})
        errors = sorted(v.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            raise AssertionError(f"{what}: {where}: {e.message[:300]}")

    def check_request(self, op, query, body, what):
        for p in op.get("parameters", []):
            p = self._resolve(p)
            if p.get("in") == "query" and p.get("required") and p["name"] not in query:
                raise AssertionError(f"{what}: query parameter {p['name']} is required")
        known = {self._resolve(p).get("name") for p in op.get("parameters", [])}
        for k in query:
            if k not in known:
                raise AssertionError(f"{what}: query parameter {k} is not in the document")
        rb = op.get("requestBody")
        if rb:
            schema = self._resolve(rb)["content"]["application/json"]["schema"]
            self.check(schema, body if body is not None else {}, what + " body")
        elif body not in (None, {}):
            raise AssertionError(f"{what}: the route takes no body")

    def check_response(self, op, status, payload, what):
        responses = op["responses"]
        resp = responses.get(status, responses.get(str(status)))
        if resp is None:
            resp = responses["default"]
        resp = self._resolve(resp)
        schema = resp.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            if payload is not None:
                raise AssertionError(f"{what}: answer {status} has no body in the document")
            return
        self.check(schema, payload, f"{what} answer {status}")


# -- Postgres clusters ------------------------------------------------------------

def _as_postgres():
    pw = pwd.getpwnam("postgres")
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    os.setsid()


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """One branch's Postgres: a data directory and, while it runs, its
    postmaster on 127.0.0.1:port."""

    def __init__(self, fake, datadir, port=None):
        self.fake = fake
        self.datadir = Path(datadir)
        self.port = port or _free_port()
        self.proc = None
        self.last_used = time.monotonic()

    def run(self, argv):
        r = subprocess.run(argv, preexec_fn=_as_postgres, capture_output=True, text=True)
        if r.returncode != 0:
            raise ApiError(500, f"{Path(argv[0]).name}: {r.stderr.strip()[-300:]}")

    def start(self):
        self.last_used = time.monotonic()
        if self.proc and self.proc.poll() is None:
            return
        self.fake.reserve_cluster(self)
        log = open(self.datadir.parent / (self.datadir.name + ".log"), "ab")
        self.proc = subprocess.Popen(
            [str(PG_BIN / "postgres"), "-D", str(self.datadir), "-p", str(self.port), "-k", str(self.datadir),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "autovacuum=off",
             "-c", "shared_buffers=8MB", "-c", "max_connections=40", "-c", "max_wal_senders=4",
             "-c", "wal_level=replica", "-c", "full_page_writes=off",
             "-c", "wal_keep_size=128MB", "-c", "log_min_messages=warning"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_as_postgres)
        log.close()
        self.fake.note_pid(self.proc.pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ApiError(500, f"postgres for {self.datadir.name} exited")
            r = subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)])
            if r.returncode == 0:
                return
            time.sleep(0.1)
        raise ApiError(500, "postgres did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        self.fake.release_cluster(self)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def sql(self, sql, database="postgres"):
        r = subprocess.run([str(PG_BIN / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-h", str(self.datadir), "-p", str(self.port), "-U", OWNER, "-d", database, "-c", sql],
                           preexec_fn=_as_postgres, capture_output=True, text=True)
        if r.returncode != 0:
            raise ApiError(500, f"psql: {r.stderr.strip()[:300]}")
        return r.stdout.strip()

    def copy_to(self, datadir):
        """A new cluster directory from this running server (pg_basebackup)."""
        self.run([str(PG_BIN / "pg_basebackup"), "-h", str(self.datadir), "-p", str(self.port), "-U", OWNER,
                  "-D", str(datadir), "-X", "stream", "-c", "fast", "--no-sync"])

    def remove(self):
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)


# -- the fake ----------------------------------------------------------------------

class Project:
    def __init__(self, pid, password):
        self.id = pid
        self.password = password
        self.created = now()
        self.branches = {}   # id -> branch dict
        self.clusters = {}   # branch id -> Cluster
        self.endpoints = {}  # id -> endpoint dict
        self.operations = {}  # id -> (operation dict, finish monotonic time)

    def document(self):
        return {"id": self.id, "platform_id": "aws", "region_id": "aws-us-east-2", "name": self.id,
                "provisioner": "k8s-pod", "pg_version": 15, "proxy_host": "127.0.0.1",
                "branch_logical_size_limit": 0, "branch_logical_size_limit_bytes": 0, "store_passwords": True,
                "cpu_used_sec": 0, "active_time_seconds": 0, "compute_time_seconds": 0, "written_data_bytes": 0,
                "data_transfer_bytes": 0, "data_storage_bytes_hour": 0, "creation_source": "console",
                "history_retention_seconds": 86400, "created_at": self.created, "updated_at": self.created,
                "consumption_period_start": self.created, "consumption_period_end": self.created,
                "owner_id": "tester"}


class Fake:
    def __init__(self, key, workdir, contract):
        self.key = key
        self.workdir = Path(workdir)
        self.contract = contract
        self.lock = threading.RLock()
        self.projects = {}
        self.faults = []
        self.requests = []
        self.violations = []
        self.slow = 0.0
        self.alive = set()
        self.pidfile = self.workdir / "postmasters"

    # clusters
    def reserve_cluster(self, cluster):
        """Room for one more running cluster: past MAX_CLUSTERS the one used
        longest ago is suspended (stopped), as Neon suspends idle computes;
        it starts again when next asked for."""
        with self.lock:
            cluster.last_used = time.monotonic()
            if cluster in self.alive:
                return
            while len(self.alive) >= MAX_CLUSTERS:
                idle = min(self.alive, key=lambda c: c.last_used)
                idle.stop()
            self.alive.add(cluster)

    def release_cluster(self, cluster):
        with self.lock:
            self.alive.discard(cluster)

    def note_pid(self, pid):
        with open(self.pidfile, "a") as f:
            f.write(f"{pid}\n")

    def shutdown(self):
        for c in list(self.alive):
            c.stop()

    def new_dir(self, stem):
        d = self.workdir / f"{stem}-{secrets.token_hex(4)}"
        return d

    # projects and branches
    def create_project(self):
        pid = f"fake-{secrets.token_hex(3)}-{next(_serial):06d}"
        password = secrets.token_urlsafe(16)
        p = Project(pid, password)
        datadir = self.new_dir("root")
        pwfile = self.workdir / f"pw-{pid}"
        pwfile.write_text(password + "\n")
        shutil.chown(pwfile, "postgres")
        c = Cluster(self, datadir)
        c.run([str(PG_BIN / "initdb"), "-D", str(datadir), "-U", OWNER, f"--pwfile={pwfile}",
               "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        pwfile.unlink()
        with open(datadir / "pg_hba.conf", "a") as f:
            f.write("local replication all trust\n")
        c.start()
        c.sql(f'CREATE DATABASE "{DATABASE}"')
        c.sql("CREATE EXTENSION pg_walinspect")
        b = self._branch_doc(p, "main", None, None, default=True)
        p.branches[b["id"]] = b
        p.clusters[b["id"]] = c
        self.projects[pid] = p
        return {"project_id": pid, "role": OWNER, "password": password, "database": DATABASE,
                "branch_id": b["id"]}

    def _branch_doc(self, p, name, parent, parent_lsn, default=False, protected=False):
        t = now()
        b = {"id": f"br-{secrets.token_hex(4)}-{next(_serial):06d}", "project_id": p.id, "name": name,
             "current_state": "ready", "state_changed_at": t, "creation_source": "console", "created_at": t,
             "updated_at": t, "default": default, "primary": default, "protected": protected, "cpu_used_sec": 0,
             "active_time_seconds": 0, "compute_time_seconds": 0, "written_data_bytes": 0,
             "data_transfer_bytes": 0}
        if parent:
            b["parent_id"] = parent
            b["parent_lsn"] = parent_lsn
        return b

    def project(self, pid):
        if pid not in self.projects:
            raise ApiError(404, f"project {pid} not found")
        return self.projects[pid]

    def branch(self, p, bid):
        if bid not in p.branches:
            raise ApiError(404, f"branch {bid} not found")
        return p.branches[bid]

    def children(self, p, bid):
        return [b["name"] for b in p.branches.values() if b.get("parent_id") == bid]

    def operation(self, p, action, branch_id=None, endpoint_id=None):
        t = now()
        op = {"id": str(uuid.uuid4()), "project_id": p.id, "action": action, "status": "running",
              "failures_count": 0, "created_at": t, "updated_at": t, "total_duration_ms": 0}
        if branch_id:
            op["branch_id"] = branch_id
        if endpoint_id:
            op["endpoint_id"] = endpoint_id
        finish = time.monotonic() + self.slow
        if self.slow <= 0:
            op["status"] = "finished"
        p.operations[op["id"]] = (op, finish)
        return op

    def current_lsn(self, cluster):
        return cluster.sql("SELECT pg_current_wal_lsn()")

    def check_lsn(self, cluster, lsn):
        """Can a copy of the parent now stand for the parent at lsn?"""
        if not re.fullmatch(r"[0-9A-F]{1,8}/[0-9A-F]{1,8}", lsn or ""):
            raise ApiError(400, f"parent_lsn {lsn!r} is not an LSN")
        cur = self.current_lsn(cluster)
        cmp = cluster.sql(f"SELECT '{lsn}'::pg_lsn <= '{cur}'::pg_lsn")
        if cmp != "t":
            raise ApiError(400, f"parent_lsn {lsn} is ahead of the parent's LSN {cur}")
        if lsn == cur:
            return
        try:
            n = cluster.sql("SELECT count(*) FROM pg_get_wal_records_info_till_end_of_wal("
                            f"'{lsn}') WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%'")
        except ApiError as e:
            # WAL the parent no longer keeps: past its history retention.
            raise ApiError(400, f"parent_lsn {lsn} is outside the history the fake retains: {e.message}")
        if n != "0":
            raise ApiError(400, f"the fake cannot branch at parent_lsn {lsn}: {n} transaction(s) committed on the "
                                f"parent since (it copies only the parent's current state)")

    def create_branch(self, p, req):
        spec = req.get("branch") or {}
        parent_id = spec.get("parent_id") or next(b["id"] for b in p.branches.values() if b["default"])
        parent = self.branch(p, parent_id)
        name = spec.get("name") or f"br-{secrets.token_hex(3)}"
        if any(b["name"] == name for b in p.branches.values()):
            raise ApiError(409, f"branch {name} already exists")
        src = p.clusters[parent_id]
        src.start()
        lsn = spec.get("parent_lsn")
        if lsn:
            self.check_lsn(src, lsn)
        else:
            lsn = self.current_lsn(src)
        b = self._branch_doc(p, name, parent_id, lsn, protected=bool(spec.get("protected")))
        c = Cluster(self, self.new_dir("branch"))
        self.reserve_cluster(c)
        try:
            src.copy_to(c.datadir)
            c.start()
        except Exception:
            c.remove()
            raise
        p.branches[b["id"]] = b
        p.clusters[b["id"]] = c
        ops = [self.operation(p, "create_branch", b["id"])]
        eps = []
        for e in req.get("endpoints") or []:
            ep, op = self.create_endpoint(p, b["id"], e["type"])
            eps.append(ep)
            ops.append(op)
        return 201, {"branch": b, "endpoints": eps, "operations": ops, "roles": [self.role(b)],
                     "databases": [self.database(b)]}

    def role(self, b):
        return {"branch_id": b["id"], "name": OWNER, "protected": False, "created_at": b["created_at"],
                "updated_at": b["updated_at"]}

    def database(self, b):
        return {"id": 1, "branch_id": b["id"], "name": DATABASE, "owner_name": OWNER, "created_at": b["created_at"],
                "updated_at": b["updated_at"]}

    def delete_branch(self, p, bid):
        b = self.branch(p, bid)
        if b["default"]:
            raise ApiError(422, f"branch {b['name']} is the project's default branch")
        if b["protected"]:
            raise ApiError(422, f"branch {b['name']} is protected")
        kids = self.children(p, bid)
        if kids:
            raise ApiError(422, f"branch {b['name']} has child branches {kids}")
        for eid in [e for e, ep in p.endpoints.items() if ep["branch_id"] == bid]:
            del p.endpoints[eid]
        del p.branches[bid]
        p.clusters.pop(bid).remove()
        return 200, {"branch": b, "operations": [self.operation(p, "delete_timeline", bid)]}

    def restore(self, p, bid, req):
        b = self.branch(p, bid)
        if req.get("source_lsn") or req.get("source_timestamp"):
            raise ApiError(400, "the fake restores only onto a source branch's current state")
        src_id = req["source_branch_id"]
        self.branch(p, src_id)
        if self.children(p, bid):
            raise ApiError(422, f"branch {b['name']} has children {self.children(p, bid)}: cannot restore it")
        src = p.clusters[src_id]
        src.start()
        old = p.clusters[bid]
        fresh = Cluster(self, self.new_dir("branch"), port=old.port)
        src.copy_to(fresh.datadir)
        old.remove()
        fresh.start()
        p.clusters[bid] = fresh
        b["parent_id"] = src_id
        b["parent_lsn"] = self.current_lsn(src)
        b["updated_at"] = b["last_reset_at"] = now()
        return 200, {"branch": b, "operations": [self.operation(p, "create_timeline", bid)]}

    def endpoint_doc(self, p, bid, etype):
        t = now()
        return {"host": "127.0.0.1", "id": f"ep-{secrets.token_hex(4)}-{next(_serial):06d}", "project_id": p.id,
                "branch_id": bid, "region_id": "aws-us-east-2", "autoscaling_limit_max_cu": 0.25,
                "autoscaling_limit_min_cu": 0.25, "type": etype, "current_state": "active", "pooler_enabled": False,
                "pooler_mode": "transaction", "disabled": False, "passwordless_access": True,
                "creation_source": "console", "created_at": t, "updated_at": t, "settings": {},
                "proxy_host": "127.0.0.1", "suspend_timeout_seconds": 0, "provisioner": "k8s-pod"}

    def create_endpoint(self, p, bid, etype):
        self.branch(p, bid)
        if etype == "read_write" and any(e["branch_id"] == bid and e["type"] == "read_write"
                                         for e in p.endpoints.values()):
            raise ApiError(422, f"branch {bid} already has a read_write endpoint")
        ep = self.endpoint_doc(p, bid, etype)
        p.endpoints[ep["id"]] = ep
        return ep, self.operation(p, "start_compute", bid, ep["id"])

    def connection_uri(self, p, q):
        ep = p.endpoints.get(q.get("endpoint_id", ""))
        if not ep:
            raise ApiError(404, f"endpoint {q.get('endpoint_id')} not found")
        if q.get("branch_id") and q["branch_id"] != ep["branch_id"]:
            raise ApiError(400, "the endpoint is not on that branch")
        if q["role_name"] != OWNER:
            raise ApiError(404, f"role {q['role_name']} not found")
        c = p.clusters[ep["branch_id"]]
        c.start() if ep["branch_id"] not in self.killed else None
        uri = (f"postgresql://{quote(OWNER)}:{quote(p.password)}@127.0.0.1:{c.port}/"
               f"{quote(q['database_name'])}?sslmode=disable")
        if ep["type"] == "read_only":
            uri += "&options=" + quote("-c default_transaction_read_only=on")
        return 200, {"uri": uri}

    killed = set()

    def handle(self, method, path, q, body):
        parts = [s for s in path.split("/") if s]
        if len(parts) < 2 or parts[0] != "projects":
            raise ApiError(404, f"no route {method} {path}")
        p = self.project(parts[1])
        rest = parts[2:]
        if method == "GET" and not rest:
            return 200, {"project": p.document()}
        if rest == ["branches"] and method == "GET":
            bs = list(p.branches.values())
            if q.get("search"):
                bs = [b for b in bs if q["search"] in b["name"] or q["search"] == b["id"]]
            return 200, {"branches": bs, "annotations": {}}
        if rest == ["branches"] and method == "POST":
            return self.create_branch(p, body)
        if len(rest) == 2 and rest[0] == "branches":
            if method == "GET":
                return 200, {"branch": self.branch(p, rest[1]), "annotation": {"object": {"type": "console/branch",
                                                                                          "id": rest[1]},
                                                                               "value": {}}}
            if method == "DELETE":
                return self.delete_branch(p, rest[1])
        if len(rest) == 3 and rest[0] == "branches" and rest[2] == "restore" and method == "POST":
            return self.restore(p, rest[1], body)
        if len(rest) == 3 and rest[0] == "branches" and rest[2] == "endpoints" and method == "GET":
            self.branch(p, rest[1])
            return 200, {"endpoints": [e for e in p.endpoints.values() if e["branch_id"] == rest[1]]}
        if rest == ["endpoints"] and method == "POST":
            e = body["endpoint"]
            ep, op = self.create_endpoint(p, e["branch_id"], e["type"])
            return 201, {"endpoint": ep, "operations": [op]}
        if rest == ["connection_uri"] and method == "GET":
            return self.connection_uri(p, q)
        if len(rest) == 2 and rest[0] == "operations" and method == "GET":
            if rest[1] not in p.operations:
                raise ApiError(404, f"operation {rest[1]} not found")
            op, finish = p.operations[rest[1]]
            if op["status"] == "running" and time.monotonic() >= finish:
                op["status"] = "finished"
                op["updated_at"] = now()
            return 200, {"operation": op}
        raise ApiError(404, f"no route {method} {path}")

    def fault_for(self, method, path):
        for f in self.faults:
            if f["count"] > 0 and f.get("method", method) == method and re.search(f["path_re"], path):
                f["count"] -= 1
                return f
        return None


_serial = itertools.count(1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, payload):
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, message, op, what):
        payload = {"code": "", "message": message}
        self._checked(op, status, payload, what)

    def _checked(self, op, status, payload, what):
        fake = self.fake
        if op is not None:
            try:
                fake.contract.check_response(op, status, payload, what)
            except AssertionError as e:
                with fake.lock:
                    fake.violations.append(f"fake's answer: {e}")
                return self._send(500, {"code": "", "message": f"contract: {e}"})
        return self._send(status, payload)

    def _do(self, method):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake = self.fake
        if url.path.startswith("/_fake/"):
            return self._admin(method, url.path, raw)
        path = url.path
        prefix = "/api/v2"
        if path.startswith(prefix):
            path = path[len(prefix):]
        what = f"{method} {path}"
        template, op = fake.contract.route(method, path)
        with fake.lock:
            fake.requests.append({"method": method, "path": path, "query": query,
                                  "auth": self.headers.get("Authorization", "")[:7]})
        if op is None:
            with fake.lock:
                fake.violations.append(f"tether's request: {what} is no route of the document")
            return self._send(404, {"code": "", "message": f"no route {what}"})
        if self.headers.get("Authorization") != f"Bearer {fake.key}":
            return self._error(401, "authentication required", op, what)
        try:
            body = json.loads(raw) if raw else None
            fake.contract.check_request(op, query, body, what)
        except (AssertionError, ValueError) as e:
            with fake.lock:
                fake.violations.append(f"tether's request: {e}")
            return self._error(400, f"contract: {e}", op, what)
        with fake.lock:
            fault = fake.fault_for(method, path)
        if fault and fault.get("drop"):
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        if fault:
            return self._error(fault["status"], f"injected {fault['status']}", op, what)
        try:
            with fake.lock:
                status, payload = fake.handle(method, path, query, body or {})
        except ApiError as e:
            return self._error(e.status, e.message, op, what)
        return self._checked(op, status, payload, what)

    def _admin(self, method, path, raw):
        fake = self.fake
        body = json.loads(raw) if raw else {}
        with fake.lock:
            try:
                if path == "/_fake/projects" and method == "POST":
                    return self._send(200, fake.create_project())
                if path == "/_fake/faults" and method == "POST":
                    body.setdefault("count", 1)
                    fake.faults.append(body)
                    return self._send(204, None)
                if path == "/_fake/faults" and method == "DELETE":
                    fake.faults.clear()
                    fake.slow = 0.0
                    return self._send(204, None)
                if path == "/_fake/slow" and method == "POST":
                    fake.slow = float(body["seconds"])
                    return self._send(204, None)
                if path == "/_fake/kill" and method == "POST":
                    p = fake.project(body["project_id"])
                    bid = next(b["id"] for b in p.branches.values() if b["name"] == body["branch"])
                    fake.killed.add(bid)
                    p.clusters[bid].stop()
                    return self._send(204, None)
                if path == "/_fake/drop" and method == "POST":
                    p = fake.projects.pop(body["project_id"], None)
                    for c in (p.clusters.values() if p else ()):
                        c.remove()
                    return self._send(204, None)
                if path == "/_fake/revive" and method == "POST":
                    fake.killed.clear()
                    return self._send(204, None)
                if path == "/_fake/branches" and method == "POST":
                    p = fake.project(body["project_id"])
                    for b in p.branches.values():
                        if b["name"] == body.get("wake") and b["id"] not in fake.killed:
                            p.clusters[b["id"]].start()
                    out = {}
                    for b in p.branches.values():
                        c = p.clusters[b["id"]]
                        out[b["name"]] = dict(b, port=c.port, running=c.running,
                                              endpoints=[e["type"] for e in p.endpoints.values()
                                                         if e["branch_id"] == b["id"]])
                    return self._send(200, out)
                if path == "/_fake/requests" and method == "GET":
                    return self._send(200, fake.requests)
                if path == "/_fake/requests" and method == "DELETE":
                    fake.requests.clear()
                    return self._send(204, None)
                if path == "/_fake/violations" and method == "GET":
                    return self._send(200, fake.violations)
            except ApiError as e:
                return self._send(e.status, {"code": "", "message": e.message})
        return self._send(404, {"code": "", "message": "no such admin route"})

    def do_GET(self):
        self._do("GET")

    def do_POST(self):
        self._do("POST")

    def do_DELETE(self):
        self._do("DELETE")

    def do_PATCH(self):
        self._do("PATCH")


def serve(port, key, workdir, spec):
    fake = Fake(key, workdir, Contract(spec))
    Handler.fake = fake
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True

    def stop(*_):
        threading.Thread(target=server.shutdown).start()
    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    finally:
        fake.shutdown()


# -- the fixture ----------------------------------------------------------------

class NeonFake:
    """The running fake: api_url, key, pid; project() a new project; faults,
    requests and violations; sql(project, branch, sql) through a branch's
    own server, as a user's client would."""

    def __init__(self):
        self.key = "neon-" + secrets.token_hex(16)
        self.proc = None
        self.port = None
        # Not under pytest's tmp_path: root's 0700 directory, which the
        # postgres user cannot enter.
        self.workdir = Path(tempfile.mkdtemp(prefix="tether-neon-"))
        shutil.chown(self.workdir, "postgres")

    @property
    def pid(self):
        return self.proc.pid

    @property
    def api_url(self):
        return f"http://127.0.0.1:{self.port}/api/v2"

    def start(self):
        from s3servers import _die_with_parent, free_ports, listening_sockets
        (self.port,) = free_ports(1)
        log = open(self.workdir / "neonfake.log", "wb")
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.port), self.key, str(self.workdir),
                                      str(spec_path())],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("neonfake exited: " + (self.workdir / "neonfake.log").read_text())
            if any(p == self.port for _, p, proto in listening_sockets(self.pid) if proto.startswith("tcp")):
                return self
            time.sleep(0.05)
        raise RuntimeError("neonfake did not listen")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        # Postmasters the fake could not stop (it was killed): by PID.
        pidfile = self.workdir / "postmasters"
        if pidfile.exists():
            for line in pidfile.read_text().split():
                try:
                    os.kill(int(line), signal.SIGQUIT)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    def admin(self, method, path, body=None):
        import urllib.request
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, timeout=120) as r:
            data = r.read()
            return json.loads(data) if data else None

    def project(self):
        return self.admin("POST", "/_fake/projects", {})

    def branches(self, project_id, wake=None):
        """name -> the branch, its port, whether its server runs, and its
        endpoints' types; `wake` starts that branch's server first."""
        return self.admin("POST", "/_fake/branches", {"project_id": project_id, "wake": wake})

    def fault(self, path_re, status=None, method=None, drop=False, count=1):
        f = {"path_re": path_re, "count": count}
        if status:
            f["status"] = status
        if method:
            f["method"] = method
        if drop:
            f["drop"] = True
        self.admin("POST", "/_fake/faults", f)

    def clear_faults(self):
        self.admin("DELETE", "/_fake/faults")

    def slow(self, seconds):
        self.admin("POST", "/_fake/slow", {"seconds": seconds})

    def kill(self, project_id, branch):
        self.admin("POST", "/_fake/kill", {"project_id": project_id, "branch": branch})

    def drop(self, project_id):
        """Stop and remove every cluster of a project (the session caps them)."""
        self.admin("POST", "/_fake/drop", {"project_id": project_id})

    def revive(self):
        self.admin("POST", "/_fake/revive", {})

    def requests(self):
        return self.admin("GET", "/_fake/requests")

    def clear_requests(self):
        self.admin("DELETE", "/_fake/requests")

    def violations(self):
        return self.admin("GET", "/_fake/violations")

    def sql(self, project, branch, sql, database=DATABASE):
        """SQL on a branch's server over TCP with the project's password,
        as a user's client would (psycopg2)."""
        import psycopg2
        b = self.branches(project["project_id"], wake=branch)[branch]
        conn = psycopg2.connect(host="127.0.0.1", port=b["port"], user=project["role"],
                                password=project["password"], dbname=database)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()


try:
    import pytest

    @pytest.fixture(scope="session")
    def neon_server():
        """The fake Neon API on 127.0.0.1, once per session, stopped by PID
        (and the Postgres servers behind it with it)."""
        if not spec_path().exists():
            pytest.skip(f"no Neon OpenAPI document at {spec_path()} (scripts/install-deps fetches it)")
        if not (PG_BIN / "pg_basebackup").exists():
            pytest.skip("no postgresql-15 (scripts/install-deps)")
        srv = NeonFake()
        srv.start()
        yield srv
        srv.stop()
except ImportError:  # run as the server program outside the test venv
    pass


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
