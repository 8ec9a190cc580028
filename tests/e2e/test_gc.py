"""gc and verify --all-history: history walks over every ref."""


def commit_twice(plates):
    plates.tether("commit", "-m", "baseline")
    first = plates.manifest("raw/plates")["listing"]
    plates.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    plates.tether("commit", "-m", "plate 3")
    second = plates.manifest("raw/plates")["listing"]
    assert first != second
    return first, second


def test_gc_dry_run_reports_orphaned_listing_and_changes_nothing(plates):
    first, second = commit_twice(plates)
    before = plates.tree()
    r = plates.tj("gc")
    assert r["dry_run"] is True
    assert r["listings"] == [first]
    assert r["release"] == []
    assert r["commits"] == 2
    assert plates.tree() == before
    assert "dry run" in plates.tether("gc").stdout


def test_gc_removes_orphaned_listing_and_old_diffs_still_work(plates):
    first, second = commit_twice(plates)
    r = plates.tj("gc", "--no-dry-run")
    assert r["dry_run"] is False and r["listings"] == [first]
    assert not plates.listing_path(first).exists()
    assert plates.listing_path(second).exists()
    assert plates.tj("gc")["listings"] == []
    # The listing is still in the commit that named it: diffs read it there.
    c = plates.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert c["totals"]["added"] == 1
    # The removal is committed with the next change, and verify stays clean.
    plates.write("data/plates/plate4.csv", "x\n")
    plates.tether("commit", "-m", "plate 4")
    assert f".tether/listings/{first}.jsonl" in plates.commit_files()
    plates.tether("verify")


def test_gc_counts_commits_on_every_ref(plates):
    plates.tether("commit", "-m", "baseline")
    plates.git("checkout", "-q", "-b", "side")
    plates.write("data/plates/side.csv", "s\n")
    plates.tether("commit", "-m", "on side")
    plates.git("checkout", "-q", "main")
    assert plates.tj("gc")["commits"] == 2


def test_verify_all_history_checks_each_distinct_state_once(plates):
    commit_twice(plates)
    r = plates.tj("verify", "--all-history")
    assert r["ok"] is True
    assert r["all_history"] is True and r["commits"] == 2
    # raw/plates: two states (observed, skipped), raw/samples: one state.
    keys = sorted(o["key"] for o in r["objects"])
    assert keys == ["raw/plates", "raw/plates", "raw/samples"]
    assert all("not recoverable" in (o["detail"] or "") for o in r["objects"])


def test_gc_refuses_a_tracked_secrets_file(plates):
    plates.tether("commit", "-m", "baseline")
    plates.write(".tether/secrets.toml", "")
    plates.git("add", "-f", ".tether/secrets.toml")
    p = plates.tether("gc", check_rc=3)
    assert "secrets.toml" in p.stderr
