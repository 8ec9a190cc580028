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
# iceberg: a table in a pyiceberg SqlCatalog on SQLite; the oracle is pyiceberg
# ---------------------------------------------------------------------------

class IcebergTable:
    """A lifecycle store of kind iceberg: a table ns.<name> in a SQLite SQL
    catalog of its own (tests/e2e/iceberg_oracle.py describes `cat`)."""

    def __init__(self, cat, identifier):
        self.cat, self.identifier = cat, identifier

    def __str__(self):
        return self.identifier


class IcebergSqlite(Adapter):
    """Iceberg tables made and written by pyiceberg's SqlCatalog. State ids
    are snapshot ids as decimal text, as `tether log` and `add --at` spell
    them."""
    name = "iceberg-sql"
    kind = "iceberg"

    def __init__(self):
        self.writes = 0

    def make_store(self, tmp_path, name="store"):
        import iceberg_oracle as ib
        d = Path(tmp_path) / f"{name}-iceberg"
        d.mkdir()
        cat = ib.sqlite_catalog(d)
        ib.create_table(cat, "ns.t")
        store = IcebergTable(cat, "ns.t")
        self.mutate(store)
        return store

    def committed(self, store):
        """tether.toml's [backends.iceberg] catalog: the type and warehouse."""
        return f'{{type = "sql", warehouse = "{store.cat["warehouse"]}"}}'

    def secret(self, store):
        """secrets.toml's [backends.iceberg] catalog: the URI, never committed."""
        return f'{{uri = "{store.cat["uri"]}"}}'

    def reach(self, root, env, store):
        self.current = store
        root = Path(root)
        if "[backends.iceberg]" not in (root / "tether.toml").read_text():  # a clone has it committed
            with open(root / "tether.toml", "a") as f:
                f.write(f'\n[backends.iceberg]\ncatalog = {self.committed(store)}\n')
        (root / ".tether").mkdir(exist_ok=True)
        (root / ".tether" / "secrets.toml").write_text(f'[backends.iceberg]\ncatalog = {self.secret(store)}\n')

    def add_args(self, store):
        return [store.identifier, "--kind", self.kind]

    def mutate(self, store, branch=None):
        import iceberg_oracle as ib
        self.writes += 1
        return str(ib.append(store.cat, store.identifier, 2, branch=branch or self.base_branch,
                             start=self.writes * 10))

    def head(self, store, branch=None):
        import iceberg_oracle as ib
        h = ib.head(store.cat, store.identifier, branch or self.base_branch)
        return None if h is None else str(h)

    def refs(self, store):
        import iceberg_oracle as ib
        out = {"pins": {}, "branches": {}}
        for name, (sid, kind) in ib.refs(store.cat, store.identifier).items():
            out["pins" if kind == "tag" else "branches"][name] = str(sid)
        return out

    def content(self, store, ref):
        import iceberg_oracle as ib
        t = ib.load(store.cat, store.identifier)
        rows = t.scan(snapshot_id=t.refs()[ref].snapshot_id).to_arrow().column("id").to_pylist()
        return sorted(rows)

    def delete_pin(self, store, ref):
        import iceberg_oracle as ib
        ib.load(store.cat, store.identifier).manage_snapshots().remove_tag(ref).commit()

    def add_foreign_ref(self, store, name, state_id):
        import iceberg_oracle as ib
        ib.load(store.cat, store.identifier).manage_snapshots().create_tag(int(state_id), name).commit()

    def history(self, store, branch=None):
        import iceberg_oracle as ib
        t = ib.load(store.cat, store.identifier)
        out, sid = [], t.refs()[branch or self.base_branch].snapshot_id
        while sid is not None:
            s = t.snapshot_by_id(sid)
            if s is None:
                break
            summ = s.summary
            parts = [f"+{summ[k]} {u}" if k.startswith("added") else f"-{summ[k]} {u}"
                     for k, u in (("added-records", "rows"), ("deleted-records", "rows"),
                                  ("added-data-files", "files"), ("deleted-data-files", "files"))
                     if summ and k in summ.additional_properties and int(summ[k]) > 0]
            op = summ.operation.value if summ else "snapshot"
            out.append((str(sid), op + (": " + ", ".join(parts) if parts else "")))
            sid = s.parent_snapshot_id
        return out

    def witness(self, store):
        import iceberg_oracle as ib
        # Every commit writes a new metadata file and moves the row.
        return ib.load(store.cat, store.identifier).metadata_location

    def identity(self, store):
        return {"branch": self.base_branch, "catalog_name": store.cat["name"], "identifier": store.identifier}

    def content_state(self, state_id):
        return {"snapshot_id": int(state_id)}

    def state_id(self, state):
        return str(state["snapshot_id"])

    def handle_state(self, handle):
        return str(handle["snapshot_id"])

    def handle_ref(self, handle):
        return handle["ref"]

    def write_via_handle(self, handle):
        assert handle["read_only"] is False and handle["kind"] == "iceberg", handle
        # The handle names the catalog and table, not the catalog's URI (a
        # secret): the user's program has its own catalog configuration.
        store = self.current
        assert handle["identifier"] == store.identifier, handle
        return self.mutate(store, handle["ref"])


class IcebergRest(IcebergSqlite):
    """Iceberg tables behind the Iceberg project's own REST catalog server
    (tests/e2e/icebergrest.py), made and written by pyiceberg's RestCatalog;
    tether reaches it with a bearer token from secrets.toml. Each store is a
    table in a two-level namespace of its own (the REST path encodes the
    levels with the 0x1F separator)."""
    name = "iceberg-rest"
    server_fixture = "iceberg_rest_server"
    serial = 0

    def bind(self, server):
        self.server = server

    def make_store(self, tmp_path, name="store"):
        import iceberg_oracle as ib
        IcebergRest.serial += 1
        cat = ib.rest_catalog(self.server)
        identifier = f"lc.s{IcebergRest.serial}_{os.getpid()}.t"
        ib.create_table(cat, identifier)
        store = IcebergTable(cat, identifier)
        self.mutate(store)
        return store

    def committed(self, store):
        return '{type = "rest"}'

    def secret(self, store):
        # The URI and the token only in secrets.toml.
        return f'{{uri = "{store.cat["uri"]}", token = "{store.cat["token"]}", allow_http = true}}'


ADAPTERS = [GitAdapter(), IcechunkSpec2(), IcechunkSpec1(), IcechunkS3(), IcebergSqlite(), IcebergRest()]

# Stable Pinnable kinds with no adapter, and why the lifecycle cannot be
# run on them end to end. Any other such kind without an adapter fails
# test_every_stable_pinnable_kind_has_an_adapter.
EXEMPT = {
    "memory": "its store lives inside one tether process and ends with it, so no state outlives the "
              "command that made it (the conformance suite tests it in process)",
}
