"""[verify] on_status = true: status checks that every pin HEAD's manifests
name still exists, and reports the object whose pin is gone.

Without it (the default, on_status = false) status says nothing about pins:
a pin tag deleted behind tether's back leaves the object "clean". With it,
the same deletion makes the object "unpinned" and status exit 3, as drift
does. A git code repository (in git, colocated jj and jj datasets) and an
Icechunk store (its tag deleted with the icechunk library).
"""
import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
from test_git_backend import add_code, code, dsv, gds, jj_problem  # noqa: F401 (fixtures)


def set_on_status(ds, value):
    path = ds.p("tether.toml")
    text = path.read_text()
    old = "on_status = true" if "on_status = true" in text else "on_status = false"
    assert old in text
    path.write_text(text.replace(old, f"on_status = {'true' if value else 'false'}"))


def obj(report, key):
    return next(o for o in report["objects"] if o["key"] == key)


def test_a_deleted_git_pin_is_reported_only_with_on_status(dsv, code):
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    tag = dsv.manifest("code")["pin_ref"]["tag"]
    code.git("tag", "-d", tag)

    # on_status = false: nothing is checked.
    r = dsv.tj("status")
    assert obj(r, "code")["status"] == "clean" and r["clean"] is True
    assert "pins" not in r

    # on_status = true (and committed, so the dataset is otherwise clean).
    set_on_status(dsv, True)
    dsv.tether("commit", "-m", "check pins on status")
    r = dsv.tj("status", check_rc=3)
    o = obj(r, "code")
    assert o["status"] == "unpinned"
    assert o["detail"].startswith(f"pin {dsv.manifest('code')['pin']}: tag {tag} is missing")
    assert r["clean"] is False
    assert r["pins"]["checked"] == 1
    assert [m["key"] for m in r["pins"]["missing"]] == ["code"]
    text = dsv.tether("status", check_rc=3).stdout
    assert "  unpinned        code  (git, forkable): pin " in text
    assert "1 object: 1 unpinned\n" in text
    assert "1 pin checked ([verify] on_status): 1 missing; `tether repair`" in text
    # --no-snapshot contacts no system, so no pin is checked either.
    r = dsv.tj("status", "--no-snapshot")
    assert "pins" not in r

    # The pin re-created (repair): clean again, and status says so.
    dsv.tether("repair")
    r = dsv.tj("status")
    assert obj(r, "code")["status"] == "clean" and r["clean"] is True
    assert r["pins"] == {"checked": 1, "missing": []}
    assert "1 pin checked ([verify] on_status): all held\n" in dsv.tether("status").stdout


def test_an_unborn_head_has_no_pins_to_check(gds, code):
    set_on_status(gds, True)
    add_code(gds, code)
    r = gds.tj("status")
    assert r["pins"] == {"checked": 0, "missing": []}
    assert obj(r, "code")["status"] == "never-recorded"


def test_a_deleted_icechunk_pin_is_reported(gds, tmp_path):
    store = tmp_path / "imaging.icechunk"
    oracle.create(store)
    set_on_status(gds, True)
    gds.tether("add", "img", str(store), "--kind", "icechunk")
    gds.tether("commit", "-m", "one")
    r = gds.tj("status")
    assert r["pins"] == {"checked": 1, "missing": []} and obj(r, "img")["status"] == "clean"
    tag = gds.manifest("img")["pin_ref"]["tag"]
    oracle.delete_tag(store, tag)
    r = gds.tj("status", check_rc=3)
    assert obj(r, "img")["status"] == "unpinned"
    assert [m["key"] for m in r["pins"]["missing"]] == ["img"]
    assert f"tag {tag} is missing" in obj(r, "img")["detail"]
