"""Benchmarks 8 and 9 of bench/run: the file backend on S3, against a local
SeaweedFS (`weed mini`, started here on 127.0.0.1 as the tests start it,
tests/e2e/s3servers.py, and stopped by PID), each beside its reference in
the same run. Runs in the tests' .venv (boto3).

    s3_file.py prefix  TETHER WORKDIR   benchmark 8
    s3_file.py objects TETHER WORKDIR   benchmark 9

  8  fingerprint of a 100,000-key prefix: `tether status` of one prefix
     object, end to end, vs boto3's list_objects_v2 paginator over the same
     prefix, in-process (client made beforehand: the paginator alone).
     target: ratio <= 0.50. Also the time of one page (1,000 keys) from
     boto3, to show how much of either is the server's.
  9  `tether status` of 100 single objects, end to end, vs 100 sequential
     `curl` HEADs (one process each, SigV4 by curl), in the same run.
     target: ratio <= 0.20. Context: one curl process doing the 100 HEADs
     in a row over one connection.

Prints its report lines, then one JSON line (the figures) last."""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "e2e"))

import s3servers  # noqa: E402
from timing import fmt, say, timed  # noqa: E402

PREFIX_KEYS = 100_000
OBJECTS = 100
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def run(cmd, cwd=None, env=None, check=True):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"s3_file.py: {' '.join(map(shlex.quote, cmd))} failed ({p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def loadavg():
    return os.getloadavg()[0]


def start_server(workdir):
    weed = s3servers.weed_binary()
    if not weed:
        raise SystemExit("s3_file.py: SeaweedFS's weed is not installed (scripts/install-deps builds it)")
    srv = s3servers.S3Server("seaweedfs", workdir)
    s3servers.start_seaweedfs(srv, weed)
    return srv


def dataset(srv, tether, workdir, bucket):
    """A git repository with a tether dataset reaching srv (allow_http for
    its plain http://, in secrets.toml); returns (root, env)."""
    root = os.path.join(workdir, "dataset")
    os.makedirs(root)
    env = srv.env(dict(os.environ))
    env["TETHER_MODULE_PATH"] = os.path.dirname(tether)
    run(["git", "init", "-q", "-b", "main", root])
    run(["git", "-C", root, "config", "user.name", "bench"])
    run(["git", "-C", root, "config", "user.email", "bench@example.com"])
    run([tether, "init"], cwd=root, env=env)
    with open(os.path.join(root, ".tether", "secrets.toml"), "w") as f:
        f.write(f'[uris."s3://{bucket}"]\nallow_http = true\nforce_path_style = true\n')
    return root, env


def put_many(client, bucket, keys, body=b"x" * 64, threads=32):
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for f in concurrent.futures.as_completed([pool.submit(client.put_object, Bucket=bucket, Key=k, Body=body)
                                                  for k in keys]):
            f.result()


def bench_prefix(tether, workdir):
    srv = start_server(workdir)
    try:
        client = srv.client(max_pool_connections=32)
        bucket = srv.bucket("bench-prefix")
        keys = [f"data/d{i // 1000:03d}/f{i % 1000:04d}.bin" for i in range(PREFIX_KEYS)]
        t0 = time.time()
        put_many(client, bucket, keys)
        made = time.time() - t0
        root, env = dataset(srv, tether, workdir, bucket)
        run([tether, "add", "data", f"s3://{bucket}/data/", "--kind", "file"], cwd=root, env=env)
        status = run([tether, "status", "--json"], cwd=root, env=env)
        count = json.loads(status.stdout)["objects"][0]["current"]["count"]
        if count != PREFIX_KEYS:
            raise SystemExit(f"s3_file.py: tether counted {count} keys, not {PREFIX_KEYS}")
        load_before = loadavg()
        t_status = timed(lambda: run([tether, "status"], cwd=root, env=env), runs=5)

        def paginate():
            n = 0
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="data/"):
                n += len(page.get("Contents", []))
            assert n == PREFIX_KEYS, n

        t_boto = timed(paginate, runs=5)
        t_page = timed(lambda: client.list_objects_v2(Bucket=bucket, Prefix="data/", MaxKeys=1000), runs=20)
        load_after = loadavg()
        say(f"    fixture: {PREFIX_KEYS:,} keys of 64 bytes under s3://{bucket}/data/ on SeaweedFS, "
            f"made in {made:.0f} s (32 threads of boto3 puts)")
        say(f"    tether status (one prefix object), end to end  {fmt(t_status)}")
        say(f"    boto3 list_objects_v2 paginator, in-process    {fmt(t_boto)}")
        say(f"    one page (1,000 keys), boto3                   {fmt(t_page)}  "
            f"(x {PREFIX_KEYS // 1000} pages = {t_page['mean'] * PREFIX_KEYS / 1000:.2f} s)")
        say(f"    ratio {t_status['mean'] / t_boto['mean']:.2f}x (target <= 0.50); "
            f"load average {load_before:.2f} before, {load_after:.2f} after")
        return {"status": t_status, "boto3": t_boto, "page": t_page, "keys": PREFIX_KEYS, "made_s": made,
                "load": [load_before, load_after]}
    finally:
        srv.stop()


def bench_objects(tether, workdir):
    srv = start_server(workdir)
    try:
        client = srv.client()
        bucket = srv.bucket("bench-objects")
        keys = [f"obj/o{i:03d}.bin" for i in range(OBJECTS)]
        put_many(client, bucket, keys, threads=16)
        root, env = dataset(srv, tether, workdir, bucket)
        for i, k in enumerate(keys):
            run([tether, "add", f"o{i:03d}", f"s3://{bucket}/{k}", "--kind", "file"], cwd=root, env=env)
        run([tether, "commit", "-m", "objects"], cwd=root, env=env)
        report = json.loads(run([tether, "status", "--json"], cwd=root, env=env).stdout)
        if not report["clean"] or len(report["objects"]) != OBJECTS:
            raise SystemExit("s3_file.py: the 100 objects are not all clean")
        urls = [f"{srv.endpoint}/{bucket}/{k}" for k in keys]
        curl = ["curl", "-sS", "-f", "-o", "/dev/null", "-I", "--aws-sigv4", f"aws:amz:{srv.region}:s3",
                "--user", f"{srv.access_key}:{srv.secret}", "-H", f"x-amz-content-sha256: {EMPTY_SHA256}"]
        run(curl + [urls[0]])  # the reference must work, or it measures errors

        def curls():
            for u in urls:
                subprocess.run(curl + [u], check=True)

        def one_curl():
            subprocess.run(curl + urls, check=True, stdout=subprocess.DEVNULL)

        load_before = loadavg()
        t_status = timed(lambda: run([tether, "status"], cwd=root, env=env), runs=20, warmup=2)
        t_curls = timed(curls, runs=5)
        t_one = timed(one_curl, runs=10)
        load_after = loadavg()
        say(f"    fixture: {OBJECTS} objects of 64 bytes in s3://{bucket}/obj/ on SeaweedFS, one tether object each")
        say(f"    tether status, end to end            {fmt(t_status)}")
        say(f"    100 sequential curl HEADs            {fmt(t_curls)}")
        say(f"    context: one curl, 100 HEADs in a row {fmt(t_one)}")
        say(f"    ratio {t_status['mean'] / t_curls['mean']:.2f}x (target <= 0.20); "
            f"load average {load_before:.2f} before, {load_after:.2f} after")
        return {"status": t_status, "curls": t_curls, "one_curl": t_one, "objects": OBJECTS,
                "load": [load_before, load_after]}
    finally:
        srv.stop()


def main(argv):
    if len(argv) != 3 or argv[0] not in ("prefix", "objects"):
        raise SystemExit(__doc__)
    which, tether, parent = argv
    workdir = tempfile.mkdtemp(prefix=f"s3-{which}.", dir=parent)
    result = bench_prefix(tether, workdir) if which == "prefix" else bench_objects(tether, workdir)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
