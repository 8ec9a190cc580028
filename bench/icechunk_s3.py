"""Benchmark 10's driver: an Icechunk pin on S3, tether beside the icechunk
library, on one SeaweedFS server (tests/e2e/s3servers.py starts it on
127.0.0.1 and stops it).

    python icechunk_s3.py BACKEND_OPS WORKDIR SNAPSHOTS CALLS ROUNDS

BACKEND_OPS is bench/backend_ops.c built against the tether under test
(its module path in $TETHER_MODULE_PATH). The fixture, a repository of
SNAPSHOTS commits on main, is written once by icechunk through its S3
client and copied server-side for each side of each round, as pins change
the repository. Per round: tether's fingerprint and pin (backend_ops, in
its own process, timed call by call in-process, through the S3 store
module with the environment AWS's tools read and allow_http as
secrets.toml's [uris] would give it), then icechunk's
Repository.open + lookup_branch, Repository.open + create_tag, and
create_tag on a Repository held open (bench/icechunk_ops.py, in this
process). Prints one JSON object.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
os.environ.setdefault("ICECHUNK_LOG", "error")

import icechunk as ic  # noqa: E402

import icechunk_ops  # noqa: E402
import s3servers  # noqa: E402


def copy_prefix(client, bucket, src, dst):
    """Every object under src/ to dst/, server-side."""
    pages = client.get_paginator("list_objects_v2")
    for page in pages.paginate(Bucket=bucket, Prefix=src + "/"):
        for o in page.get("Contents", []):
            client.copy_object(Bucket=bucket, Key=dst + o["Key"][len(src):],
                               CopySource={"Bucket": bucket, "Key": o["Key"]})


def main(ops, workdir, snapshots, calls, rounds):
    weed = s3servers.weed_binary()
    if not weed:
        print(json.dumps({"skipped": "SeaweedFS's weed is not installed (scripts/install-deps builds it)"}))
        return 0
    srv = s3servers.S3Server("seaweedfs", workdir)
    try:
        s3servers.start_seaweedfs(srv, weed)
        os.environ.update(srv.env())
        client = srv.client()
        bucket = srv.bucket("bench")
        fixture = f"s3://{bucket}/fixture"
        t0 = time.time()
        icechunk_ops.make(fixture, snapshots)
        built = time.time() - t0
        times = {k: [] for k in ("t_fp", "t_pin", "i_fp", "i_pin", "i_pin_warm")}

        def tether_op(repo, op):
            # A fingerprint on a thread of its own per call, as benchmark 5's
            # cold one: the backend's per-thread view of the repo never helps.
            cmd = [ops, "--uri-secrets", json.dumps({repo: {"allow_http": True}})] + \
                (["--thread-per-call"] if op == "fingerprint" else []) + \
                ["icechunk", json.dumps({"uri": repo, "branch": "main"}), op, str(calls)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(f"backend_ops icechunk {op} {repo}: {p.stderr.strip()[:400]}")
            return json.loads(p.stdout)["seconds"]

        for r in range(rounds):
            copies = {}
            for side in ("t", "i", "iw"):
                copies[side] = f"round{r}-{side}"
                copy_prefix(client, bucket, "fixture", copies[side])
            times["t_fp"] += tether_op(fixture, "fingerprint")
            times["i_fp"] += icechunk_ops.fingerprint(fixture, calls)["seconds"]
            times["t_pin"] += tether_op(f"s3://{bucket}/{copies['t']}", "pin")
            times["i_pin"] += icechunk_ops.pin(f"s3://{bucket}/{copies['i']}", calls)["seconds"]
            times["i_pin_warm"] += icechunk_ops.pin_warm(f"s3://{bucket}/{copies['iw']}", calls)["seconds"]
        repo_bytes = client.head_object(Bucket=bucket, Key="fixture/repo")["ContentLength"]
        print(json.dumps({"icechunk": ic.__version__, "snapshots": snapshots, "calls": calls, "rounds": rounds,
                          "build_s": built, "repo_bytes": repo_bytes, "server_start_s": srv.started_in,
                          "times": times}))
        return 0
    finally:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
