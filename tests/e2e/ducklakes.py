"""DuckLake catalogs for the tests, made and written by DuckDB itself.

Python `duckdb` 1.5.5 with the ducklake, sqlite, postgres and mysql
extensions from their PyPI packages (tests/requirements.txt), installed
from the package's file and loaded with autoinstall and autoload off, so
nothing is fetched. A catalog is on SQLite, Postgres (postgres_server), MySQL
(mariadb_server) or in a DuckDB file; `Catalog` writes through a fresh
connection per call and closes it, since a DuckDB-file catalog can be
attached by one process at a time and tether runs beside the test.

tether reads a DuckDB-file catalog through libduckdb, which
scripts/install-deps puts in $TETHER_DEPS/lib (TETHER_LIBDUCKDB overrides).
"""
import glob
import os
import sqlite3
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb")

TETHER_DEPS = Path(os.environ.get("TETHER_DEPS", Path.home() / ".local/share/tether-deps"))
LIBDUCKDB = Path(os.environ.get("TETHER_LIBDUCKDB", TETHER_DEPS / "lib" / "libduckdb.so"))
_EXT = {"ducklake": "ducklake", "sqlite": "sqlite_scanner", "postgres": "postgres_scanner",
        "mysql": "mysql_scanner"}


def extension_file(name):
    """The .duckdb_extension file the PyPI package duckdb-extension-<name> ships."""
    import importlib.util
    pkg = importlib.util.find_spec(f"duckdb_extension_{_EXT[name]}")
    if pkg is None:
        pytest.fail(f"duckdb-extension-{_EXT[name]} is not installed (tests/requirements.txt pins it)")
    found = glob.glob(str(Path(pkg.submodule_search_locations[0]) / "extensions" / "*" / "*.duckdb_extension"))
    assert found, f"no extension file in duckdb_extension_{_EXT[name]}"
    return found[0]


def connect(ext_dir, *extensions):
    """An in-memory DuckDB with the extensions installed from their files
    into ext_dir and loaded; nothing fetched, nothing autoloaded."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "extension_directory": str(ext_dir)})
    for name in ("ducklake",) + extensions:
        con.execute(f"INSTALL '{extension_file(name)}'")
        con.execute(f"LOAD {_EXT[name]}")
    return con


def need_libduckdb():
    if not LIBDUCKDB.exists():
        pytest.skip(f"no libduckdb at {LIBDUCKDB} (scripts/install-deps fetches it)")
    return {"TETHER_LIBDUCKDB": str(LIBDUCKDB)}


class Catalog:
    """One DuckLake catalog. `uri` is what tether is given (no password),
    `writer` what the test's DuckDB attaches (with it), `secrets` the
    [objects."<key>"] table tether needs, `env` the environment."""

    def __init__(self, kind, tmp_path, uri, writer, extension, secrets=None, env=None, path=None):
        self.kind = kind
        self.uri = uri
        self.writer = writer
        self.extension = extension
        self.secrets = secrets
        self.env = env or {}
        self.path = path
        self.data = tmp_path / f"data-{kind}"
        self.data.mkdir(exist_ok=True)
        self.ext_dir = tmp_path / "duckdb-ext"
        self.ext_dir.mkdir(exist_ok=True)

    def _con(self):
        con = connect(self.ext_dir, *([self.extension] if self.extension else []))
        con.execute(f"ATTACH '{self.writer}' AS l (DATA_PATH '{self.data}/')")
        return con

    def write(self, *statements):
        """Run statements on the catalog (attached as `l`), then detach."""
        con = self._con()
        try:
            for s in statements:
                con.execute(s)
        finally:
            con.close()

    def query(self, sql):
        con = self._con()
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def snapshots(self):
        """[(snapshot_id, epoch microseconds)] by DuckDB's ducklake_snapshots."""
        return self.query("SELECT snapshot_id, epoch_us(snapshot_time) FROM ducklake_snapshots('l') "
                          "ORDER BY snapshot_id")

    def latest(self):
        return self.snapshots()[-1]

    def secrets_toml(self, key):
        if not self.secrets:
            return ""
        lines = [f'[objects."{key}"]']
        for k, v in self.secrets.items():
            lines.append(f'{k} = "{v}"')
        return "\n".join(lines) + "\n"


def sqlite_catalog(tmp_path, name="cat"):
    path = tmp_path / f"{name}.sqlite"
    return Catalog("sqlite", tmp_path, f"ducklake:sqlite:{path}", f"ducklake:sqlite:{path}", "sqlite", path=path)


def duckdb_catalog(tmp_path, name="cat"):
    env = need_libduckdb()
    path = tmp_path / f"{name}.ducklake"
    return Catalog("duckdb", tmp_path, f"ducklake:{path}", f"ducklake:{path}", None, env=env, path=path)


def server_catalog(kind, tmp_path, server, name="lake"):
    """A catalog in a new database of a test server: kind "postgres"
    (postgres_server) or "mysql" (mariadb_server)."""
    db = server.database(name)
    conn = f"{'dbname' if kind == 'postgres' else 'database'}={db} host={server.host} port={server.port} " \
           f"user={server.user}"
    return Catalog(kind, tmp_path, f"ducklake:{kind}:{conn}", f"ducklake:{kind}:{conn} password={server.password}",
                   kind, secrets={"server": f"{server.host}:{server.port}", "password": server.password})


def set_version(cat, version):
    """Rewrite a SQLite catalog's DuckLake version, as a newer writer would."""
    with sqlite3.connect(cat.path) as db:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'version' AND scope IS NULL", (version,))
