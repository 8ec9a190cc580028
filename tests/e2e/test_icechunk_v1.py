"""Spec-1 repositories (the refs/ layout) against Icechunk 1.x itself.

The repositories are made and written by icechunk 1.1 in its own
environment (.venv-ic1, which scripts/install-deps makes: icechunk 1.x has
wheels only for the Pythons icechunk 2.x does not run on), through
icechunk_oracle.py's `call`; tether pins, forks, logs and diffs them; then
1.x reads back what tether wrote. The spec-1 repositories icechunk 2.3
writes are covered by the conformance suite (TETHER_ICECHUNK_SPEC=1).

The lifecycle (commit pins, new forks, open -r, write on the fork, gc,
verify, repair, log KEY, --at/--pick, --pin record, kills mid-commit) runs
against icechunk 1.x in test_lifecycle.py, through lifecycle_adapters.py's
IcechunkSpec1; this file holds what is spec 1's own: the ref files, the
tombstone a deleted tag leaves, diff.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT, describe

ORACLE = Path(__file__).with_name("icechunk_oracle.py")
IC1_PYTHON = Path(os.environ.get("TETHER_ICECHUNK1_PYTHON", SOURCE_ROOT / ".venv-ic1" / "bin" / "python"))


def ic1(fn, *args):
    """icechunk_oracle.<fn>(*args) under icechunk 1.x; its JSON result."""
    p = subprocess.run([str(IC1_PYTHON), str(ORACLE), "call", fn, json.dumps([str(a) if isinstance(a, Path) else a
                                                                             for a in args])],
                       capture_output=True, text=True, env={**os.environ, "ICECHUNK_LOG": "error"})
    assert p.returncode == 0, f"icechunk 1.x failed:{describe(p)}"
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def ic1_version():
    if not IC1_PYTHON.exists():
        pytest.fail(f"{IC1_PYTHON} is missing: run scripts/install-deps")
    p = subprocess.run([str(IC1_PYTHON), "-c", "import icechunk; print(icechunk.__version__)"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("1."), p.stdout + p.stderr
    return p.stdout.strip()


@pytest.fixture
def store1(tmp_path, ic1_version):
    path = tmp_path / "v1.icechunk"
    ic1("create_repo", path)
    assert (path / "refs" / "branch.main" / "ref.json").exists() and not (path / "repo").exists()
    return path


def add(ds, key, path, *extra, check_rc=0):
    return ds.tether("add", key, str(path), "--kind", "icechunk", *extra, check_rc=check_rc)


def test_a_pin_is_a_spec_1_ref_file(ds, store1):
    """The refs/ layout of a spec-1 pin; that icechunk 1.x reads the tag at
    the state is test_lifecycle.py's test_commit_pins[icechunk-spec1]."""
    add(ds, "old", store1)
    ds.tether("commit", "-m", "pin")
    m = ds.manifest("old")
    tag = m["pin_ref"]["tag"]
    assert json.loads((store1 / "refs" / f"tag.{tag}" / "ref.json").read_text()) == {
        "snapshot": m["state"]["snapshot_id"]}
    assert ic1("read_tag", store1, tag) == list(range(8))


def test_a_tag_deleted_by_icechunk_1_comes_back_as_generation_2(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "pin")
    tag = ds.manifest("old")["pin_ref"]["tag"]
    sid = ds.manifest("old")["state"]["snapshot_id"]
    ic1("delete_tag", store1, tag)
    assert (store1 / "refs" / f"tag.{tag}" / "ref.json.deleted").exists()
    ds.tether("verify", check_rc=3)
    assert ds.tj("repair")["ok"] is True
    assert ic1("tags_of", store1) == [f"{tag}.2"]
    assert ic1("tag_target", store1, f"{tag}.2") == sid
    ds.tether("verify", "--all-history")


def test_diff_follows_icechunk_1(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "one")
    ic1("commit", store1, "main")
    ic1("commit", store1, "main")
    ds.tether("commit", "-m", "two")
    ids = ic1("ancestry_ids", store1)
    content = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert content["native"] == ic1("diff", store1, ids[2], ids[0])
