"""Spec-1 repositories (the refs/ layout) against Icechunk 1.x itself.

The repositories are made and written by icechunk 1.1 in its own
environment (.venv-ic1, which scripts/install-deps makes: icechunk 1.x has
wheels only for the Pythons icechunk 2.x does not run on), through
icechunk_oracle.py's `call`; tether pins, forks, logs and diffs them; then
1.x reads back what tether wrote. The spec-1 repositories icechunk 2.3
writes are covered by the conformance suite (TETHER_ICECHUNK_SPEC=1).
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


def test_commit_pins_a_tag_icechunk_1_reads(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "pin")
    m = ds.manifest("old")
    tag = m["pin_ref"]["tag"]
    assert ic1("tags_of", store1) == [tag]
    assert ic1("tag_target", store1, tag) == m["state"]["snapshot_id"] == ic1("branch_head", store1)
    assert ic1("read_tag", store1, tag) == list(range(8))
    assert json.loads((store1 / "refs" / f"tag.{tag}" / "ref.json").read_text()) == {
        "snapshot": m["state"]["snapshot_id"]}


def test_fork_write_with_icechunk_1_and_pin_again(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "base")
    base = ic1("branch_head", store1)
    ds.tether("new", "-b", "work")
    h = ds.tj("open", "old")
    assert h["spec_version"] == 1 and h["snapshot_id"] == base
    assert ic1("branch_head", store1, h["branch"]) == base
    sid = ic1("commit", store1, h["branch"])
    ds.tether("commit", "-m", "written on the fork")
    tag = ds.manifest("old")["pin_ref"]["tag"]
    assert ic1("tag_target", store1, tag) == sid
    assert ic1("branch_head", store1) == base, "main stays where it was"


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


def test_log_and_diff_follow_icechunk_1(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "one")
    ic1("commit", store1, "main")
    ic1("commit", store1, "main")
    ds.tether("commit", "-m", "two")
    entries = ds.tj("log", "old")["entries"]
    assert [e["id"] for e in entries] == ic1("ancestry_ids", store1)
    ids = ic1("ancestry_ids", store1)
    content = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert content["native"] == ic1("diff", store1, ids[2], ids[0])


def test_gc_releases_an_unreferenced_spec_1_pin(ds, store1):
    add(ds, "old", store1)
    ds.tether("commit", "-m", "A")
    tag_a = ds.manifest("old")["pin_ref"]["tag"]
    ic1("commit", store1, "main")
    ds.tether("commit", "-m", "B")
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.tether("gc", "--no-dry-run")
    assert ic1("tags_of", store1) == [tag_a]
