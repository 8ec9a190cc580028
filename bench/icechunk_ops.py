"""Benchmark 5's reference side, and its fixture: the icechunk library.

    python icechunk_ops.py make REPO N            a repository of N snapshots on main
    python icechunk_ops.py fingerprint REPO N     N x (Repository.open + lookup_branch("main"))
    python icechunk_ops.py pin REPO N             N x (Repository.open + create_tag(fresh name, head))
    python icechunk_ops.py pin-warm REPO N        N x create_tag on one Repository held open

REPO is a path, or s3://BUCKET/PREFIX on the server the AWS_* variables
name (benchmark 10, bench/icechunk_s3.py).

The operations are timed one by one, in-process, the way backend_ops.c
times tether's. fingerprint and pin open the repository afresh each time,
as a tether command (one process per command) reads the file afresh; in
pin-warm the Repository keeps the repo file it wrote last in its cache and
skips reading it back. Prints one JSON line: {"op", "n", "seconds": [...]}.
Runs in the tests' environment (.venv), which has icechunk pinned.
"""
import json
import os
import sys
import time

os.environ.setdefault("ICECHUNK_LOG", "error")

import icechunk as ic  # noqa: E402
import zarr  # noqa: E402


def storage(path):
    """A local path, or s3://BUCKET/PREFIX on the server AWS's variables
    name (AWS_ENDPOINT_URL_S3, the keys, the region: benchmark 10)."""
    if path.startswith("s3://"):
        bucket, _, prefix = path[len("s3://"):].partition("/")
        env = os.environ
        return ic.s3_storage(bucket=bucket, prefix=prefix, endpoint_url=env["AWS_ENDPOINT_URL_S3"],
                             allow_http=env["AWS_ENDPOINT_URL_S3"].startswith("http:"), force_path_style=True,
                             region=env["AWS_REGION"], access_key_id=env["AWS_ACCESS_KEY_ID"],
                             secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    return ic.local_filesystem_storage(path)


def make(path, n):
    repo = ic.Repository.create(storage(path))
    for i in range(n - 1):  # the initial snapshot is the first
        s = repo.writable_session("main")
        g = zarr.open_group(store=s.store, mode="a")
        g.attrs["i"] = i
        s.commit(f"snapshot {i + 1}")
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1} snapshots", file=sys.stderr, flush=True)
    return {"op": "make", "n": n, "head": repo.lookup_branch("main")}


def fingerprint(path, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        ic.Repository.open(storage(path)).lookup_branch("main")
        times.append(time.perf_counter() - t0)
    return {"op": "fingerprint", "n": n, "seconds": times}


def pin(path, n):
    head = ic.Repository.open(storage(path)).lookup_branch("main")
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        ic.Repository.open(storage(path)).create_tag(f"tether.c0c0c0c0.{i:016x}", head)
        times.append(time.perf_counter() - t0)
    return {"op": "pin", "n": n, "seconds": times}


def pin_warm(path, n):
    repo = ic.Repository.open(storage(path))
    head = repo.lookup_branch("main")
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        repo.create_tag(f"tether.c1c1c1c1.{i:016x}", head)
        times.append(time.perf_counter() - t0)
    return {"op": "pin-warm", "n": n, "seconds": times}


if __name__ == "__main__":
    op, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps({"make": make, "fingerprint": fingerprint, "pin": pin, "pin-warm": pin_warm}[op](path, n)))
