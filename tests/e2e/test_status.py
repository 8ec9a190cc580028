"""tether status: never recorded, clean, modified, drifted, removed; with and
without a snapshot; and the errors it reports instead of a status."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import expected_dir_state, expected_file_state

STATUS_FIELDS = {"key", "kind", "tier", "status", "manifest", "recorded", "current", "pin", "detail"}


def by_key(report):
    return {o["key"]: o for o in report["objects"]}


def test_never_recorded_then_clean(plates):
    ds = plates
    r = ds.tj("status")
    assert r["dataset"] == str(ds.root)
    assert r["snapshot"] is True
    assert r["clean"] is False
    objs = by_key(r)
    assert list(objs) == ["raw/plates", "raw/samples"]
    for o in objs.values():
        assert STATUS_FIELDS <= set(o)
        assert o["kind"] == "file"
        assert o["tier"] == "observed"
        assert o["status"] == "never-recorded"
        assert o["manifest"] == "added"
        assert o["recorded"] is None
        assert o["pin"] is None
    assert objs["raw/plates"]["current"] == expected_dir_state(ds.p("data/plates"))
    assert objs["raw/samples"]["current"] == expected_file_state(ds.p("data/samples.csv"))

    p = ds.tether("status")
    assert p.stdout.splitlines() == [
        "  never recorded  raw/plates   (file, observed, manifest added)",
        "  never recorded  raw/samples  (file, observed, manifest added)",
        "2 objects: 2 never recorded",
    ]

    ds.tether("commit", "-m", "baseline")
    r = ds.tj("status")
    assert r["clean"] is True
    for key, o in by_key(r).items():
        assert o["status"] == "clean"
        assert o["manifest"] == "unchanged"
        assert o["recorded"] == o["current"]
        assert o["pin"] == ds.manifest(key)["pin"]
        assert o["detail"] is None
    p = ds.tether("status")
    assert p.stdout.splitlines() == [
        "  clean           raw/plates   (file, observed)",
        "  clean           raw/samples  (file, observed)",
        "2 objects: 2 clean",
    ]


def test_no_objects(ds):
    assert ds.tether("status").stdout == "no objects; register one with 'tether add'\n"
    r = ds.tj("status")
    assert r["objects"] == []
    assert r["clean"] is True


@pytest.mark.parametrize("change", ["changed", "added", "removed"])
def test_mutable_directory_modified(plates, change):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    recorded = expected_dir_state(ds.p("data/plates"))
    if change == "changed":  # same size, other bytes
        ds.write("data/plates/plate2.csv", "well,value\nB1,0.2\n")
    elif change == "added":
        ds.write("data/plates/sub/plate3.csv", "well,value\nC1,0.3\n")
    else:
        os.remove(ds.p("data/plates/plate1.csv"))
    current = expected_dir_state(ds.p("data/plates"))
    assert current != recorded

    p = ds.tether("status")  # modified is not a refusal: exit 0
    assert "  modified        raw/plates   (file, observed): digest " in p.stdout
    assert p.stdout.splitlines()[-1] == "2 objects: 1 clean, 1 modified"
    r = ds.tj("status")
    o = by_key(r)["raw/plates"]
    assert o["status"] == "modified"
    assert o["manifest"] == "unchanged"
    assert o["recorded"] == recorded
    assert o["current"] == current
    noun = "file" if current["count"] == 1 else "files"  # the noun agrees with the count it follows
    assert f"{recorded['count']} → {current['count']} {noun}" in o["detail"]
    assert f"{recorded['size']} → {current['size']} bytes" in o["detail"]
    assert r["clean"] is False
    assert by_key(r)["raw/samples"]["status"] == "clean"


def test_immutable_file_drift_exits_3(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    recorded = expected_file_state(ds.p("data/samples.csv"))
    ds.write("data/samples.csv", "sample,plate\ns1,plate9\n")  # same size
    current = expected_file_state(ds.p("data/samples.csv"))

    p = ds.tether("status", check_rc=3)
    line = [l for l in p.stdout.splitlines() if "raw/samples" in l][0]
    assert line.startswith("  drifted         raw/samples  (file, observed): immutable data changed: sha256 ")
    assert p.stdout.splitlines()[-1] == "2 objects: 1 clean, 1 drifted"
    # --json exits 3 as well, after printing the whole report
    r = ds.tj("status", check_rc=3)
    o = by_key(r)["raw/samples"]
    assert o["status"] == "drifted"
    assert o["recorded"] == recorded
    assert o["current"] == current
    assert o["detail"].startswith("immutable data changed")
    assert r["clean"] is False

    # the bytes put back: clean again
    ds.write("data/samples.csv", "sample,plate\ns1,plate1\n")
    assert by_key(ds.tj("status"))["raw/samples"]["status"] == "clean"


def test_immutable_directory_drift(ds):
    ds.write("data/imm/a", "a")
    ds.tether("add", "imm", "data/imm", "--kind", "file")
    ds.tether("commit", "-m", "c")
    ds.write("data/imm/b", "b")
    r = ds.tj("status", check_rc=3)
    assert by_key(r)["imm"]["status"] == "drifted"


def test_mtime_alone_is_not_a_change(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    for f in ("data/samples.csv", "data/plates/plate1.csv"):
        os.utime(ds.p(f), ns=(0, 0))
    r = ds.tj("status")
    assert {o["status"] for o in r["objects"]} == {"clean"}
    # and with touch -d, as a user would
    subprocess.run(["touch", "-d", "2001-02-03 04:05:06", str(ds.p("data/samples.csv")),
                    str(ds.p("data/plates/plate2.csv"))], check=True)
    r = ds.tj("status")
    assert r["clean"] is True
    assert {o["status"] for o in r["objects"]} == {"clean"}


def test_settled_hash_cache_still_sees_a_same_size_same_mtime_rewrite(ds):
    """The one test that waits: the hash cache trusts a hash only once the
    file's times are two seconds older than the hash, so the file must be
    that old before the first status for the cache to be used at all."""
    path = ds.write("data/f.bin", b"A" * 64)
    ds.tether("add", "f", "data/f.bin", "--kind", "file")
    ds.tether("add", "d", "data", "--kind", "file")
    time.sleep(2.1)
    ds.tether("commit", "-m", "c")
    assert ds.tj("status")["clean"] is True  # served from the cache
    cache = list((ds.root / ".tether" / "cache").iterdir())
    assert cache, "the hash cache was not written"
    st = os.stat(path)
    path.write_bytes(b"B" * 64)  # same size ...
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... same mtime
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    r = ds.tj("status", check_rc=3)
    assert by_key(r)["f"]["status"] == "drifted"
    assert by_key(r)["f"]["current"] == expected_file_state(path)
    assert by_key(r)["d"]["status"] == "drifted"
    assert by_key(r)["d"]["current"] == expected_dir_state(ds.p("data"))


def test_corrupt_hash_cache_is_ignored(plates):
    ds = plates
    ds.tether("commit", "-m", "c")
    cache_dir = ds.root / ".tether" / "cache"
    files = list(cache_dir.iterdir())
    assert files
    for f in files:
        f.write_bytes(b"TTHCACHE" + b"\xff" * 100)
    assert ds.tj("status")["clean"] is True
    ds.write("data/plates/plate1.csv", "changed\n")
    assert by_key(ds.tj("status"))["raw/plates"]["status"] == "modified"


def test_no_snapshot_reports_no_live_state(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    ds.write("data/samples.csv", "drifted!")  # would be drift if looked at
    ds.write("data/plates/new.csv", "n")
    r = ds.tj("status", "--no-snapshot")  # exit 0: nothing was checked
    assert r["snapshot"] is False
    for o in r["objects"]:
        assert o["current"] is None
        assert o["status"] == "unknown"
        assert o["manifest"] == "unchanged"
        assert o["recorded"] == ds.manifest(o["key"])["state"]
    p = ds.tether("status", "--no-snapshot")
    assert p.stdout.splitlines() == [
        "  unchanged       raw/plates   (file, observed)",
        "  unchanged       raw/samples  (file, observed)",
        "2 objects: 2 unchanged; data not checked (run 'tether status --snapshot')",
    ]
    # of the pair, the later one wins
    assert ds.tj("status", "--snapshot", "--no-snapshot")["snapshot"] is False
    r = ds.tj("status", "--no-snapshot", "--snapshot", check_rc=3)
    assert r["snapshot"] is True
    assert by_key(r)["raw/samples"]["status"] == "drifted"


def test_snapshot_auto_false_in_config(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    cfg = ds.p("tether.toml")
    cfg.write_text(cfg.read_text().replace("auto = true", "auto = false"))
    ds.write("data/plates/new.csv", "n")
    assert ds.tj("status")["snapshot"] is False
    r = ds.tj("status", "--snapshot")
    assert r["snapshot"] is True
    assert by_key(r)["raw/plates"]["status"] == "modified"


def test_manifest_changed_and_removed(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    m = ds.manifest_path("raw/samples")
    m.write_text(m.read_text().replace('file = "immutable"', 'file = "mutable"'))
    os.remove(ds.manifest_path("raw/plates"))
    r = ds.tj("status")
    objs = by_key(r)
    assert r["clean"] is False
    assert objs["raw/samples"]["manifest"] == "changed"
    assert objs["raw/samples"]["status"] == "clean"
    assert objs["raw/plates"]["manifest"] == "removed"
    assert objs["raw/plates"]["current"] is None
    assert objs["raw/plates"]["recorded"] == ds.manifest_at("HEAD", "raw/plates")["state"]
    p = ds.tether("status")
    assert "  removed         raw/plates   (file, unknown)" in p.stdout.splitlines()
    assert "  clean           raw/samples  (file, observed, manifest changed)" in p.stdout.splitlines()


def test_deleted_data(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    os.remove(ds.p("data/samples.csv"))
    r = ds.tj("status", check_rc=3)
    o = by_key(r)["raw/samples"]
    assert o["status"] == "drifted"
    assert o["current"] == {"type": "missing"}
    assert "no longer exists" in o["detail"]


def test_status_from_a_subdirectory(plates):
    ds = plates
    r = ds.tj("status", cwd=ds.p("data/plates"))
    assert r["dataset"] == str(ds.root)
    assert len(r["objects"]) == 2


def test_malformed_manifest_names_file_line_and_column(plates):
    ds = plates
    bad = ds.write(".tether/objects/bad.toml", 'kind = "file"\n[locator\nuri = "/x"\n')
    p = ds.tether("status", check_rc=1)
    assert f"{bad}:2:9:" in p.stderr
    assert p.stdout == ""
    p = ds.tether("status", "--json", check_rc=1)
    assert p.stdout == ""


def test_manifest_with_unknown_key(plates):
    ds = plates
    path = ds.manifest_path("raw/samples")
    path.write_text("colour = \"blue\"\n" + path.read_text())
    p = ds.tether("status", check_rc=1)
    assert str(path) in p.stderr
    assert "colour" in p.stderr


def test_outside_a_dataset(repo, run, tmp_path):
    p = repo.tether("status", check_rc=1)
    assert "no tether dataset" in p.stderr
    assert p.stdout == ""
    plain = tmp_path / "plain"
    plain.mkdir()
    p = run("status", cwd=plain, check_rc=1)
    assert "no tether dataset" in p.stderr


def test_tracked_secrets_refused(plates):
    ds = plates
    ds.write(".tether/secrets.toml", "[objects]\n")
    ds.tj("status")  # untracked: fine
    ds.git("add", "-f", ".tether/secrets.toml")
    p = ds.tether("status", check_rc=3)
    assert ".tether/secrets.toml" in p.stderr
    assert "tracked" in p.stderr
    assert p.stdout == ""


# -- the comparison with HEAD, however git stores HEAD --------------------------

def two_commits(ds):
    """c1 records a and d; c2 records a change to d. Returns (c1, c2)."""
    ds.write("data/a", "a")
    ds.write("data/d/x", "x")
    ds.tether("add", "a", "data/a", "--kind", "file")
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    c1 = ds.tj("commit", "-m", "c1")["commit"]
    ds.write("data/d/y", "y")
    c2 = ds.tj("commit", "-m", "c2")["commit"]
    return c1, c2


def manifest_states(report):
    return {o["key"]: o["manifest"] for o in report["objects"]}


def test_head_moved_back_by_git(ds):
    c1, c2 = two_commits(ds)
    assert manifest_states(ds.tj("status")) == {"a": "unchanged", "d": "unchanged"}
    ds.git("reset", "-q", "--soft", c1)  # the working manifests are c2's
    r = ds.tj("status")
    assert manifest_states(r) == {"a": "unchanged", "d": "changed"}
    assert r["clean"] is False
    ds.git("reset", "-q", "--soft", c2)
    assert ds.tj("status")["clean"] is True


def test_manifest_edit_committed_with_plain_git(ds):
    two_commits(ds)
    path = ds.manifest_path("a")
    path.write_text(path.read_text().replace('file = "immutable"', 'file = "mutable"'))
    assert manifest_states(ds.tj("status"))["a"] == "changed"
    ds.git("commit", "-q", "-am", "a is mutable now")
    assert manifest_states(ds.tj("status"))["a"] == "unchanged"
    # amended with plain git: another commit id, the same manifests
    ds.git("commit", "-q", "--amend", "-m", "reworded")
    assert ds.tj("status")["clean"] is True


def test_packed_refs_detached_head(ds):
    c1, c2 = two_commits(ds)
    ds.git("pack-refs", "--all", "--prune")
    assert not (ds.root / ".git" / "refs" / "heads" / "main").exists()
    assert ds.tj("status")["clean"] is True
    ds.git("checkout", "-q", "--detach", c1)
    # checkout rewrote the manifests to c1's: unchanged against c1 (the data is c2's)
    assert manifest_states(ds.tj("status")) == {"a": "unchanged", "d": "unchanged"}
    ds.git("checkout", "-q", "main")
    assert ds.git("rev-parse", "HEAD").strip() == c2
    assert ds.tj("status")["clean"] is True
    ds.git("update-ref", "refs/heads/main", c1)  # main moves, HEAD follows it, files stay c2's
    assert manifest_states(ds.tj("status"))["d"] == "changed"


def test_status_in_a_git_worktree(ds):
    c1, c2 = two_commits(ds)
    wt = ds.root.parent / "wt"
    ds.git("worktree", "add", "-q", "--detach", str(wt), c1)
    r = ds.tj("status", cwd=wt)
    assert r["dataset"] == str(wt)
    assert manifest_states(r) == {"a": "unchanged", "d": "unchanged"}
    # the worktree's manifests are c1's; the data (one store) is c2's
    assert {o["key"]: o["status"] for o in r["objects"]} == {"a": "clean", "d": "modified"}
    # the main checkout is unaffected
    assert ds.tj("status")["clean"] is True


def test_a_listing_gc_removed_is_shown_by_status_and_reported_by_commit(plates):
    """gc removes a committed listing no working manifest names: status
    shows the removal as pending, and the commit that records it says so
    instead of calling everything unchanged."""
    plates.tether("commit", "-m", "baseline")
    first = plates.manifest("raw/plates")["listing"]
    plates.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    plates.tether("commit", "-m", "plate 3")
    assert plates.tj("status")["files"] == []

    r = plates.tj("gc", "--no-dry-run")
    assert r["listings"] == [first] and r["commit_needed"] is True
    rel = f".tether/listings/{first}.jsonl"
    s = plates.tj("status")
    assert s["clean"] is False
    assert s["files"] == [{"path": rel, "change": "removed"}]
    assert f"  {'removed':<14}  {rel}  (to be recorded by the next commit)\n" in plates.tether("status").stdout

    c = plates.tj("commit", "-m", "drop listing")
    assert c["commit"] and c["files"] == [{"path": rel, "change": "removed"}]
    assert all(o["action"] == "unchanged" for o in c["objects"])
    assert plates.commit_files() == [rel]
    assert plates.tj("status")["files"] == [] and plates.tj("status")["clean"] is True
    out = plates.tether("commit", "-m", "again").stdout
    assert out == "nothing to commit: every object is unchanged\n"


def test_commit_text_names_the_listing_removal_it_records(plates):
    plates.tether("commit", "-m", "baseline")
    first = plates.manifest("raw/plates")["listing"]
    plates.write("data/plates/plate3.csv", "x\n")
    plates.tether("commit", "-m", "plate 3")
    out = plates.tether("gc", "--no-dry-run").stdout
    assert "`tether commit` records their removal" in out
    out = plates.tether("commit", "-m", "drop").stdout
    assert f"removed   .tether/listings/{first}.jsonl" in out


# -- one object that cannot be read hides nothing else -------------------------

def plates_and_gone_code(plates, new_repo):
    """plates plus a git object `code`, all committed, then the code
    repository removed: its store is unreachable."""
    import shutil
    code = new_repo("code")
    code.write("main.py", "a\n")
    code.git_commit_all("c1", "main.py")
    plates.tether("add", "code", code.root, "--kind", "git")
    plates.tether("commit", "-m", "first")
    plates.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    shutil.rmtree(code.root)
    return plates


def test_an_unreachable_store_is_reported_with_every_other_object(plates, new_repo):
    ds = plates_and_gone_code(plates, new_repo)
    p = ds.tether("status", "--json", check_rc=1)
    r = json.loads(p.stdout)
    objs = by_key(r)
    assert set(objs) == {"code", "raw/plates", "raw/samples"}
    assert objs["code"]["status"] == "error"
    assert "code" in objs["code"]["detail"] and objs["code"]["current"] is None
    assert objs["raw/plates"]["status"] == "modified"
    assert objs["raw/samples"]["status"] == "clean"
    assert r["errors"] == 1 and r["clean"] is False
    assert "1 object could not be checked" in p.stderr
    p = ds.tether("status", check_rc=1)
    lines = p.stdout.splitlines()
    assert lines[0].split()[:2] == ["error", "code"], p.stdout
    assert any(line.split()[:2] == ["modified", "raw/plates"] for line in lines)
    assert any(line.split()[:2] == ["clean", "raw/samples"] for line in lines)
    assert lines[-1] == "3 objects: 1 clean, 1 modified, 1 error"
    assert "1 object could not be checked" in p.stderr


def test_an_unreachable_store_outranks_drift_in_the_exit_code(plates, new_repo):
    ds = plates_and_gone_code(plates, new_repo)
    ds.write("data/samples.csv", "changed\n")
    r = by_key(ds.tj("status", check_rc=1))
    assert r["raw/samples"]["status"] == "drifted" and r["code"]["status"] == "error"
    # Without a snapshot no store is contacted: nothing to fail.
    ds.tj("status", "--no-snapshot")
