"""tether verify: every recorded state still holds, listings included."""
import os


def by_key(report):
    return {o["key"]: o for o in report["objects"]}


def test_ok_after_commit(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    p = ds.tether("verify")
    assert p.stdout == "ok raw/plates\nok raw/samples\n2 objects verified\n"
    r = ds.tj("verify")
    assert r == {"ok": True, "objects": [
        {"key": "raw/plates", "ok": True, "detail": None},
        {"key": "raw/samples", "ok": True, "detail": None},
    ]}


def test_never_recorded_is_ok(plates):
    r = plates.tj("verify")
    assert r["ok"] is True
    assert {o["key"]: o["ok"] for o in r["objects"]} == {"raw/plates": True, "raw/samples": True}


def test_deleted_listing_fails(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    listing = ds.manifest("raw/plates")["listing"]
    os.remove(ds.listing_path(listing))
    p = ds.tether("verify", check_rc=3)
    lines = p.stdout.splitlines()
    assert lines[0].startswith("FAILED raw/plates: ")
    assert listing in lines[0]
    assert lines[1] == "ok raw/samples"
    assert lines[2] == "1 of 2 objects failed verification"
    r = ds.tj("verify", check_rc=3)  # --json exits 3 too
    assert r["ok"] is False
    o = by_key(r)["raw/plates"]
    assert o["ok"] is False
    assert listing in o["detail"]
    assert by_key(r)["raw/samples"]["ok"] is True


def test_altered_listing_fails(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    listing = ds.manifest("raw/plates")["listing"]
    path = ds.listing_path(listing)
    path.write_bytes(path.read_bytes().replace(b'"s":', b'"s":1', 1))
    r = ds.tj("verify", check_rc=3)
    assert by_key(r)["raw/plates"]["ok"] is False
    assert "corrupt" in by_key(r)["raw/plates"]["detail"]


def test_changed_directory_data_fails(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    ds.write("data/plates/plate2.csv", "well,value\nB1,0.9\n")
    p = ds.tether("verify", check_rc=3)
    assert p.stdout.splitlines()[0].startswith("FAILED raw/plates: changed since recorded")
    r = ds.tj("verify", check_rc=3)
    assert by_key(r)["raw/plates"]["ok"] is False
    assert by_key(r)["raw/samples"]["ok"] is True


def test_changed_or_deleted_file_fails(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    ds.write("data/samples.csv", "sample,plate\ns1,plate1\ns2,plate2\n")
    r = ds.tj("verify", check_rc=3)
    o = by_key(r)["raw/samples"]
    assert o["ok"] is False
    assert "changed since recorded" in o["detail"]
    os.remove(ds.p("data/samples.csv"))
    r = ds.tj("verify", check_rc=3)
    assert "no longer exists" in by_key(r)["raw/samples"]["detail"]
    # restored: ok again
    ds.write("data/samples.csv", "sample,plate\ns1,plate1\n")
    ds.tj("verify")


def test_verify_outside_dataset(repo):
    p = repo.tether("verify", check_rc=1)
    assert "no tether dataset" in p.stderr


def test_an_unreachable_store_fails_alone(plates, new_repo):
    from test_status import plates_and_gone_code
    ds = plates_and_gone_code(plates, new_repo)
    r = by_key(ds.tj("verify", check_rc=3))
    assert r["code"]["ok"] is False and r["code"]["detail"]
    assert r["raw/samples"]["ok"] is True
    for args in ((), ("--all-history",)):
        p = ds.tether("verify", *args, check_rc=3)
        assert "ok raw/samples" in p.stdout and "FAILED code" in p.stdout, p.stdout
