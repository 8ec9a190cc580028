"""The delta backend, against tables the deltalake library (1.6.6, delta-rs)
makes and writes, on local paths and on S3 (SeaweedFS, tests/e2e/s3servers.py).

tether reads the _delta_log itself (src/backends/delta/): the library is the
oracle for every answer. A table of 250 commits whose early JSON the
library's own log cleanup removed still gives its table id and version (read
from the Parquet checkpoint); `tether log KEY` equals DeltaTable.history()
over the retained range; the version `open -r` names reads back through
DeltaTable(uri, version=v); `diff --content` lists the commits in (a, b];
an overwrite with a new schema is a new version of one table, a table
recreated under the same path verifies as drifted; a version log cleanup
took verifies as no longer readable, explaining the retention bound; an
unknown reader feature (and catalogManaged) is refused by name; a torn
_last_checkpoint, a missing middle commit and a truncated checkpoint are
each refused with one line naming the file, and nothing is written.
"""
import json
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lifecycle_adapters import delta_message
from test_icechunk_s3 import secrets_for

KEY = "events"
# Log cleanup keeps commits younger than this: a second, so a test can
# make the library remove the early JSON without waiting 30 days.
SHORT_RETENTION = {"delta.logRetentionDuration": "interval 1 second", "delta.enableExpiredLogCleanup": "false"}


def rows(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": pa.array([f"r{i}" for i in range(start, start + n)])})


def make_table(uri, commits=3, storage_options=None, configuration=None):
    """A table of `commits` versions, one row appended by each after the
    first (two rows)."""
    write_deltalake(uri, rows(2), configuration=configuration, storage_options=storage_options)
    for i in range(1, commits):
        write_deltalake(uri, rows(1, 100 + i), mode="append", storage_options=storage_options)
    return uri


def log_dir(uri):
    return Path(uri) / "_delta_log"


def commit_file(uri, v):
    return log_dir(uri) / f"{v:020d}.json"


def table_rows(uri, version=None, storage_options=None):
    t = DeltaTable(uri, version=version, storage_options=storage_options).to_pyarrow_table()
    return sorted(t.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


def history_pairs(uri, storage_options=None):
    """(version, operation) of DeltaTable.history(), newest first."""
    return [(h["version"], h["operation"]) for h in DeltaTable(uri, storage_options=storage_options).history()]


@pytest.fixture(scope="module")
def cleaned_template(tmp_path_factory):
    """250 commits, checkpoints at 99 and 199 (the library's own, every
    100), and the library's cleanup_metadata() run with a one-second
    retention: the JSON below the newest checkpoint is gone. Made once;
    each test copies it."""
    uri = str(tmp_path_factory.mktemp("delta") / "cleaned")
    make_table(uri, 250, configuration=SHORT_RETENTION)
    time.sleep(1.5)
    DeltaTable(uri).cleanup_metadata()
    names = sorted(p.name for p in log_dir(uri).iterdir())
    assert "00000000000000000000.json" not in names and "00000000000000000199.checkpoint.parquet" in names
    return uri


@pytest.fixture
def cleaned(cleaned_template, tmp_path):
    uri = tmp_path / "cleaned"
    shutil.copytree(cleaned_template, uri)
    return str(uri)


def add(ds, uri, *extra, key=KEY, check_rc=0):
    return ds.tether("add", key, str(uri), "--kind", "delta", *extra, check_rc=check_rc)


def refused(ds, args, name, rc=None):
    """A command refused with one line that names `name`, nothing written."""
    before = (ds.head(), ds.tree(".tether"))
    p = ds.tether(*args, check_rc=None)
    assert p.returncode != 0 and (rc is None or p.returncode == rc), p.stderr
    errors = [line for line in p.stderr.splitlines() if line.startswith("tether: error:")]
    assert len(errors) == 1 and name in errors[0], p.stderr
    assert (ds.head(), ds.tree(".tether")) == before, "a refused command wrote something"
    return errors[0]


# ---------------------------------------------------------------------------
# A cleaned-up log: the checkpoint gives the table id; history is retained
# ---------------------------------------------------------------------------

def test_cleaned_log_table_id_version_and_history(ds, cleaned):
    dt = DeltaTable(cleaned)
    r = json.loads(add(ds, cleaned, "--json").stdout)
    assert any("RETENTION_BOUND" in w for w in r["warnings"]), r
    assert (r["tier"], set(r["flags"])) == ("addressable", {"CHEAP_FINGERPRINT", "RETENTION_BOUND", "DIFF",
                                                           "HISTORY"})
    st = ds.tj("status")["objects"][0]
    assert st["current"] == {"version": dt.version(), "table_id": dt.metadata().id}
    c = ds.tj("commit", "-m", "cleaned")
    assert [(o["key"], o["action"], o["recoverable"]) for o in c["objects"]] == [(KEY, "recorded", True)]
    assert ds.manifest(KEY)["state"] == {"version": 249, "table_id": dt.metadata().id}
    assert "pin_ref" not in ds.manifest(KEY)

    history = dt.history()
    entries = ds.tj("log", KEY)["entries"]
    assert [(int(e["id"]), e["operation"]) for e in entries] == history_pairs(cleaned)
    assert [e["id"] for e in entries] == [str(v) for v in range(249, 198, -1)], "the retained range"
    for e, h in zip(entries, history):
        assert e["message"] == delta_message(h) and e["time"] == h["timestamp"] // 1000
    assert entries[0]["message"] == "WRITE: +1 rows, +1 files"
    assert entries[0]["refs"] == ["latest"]
    assert [e["id"] for e in ds.tj("log", KEY, "-n", "3")["entries"]] == ["249", "248", "247"]
    text = ds.tether("log", KEY).stdout.splitlines()
    assert text[0].startswith("249 ") and "WRITE: +1 rows, +1 files" in text[0]

    v = ds.tj("verify")
    assert v["ok"] is True


def test_open_reads_back_through_deltatable(ds, cleaned):
    add(ds, cleaned)
    ds.tether("commit", "-m", "at 249")
    at249 = table_rows(cleaned)
    write_deltalake(cleaned, rows(3, 1000), mode="append")
    DeltaTable(cleaned).delete("id = 1000")
    ds.tether("commit", "-m", "at 251")
    assert ds.manifest(KEY)["state"]["version"] == 251

    h = ds.tj("open", KEY, "-r", "HEAD~1")
    assert (h["kind"], h["read_only"], h["version"], h["uri"]) == ("delta", True, 249, cleaned)
    assert table_rows(h["uri"], version=h["version"]) == at249
    h2 = ds.tj("open", KEY, "-r", "HEAD")
    assert h2["version"] == 251 and table_rows(cleaned, version=251) == table_rows(cleaned)
    assert len(table_rows(cleaned, version=251)) == len(at249) + 2

    d = ds.tj("diff", "--content", "HEAD~1", "HEAD")
    content = d["objects"][0]["content"]
    hist = {h["version"]: h for h in DeltaTable(cleaned).history(3)}
    assert content["unit"] == "commits"
    assert [(e["version"], e["detail"]) for e in content["entries"]] == [
        (251, delta_message(hist[251])), (250, delta_message(hist[250]))]
    assert content["entries"][0]["detail"].startswith("DELETE: -1 rows")
    assert content["entries"][1]["detail"] == "WRITE: +3 rows, +1 files"
    assert content["summary"].startswith("2 commits: +3 rows, -1 rows")


def test_add_at_a_retained_version(ds, cleaned):
    r = add(ds, cleaned, "--at", "210", "--json")
    assert json.loads(r.stdout)["locator"]["at"] == "210"
    ds.tether("commit", "-m", "at 210")
    assert ds.manifest(KEY)["state"]["version"] == 210
    h = ds.tj("open", KEY, "-r", "HEAD")
    assert h["version"] == 210 and table_rows(cleaned, version=210) == table_rows(h["uri"], version=210)
    assert [e["id"] for e in ds.tj("log", KEY, "-n", "2")["entries"]] == ["210", "209"]
    # Below the checkpoint the log cleanup kept, and past the latest: refused.
    refused(ds, ["add", "old", cleaned, "--kind", "delta", "--at", "150"], "150", rc=2)
    refused(ds, ["add", "future", cleaned, "--kind", "delta", "--at", "999"], "999", rc=2)
    refused(ds, ["add", "word", cleaned, "--kind", "delta", "--at", "NOSUCHREF"], "NOSUCHREF", rc=2)


# ---------------------------------------------------------------------------
# Retention: a recorded version the log cleanup took
# ---------------------------------------------------------------------------

def test_verify_after_log_cleanup_explains_the_retention_bound(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 3, configuration=SHORT_RETENTION)
    add(ds, uri)
    ds.tether("commit", "-m", "at 2")
    for i in range(3):
        write_deltalake(uri, rows(1, 500 + i), mode="append")
    DeltaTable(uri).create_checkpoint()  # at version 5
    assert ds.tj("verify")["ok"] is True, "nothing cleaned up yet"
    time.sleep(1.5)
    DeltaTable(uri).cleanup_metadata()
    assert not commit_file(uri, 2).exists()
    with pytest.raises(Exception):
        DeltaTable(uri, version=2)  # the library cannot either
    v = ds.tj("verify", check_rc=3)
    detail = v["objects"][0]["detail"]
    assert "version 2" in detail and "can no longer be rebuilt" in detail and "oldest version it can rebuild: 5" \
        in detail and "retention" in detail, detail
    p = ds.tether("open", KEY, "-r", "HEAD", check_rc=None)
    assert p.returncode != 0 and "can no longer be rebuilt" in p.stderr
    # The table itself is fine: its latest version is recorded as usual.
    ds.tether("commit", "-m", "latest")
    assert ds.manifest(KEY)["state"]["version"] == 5
    assert ds.tj("verify")["ok"] is True
    # Every recorded state at once (one listing of the log for both).
    vh = ds.tj("verify", "--all-history", check_rc=3)
    answers = sorted((o["ok"], "can no longer be rebuilt" in (o.get("detail") or "")) for o in vh["objects"])
    assert answers == [(False, True), (True, False)], vh


# ---------------------------------------------------------------------------
# Overwrite with a new schema; a table recreated under the same path
# ---------------------------------------------------------------------------

def test_overwrite_with_a_new_schema_is_a_new_version(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 2)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    table_id = DeltaTable(uri).metadata().id
    write_deltalake(uri, pa.table({"other": ["a", "b", "c"]}), mode="overwrite", schema_mode="overwrite")
    assert DeltaTable(uri).metadata().id == table_id
    assert [(o["key"], o["status"]) for o in ds.tj("status")["objects"]] == [(KEY, "modified")]
    ds.tether("commit", "-m", "two")
    assert ds.manifest(KEY)["state"] == {"version": 2, "table_id": table_id}
    assert ds.tj("verify", "--all-history")["ok"] is True
    h = ds.tj("open", KEY, "-r", "HEAD~1")
    assert set(table_rows(uri, version=h["version"])[0]) == {"id", "name"}
    d = ds.tj("diff", "--content", "HEAD~1", "HEAD")["objects"][0]["content"]
    assert [e["detail"] for e in d["entries"]] == ["WRITE: +3 rows, +1 files, -2 files"]


def test_recreated_table_verifies_as_drifted(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 3)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    old_id = DeltaTable(uri).metadata().id
    shutil.rmtree(uri)
    make_table(uri, 3)
    new_id = DeltaTable(uri).metadata().id
    assert new_id != old_id and DeltaTable(uri).version() == 2
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "modified" and st["current"] == {"version": 2, "table_id": new_id}
    v = ds.tj("verify", check_rc=3)
    detail = v["objects"][0]["detail"]
    assert "drifted" in detail and new_id in detail and old_id in detail, detail
    p = ds.tether("open", KEY, "-r", "HEAD", check_rc=None)
    assert p.returncode != 0 and "drifted" in p.stderr
    d = ds.tj("diff", "--content")["objects"][0]["content"]
    assert "recreated" in d["summary"]


# ---------------------------------------------------------------------------
# The protocol gate
# ---------------------------------------------------------------------------

def add_protocol_commit(uri, protocol):
    """A commit that only raises the protocol, as a writer enabling a
    feature writes one."""
    v = DeltaTable(uri).version() + 1
    commit_file(uri, v).write_text(
        json.dumps({"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}}) + "\n" +
        json.dumps({"protocol": protocol}) + "\n")
    return v


@pytest.mark.parametrize("feature", ["fancyNewFeature", "catalogManaged"])
def test_unknown_reader_feature_is_refused(ds, tmp_path, feature):
    uri = make_table(str(tmp_path / "t"), 2)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    add_protocol_commit(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [feature],
                              "writerFeatures": [feature]})
    with pytest.raises(Exception, match=feature if feature != "catalogManaged" else "catalog-managed"):
        DeltaTable(uri).to_pyarrow_table()  # the library refuses it too
    refused(ds, ["add", "other", uri, "--kind", "delta"], feature)
    st = ds.tj("status", check_rc=3)["objects"][0]
    assert st["status"] == "error" and feature in json.dumps(st), st
    refused(ds, ["commit", "-m", "two"], feature)


def test_known_reader_features_are_read(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 2)
    features = ["columnMapping", "deletionVectors", "timestampNtz", "vacuumProtocolCheck"]
    add_protocol_commit(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                              "writerFeatures": features})
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    assert ds.manifest(KEY)["state"]["version"] == 2


def test_reader_version_above_3_is_refused(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 2)
    add_protocol_commit(uri, {"minReaderVersion": 4, "minWriterVersion": 7})
    refused(ds, ["add", KEY, uri, "--kind", "delta"], "reader version 4")


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_torn_last_checkpoint(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 4)
    DeltaTable(uri).create_checkpoint()
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    write_deltalake(uri, rows(1, 900), mode="append")
    (log_dir(uri) / "_last_checkpoint").write_text('{"version":3,"si')
    line = refused(ds, ["commit", "-m", "two"], "_delta_log/_last_checkpoint")
    assert uri in line
    refused(ds, ["add", "other", uri, "--kind", "delta"], "_delta_log/_last_checkpoint")


def test_missing_middle_commit(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 6)
    commit_file(uri, 3).unlink()
    line = refused(ds, ["add", KEY, uri, "--kind", "delta"], "00000000000000000003.json")
    assert "gap" in line


def test_truncated_checkpoint(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 4, configuration=SHORT_RETENTION)
    DeltaTable(uri).create_checkpoint()
    write_deltalake(uri, rows(1, 900), mode="append")
    time.sleep(1.5)
    DeltaTable(uri).cleanup_metadata()  # the metaData lives in the checkpoint alone now
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    # The checkpoint's protocol and metaData are kept in the checkout's
    # cache, named by its version: the truncated file is another version.
    cached = [json.loads(p.read_text()) for p in ds.p(".tether/cache/delta").glob("*.json")]
    assert [c["metaData"]["id"] for c in cached] == [DeltaTable(uri).metadata().id]
    cp = log_dir(uri) / "00000000000000000003.checkpoint.parquet"
    data = cp.read_bytes()
    cp.write_bytes(data[: len(data) // 2])
    write_deltalake_fails = False
    try:
        DeltaTable(uri)
    except Exception:
        write_deltalake_fails = True
    assert write_deltalake_fails, "the library refuses the truncated checkpoint too"
    refused(ds, ["commit", "-m", "two"], "00000000000000000003.checkpoint.parquet")
    refused(ds, ["add", "other", uri, "--kind", "delta"], "00000000000000000003.checkpoint.parquet")


def test_not_a_table(ds, tmp_path):
    (tmp_path / "empty").mkdir()
    refused(ds, ["add", KEY, str(tmp_path / "empty"), "--kind", "delta"], "not a Delta table", rc=2)
    refused(ds, ["add", KEY, str(tmp_path / "nothing"), "--kind", "delta"], "does not exist", rc=2)


def test_hostile_state_in_a_manifest(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 2)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    path = ds.manifest_path(KEY)
    path.write_text(path.read_text().replace("version = 1", 'version = "1; rm -rf /"'))
    p = ds.tether("status", check_rc=None)
    assert p.returncode != 0 and "version" in p.stderr and "objects/events.toml" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# Multi-part and V2 checkpoints
# ---------------------------------------------------------------------------

def test_multipart_checkpoint(ds, tmp_path):
    """The library's checkpoint split into two parts (as Spark writes
    them), the single file and the early JSON removed: the library and
    tether both read it."""
    import pyarrow.parquet as pq
    uri = make_table(str(tmp_path / "t"), 4)
    DeltaTable(uri).create_checkpoint()
    write_deltalake(uri, rows(1, 900), mode="append")
    single = log_dir(uri) / "00000000000000000003.checkpoint.parquet"
    t = pq.read_table(single)
    half = t.num_rows // 2
    for part, piece in ((1, t.slice(0, half)), (2, t.slice(half))):
        pq.write_table(piece, log_dir(uri) / f"00000000000000000003.checkpoint.{part:010d}.0000000002.parquet")
    single.unlink()
    (log_dir(uri) / "_last_checkpoint").write_text(json.dumps({"version": 3, "size": t.num_rows, "parts": 2}))
    for v in range(4):
        commit_file(uri, v).unlink()
    assert DeltaTable(uri).version() == 4
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    assert ds.manifest(KEY)["state"] == {"version": 4, "table_id": DeltaTable(uri).metadata().id}
    assert ds.tj("verify")["ok"] is True
    # A part missing: the checkpoint is not whole, and the log has no
    # other start.
    (log_dir(uri) / "00000000000000000003.checkpoint.0000000002.0000000002.parquet").unlink()
    refused(ds, ["add", "other", uri, "--kind", "delta"], "00000000000000000003.json")


# ---------------------------------------------------------------------------
# On S3 (SeaweedFS)
# ---------------------------------------------------------------------------

def s3_options(srv):
    """What the deltalake library takes to reach the server."""
    return {"AWS_ENDPOINT_URL": srv.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": srv.access_key,
            "AWS_SECRET_ACCESS_KEY": srv.secret, "AWS_REGION": srv.region, "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def test_s3_table_with_a_cleaned_log(ds, seaweedfs_server):
    srv = seaweedfs_server
    bucket = srv.bucket("delta")
    uri = f"s3://{bucket}/tables/events"
    so = s3_options(srv)
    make_table(uri, 5, storage_options=so, configuration=SHORT_RETENTION)
    DeltaTable(uri, storage_options=so).create_checkpoint()  # at 4
    write_deltalake(uri, rows(2, 700), mode="append", storage_options=so)
    time.sleep(1.5)
    DeltaTable(uri, storage_options=so).cleanup_metadata()
    keys = [o["Key"] for o in srv.client().list_objects_v2(Bucket=bucket, Prefix="tables/events/_delta_log/")
            .get("Contents", [])]
    assert f"tables/events/_delta_log/{0:020d}.json" not in keys

    ds.write(".tether/secrets.toml", secrets_for(srv, bucket))
    r = json.loads(add(ds, uri, "--json").stdout)
    assert "REMOTE_FINGERPRINT" in r["flags"], "round trips, fingerprinted on the engine's pool for them"
    ds.tether("commit", "-m", "one")
    dt = DeltaTable(uri, storage_options=so)
    assert ds.manifest(KEY)["state"] == {"version": 5, "table_id": dt.metadata().id}
    assert [(int(e["id"]), e["operation"]) for e in ds.tj("log", KEY)["entries"]] == history_pairs(uri, so)
    at5 = table_rows(uri, storage_options=so)
    write_deltalake(uri, rows(1, 800), mode="append", storage_options=so)
    ds.tether("commit", "-m", "two")
    h = ds.tj("open", KEY, "-r", "HEAD~1")
    assert (h["uri"], h["version"]) == (uri, 5)
    assert table_rows(uri, version=5, storage_options=so) == at5
    d = ds.tj("diff", "--content", "HEAD~1", "HEAD")["objects"][0]["content"]
    assert [e["detail"] for e in d["entries"]] == ["WRITE: +1 rows, +1 files"]
    assert ds.tj("verify", "--all-history")["ok"] is True

    srv.client().put_object(Bucket=bucket, Key="tables/events/_delta_log/_last_checkpoint", Body=b'{"vers')
    refused(ds, ["status"], "_delta_log/_last_checkpoint")


def test_v2_checkpoint_in_json_with_a_sidecar(ds, tmp_path):
    """A V2 checkpoint (UUID-named, JSON) whose add actions sit in a
    sidecar Parquet file under _delta_log/_sidecars/, made from the
    library's own checkpoint of a table with the v2Checkpoint feature, the
    commits below it removed: the library loads it (its Python reader does
    not read v2Checkpoint tables' data yet), and tether reads protocol and
    metaData from it. A sidecar gone: the checkpoint is not whole, and the
    recorded version verifies as no longer rebuildable."""
    import uuid
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    uri = make_table(str(tmp_path / "t"), 2)
    log = log_dir(uri)
    v2 = ["v2Checkpoint"]
    add_protocol_commit(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": v2,
                              "writerFeatures": v2})
    write_deltalake(uri, rows(1, 300), mode="append")
    DeltaTable(uri).create_checkpoint()  # at 3, classic-named, with a checkpointMetadata row
    classic = log / f"{3:020d}.checkpoint.parquet"
    t = pq.read_table(classic)
    assert any(r["checkpointMetadata"] for r in t.select(["checkpointMetadata"]).to_pylist())
    (log / "_sidecars").mkdir()
    sidecar = f"{uuid.uuid4()}.parquet"
    pq.write_table(t.filter(pc.is_valid(t["add"])).select(["add", "remove"]), log / "_sidecars" / sidecar)
    lines = [{"checkpointMetadata": {"version": 3}}]
    for r in t.to_pylist():
        if r["protocol"]:
            lines.append({"protocol": r["protocol"]})
        if r["metaData"]:
            m = {k: v for k, v in r["metaData"].items() if v is not None}
            m["format"] = {"provider": m["format"]["provider"], "options": dict(m["format"].get("options") or [])}
            m["configuration"] = dict(m.get("configuration") or [])
            lines.append({"metaData": m})
    lines.append({"sidecar": {"path": sidecar, "sizeInBytes": (log / "_sidecars" / sidecar).stat().st_size,
                              "modificationTime": 1}})
    (log / f"{3:020d}.checkpoint.{uuid.uuid4()}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    classic.unlink()
    (log / "_last_checkpoint").unlink()
    for v in range(3):
        commit_file(uri, v).unlink()
    write_deltalake_v = DeltaTable(uri)
    assert write_deltalake_v.version() == 3
    table_id = write_deltalake_v.metadata().id

    add(ds, uri)
    ds.tether("commit", "-m", "v2")
    assert ds.manifest(KEY)["state"] == {"version": 3, "table_id": table_id}
    assert ds.tj("verify")["ok"] is True
    (log / "_sidecars" / sidecar).unlink()
    with pytest.raises(Exception):
        DeltaTable(uri).files()  # the library cannot rebuild it either
    v = ds.tj("verify", check_rc=3)
    assert "can no longer be rebuilt" in v["objects"][0]["detail"]


def test_spark_commit_info_metrics(ds, tmp_path):
    """Spark writes operationMetrics as strings under camelCase names
    (DeltaOperationMetrics); delta-rs as numbers under snake_case ones.
    Commits as Spark writes them (commitInfo only: no files change) read
    as the library reads them, with the metrics normalised."""
    uri = make_table(str(tmp_path / "t"), 2)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    spark = [
        {"operation": "WRITE", "operationParameters": {"mode": "Append", "partitionBy": "[]"},
         "operationMetrics": {"numFiles": "2", "numOutputRows": "5", "numOutputBytes": "1024"}},
        {"operation": "MERGE", "operationParameters": {"predicate": "[\"(id = id)\"]"},
         "operationMetrics": {"numTargetRowsInserted": "2", "numTargetRowsUpdated": "3", "numTargetRowsDeleted": "1",
                              "numTargetFilesAdded": "1", "numTargetFilesRemoved": "1", "numSourceRows": "6"}},
        {"operation": "DELETE", "operationParameters": {"predicate": "[\"(id > 5)\"]"},
         "operationMetrics": {"numAddedFiles": "0", "numRemovedFiles": "1", "numDeletedRows": "4",
                              "numCopiedRows": "0"}},
        {"operation": "OPTIMIZE", "operationParameters": {}},
    ]
    for i, ci in enumerate(spark):
        ci = {"timestamp": 1700000000000 + i, **ci, "isBlindAppend": False, "engineInfo": "Apache-Spark/3.5.0 Delta-Lake/3.2.0"}
        commit_file(uri, 2 + i).write_text(json.dumps({"commitInfo": ci}) + "\n")
    assert DeltaTable(uri).version() == 5
    entries = ds.tj("log", KEY, "-n", "4")["entries"]
    assert [(e["id"], e["operation"]) for e in entries] == [(str(h["version"]), h["operation"])
                                                           for h in DeltaTable(uri).history(4)]
    assert [e["message"] for e in entries] == [
        "OPTIMIZE",
        "DELETE: -4 rows, -1 files",
        "MERGE: +2 rows, -1 rows, ~3 rows, +1 files, -1 files",
        "WRITE: +5 rows, +2 files",
    ]
    assert entries[3]["metrics"] == {"rows_added": 5, "files_added": 2, "bytes_added": 1024}
    assert entries[3]["time"] == 1700000000
    ds.tether("commit", "-m", "two")
    d = ds.tj("diff", "--content", "HEAD~1", "HEAD")["objects"][0]["content"]
    assert [e["version"] for e in d["entries"]] == [5, 4, 3, 2]
    assert d["native"]["rows_added"] == 7 and d["native"]["commits"] == 4


def test_v2_checkpoint_uuid_named_parquet(ds, tmp_path):
    """The library's V2 checkpoint (it carries checkpointMetadata) under a
    UUID name, as a V2 writer names one, the commits below it removed."""
    import uuid
    uri = make_table(str(tmp_path / "t"), 2)
    v2 = ["v2Checkpoint"]
    add_protocol_commit(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": v2,
                              "writerFeatures": v2})
    write_deltalake(uri, rows(1, 300), mode="append")
    DeltaTable(uri).create_checkpoint()
    log = log_dir(uri)
    (log / f"{3:020d}.checkpoint.parquet").rename(log / f"{3:020d}.checkpoint.{uuid.uuid4()}.parquet")
    (log / "_last_checkpoint").unlink()
    for v in range(3):
        commit_file(uri, v).unlink()
    write_deltalake(uri, rows(1, 400), mode="append")
    dt = DeltaTable(uri)
    assert dt.version() == 4
    add(ds, uri)
    ds.tether("commit", "-m", "v2 parquet")
    assert ds.manifest(KEY)["state"] == {"version": 4, "table_id": dt.metadata().id}
    assert ds.tj("verify")["ok"] is True
    assert [e["id"] for e in ds.tj("log", KEY)["entries"]] == ["4", "3"]


def test_pull_moves_a_detached_version_to_the_latest(ds, tmp_path):
    """`add --at` records an older version; `pull` on the trunk moves the
    object onto the table's latest, which the next commit records."""
    uri = make_table(str(tmp_path / "t"), 3)
    add(ds, uri, "--at", "1")
    ds.tether("commit", "-m", "at 1")
    assert ds.manifest(KEY)["state"]["version"] == 1
    assert [o["status"] for o in ds.tj("status")["objects"]] == ["clean"], "a detached version stays put"
    ds.tether("new", "main")
    r = ds.tj("pull")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [(KEY, "moved")]
    assert "at" not in ds.manifest(KEY)["locator"]
    ds.tether("commit", "-m", "latest")
    assert ds.manifest(KEY)["state"] == {"version": 2, "table_id": DeltaTable(uri).metadata().id}
    assert ds.tj("open", KEY, "-r", "HEAD~1")["version"] == 1


def test_verify_deep_finds_the_data_files_vacuum_removed(ds, tmp_path):
    """verify checks the log; --deep rebuilds the version's live files (the
    checkpoint, then the commits' add and remove actions) and looks for
    each. After an overwrite and the library's VACUUM with no retention,
    the log still rebuilds the old version but its data is gone, as the
    library finds reading it."""
    uri = make_table(str(tmp_path / "t"), 3)
    DeltaTable(uri).create_checkpoint()  # files from the checkpoint too
    write_deltalake(uri, rows(1, 600), mode="append")
    add(ds, uri)
    ds.tether("commit", "-m", "at 3")
    v = ds.tj("verify", "--deep")
    assert v["ok"] is True and v["objects"][0]["deep"] == "ok"
    write_deltalake(uri, rows(2, 700), mode="overwrite")
    gone = DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert len(gone) == 4
    with pytest.raises(Exception):
        DeltaTable(uri, version=3).to_pyarrow_table()
    assert ds.tj("verify")["ok"] is True, "the log still rebuilds version 3"
    v = ds.tj("verify", "--deep", check_rc=3)
    detail = v["objects"][0]["detail"]
    assert "lost 4 of its 4 data files" in detail and "VACUUM" in detail, detail
    ds.tether("commit", "-m", "overwritten")
    v = ds.tj("verify", "--deep")
    assert v["ok"] is True and v["objects"][0]["deep"] == "ok"


def test_verify_deep_on_the_cleaned_log(ds, cleaned):
    """The live files of a version come from the checkpoint (250 of them)
    and the commits after it."""
    add(ds, cleaned, "--at", "230")
    ds.tether("commit", "-m", "at 230")
    v = ds.tj("verify", "--deep")
    assert v["ok"] is True and v["objects"][0]["deep"] == "ok"
    victim = sorted(DeltaTable(cleaned, version=230).file_uris())[100]
    Path(victim.removeprefix("file://")).unlink()
    v = ds.tj("verify", "--deep", check_rc=3)
    assert "lost 1 of its 231 data files" in v["objects"][0]["detail"], v


def test_a_torn_commit_names_its_file_and_line(ds, tmp_path):
    uri = make_table(str(tmp_path / "t"), 3)
    add(ds, uri)
    ds.tether("commit", "-m", "one")
    write_deltalake(uri, rows(1, 800), mode="append")
    path = commit_file(uri, 3)
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2] + "\n")
    with pytest.raises(Exception):
        DeltaTable(uri).to_pyarrow_table()
    line = refused(ds, ["commit", "-m", "two"], "00000000000000000003.json:2:")
    assert uri in line
