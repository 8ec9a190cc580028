"""The hostile clone (issue 9, items 10 and 14): a committed symlink at
.tether or anywhere under it, or a FIFO, socket, device or directory where
tether expects a file, is refused by every command before anything is read
through it, written, executed or contacted. Each clone is a real git
repository, cloned as a victim would; see hostile.py for the checks and
for how to add a case."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import TETHER_BIN
from hostile import Sandbox

if not shutil.which("strace"):  # scripts/install-deps installs it
    pytest.skip("strace is not installed", allow_module_level=True)

LINK = "is a symbolic link: tether never follows a link inside the dataset"
INIT = {"init": (3, r"a tether dataset already exists at ")}


def link_message(clone, rel):
    return "^tether: error: " + re.escape(f"{clone}/{rel} {LINK}") + "$"


def kind_message(clone, rel, kind, want="a regular file"):
    return "^tether: error: " + re.escape(f"{clone}/{rel} is {kind}, not {want}") + "$"


def bend(sb, a, case):
    """Commit the attack `case` into the attacker's repository. Returns the
    path (relative to the dataset) the refusal must name."""
    tether = a.root / ".tether"
    if case == "dot-tether":
        # .tether -> t, with a force-added t/secrets.toml choosing where the
        # victim's code repository is pushed.
        shutil.move(str(tether), str(a.root / "t"))
        (a.root / "t" / "secrets.toml").write_text(f'[objects."code"]\nremote = "file://{sb.sink}"\n')
        a.symlink(".tether", "t")
        return ".tether"
    if case == "secrets":
        # secrets.toml -> a tracked file elsewhere in the dataset: the
        # tracked check must be about the real file.
        a.write("evil.toml", f'[objects."code"]\nremote = "file://{sb.sink}"\n')
        a.symlink(".tether/secrets.toml", "../evil.toml")
        return ".tether/secrets.toml"
    if case == "cache":
        sb.trap_file("cache/keep")
        a.symlink(".tether/cache", sb.trap / "cache")
        return ".tether/cache"
    if case == "listings":
        sb.trap_file("listings/" + "0" * 64 + ".jsonl")
        a.symlink(".tether/listings", sb.trap / "listings")
        return ".tether/listings"
    if case == "lock":
        a.symlink(".tether/lock", sb.trap_file("lock"))
        return ".tether/lock"
    if case == "workspace":
        a.symlink(".tether/workspace.toml", sb.trap_file("workspace.toml"))
        return ".tether/workspace.toml"
    if case == "gitignore":
        a.symlink(".tether/.gitignore", sb.trap_file("gitignore"))
        return ".tether/.gitignore"
    if case == "objects-dir":
        sb.trap_file("objects/x.toml", f'kind = "git"\n[locator]\npath = "{sb.marker}"\n')
        a.symlink(".tether/objects/evil", sb.trap / "objects")
        return ".tether/objects/evil"
    if case == "manifest":
        a.symlink(".tether/objects/m.toml", sb.trap_file("m.toml"))
        return ".tether/objects/m.toml"
    if case == "objects-loop":
        for name in "abc":
            a.symlink(f".tether/objects/{name}", ".")
        return ".tether/objects/[abc]"
    if case == "tether-toml":
        a.symlink("tether.toml", sb.trap_file("tether.toml"))
        return "tether.toml"
    raise AssertionError(case)


LINK_CASES = ["dot-tether", "secrets", "cache", "listings", "lock", "workspace", "gitignore",
              "objects-dir", "manifest", "objects-loop", "tether-toml"]


@pytest.mark.parametrize("case", LINK_CASES)
def test_committed_symlink_is_refused_by_every_command(tmp_path, case):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    rel = bend(sb, a, case)
    a.commit(f"hostile: {case}")
    clone = sb.clone(a)
    arrived = [clone / "tether.toml", clone / ".tether", *(clone / "t").rglob("*"),
               *(clone / ".tether").rglob("*")]
    assert any(p.is_symlink() for p in arrived), "git clone did not make the committed link"
    msg = link_message(clone, rel)
    if case == "objects-loop":
        msg = msg.replace(re.escape("[abc]"), "[abc]")
    # Every link is refused on one path (the dataset's own files are
    # checked when it is opened): one case runs it for LeakSanitizer too.
    sb.run_all(clone, rc=3, message=msg, expect=INIT, leaks=case == LINK_CASES[0])


def special_cases(sb, clone):
    """(what to put where, the refusal's kind) for files git cannot carry."""
    yield "tether.toml", sb.mkfifo, "a FIFO"
    yield ".tether/objects/code.toml", sb.mkfifo, "a FIFO"
    yield ".tether/workspace.toml", sb.mkfifo, "a FIFO"
    yield ".tether/lock", sb.mksocket, "a socket"
    yield ".tether/secrets.toml", os.mkdir, "a directory"
    yield "tether.toml", os.mkdir, "a directory"
    if os.geteuid() == 0:
        yield ".tether/objects/dev.toml", lambda p: os.mknod(p, 0o600 | 0o020000, os.makedev(1, 3)), \
            "a character device"


@pytest.mark.parametrize("index", range(7))
def test_special_file_in_place_of_a_file_is_refused_without_blocking(tmp_path, index):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    cases = list(special_cases(sb, clone))
    if index >= len(cases):
        pytest.skip("making a device needs root")
    rel, make, kind = cases[index]
    target = clone / rel
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    make(target)
    sb.run_all(clone, rc=3, message=kind_message(clone, rel, kind), expect=INIT, leaks=index == 0)


def test_a_benign_clone_passes_the_same_checks(tmp_path):
    """The control: in a clone nobody bent, every command does its work
    under the same tracer, and writes only in the dataset, HOME and the
    object's own repository; nothing is executed or connected. So the
    refusals above are not the checker rejecting everything."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    (clone / "extra.txt").write_text("extra\n")
    traces = sb.run_all(clone, rc=None, message=None, may_write=[sb.code.root],
                        expect={"init": (3, r"already exists")})
    codes = {" ".join(cmd): t.proc.returncode for cmd, t in traces.items()}
    assert codes["status"] == 0 and codes["verify"] == 0 and codes["log"] == 0, codes
    assert codes["add extra extra.txt --kind file"] == 0, codes


def test_the_checker_sees_a_read_a_write_and_a_process(tmp_path):
    """The checks can fail: a read of the trap, a write outside the allowed
    directories and a process started are each reported."""
    sb = Sandbox(tmp_path)
    trap = sb.trap_file("secret")
    outside = tmp_path / "outside"
    t = sb.trace(["sh", "-c", f"cat {trap} >/dev/null; echo x > {outside}; true"], tmp_path)
    bad = t.violations([tmp_path / "allowed", sb.home], [sb.trap])
    assert any("secret" in b and "committed link" in b for b in bad), bad
    assert any(str(outside) in b and "outside the dataset" in b for b in bad), bad
    assert any(b.startswith("executed /usr/bin/cat") or b.startswith("executed /bin/cat") for b in bad), bad


def test_plan_into_a_missing_directory_is_refused_and_not_created(tmp_path):
    """--plan FILE in a directory that does not exist: one line naming it,
    exit 2, and the directory is not made."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    missing = tmp_path / "nonexistent-dir"
    for cmd in (("gc",), ("commit", "-m", "x"), ("new", "-b", "f")):
        p = subprocess.run([TETHER_BIN, *cmd, "--plan", str(missing / "p.json")], cwd=a.root, env=sb.env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip() == (f"tether: error: --plan {missing}/p.json: the directory {missing} "
                                    "does not exist"), p.stderr
        assert not missing.exists()

