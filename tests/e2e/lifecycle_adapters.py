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


def files_by_content(store):
    """[(path under store, sha256)] of every file below a local store."""
    out = []
    for p in sorted(Path(store).rglob("*")):
        if p.is_file():
            out.append((p.relative_to(store).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()))
    return out


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
    # The VCS kinds its life_vcs checks run on (test_lifecycle.VCS_KINDS
    # when None); a variant of another adapter on a different store may
    # leave the VCS variants to that one.
    vcs_kinds = None
    # The suite's files (module names) it runs in, all when None: such a
    # variant may also leave the landing and surgery checks to that one.
    suites = None

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
        return files_by_content(store)

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


# ---------------------------------------------------------------------------
# Dolt: a database on the real `dolt sql-server` v0.40.4 (doltserver.py);
# the oracle is its SQL surface, through PyMySQL
# ---------------------------------------------------------------------------

NO_DOLT_TAG = ("dolt sql-server v0.40.4, the one Dolt that runs here, has no DOLT_TAG, so a commit cannot pin; "
               "test_dolt.py runs the same with --pin record, and pins against an emulation of DOLT_TAG")


class DoltAdapter(Adapter):
    """A store is a database (its name); branches are Dolt's, named as
    tether's working branches with '/' for '.' (tether/ws/<dataset8>/<b>),
    which refs() and head() translate back."""

    name = "dolt"
    kind = "dolt"
    server_fixture = "dolt_server"
    # Every check but test_pin_record starts with a commit that pins.
    cannot = {check: NO_DOLT_TAG for check in (
        "commit_pins", "unchanged_commit_is_a_noop", "new_forks_at_the_pin_and_open_reads_it",
        "write_on_the_fork_then_commit", "gc_releases_exactly_the_unreferenced_pins",
        "gc_keeps_a_pin_another_branch_names", "verify_notices_a_lost_pin",
        "verify_deep_agrees_with_verify_on_held_and_lost_pins", "status_on_status_notices_a_lost_pin",
        "repair_after_a_lost_pin", "log_key", "add_at_an_earlier_state", "add_pick", "kill_mid_commit",
        "promote_lands_the_fork", "promote_dry_run_plan_and_stale_plan", "a_writer_racing_the_move_makes_it_fail",
        "a_diverged_base_is_refused", "a_diverged_base_shows_in_the_dry_run", "kill_mid_promote",
        "merge_of_a_conflicting_fork_writes_nothing", "restore_discards_the_write_on_the_fork",
        "restore_an_older_revision", "restore_refused_when_a_writer_moves_the_fork",
        "a_killed_restore_is_finished_by_the_rerun", "objects_of_one_store_are_restored_together",
        "drop_deletes_the_pinned_fork_and_keeps_the_pins", "drop_keeps_a_fork_with_unpinned_writes",
        "drop_delete_store_of_a_created_store", "abandon_then_gc_releases_its_pin", "undo_a_commit", "undo_a_new",
        "undo_a_promote", "undo_of_a_promote_refuses_a_base_moved_on",
        "pull_moves_a_detached_object_onto_its_branch")}

    def __init__(self):
        self.server = None
        self.writes = 0

    def bind(self, server):
        self.server = server
        server.ensure_running()

    def reach(self, root, env, store):
        secrets = Path(root) / ".tether" / "secrets.toml"
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_text(f'[uris."mysql://127.0.0.1:{self.server.port}"]\nuser = "{self.server.user}"\n'
                           f'password = "{self.server.password}"\n')

    def make_store(self, tmp_path, name="store"):
        return self.server.database(name)

    def add_args(self, store):
        return [f"mysql://127.0.0.1:{self.server.port}/{store}", "--kind", self.kind]

    @staticmethod
    def _dolt_branch(branch):
        return branch.replace(".", "/")

    def _write(self, database, message):
        self.writes += 1
        self.server.sql(f"REPLACE INTO t VALUES (1, 'write {self.writes}');"
                        f"CALL DOLT_COMMIT('-a', '-m', '{message}')", database)

    def mutate(self, store, branch=None):
        branch = self._dolt_branch(branch or self.base_branch)
        self._write(f"{store}/{branch}", f"write {self.writes + 1}")
        return self.server.head(store, branch)

    def head(self, store, branch=None):
        return self.server.head(store, self._dolt_branch(branch or self.base_branch))

    def refs(self, store):
        # v0.40.4 has no dolt_tags: no pin can exist there.
        rows = self.server.sql("SELECT name, hash FROM dolt_branches", store)
        return {"pins": {}, "branches": {name.replace("/", "."): h for name, h in rows}}

    def content(self, store, ref):
        return self.server.sql("SELECT id, v FROM t ORDER BY id", f"{store}/{self._dolt_branch(ref)}")

    def history(self, store, branch=None):
        rows = self.server.sql("SELECT commit_hash, message FROM dolt_log",
                               f"{store}/{self._dolt_branch(branch or self.base_branch)}")
        return [tuple(r) for r in rows]

    def witness(self, store):
        return (self.server.sql("SELECT name, hash FROM dolt_branches ORDER BY name", store),
                self.server.sql("SELECT * FROM dolt_status", store))

    def identity(self, store):
        return {"host": "127.0.0.1", "port": self.server.port, "database": store}

    def content_state(self, state_id):
        return {"commit": state_id}  # dirty_unchecked is volatile

    def state_id(self, state):
        return state["commit"]

    def handle_state(self, handle):
        return handle["commit"]

    def handle_ref(self, handle):
        return handle["ref"]

    def write_via_handle(self, handle):
        self._write(handle["database_ref"], "through the handle")
        return self.server.head(handle["database"], handle["ref"])


# ---------------------------------------------------------------------------
# Lance: the oracle is pylance (lance_oracle.py), in process
# ---------------------------------------------------------------------------

class LanceAdapter(Adapter):
    """Lance datasets, made, written and read by pylance. A state id is the
    version on main and "branch@version#branch_id" on any other branch, at
    the address tether gives: an untouched branch is named at its parent's
    (lance_oracle.py)."""

    kind = "lance"
    name = "lance"

    def options(self):
        """pylance's storage_options for the stores here (None: local)."""
        return None

    def call(self, fn, *args):
        import lance_oracle
        return getattr(lance_oracle, fn)(*[str(a) if isinstance(a, (Path, S3Prefix)) else a for a in args],
                                         storage_options=self.options())

    def make_store(self, tmp_path, name="store"):
        path = Path(tmp_path) / f"{name}.lance"
        self.call("create", path)
        return path

    def mutate(self, store, branch=None):
        self.call("append", store, branch or self.base_branch)
        return self.head(store, branch)

    def head(self, store, branch=None):
        return self.call("head", store, branch or self.base_branch)

    def refs(self, store):
        return self.call("refs", store)

    def content(self, store, ref):
        return self.call("content", store, ref)

    def delete_pin(self, store, ref):
        self.call("delete_tag", store, ref)

    def add_foreign_ref(self, store, name, state_id):
        branch, _, version = state_id.split("#")[0].rpartition("@")
        self.call("create_tag", store, name, branch or "main", int(version))

    def history(self, store, branch=None):
        return self.call("history", store, branch or self.base_branch)

    def witness(self, store):
        # Every file of the dataset: an unchanged commit writes no tag,
        # no manifest, no branch.
        return files_by_content(store)

    def identity(self, store):
        return {"uri": str(store)}

    def content_state(self, state_id):
        where, _, branch_id = state_id.partition("#")
        branch, _, version = where.rpartition("@")
        state = {"branch": branch or "main", "version": int(version)}
        if branch_id:
            state["branch_id"] = branch_id
        return state

    def state_id(self, state):
        if state["branch"] == "main":
            return str(state["version"])
        return f"{state['branch']}@{state['version']}#{state['branch_id']}"

    def handle_state(self, handle):
        return self.call("address", handle["uri"], handle["branch"], handle["version"])

    def handle_ref(self, handle):
        return handle["tag"] if handle["read_only"] else handle["branch"]

    def write_via_handle(self, handle):
        assert handle["read_only"] is False, handle
        self.call("append", handle["uri"], handle["branch"])
        return self.call("head", handle["uri"], handle["branch"])


class LanceS3(LanceAdapter):
    """Lance datasets in an S3 bucket on SeaweedFS, made and read by pylance
    through its own object store (storage_options: the endpoint, keys,
    allow_http); tether reaches them through its S3 store module, as
    IcechunkS3's checkouts do."""

    server_fixture = os.environ.get("TETHER_LIFECYCLE_S3", "seaweedfs") + "_server"
    name = "lance-s3"

    def __init__(self):
        self.server = None

    def bind(self, server):
        self.server = server

    def reach(self, root, env, store):
        env.update(self.server.env())
        secrets = Path(root) / ".tether" / "secrets.toml"
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_text(f'[uris."s3://{store.bucket}"]\nallow_http = true\n')

    def options(self):
        srv = self.server
        return {"aws_endpoint": srv.endpoint, "aws_access_key_id": srv.access_key,
                "aws_secret_access_key": srv.secret, "aws_region": srv.region, "allow_http": "true",
                "aws_virtual_hosted_style_request": "false"}

    def make_store(self, tmp_path, name="store"):
        store = S3Prefix(self.server, self.server.bucket(name), f"lance/{name}.lance")
        self.call("create", store)
        return store

    def witness(self, store):
        return sorted(store.objects().items())


# ---------------------------------------------------------------------------
# DuckLake (Addressable): a catalog on SQLite, written by DuckDB 1.5.5 with
# its ducklake extension (tests/e2e/ducklakes.py); the oracle is DuckDB.
# DuckLake has no tags or branches, so the suite's checks of pins and forks
# are skipped as needing PIN or FORK.
# ---------------------------------------------------------------------------

class DuckLakeAdapter(Adapter):
    name = "ducklake-sqlite"
    kind = "ducklake"

    def __init__(self):
        self.times = {}  # snapshot id -> its time, as DuckDB reports it

    def catalog(self, store):
        from ducklakes import Catalog
        tmp = Path(store).parent
        return Catalog("sqlite", tmp, f"ducklake:sqlite:{store}", f"ducklake:sqlite:{store}", "sqlite",
                       path=Path(store))

    def make_store(self, tmp_path, name="store"):
        store = (Path(tmp_path) / f"{name}.sqlite").resolve()
        self.times = {}
        self.catalog(store).write("CREATE TABLE l.t(i INTEGER)", "INSERT INTO l.t VALUES (0)")
        return store

    def add_args(self, store):
        return [f"ducklake:sqlite:{store}", "--kind", self.kind]

    def _snapshots(self, store):
        snaps = self.catalog(store).snapshots()
        self.times.update({str(i): us for i, us in snaps})
        return snaps

    def mutate(self, store, branch=None):
        assert branch in (None, self.base_branch), "DuckLake has no branches"
        self.catalog(store).write(f"INSERT INTO l.t VALUES ({len(self._snapshots(store))})")
        return self.head(store)

    def head(self, store, branch=None):
        return str(self._snapshots(store)[-1][0])

    def refs(self, store):
        return {"pins": {}, "branches": {}}

    def history(self, store, branch=None):
        self._snapshots(store)
        rows = self.catalog(store).query("SELECT snapshot_id, changes_made FROM "
                                         "__ducklake_metadata_l.ducklake_snapshot_changes ORDER BY snapshot_id DESC")
        return [(str(i), changes) for i, changes in rows]

    def witness(self, store):
        out = []
        for p in sorted(Path(store).parent.rglob("*")):
            if p.is_file() and (p == Path(store) or "data-sqlite" in p.parts):
                out.append((p.name, hashlib.sha256(p.read_bytes()).hexdigest()))
        return out

    def identity(self, store):
        return {"metadata": f"ducklake:sqlite:{store}"}

    def content_state(self, state_id):
        return {"snapshot_id": int(state_id), "snapshot_time_us": self.times[str(state_id)]}

    def state_id(self, state):
        return str(state["snapshot_id"])

    def handle_state(self, handle):
        return str(handle["snapshot_id"])



# Delta: Addressable (versions recorded, never pinned); the oracle is the
# deltalake library (1.6.6, delta-rs) in .venv
# ---------------------------------------------------------------------------

def delta_message(h):
    """What tether's history says of one DeltaTable.history() entry: the
    operation and its metrics (delta-rs: numbers, snake_case names)."""
    m = h.get("operationMetrics") or {}
    parts = []
    for key, fmt in (("num_added_rows", "+{} rows"), ("num_deleted_rows", "-{} rows"),
                     ("num_updated_rows", "~{} rows"), ("num_added_files", "+{} files"),
                     ("num_removed_files", "-{} files")):
        if m.get(key):  # a count of zero is not said
            parts.append(fmt.format(m[key]))
    return h["operation"] + (": " + ", ".join(parts) if parts else "")


class DeltaAdapter(Adapter):
    """A Delta table on a local path. Delta has no tags or branches: its
    one "branch" is the table's latest version (tether's history marks it
    `latest`), and it has no pins, so the suite runs only the checks an
    Addressable kind takes part in (test_lifecycle.ADDRESSABLE_CHECKS).
    A state id is the version number, as `tether log` and `add --at` spell
    it."""

    name = "delta"
    kind = "delta"
    base_branch = "latest"

    def __init__(self):
        self.table_ids = {}

    def _append(self, store, n=1):
        import pyarrow as pa
        from deltalake import write_deltalake
        self.rows = getattr(self, "rows", 0) + n
        write_deltalake(str(store), pa.table({"i": pa.array(range(self.rows - n, self.rows), pa.int64())}),
                        mode="append")

    def make_store(self, tmp_path, name="store"):
        from deltalake import DeltaTable
        path = Path(tmp_path) / name
        self._append(path, 2)
        self.table_ids[str(path)] = DeltaTable(str(path)).metadata().id
        self.last_store = str(path)
        return path

    def mutate(self, store, branch=None):
        assert branch in (None, self.base_branch), "a Delta table has no branches"
        self._append(store)
        return self.head(store)

    def head(self, store, branch=None):
        from deltalake import DeltaTable
        return str(DeltaTable(str(store)).version())

    def refs(self, store):
        return {"pins": {}, "branches": {self.base_branch: self.head(store)}}

    def content(self, store, ref):
        from deltalake import DeltaTable
        version = None if ref == self.base_branch else int(ref)
        return sorted(r["i"] for r in DeltaTable(str(store), version=version).to_pyarrow_table().to_pylist())

    def history(self, store, branch=None):
        from deltalake import DeltaTable
        return [(str(h["version"]), delta_message(h)) for h in DeltaTable(str(store)).history()]

    def witness(self, store):
        return sorted((str(p.relative_to(store)), p.stat().st_size, p.stat().st_mtime_ns)
                      for p in Path(store).rglob("*"))

    def identity(self, store):
        return {"uri": str(store)}

    def content_state(self, state_id):
        return {"table_id": self.table_ids[self.last_store], "version": int(state_id)}

    def state_id(self, state):
        return str(state["version"])

    def handle_state(self, handle):
        return str(handle["version"])

    def handle_ref(self, handle):
        return str(handle["version"])


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


class IcebergSqliteS3(IcebergSqlite):
    """IcebergSqlite with the warehouse in an S3 bucket on SeaweedFS: the
    catalog stays SQLite, every metadata file, manifest list and data file
    is written by pyiceberg through pyarrow's S3 FileIO and read and
    written by tether through its S3 store module, reached as IcechunkS3's
    checkouts reach theirs (AWS's variables, allow_http in secrets.toml).
    To keep its cost small it runs test_lifecycle.py's checks on plain git
    only (vcs_kinds, suites): the VCS variants and the landing and surgery
    files exercise the VCS and the engine the same way on any store, and
    iceberg-sql runs them; test_iceberg_s3.py promotes on S3."""
    name = "iceberg-sql-s3"
    server_fixture = os.environ.get("TETHER_LIFECYCLE_S3", "seaweedfs") + "_server"
    vcs_kinds = ("git",)
    suites = ("test_lifecycle",)

    def __init__(self):
        super().__init__()
        self.server = None

    def bind(self, server):
        self.server = server

    def make_store(self, tmp_path, name="store"):
        import iceberg_oracle as ib
        d = Path(tmp_path) / f"{name}-iceberg"
        d.mkdir()
        cat = ib.on_s3(ib.sqlite_catalog(d), self.server, self.server.bucket(name))
        ib.create_table(cat, "ns.t")
        store = IcebergTable(cat, "ns.t")
        self.mutate(store)
        return store

    def reach(self, root, env, store):
        super().reach(root, env, store)
        env.update(self.server.env())
        bucket = store.cat["warehouse"][len("s3://"):].split("/")[0]
        with open(Path(root) / ".tether" / "secrets.toml", "a") as f:
            f.write(f'\n[uris."s3://{bucket}"]\nallow_http = true\n')


# ---------------------------------------------------------------------------
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
    # log_key, add_at_an_earlier_state and add_pick skip as not applicable
    # (neon declares no HISTORY); a restore that lands on a sibling <name>.2
    # is what test_restore_an_older_revision accepts.
    # A Neon branch is storage (BRANCH_IS_STORAGE): the drop check forces
    # the delete, which list_working_refs / delete_working_ref_if keep
    # conditional on the head the plan read.

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
        return self._api_on(self.server, method, path, body)

    @staticmethod
    def _api_on(server, method, path, body=None):
        """Neon's API as a client would call it (the fake checks it)."""
        import urllib.request
        req = urllib.request.Request(server.api_url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {server.key}",
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


ADAPTERS = [GitAdapter(), IcechunkSpec2(), IcechunkSpec1(), IcechunkS3(), LakeFSAdapter(), DoltAdapter(), LanceAdapter(), LanceS3(), DuckLakeAdapter(), DeltaAdapter(), IcebergSqlite(), IcebergSqliteS3(), IcebergRest(), NeonAdapter()]

# Stable Pinnable kinds with no adapter, and why the lifecycle cannot be
# run on them end to end. Any other such kind without an adapter fails
# test_every_stable_pinnable_kind_has_an_adapter.
EXEMPT = {
    "memory": "its store lives inside one tether process and ends with it, so no state outlives the "
              "command that made it (the conformance suite tests it in process)",
}
