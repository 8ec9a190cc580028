"""Benchmark 12's reference side, and its fixture: DuckDB with its ducklake
extension (duckdb 1.5.5 and the extension packages, in the tests' .venv).

    python ducklake_ops.py make METADATA DATA N     a catalog of N snapshots
    python ducklake_ops.py newest METADATA N        N x (ATTACH + newest snapshot + DETACH)

METADATA is what ATTACH takes after "ducklake:" is added ("sqlite:FILE",
or a DuckDB file). The extensions are installed from their packages' files
and loaded once, before the timed calls (process start is excluded on both
sides); each call then attaches the catalog read-only, selects the newest
snapshot from ducklake_snapshots(), and detaches, as tether's fingerprint
opens, reads and closes it. Prints one JSON line: {"op", "n", "seconds",
"newest"}.
"""
import glob
import importlib.util
import json
import os
import sys
import tempfile
import time

import duckdb

EXT = {"ducklake": "ducklake", "sqlite": "sqlite_scanner"}


def connect():
    ext_dir = tempfile.mkdtemp(prefix="duckdb-ext.")
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "extension_directory": ext_dir})
    for pkg in EXT.values():
        spec = importlib.util.find_spec(f"duckdb_extension_{pkg}")
        path = glob.glob(os.path.join(spec.submodule_search_locations[0], "extensions", "*", "*.duckdb_extension"))
        con.execute(f"INSTALL '{path[0]}'")
        con.execute(f"LOAD {pkg}")
    return con


def make(metadata, data, n):
    con = connect()
    con.execute(f"ATTACH 'ducklake:{metadata}' AS l (DATA_PATH '{data}/')")
    con.execute("CREATE TABLE l.t(i BIGINT)")  # snapshot 1 (snapshot 0 made the catalog)
    for i in range(n - 2):
        con.execute(f"INSERT INTO l.t VALUES ({i})")
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1} snapshots", file=sys.stderr, flush=True)
    newest = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('l')").fetchone()[0]
    con.close()
    return {"op": "make", "n": n, "newest": newest}


def newest(metadata, n):
    con = connect()
    times = []
    got = None
    for _ in range(n):
        t0 = time.perf_counter()
        con.execute(f"ATTACH 'ducklake:{metadata}' AS l (READ_ONLY)")
        got = con.execute("SELECT snapshot_id, snapshot_time FROM ducklake_snapshots('l') "
                          "ORDER BY snapshot_id DESC LIMIT 1").fetchone()[0]
        con.execute("DETACH l")
        times.append(time.perf_counter() - t0)
    con.close()
    return {"op": "newest", "n": n, "seconds": times, "newest": got}


if __name__ == "__main__":
    op = sys.argv[1]
    if op == "make":
        print(json.dumps(make(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        print(json.dumps(newest(sys.argv[2], int(sys.argv[3]))))
