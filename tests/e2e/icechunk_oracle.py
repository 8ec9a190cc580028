"""The icechunk library as the tests' oracle: it makes and writes the
repositories tether reads, and reads back what tether wrote.

Imported by the end-to-end tests, and run as `icechunk_oracle.py serve` by
the conformance harness (src/testing/harness_icechunk.c) and by the
lifecycle suite's spec-1 adapter (tests/e2e/lifecycle_adapters.py, under
icechunk 1.x): one JSON request per line on stdin, one JSON answer per line
on stdout.

Every write is a real Zarr write through an icechunk session, so snapshots,
manifests, chunks and transaction logs are exactly what icechunk makes.
"""
import json
import os
import sys
import warnings

# Icechunk's own warnings (local storage is not safe for concurrent
# commits, and so on) are not what the tests look at.
os.environ.setdefault("ICECHUNK_LOG", "error")

import icechunk as ic
import numpy as np
import zarr

warnings.filterwarnings("ignore")


def storage(path):
    """`path`: a local path, or an icechunk Storage already made (an S3
    bucket's, test_icechunk_s3.py), which every function here takes too."""
    if isinstance(path, ic.Storage):
        return path
    return ic.local_filesystem_storage(str(path))


def open_repo(path):
    return ic.Repository.open(storage(path))


def create(path, spec=None, array=True):
    """A new repository; with `array`, one commit on main holding /data."""
    kwargs = {} if spec is None else {"spec_version": int(spec)}
    repo = ic.Repository.create(storage(path), **kwargs)
    if array:
        s = repo.writable_session("main")
        root = zarr.group(store=s.store)
        a = root.create_array("data", shape=(8,), chunks=(2,), dtype="i4", fill_value=0)
        a[:] = np.arange(8, dtype="i4")
        s.commit("first data")
    return repo


_counter = [0]


def commit(path, branch="main", message=None):
    """A change no earlier call made: a new chunk value in /data (created
    when missing), as a commit on `branch`. Returns the new snapshot id."""
    _counter[0] += 1
    n = _counter[0]
    repo = open_repo(path)
    s = repo.writable_session(branch)
    root = zarr.open_group(store=s.store, mode="a")
    if "data" not in root:
        a = root.create_array("data", shape=(8,), chunks=(2,), dtype="i4", fill_value=0)
    else:
        a = root["data"]
    a[n % 8] = 1000 + n
    return s.commit(message or f"write {n} on {branch}")


def read_data(path, **where):
    """The /data array as a list, read at a branch, tag or snapshot_id."""
    repo = open_repo(path)
    s = repo.readonly_session(**where)
    return zarr.open_array(store=s.store, path="data", mode="r")[:].tolist()


def diff(path, from_id, to_id):
    """Repository.diff as plain data, in the shape tether's "native" has."""
    d = open_repo(path).diff(from_snapshot_id=from_id, to_snapshot_id=to_id)
    return {
        "new_groups": sorted(d.new_groups),
        "new_arrays": sorted(d.new_arrays),
        "deleted_groups": sorted(d.deleted_groups),
        "deleted_arrays": sorted(d.deleted_arrays),
        "updated_groups": sorted(d.updated_groups),
        "updated_arrays": sorted(d.updated_arrays),
        "updated_chunks": {p: len(list(c)) for p, c in dict(d.updated_chunks).items()},
        "moved_nodes": [list(m) for m in (getattr(d, "moved_nodes", None) or [])],
    }


def tags_of(path):
    return sorted(open_repo(path).list_tags())


def branches_of(path):
    return sorted(open_repo(path).list_branches())


def tag_target(path, tag):
    return open_repo(path).lookup_tag(tag)


def branch_head(path, branch="main"):
    return open_repo(path).lookup_branch(branch)


def delete_tag(path, tag):
    open_repo(path).delete_tag(tag)


def ancestry_ids(path, branch="main"):
    return [a.id for a in open_repo(path).ancestry(branch=branch)]


def read_tag(path, tag):
    return read_data(path, tag=tag)


def create_repo(path, spec=None):
    return create(path, spec).lookup_branch("main")


def version():
    return ic.__version__


def refs_of(path):
    """Every tag and branch with the snapshot it names, as the library
    lists them: {"tags": {name: id}, "branches": {name: id}}."""
    repo = open_repo(path)
    return {"tags": {t: repo.lookup_tag(t) for t in repo.list_tags()},
            "branches": {b: repo.lookup_branch(b) for b in repo.list_branches()}}


def create_tag(path, tag, snapshot_id):
    open_repo(path).create_tag(tag, snapshot_id)


def ancestry(path, branch="main"):
    """[id, message] of every snapshot of a branch, newest first."""
    return [[a.id, a.message] for a in open_repo(path).ancestry(branch=branch)]


def read_ref(path, ref):
    """/data at a tag or a branch, whichever `ref` names."""
    repo = open_repo(path)
    where = {"tag": ref} if ref in repo.list_tags() else {"branch": ref}
    return read_data(path, **where)


def serve():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req["op"] == "create":
                repo = create(req["path"], req.get("spec"))
                out = {"ok": True, "snapshot": repo.lookup_branch("main")}
            elif req["op"] == "commit":
                out = {"ok": True, "snapshot": commit(req["path"], req.get("branch", "main"))}
            elif req["op"] == "call":
                # Any function of this module, for a test driving another
                # environment's icechunk (1.x) without a process per call.
                out = {"ok": True, "result": globals()[req["fn"]](*req.get("args", []))}
            else:
                out = {"ok": False, "error": f"unknown op {req['op']!r}"}
        except Exception as exc:  # the harness reports it
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    elif len(sys.argv) == 4 and sys.argv[1] == "call":
        # One function, for a test running in another environment (the
        # icechunk 1.x one): its arguments and its result as JSON.
        result = globals()[sys.argv[2]](*json.loads(sys.argv[3]))
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.exit("usage: icechunk_oracle.py serve | call FUNCTION ARGS_JSON")
