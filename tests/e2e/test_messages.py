"""The messages a new user meets (issue 12, "Messages"): each one found by
trying tether as a newcomer would, each checked here against what tether
actually does, on git and jj datasets and with git and Icechunk objects.

Help texts say what the command contacts; counts agree with their nouns;
a hint gives commands that work (the test runs them and then the command
the hint unblocked); a file a merge left conflicted is named as such; a
name holding a newline or an escape sequence is shown escaped in text
output, while --json keeps it as it is.
"""
import json
import re
import shlex
import shutil
import subprocess

import pytest

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import zarr  # noqa: E402
from conftest import AUTHOR_EMAIL, AUTHOR_NAME, Repo, describe

JJ = shutil.which("jj")


@pytest.fixture
def mixed(plates, code):
    """`plates` (a mutable directory, an immutable file) plus `code`."""
    plates.tether("add", "code", code.root, "--kind", "git")
    return plates


def jj_repo(tmp_path, colocated):
    """A fresh jj repository (jj's own config and identity), as a Repo whose
    .jj(...) runs jj in it."""
    if not JJ:
        pytest.skip("jj is not on PATH")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    config = home / "jj-config.toml"
    config.write_text("")
    root = tmp_path / "jjrepo"
    r = Repo(root, home)
    r.env.update(JJ_CONFIG=str(config), JJ_USER=AUTHOR_NAME, JJ_EMAIL=AUTHOR_EMAIL)

    def jj(*args):
        p = subprocess.run([JJ, "--no-pager", "--color=never", *map(str, args)], cwd=str(r.root), env=r.env,
                           capture_output=True, text=True)
        assert p.returncode == 0, f"jj failed:{describe(p)}"
        return p.stdout

    p = subprocess.run([JJ, "git", "init", "--colocate" if colocated else "--no-colocate", str(root)], env=r.env,
                       capture_output=True, text=True)
    assert p.returncode == 0, describe(p)
    r.root = root.resolve()
    r.jj = jj
    return r


def one_line(p):
    """A refusal is one line, and a hint at most one more."""
    lines = p.stderr.splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("tether: error: "), p.stderr
    return lines


# -- help texts --------------------------------------------------------------

def test_add_help_says_the_store_is_opened_to_check_it(ds, tmp_path):
    text = ds.tether("add", "--help").stdout
    assert "Nothing is contacted" not in text
    assert "The store is opened to check it" in text
    assert "the first 'tether commit' does that" in text
    # What the help says: a store that is not there is found out by add.
    p = ds.tether("add", "code", tmp_path / "nowhere", "--kind", "git", check_rc=None)
    assert p.returncode != 0 and "nowhere" in p.stderr
    assert not ds.manifest_path("code").exists()


@pytest.mark.parametrize("colocated", [True, False], ids=["colocated", "non-colocated"])
def test_init_help_names_jj_and_init_works_there(run, tmp_path, colocated):
    text = run("init", "--help").stdout
    assert "jj repository" in text and "colocated" in text
    r = jj_repo(tmp_path, colocated)
    assert r.tether("init").stdout.startswith("Initialized tether dataset ")
    r.write("a.txt", "a\n")
    r.tether("add", "a", "a.txt", "--kind", "file")
    r.tether("commit", "-m", "first")
    assert "tether.toml" in r.jj("diff", "--summary", "-r", "@-")


# -- open's text output ------------------------------------------------------

def assert_aligned(text):
    """Every `NAME  value` line has its value in one column, two spaces
    after the longest name."""
    lines = text.splitlines()
    names = [line.split(" ", 1)[0] for line in lines]
    column = max(map(len, names)) + 2
    for line, name in zip(lines, names):
        assert line[:column].rstrip() == name and line[column] != " ", (line, text)
    return dict((n, line[column:]) for n, line in zip(names, lines))


def test_open_aligns_its_fields_for_git_and_icechunk(mixed, code, tmp_path):
    store = tmp_path / "imaging.icechunk"
    oracle.create(store)
    mixed.tether("add", "img", store, "--kind", "icechunk")
    mixed.tether("commit", "-m", "baseline")
    for key in ("code", "img", "raw/samples"):
        handle = mixed.tj("open", key)
        fields = assert_aligned(mixed.tether("open", key).stdout)
        assert set(fields) == set(handle)
        assert fields["key"] == key
    # Read-only at a revision: more fields, still one column.
    fields = assert_aligned(mixed.tether("open", "img", "-r", "HEAD").stdout)
    assert fields["read_only"] == "true"


# -- plans -------------------------------------------------------------------

def test_a_stale_new_plan_names_the_condition_that_changed(mixed, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    plan = mixed.tj("new", "-b", "feat", "--plan", plan_file)["plan"]
    fork = next(a for a in plan["actions"] if a["key"] == "code")
    assert fork["action"] == "fork" and fork["expect"] is None
    # The plan expected the branch at a head; now it must not exist.
    fork["expect"] = {"sha": "0" * 40}
    plan_file.write_text(json.dumps(plan))
    p = mixed.tether("new", "--from-plan", plan_file, check_rc=3)
    one_line(p)
    branch = re.escape(fork["branch"])
    assert re.search(rf"stale plan: code: the plan says `fork {branch}` with expect = \{{\"sha\":\"0{{40}}\"\}}; "
                     rf"`new` would now do `fork {branch}` with expect = null$", p.stderr.splitlines()[0]), p.stderr


def test_gc_from_plan_dry_run_suggests_applying_the_plan(plates, tmp_path):
    plates.tether("commit", "-m", "baseline")
    plates.write("data/plates/plate3.csv", "x\n")
    plates.tether("commit", "-m", "plate 3")
    plan_file = tmp_path / "gc.json"
    plates.tether("gc", "--plan", plan_file)
    out = plates.tether("gc", "--from-plan", plan_file, "--dry-run").stdout
    assert "--no-dry-run" not in out
    assert f"apply it with `tether gc --from-plan {plan_file}`" in out
    # Doing as it says applies the plan.
    r = plates.tj("gc", "--from-plan", plan_file)
    assert len(r["listings"]) == 1 and r["dry_run"] is False
    # A plain dry run still points at --no-dry-run.
    plates.write("data/plates/plate4.csv", "y\n")
    plates.tether("commit", "-m", "plate 4")
    assert "run `tether gc --no-dry-run` to release them" in plates.tether("gc").stdout


# -- counts ------------------------------------------------------------------

def test_one_of_a_count_is_singular(ds, tmp_path):
    ds.write("one/a.csv", "a\n")
    ds.tether("add", "one", "one", "--kind", "file")
    out = ds.tether("status").stdout
    assert out.splitlines()[-1].startswith("1 object: ")
    ds.tether("commit", "-m", "first")
    out = ds.tether("gc").stdout
    assert "(1 commit walked, 1 pin referenced)" in out, out
    assert "0 pins and 0 listings" in out
    assert ds.tether("verify").stdout.splitlines()[-1] == "1 object verified"
    # An immutable directory grown from 1 file to 2, then shrunk to 1: the
    # noun follows the count it belongs to.
    ds.write("one/b.csv", "b\n")
    detail = ds.tj("status", check_rc=3)["objects"][0]["detail"]
    assert "1 → 2 files, 2 → 4 bytes" in detail
    (ds.root / "one" / "a.csv").unlink()
    detail = ds.tj("status", check_rc=3)["objects"][0]["detail"]
    assert "1 → 1 file, 2 → 2 bytes" in detail


def test_one_chunk_is_one_chunk(ds, tmp_path):
    store = tmp_path / "imaging.icechunk"
    oracle.create(store)
    ds.tether("add", "img", store, "--kind", "icechunk")
    ds.tether("commit", "-m", "first")
    session = oracle.open_repo(store).writable_session("main")
    zarr.open_group(store=session.store, mode="a")["data"][0:1] = [7]  # one chunk of 2 elements
    session.commit("one chunk")
    ds.tether("commit", "-m", "second")
    text = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "modified /data (1 chunk)" in text, text


# -- configuration and repository messages -----------------------------------

def test_a_bad_default_names_the_values_it_may_take(ds):
    toml = ds.p("tether.toml")
    toml.write_text(re.sub(r'(?m)^file = "immutable"', 'file = "frozen"', toml.read_text()))
    p = ds.tether("status", check_rc=1)
    assert 'defaults.file must be one of "immutable", "mutable" or "versioned"' in p.stderr
    assert "documented values" not in p.stderr


def test_a_bare_repository_is_told_to_use_a_checkout(run, tmp_path, ds):
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    p = run("init", cwd=bare, check_rc=None)
    assert p.returncode != 0
    error, hint = one_line(p)
    assert "is a bare git repository" in error
    assert "git init" not in hint and f"git clone {bare}" in hint
    # Following the hint: a clone, and init there works.
    subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / "work")], check=True, capture_output=True)
    assert run("init", cwd=tmp_path / "work").returncode == 0
    # A bare repository added as a git object gets the same advice.
    p = ds.tether("add", "code", bare, "--kind", "git", check_rc=None)
    assert p.returncode != 0
    error, hint = one_line(p)
    assert "is a bare git repository" in error and f"git clone {bare}" in hint


def test_a_bad_tether_rev_names_the_variable(plates):
    plates.tether("commit", "-m", "first")
    p = plates.tether("open", "raw/samples", env={"TETHER_REV": "bogus"}, check_rc=1)
    error, hint = one_line(p)
    assert error == "tether: error: $TETHER_REV=bogus: unknown revision 'bogus'"
    assert "$TETHER_REV" in hint
    # -r names a revision on the command line: nothing to explain.
    p = plates.tether("open", "raw/samples", "-r", "bogus", check_rc=1)
    assert "TETHER_REV" not in p.stderr


def hint_command(p):
    """The shell command a hint gives between backquotes."""
    hint = p.stderr.splitlines()[1]
    m = re.search(r"`([^`]+)`", hint)
    assert m, hint
    return m.group(1)


@pytest.mark.parametrize("name", ["secrets.toml", "workspace.toml"])
def test_following_the_untrack_hint_unblocks_git(ds, name):
    ds.write("a.txt", "a\n")
    ds.tether("add", "a", "a.txt", "--kind", "file")
    ds.write(f".tether/{name}", 'workspace_id = "abcd1234"\n\n[working]\n' if name == "workspace.toml" else "")
    ds.git("add", "-f", f".tether/{name}")
    ds.git("commit", "-q", "-m", f"track {name}")
    p = ds.tether("status", check_rc=3)
    error, hint = one_line(p)
    assert f"{name} is tracked by the repository" in error
    command = hint_command(p)
    assert "git commit" in command
    subprocess.run(["sh", "-c", command], cwd=ds.root, env=ds.env, check=True, capture_output=True)
    ds.tether("status")
    ds.tether("commit", "-m", "first")
    assert name not in ds.git("ls-files", ".tether")


@pytest.mark.parametrize("colocated", [True, False], ids=["colocated", "non-colocated"])
def test_following_the_untrack_hint_unblocks_jj(tmp_path, colocated):
    r = jj_repo(tmp_path, colocated)
    r.tether("init")
    r.write("a.txt", "a\n")
    r.tether("add", "a", "a.txt", "--kind", "file")
    # Tracked as a clone would bring it: committed while nothing ignored it.
    ignore = r.p(".tether/.gitignore")
    kept = ignore.read_bytes()
    ignore.unlink()
    r.write(".tether/secrets.toml", "")
    r.jj("commit", "-m", "track secrets.toml")
    ignore.write_bytes(kept)
    p = r.tether("status", check_rc=3)
    command = hint_command(p)
    assert command.startswith("jj file untrack"), command
    subprocess.run(["sh", "-c", command], cwd=r.root, env=r.env, check=True, capture_output=True)
    r.tether("status")
    r.tether("commit", "-m", "first")
    assert ".tether/secrets.toml" not in r.jj("file", "list", "-r", "@-")


# -- merge conflicts ---------------------------------------------------------

CONFLICTED = '<<<<<<< HEAD\nfile = "mutable"\n=======\nfile = "immutable"\n>>>>>>> other\n'


def test_a_merge_conflict_in_a_manifest_is_named(plates):
    plates.tether("commit", "-m", "baseline")
    path = plates.manifest_path("raw/samples")
    text = path.read_text()
    plates.git("checkout", "-q", "-b", "other")
    path.write_text(text.replace('file = "immutable"', 'file = "mutable"'))
    plates.git_commit_all("mutable", str(path.relative_to(plates.root)))
    plates.git("checkout", "-q", "main")
    path.write_text(text.replace('pin = "native"', 'pin = "record"').replace('file = "immutable"', 'file = "x"'))
    plates.git_commit_all("record", str(path.relative_to(plates.root)))
    plates.git("merge", "-q", "other", check=False)
    assert "<<<<<<<" in path.read_text()
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith("<<<<<<<"))
    p = plates.tether("status", check_rc=1)
    assert one_line(p)[0] == (f"tether: error: {path}:{line}:1: unresolved merge conflict markers; "
                              "resolve the conflict (e.g. keep one side) and retry")
    assert "expected" not in p.stderr


@pytest.mark.parametrize("rel", ["tether.toml", ".tether/secrets.toml", ".tether/workspace.toml"])
def test_merge_conflict_markers_are_named_in_every_toml_file(plates, rel):
    plates.tether("commit", "-m", "baseline")
    plates.tether("new", "-b", "feat")  # a workspace.toml to conflict
    path = plates.p(rel)
    before = path.read_text() if path.exists() else ""
    path.write_text(before + "\n" + CONFLICTED)
    line = before.count("\n") + 2
    p = plates.tether("commit", "-m", "x", check_rc=None)
    assert p.returncode != 0
    assert one_line(p)[0] == (f"tether: error: {path}:{line}:1: unresolved merge conflict markers; "
                              "resolve the conflict (e.g. keep one side) and retry"), p.stderr


def test_jj_conflict_markers_are_named(plates):
    path = plates.manifest_path("raw/samples")
    text = path.read_text()
    path.write_text(text + "<<<<<<< Conflict 1 of 1\n%%%%%%% Changes from base to side #1\n"
                    "-a = 1\n+a = 2\n+++++++ Contents of side #2\na = 3\n>>>>>>> Conflict 1 of 1 ends\n")
    p = plates.tether("status", check_rc=1)
    assert f"{path}:{text.count(chr(10)) + 1}:1: unresolved merge conflict markers" in p.stderr


# -- names with control characters -------------------------------------------

def test_names_with_control_characters_are_escaped_in_text(ds):
    ds.write("d/plain.csv", "p\n")
    ds.tether("add", "d", "d", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "first")
    ds.write("d/new\nline", "x\n")
    ds.write("d/tab\there", "y\n")
    ds.write("d/esc\x1b[31mred", "z\n")
    ds.tether("commit", "-m", "second")
    out = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "added new\\nline (+2 B)" in out
    assert "added tab\\there (+2 B)" in out
    assert "added esc\\x1B[31mred (+2 B)" in out
    assert "\x1b" not in out and "new\nline" not in out
    # --json keeps the names as they are.
    entries = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]["entries"]
    assert {e["path"] for e in entries} == {"new\nline", "tab\there", "esc\x1b[31mred"}
    # An error naming such a path is one line.
    p = ds.tether("add", "x", "no\nsuch", "--kind", "file", check_rc=None)
    assert p.returncode != 0
    assert one_line(p)[0] == "tether: error: path does not exist: no\\nsuch"
    # open's uri, in text.
    ds.write("odd\nname.csv", "o\n")
    ds.tether("add", "odd", "odd\nname.csv", "--kind", "file")
    uri = ds.tj("open", "odd")["uri"]
    assert uri.endswith("odd\nname.csv")
    fields = assert_aligned(ds.tether("open", "odd").stdout)
    assert fields["uri"] == uri.replace("\n", "\\n")


def test_a_plain_name_is_printed_as_it_is(ds):
    ds.write("d/café plain.csv", "p\n")
    ds.tether("add", "d", "d", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "first")
    ds.write("d/ünï cødé.csv", "x\n")
    ds.tether("commit", "-m", "second")
    out = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "added ünï cødé.csv (+2 B)" in out
