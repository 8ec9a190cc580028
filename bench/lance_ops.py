"""Benchmark 11's reference side, and its fixture: pylance.

    python lance_ops.py make DATASET N          a dataset of N versions on main (N - 1 appends)
    python lance_ops.py fingerprint DATASET N   N x lance.dataset(uri).version
    python lance_ops.py pin DATASET N           N x lance.dataset(uri).tags.create(fresh name, head)
    python lance_ops.py pin-warm DATASET N      N x tags.create on one dataset held open

The operations are timed one by one, in-process, the way
bench/backend_ops.c (kind lance) times tether's: fingerprint and
pin open the dataset afresh each time, as a tether command (one process per
command) reads it afresh. Prints one JSON line: {"op", "n", "seconds": [...]}.
Runs in the tests' environment (.venv), which has pylance pinned.
"""
import json
import sys
import time

import lance
import pyarrow as pa


def make(path, n):
    lance.write_dataset(pa.table({"a": [0]}), path)
    for i in range(1, n):
        lance.write_dataset(pa.table({"a": [i]}), path, mode="append")
        if i % 200 == 0:
            print(f"  {i} versions", file=sys.stderr, flush=True)
    return {"op": "make", "n": n, "version": lance.dataset(path).version}


def fingerprint(path, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        lance.dataset(path).version
        times.append(time.perf_counter() - t0)
    return {"op": "fingerprint", "n": n, "seconds": times}


def pin(path, n):
    head = lance.dataset(path).version
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        lance.dataset(path).tags.create(f"tether.c0c0c0c0.{i:016x}", head)
        times.append(time.perf_counter() - t0)
    return {"op": "pin", "n": n, "seconds": times}


def pin_warm(path, n):
    ds = lance.dataset(path)
    head = ds.version
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        ds.tags.create(f"tether.c1c1c1c1.{i:016x}", head)
        times.append(time.perf_counter() - t0)
    return {"op": "pin-warm", "n": n, "seconds": times}


if __name__ == "__main__":
    op, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps({"make": make, "fingerprint": fingerprint, "pin": pin, "pin-warm": pin_warm}[op](path, n)))
