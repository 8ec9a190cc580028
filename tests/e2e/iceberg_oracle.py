"""pyiceberg (0.12, pinned in tests/requirements.txt) as the oracle of the
iceberg backend: it makes SQL catalogs (SqlCatalog on SQLite or Postgres),
creates and writes tables, and reads back every ref tether moved.

(rest_catalog: pyiceberg's RestCatalog on the Iceberg REST server of
tests/e2e/icebergrest.py.) A catalog is described by a small dict the tests also turn into tether's
configuration: {"name", "uri", "warehouse"} (uri with the password in it
for pyiceberg's own connection; tether gets the password from
secrets.toml), and for a warehouse on S3 (on_s3) "props", the FileIO
properties pyiceberg needs to reach it."""
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def sqlite_catalog(tmp_path, name="default"):
    wh = tmp_path / "warehouse"
    wh.mkdir(exist_ok=True)
    return {"name": name, "uri": f"sqlite:///{tmp_path / 'catalog.db'}", "warehouse": f"file://{wh}"}


def postgres_catalog(server, tmp_path, name="default"):
    db = server.database("iceberg")
    wh = tmp_path / "warehouse"
    wh.mkdir(exist_ok=True)
    url = f"postgresql+psycopg2://{server.user}:{server.password}@{server.host}:{server.port}/{db}"
    return {"name": name, "uri": url, "warehouse": f"file://{wh}",
            "tether_uri": f"postgresql://{server.user}@{server.host}:{server.port}/{db}",
            "password": server.password}


def s3_props(srv):
    """pyiceberg's FileIO properties for the S3 server srv
    (tests/e2e/s3servers.py): its endpoint, keys and region, path-style."""
    return {"s3.endpoint": srv.endpoint, "s3.access-key-id": srv.access_key,
            "s3.secret-access-key": srv.secret, "s3.region": srv.region,
            "s3.force-virtual-addressing": "false"}


def on_s3(cat, srv, bucket, prefix="warehouse"):
    """cat with its warehouse moved to s3://bucket/prefix on srv; "props"
    are the FileIO properties pyiceberg's catalog is opened with."""
    return {**cat, "warehouse": f"s3://{bucket}/{prefix}", "props": s3_props(srv)}


def rest_catalog(server, name="default"):
    """A catalog on the Iceberg REST server of tests/e2e/icebergrest.py."""
    return {"name": name, "uri": server.uri, "token": server.token, "warehouse": str(server.warehouse)}


def catalog(cat):
    if "token" in cat:
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog(cat["name"], uri=cat["uri"], token=cat["token"])
    return SqlCatalog(cat["name"], uri=cat["uri"], warehouse=cat["warehouse"], **cat.get("props", {}))


def create_table(cat, identifier="ns.t", rows=0):
    c = catalog(cat)
    ns = identifier.rsplit(".", 1)[0]
    c.create_namespace_if_not_exists(ns)
    t = c.create_table(identifier, schema=SCHEMA)
    if rows:
        append(cat, identifier, rows)
    return t


def append(cat, identifier, n, branch="main", start=0):
    """n rows appended on `branch`; the branch's new snapshot id."""
    t = catalog(cat).load_table(identifier)
    data = pa.table({"id": list(range(start, start + n)), "v": [f"r{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)
    t.append(data, branch=branch)
    return refs(cat, identifier)[branch][0]


def load(cat, identifier="ns.t"):
    return catalog(cat).load_table(identifier)


def refs(cat, identifier="ns.t"):
    """{name: (snapshot id, type)} as pyiceberg reads the table."""
    t = load(cat, identifier)
    return {name: (ref.snapshot_id, str(ref.snapshot_ref_type)) for name, ref in t.refs().items()}


def head(cat, identifier="ns.t", branch="main"):
    r = refs(cat, identifier).get(branch)
    return r[0] if r else None


def rows_at(cat, identifier, snapshot_id):
    return load(cat, identifier).scan(snapshot_id=snapshot_id).to_arrow().num_rows
