"""tether open: the handle of an object, at a revision or on the working ref.

An observed object (kind file) has no past states to hand out: its handle
names today's bytes. At a revision it is handed out only while those bytes
are still the ones the revision recorded."""
import json

from conftest import expected_file_state


def test_open_at_a_revision_hands_out_an_observed_object_whose_bytes_still_match(plates):
    plates.tether("commit", "-m", "first")
    h = plates.tj("open", "raw/samples", "-r", "HEAD")
    assert h["read_only"] is True
    assert h["rev"] == plates.head()
    assert h["state"] == expected_file_state(plates.p("data/samples.csv"))
    assert "warnings" not in h


def test_open_at_a_revision_refuses_an_observed_object_whose_bytes_changed(plates):
    plates.tether("commit", "-m", "first")
    first = plates.head()
    recorded = expected_file_state(plates.p("data/samples.csv"))
    plates.write("data/samples.csv", "sample,plate\ns1,plate9\n")
    for args in (("-r", "HEAD"), ("-r", first), ("--json", "-r", "HEAD")):
        p = plates.tether("open", "raw/samples", *args, check_rc=3)
        assert p.stdout == ""
        assert "raw/samples" in p.stderr and "changed since" in p.stderr, p.stderr
        assert "--allow-drift" in p.stderr
    # $TETHER_REV is a revision too.
    plates.tether("open", "raw/samples", env={"TETHER_REV": "HEAD"}, check_rc=3)
    # A directory, even a mutable one: its listing at HEAD is not what is there.
    plates.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    p = plates.tether("open", "raw/plates", "-r", "HEAD", check_rc=3)
    assert "raw/plates" in p.stderr
    # The bytes back as they were: handed out again.
    plates.write("data/samples.csv", "sample,plate\ns1,plate1\n")
    assert plates.tj("open", "raw/samples", "-r", "HEAD")["state"] == recorded


def test_allow_drift_hands_out_a_changed_observed_object_with_a_warning(plates):
    plates.tether("commit", "-m", "first")
    recorded = expected_file_state(plates.p("data/samples.csv"))
    plates.write("data/samples.csv", "changed\n")
    p = plates.tether("open", "raw/samples", "-r", "HEAD", "--allow-drift", "--json")
    h = json.loads(p.stdout)
    assert h["state"] == recorded
    assert len(h["warnings"]) == 1 and "changed since" in h["warnings"][0]
    assert p.stderr.startswith("warning: raw/samples"), p.stderr
    # Text and env: the warning on stderr, not among the handle's fields.
    p = plates.tether("open", "raw/samples", "-r", "HEAD", "--allow-drift")
    assert "warnings" not in p.stdout and "warning: " in p.stderr
    p = plates.tether("open", "raw/samples", "-r", "HEAD", "--allow-drift", "--format", "env")
    assert "WARNINGS" not in p.stdout and "warning: " in p.stderr
