"""Benchmark 13's reference side, and its fixture: the deltalake library.

    python delta_ops.py make TABLE N        a table of N commits (appends), checkpoints as delta-rs makes them
    python delta_ops.py version TABLE N     N x DeltaTable(TABLE).version()

The operations are timed one by one, in-process, the way backend_ops.c times
tether's fingerprint: each opens the table afresh, as a tether command (one
process per command) reads the log afresh. Prints one JSON line: {"op",
"n", "seconds": [...]} (make: {"op", "n", "version", "checkpoints"}).
Runs in the tests' environment (.venv), which has deltalake pinned.
"""
import json
import os
import sys
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def make(path, n):
    write_deltalake(path, pa.table({"i": pa.array([0], pa.int64())}))
    # One DeltaTable carried through the writes, so each append does not
    # replay the log from its checkpoint (the fixture, not the measure).
    dt = DeltaTable(path)
    for i in range(1, n):
        write_deltalake(dt, pa.table({"i": pa.array([i], pa.int64())}), mode="append")
        if i % 1000 == 0:
            print(f"  {i} commits", file=sys.stderr, flush=True)
    log = os.path.join(path, "_delta_log")
    checkpoints = sorted(f for f in os.listdir(log) if ".checkpoint." in f)
    return {"op": "make", "n": n, "version": DeltaTable(path).version(), "checkpoints": len(checkpoints)}


def version(path, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        DeltaTable(path).version()
        times.append(time.perf_counter() - t0)
    return {"op": "version", "n": n, "seconds": times}


def main(argv):
    if len(argv) != 3 or argv[0] not in ("make", "version"):
        print(__doc__, file=sys.stderr)
        return 2
    out = (make if argv[0] == "make" else version)(argv[1], int(argv[2]))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
