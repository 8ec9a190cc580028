"""verify --deep: the backend re-reads each pinned state, not only its ref.

A git pin is a tag on a commit; verify holds while the tag names the
commit, but a checkout of the pin needs the commit's tree as well, so the
tree object is deleted from the code repository's object database (a
pruned or damaged clone): verify still passes, verify --deep fails and
names the key. An Icechunk pin is a tag on a snapshot, written by the
icechunk library; its snapshot file is then overwritten with garbage. Run
in git, colocated jj and jj datasets (the git store), and a git dataset
with an Icechunk store.
"""
import json

import pytest

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
from test_git_backend import add_code, code, dsv, gds, jj_problem  # noqa: F401 (fixtures)


def by_key(report):
    return {o["key"]: o for o in report["objects"]}


def loose_path(repo, sha):
    return repo.root / ".git" / "objects" / sha[:2] / sha[2:]


def damage_tree(code):
    """Delete the tree object of the code repository's HEAD (loose, as the
    fixture's commit left it); the commit and the tag stay."""
    tree = code.git("rev-parse", "HEAD^{tree}").strip()
    path = loose_path(code, tree)
    assert path.exists(), "the fixture's objects are loose"
    path.chmod(0o644)
    path.unlink()
    return tree


def test_git_deep_holds_then_fails_on_a_missing_tree(dsv, code):
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    r = dsv.tj("verify", "--deep")
    assert r["ok"] is True and r["deep"] is True and r["deep_failed"] == []
    assert by_key(r)["code"]["deep"] == "ok"
    assert dsv.tether("verify", "--deep").stdout == "ok code\n1 object verified (deep)\n"

    pin = dsv.manifest("code")["pin"]
    tree = damage_tree(code)
    # The ref check cannot see it: the tag still names the commit.
    assert dsv.tj("verify") == {"ok": True, "objects": [{"key": "code", "ok": True, "detail": None}]}
    r = dsv.tj("verify", "--deep", check_rc=3)
    assert r["ok"] is False and r["deep_failed"] == [{"key": "code", "pin": pin}]
    o = by_key(r)["code"]
    assert o["pin"] == pin
    assert o["ok"] is False and o["deep"] == "failed"
    assert o["detail"].startswith(f"deep check: tree {tree} of commit {code.head()} cannot be read")
    assert str(code.root) in o["detail"]
    lines = dsv.tether("verify", "--deep", check_rc=3).stdout.splitlines()
    assert lines[0].startswith(f"FAILED code: deep check: tree {tree}")
    assert lines[1:] == ["1 of 1 object failed verification", f"1 state failed the deep check: code (pin {pin})"]


def test_git_deep_over_history_names_the_damaged_state(gds, code):
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    first = code.head()
    code.write("more.txt", "more\n")
    code.git_commit_all("c2", "more.txt")
    gds.tether("commit", "-m", "two")
    # c2's tree is new; c1's stays, so only the newer state is damaged.
    damage_tree(code)
    assert gds.tj("verify", "--all-history")["ok"] is True
    r = gds.tj("verify", "--all-history", "--deep", check_rc=3)
    assert r["deep"] is True and r["deep_failed"] == [{"key": "code", "pin": gds.manifest("code")["pin"]}]
    states = {o["commit"]: o for o in r["objects"]}
    assert len(states) == 2
    failed = [o for o in r["objects"] if not o["ok"]]
    assert len(failed) == 1 and failed[0]["deep"] == "failed"
    assert code.head() in failed[0]["detail"] and first not in failed[0]["detail"]
    assert [o["deep"] for o in r["objects"] if o["ok"]] == ["ok"]


def test_git_deep_holds_in_a_packed_repository(gds, code):
    """After `git gc` every object is in a pack: the deep check reads them
    there, and still finds a pack that lost them."""
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    code.git("gc", "-q", "--prune=now")
    assert not loose_path(code, code.git("rev-parse", "HEAD^{tree}").strip()).exists()
    r = gds.tj("verify", "--deep")
    assert r["ok"] is True and by_key(r)["code"]["deep"] == "ok"
    # Lose the pack, keep the refs: the commit itself is gone now, which the
    # ref check already sees; deep says the same without a deep failure.
    for pack in (code.root / ".git" / "objects" / "pack").glob("pack-*"):
        pack.chmod(0o644)
        pack.unlink()
    r = gds.tj("verify", "--deep", check_rc=3)
    assert by_key(r)["code"]["ok"] is False and "deep" not in by_key(r)["code"]
    assert r["deep_failed"] == []


def test_deep_on_a_backend_without_a_deeper_check(gds):
    """The file backend has no verify_deep: its states are checked as verify
    checks them, and the output says so."""
    gds.write("data/a.csv", "x\n")
    gds.tether("add", "a", "data/a.csv", "--kind", "file")
    gds.tether("commit", "-m", "one")
    r = gds.tj("verify", "--deep")
    assert r["ok"] is True and r["deep_failed"] == []
    assert by_key(r)["a"]["deep"] == "unsupported"
    assert "ok a (no deep check for this kind: its ref was checked)" in gds.tether("verify", "--deep").stdout


@pytest.mark.parametrize("spec", [None, 1], ids=["spec2", "spec1"])
def test_icechunk_deep_fails_on_a_damaged_snapshot(gds, tmp_path, spec):
    """Both layouts icechunk 2.3 writes: spec 2, and spec 1's refs/."""
    store = tmp_path / "imaging.icechunk"
    oracle.create(store, spec=spec)
    gds.tether("add", "img", str(store), "--kind", "icechunk")
    gds.tether("commit", "-m", "one")
    snap = gds.manifest("img")["state"]["snapshot_id"]
    assert oracle.tag_target(store, gds.manifest("img")["pin_ref"]["tag"]) == snap
    r = gds.tj("verify", "--deep")
    assert r["ok"] is True and by_key(r)["img"]["deep"] == "ok"

    snapfile = store / "snapshots" / snap
    assert snapfile.exists()
    snapfile.write_bytes(b"not a snapshot" * 8)
    assert gds.tj("verify")["ok"] is True  # the tag still names the snapshot
    r = gds.tj("verify", "--deep", check_rc=3)
    o = by_key(r)["img"]
    assert r["deep_failed"] == [{"key": "img", "pin": gds.manifest("img")["pin"]}] and o["deep"] == "failed"
    assert o["detail"].startswith(f"deep check: snapshot {snap} cannot be read: ")
    p = gds.tether("verify", "--deep", "--json", check_rc=3)
    assert json.loads(p.stdout)["ok"] is False


def test_deep_is_in_help(gds):
    text = gds.tether("verify", "--help").stdout
    assert "--deep" in text and "verify [--all-history] [--deep] [--json]" in text
