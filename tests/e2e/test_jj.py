"""tether in jj repositories: the engine picks tether-vcs-jj.so when a .jj
is nearer than any .git (a colocated repository is jj's), commits exactly
the dataset's paths with `jj commit`, reads "HEAD" as @-, and walks only
the commits jj shows: after `jj abandon`, gc and verify --all-history no
longer see the abandoned commit.

Every repository is made and checked with the real jj; the whole module is
skipped when jj is not on PATH. jj 0.45 colocates by default, so both kinds
are spelled out: `jj git init --colocate` and `jj git init --no-colocate`.
"""
import os
import shutil
import subprocess

import pytest

from conftest import AUTHOR_EMAIL, AUTHOR_NAME, Repo, describe

JJ = shutil.which("jj")
if not JJ:
    pytest.skip("jj is not on PATH", allow_module_level=True)

KINDS = ["colocated", "non-colocated"]


class JjRepo(Repo):
    """A jj workspace, with helpers to ask jj what tether did."""

    def jj(self, *args, cwd=None, check=True):
        p = subprocess.run(
            [JJ, "--no-pager", "--color=never", *map(str, args)],
            cwd=str(cwd or self.root),
            env=self.env,
            capture_output=True,
            text=True,
        )
        if check:
            assert p.returncode == 0, f"jj failed:{describe(p)}"
        return p.stdout

    def at(self, rev):
        """The commit id a revset names (without snapshotting)."""
        return self.jj("log", "--ignore-working-copy", "--no-graph", "-r", rev, "-T", "commit_id").strip()

    def changed(self, rev):
        """The paths a commit changed, sorted."""
        out = self.jj("diff", "--ignore-working-copy", "--summary", "-r", rev)
        return sorted(line.split(" ", 1)[1] for line in out.splitlines() if line)

    def visible_commits(self):
        """Every commit jj shows, the virtual root aside."""
        out = self.jj("log", "--ignore-working-copy", "--no-graph", "-r",
                      "::visible_heads() ~ root()", "-T", 'commit_id ++ "\\n"')
        return out.split()

    def workspace(self, path, name):
        """A second workspace of this repository, at `path`."""
        self.jj("workspace", "add", "--name", name, path)
        w = JjRepo(path, self.home)
        w.env = self.env
        return w


def make_jj_repo(tmp_path, kind, name="repo"):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    config = home / "jj-config.toml"
    config.write_text("")
    root = tmp_path / name
    r = JjRepo(root, home)
    # A private jj config, and the identity as jj takes it from the
    # environment: nothing of the machine's own configuration leaks in.
    r.env.update(JJ_CONFIG=str(config), JJ_USER=AUTHOR_NAME, JJ_EMAIL=AUTHOR_EMAIL)
    flag = "--colocate" if kind == "colocated" else "--no-colocate"
    p = subprocess.run([JJ, "git", "init", flag, str(root)], env=r.env, capture_output=True, text=True)
    assert p.returncode == 0, f"jj git init failed:{describe(p)}"
    r.root = root.resolve()
    return r


@pytest.fixture(params=KINDS)
def jds(request, tmp_path):
    """A dataset (after `tether init`) in a fresh jj repository, with a
    mutable directory registered as `data`."""
    r = make_jj_repo(tmp_path, request.param)
    r.kind = request.param
    r.tether("init")
    r.write("plates/p1.csv", "well,value\nA1,0.5\n")
    r.tether("add", "data", "plates", "--kind", "file", "--file", "mutable")
    return r


DATASET_FILES = [".tether/.gitignore", ".tether/objects/data.toml", "tether.toml"]


def listing_files(r):
    return sorted(f".tether/listings/{p.name}" for p in (r.root / ".tether" / "listings").iterdir())


def test_commit_status_log_diff(jds):
    jds.write("notes.txt", "the user's own work in progress\n")
    before = jds.tj("status")
    assert before["objects"][0]["status"] != "clean"

    jds.tether("commit", "-m", "baseline")
    first = jds.at("@-")
    assert jds.jj("log", "--no-graph", "-r", "@-", "-T", "description") == "baseline\n"
    # Only the dataset's paths are in the commit; the user's file, and the
    # data itself, stay in the working-copy commit.
    assert jds.changed("@-") == sorted(DATASET_FILES + listing_files(jds))
    assert "notes.txt" in jds.changed("@")
    assert not any(p.startswith(".tether") or p == "tether.toml" for p in jds.changed("@"))

    s = jds.tj("status")
    assert s["clean"] is True and s["objects"][0]["status"] == "clean"
    log = jds.tj("log")["commits"]
    assert [c["id"] for c in log] == [first]
    assert log[0]["summary"] == "baseline"
    assert log[0]["author"] == AUTHOR_NAME

    jds.write("plates/p2.csv", "well,value\nB1,0.1\n")
    assert jds.tj("status")["objects"][0]["status"] == "modified"
    jds.tether("commit", "-m", "plate 2")
    second = jds.at("@-")
    assert jds.at("@--") == first
    assert [c["id"] for c in jds.tj("log")["commits"]] == [second, first]

    d = jds.tj("diff", "HEAD~1", "HEAD", "--content")
    assert d["from"]["id"] == first and d["to"]["id"] == second
    o = d["objects"][0]
    assert o["key"] == "data" and o["change"] == "changed"
    assert o["content"]["totals"]["added"] == 1
    text = jds.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "p2.csv" in text

    # Nothing changed: no commit, and @- stays.
    p = jds.tether("commit", "-m", "again")
    assert "nothing to commit" in p.stdout + p.stderr
    assert jds.at("@-") == second


def test_revsets_name_revisions(jds):
    jds.tether("commit", "-m", "one")
    one = jds.at("@-")
    jds.write("plates/p2.csv", "x\n")
    jds.tether("commit", "-m", "two")
    jds.jj("bookmark", "create", "base", "-r", one)
    d = jds.tj("diff", "base", "@-")
    assert d["from"]["id"] == one and d["objects"][0]["change"] == "changed"
    assert jds.tj("diff", 'description(exact:"one\n")', "HEAD")["from"]["id"] == one
    p = jds.tether("diff", "all()", "HEAD", check_rc=2)
    assert "more than one commit" in p.stderr
    p = jds.tether("diff", "no-such-bookmark", "HEAD", check_rc=1)
    assert "no-such-bookmark" in p.stderr


def test_ignore_rules_do_not_drop_the_dataset(jds):
    # A user's rules matching tether's own files must not keep them out of
    # the commit: jj would otherwise never track them.
    jds.write(".gitignore", "*.toml\n*.jsonl\n")
    jds.tether("commit", "-m", "baseline")
    assert jds.changed("@-") == sorted(DATASET_FILES + listing_files(jds))
    assert ".gitignore" in jds.changed("@")


def test_new_moves_the_working_copy_and_carries_a_new_bookmark(jds):
    jds.tether("commit", "-m", "baseline")
    base = jds.at("@-")
    jds.jj("bookmark", "create", "main", "-r", "@-")
    jds.write("plates/p2.csv", "x\n")
    jds.tether("commit", "-m", "more")
    r = jds.tj("new", "main", "-b", "feature")
    assert r["commit"] == base and r["bookmark"] == "feature"
    assert jds.at("@-") == base and jds.at("feature") == jds.at("@")
    assert len(listing_files(jds)) == 1  # the working copy is main's again
    jds.write("plates/p3.csv", "y\n")
    jds.tether("commit", "-m", "on feature")
    # The bookmark was on the change just committed: it names the commit.
    assert jds.at("feature") == jds.at("@-") != base


def test_two_workspaces_commit_independently(jds, tmp_path):
    jds.tether("commit", "-m", "baseline")
    base = jds.at("@-")
    ws = jds.workspace(tmp_path / "second", "second")
    ws.write("other/o.csv", "o\n")
    ws.tether("add", "other", "other", "--kind", "file", "--file", "mutable")
    ws.tether("commit", "-m", "from the second workspace")
    theirs = ws.at("@-")
    assert ws.at("@--") == base
    assert ws.changed("@-") == sorted([".tether/objects/other.toml"] + [
        f".tether/listings/{p.name}" for p in (ws.root / ".tether" / "listings").iterdir()
        if f".tether/listings/{p.name}" not in listing_files(jds)])
    assert jds.at("@-") == base  # the first workspace did not move

    jds.write("plates/p2.csv", "x\n")
    jds.tether("commit", "-m", "from the first workspace")
    ours = jds.at("@-")
    assert ours != theirs and jds.at("@--") == base
    assert [c["id"] for c in jds.tj("log")["commits"]] == [ours, base]
    assert [c["id"] for c in ws.tj("log")["commits"]] == [theirs, base]
    # The second workspace's own object is clean there (`data` names the
    # first workspace's directory, which moved on).
    status = {o["key"]: o["status"] for o in ws.tj("status")["objects"]}
    assert status == {"data": "modified", "other": "clean"}
    # One repository lock for both, in the directory they share.
    assert (jds.root / ".jj" / "repo" / "tether.lock").exists()
    assert not (ws.root / ".jj" / "repo").is_dir()
    # Both lines of history are walked, from either workspace.
    n = len(jds.visible_commits())
    assert jds.tj("gc")["commits"] == n == ws.tj("gc")["commits"]


def test_abandoned_commit_leaves_the_history_walks(jds):
    jds.tether("commit", "-m", "baseline")
    jds.write("plates/p2.csv", "x\n")
    jds.tether("commit", "-m", "to abandon")
    doomed = jds.at("@-")
    before = jds.tj("gc")["commits"]
    assert before == len(jds.visible_commits())
    assert jds.tj("verify", "--all-history")["commits"] == before

    jds.jj("abandon", doomed)
    after = jds.tj("gc")
    assert after["commits"] == before - 1 == len(jds.visible_commits())
    v = jds.tj("verify", "--all-history")
    assert v["commits"] == before - 1
    assert [c["summary"] for c in jds.tj("log")["commits"]] == ["baseline"]
    # jj keeps the abandoned commit in its store; tether reads it no more.
    assert doomed not in jds.visible_commits()
    assert jds.jj("log", "--ignore-working-copy", "--no-graph", "-r", doomed, "-T", "commit_id") == doomed


def test_temporary_files_are_never_committed(jds):
    """Issue 9, item 7 on jj: a temporary in .tether/objects (one whose
    process is alive, so it stays on disk) is left out of the commit's
    fileset, even where a user's .gitignore would not hide it."""
    jds.tether("commit", "-m", "baseline")
    live = jds.write(f".tether/objects/data.toml.tmp.{os.getpid()}", "being written\n")
    jds.write(".tether/.gitignore", "/workspace.toml\n/secrets.toml\n/cache/\n/journal/\n/lock\n"
              "!/objects/**\n!/listings/**\n")  # an older dataset's rules: temporaries not ignored
    jds.write("plates/p2.csv", "well,value\nB1,0.1\n")
    jds.tether("commit", "-m", "plate 2")
    assert not [p for p in jds.changed("@-") if ".tmp." in p], jds.changed("@-")
    assert live.read_bytes() == b"being written\n"
