"""Benchmark 17 of bench/run: `tether export` of COMMITS commits x OBJECTS
objects, to SQLite and to Parquet, each beside its reference in the same
run: the same rows (the export's own CSV tables) loaded into SQLite by the
`sqlite3` command-line tool (`.import --csv` into the same tables, made
first), and written to Parquet (zstd) by DuckDB's COPY in-process (python
duckdb, connection made beforehand). Targets: ratio <= 1.0 each. Runs in
the tests' .venv (duckdb).

    export.py TETHER WORKDIR [COMMITS OBJECTS]   (default 2000 20)

The dataset: OBJECTS single files (kind file) and COMMITS real `tether
commit`s, each changing one file round robin (so the objects table has
COMMITS x OBJECTS rows). tether's history walk keeps a cache of what it
read (beside the journal, as gc's does); the runs after the first find it
warm, so the SQLite export is also timed with that cache removed before
each run (cold), and each export's peak memory is reported. Prints its
report lines, then one JSON line (the figures) last."""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import fmt, say, stats, timed  # noqa: E402


def run(args, cwd=None, env=None):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def build(tether, base, ncommits, nobjects):
    repo = os.path.join(base, "dataset")
    if os.path.exists(os.path.join(repo, ".done")):
        return repo
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(repo, "data"))
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org")
    run(["git", "init", "-q", "-b", "main", repo], env=env)
    run([tether, "init"], cwd=repo, env=env)
    for j in range(nobjects):
        with open(os.path.join(repo, "data", f"f{j}.csv"), "w") as f:
            f.write(f"object {j} version 0\n")
        run([tether, "add", f"o{j}", f"data/f{j}.csv", "--kind", "file", "--file", "mutable"], cwd=repo, env=env)
    for i in range(ncommits):
        j = i % nobjects
        with open(os.path.join(repo, "data", f"f{j}.csv"), "w") as f:
            f.write(f"object {j} version {i + 1}\n")
        run([tether, "commit", "-m", f"step {i + 1}: o{j}"], cwd=repo, env=env)
    run(["git", "-C", repo, "gc", "-q"])
    open(os.path.join(repo, ".done"), "w").close()
    return repo


def peak_rss_kib(args, cwd):
    """Run args once under GNU time; its peak resident set (KiB). (Not wait4
    from here: a child spawned by this Python, duckdb loaded, carries this
    process's resident size into its own maximum at exec.)"""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return int(p.stderr.strip().splitlines()[-1])


def timed_cold(fn, repo, runs):
    """fn timed `runs` times, the history-walk cache removed before each."""
    out = []
    for _ in range(runs):
        for c in glob.glob(os.path.join(repo, ".git", "tether", "cache", "*", "history-walk")):
            os.unlink(c)
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return stats(out)


SQL_TYPES = {"TEXT": "TEXT", "INTEGER": "INTEGER", "BOOLEAN": "BOOLEAN"}


def main(argv):
    tether, workdir = argv[1], argv[2]
    ncommits = int(argv[3]) if len(argv) > 3 else 2000
    nobjects = int(argv[4]) if len(argv) > 4 else 20
    runs = 5 if ncommits >= 1000 else 10
    import duckdb
    base = os.path.join(workdir, f"export-{ncommits}x{nobjects}")
    t0 = time.time()
    repo = build(tether, base, ncommits, nobjects)
    say(f"    dataset of {ncommits:,} commits x {nobjects} objects built in {time.time() - t0:.1f} s")
    out = os.path.join(base, "out")
    os.makedirs(out, exist_ok=True)

    # the rows both references load: the export's own CSV tables, and the
    # schema: the SQLite export's CREATE TABLE statements
    csv_dir = os.path.join(out, "rows.csv")
    run([tether, "export", csv_dir], cwd=repo)
    run([tether, "export", os.path.join(out, "schema.sqlite")], cwd=repo)
    schema = run(["sqlite3", os.path.join(out, "schema.sqlite"), ".schema"]).stdout
    tables = sorted(n[:-4] for n in os.listdir(csv_dir) if n.endswith(".csv"))
    rows = {}
    for t in tables:
        with open(os.path.join(csv_dir, f"{t}.csv"), newline="", encoding="utf-8") as f:
            rows[t] = sum(1 for _ in csv.reader(f)) - 1
    say(f"    rows: {', '.join(f'{t} {n:,}' for t, n in rows.items())}")

    sqlite_out = os.path.join(out, "t.sqlite")
    parquet_out = os.path.join(out, "t.parquet")
    tether_sqlite = timed(lambda: run([tether, "export", sqlite_out], cwd=repo), runs)
    tether_parquet = timed(lambda: run([tether, "export", parquet_out], cwd=repo), runs)
    tether_sqlite_cold = timed_cold(lambda: run([tether, "export", sqlite_out], cwd=repo), repo, runs)
    rss = {"sqlite": peak_rss_kib([tether, "export", sqlite_out], repo),
           "parquet": peak_rss_kib([tether, "export", parquet_out], repo)}

    # sqlite3 CLI: the same tables created, then each CSV imported
    # (--skip 1: the header), in one transaction as the export writes.
    ref_db = os.path.join(out, "ref.sqlite")
    script = "PRAGMA journal_mode=OFF;\nPRAGMA synchronous=OFF;\nBEGIN;\n" + schema + "\n" + "".join(
        f".import --csv --skip 1 {os.path.join(csv_dir, t + '.csv')} {t}\n" for t in tables) + "COMMIT;\n"

    def sqlite_cli():
        if os.path.exists(ref_db):
            os.unlink(ref_db)
        subprocess.run(["sqlite3", ref_db], input=script, text=True, check=True, capture_output=True)

    ref_sqlite = timed(sqlite_cli, runs)

    con = duckdb.connect()
    ref_pq = os.path.join(out, "ref.parquet")
    os.makedirs(ref_pq, exist_ok=True)

    def duck_copy():
        for t in tables:
            con.execute(f"COPY (SELECT * FROM read_csv('{os.path.join(csv_dir, t + '.csv')}', header=true)) "
                        f"TO '{os.path.join(ref_pq, t + '.parquet')}' (FORMAT parquet, COMPRESSION zstd)")

    ref_duck = timed(duck_copy, runs)
    # the references loaded what tether wrote
    got = {t: con.execute(f"SELECT count(*) FROM '{os.path.join(parquet_out, t + '.parquet')}'").fetchone()[0]
           for t in tables}
    if got != rows:
        sys.exit(f"tether's Parquet holds {got}, the CSV {rows}")
    say(f"    tether export SQLite   {fmt(tether_sqlite)}")
    say(f"    sqlite3 CLI .import    {fmt(ref_sqlite)}  ratio {tether_sqlite['mean'] / ref_sqlite['mean']:.2f}")
    say(f"    tether export SQLite, history-walk cache removed before each run  {fmt(tether_sqlite_cold)}"
        f"  ratio {tether_sqlite_cold['mean'] / ref_sqlite['mean']:.2f}")
    say(f"    tether export Parquet  {fmt(tether_parquet)}")
    say(f"    DuckDB COPY to Parquet {fmt(ref_duck)}  ratio {tether_parquet['mean'] / ref_duck['mean']:.2f}")
    say(f"    tether export peak memory: SQLite {rss['sqlite'] / 1024:.1f} MiB, Parquet {rss['parquet'] / 1024:.1f} MiB")
    print(json.dumps({"commits": ncommits, "objects": nobjects, "rows": rows, "tether_sqlite": tether_sqlite,
                      "sqlite_cli": ref_sqlite, "tether_parquet": tether_parquet, "duckdb_copy": ref_duck,
                      "tether_sqlite_cold": tether_sqlite_cold, "peak_rss_kib": rss}))


if __name__ == "__main__":
    main(sys.argv)
