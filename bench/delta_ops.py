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
    """N commits (versions 0..N-1), each the append of a one-row data file,
    written by deltalake with its default post-commit hook (a checkpoint
    when (version + 1) is a multiple of delta.checkpointInterval, 100 by
    default; expired-log cleanup, which deletes nothing this young).

    A DeltaTable carried through the writes is brought up to date after each
    commit incrementally: its list of active files keeps the batches it had
    and adds the new commit's, and the next update scans them all again, so
    an append costs more with every append made through the same object
    (from 13 ms to 200 ms over the first 1,200, where a freshly opened table
    appends in about 25 ms; 10,000 never finished). Opening the table afresh
    after each checkpoint starts it from that checkpoint, so no object sees
    more than one interval of appends: the cost stays flat. What is written
    does not change: the same appends, the same hook, the same checkpoints."""
    t0 = time.perf_counter()
    write_deltalake(path, pa.table({"i": pa.array([0], pa.int64())}))
    dt = DeltaTable(path)
    interval = int(dt.metadata().configuration.get("delta.checkpointInterval") or 100)
    for i in range(1, n):
        write_deltalake(dt, pa.table({"i": pa.array([i], pa.int64())}), mode="append")
        if (dt.version() + 1) % interval == 0:
            dt = DeltaTable(path)
        if i % 1000 == 0:
            print(f"  {i} commits, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    log = os.path.join(path, "_delta_log")
    checkpoints = sorted(f for f in os.listdir(log) if ".checkpoint." in f)
    return {"op": "make", "n": n, "version": DeltaTable(path).version(), "checkpoints": len(checkpoints),
            "seconds": time.perf_counter() - t0}


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
