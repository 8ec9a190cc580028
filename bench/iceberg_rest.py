#!/usr/bin/env python3
"""Iceberg fingerprint through the REST catalog, beside pyiceberg's
RestCatalog on the same server, in the same run.

    python bench/iceberg_rest.py BUILD_DIR [--snapshots K] [--n N] [--auth token|credential]
                                 [--ops BACKEND_OPS]

Starts the Iceberg project's own REST catalog server on 127.0.0.1
(tests/e2e/icebergrest.py: Iceberg 1.10.0's RESTCatalogAdapter on a
JdbcCatalog over SQLite, the jars scripts/install-deps fetched), then runs
bench/iceberg_catalog.py against it with the server's catalog properties:
a table of K snapshots written by pyiceberg, N fingerprints on each side,
process start excluded on both, cold (each call opens the catalog: GET
/v1/config, a token when --auth credential, then the table's load) and in
a session (the catalog opened once: one HTTP connection, the prefix and
token kept), beside pyiceberg's load_catalog(...).load_table(...)
.current_snapshot() and load_table(...).current_snapshot() on a catalog
made once. Target: tether <= 0.5 x pyiceberg. Prints
bench/iceberg_catalog.py's JSON line, with "catalog": "rest" and the auth.
The server is stopped by PID however the run ends. Needs the tests' .venv
(pyiceberg) and java with the jars (scripts/install-deps).
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

import icebergrest  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--snapshots", type=int, default=50)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--auth", choices=("token", "credential"), default="token")
    ap.add_argument("--ops", help="bench/backend_ops.c, already built (else iceberg_catalog.py builds it)")
    a = ap.parse_args()
    why = icebergrest.installed()
    if why:
        sys.exit(f"iceberg_rest: {why}")
    with tempfile.TemporaryDirectory(prefix="tether-bench-iceberg-rest-") as tmp:
        classes = icebergrest.compile_wrapper(Path(tmp) / "classes")
        work = Path(tmp) / "server"
        work.mkdir()
        srv = icebergrest.IcebergRestServer(work, classes)
        try:
            srv.start()
            # pyiceberg's property names; tether takes the same ones (type
            # committed, the rest as secrets). allow_http is tether's own:
            # plain http to a server on this machine.
            props = {"type": "rest", "uri": srv.uri, "allow_http": "true"}
            if a.auth == "token":
                props["token"] = srv.token
            else:
                props["credential"] = f"{srv.client_id}:{srv.client_secret}"
            p = subprocess.run([sys.executable, str(HERE / "iceberg_catalog.py"), a.build_dir,
                                "--catalog", json.dumps(props), "--snapshots", str(a.snapshots), "--n", str(a.n)]
                               + (["--ops", a.ops] if a.ops else []),
                               capture_output=True, text=True, timeout=1800)
            if p.returncode:
                sys.exit(f"iceberg_rest: bench/iceberg_catalog.py failed: {p.stderr.strip()}")
            out = json.loads(p.stdout)
            out["auth"] = a.auth
            print(json.dumps(out))
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
