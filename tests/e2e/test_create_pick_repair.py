"""add --create, add --pick and repair, with their bad inputs."""
import subprocess

from conftest import TETHER_BIN, check_sanitizers
from test_git_backend import add_code, code, code_commit, gds, jj_problem, tags  # noqa: F401


def tether_stdin(ds, stdin, *args, check_rc=0):
    """tether with something on standard input (--pick reads its choice)."""
    p = subprocess.run([TETHER_BIN, *map(str, args)], cwd=str(ds.root), env=ds.env, input=stdin,
                       capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == check_rc, p.stderr
    return p


def git_at(path, *args):
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True).stdout


def test_create_makes_the_same_empty_root_everywhere(gds, tmp_path):
    a, b = tmp_path / "store-a", tmp_path / "store-b"
    gds.tether("add", "a", str(a), "--kind", "git", "--create")
    gds.tether("add", "b", str(b), "--kind", "git", "--create")
    root_a = git_at(a, "rev-parse", "HEAD").strip()
    assert root_a == git_at(b, "rev-parse", "HEAD").strip()
    assert git_at(a, "log", "--format=%an <%ae> %at %s").strip() == "tether <tether@localhost> 0 tether: empty root"
    assert git_at(a, "config", "tether.owner").strip() == gds.dataset_id()
    assert gds.manifest("a")["locator"]["path"] == str(a)


def test_create_refuses_a_path_that_holds_anything_and_writes_nothing(gds, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("data\n")
    before = gds.objects_files()
    p = gds.tether("add", "c", str(full), "--kind", "git", "--create", check_rc=3)
    assert "already exists and is not empty" in p.stderr
    assert gds.objects_files() == before
    assert sorted(q.name for q in full.iterdir()) == ["x"]


def test_create_is_refused_for_a_kind_without_create(gds, tmp_path):
    p = gds.tether("add", "f", str(tmp_path), "--kind", "file", "--create", check_rc=2)
    assert p.stderr.startswith("tether: error: kind file cannot create its stores")
    assert not gds.manifest_path("f").exists()


def test_pick_starts_from_the_chosen_entry(gds, code):
    first = code.head()
    code_commit(code, {"main.py": "changed\n"}, "c2")
    p = tether_stdin(gds, "2\n", "add", "code", code.root, "--kind", "git", "--pick")
    assert "start from which entry [1-2]?" in p.stderr
    assert gds.manifest("code")["locator"]["at"] == first


def test_pick_refuses_a_choice_out_of_range_and_writes_nothing(gds, code):
    p = tether_stdin(gds, "7\n", "add", "code", code.root, "--kind", "git", "--pick", check_rc=2)
    assert "no valid choice" in p.stderr
    assert not gds.manifest_path("code").exists()


def test_repair_recreates_a_deleted_pin_and_reports_a_lost_state(gds, code):
    add_code(gds, code)
    gds.tether("commit", "-m", "pin")
    pin = gds.manifest("code")["pin"]
    code.git("tag", "-d", f"tether.{pin}")
    assert gds.tether("verify", check_rc=3)
    dry = gds.tj("repair", "--dry-run")
    assert [o["action"] for o in dry["objects"]] == ["would-repin"]
    assert f"tether.{pin}" not in tags(code)
    r = gds.tj("repair")
    assert [o["action"] for o in r["objects"]] == ["repinned"] and r["ok"] is True
    assert f"tether.{pin}" in tags(code)
    gds.tether("verify")
    # A state the repository no longer holds cannot be pinned again.
    code.git("tag", "-d", f"tether.{pin}")
    code.git("commit", "-q", "--amend", "-m", "rewritten")
    code.git("reflog", "expire", "--expire=now", "--all")
    code.git("gc", "-q", "--prune=now")
    r = gds.tj("repair", check_rc=3)
    assert [o["action"] for o in r["objects"]] == ["lost"] and r["ok"] is False
