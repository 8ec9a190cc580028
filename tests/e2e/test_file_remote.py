"""The file backend on S3 (backends.md, "`file`: local paths and object
stores"): single objects and prefixes, added, checked, committed, changed
with boto3 behind tether's back, diffed, verified and opened, against real
S3 servers (tests/e2e/s3servers.py: each test runs against SeaweedFS and
against moto). The same flows run in-process against the memtest store in
tests/unit/test_file_remote.c."""
import json

import pytest

from s3servers import free_ports


def by_key(report):
    return {o["key"]: o for o in report["objects"]}


@pytest.fixture
def s3ds(ds, s3_server):
    """ds reaching s3_server as AWS's tools do (the endpoint and keys in
    the environment), with allow_http for the server's plain http:// in
    .tether/secrets.toml, never committed."""
    ds.env = s3_server.env(ds.env)
    ds.srv = s3_server
    ds.s3 = s3_server.client()
    return ds


def allow_http(ds, *buckets, extra=""):
    text = "".join(f'[uris."s3://{b}"]\nallow_http = true\nforce_path_style = true\n\n' for b in buckets)
    ds.write(".tether/secrets.toml", text + extra)


def put(ds, bucket, key, body):
    return ds.s3.put_object(Bucket=bucket, Key=key, Body=body)


def test_objects_and_prefixes_from_add_to_diff(s3ds):
    ds = s3ds
    b = ds.srv.bucket("files")
    allow_http(ds, b)
    put(ds, b, "raw/plate1/a.csv", b"well,value\nA1,0.1\n")
    put(ds, b, "raw/plate1/b.csv", b"well,value\nB1,0.2\n")
    put(ds, b, "raw/plate10/other.csv", b"not under plate1/\n")
    etag = put(ds, b, "ref/genome.fa", b">chr1\nACGT\n")["ETag"]

    r = ds.tj("add", "raw/plate1", f"s3://{b}/raw/plate1/", "--kind", "file")
    assert r["tier"] == "observed" and r["locator"] == {"uri": f"s3://{b}/raw/plate1/"}
    ds.tether("add", "genome", f"s3://{b}/ref/genome.fa", "--kind", "file")
    st = by_key(ds.tj("status"))
    cur = st["raw/plate1"]["current"]
    assert cur["type"] == "prefix" and cur["count"] == 2 and cur["size"] == 36 and len(cur["digest"]) == 64
    assert st["genome"]["current"] == {"type": "object", "size": 11, "etag": etag}

    ds.tether("commit", "-m", "first")
    assert ds.tj("status")["clean"] is True
    # The prefix's listing is stored: one line per key, its ETag the token.
    listings = list((ds.root / ".tether" / "listings").glob("*.jsonl"))
    lines = [json.loads(l) for f in listings for l in f.read_text().splitlines()]
    assert {(l["p"], l["s"]) for l in lines} == {("a.csv", 18), ("b.csv", 18)}

    # Changed behind tether's back: an immutable object's drift is refused.
    new_etag = put(ds, b, "ref/genome.fa", b">chr1\nACGTACGT\n")["ETag"]
    st = by_key(ds.tj("status", check_rc=3))
    assert st["genome"]["status"] == "drifted"
    assert f"etag {etag} → {new_etag}" in st["genome"]["detail"] and "size 11 → 15" in st["genome"]["detail"]
    p = ds.tether("commit", "-m", "drift", check_rc=3)
    assert "genome" in p.stderr and "immutable data changed" in p.stderr
    put(ds, b, "ref/genome.fa", b">chr1\nACGT\n")  # restored: the same bytes, the same ETag
    assert by_key(ds.tj("status"))["genome"]["status"] == "clean"

    # The prefix, mutable: one key modified, one removed, one added.
    (ds.root / ".tether" / "objects" / "raw" / "plate1.toml").unlink()
    ds.tether("add", "raw/plate1", f"s3://{b}/raw/plate1/", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "mutable")
    put(ds, b, "raw/plate1/a.csv", b"well,value\nA1,0.9\nA2,0.8\n")
    ds.s3.delete_object(Bucket=b, Key="raw/plate1/b.csv")
    put(ds, b, "raw/plate1/sub/c.csv", b"c\n")
    st = by_key(ds.tj("status"))
    assert st["raw/plate1"]["status"] == "modified" and st["raw/plate1"]["current"]["count"] == 2
    ds.tether("commit", "-m", "second")
    d = ds.tj("diff", "HEAD~1", "HEAD", "--content")
    content = by_key(d)["raw/plate1"]["content"]
    changes = {e["path"]: e["change"] for e in content["entries"]}
    assert changes == {"a.csv": "modified", "b.csv": "removed", "sub/c.csv": "added"}
    assert content["totals"]["added"] == 1 and content["totals"]["removed"] == 1

    log = ds.tj("log")
    assert [c["summary"] for c in log["commits"]][:3] == ["second", "mutable", "first"]
    v = ds.tj("verify")
    assert v["ok"] is True, v


def test_a_versioned_object_opens_at_its_version(s3ds):
    ds = s3ds
    b = ds.srv.bucket("versioned", versioned=True)
    allow_http(ds, b)
    v1 = put(ds, b, "models/m.bin", b"weights-1")["VersionId"]
    r = ds.tj("add", "model", f"s3://{b}/models/m.bin", "--kind", "file", "--file", "versioned")
    assert r["tier"] == "addressable"
    ds.tether("commit", "-m", "v1")
    first = ds.head()
    assert ds.manifest("model")["state"]["version_id"] == v1
    v2 = put(ds, b, "models/m.bin", b"weights-2, longer")["VersionId"]
    st = by_key(ds.tj("status"))["model"]
    assert st["status"] == "modified"  # a new version is recorded, not drift
    assert f"version {v1} → {v2}" in st["detail"]
    ds.tether("commit", "-m", "v2")
    content = by_key(ds.tj("diff", "HEAD~1", "HEAD", "--content"))["model"]["content"]
    assert [(e["path"], e["change"]) for e in content["entries"]] == [("m.bin", "modified")]
    assert f"version {v1} → {v2}" in content["summary"] and "size 9 → 17" in content["summary"]

    h = ds.tj("open", "model", "-r", first)
    assert h["uri"] == f"s3://{b}/models/m.bin" and h["version_id"] == v1 and h["read_only"] is True
    assert ds.s3.get_object(Bucket=b, Key="models/m.bin", VersionId=h["version_id"])["Body"].read() == b"weights-1"
    assert ds.tj("open", "model", "-r", "HEAD")["version_id"] == v2
    # Its past states are held while the bucket keeps their versions.
    v = ds.tj("verify", "--all-history")
    assert v["ok"] is True, v
    ds.s3.delete_object(Bucket=b, Key="models/m.bin", VersionId=v1)
    v = ds.tj("verify", "--all-history", check_rc=3)
    gone = [o for o in v["objects"] if not o["ok"]]
    assert len(gone) == 1 and v1 in gone[0]["detail"]


def test_open_refuses_a_versioned_state_without_a_version_id(s3ds):
    ds = s3ds
    b = ds.srv.bucket("unversioned")
    allow_http(ds, b)
    put(ds, b, "m.bin", b"weights")
    ds.tether("add", "model", f"s3://{b}/m.bin", "--kind", "file", "--file", "versioned")
    ds.tether("commit", "-m", "no versioning on the bucket")
    assert "version_id" not in ds.manifest("model")["state"]
    p = ds.tether("open", "model", "-r", "HEAD", check_rc=3)
    assert "no version id" in p.stderr and f"s3://{b}/m.bin" in p.stderr


def test_an_unreachable_store_hides_no_other_object(s3ds):
    ds = s3ds
    b = ds.srv.bucket("reach")
    put(ds, b, "a.csv", b"a\n")
    put(ds, b, "b.csv", b"b\n")
    allow_http(ds, b)
    ds.tether("add", "good", f"s3://{b}/a.csv", "--kind", "file")
    ds.tether("add", "bad", f"s3://{b}/b.csv", "--kind", "file")
    ds.tether("commit", "-m", "both")
    head = ds.head()
    # Only `bad` is sent to a port nothing listens on.
    (port,) = free_ports(1)
    allow_http(ds, b, extra=f'[objects."bad"]\nendpoint_url = "http://127.0.0.1:{port}"\n')
    p = ds.tether("status", "--json", check_rc=1)
    st = by_key(json.loads(p.stdout))
    assert st["bad"]["status"] == "unreachable" and st["bad"]["current"] is None
    assert "bad: " in st["bad"]["detail"] and f"127.0.0.1:{port}" in st["bad"]["detail"]
    assert st["good"]["status"] == "clean"
    assert "1 object could not be checked" in p.stderr
    p = ds.tether("status", check_rc=1)
    assert any(line.split()[:2] == ["unreachable", "bad"] for line in p.stdout.splitlines()), p.stdout
    p = ds.tether("commit", "-m", "cannot", check_rc=1)
    assert "bad" in p.stderr
    assert ds.head() == head


def test_bad_inputs_are_refused_naming_them(s3ds):
    ds = s3ds
    b = ds.srv.bucket("bad")
    allow_http(ds, b, f"{b}-missing")
    put(ds, b, "raw/x.csv", b"x\n")
    # versioned is for single objects.
    p = ds.tether("add", "p", f"s3://{b}/raw/", "--kind", "file", "--file", "versioned", check_rc=2)
    assert "is a prefix" in p.stderr
    # No object there; a prefix written without its '/' is named.
    p = ds.tether("add", "p", f"s3://{b}/raw", "--kind", "file", check_rc=1)
    assert f"no object at s3://{b}/raw" in p.stderr and f"s3://{b}/raw/" in p.stderr
    # A missing bucket: the server's code, and the URI.
    p = ds.tether("add", "p", f"s3://{b}-missing/raw/", "--kind", "file", check_rc=1)
    assert f"{b}-missing" in p.stderr
    assert ds.objects_files() == []
    ds.tether("add", "x", f"s3://{b}/raw/x.csv", "--kind", "file")
    ds.tether("commit", "-m", "x")
    # Committed storage_options: only the four that say nothing secret.
    cfg = ds.root / "tether.toml"
    base = cfg.read_text()
    cfg.write_text(base + '\n[backends.file]\nstorage_options = { endpoint_url = "http://127.0.0.1:1" }\n')
    p = ds.tether("status", check_rc=3)
    assert "storage_options.endpoint_url must not be committed" in p.stderr
    cfg.write_text(base + '\n[backends.file]\nstorage_options = { colour = "blue" }\n')
    p = ds.tether("status", check_rc=1)
    assert "unknown store option 'colour'" in p.stderr
    cfg.write_text(base + '\n[backends.file]\nstorage_options = { region = "us-east-1", allow_http = true }\n')
    assert by_key(ds.tj("status"))["x"]["status"] == "clean"  # (tether.toml itself is a pending change)
    # An unknown key in the object's secrets.
    cfg.write_text(base)
    allow_http(ds, b, f"{b}-missing", extra='[objects."x"]\npasword = "typo"\n')
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and "pasword" in p.stderr


def test_bad_locators_are_refused_naming_them(s3ds):
    """--region's misuses and a URI without a bucket are refused at add,
    writing nothing; a committed locator whose uri is not the form tether
    records (a clone's) is refused by status, naming both forms."""
    ds = s3ds
    b = ds.srv.bucket("badloc")
    allow_http(ds, b)
    put(ds, b, "raw/x.csv", b"x\n")
    p = ds.tether("add", "x", f"s3://{b}/raw/x.csv", "--kind", "file", "--region", "", check_rc=2)
    assert "--region takes a region's name" in p.stderr
    ds.write("local.csv", "local\n")
    p = ds.tether("add", "l", "local.csv", "--kind", "file", "--region", "us-east-1", check_rc=2)
    assert "--region is for an object store's URI" in p.stderr and "local.csv" in p.stderr
    p = ds.tether("add", "n", "s3:///raw/x.csv", "--kind", "file", check_rc=None)
    assert p.returncode != 0 and "s3:///raw/x.csv" in p.stderr
    assert ds.objects_files() == []

    ds.tether("add", "x", f"s3://{b}/raw/x.csv", "--kind", "file")
    ds.tether("commit", "-m", "x")
    manifest = ds.root / ".tether" / "objects" / "x.toml"
    text = manifest.read_text()
    assert f'"s3://{b}/raw/x.csv"' in text
    manifest.write_text(text.replace(f'"s3://{b}/raw/x.csv"', f'"s3://{b}//raw/x.csv"'))
    ds.git("commit", "-qam", "a clone's locator")
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0
    assert "is not in the form tether records" in p.stdout + p.stderr
    assert f"s3://{b}/raw/x.csv" in p.stdout + p.stderr
