"""The lance backend, against pylance itself.

Every dataset here is made and written by the real pylance (14.0.2, pinned
in tests/requirements.txt); tether reads its manifests and writes its tags
and branches with its own C code (src/backends/lance/); then the library
lists what tether wrote, checks it out, keeps writing on it and cleans up
around it.

The lifecycle every Forkable kind passes (commit pins, new forks, open -r,
gc, verify, repair, log KEY, --at/--pick, --pin record, kills mid-commit)
is test_lifecycle.py's, run through lifecycle_adapters.py's LanceAdapter;
this file holds what is Lance's own: tags and branches as the library
reads them, cleanup_old_versions, re-forks under a held name, branch
lives, both manifest naming schemes, diff against the library, refusals,
and s3:// on SeaweedFS.
"""
import json
import struct
from datetime import timedelta
from pathlib import Path

import lance
import lance_oracle as oracle
import pyarrow as pa
import pytest

from lifecycle_adapters import S3Prefix


def add(ds, key, uri, *extra, check_rc=0):
    return ds.tether("add", key, str(uri), "--kind", "lance", *extra, check_rc=check_rc)


@pytest.fixture
def store(tmp_path):
    """A dataset of one column `a` (one row) on main, V2 manifest names."""
    path = tmp_path / "events.lance"
    oracle.create(str(path))
    return path


def files_of(path):
    return sorted(p.relative_to(path).as_posix() for p in Path(path).rglob("*") if p.is_file())


def ws_branch(ds, bookmark):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


# ---------------------------------------------------------------------------
# Pins: tags the library lists, reads, and keeps through cleanup
# ---------------------------------------------------------------------------

def test_the_library_lists_and_reads_every_pin(ds, store):
    add(ds, "events", store)
    ds.tether("commit", "-m", "one")
    rows1 = oracle.content(str(store), "main")
    oracle.append(str(store))
    oracle.append(str(store))
    ds.tether("commit", "-m", "three")
    tags = lance.dataset(str(store)).tags.list()
    pins = {name: t for name, t in tags.items() if name.startswith("tether.")}
    assert len(pins) == 2
    assert sorted(t["version"] for t in pins.values()) == [1, 3]
    assert all(t["branch"] is None and t["manifest_size"] > 0 for t in pins.values())
    first = [n for n, t in pins.items() if t["version"] == 1][0]
    assert oracle.content(str(store), first) == rows1
    assert lance.dataset(str(store)).checkout_version(first).version == 1
    # Written as Lance writes a tag: camelCase keys, its own fields only.
    doc = json.loads((store / "_refs" / "tags" / f"{first}.json").read_text())
    assert list(doc) == ["branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata"]
    assert doc["createdAt"].endswith("Z") and doc["metadata"] == {}
    assert doc["manifestSize"] == (store / "_versions" / f"{2**64 - 1 - 1:020d}.manifest").stat().st_size


def test_cleanup_old_versions_keeps_the_pinned_versions(ds, store):
    oracle.append(str(store))
    add(ds, "events", store)
    ds.tether("commit", "-m", "at 2")
    pinned = oracle.content(str(store), "main")
    for _ in range(3):
        oracle.append(str(store))
    d = lance.dataset(str(store))
    d.cleanup_old_versions(older_than=timedelta(seconds=0), error_if_tagged_old_versions=False)
    left = [v["version"] for v in lance.dataset(str(store)).versions()]
    assert 2 in left and 1 not in left and 3 not in left, left
    tag = ds.manifest("events")["pin_ref"]["tag"]
    assert oracle.content(str(store), tag) == pinned
    assert ds.tj("verify")["ok"] is True


# ---------------------------------------------------------------------------
# Forks: branches the library opens and writes; re-forks; branch lives
# ---------------------------------------------------------------------------

def test_the_library_writes_on_the_fork_and_tether_records_it(ds, store):
    add(ds, "events", store)
    ds.tether("commit", "-m", "base")
    ds.tj("new", "-b", "feature")
    branch = ws_branch(ds, "feature")
    d = lance.dataset(str(store))
    assert branch in d.branches.list()
    assert d.branches.list()[branch]["parent_version"] == 1
    # An untouched fork is at its parent's address: nothing to commit.
    assert ds.manifest("events")["state"] == {"branch": "main", "version": 1}
    assert "nothing to commit" in ds.tether("commit", "-m", "noop").stdout
    version = oracle.append(str(store), branch)
    assert version == 2
    assert len(oracle.content(str(store), branch)) == 2
    ds.tether("commit", "-m", "on the fork")
    m = ds.manifest("events")
    branch_id = d.branches.list()[branch]["branch_identifier"][-1][1]
    assert m["state"] == {"branch": branch, "version": 2, "branch_id": branch_id}
    assert lance.dataset(str(store)).tags.list()[m["pin_ref"]["tag"]]["branch"] == branch
    # The library still writes both branches.
    oracle.append(str(store), branch)
    oracle.append(str(store), "main")
    assert lance.dataset(str(store)).checkout_version((branch, None)).version == 3


def describe_branch(uri, name):
    """What the library says of a branch: its JSON, its first version's
    base paths, transaction and files."""
    d = lance.dataset(uri)
    info = dict(d.branches.list()[name])
    b = d.checkout_version((name, info["parent_version"]))
    t = b.read_transaction(info["parent_version"])
    op = t.operation
    return {
        "parent": (info["parent_branch"], info["parent_version"], info["manifest_size"]),
        "lineage": [v for v, _ in info["branch_identifier"]],
        "bases": {i: (p.name, p.path, p.is_dataset_root) for i, p in b.base_paths().items()},
        "clone": (type(op).__name__, op.is_shallow, op.ref_name, op.ref_version, op.ref_path),
        "files": [(f.fragment_id, [df.path for df in f.data_files()]) for f in b.get_fragments()],
        "rows": b.count_rows(),
        "versions": [v["version"] for v in b.versions()],
    }


def test_a_fork_is_the_branch_lance_would_make(ds, store):
    """tether's fork and create_branch's, from one tag, as the library sees them."""
    oracle.append(str(store))
    add(ds, "events", store)
    ds.tether("commit", "-m", "base")
    tag = ds.manifest("events")["pin_ref"]["tag"]
    ds.tj("new", "-b", "feature")
    ours = ws_branch(ds, "feature")
    lance.dataset(str(store)).create_branch("theirs", tag)
    assert describe_branch(str(store), ours) == describe_branch(str(store), "theirs")
    # Lance's cleanup on main keeps what the fork still reads: with the pin
    # gone, the fork point stays, held by the branches' lineage alone.
    for _ in range(3):
        oracle.append(str(store))
    lance.dataset(str(store)).cleanup_old_versions(older_than=timedelta(seconds=0),
                                                   error_if_tagged_old_versions=False)
    lance.dataset(str(store)).tags.delete(tag)
    lance.dataset(str(store)).cleanup_old_versions(older_than=timedelta(seconds=0))
    assert [v["version"] for v in lance.dataset(str(store)).versions()] == [2, 5]
    assert len(oracle.content(str(store), ours)) == 2


def test_a_refork_under_a_held_name_picks_the_next(ds, store):
    add(ds, "events", store)
    ds.tether("commit", "-m", "base")
    ds.tj("new", "-b", "feature")
    branch = ws_branch(ds, "feature")
    oracle.append(str(store), branch)
    ds.tether("commit", "-m", "pinned on the fork")
    # The pinned branch cannot be deleted (Lance refuses while a tag names it).
    with pytest.raises(Exception, match="referenced by tags"):
        lance.dataset(str(store)).branches.delete(branch)
    # Back to the same bookmark: the fork is where tether left it, reused.
    ds.tj("new", "main")
    r = ds.tj("new", "feature")
    assert [o["branch"] for o in r["objects"]] == [branch], r
    # A new bookmark of that name, from main's state: the name is held.
    ds.tj("new", "main")
    ds.git("branch", "-q", "-D", "feature")
    r = ds.tj("new", "-b", "feature")
    assert [o["ref"]["working_branch"] for o in r["objects"]] == [branch + ".2"], r
    branches = lance.dataset(str(store)).branches.list()
    assert {branch, branch + ".2"} <= set(branches)
    assert branches[branch + ".2"]["parent_branch"] is None
    assert oracle.content(str(store), branch + ".2") == oracle.content(str(store), "main")
    oracle.append(str(store), branch + ".2")
    ds.tether("commit", "-m", "on the second fork")
    assert ds.manifest("events")["state"]["branch"] == branch + ".2"


def test_a_branch_made_again_is_another_life(ds, store):
    d = lance.dataset(str(store))
    d.create_branch("dev", 1)
    oracle.append(str(store), "dev")
    # Recorded, not pinned: no tag holds dev, so Lance may delete it.
    add(ds, "events", store, "--branch", "dev", "--pin", "record")
    ds.tether("commit", "-m", "on dev")
    state = ds.manifest("events")["state"]
    assert state["branch"] == "dev" and state["version"] == 2 and len(state["branch_id"]) == 32
    assert ds.tj("verify")["ok"] is True
    # Delete and make dev again: version 2 exists once more, but it is not ours.
    lance.dataset(str(store)).branches.delete("dev")
    lance.dataset(str(store)).create_branch("dev", 1)
    oracle.append(str(store), "dev")
    v = ds.tj("verify", check_rc=3)
    assert v["ok"] is False
    assert "made again" in json.dumps(v), v


def test_a_fork_off_a_branch_reads_through_both_bases(ds, store):
    d = lance.dataset(str(store))
    d.create_branch("dev", 1)
    oracle.append(str(store), "dev")
    add(ds, "events", store, "--branch", "dev")
    ds.tether("commit", "-m", "on dev")
    ds.tj("new", "-b", "feature")
    branch = ws_branch(ds, "feature")
    info = lance.dataset(str(store)).branches.list()[branch]
    assert info["parent_branch"] == "dev" and info["parent_version"] == 2
    assert len(info["branch_identifier"]) == 2
    assert oracle.content(str(store), branch) == oracle.content(str(store), "dev")
    oracle.append(str(store), branch)
    assert len(oracle.content(str(store), branch)) == 3


def test_v1_manifest_names_and_an_index(ds, tmp_path):
    path = tmp_path / "v1.lance"
    lance.write_dataset(pa.table({"a": list(range(300))}), str(path), enable_v2_manifest_paths=False)
    lance.dataset(str(path)).create_scalar_index("a", "BTREE")
    assert (path / "_versions" / "2.manifest").exists()
    add(ds, "events", path)
    ds.tether("commit", "-m", "v1")
    assert ds.manifest("events")["state"] == {"branch": "main", "version": 2}
    ds.tj("new", "-b", "feature")
    branch = ws_branch(ds, "feature")
    assert (path / "tree" / branch / "_versions" / "2.manifest").exists()
    # The branch has the index (its files in main's directory, base 0), and uses it.
    b = lance.dataset(str(path)).checkout_version((branch, None))
    assert [(i["name"], i["uuid"], i["base_id"]) for i in b.list_indices()] == \
        [(i["name"], i["uuid"], 0) for i in lance.dataset(str(path)).list_indices()]
    assert b.to_table(filter="a = 7").column("a").to_pylist() == [7]
    assert "ScalarIndexQuery" in b.scanner(filter="a = 7").explain_plan()
    lance.write_dataset(pa.table({"a": [1000]}), b, mode="append")
    assert lance.dataset(str(path)).checkout_version((branch, None)).count_rows() == 301


# ---------------------------------------------------------------------------
# History and diff, against the library
# ---------------------------------------------------------------------------

def test_log_and_add_at_a_version_or_tag(ds, store):
    oracle.append(str(store))
    oracle.append(str(store))
    lance.dataset(str(store)).tags.create("release", 2)
    add(ds, "events", store)
    entries = ds.tj("log", "events")["entries"]
    assert [e["id"] for e in entries] == ["3", "2", "1"]
    assert [e["message"] for e in entries] == ["Append", "Append", "Overwrite"]
    assert "release" in entries[1]["refs"] and "main" in entries[0]["refs"]
    add(ds, "at1", store, "--at", "1")
    add(ds, "atrel", store, "--at", "release")
    ds.tether("commit", "-m", "at")
    assert ds.manifest("at1")["state"] == {"branch": "main", "version": 1}
    assert ds.manifest("atrel")["state"] == {"branch": "main", "version": 2}
    p = add(ds, "bad", store, "--at", "9", check_rc=2)
    assert "9" in p.stderr and not ds.manifest_path("bad").exists()


def library_fragments(uri, version):
    d = lance.dataset(uri).checkout_version(version)
    return {f.fragment_id: f.count_rows() for f in d.get_fragments()}, {f.name for f in d.schema}


def test_diff_equals_the_library(ds, tmp_path):
    store = tmp_path / "three.lance"
    lance.write_dataset(pa.table({"a": [0, 1, 2]}), str(store))
    add(ds, "events", store)
    ds.tether("commit", "-m", "one")
    a = lance.dataset(str(store)).version
    oracle.append(str(store))
    oracle.append(str(store))
    d = lance.dataset(str(store))
    d.delete("a = 0")
    d = lance.dataset(str(store))
    d.add_columns({"b": "a * 2"})
    ds.tether("commit", "-m", "two")
    b = lance.dataset(str(store)).version
    diff = ds.tj("diff", "HEAD~1", "HEAD", "--content")
    native = [o for o in diff["objects"] if o["key"] == "events"][0]["content"]
    assert native["unit"] == "fragments", native
    fa, ca = library_fragments(str(store), a)
    fb, cb = library_fragments(str(store), b)
    entries = {(e["change"], e["path"]): e["detail"] for e in native["entries"]}
    added = {int(p.split()[1]) for c, p in entries if c == "added" and p.startswith("fragment ")}
    removed = {int(p.split()[1]) for c, p in entries if c == "removed" and p.startswith("fragment ")}
    assert added == set(fb) - set(fa)
    assert removed == set(fa) - set(fb)
    for fid in added:
        assert entries[("added", f"fragment {fid}")] == f"+{fb[fid]} rows"
    assert {p.split()[1] for c, p in entries if c == "added" and p.startswith("column ")} == cb - ca
    # Fragment 0 lost a row to a deletion file and gained column b's data
    # file: modified, not re-added.
    assert entries[("modified", "fragment 0")] == "deletions 0 -> 1, data files 1 -> 2, 2 rows"
    text = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "added fragment 1 (+1 rows)" in text, text


# ---------------------------------------------------------------------------
# Refusals: damaged or unknown manifests, nothing written
# ---------------------------------------------------------------------------

def newest_manifest(path):
    return sorted((Path(path) / "_versions").glob("*.manifest"))[0]


def test_a_truncated_manifest_is_refused_naming_the_file(ds, store):
    add(ds, "events", store)
    oracle.append(str(store))
    m = newest_manifest(store)
    m.write_bytes(m.read_bytes()[:-7])
    before = files_of(store)
    p = ds.tether("commit", "-m", "x", check_rc=1)
    err = p.stderr.strip().splitlines()
    assert str(m) in err[0] and "LANC" in err[0], p.stderr
    assert files_of(store) == before


def test_an_unknown_feature_flag_is_refused_with_its_name(ds, store):
    add(ds, "events", store)
    oracle.append(str(store))
    m = newest_manifest(store)
    data = bytearray(m.read_bytes())
    pos = struct.unpack("<q", data[-16:-8])[0]
    n = struct.unpack("<I", data[pos:pos + 4])[0]
    body = bytes(data[pos + 4:pos + 4 + n])
    # Append reader_feature_flags (field 9) = 1<<20: a later field wins.
    extra = bytes([9 << 3]) + bytes([0x80, 0x80, 0x40])
    body += extra
    out = bytes(data[:pos]) + struct.pack("<I", len(body)) + body + struct.pack("<q", pos) + bytes(data[-8:])
    m.write_bytes(out)
    before = files_of(store)
    p = ds.tether("commit", "-m", "x", check_rc=3)
    line = p.stderr.strip().splitlines()[0]
    assert str(m) in line and "unknown Lance reader feature flag 1048576" in line, p.stderr
    assert files_of(store) == before
    assert ds.tether("status", check_rc=None).returncode != 0


# ---------------------------------------------------------------------------
# s3:// on SeaweedFS
# ---------------------------------------------------------------------------

def lance_options(srv):
    return {"aws_endpoint": srv.endpoint, "aws_access_key_id": srv.access_key,
            "aws_secret_access_key": srv.secret, "aws_region": srv.region, "allow_http": "true",
            "aws_virtual_hosted_style_request": "false"}


def test_on_s3(ds, seaweedfs_server):
    srv = seaweedfs_server
    store = S3Prefix(srv, srv.bucket("lance"), "team/events.lance")
    uri, opts = str(store), lance_options(srv)
    oracle.create(uri, storage_options=opts)
    oracle.append(uri, storage_options=opts)
    ds.env = srv.env(ds.env)
    ds.write(".tether/secrets.toml", f'[uris."s3://{store.bucket}"]\nallow_http = true\n')
    add(ds, "events", uri)
    ds.tether("commit", "-m", "on s3")
    assert ds.manifest("events")["state"] == {"branch": "main", "version": 2}
    tag = ds.manifest("events")["pin_ref"]["tag"]
    d = lance.dataset(uri, storage_options=opts)
    assert d.tags.list()[tag]["version"] == 2
    assert d.checkout_version(tag).count_rows() == 2
    ds.tj("new", "-b", "feature")
    branch = ws_branch(ds, "feature")
    assert branch in lance.dataset(uri, storage_options=opts).branches.list()
    oracle.append(uri, branch, storage_options=opts)
    assert len(oracle.content(uri, branch, storage_options=opts)) == 3
    ds.tether("commit", "-m", "fork on s3")
    assert ds.manifest("events")["state"]["branch"] == branch
    entries = ds.tj("log", "events")["entries"]
    assert entries[0]["id"] == "3"
    assert ds.tj("verify")["ok"] is True
