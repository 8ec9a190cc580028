"""pylance as the oracle of the lance tests (and, as `lance_oracle.py
serve`, the conformance harness's writer): datasets made and written by
the library, and what the library says of their tags, branches and
versions (never tether). State ids are the version on main,
"branch@version#branch_id" on any other branch, at the address tether gives a
version: a branch's creation version holds its parent's data unchanged,
so it is named at the parent (recursively)."""
import itertools
import json
import sys

import lance
import pyarrow as pa

_counter = itertools.count(1)


def _open(uri, storage_options=None):
    return lance.dataset(uri, storage_options=storage_options)


def create(uri, storage_options=None, **kw):
    lance.write_dataset(pa.table({"a": [0]}), uri, storage_options=storage_options, **kw)


def delete_tag(uri, name, storage_options=None):
    _open(uri, storage_options).tags.delete(name)


def create_tag(uri, name, branch, version, storage_options=None):
    _open(uri, storage_options).tags.create(name, (None if branch == "main" else branch, version))


def checkout(uri, branch, storage_options=None):
    ds = _open(uri, storage_options)
    return ds if branch == "main" else ds.checkout_version((branch, None))


def append(uri, branch="main", storage_options=None):
    ds = checkout(uri, branch, storage_options)
    return lance.write_dataset(pa.table({"a": [next(_counter)]}), ds, mode="append",
                               storage_options=storage_options).version


def address(uri, branch, version, storage_options=None):
    branches = _open(uri, storage_options).branches.list()
    while branch not in (None, "main") and branches[branch]["parent_version"] == version:
        branch = branches[branch]["parent_branch"]
    if branch in (None, "main"):
        return str(version)
    return f"{branch}@{version}#{branches[branch]['branch_identifier'][-1][1]}"


def head(uri, branch="main", storage_options=None):
    return address(uri, branch, checkout(uri, branch, storage_options).version, storage_options)


def refs(uri, storage_options=None):
    ds = _open(uri, storage_options)
    pins = {name: address(uri, t["branch"], t["version"], storage_options) for name, t in ds.tags.list().items()}
    branches = {name: head(uri, name, storage_options) for name in ["main", *ds.branches.list()]}
    return {"pins": pins, "branches": branches}


def content(uri, ref, storage_options=None):
    ds = _open(uri, storage_options)
    if ref in ds.tags.list():
        ds = ds.checkout_version(ref)
    else:
        ds = checkout(uri, ref, storage_options)
    return sorted(ds.to_table().column("a").to_pylist())


def history(uri, branch="main", storage_options=None):
    ds = checkout(uri, branch, storage_options)
    out = []
    for v in sorted((v["version"] for v in ds.versions()), reverse=True):
        t = ds.read_transaction(v)
        op = type(t.operation).__name__ if t else "commit"
        msg = (t.transaction_properties or {}).get("__lance_commit_message") if t else None
        out.append((str(v), f"{op}: {msg}" if msg else op))
    return out


def serve():
    """One JSON request per line on stdin, one answer per line on stdout:
    the conformance harness's writer (src/testing/harness_lance.c)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req["op"] == "create":
                create(req["path"])
                out = {"ok": True}
            elif req["op"] == "append":
                out = {"ok": True, "version": append(req["path"], req.get("branch", "main"))}
            else:
                out = {"ok": False, "error": f"unknown op {req['op']!r}"}
        except Exception as exc:  # the harness reports it
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
