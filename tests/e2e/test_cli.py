"""The command itself: backends, help, version, global options, and what
the binary loads at startup."""
import json
import re
import subprocess

import pytest

from conftest import SOURCE_ROOT, TETHER_BIN, check_sanitizers

COMMANDS = ["init", "add", "backends", "status", "commit", "diff", "log", "verify", "new", "pull", "promote", "merge", "open",
            "restore", "drop", "gc", "repair", "upgrade", "abandon", "undo", "ops", "export", "publish",
            "import", "help"]


def project_version():
    text = (SOURCE_ROOT / "meson.build").read_text()
    return re.search(r"version\s*:\s*'([^']+)'", text).group(1)


def test_backends_text(run):
    p = run("backends")
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["KIND", "MATURITY", "TIER", "FLAGS", "SUMMARY"]
    rows = {l.split()[0]: l.split() for l in lines[1:]}
    # every backend but file and memory is a module: listed because it is on the module path
    assert set(rows) == {"file", "memory", "delta", "dolt", "ducklake", "git", "iceberg", "icechunk", "lakefs", "lance", "neon"}
    assert rows["file"][1:3] == ["stable", "observed"]
    assert rows["memory"][2] == "forkable"
    # the columns line up: every row's TIER starts where the header's does
    col = lines[0].index("TIER")
    for l in lines[1:]:
        assert l[col:].split()[0] in ("observed", "addressable", "forkable")
    assert rows["git"][1:3] == ["stable", "forkable"]
    assert rows["icechunk"][1:3] == ["stable", "forkable"]
    assert rows["dolt"][1:3] == ["experimental", "forkable"]
    assert rows["ducklake"][1:3] == ["experimental", "addressable"]


def test_backends_json(run):
    r = json.loads(run("backends", "--json").stdout)
    kinds = {b["kind"]: b for b in r}
    # built-ins first, then the modules in the order of their kinds
    assert [b["kind"] for b in r] == ["file", "memory", "delta", "dolt", "ducklake", "git", "iceberg", "icechunk", "lakefs", "lance", "neon"]
    f = kinds["file"]
    assert f["maturity"] == "stable"
    assert f["tier"] == "observed"
    # (CLI.md shows the flags lower-case, the code emits them upper-case)
    assert {x.lower() for x in f["flags"]} == {"cheap_fingerprint", "diff"}
    assert f["summary"].startswith("local files and directories")
    assert kinds["memory"]["tier"] == "forkable"
    for b in r:
        assert set(b) >= {"kind", "maturity", "tier", "flags", "summary"}


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_on_every_command(run, cmd):
    p = run(cmd, "--help")
    assert p.stdout.startswith(f"usage: tether {cmd}")
    assert "-h, --help" in p.stdout
    assert p.stderr == ""
    assert run(cmd, "-h").stdout == p.stdout
    assert run("help", cmd).stdout == p.stdout


def test_help_wins_over_missing_or_extra_arguments(run):
    assert run("add", "--help").stdout.startswith("usage: tether add KEY [URI]")
    assert run("commit", "--help").stdout.startswith("usage: tether commit -m MSG")
    assert run("status", "extra", "args", "--help").stdout.startswith("usage: tether status")
    # an unknown option before --help is reported instead
    p = run("status", "--bogus", "--help", check_rc=2)
    assert "unknown option '--bogus' for 'status'" in p.stderr


def test_global_help(run):
    p = run("--help")
    assert p.stdout.startswith("usage: tether [-C DIR] [--version] [--help] COMMAND [ARGS]")
    listed = [l.split()[0] for l in p.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines()]
    assert listed == COMMANDS
    assert run("-h").stdout == p.stdout
    assert run("help").stdout == p.stdout
    # no command at all: the same list, on stderr, exit 2
    p2 = run(check_rc=2)
    assert p2.stdout == ""
    assert p2.stderr == p.stdout


def test_version(run):
    p = run("--version")
    assert p.stdout == f"tether {project_version()}\n"
    assert p.stderr == ""
    # global options come before the command: --version wins
    assert run("--version", "status").stdout == p.stdout


def test_unknown_command(run):
    p = run("frobnicate", check_rc=2)
    assert "unknown command 'frobnicate'" in p.stderr
    assert "hint: see 'tether --help'" in p.stderr
    assert p.stdout == ""
    p = run("help", "frobnicate", check_rc=2)
    assert "unknown command 'frobnicate'" in p.stderr


def test_global_C(ds, run, tmp_path):
    r = json.loads(run("-C", ds.root, "status", "--json", cwd=tmp_path).stdout)
    assert r["dataset"] == str(ds.root)
    # an empty DIR changes nothing; each DIR is relative to the one before
    ds.p("a/b").mkdir(parents=True)
    r = json.loads(run("-C", "", "-C", ds.root, "-C", "a", "-C", "b", "status", "--json", cwd=tmp_path).stdout)
    assert r["dataset"] == str(ds.root)
    p = run("-C", tmp_path / "does-not-exist", "status", check_rc=1)
    assert "does-not-exist" in p.stderr


def test_binary_does_not_link_libgit2():
    p = subprocess.run(["ldd", TETHER_BIN], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "libjansson" in p.stdout  # ldd did list the dependencies
    assert "libgit2" not in p.stdout
    # libtether is carried inside the binary (modules bind to that copy)
    assert "libtether" not in p.stdout


def loaded_libraries(args, cwd, env):
    p = subprocess.run([TETHER_BIN, *map(str, args)], cwd=str(cwd), capture_output=True, text=True,
                       env={**env, "LD_DEBUG": "files"})
    check_sanitizers(p)
    return p, re.findall(r"file=(\S+)", p.stderr)


@pytest.mark.parametrize("args", [["--version"], ["status", "--help"], ["add", "--help"]])
def test_light_commands_never_load_libgit2(ds, args):
    p, libs = loaded_libraries(args, ds.root, ds.env)
    assert p.returncode == 0
    assert any("libjansson" in lib for lib in libs), "LD_DEBUG=files gave no list"
    assert not [lib for lib in libs if "libgit2" in lib or "tether-vcs-git" in lib]


def test_history_commands_do_load_the_git_module(plates):
    """The control for the test above: a command that reads history loads
    the git module, and LD_DEBUG shows it; reading history does not load
    libgit2 (tether-vcs-git reads objects itself), writing does."""
    plates.tether("commit", "-m", "c")
    p, libs = loaded_libraries(["log"], plates.root, plates.env)
    assert p.returncode == 0
    assert [lib for lib in libs if "tether-vcs-git" in lib]
    assert not [lib for lib in libs if "libgit2" in lib]
    (plates.root / "data" / "plates" / "plate3.csv").write_text("more\n")
    p, libs = loaded_libraries(["commit", "-m", "d"], plates.root, plates.env)
    assert p.returncode == 0, p.stderr
    assert [lib for lib in libs if "libgit2" in lib]


def test_log_reads_packed_history_without_libgit2(plates):
    """After git gc (a pack with deltas) and pack-refs, log says what it said
    from loose objects, still without libgit2."""
    for i in range(4):
        (plates.root / "data" / "plates" / f"p{i}.csv").write_text("line\n" * 50 + f"{i}\n")
        plates.tether("commit", "-m", f"c{i}")
    before = plates.tether("log", "--json").stdout
    subprocess.run(["git", "gc", "-q", "--aggressive"], cwd=str(plates.root), check=True, env=plates.env)
    subprocess.run(["git", "pack-refs", "--all"], cwd=str(plates.root), check=True, env=plates.env)
    assert not list((plates.root / ".git" / "refs" / "heads").iterdir())
    p, libs = loaded_libraries(["log", "--json"], plates.root, plates.env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == before
    assert not [lib for lib in libs if "libgit2" in lib]


def test_stdout_write_failure_exits_1(ds):
    for args in (["backends"], ["status", "--json"], ["--version"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([TETHER_BIN, *args], cwd=str(ds.root), env=ds.env, stdout=full,
                               stderr=subprocess.PIPE, text=True)
        p.stdout = ""
        check_sanitizers(p)
        assert p.returncode == 1, (args, p.stderr)
        assert "tether: error: cannot write" in p.stderr


def test_local_status_does_not_load_libgit2(plates):
    """status compares with HEAD through a commit-keyed cache: after a tether
    commit (and before any commit) it needs no libgit2."""
    p, libs = loaded_libraries(["status"], plates.root, plates.env)
    assert p.returncode == 0
    assert not [lib for lib in libs if "libgit2" in lib]
    plates.tether("commit", "-m", "c")
    p, libs = loaded_libraries(["status", "--json"], plates.root, plates.env)
    assert p.returncode == 0
    assert json.loads(p.stdout)["clean"] is True
    assert not [lib for lib in libs if "libgit2" in lib]


def test_json_format_is_sorted_two_space_indented_with_final_newline(plates):
    """CLI.md: --json prints the report with two-space indentation, keys
    sorted, UTF-8 unescaped, and a final newline."""
    ds = plates
    ds.tether("commit", "-m", "c")
    ds.write("data/plates/plate3.csv", "x")
    for argv in (["backends"], ["status"], ["diff", "--content"], ["log"], ["verify"], ["commit", "-m", "d"]):
        p = ds.tether(*argv, "--json", check_rc=None)
        assert p.returncode == (3 if argv == ["verify"] else 0), argv  # verify: data changed since
        parsed = json.loads(p.stdout)
        assert p.stdout == json.dumps(parsed, indent=2, sort_keys=True, ensure_ascii=False) + "\n", argv


def test_option_rules(plates):
    """CLI.md, Options and arguments: the last value wins, options and
    positionals mix, a lone '-' is positional."""
    ds = plates
    ds.tether("commit", "-m", "first", "-m", "second")
    assert ds.git("log", "-1", "--format=%s").strip() == "second"
    ds.write("data/plates/a.csv", "a")
    ds.write("data/plates/b.csv", "b")
    ds.tether("commit", "-m", "two more")
    r = ds.tj("diff", "--content", "HEAD~1", "--max-entries", "9", "HEAD", "--max-entries=1")
    c = r["objects"][0]["content"]
    assert [e["path"] for e in c["entries"]] == ["a.csv"]
    assert c["truncated"] is True
    assert r["from"]["rev"] == "HEAD~1" and r["to"]["rev"] == "HEAD"
    p = ds.tether("log", "-", check_rc=1)
    assert "'-'" in p.stderr
