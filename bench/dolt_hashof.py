"""Benchmark 15's driver: the Dolt backend's fingerprint beside PyMySQL's
`SELECT HASHOF('main')` on the same `dolt sql-server` (v0.40.4, started on
127.0.0.1 by tests/e2e/doltserver.py and stopped by PID).

    python dolt_hashof.py BACKEND_OPS WORKDIR CALLS ROUNDS

BACKEND_OPS is bench/backend_ops.c built against the tether under test
(its module path in $TETHER_MODULE_PATH). Process start is left out on
both sides: tether's calls are timed in-process by backend_ops, PyMySQL's
in this process. The server's login goes to backend_ops as secrets.toml's
[uris."mysql://127.0.0.1:PORT"] would give it. Per round, CALLS calls of each: tether's fingerprint with a new
connection per call and within one store session (one pooled connection),
and PyMySQL's connect + HASHOF + close, and HASHOF on one open connection.
tether's fingerprint asks more than HASHOF does (whether dolt_branches has
a dirty column, then the branch's row), so the ratio shows what that costs.
Prints one JSON object.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

import pymysql  # noqa: E402

import doltserver  # noqa: E402


def tether_times(ops, srv, db, calls, session):
    """calls timed fingerprints of the database's main: a connection per
    call, or (session) one store session's pooled connection."""
    login = {f"mysql://127.0.0.1:{srv.port}": {"user": srv.user, "password": srv.password}}
    loc = {"host": "127.0.0.1", "port": srv.port, "database": db, "branch": "main"}
    cmd = [ops, "--uri-secrets", json.dumps(login)] + (["--session"] if session else []) + \
        ["dolt", json.dumps(loc), "fingerprint", str(calls)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"backend_ops dolt fingerprint{' --session' if session else ''}: {p.stderr.strip()}")
    return json.loads(p.stdout)["seconds"]


def pymysql_times(srv, db, calls, held):
    out = []
    conn = srv.connect(db) if held else None
    for _ in range(calls):
        t0 = time.perf_counter()
        c = conn or pymysql.connect(host=srv.host, port=srv.port, user=srv.user, password=srv.password,
                                    database=db)
        with c.cursor() as cur:
            cur.execute("SELECT HASHOF('main')")
            cur.fetchone()
        if not held:
            c.close()
        out.append(time.perf_counter() - t0)
    if conn:
        conn.close()
    return out


def main(ops, workdir, calls, rounds):
    binary = doltserver.dolt_binary()
    if not binary:
        print(json.dumps({"skipped": "dolt is not installed (scripts/install-deps builds Dolt v0.40.4)"}))
        return 0
    srv = doltserver.DoltServer(binary)
    try:
        srv.start()
        db = srv.database("bench")
        times = {k: [] for k in ("t_fp", "t_fp_session", "p_hashof", "p_hashof_held")}
        for _ in range(rounds):
            times["t_fp"] += tether_times(ops, srv, db, calls, session=False)
            times["t_fp_session"] += tether_times(ops, srv, db, calls, session=True)
            times["p_hashof"] += pymysql_times(srv, db, calls, held=False)
            times["p_hashof_held"] += pymysql_times(srv, db, calls, held=True)
        print(json.dumps({"times": times, "calls": calls, "rounds": rounds, "dolt": "v0.40.4",
                          "pymysql": pymysql.__version__}))
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
