"""The icechunk backend, against the icechunk library itself.

Every repository here is made and written by the real icechunk (2.3, the
pinned one in tests/requirements.txt) through tests/e2e/icechunk_oracle.py;
tether reads and writes it with its own C implementation of the format;
then the library opens what tether wrote (every tether.* tag, every
tether.ws.* branch), reads the arrays back, and keeps writing.

The lifecycle every Pinnable or Forkable kind passes (commit pins, new
forks, open -r, gc, verify, repair, log KEY, --at/--pick, --pin record,
kills mid-commit) is test_lifecycle.py's, run here through
lifecycle_adapters.py's IcechunkSpec2; this file holds what is Icechunk's
own: the repo-file protocol, tag generations, diff as Repository.diff,
refusals, feature flags, branch scopes.
"""
import re
import struct
import subprocess
from pathlib import Path

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import icechunk as ic
import pytest
import zarr
import zstandard

from conftest import TETHER_BIN, check_sanitizers
from test_git_backend import dsv, gds, jj_problem  # noqa: F401


def add(ds, key, path, *extra, check_rc=0):
    return ds.tether("add", key, str(path), "--kind", "icechunk", *extra, check_rc=check_rc)


@pytest.fixture
def store(tmp_path):
    """An icechunk repository holding /data (8 int32s) on main."""
    path = tmp_path / "imaging.icechunk"
    oracle.create(path)
    return path


def pin_tag(ds, key):
    return ds.manifest(key)["pin_ref"]["tag"]


def tags(path):
    return sorted(oracle.open_repo(path).list_tags())


def branches(path):
    return sorted(oracle.open_repo(path).list_branches())


def head(path, branch="main"):
    return oracle.open_repo(path).lookup_branch(branch)


def write_array(path, branch, name, values, attrs=None):
    repo = oracle.open_repo(path)
    s = repo.writable_session(branch)
    root = zarr.open_group(store=s.store, mode="a")
    if name in root:
        a = root[name]
    else:
        a = root.create_array(name, shape=(len(values),), chunks=(2,), dtype="i4", fill_value=0)
    a[:] = values
    if attrs:
        a.attrs.update(attrs)
    return s.commit(f"write {name} on {branch}")


# ---------------------------------------------------------------------------
# Pins: tags the library reads (the lifecycle itself is test_lifecycle.py's)
# ---------------------------------------------------------------------------

def test_a_pin_is_a_tag_written_by_icechunks_protocol(ds, store):
    """How a spec-2 pin is written; that commit pins each state as a tag
    the library reads is test_lifecycle.py's test_commit_pins."""
    add(ds, "img", store)
    sid = head(store)
    before = (store / "repo").read_bytes()
    ds.tether("commit", "-m", "baseline")
    m = ds.manifest("img")
    assert m["state"] == {"snapshot_id": sid}
    assert m["pin_ref"] == {"pin": m["pin"], "tag": f"tether.{m['pin']}"}
    repo = oracle.open_repo(store)
    # The update followed Icechunk's protocol: the new head of the ops log
    # names the tag, the old head names the backup, and the backup holds the
    # old file byte for byte.
    log = list(repo.ops_log())
    assert log[0].kind.name == f"tether.{m['pin']}" and log[0].backup_path is None
    backup = store / "overwritten" / log[1].backup_path
    assert backup.read_bytes() == before
    assert log[0].updated_at > log[1].updated_at


# ---------------------------------------------------------------------------
# Forks: branches the library writes on
# ---------------------------------------------------------------------------

def test_fork_refuses_a_branch_someone_moved(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    branch = f"tether.ws.{ds.dataset_id()[:8]}.work"
    ds.tether("new", "main")
    # Someone writes on the working branch behind tether's back; coming back
    # to the bookmark must not reset the branch over their write.
    oracle.commit(store, branch=branch)
    moved = head(store, branch)
    p = ds.tether("new", "work", check_rc=3)
    assert branch in p.stderr
    assert head(store, branch) == moved


def test_promote_is_offered(ds, store):
    ice = next(b for b in ds.tj("backends") if b["kind"] == "icechunk")
    assert "PROMOTE" in ice["flags"] and ice["tier"] == "forkable"
    assert "CONDITIONAL_REF" not in ice["flags"]


# ---------------------------------------------------------------------------
# History: tether log KEY and add --at / --pick
# ---------------------------------------------------------------------------

def test_log_gives_microsecond_times_and_whole_ids(ds, store):
    """Icechunk's own fields of `tether log KEY`; the ids and messages
    against the ancestry are test_lifecycle.py's test_log_key."""
    oracle.commit(store, message="second")
    add(ds, "img", store)
    ds.tether("commit", "-m", "pin")
    entries = ds.tj("log", "img")["entries"]
    ancestry = list(oracle.open_repo(store).ancestry(branch="main"))
    assert [e["time_us"] for e in entries] == [
        int(a.written_at.timestamp()) * 1_000_000 + a.written_at.microsecond for a in ancestry
    ]
    assert entries[0]["refs"] == ["main", pin_tag(ds, "img")]
    assert entries[-1]["id"] == "1CECHNKREP0F1RSTCMT0"
    text = ds.tether("log", "img", "-n", "1").stdout
    assert text.startswith(ancestry[0].id + "  "), "the whole id: icechunk takes no abbreviation"


def test_add_at_and_pick_store_the_snapshot_in_the_locator(ds, store):
    """Where icechunk keeps --at; that the object then pins that snapshot
    is test_lifecycle.py's test_add_at_an_earlier_state and test_add_pick."""
    first = head(store)
    oracle.commit(store)
    add(ds, "old", store, "--at", first)
    assert ds.manifest("old")["locator"]["at"] == first
    p = subprocess.run([TETHER_BIN, "add", "img", str(store), "--kind", "icechunk", "--pick"], cwd=ds.root,
                       env=ds.env, input="2\n", capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == 0, p.stderr
    assert ds.manifest("img")["locator"]["at"] == first
    p = add(ds, "bad", store, "--at", "NOSUCHREF", check_rc=2)
    assert "NOSUCHREF" in p.stderr


def test_add_refuses_what_is_no_repository_and_a_missing_branch(ds, tmp_path, store):
    empty = tmp_path / "empty"
    empty.mkdir()
    p = add(ds, "x", empty, check_rc=2)
    assert "is not an Icechunk repository" in p.stderr and "--create" in p.stderr
    p = add(ds, "y", store, "--option", "branch=nope", check_rc=2)
    assert 'no branch "nope"' in p.stderr
    # A scheme this build has no store module for (s3:// has one now:
    # test_icechunk_s3.py).
    p = add(ds, "z", "nosuch://bucket/prefix", check_rc=2)
    assert "no store for nosuch://" in p.stderr
    p = add(ds, "z", "nosuch://bucket/prefix", "--create", check_rc=2)
    assert "no store for nosuch://" in p.stderr
    p = add(ds, "z", "s3://AKIAEXAMPLE:secret@bucket/prefix", check_rc=2)
    assert "credentials" in p.stderr and "secret" not in p.stderr.replace("secrets.toml", "")
    p = add(ds, "z", "az://account/container?sig=abc", check_rc=2)
    assert "query" in p.stderr
    assert ds.objects_files() == []


def test_branch_is_a_declared_add_option(ds, store, run):
    """--branch NAME is declared (tether add --help lists it under
    icechunk) and means what --option branch=NAME still means: the locator
    follows that branch, and commit records its head."""
    help_text = run("add", "--help").stdout
    # (the column the help starts in depends on the longest option of any kind)
    assert re.search(r"\n  icechunk:\n    --branch NAME +the repository's branch to follow; default main\n", help_text)
    oracle.open_repo(store).create_branch("dev", head(store))
    dev_head = write_array(store, "dev", "extra", [1, 2])
    add(ds, "img", store, "--branch", "dev")
    add(ds, "old", store, "--option", "branch=dev")
    assert ds.manifest("img")["locator"] == ds.manifest("old")["locator"] == {"uri": str(store), "branch": "dev"}
    ds.tether("commit", "-m", "dev")
    assert ds.manifest("img")["state"] == {"snapshot_id": dev_head} != {"snapshot_id": head(store)}
    # validated: a missing branch, an empty one, the flag without its value
    p = add(ds, "x", store, "--branch", "nope", check_rc=2)
    assert 'no branch "nope"' in p.stderr
    p = add(ds, "x", store, "--branch", "", check_rc=2)
    assert "--branch for kind icechunk takes a non-empty string" in p.stderr
    p = add(ds, "x", store, "--branch", check_rc=2)
    assert "--branch" in p.stderr
    assert ds.objects_files() == ["img.toml", "old.toml"]


@pytest.mark.parametrize("uri", ["{store}/../{name}", "{store}/", "file://{store}", "relative/{name}",
                                 "s3://user:pw@bucket/{name}", "nosuch://bucket/{name}"])
def test_a_committed_uri_tether_would_not_record_is_refused(ds, store, uri):
    """A clone is untrusted: its locator may name only what `add` records."""
    add(ds, "img", store)
    ds.tether("commit", "-m", "img")
    bad = uri.format(store=store, name=store.name)
    path = ds.manifest_path("img")
    text = path.read_text()
    assert f'uri = "{store}"' in text
    path.write_text(text.replace(f'uri = "{store}"', f'uri = "{bad}"'))
    p = ds.tether("verify", check_rc=3)
    assert "refused" in p.stdout + p.stderr
    assert tags(store) == [pin_tag(ds, "img")]  # nothing written


# ---------------------------------------------------------------------------
# diff --content is Repository.diff
# ---------------------------------------------------------------------------

def scripted_history(path):
    """Snapshots of main after each step of a history with new, deleted,
    updated and moved nodes and chunk writes; returns their ids, oldest
    first (the first is the repository's data commit)."""
    repo = oracle.open_repo(path)
    ids = [repo.lookup_branch("main")]

    def step(fn, message):
        r = oracle.open_repo(path)
        s = r.writable_session("main")
        fn(zarr.open_group(store=s.store, mode="a"))
        ids.append(s.commit(message))

    step(lambda g: (g.create_group("grp"), g["grp"].create_array("x", shape=(4,), chunks=(1,), dtype="f8")),
         "new group and array")
    step(lambda g: g["grp/x"].__setitem__(slice(0, 3), [1.0, 2.0, 3.0]), "three chunks")
    step(lambda g: g["data"].attrs.update({"units": "m"}), "array metadata")
    step(lambda g: g["grp"].attrs.update({"owner": "ada"}), "group metadata")
    step(lambda g: (g["data"].__setitem__(0, 42), g.create_group("tmp")), "chunk and a new group")
    step(lambda g: (g.__delitem__("tmp"), g["grp/x"].__setitem__(3, 4.0)), "delete a group")
    r = oracle.open_repo(path)
    s = r.rearrange_session("main")
    s.move("/grp/x", "/grp/y")
    ids.append(s.commit("move"))
    step(lambda g: g.__delitem__("data"), "delete an array")
    return ids


def test_diff_content_equals_repository_diff(ds, store):
    add(ds, "img", store)
    ids = scripted_history(store)
    commits = []
    for sid in ids:
        oracle.open_repo(store).reset_branch("main", sid)
        ds.tether("commit", "-m", f"at {sid}")
        commits.append(ds.head())
    pairs = [(i, i + 1) for i in range(len(ids) - 1)] + [(0, len(ids) - 1), (1, 5)]
    for a, b in pairs:
        out = ds.tj("diff", commits[a], commits[b], "--content")
        content = out["objects"][0]["content"]
        assert content["native"] == oracle.diff(store, ids[a], ids[b]), (a, b)
    # The text report, for one pair with something of everything.
    text = ds.tether("diff", commits[4], commits[6], "--content").stdout
    assert "modified /data (1 chunk)" in text
    assert "removed /tmp" not in text  # made and removed in between
    assert "modified /grp/x (1 chunk)" in text
    moved = ds.tj("diff", commits[6], commits[7], "--content")["objects"][0]["content"]
    assert moved["entries"] == [{"change": "renamed", "old_path": "/grp/x", "path": "/grp/y"}]


def test_diff_of_diverged_branches_goes_through_their_common_ancestor(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "base")
    base = head(store)
    ds.tether("new", "-b", "side")
    branch = f"tether.ws.{ds.dataset_id()[:8]}.side"
    write_array(store, branch, "side_only", [1, 2])
    ds.tether("commit", "-m", "side")
    side_commit = ds.head()
    ds.tether("new", "main")
    write_array(store, ds.tj("open", "img")["branch"], "main_only", [3, 4])
    ds.tether("commit", "-m", "main moved")
    content = ds.tj("diff", side_commit, "HEAD", "--content")["objects"][0]["content"]
    got = {e["path"]: e["change"] for e in content["entries"]}
    assert got == {"/main_only": "added", "/side_only": "removed"}
    assert base in content["note"]


# ---------------------------------------------------------------------------
# Tombstones, repair and gc
# ---------------------------------------------------------------------------

def test_a_deleted_pin_tag_comes_back_as_generation_2(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "pin")
    sid = head(store)
    tag = pin_tag(ds, "img")
    oracle.open_repo(store).delete_tag(tag)
    p = ds.tether("verify", check_rc=3)
    assert "missing" in p.stdout + p.stderr
    r = ds.tj("repair")
    assert r["ok"] is True
    repo = oracle.open_repo(store)
    assert repo.list_tags() == {f"{tag}.2"} and repo.lookup_tag(f"{tag}.2") == sid
    # The working manifest names the new generation for the next commit;
    # the committed one still names the burnt tag, and readers of that
    # commit resolve the pin through its live generation.
    assert ds.manifest("img")["pin_ref"] == {"pin": ds.manifest("img")["pin"], "tag": f"{tag}.2"}
    assert ds.tj("verify")["ok"] is True
    v = ds.tj("verify", "--all-history")
    assert v["ok"] is True
    assert ds.tj("open", "img", "-r", "HEAD")["tag"] == f"{tag}.2"


def test_the_next_commit_of_a_state_whose_tag_was_deleted_pins_a_new_generation(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "A")
    a = head(store)
    tag_a = pin_tag(ds, "img")
    oracle.commit(store)
    ds.tether("commit", "-m", "B")
    oracle.open_repo(store).delete_tag(tag_a)
    oracle.open_repo(store).reset_branch("main", a)
    ds.tether("commit", "-m", "A again")
    assert ds.manifest("img")["pin_ref"]["tag"] == f"{tag_a}.2"
    assert oracle.open_repo(store).lookup_tag(f"{tag_a}.2") == a


# ---------------------------------------------------------------------------
# add --create
# ---------------------------------------------------------------------------

def test_add_create_makes_a_repository_the_library_opens_and_writes(ds, tmp_path):
    path = tmp_path / "new.icechunk"
    add(ds, "fresh", path, "--create")
    repo = oracle.open_repo(path)
    assert repo.metadata == {"tether.owner": ds.dataset_id()}
    assert list(repo.list_branches()) == ["main"] and repo.list_tags() == set()
    assert [a.message for a in repo.ancestry(branch="main")] == ["Repository initialized"]
    sid = write_array(path, "main", "data", [5, 6, 7, 8])
    ds.tether("commit", "-m", "first data")
    assert oracle.open_repo(path).lookup_tag(pin_tag(ds, "fresh")) == sid
    assert oracle.read_data(path, tag=pin_tag(ds, "fresh")) == [5, 6, 7, 8]


def test_add_create_refuses_a_path_that_exists(ds, tmp_path, store):
    d = tmp_path / "occupied"
    d.mkdir()
    (d / "keep.txt").write_text("mine\n")
    p = add(ds, "c", d, "--create", check_rc=3)
    assert "already exists" in p.stderr
    assert [q.name for q in d.iterdir()] == ["keep.txt"]
    p = add(ds, "c", store, "--create", check_rc=3)
    assert not ds.manifest_path("c").exists()


# ---------------------------------------------------------------------------
# Refusals: tether writes nothing it does not understand
# ---------------------------------------------------------------------------

HEADER = 39


def payload(path):
    data = Path(path).read_bytes()
    return data[:HEADER], zstandard.ZstdDecompressor().decompressobj().decompress(data[HEADER:])


def put_payload(path, header, body):
    Path(path).write_bytes(header + zstandard.ZstdCompressor(level=3).compress(body))


def with_unknown_root_field(body):
    """The same Repo table with one more vtable slot (13, past the 13 that
    icechunk 2.3 knows), pointing at bytes of the table that are there: a
    field from a newer writer, which a reader can skip and a rewriter would
    drop. The new vtable goes at the end; the table's soffset points at it."""
    body = bytearray(body)
    table = struct.unpack_from("<I", body, 0)[0]
    vt = table - struct.unpack_from("<i", body, table)[0]
    vt_len, tbl_len = struct.unpack_from("<HH", body, vt)
    slots = list(struct.unpack_from(f"<{(vt_len - 4) // 2}H", body, vt + 4))
    slots += [0] * (13 - len(slots))
    slots.append(slots[0] or 4)  # slot 13: the u8 spec_version's bytes again
    while len(body) % 2:
        body.append(0)
    new_vt = len(body)
    body += struct.pack(f"<HH{len(slots)}H", 4 + 2 * len(slots), tbl_len, *slots)
    struct.pack_into("<i", body, table, table - new_vt)
    return bytes(body)


def changed_state(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "base")
    oracle.commit(store)


def test_refuses_a_read_only_repository_and_writes_nothing(ds, store):
    changed_state(ds, store)
    oracle.open_repo(store).set_status(ic.RepoStatus(ic.RepoAvailability.read_only, limited_availability_reason="archived"))
    before = (store / "repo").read_bytes()
    p = ds.tether("commit", "-m", "refused", check_rc=3)
    assert "read-only" in p.stderr and "archived" in p.stderr
    assert (store / "repo").read_bytes() == before
    assert not (ds.manifest("img")["state"]["snapshot_id"] == head(store))


def test_refuses_when_the_create_tag_flag_is_off(ds, store):
    changed_state(ds, store)
    oracle.open_repo(store).set_feature_flag("create_tag", False)
    before = (store / "repo").read_bytes()
    p = ds.tether("commit", "-m", "refused", check_rc=3)
    assert "create_tag" in p.stderr
    assert (store / "repo").read_bytes() == before


def test_refuses_a_repo_file_with_a_field_it_does_not_know(ds, store):
    changed_state(ds, store)
    header, body = payload(store / "repo")
    put_payload(store / "repo", header, with_unknown_root_field(body))
    # Still a valid repository: the library reads it.
    assert oracle.open_repo(store).lookup_branch("main") == head(store)
    before = (store / "repo").read_bytes()
    assert ds.tj("status")["objects"][0]["status"] == "modified", "reading is fine"
    p = ds.tether("commit", "-m", "refused", check_rc=3)
    assert "field tether does not know" in p.stderr and "newer Icechunk" in p.stderr
    assert (store / "repo").read_bytes() == before


def test_a_repo_file_from_a_newer_spec_is_refused_even_for_reading(ds, store):
    add(ds, "img", store)
    data = bytearray((store / "repo").read_bytes())
    data[36] = 3
    (store / "repo").write_bytes(bytes(data))
    p = ds.tether("status", "--snapshot", check_rc=1)
    assert f"img: {store / 'repo'}: spec version 3 (written by a newer Icechunk" in p.stderr


def test_a_corrupt_repo_file_is_an_error_naming_it(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "pin")
    (store / "repo").write_bytes(b"not an icechunk file")
    p = ds.tether("verify", check_rc=3)
    assert f"FAILED img: {store / 'repo'}: 20 bytes, too short for an Icechunk file" in p.stdout
    (store / "repo").write_bytes(b"x" * 64)
    p = ds.tether("verify", check_rc=3)
    assert f"FAILED img: {store / 'repo'}: not an Icechunk file (bad magic)" in p.stdout


# ---------------------------------------------------------------------------
# What tether carries over, and the ops log it extends
# ---------------------------------------------------------------------------

def test_a_rewrite_carries_over_every_field_the_library_set(ds, store):
    repo = oracle.open_repo(store)
    sid = head(store)
    repo.set_metadata({"project": "imaging", "n": 3, "nested": {"a": [1, 2.5, None, True]}})
    repo.set_feature_flag("move_node", False)
    repo.create_tag("release-1", sid)
    repo.create_tag("withdrawn", sid)
    repo.delete_tag("withdrawn")
    repo.create_branch("dev", sid)
    before = oracle.open_repo(store)
    snapshots = [(a.id, a.message, a.written_at) for a in before.ancestry(branch="main")]
    log_before = [(u.kind, u.updated_at) for u in before.ops_log()]
    add(ds, "img", store)
    ds.tether("commit", "-m", "pin")
    after = oracle.open_repo(store)
    assert after.metadata == {"project": "imaging", "n": 3, "nested": {"a": [1, 2.5, None, True]}}
    flags = {f.name: f.enabled for f in after.feature_flags()}
    assert flags["move_node"] is False and flags["create_tag"] is True
    assert after.list_tags() == {"release-1", pin_tag(ds, "img")}
    assert sorted(after.list_branches()) == ["dev", "main"]
    with pytest.raises(ic.IcechunkError):
        after.create_tag("withdrawn", sid)  # the tombstone stayed
    assert [(a.id, a.message, a.written_at) for a in after.ancestry(branch="main")] == snapshots
    log_after = [(u.kind, u.updated_at) for u in after.ops_log()]
    assert [str(k) for k, _ in log_after[1:]] == [str(k) for k, _ in log_before]


def test_the_ops_log_rotates_as_the_repository_asks_and_stays_whole(ds, store):
    repo = oracle.open_repo(store)
    config = ic.RepositoryConfig(num_updates_per_repo_info_file=3)
    repo = ic.Repository.open(oracle.storage(store), config=config)
    repo.save_config()
    n_before = len(list(oracle.open_repo(store).ops_log()))
    add(ds, "img", store)
    for i in range(5):
        oracle.commit(store)
        ds.tether("commit", "-m", f"pin {i}")
    log = list(oracle.open_repo(store).ops_log())
    # Five commits and five pins later, the library still walks the whole
    # log, across the backups tether's rotation chained.
    assert len(log) == n_before + 10
    assert [u.updated_at for u in log] == sorted((u.updated_at for u in log), reverse=True)
    assert len(ic.Repository.open(oracle.storage(store)).list_tags()) == 5


def test_releasing_a_pin_respects_the_delete_tag_flag(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "A")
    oracle.commit(store)
    ds.tether("commit", "-m", "B")
    tag_b = pin_tag(ds, "img")
    ds.git("reset", "-q", "--hard", "HEAD~1")
    oracle.open_repo(store).set_feature_flag("delete_tag", False)
    before = (store / "repo").read_bytes()
    p = ds.tether("gc", "--no-dry-run", check_rc=None)
    assert p.returncode != 0 and "delete_tag" in p.stdout + p.stderr
    assert (store / "repo").read_bytes() == before
    assert tag_b in tags(store)


def test_prune_workspaces_deletes_a_dead_workspaces_pinned_branch(ds, store):
    add(ds, "img", store)
    ds.tether("commit", "-m", "one")
    ds8 = ds.dataset_id()[:8]
    ds.tether("new", "-b", "feature")
    ds.tether("new", "-b", "other")
    ds.git("branch", "-q", "-D", "feature")
    feature, other = f"tether.ws.{ds8}.feature", f"tether.ws.{ds8}.other"
    assert branches(store) == sorted(["main", feature, other])
    dry = ds.tj("gc", "--prune-workspaces")
    assert [(p["branch"], p["action"]) for p in dry["prune"]] == [(feature, "delete")]
    assert feature in branches(store)
    ds.tj("gc", "--prune-workspaces", "--no-dry-run")
    assert branches(store) == sorted(["main", other])
    # Unpinned work on a dead workspace's branch stays without --force-prune.
    ds.tether("new", "-b", "spike")
    oracle.commit(store, branch=f"tether.ws.{ds8}.spike")
    ds.tether("new", "other")
    ds.git("branch", "-q", "-D", "spike")
    kept = ds.tj("gc", "--prune-workspaces", "--no-dry-run")
    assert [(p["branch"], p["action"]) for p in kept["prune"]] == [(f"tether.ws.{ds8}.spike", "keep")]
    assert f"tether.ws.{ds8}.spike" in branches(store)


# ---------------------------------------------------------------------------
# Two keys on one repository: one branch scope
# ---------------------------------------------------------------------------

def test_two_keys_on_one_repository_share_one_working_branch(dsv, store):
    add(dsv, "a", store)
    add(dsv, "b", store)
    dsv.tether("commit", "-m", "base")
    dsv.tether("new", "-b", "x")
    branch = f"tether.ws.{dsv.dataset_id()[:8]}.x"
    assert branches(store) == sorted(["main", branch])
    assert dsv.tj("open", "a")["branch"] == dsv.tj("open", "b")["branch"] == branch
    sid = oracle.commit(store, branch=branch)
    dsv.tether("commit", "-m", "both")
    assert dsv.manifest("a")["state"] == dsv.manifest("b")["state"] == {"snapshot_id": sid}
    assert dsv.manifest("a")["pin"] == dsv.manifest("b")["pin"]
    assert len([t for t in tags(store) if t.startswith("tether.")]) == 2
    # Another bookmark, and back: each object re-forks where the other left it.
    dsv.tether("new", "-b", "y")
    dsv.tether("new", "x")
    assert head(store, branch) == sid


def test_keys_of_one_repository_at_different_states_coexist(ds, store):
    """The spec's --pick example (issue 12): a second key of one store added
    at an older snapshot is pinned there by the first commit and stays
    detached; `new` forks the other key alone, and the older one keeps
    reading its `at`."""
    first = head(store)
    oracle.commit(store)
    add(ds, "now", store)
    add(ds, "then", store, "--at", first)
    ds.tether("commit", "-m", "both")
    assert ds.manifest("then")["state"] == {"snapshot_id": first}
    r = ds.tj("new", "-b", "x")
    assert [(o["key"], o["action"]) for o in r["objects"]] == [("now", "forked"), ("then", "detached")]
    branch = f"tether.ws.{ds.dataset_id()[:8]}.x"
    assert branches(store) == ["main", branch]
    assert head(store, branch) == head(store)
    h = ds.tj("open", "then")
    assert h["read_only"] is True and h["snapshot_id"] == first
    ds.tether("status")  # both clean: nothing refuses
    assert ds.tj("status")["clean"] is True