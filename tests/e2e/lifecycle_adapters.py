"""Per-kind adapters for the lifecycle suite (test_lifecycle.py).

The suite holds every Pinnable or Forkable backend to the same lifecycle;
an adapter is all it knows of one kind: how to make a store, change it,
read its current state, write through a handle `tether open` gave, and ask
the system's OWN tool or library (never tether) which refs exist and where
they point. What a backend promises (its tier and flags) is read from
`tether backends --json`, not from here: an adapter says only what the
system itself cannot do, in `cannot`, with the reason the suite prints when
it skips that check.

Plugging in a new backend (Lance, Delta, Iceberg, ...):

  1. Write a class with the members of `Adapter` below, using the system's
     own library or CLI in the test venv (.venv) as the oracle.
  2. Add an instance to ADAPTERS. Every check of test_lifecycle.py then
     runs against it; `pytest tests/e2e/test_lifecycle.py -k <name>` runs
     just that kind.
  3. A check the system genuinely cannot pass goes in `cannot`, keyed by
     the check's name (the test function's name without `test_`), with why.

States are the system's own ids (a git sha, an Icechunk snapshot id): an
adapter turns a manifest's `state` into one (`state_id`), and says what
tether's pin id is computed from (`identity`, `content_state`), so that the
suite checks pin ids independently of tether.
"""
import atexit
import hashlib
import json
import os
import subprocess
from pathlib import Path

from conftest import SOURCE_ROOT, describe

ORACLE = Path(__file__).with_name("icechunk_oracle.py")
IC1_PYTHON = Path(os.environ.get("TETHER_ICECHUNK1_PYTHON", SOURCE_ROOT / ".venv-ic1" / "bin" / "python"))


class Adapter:
    """What the suite needs of one kind. Every method takes the store as the
    path `make_store` returned."""

    name = None          # the test id: "git", "icechunk-spec2", ...
    kind = None          # tether's kind, as `tether add --kind` takes it
    base_branch = "main"  # the branch a new store's object follows
    cannot = {}          # check name -> why the system cannot do it

    def prepare(self):
        """Once per session, before the first store: fail (not skip) when
        the system's oracle is missing."""

    # An adapter whose stores live on a server names the session fixture
    # that starts it (tests/e2e/s3servers.py); the suite hands the server
    # to bind(), and calls reach(root, env, store) for every checkout of
    # the check's dataset (root: its directory; env: the environment its
    # tether runs get, a dict to update) to give it what it needs to
    # reach the store.
    server_fixture = None

    def bind(self, server):
        pass

    def reach(self, root, env, store):
        pass

    def make_store(self, tmp_path, name="store"):
        """A new store with one state on the base branch; its path."""
        raise NotImplementedError

    def add_args(self, store):
        """`tether add KEY <these> ...`: the URI and any options."""
        return [str(store), "--kind", self.kind]

    def mutate(self, store, branch=None):
        """A change no earlier call made, written on `branch` (default the
        base branch) with the system's own tool; the new state id."""
        raise NotImplementedError

    def head(self, store, branch=None):
        """The state id a branch is at, as the system says."""
        raise NotImplementedError

    def refs(self, store):
        """{"pins": {name: state id}, "branches": {name: state id}}: the
        system's tags/pin refs and branches, as its own tool lists them."""
        raise NotImplementedError

    def content(self, store, ref):
        """What the data at a ref (a pin's or a branch's name) is, read
        with the system's tool; equal for equal data."""
        raise NotImplementedError

    def delete_pin(self, store, ref):
        """Delete a pin ref behind tether's back, as a user could."""
        raise NotImplementedError

    def add_foreign_ref(self, store, name, state_id):
        """A pin-like ref that is not this dataset's (someone's release
        tag, another dataset's pin): gc must leave it."""
        raise NotImplementedError

    def history(self, store, branch=None):
        """[(id, message)] of a branch, newest first, from the system."""
        raise NotImplementedError

    def witness(self, store):
        """Something that changes whenever anything writes to the store;
        an unchanged commit must leave it as it was."""
        raise NotImplementedError

    # How tether describes this kind's things, the only shapes the suite
    # has to be told.
    def identity(self, store):
        raise NotImplementedError

    def content_state(self, state_id):
        raise NotImplementedError

    def state_id(self, state):
        """A manifest's (or a status report's) state -> the state id."""
        raise NotImplementedError

    def pin_ref_name(self, pin_ref):
        """The native ref a manifest's pin_ref names."""
        return pin_ref["tag"]

    def handle_state(self, handle):
        raise NotImplementedError

    def handle_ref(self, handle):
        """The ref (pin or branch) a `tether open` handle names."""
        raise NotImplementedError

    def write_via_handle(self, handle):
        """Write through a writable handle as a user's program would; the
        new state id of the branch it names."""
        raise NotImplementedError


# ---------------------------------------------------------------------------
# git: a data object is another git repository; the oracle is the git CLI
# ---------------------------------------------------------------------------

class GitAdapter(Adapter):
    name = "git"
    kind = "git"

    def __init__(self):
        self.writes = 0

    def _git(self, store, *args, check=True):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Ada Lovelace", GIT_AUTHOR_EMAIL="ada@example.org",
                   GIT_COMMITTER_NAME="Ada Lovelace", GIT_COMMITTER_EMAIL="ada@example.org",
                   HOME=str(Path(store).parent))
        p = subprocess.run(["git", "-C", str(store), "-c", "commit.gpgsign=false", *map(str, args)],
                           capture_output=True, text=True, env=env)
        if check:
            assert p.returncode == 0, f"git failed:{describe(p)}"
        return p.stdout

    def make_store(self, tmp_path, name="store"):
        path = Path(tmp_path) / name
        subprocess.run(["git", "init", "-q", "-b", self.base_branch, str(path)], check=True)
        self._commit(path, "first data")
        return path

    def _commit(self, store, message):
        self.writes += 1
        (Path(store) / "data.txt").write_text(f"write {self.writes}\n")
        self._git(store, "add", "-A")
        self._git(store, "commit", "-q", "-m", message)
        return self._git(store, "rev-parse", "HEAD").strip()

    def mutate(self, store, branch=None):
        if branch is None or branch == self.base_branch:
            return self._commit(store, f"write {self.writes + 1}")
        # On another branch, the way a user would: check it out, commit,
        # and come back, leaving the checkout as it was.
        self._git(store, "checkout", "-q", branch)
        try:
            return self._commit(store, f"write {self.writes + 1} on {branch}")
        finally:
            self._git(store, "checkout", "-q", self.base_branch)

    def head(self, store, branch=None):
        return self._git(store, "rev-parse", f"refs/heads/{branch or self.base_branch}").strip()

    def refs(self, store):
        out = {"pins": {}, "branches": {}}
        for line in self._git(store, "for-each-ref", "--format=%(refname) %(objectname)",
                              "refs/tags", "refs/heads").splitlines():
            ref, sha = line.split(" ")
            if ref.startswith("refs/tags/"):
                out["pins"][ref[len("refs/tags/"):]] = sha
            else:
                out["branches"][ref[len("refs/heads/"):]] = sha
        return out

    def content(self, store, ref):
        return self._git(store, "rev-parse", f"{ref}^{{tree}}").strip()

    def delete_pin(self, store, ref):
        self._git(store, "tag", "-d", ref)

    def add_foreign_ref(self, store, name, state_id):
        self._git(store, "tag", name, state_id)

    def history(self, store, branch=None):
        out = self._git(store, "log", "--format=%H%x00%s", branch or self.base_branch)
        return [tuple(line.split("\0")) for line in out.splitlines()]

    def witness(self, store):
        return (self._git(store, "for-each-ref", "--format=%(refname) %(objectname)"),
                self._git(store, "status", "--porcelain"))

    def identity(self, store):
        return {"path": str(store)}

    def content_state(self, state_id):
        return {"sha": state_id}  # dirty and change_id are volatile

    def state_id(self, state):
        return state["sha"]

    def handle_state(self, handle):
        return handle["sha"]

    def handle_ref(self, handle):
        return handle["ref"]

    def write_via_handle(self, handle):
        return self.mutate(Path(handle["path"]), handle["ref"])


# ---------------------------------------------------------------------------
# Icechunk: the oracle is the icechunk library itself (2.x in .venv, in
# process; 1.x in .venv-ic1, through one icechunk_oracle.py server)
# ---------------------------------------------------------------------------

class IcechunkAdapter(Adapter):
    kind = "icechunk"

    def __init__(self, spec):
        self.spec = spec
        self.name = f"icechunk-spec{spec}"

    def call(self, fn, *args):
        raise NotImplementedError

    def make_store(self, tmp_path, name="store"):
        path = Path(tmp_path) / f"{name}.icechunk"
        # icechunk 1.x writes spec 1 and takes no spec_version argument.
        self.call("create_repo", str(path), self.spec if self.spec > 1 else None)
        return path

    def mutate(self, store, branch=None):
        return self.call("commit", str(store), branch or self.base_branch)

    def head(self, store, branch=None):
        return self.call("branch_head", str(store), branch or self.base_branch)

    def refs(self, store):
        r = self.call("refs_of", str(store))
        return {"pins": r["tags"], "branches": r["branches"]}

    def content(self, store, ref):
        return self.call("read_ref", str(store), ref)

    def delete_pin(self, store, ref):
        self.call("delete_tag", str(store), ref)

    def add_foreign_ref(self, store, name, state_id):
        self.call("create_tag", str(store), name, state_id)

    def history(self, store, branch=None):
        return [tuple(e) for e in self.call("ancestry", str(store), branch or self.base_branch)]

    def witness(self, store):
        # Every file of the repository, by content: an unchanged commit
        # writes none (no tag, no rotated repo file, no ops-log entry).
        out = []
        for p in sorted(Path(store).rglob("*")):
            if p.is_file():
                out.append((p.relative_to(store).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()))
        return out

    def identity(self, store):
        return {"uri": str(store)}

    def content_state(self, state_id):
        return {"snapshot_id": state_id}

    def state_id(self, state):
        return state["snapshot_id"]

    def handle_state(self, handle):
        return handle["snapshot_id"]

    def handle_ref(self, handle):
        return handle["tag"] if handle["read_only"] else handle["branch"]

    def write_via_handle(self, handle):
        assert handle["read_only"] is False and handle["spec_version"] == self.spec, handle
        return self.call("commit", handle["uri"], handle["branch"])


class IcechunkSpec2(IcechunkAdapter):
    """Spec-2 repositories (one `repo` file), made and read by icechunk 2.x."""

    def __init__(self):
        super().__init__(2)

    def call(self, fn, *args):
        import icechunk_oracle  # icechunk 2.x, in this interpreter
        return getattr(icechunk_oracle, fn)(*args)


class IcechunkSpec1(IcechunkAdapter):
    """Spec-1 repositories (the refs/ layout), made and read by icechunk 1.x
    in its own environment, through one `icechunk_oracle.py serve`."""

    def __init__(self):
        super().__init__(1)
        self.proc = None

    def prepare(self):
        if self.proc:
            return
        if not IC1_PYTHON.exists():
            raise AssertionError(f"{IC1_PYTHON} is missing: run scripts/install-deps")
        self.proc = subprocess.Popen([str(IC1_PYTHON), str(ORACLE), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "ICECHUNK_LOG": "error"})
        atexit.register(self.proc.kill)
        version = self.call("version")
        assert version.startswith("1."), f"{IC1_PYTHON} has icechunk {version}, not 1.x"

    def call(self, fn, *args):
        self.proc.stdin.write(json.dumps({"op": "call", "fn": fn, "args": list(args)}) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        assert out["ok"], f"icechunk 1.x: {fn}{tuple(args)}: {out['error']}"
        return out["result"]


class S3Prefix:
    """An Icechunk repository's place in an S3 bucket: its URI as tether
    records it (str), and what the suite asks of a store path."""

    def __init__(self, server, bucket, prefix):
        self.server, self.bucket, self.prefix = server, bucket, prefix

    def __str__(self):
        return f"s3://{self.bucket}/{self.prefix}"

    def storage(self):
        """The icechunk library's view of it."""
        import icechunk as ic
        srv = self.server
        return ic.s3_storage(bucket=self.bucket, prefix=self.prefix, endpoint_url=srv.endpoint, allow_http=True,
                             force_path_style=True, region=srv.region, access_key_id=srv.access_key,
                             secret_access_key=srv.secret)

    def objects(self):
        """{key under the prefix: ETag}, every object, from a paged LIST."""
        out = {}
        pages = self.server.client().get_paginator("list_objects_v2")
        for page in pages.paginate(Bucket=self.bucket, Prefix=self.prefix + "/"):
            for o in page.get("Contents", []):
                out[o["Key"][len(self.prefix) + 1:]] = o["ETag"]
        return out

    def exists(self):
        return bool(self.objects())


class IcechunkS3(IcechunkAdapter):
    """Spec-2 repositories in an S3 bucket on SeaweedFS, made and read by
    icechunk 2.x through its own S3 client (icechunk.s3_storage); tether
    reaches the server through its S3 store module with the environment
    AWS's tools read (AWS_ENDPOINT_URL_S3, the keys, the region)."""

    # SeaweedFS, the stricter server; TETHER_LIFECYCLE_S3=moto runs the
    # suite against moto instead.
    server_fixture = os.environ.get("TETHER_LIFECYCLE_S3", "seaweedfs") + "_server"

    def __init__(self):
        super().__init__(2)
        self.name = "icechunk-s3"
        self.server = None

    def bind(self, server):
        self.server = server

    def reach(self, root, env, store):
        """AWS's variables (endpoint, keys, region) in the environment, and
        allow_http for the bucket in the checkout's secrets.toml (plain
        http is refused unless the options allow it)."""
        env.update(self.server.env())
        secrets = Path(root) / ".tether" / "secrets.toml"
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_text(f'[uris."s3://{store.bucket}"]\nallow_http = true\n')

    def make_store(self, tmp_path, name="store"):
        store = S3Prefix(self.server, self.server.bucket(name), f"repos/{name}.icechunk")
        self.call("create_repo", str(store), 2)
        return store

    def _storage(self, arg):
        if isinstance(arg, str) and arg.startswith("s3://"):
            bucket, _, prefix = arg[len("s3://"):].partition("/")
            return S3Prefix(self.server, bucket, prefix).storage()
        return arg

    def call(self, fn, *args):
        import icechunk_oracle
        return getattr(icechunk_oracle, fn)(*[self._storage(a) for a in args])

    def witness(self, store):
        return sorted(store.objects().items())


# ---------------------------------------------------------------------------
# lakeFS: a repository on the fake lakeFS API (tests/e2e/lakefsfake.py; no
# lakeFS server is served here), read and written with lakefs-sdk
# ---------------------------------------------------------------------------

class LakeFSAdapter(Adapter):
    """A lakeFS repository; the oracle is lakefs-sdk's API client. lakeFS
    branch names cannot hold dots, so tether spells its working branches
    in lakeFS's alphabet (docs/BACKENDS.md); refs() and handle_ref() read
    them back by that documented rule."""

    name = "lakefs"
    kind = "lakefs"
    server_fixture = "lakefs_server"

    def __init__(self):
        self.server = None

    def bind(self, server):
        self.server = server

    def reach(self, root, env, store):
        """lakectl's variables: the endpoint (http on 127.0.0.1 is allowed
        without secrets.toml saying so) and the key pair."""
        env.update({"LAKECTL_SERVER_ENDPOINT_URL": self.server.endpoint,
                    "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": self.server.key,
                    "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": self.server.secret})

    def _api(self, name):
        import lakefs_sdk
        return getattr(lakefs_sdk, name)(self.server.client())

    def make_store(self, tmp_path, name="store"):
        repo = self.server.repo(name)
        self._write(repo, "main", "data/first.txt", b"first")
        return repo

    def _write(self, repo, branch, path, data):
        import lakefs_sdk
        from lakefsfake import upload
        upload(self.server.client(), repo, branch, path, data)
        return self._api("CommitsApi").commit(repo, branch, lakefs_sdk.CommitCreation(message=f"write {path}")).id

    def add_args(self, store):
        return ["--kind", "lakefs", "--repository", store, "--prefix", "data/"]

    def mutate(self, store, branch=None):
        from lakefsfake import encode_branch
        import secrets as _s
        # The same object each time, so that two sides' writes conflict.
        return self._write(store, encode_branch(branch or self.base_branch), "data/value", _s.token_bytes(8))

    def head(self, store, branch=None):
        from lakefsfake import encode_branch
        return self._api("BranchesApi").get_branch(store, encode_branch(branch or self.base_branch)).commit_id

    def refs(self, store):
        from lakefsfake import decode_branch
        tags = self._api("TagsApi").list_tags(store, amount=1000).results
        branches = self._api("BranchesApi").list_branches(store, amount=1000).results
        return {"pins": {t.id: t.commit_id for t in tags},
                "branches": {decode_branch(b.id): b.commit_id for b in branches}}

    def content(self, store, ref):
        from lakefsfake import encode_branch
        if ref not in self.refs(store)["pins"]:
            ref = encode_branch(ref)
        objs = self._api("ObjectsApi").list_objects(store, ref, amount=1000).results
        return sorted((o.path, o.checksum) for o in objs)

    def delete_pin(self, store, ref):
        self._api("TagsApi").delete_tag(store, ref)

    def add_foreign_ref(self, store, name, state_id):
        import lakefs_sdk
        self._api("TagsApi").create_tag(store, lakefs_sdk.TagCreation(id=name, ref=state_id))

    def history(self, store, branch=None):
        from lakefsfake import encode_branch
        log = self._api("RefsApi").log_commits(store, encode_branch(branch or self.base_branch), amount=1000)
        return [(c.id, c.message) for c in log.results]

    def witness(self, store):
        return json.dumps(self.refs(store), sort_keys=True)

    def identity(self, store):
        return {"repository": store}

    def content_state(self, state_id):
        return {"commit": state_id}

    def state_id(self, state):
        return state["commit"]

    def handle_state(self, handle):
        return handle["commit"]

    def handle_ref(self, handle):
        from lakefsfake import decode_branch
        return decode_branch(handle["ref"])

    def write_via_handle(self, handle):
        import secrets as _s
        return self._write(handle["repository"], handle["ref"], "data/value", _s.token_bytes(8))


class NeonAdapter(Adapter):
    """A Neon project on the fake control plane (tests/e2e/neonfake.py),
    each branch a real Postgres cluster. The oracle is psycopg2 on a
    branch's own server, and Neon's API (as neonctl would call it) for the
    branches. A state id is the newest transaction that wrote to the
    table the adapter writes (max xmin): it writes nothing else, so that is
    the branch's newest commit."""

    name = "neon"
    kind = "neon"
    server_fixture = "neon_server"
    keys = ("obj", "twin", "bad", "made")
    cannot = {
        "log_key": "Neon has no commit history to list (no HISTORY)",
        "add_at_an_earlier_state": "Neon has no `at`: a past state is reached through a pin branch",
        "add_pick": "Neon has no history to pick from",
        "restore_an_older_revision": "Neon cannot restore a branch that pins hang off, so the re-fork lands on "
                                     "a sibling <name>.2 (which the engine records) and the named branch stays "
                                     "where it was (test_neon.py checks the sibling)",
        "drop_deletes_the_pinned_fork_and_keeps_the_pins": "a Neon pin is a child branch of the fork it was cut "
                                                           "from, so a pinned fork cannot be deleted while its "
                                                           "pins exist: drop keeps it",
    }

    def __init__(self):
        self.server = None
        self.projects = {}

    def bind(self, server):
        self.server = server

    def reach(self, root, env, store):
        """api_url only from secrets.toml (every key the suite adds), the
        key from the variable it names."""
        env["TEST_NEON_KEY"] = self.server.key
        tables = [f'[objects."{k}"]\napi_url = "{self.server.api_url}"\napi_key_env = "TEST_NEON_KEY"\n'
                  for k in self.keys]
        (Path(root) / ".tether" / "secrets.toml").write_text("\n".join(tables))

    def make_store(self, tmp_path, name="store"):
        # The suite runs one check at a time: an earlier check's projects
        # are done with, and their clusters go (the machine is small).
        if getattr(self, "_tmp", None) != tmp_path:
            for old in list(self.projects):
                self.server.drop(old)
                del self.projects[old]
            self._tmp = tmp_path
        p = self.server.project()
        self.projects[p["project_id"]] = p
        self.server.sql(p, "main", "CREATE TABLE t (id serial primary key, v text)")
        self.server.sql(p, "main", "INSERT INTO t (v) VALUES ('first')")
        return p["project_id"]

    def add_args(self, store):
        return ["--kind", "neon", "--project-id", store, "--database", "neondb", "--role", "neondb_owner"]

    def _sql(self, store, branch, sql):
        return self.server.sql(self.projects[store], branch, sql)

    def _state(self, store, branch):
        return str(self._sql(store, branch, "SELECT max(xmin::text::bigint) FROM t")[0][0])

    def mutate(self, store, branch=None):
        import secrets as _s
        self._sql(store, branch or self.base_branch, f"INSERT INTO t (v) VALUES ('{_s.token_hex(6)}')")
        return self.head(store, branch)

    def head(self, store, branch=None):
        return self._state(store, branch or self.base_branch)

    def refs(self, store):
        out = {"pins": {}, "branches": {}}
        for name in self.server.branches(store):
            pin = name.startswith("tether.") and not name.startswith("tether.ws.") or name in self.foreign
            out["pins" if pin else "branches"][name] = self._state(store, name)
        return out

    foreign = set()

    def content(self, store, ref):
        return sorted(self._sql(store, ref, "SELECT id, v FROM t"))

    def _api(self, method, path, body=None):
        import urllib.request
        req = urllib.request.Request(self.server.api_url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {self.server.key}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read() or b"null")

    def delete_pin(self, store, ref):
        bid = self.server.branches(store)[ref]["id"]
        self._api("DELETE", f"/projects/{store}/branches/{bid}")

    def delete_via(self, neon, name):
        """Delete a branch of a test_neon.py project through the API."""
        self.server = neon.server
        bid = neon.server.branches(neon.pid)[name]["id"]
        self._api("DELETE", f"/projects/{neon.pid}/branches/{bid}")

    def add_foreign_ref(self, store, name, state_id):
        """A branch of someone else's off the base, at its head (the fake
        cuts branches at a parent's current state)."""
        assert self.head(store) == state_id
        main = self.server.branches(store)["main"]["id"]
        self._api("POST", f"/projects/{store}/branches", {"branch": {"name": name, "parent_id": main}})
        self.foreign.add(name)

    def witness(self, store):
        """The branches and where they were cut, and the base's newest
        commit. Endpoints are computes, not data: a fingerprint makes the
        read_write one on a branch that has none (docs/CLI.md)."""
        return json.dumps({n: b.get("parent_lsn") for n, b in self.server.branches(store).items()},
                          sort_keys=True) + self.head(store)

    def identity(self, store):
        return {"project_id": store, "branch": "main"}

    def content_state(self, state_id):
        return {"commit_xid": state_id, "branch": "main"}

    def state_id(self, state):
        return state["commit_xid"]

    def pin_ref_name(self, pin_ref):
        return pin_ref["branch"]

    def _handle_sql(self, handle, sql):
        import psycopg2
        conn = psycopg2.connect(handle["uri"])
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def handle_state(self, handle):
        return str(self._handle_sql(handle, "SELECT max(xmin::text::bigint) FROM t")[0][0])

    def handle_ref(self, handle):
        return handle["branch"]

    def write_via_handle(self, handle):
        import secrets as _s
        self._handle_sql(handle, f"INSERT INTO t (v) VALUES ('{_s.token_hex(6)}')")
        return self.handle_state(handle)


ADAPTERS = [GitAdapter(), IcechunkSpec2(), IcechunkSpec1(), IcechunkS3(), LakeFSAdapter(), NeonAdapter()]

# Stable Pinnable kinds with no adapter, and why the lifecycle cannot be
# run on them end to end. Any other such kind without an adapter fails
# test_every_stable_pinnable_kind_has_an_adapter.
EXEMPT = {
    "memory": "its store lives inside one tether process and ends with it, so no state outlives the "
              "command that made it (the conformance suite tests it in process)",
}
