"""Benchmark 16 of bench/run: `tether status` of 10 neon objects on one
project, beside 10 sequential calls to the same API, in the same run.

Neon cannot run here: the API is the tests' fake control plane
(tests/e2e/neonfake.py, started on 127.0.0.1 and stopped by PID), each
branch a real Postgres cluster, so a fingerprint costs what it costs
against Neon's API shape: API calls for the branch, its endpoint and the
connection URI, then a Postgres connection and the probe query. Runs in the
tests' .venv (PyYAML and openapi-schema-validator for the fake, psycopg2).

    neon_status.py TETHER WORKDIR

  tether status of 10 objects (10 databases of one project, one branch),
  end to end, vs 10 sequential GET /projects/{id}/connection_uri calls with
  curl (a process each, the key in the header), the cheapest call a client
  makes per database before it can connect. Shown beside: how many API
  requests one status made (the fan-out), and how many read_write
  endpoints the 10 objects made (one: they share it).

Prints its report lines, then one JSON line (the figures) last."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "e2e"))

import neonfake  # noqa: E402

sys.path.insert(0, HERE)
from timing import fmt, say, timed  # noqa: E402

OBJECTS = 10


def run(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"neon_status.py: {' '.join(map(shlex.quote, cmd))} failed ({p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    tether, parent = argv
    workdir = tempfile.mkdtemp(prefix="neon.", dir=parent)
    if not neonfake.spec_path().exists():
        raise SystemExit(f"neon_status.py: no Neon OpenAPI document at {neonfake.spec_path()} "
                         "(scripts/install-deps fetches it)")
    srv = neonfake.NeonFake().start()
    try:
        project = srv.project()
        pid = project["project_id"]
        dbs = [f"db{i:02d}" for i in range(OBJECTS)]
        for db in dbs:
            srv.sql(project, "main", f"CREATE DATABASE {db}", database="neondb")
        root = os.path.join(workdir, "dataset")
        env = dict(os.environ, TETHER_MODULE_PATH=os.path.dirname(tether), BENCH_NEON_KEY=srv.key)
        run(["git", "init", "-q", "-b", "main", root])
        run(["git", "-C", root, "config", "user.name", "bench"])
        run(["git", "-C", root, "config", "user.email", "bench@example.com"])
        run([tether, "init"], cwd=root, env=env)
        with open(os.path.join(root, ".tether", "secrets.toml"), "w") as f:
            for db in dbs:
                f.write(f'[objects."{db}"]\napi_url = "{srv.api_url}"\napi_key_env = "BENCH_NEON_KEY"\n')
        for db in dbs:
            run([tether, "add", db, "--kind", "neon", "--project-id", pid, "--database", db, "--role",
                 project["role"]], cwd=root, env=env)
        run([tether, "commit", "-m", "ten databases"], cwd=root, env=env)
        report = json.loads(run([tether, "status", "--json"], cwd=root, env=env).stdout)
        if len(report["objects"]) != OBJECTS or not report["clean"]:
            raise SystemExit("neon_status.py: the 10 objects are not all clean")
        srv.clear_requests()
        run([tether, "status"], cwd=root, env=env)
        fan_out = len(srv.requests())
        endpoints = srv.branches(pid)["main"]["endpoints"]

        main_id = srv.branches(pid)["main"]["id"]
        ep_id = json.loads(run(["curl", "-sS", "-f", "-H", f"Authorization: Bearer {srv.key}",
                                f"{srv.api_url}/projects/{pid}/branches/{main_id}/endpoints"]).stdout)
        ep_id = ep_id["endpoints"][0]["id"]
        urls = [f"{srv.api_url}/projects/{pid}/connection_uri?branch_id={main_id}&endpoint_id={ep_id}"
                f"&database_name={db}&role_name={project['role']}" for db in dbs]
        curl = ["curl", "-sS", "-f", "-o", "/dev/null", "-H", f"Authorization: Bearer {srv.key}"]
        run(curl + [urls[0]])

        def curls():
            for u in urls:
                subprocess.run(curl + [u], check=True)

        t_status = timed(lambda: run([tether, "status"], cwd=root, env=env), runs=10)
        t_curls = timed(curls, runs=10)
        srv.clear_requests()
        say(f"    fixture: {OBJECTS} neon objects, {OBJECTS} databases of one project on the fake Neon API "
            f"(tests/e2e/neonfake.py), branch main a real Postgres 15 cluster")
        say(f"    tether status, end to end               {fmt(t_status)}")
        say(f"    {OBJECTS} sequential curl connection_uri calls {fmt(t_curls)}")
        say(f"    one status made {fan_out} API requests for {OBJECTS} objects; read_write endpoints on main: "
            f"{len(endpoints)} (shared)")
        say(f"    ratio {t_status['mean'] / t_curls['mean']:.2f}x (no target: the issue asks for the figures)")
        print(json.dumps({"status": t_status, "curls": t_curls, "objects": OBJECTS, "requests": fan_out,
                          "endpoints": len(endpoints)}))
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
