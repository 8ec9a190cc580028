"""The iceberg backend on a warehouse in S3: pyiceberg's SqlCatalog (SQLite,
and Postgres from tests/e2e/dbservers.py) whose warehouse is
s3://BUCKET/warehouse on SeaweedFS (tests/e2e/s3servers.py, the server that
checks signatures). pyiceberg writes the tables through pyarrow's S3
FileIO; tether reads and writes their metadata through its S3 store
module, with credentials from secrets.toml's [uris."s3://BUCKET"] or AWS's
variables, never from the catalog's own properties.

test_lifecycle.py's checks run on S3 too, through
lifecycle_adapters.IcebergSqliteS3 (iceberg-sql-s3, SQLite); this file
holds a walk through one table on Postgres and S3 (promote included) and
what S3 adds: a metadata file or manifest list gone from the bucket,
credentials that are wrong or missing, the keys of one bucket's entry sent
to no other host, and Hadoop's s3a:// spelling of locations."""
import http.server
import json
import sqlite3
import threading

import iceberg_oracle as ib
import test_iceberg
from test_git_backend import gds, jj_problem  # noqa: F401
from test_iceberg import add, add_and_pin, catalog_secrets, tether_refs


def creds_entry(srv, bucket, secret=None):
    """secrets.toml's [uris."s3://bucket"]: the endpoint, keys and region."""
    return (f'[uris."s3://{bucket}"]\nendpoint_url = "{srv.endpoint}"\naccess_key_id = "{srv.access_key}"\n'
            f'secret_access_key = "{secret or srv.secret}"\nregion = "{srv.region}"\nallow_http = true\n'
            'force_path_style = true\n')


def no_aws_env(ds, srv):
    """The dataset's environment without AWS credentials, and AWS's config
    files empty (the server's), so only secrets.toml gives keys."""
    env = srv.env(ds.env)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        env.pop(k, None)
    return env


def configure(ds, cat, s3_secrets):
    """test_iceberg's configure, with s3_secrets (the [uris] entries) after
    the catalog's secrets."""
    test_iceberg.configure(ds, cat, catalog_secrets(cat) + "\n" + s3_secrets)


def write_secrets(ds, cat, s3_secrets):
    ds.write(".tether/secrets.toml", catalog_secrets(cat) + "\n" + s3_secrets)


def s3_catalog(tmp_path, srv, db="sqlite", request=None):
    bucket = srv.bucket("iceberg")
    base = ib.sqlite_catalog(tmp_path) if db == "sqlite" else \
        ib.postgres_catalog(request.getfixturevalue("postgres_server"), tmp_path)
    return ib.on_s3(base, srv, bucket), bucket


def metadata_key(cat, identifier="ns.t"):
    loc = ib.load(cat, identifier).metadata_location
    assert loc.startswith(f"s3://{cat['warehouse'][5:].split('/')[0]}/"), loc
    return loc, loc[5:].split("/", 1)[1]


def set_row(cat, location):
    """The SQLite catalog's row for the table moved to location, as a
    writer (or a hostile row) would leave it."""
    db = sqlite3.connect(cat["uri"][len("sqlite:///"):])
    db.execute("UPDATE iceberg_tables SET metadata_location = ?", (location,))
    db.commit()
    db.close()


def rewrite_metadata(cat, srv, bucket, edit, serial, scheme="s3"):
    """The table's metadata as edit(md) leaves it, put beside the current
    file as its 00002 (serial in the uuid) and the row moved to it, spelt
    scheme://; its key."""
    _, key = metadata_key(cat)
    s3 = srv.client()
    md = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    edit(md)
    new = key.rsplit("/", 1)[0] + f"/00002-0a0b0c0d-0000-4000-8000-{serial:012d}.metadata.json"
    s3.put_object(Bucket=bucket, Key=new, Body=json.dumps(md).encode())
    set_row(cat, f"{scheme}://{bucket}/{new}")
    return new


def test_pin_fork_write_promote_gc_on_postgres_and_s3(gds, seaweedfs_server, tmp_path, request):
    """The walk on a Postgres catalog with the keys in secrets.toml only
    (lifecycle_adapters.IcebergSqliteS3 walks SQLite with AWS's variables)."""
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv, "postgres", request)
    ib.create_table(cat, "ns.t", rows=5)
    gds.env = no_aws_env(gds, srv)
    configure(gds, cat, creds_entry(srv, bucket))
    s1, tag1 = add_and_pin(gds, cat)
    # The metadata file tether wrote is in the bucket, beside pyiceberg's.
    loc, key = metadata_key(cat)
    assert loc.startswith(cat["warehouse"] + "/ns/t/metadata/") and loc.endswith(".metadata.json")
    body = json.loads(srv.client().get_object(Bucket=bucket, Key=key)["Body"].read())
    assert body["refs"][tag1] == {"snapshot-id": s1, "type": "tag"}
    assert ib.rows_at(cat, "ns.t", ib.refs(cat)[tag1][0]) == 5

    gds.tether("new", "-b", "feat")
    [fork] = [n for n in tether_refs(cat) if n.startswith("tether.ws.")]
    assert ib.refs(cat)[fork] == (s1, "branch")
    s2 = ib.append(cat, "ns.t", 3, branch=fork, start=100)
    assert ib.head(cat) == s1
    r = gds.tj("commit", "-m", "on the fork")
    assert [o["action"] for o in r["objects"]] == ["pinned"]
    assert gds.manifest("tbl")["state"] == {"snapshot_id": s2}
    tag2 = gds.manifest("tbl")["pin_ref"]["tag"]
    assert ib.rows_at(cat, "ns.t", ib.refs(cat)[tag2][0]) == 8

    d = gds.tj("diff", "--content", "HEAD~1", "HEAD")
    [o] = d["objects"]
    assert [e["text"] for e in o["content"]["entries"]] == ["append: +3 rows, +1 files"]
    log = gds.tj("log", "tbl")["entries"]
    assert [e["id"] for e in log] == [str(s2), str(s1)]
    v = gds.tj("verify", "--all-history")
    assert v["ok"] is True and v["states"] == 2, v
    assert gds.tj("verify", "--deep")["ok"] is True

    r = gds.tj("promote")
    assert r["objects"][0]["action"] == "promoted", r
    assert ib.head(cat) == s2 and ib.rows_at(cat, "ns.t", s2) == 8

    # gc: the fork's commit dropped, its pin is released and only it.
    gds.git("reset", "-q", "--hard", "HEAD~1")
    gds.git("reflog", "expire", "--expire=now", "--all")
    r = gds.tj("gc", "--no-dry-run")
    assert r["errors"] == [] and [(x["pin_ref"]["tag"], x["done"]) for x in r["release"]] == [(tag2, True)], r
    assert set(tether_refs(cat)) - {fork} == {tag1}
    assert ib.head(cat) == s2


def test_a_metadata_file_gone_from_the_bucket_is_named(gds, seaweedfs_server, tmp_path):
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv)
    ib.create_table(cat, "ns.t", rows=2)
    gds.env = no_aws_env(gds, srv)
    configure(gds, cat, creds_entry(srv, bucket))
    head, _ = add_and_pin(gds, cat)
    loc, key = metadata_key(cat)
    # The pinned snapshot's manifest list gone: verify --deep names it.
    mlist = ib.load(cat).snapshot_by_id(head).manifest_list
    assert mlist.startswith(f"s3://{bucket}/"), mlist
    srv.client().delete_object(Bucket=bucket, Key=mlist.split("/", 3)[3])
    assert gds.tj("verify")["ok"] is True
    p = gds.tether("verify", "--deep", check_rc=3)
    assert f"its manifest list {mlist} is missing" in p.stdout, p.stdout

    srv.client().delete_object(Bucket=bucket, Key=key)
    p = gds.tether("verify", check_rc=3)
    [line] = [x for x in p.stdout.splitlines() if x.startswith("FAILED")]
    assert line.startswith("FAILED tbl: ") and loc in line and line.endswith(" is missing"), p.stdout
    missing = f"table ns.t: its metadata file {loc} is missing"
    p = gds.tj("status", check_rc=1)
    [o] = p["objects"]
    assert o["status"] == "error" and o["detail"].endswith(missing), o
    for cmd in (["commit", "-m", "x"], ["log", "tbl"]):
        p = gds.tether(*cmd, check_rc=1)
        [line] = p.stderr.splitlines()
        assert line.startswith("tether: error: ") and line.endswith(missing), p.stderr


def test_wrong_and_missing_credentials_name_the_uri_and_what_s3_said(gds, seaweedfs_server, tmp_path):
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv)
    ib.create_table(cat, "ns.t", rows=2)
    gds.env = no_aws_env(gds, srv)
    configure(gds, cat, creds_entry(srv, bucket, secret="not-the-secret"))
    loc, _ = metadata_key(cat)
    p = add(gds, "tbl", "ns.t", check_rc=None)
    assert p.returncode == 1, (p.returncode, p.stderr)
    [line] = [x for x in p.stderr.splitlines() if x.startswith("tether:")]
    assert line.startswith("tether: error: iceberg catalog 'default' (") and "table ns.t: " + loc in line, p.stderr
    assert "403 SignatureDoesNotMatch" in line, p.stderr
    assert "not-the-secret" not in p.stderr
    assert gds.tether("status", check_rc=None).stdout.count("tbl") == 0

    # No keys at all: the entry has the endpoint only, the environment none.
    configure_entry = (f'[uris."s3://{bucket}"]\nendpoint_url = "{srv.endpoint}"\nregion = "{srv.region}"\n'
                       'allow_http = true\nforce_path_style = true\n')
    write_secrets(gds, cat, configure_entry)
    p = add(gds, "tbl", "ns.t", check_rc=None)
    assert p.returncode == 1, (p.returncode, p.stderr)
    [line] = [x for x in p.stderr.splitlines() if x.startswith("tether:")]
    assert "table ns.t: " + loc in line and "no AWS credentials found" in line, p.stderr


def test_a_refused_metadata_write_changes_nothing(gds, seaweedfs_server, tmp_path):
    """The table's write.metadata.path is a prefix whose own entry has a
    wrong key: add reads the table, the commit's write is refused, named,
    and the catalog row, the refs and the prefix are as they were."""
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv)
    ib.create_table(cat, "ns.t", rows=2)
    moved = rewrite_metadata(cat, srv, bucket, lambda md: md.setdefault("properties", {}).update(
        {"write.metadata.path": f"s3://{bucket}/ro-meta/"}), 2)
    gds.env = no_aws_env(gds, srv)
    wrong = creds_entry(srv, bucket, secret="not-the-secret").replace(f's3://{bucket}"', f's3://{bucket}/ro-meta"')
    configure(gds, cat, creds_entry(srv, bucket) + "\n" + wrong)
    add(gds, "tbl", "ns.t")
    p = gds.tether("commit", "-m", "pin", check_rc=1)
    [line] = [x for x in p.stderr.splitlines() if x.startswith("tether:")]
    assert f"table ns.t: writing its next metadata file: s3://{bucket}/ro-meta/00003-" in line, p.stderr
    assert "403 SignatureDoesNotMatch" in line, p.stderr
    assert ib.load(cat).metadata_location == f"s3://{bucket}/{moved}" and tether_refs(cat) == {}
    assert "Contents" not in srv.client().list_objects_v2(Bucket=bucket, Prefix="ro-meta/")


class Recorder(http.server.BaseHTTPRequestHandler):
    """An HTTP server that records each request's headers and answers 403."""
    seen = []

    def do_GET(self):
        Recorder.seen.append(dict(self.headers))
        body = b"<Error><Code>AccessDenied</Code><Message>recorder</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *a):
        pass


def test_a_bucket_without_its_own_entry_gets_no_keys(gds, seaweedfs_server, tmp_path):
    """The catalog row names a metadata file in another bucket (a hostile
    or mistaken row) whose name starts with the warehouse bucket's: that
    bucket is reached with its own options only (an entry applies a whole
    segment at a time), so the keys of the warehouse bucket's entry are not
    sent to its host."""
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv)
    ib.create_table(cat, "ns.t", rows=2)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        other = f"http://127.0.0.1:{httpd.server_address[1]}"
        elsewhere = f"s3://{bucket}-other"
        gds.env = no_aws_env(gds, srv)
        configure(gds, cat, creds_entry(srv, bucket) +
                  f'\n[uris."{elsewhere}"]\nendpoint_url = "{other}"\nallow_http = true\nforce_path_style = true\n')
        _, key = metadata_key(cat)
        set_row(cat, f"{elsewhere}/{key}")
        Recorder.seen.clear()
        p = add(gds, "tbl", "ns.t", check_rc=1)
        [line] = p.stderr.splitlines()
        assert f"table ns.t: {elsewhere}/{key.rsplit('/', 1)[0]}" in line, p.stderr
        assert "no AWS credentials found" in line, p.stderr
        # Nothing asked the other host with this bucket's keys.
        assert not any(srv.access_key in json.dumps(h) for h in Recorder.seen), Recorder.seen

        # With keys of its own in its entry, those (and only those) go there.
        write_secrets(gds, cat, creds_entry(srv, bucket) +
                      f'\n[uris."{elsewhere}"]\nendpoint_url = "{other}"\nallow_http = true\nforce_path_style = true\n'
                      'access_key_id = "OTHERKEY"\nsecret_access_key = "other-secret"\n')
        p = add(gds, "tbl", "ns.t", check_rc=1)
        [line] = p.stderr.splitlines()
        assert f"{elsewhere}/" in line and "AccessDenied" in line, p.stderr
        assert Recorder.seen and all("OTHERKEY" in h.get("Authorization", "") for h in Recorder.seen), Recorder.seen
        assert not any(srv.access_key in json.dumps(h) for h in Recorder.seen), Recorder.seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_hadoop_s3a_locations_are_read_and_kept(gds, seaweedfs_server, tmp_path):
    """Spark and Java's HadoopFileIO write s3a:// into the catalog row and
    the table's location: tether reads them as s3:// (with the bucket's
    s3:// entry) and writes the next metadata file in the same spelling,
    in <location>/metadata however many slashes the location ends in."""
    srv = seaweedfs_server
    cat, bucket = s3_catalog(tmp_path, srv)
    ib.create_table(cat, "ns.t", rows=3)
    # s3a:// and a trailing slash on the location, as some writers leave.
    hadoop_key = rewrite_metadata(cat, srv, bucket, lambda md: md.update(location="s3a" + md["location"][2:] + "/"),
                                  1, scheme="s3a")
    s3 = srv.client()
    gds.env = no_aws_env(gds, srv)
    configure(gds, cat, creds_entry(srv, bucket))
    add(gds, "tbl", "ns.t")
    gds.tether("commit", "-m", "on s3a")
    tag = gds.manifest("tbl")["pin_ref"]["tag"]
    after = ib.load(cat).metadata_location
    assert after.startswith(f"s3a://{bucket}/warehouse/ns/t/metadata/00003-"), after
    assert json.loads(s3.get_object(Bucket=bucket, Key=after.split("/", 3)[3])["Body"].read())["metadata-log"][-1][
        "metadata-file"] == f"s3a://{bucket}/{hadoop_key}"
    assert ib.rows_at(cat, "ns.t", ib.refs(cat)[tag][0]) == 3
    assert gds.tj("verify", "--deep")["ok"] is True
