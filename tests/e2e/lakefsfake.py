"""A fake lakeFS API server for the lakefs backend's tests, and its fixture.

lakeFS itself cannot run here: no registry this machine reaches serves it
(the Go module proxy refuses github.com/treeverse/lakefs). So this is a fake
of the routes tether uses, and of those the tests write data through, held
to lakeFS's own contract: every request body it accepts is parsed by the
official `lakefs-sdk` models (generated from lakeFS's OpenAPI document) and
every answer it gives is built through them, so a field of the wrong name
or type fails the fake, not the test. The tests themselves write and read
through `lakefs_sdk`'s API client, which parses the answers again.

What it models of lakeFS: repositories; commits with parents, a
generation, and the tree of objects they hold (path -> checksum, size);
branches with a head commit and staging (uncommitted writes and deletes);
tags; the log (every ancestor, newest generation first); two-dot diffs;
three-way merges that refuse conflicts and write nothing then; hard reset;
lakeFS's name rules (a branch is `^\\w[-\\w]*$`); pagination (`amount`,
`after`, `has_more`, `next_offset`); Basic authentication with one key
pair (401 otherwise).

Run as a program: `python lakefsfake.py PORT KEY SECRET` listens on
127.0.0.1:PORT. The fixture `lakefs_server` starts it once per session and
stops it by PID. Routes under /_fake/ (no authentication, 127.0.0.1 only)
let a test inject faults (`POST /_fake/faults` with
{"method", "path_re", "status" | "drop": true, "count"}) and read the log of
requests received (`GET /_fake/requests`: method, path, whether an
Authorization header came).
"""
import base64
import hashlib
import itertools
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

BRANCH_RE = re.compile(r"^\w[-\w]*$", re.ASCII)
REPO_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")


class ApiError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def _models():
    import lakefs_sdk.models as m
    return m


def model(name, data):
    """data validated by (and re-dumped through) lakefs_sdk's model."""
    cls = getattr(_models(), name)
    obj = cls.from_dict(data)
    if obj is None:
        raise AssertionError(f"{name}.from_dict gave None for {data!r}")
    return obj.to_dict()


def parse_body(name, raw):
    try:
        data = json.loads(raw or b"{}")
        return getattr(_models(), name).from_dict(data).to_dict()
    except Exception as e:  # noqa: BLE001 - the SDK's validation error, any kind
        raise ApiError(400, f"bad {name}: {e}".splitlines()[0])


class Repo:
    def __init__(self, name, namespace, default_branch):
        self.name = name
        self.namespace = namespace
        self.default_branch = default_branch
        self.created = int(time.time())
        self.commits = {}   # id -> {"commit": Commit dict, "tree": {path: (checksum, size)}}
        self.branches = {}  # name -> {"head": id, "staging": {path: (checksum, size) | None}}
        self.tags = {}      # name -> commit id
        self.objects = {}   # checksum -> bytes
        root = self._new_commit([], "Repository created", {}, committer="")
        self.branches[default_branch] = {"head": root, "staging": {}}

    def _new_commit(self, parents, message, tree, committer="tester", metadata=None):
        gen = 1 + max((self.commits[p]["commit"]["generation"] for p in parents), default=0)
        seed = json.dumps([parents, message, sorted(tree.items()), time.time_ns(), secrets.token_hex(4)])
        cid = hashlib.sha256(seed.encode()).hexdigest()
        meta_range = hashlib.sha256(json.dumps(sorted(tree.items())).encode()).hexdigest()
        commit = model("Commit", {"id": cid, "parents": list(parents), "committer": committer, "message": message,
                                  "creation_date": int(time.time()), "meta_range_id": meta_range,
                                  "metadata": metadata or {}, "generation": gen, "version": 1})
        self.commits[cid] = {"commit": commit, "tree": dict(tree)}
        return cid

    def resolve(self, ref):
        if ref in self.branches:
            return self.branches[ref]["head"]
        if ref in self.tags:
            return self.tags[ref]
        if ref in self.commits:
            return ref
        raise ApiError(404, f"{ref}: not found")

    def branch(self, name):
        if name not in self.branches:
            raise ApiError(404, f"branch {name}: not found")
        return self.branches[name]

    def tree(self, ref):
        return self.commits[self.resolve(ref)]["tree"]

    def ancestors(self, cid):
        """Every ancestor of cid (itself first), newest generation first."""
        seen, todo = {}, [cid]
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen[c] = self.commits[c]["commit"]
            todo.extend(seen[c]["parents"])
        return sorted(seen.values(), key=lambda c: (-c["generation"], -c["creation_date"], c["id"]))

    def merge_base(self, a, b):
        ours = {c["id"] for c in self.ancestors(a)}
        for c in self.ancestors(b):
            if c["id"] in ours:
                return c["id"]
        return None

    def staged_tree(self, name):
        b = self.branch(name)
        tree = dict(self.commits[b["head"]]["tree"])
        for path, entry in b["staging"].items():
            if entry is None:
                tree.pop(path, None)
            else:
                tree[path] = entry
        return tree


def diff_trees(left, right, prefix=""):
    out = []
    for path in sorted(set(left) | set(right)):
        if not path.startswith(prefix):
            continue
        a, b = left.get(path), right.get(path)
        if a == b:
            continue
        kind = "added" if a is None else "removed" if b is None else "changed"
        size = (b or a)[1]
        out.append(model("Diff", {"type": kind, "path": path, "path_type": "object", "size_bytes": size}))
    return out


def page(items, query, key):
    """lakeFS's pagination over items sorted by key: `after` (exclusive),
    `amount` (default 100, at most 1000), `prefix`."""
    prefix = query.get("prefix", "")
    after = query.get("after", "")
    amount = min(int(query.get("amount", "100") or 100), 1000)
    chosen = [i for i in items if key(i).startswith(prefix) and key(i) > after]
    chosen.sort(key=key)
    results = chosen[:amount]
    more = len(chosen) > amount
    return {"pagination": model("Pagination", {"has_more": more, "next_offset": key(results[-1]) if more else "",
                                               "results": len(results), "max_per_page": 1000}),
            "results": results}


class Fake:
    def __init__(self, key, secret):
        self.key = key
        self.secret = secret
        self.repos = {}
        self.lock = threading.Lock()
        self.faults = []
        self.requests = []

    # -- routing --------------------------------------------------------------
    def handle(self, method, path, query, headers, body):
        m = re.fullmatch(r"/api/v1/repositories(?:/([^/]+)(/.*)?)?", path)
        if not m:
            raise ApiError(404, f"no route {method} {path}")
        auth = headers.get("Authorization", "")
        want = "Basic " + base64.b64encode(f"{self.key}:{self.secret}".encode()).decode()
        if auth != want:
            raise ApiError(401, "error authenticating request")
        repo_name, rest = m.group(1), m.group(2) or ""
        if repo_name is None:
            if method == "POST":
                req = parse_body("RepositoryCreation", body)
                if not REPO_RE.match(req["name"]):
                    raise ApiError(400, "repository name: invalid")
                if req["name"] in self.repos:
                    raise ApiError(409, "repository already exists")
                r = self.repos[req["name"]] = Repo(req["name"], req["storage_namespace"],
                                                   req.get("default_branch") or "main")
                return 201, self.repo_json(r)
            raise ApiError(405, "method not allowed")
        repo_name = unquote(repo_name)
        if repo_name not in self.repos:
            raise ApiError(404, f"repository {repo_name}: not found")
        r = self.repos[repo_name]
        parts = [unquote(p) for p in rest.split("/")[1:]] if rest else []
        return self.route(r, method, parts, query, headers, body)

    def repo_json(self, r):
        return model("Repository", {"id": r.name, "creation_date": r.created, "default_branch": r.default_branch,
                                    "storage_namespace": r.namespace})

    def route(self, r, method, parts, q, headers, body):
        if not parts and method == "GET":
            return 200, self.repo_json(r)
        head = parts[0] if parts else ""
        if head == "branches":
            return self.branches(r, method, parts[1:], q, headers, body)
        if head == "tags":
            return self.tags(r, method, parts[1:], q, body)
        if head == "commits" and len(parts) == 2 and method == "GET":
            if parts[1] not in r.commits:
                raise ApiError(404, f"commit {parts[1]}: not found")
            return 200, r.commits[parts[1]]["commit"]
        if head == "refs":
            return self.refs(r, method, parts[1:], q, body)
        raise ApiError(404, f"no route {method} /{'/'.join(parts)}")

    def branches(self, r, method, parts, q, headers, body):
        if not parts:
            if method == "GET":
                refs = [model("Ref", {"id": n, "commit_id": b["head"]}) for n, b in r.branches.items()]
                return 200, page(refs, q, lambda x: x["id"])
            if method == "POST":
                req = parse_body("BranchCreation", body)
                if not BRANCH_RE.match(req["name"]):
                    raise ApiError(400, f"branch name {req['name']!r}: invalid (must match ^\\w[-\\w]*$)")
                if req["name"] in r.branches:
                    raise ApiError(409, "branch already exists")
                r.branches[req["name"]] = {"head": r.resolve(req["source"]), "staging": {}}
                return 201, r.branches[req["name"]]["head"]  # lakeFS answers the ref as text
            raise ApiError(405, "method not allowed")
        name = parts[0]
        b = r.branch(name)
        tail = parts[1:]
        if not tail:
            if method == "GET":
                return 200, model("Ref", {"id": name, "commit_id": b["head"]})
            if method == "DELETE":
                if name == r.default_branch:
                    raise ApiError(403, "cannot delete the default branch")
                del r.branches[name]
                return 204, None
        elif tail == ["diff"] and method == "GET":
            tree = r.commits[b["head"]]["tree"]
            return 200, page(diff_trees(tree, r.staged_tree(name), q.get("prefix", "")), dict(q, prefix=""),
                             lambda d: d["path"])
        elif tail == ["hard_reset"] and method == "PUT":
            b["head"] = r.resolve(q.get("ref", ""))
            b["staging"] = {}
            return 204, None
        elif tail == ["commits"] and method == "POST":
            req = parse_body("CommitCreation", body)
            if not b["staging"] and not req.get("allow_empty"):
                raise ApiError(400, "commit: no changes")
            cid = r._new_commit([b["head"]], req["message"], r.staged_tree(name), metadata=req.get("metadata"))
            b["head"], b["staging"] = cid, {}
            return 201, r.commits[cid]["commit"]
        elif tail == ["objects"] and method == "POST":
            path = q.get("path", "")
            data = body
            ctype = headers.get("Content-Type", "")
            if ctype.startswith("multipart/form-data"):
                msg = BytesParser().parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
                data = next(p.get_payload(decode=True) for p in msg.get_payload()
                            if p.get_param("name", header="content-disposition") == "content")
            checksum = hashlib.md5(data).hexdigest()  # noqa: S324 - lakeFS's ETag is an MD5 too
            r.objects[checksum] = data
            b["staging"][path] = (checksum, len(data))
            return 201, model("ObjectStats", {"path": path, "path_type": "object",
                                              "physical_address": f"{r.namespace}/data/{checksum}",
                                              "checksum": checksum, "size_bytes": len(data),
                                              "mtime": int(time.time())})
        elif tail == ["objects"] and method == "DELETE":
            path = q.get("path", "")
            if path not in r.staged_tree(name):
                raise ApiError(404, f"object {path}: not found")
            b["staging"][path] = None
            return 204, None
        raise ApiError(404, f"no route {method} branches/{'/'.join(parts)}")

    def tags(self, r, method, parts, q, body):
        if not parts:
            if method == "GET":
                refs = [model("Ref", {"id": n, "commit_id": c}) for n, c in r.tags.items()]
                return 200, page(refs, q, lambda x: x["id"])
            if method == "POST":
                req = parse_body("TagCreation", body)
                if req["id"] in r.tags:
                    raise ApiError(409, "tag already exists")
                r.tags[req["id"]] = r.resolve(req["ref"])
                return 201, model("Ref", {"id": req["id"], "commit_id": r.tags[req["id"]]})
        elif len(parts) == 1:
            if parts[0] not in r.tags:
                raise ApiError(404, f"tag {parts[0]}: not found")
            if method == "GET":
                return 200, model("Ref", {"id": parts[0], "commit_id": r.tags[parts[0]]})
            if method == "DELETE":
                del r.tags[parts[0]]
                return 204, None
        raise ApiError(404, f"no route {method} tags/{'/'.join(parts)}")

    def refs(self, r, method, parts, q, body):
        if len(parts) == 2 and parts[1] == "commits" and method == "GET":
            log = r.ancestors(r.resolve(parts[0]))
            # lakeFS pages the log by position; `after` is the last id seen.
            after = q.get("after", "")
            start = next((i + 1 for i, c in enumerate(log) if c["id"] == after), 0) if after else 0
            amount = min(int(q.get("amount", "100") or 100), 1000)
            chunk = log[start:start + amount]
            more = start + amount < len(log)
            return 200, {"pagination": model("Pagination", {"has_more": more,
                                                             "next_offset": chunk[-1]["id"] if more else "",
                                                             "results": len(chunk), "max_per_page": 1000}),
                         "results": chunk}
        if len(parts) == 3 and parts[1:] == ["objects", "ls"] and method == "GET":
            tree = r.tree(parts[0])
            stats = [model("ObjectStats", {"path": p, "path_type": "object", "physical_address":
                                           f"{r.namespace}/data/{c}", "checksum": c, "size_bytes": n, "mtime": 0})
                     for p, (c, n) in tree.items()]
            return 200, page(stats, q, lambda o: o["path"])
        if len(parts) == 2 and parts[1] == "objects" and method == "GET":
            entry = r.tree(parts[0]).get(q.get("path", ""))
            if entry is None:
                raise ApiError(404, f"object {q.get('path', '')}: not found")
            return 200, r.objects[entry[0]]
        if len(parts) == 3 and parts[1] == "diff" and method == "GET":
            left, right = r.tree(parts[0]), r.tree(parts[2])
            return 200, page(diff_trees(left, right, q.get("prefix", "")), dict(q, prefix=""), lambda d: d["path"])
        if len(parts) == 3 and parts[1] == "merge" and method == "POST":
            req = parse_body("Merge", body)
            src, dst = r.resolve(parts[0]), parts[2]
            b = r.branch(dst)
            if b["staging"]:
                raise ApiError(400, "merge: destination branch has uncommitted changes")
            base = r.merge_base(src, b["head"])
            base_tree = r.commits[base]["tree"] if base else {}
            ours, theirs = r.commits[b["head"]]["tree"], r.commits[src]["tree"]
            merged, conflicts = dict(ours), []
            for path in sorted(set(ours) | set(theirs) | set(base_tree)):
                o, t, a = ours.get(path), theirs.get(path), base_tree.get(path)
                if t == a or o == t:
                    continue
                if o == a:
                    if t is None:
                        merged.pop(path, None)
                    else:
                        merged[path] = t
                else:
                    conflicts.append(path)
            if conflicts:
                raise ApiError(409, f"conflict found: {', '.join(conflicts)}")
            if src == b["head"] or merged == ours and base == src:
                raise ApiError(400, "no changes")
            cid = r._new_commit([b["head"], src], req.get("message") or f"Merge '{parts[0]}' into '{dst}'", merged)
            b["head"] = cid
            return 200, model("MergeResult", {"reference": cid})
        raise ApiError(404, f"no route {method} refs/{'/'.join(parts)}")

    def fault_for(self, method, path):
        for f in self.faults:
            if f["count"] > 0 and f.get("method", method) == method and re.search(f["path_re"], path):
                f["count"] -= 1
                return f
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, payload, content_type="application/json"):
        if payload is None:
            data = b""
        elif isinstance(payload, (bytes, str)):
            data = payload.encode() if isinstance(payload, str) else payload
            content_type = "text/html"
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _do(self, method):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fake = self.fake
        if url.path.startswith("/_fake/"):
            return self._admin(method, url.path, body)
        with fake.lock:
            fake.requests.append({"method": method, "path": url.path, "query": url.query,
                                  "auth": "Authorization" in self.headers})
            fault = fake.fault_for(method, url.path)
        if fault and fault.get("drop"):
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        if fault:
            return self._send(fault["status"], model("Error", {"message": f"injected {fault['status']}"}))
        try:
            with fake.lock:
                status, payload = fake.handle(method, url.path, query, self.headers, body)
        except ApiError as e:
            return self._send(e.status, model("Error", {"message": e.message}))
        return self._send(status, payload)

    def _admin(self, method, path, body):
        fake = self.fake
        with fake.lock:
            if path == "/_fake/faults" and method == "POST":
                f = json.loads(body)
                f.setdefault("count", 1)
                fake.faults.append(f)
                return self._send(204, None)
            if path == "/_fake/faults" and method == "DELETE":
                fake.faults.clear()
                return self._send(204, None)
            if path == "/_fake/requests" and method == "GET":
                return self._send(200, fake.requests)
            if path == "/_fake/requests" and method == "DELETE":
                fake.requests.clear()
                return self._send(204, None)
        return self._send(404, model("Error", {"message": "no such admin route"}))

    def do_GET(self):
        self._do("GET")

    def do_POST(self):
        self._do("POST")

    def do_PUT(self):
        self._do("PUT")

    def do_DELETE(self):
        self._do("DELETE")


def serve(port, key, secret):
    Handler.fake = Fake(key, secret)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


# -- the fixture ----------------------------------------------------------------

class LakeFSFake:
    """The running fake: endpoint, key, secret, pid; client() an SDK client;
    repo(name) a new repository; faults and the request log."""

    _serial = itertools.count(1)

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.key = "AKIA" + secrets.token_hex(8).upper()
        self.secret = secrets.token_urlsafe(24)
        self.proc = None
        self.port = None

    @property
    def pid(self):
        return self.proc.pid

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        from s3servers import _die_with_parent, free_ports, listening_sockets
        (self.port,) = free_ports(1)
        log = open(self.workdir / "lakefsfake.log", "wb")
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.port), self.key, self.secret],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("lakefsfake exited: " + (self.workdir / "lakefsfake.log").read_text())
            if any(p == self.port for _, p, proto in listening_sockets(self.pid) if proto.startswith("tcp")):
                return self
            time.sleep(0.05)
        raise RuntimeError("lakefsfake did not listen")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def client(self, key=None, secret=None):
        import lakefs_sdk
        conf = lakefs_sdk.Configuration(host=self.endpoint + "/api/v1", username=key or self.key,
                                        password=secret or self.secret)
        return lakefs_sdk.ApiClient(conf)

    def repo(self, name="data"):
        import lakefs_sdk
        stem = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "r"
        repo = f"{stem}-{next(self._serial):04d}"
        with self.client() as c:
            lakefs_sdk.RepositoriesApi(c).create_repository(lakefs_sdk.RepositoryCreation(
                name=repo, storage_namespace=f"local://{repo}", default_branch="main"))
        return repo

    def admin(self, method, path, body=None):
        import urllib.request
        req = urllib.request.Request(self.endpoint + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, timeout=10) as r:
            data = r.read()
            return json.loads(data) if data else None

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

    def requests(self):
        return self.admin("GET", "/_fake/requests")

    def clear_requests(self):
        self.admin("DELETE", "/_fake/requests")


def upload(client, repo, branch, path, data):
    """Upload bytes through lakefs-sdk (its upload_object sends a file it
    opens by name, as multipart/form-data)."""
    import tempfile
    import lakefs_sdk
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        return lakefs_sdk.ObjectsApi(client).upload_object(repo, branch, path, content=f.name)


def decode_branch(name):
    """tether's name of a lakeFS branch (the spelling docs/BACKENDS.md
    gives: "__" is '_', "_d" '.', "_s" '/', "_xHH" the byte HH)."""
    out, i = bytearray(), 0
    while i < len(name):
        c = name[i]
        if c != "_":
            out += c.encode()
            i += 1
            continue
        nxt = name[i + 1]
        if nxt == "x":
            out.append(int(name[i + 2:i + 4], 16))
            i += 4
            continue
        out += {"_": b"_", "d": b".", "s": b"/"}[nxt]
        i += 2
    return out.decode("utf-8", "surrogateescape")


def encode_branch(name):
    out = []
    for b in name.encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c.isascii() and (c.isalnum() or c == "-"):
            out.append(c)
        else:
            out.append({"_": "__", ".": "_d", "/": "_s"}.get(c, f"_x{b:02x}"))
    return "".join(out)


try:
    import pytest

    @pytest.fixture(scope="session")
    def lakefs_server(tmp_path_factory):
        """The fake lakeFS on 127.0.0.1, once per session, stopped by PID."""
        try:
            import lakefs_sdk  # noqa: F401 - the models are the fake's contract
        except ImportError:
            pytest.skip("no lakefs-sdk in the test venv (tests/requirements.txt)")
        srv = LakeFSFake(tmp_path_factory.mktemp("lakefs"))
        srv.start()
        yield srv
        srv.stop()
except ImportError:  # run as the server program outside the test venv
    pass


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
