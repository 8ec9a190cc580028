#!/usr/bin/env python3
"""Iceberg fingerprint through a catalog, beside pyiceberg on the same one.

    python bench/iceberg_catalog.py BUILD_DIR [--catalog sqlite|postgres|PROPS_JSON]
                                    [--snapshots K] [--n N] [--ops BACKEND_OPS]

Makes a table with K snapshots (pyiceberg appends) in the catalog, then
times N fingerprints of it on each side, process start excluded on both,
in two pairs:

  cold     each call connects to the catalog. tether: bench/backend_ops.c
           (built here against BUILD_DIR's libtether, or --ops, bench/run's
           copy) calls the iceberg backend's fingerprint through the public
           backend API with no store session (a command's first call about
           the table);
           pyiceberg: load_catalog(...) then load_table(...)
           .current_snapshot().
  session  the connection made once, before the timed calls. tether: one
           store session for all the calls (what the engine opens per
           store for a command); pyiceberg: one catalog object (its
           connection pool warm).

Each call reads the table's row and its current metadata file.

--catalog: "sqlite" (a new SqlCatalog on SQLite in a temporary directory,
the default), "postgres" (needs $BENCH_PG_URL, postgresql://USER:PW@HOST:
PORT/DB, an empty database), or a JSON object of pyiceberg catalog
properties for any other catalog (a REST catalog: {"type": "rest", "uri":
..., "warehouse": ...}; the benchmark of the REST catalog passes its
server's here). The SQL catalogs' properties are made here.

Prints one JSON line: {"catalog", "snapshots", "n", "cold": {"tether_median_s",
"pyiceberg_median_s", "ratio", "tether_s": [...], "pyiceberg_s": [...]},
"session": {...}, "target": 0.5, "pass"}
(pass: both ratios within the target). Runs in the tests'
environment (.venv: pyiceberg pinned in tests/requirements.txt).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog import load_catalog

HERE = Path(__file__).resolve().parent
TARGET = 0.5


def sql_props(kind, tmp):
    wh = Path(tmp) / "warehouse"
    wh.mkdir()
    if kind == "sqlite":
        return {"type": "sql", "uri": f"sqlite:///{tmp}/catalog.db", "warehouse": f"file://{wh}"}
    url = os.environ.get("BENCH_PG_URL")
    if not url:
        sys.exit("iceberg_catalog: --catalog postgres needs $BENCH_PG_URL (postgresql://USER:PW@HOST:PORT/DB)")
    return {"type": "sql", "uri": url.replace("postgresql://", "postgresql+psycopg2://", 1),
            "warehouse": f"file://{wh}"}


def tether_props(props):
    """pyiceberg's properties as tether takes them: the password out of the
    URL (tether reads it from secrets.toml, never from a URL it commits)."""
    out = dict(props)
    uri = out.get("uri", "")
    if uri.startswith("postgresql+psycopg2://"):
        rest = uri[len("postgresql+psycopg2://"):]
        cred, _, host = rest.rpartition("@")
        user, _, pw = cred.partition(":")
        out["uri"] = f"postgresql://{user}@{host}"
        out["password"] = pw
    return out


def make_table(cat, snapshots):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    cat.create_namespace_if_not_exists("bench")
    t = cat.create_table("bench.t", schema=schema)
    for i in range(snapshots):
        t.append(pa.table({"id": [i], "v": [f"r{i}"]}, schema=schema))
    return t.current_snapshot().snapshot_id


def build_ops(build_dir, out_dir):
    exe = Path(out_dir) / "backend_ops"
    cmd = ["cc", "-O2", "-std=c17", "-o", str(exe), str(HERE / "backend_ops.c"), f"-I{HERE.parent / 'include'}",
           f"-L{build_dir}", "-ltether", "-ljansson", "-lpthread", f"-Wl,-rpath,{build_dir}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"iceberg_catalog: cannot build bench/backend_ops.c: {p.stderr}")
    return exe


def ops_command(exe, props, session, n):
    """backend_ops' command line for n fingerprints of bench.t: the
    catalog's type and warehouse handed over as tether.toml's
    [backends.iceberg] catalog, the rest (uri, password, token, ...) as
    secrets.toml's; its name goes into the locator."""
    committed = {k: v for k, v in props.items() if k in ("type", "warehouse")}
    secret = {k: v for k, v in props.items() if k not in ("type", "warehouse", "name")}
    loc = {"identifier": "bench.t", "branch": "main", "catalog_name": props.get("name", "default")}
    return [str(exe), "--config", json.dumps({"catalog": committed}), "--secrets", json.dumps({"catalog": secret})] + \
        (["--session"] if session else []) + ["iceberg", json.dumps(loc), "fingerprint", str(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--catalog", default="sqlite")
    ap.add_argument("--snapshots", type=int, default=50)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--ops", help="bench/backend_ops.c, already built against BUILD_DIR's libtether")
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="tether-bench-iceberg-") as tmp:
        if a.catalog in ("sqlite", "postgres"):
            props = sql_props(a.catalog, tmp)
        else:
            props = json.loads(a.catalog)
        name = props.get("name", "default")
        cat = load_catalog(name, **{k: v for k, v in props.items() if k != "name"})
        head = make_table(cat, a.snapshots)

        cold_py, warm_py = [], []
        for _ in range(a.n):
            t0 = time.perf_counter()
            snap = load_catalog(name, **{k: v for k, v in props.items() if k != "name"}) \
                .load_table("bench.t").current_snapshot()
            cold_py.append(time.perf_counter() - t0)
            assert snap.snapshot_id == head
        for _ in range(a.n):
            t0 = time.perf_counter()
            snap = cat.load_table("bench.t").current_snapshot()
            warm_py.append(time.perf_counter() - t0)
            assert snap.snapshot_id == head

        exe = a.ops or build_ops(build, tmp)
        env = dict(os.environ, TETHER_MODULE_PATH=str(build))
        out = {"catalog": a.catalog if a.catalog in ("sqlite", "postgres") else props.get("type", "?"),
               "snapshots": a.snapshots, "n": a.n}
        for mode, py in (("cold", cold_py), ("session", warm_py)):
            p = subprocess.run(ops_command(exe, tether_props(props), mode == "session", a.n), capture_output=True,
                               text=True, env=env)
            if p.returncode:
                sys.exit(f"iceberg_catalog: backend_ops failed: {p.stderr.strip()}")
            r = json.loads(p.stdout)
            assert r["state"] == {"snapshot_id": head}, (r["state"], head)
            tm, pm = statistics.median(r["seconds"]), statistics.median(py)
            out[mode] = {"tether_median_s": tm, "pyiceberg_median_s": pm, "ratio": tm / pm,
                         "tether_s": r["seconds"], "pyiceberg_s": py}
        out["target"] = TARGET
        out["pass"] = all(out[m]["ratio"] <= TARGET for m in ("cold", "session"))
        print(json.dumps(out))


if __name__ == "__main__":
    main()
