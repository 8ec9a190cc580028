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
from deltalake import DeltaTable, PostCommitHookProperties, write_deltalake


def make(path, n):
    """N commits (versions 0..N-1), each the append of a one-row data file,
    written by deltalake with its post-commit checkpoints: one when
    (version + 1) is a multiple of delta.checkpointInterval, 100 by default.

    Two things made each append slower than the one before (10,000 never
    finished: one attempt was at 5,846 after more than 35 minutes, writing
    about 50 commits a minute), and neither changes what is written:

    - The post-commit hook's expired-log cleanup, on by default, lists the
      whole _delta_log after every commit to find logs older than
      delta.logRetentionDuration (30 days) before a checkpoint. A table
      written in minutes has none, so it deletes nothing; but the listing
      grows with the log: at 5,400 versions an append took 120-270 ms with
      it and 17-21 ms without. It is turned off here, nothing else in the
      hook (checkpoints are still delta-rs's own, at the same versions).
    - A DeltaTable carried through the writes is brought up to date after
      each commit incrementally, and its cost grows with the appends made
      through that object (at 1,100 versions, from 31 to 50 ms an append over
      300 appends, where a table reopened after each checkpoint stayed at
      26 ms). Reopening it after each checkpoint starts it from that
      checkpoint, so no object sees more than one interval of appends."""
    t0 = time.perf_counter()
    write_deltalake(path, pa.table({"i": pa.array([0], pa.int64())}))
    dt = DeltaTable(path)
    hook = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)
    interval = int(dt.metadata().configuration.get("delta.checkpointInterval") or 100)
    for i in range(1, n):
        write_deltalake(dt, pa.table({"i": pa.array([i], pa.int64())}), mode="append",
                        post_commithook_properties=hook)
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
