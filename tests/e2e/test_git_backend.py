"""The git backend: another git repository as a data object of the dataset.

Every test builds a code repository with the real git CLI, registers it
with `tether add KEY PATH --kind git`, and checks what tether did to it with
the real git CLI again: pins are lightweight tags `tether.<pin id>` at the
recorded sha (pushed to a named remote when the object has one), forks are
branches `tether.ws.<dataset8>.<bookmark>`, gc deletes exactly the tags no
commit names. A hostile code repository (hooks, fsmonitor, an ext::
remote) must never get to run anything.

The lifecycle every Pinnable or Forkable kind passes (commit pins, new
forks, open -r, write on the fork, gc, verify, repair, log KEY, --at and
--pick, --pin record, kills mid-commit) is test_lifecycle.py's, run for git
through lifecycle_adapters.py's GitAdapter; this file holds what is git's
own: tag and handle shapes, remotes, dirty checkouts, hostile repositories,
line-count diffs, git's verify details and bad input.

The enclosing dataset repository is parametrized: plain git, and when jj is
installed and tether's jj adapter works, `jj git init --colocate` and
`jj git init` (the store inside .jj). Tests that rewrite the dataset's
history with git itself (gc after a reset, a hand-made commit) run on git
only. Revisions are spelled HEAD / HEAD~1, which the jj adapter maps to
@- / @--.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import AUTHOR_EMAIL, AUTHOR_NAME, Repo, describe, expected_pin

VCS_KINDS = ["git", "jj-colocated", "jj"]


# ---------------------------------------------------------------------------
# jj: where it is, and whether tether's adapter works here
# ---------------------------------------------------------------------------

def find_jj():
    for cand in (shutil.which("jj"), "/root/.cargo/bin/jj", str(Path.home() / ".cargo" / "bin" / "jj")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def jj_env(env, jj):
    """PATH with jj's directory first, and a jj identity that needs no
    config file."""
    e = dict(env)
    e["PATH"] = str(Path(jj).parent) + os.pathsep + e.get("PATH", "")
    e["JJ_USER"] = AUTHOR_NAME
    e["JJ_EMAIL"] = AUTHOR_EMAIL
    return e


def jj_init(root, env, colocate):
    args = ["jj", "git", "init", *(["--colocate"] if colocate else []), str(root)]
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    assert p.returncode == 0, f"jj git init failed:{describe(p)}"


@pytest.fixture(scope="session")
def jj_problem(tmp_path_factory):
    """None when jj is installed and a tether dataset in a jj repository can
    be made and committed to; else why not (the jj parameters are skipped)."""
    jj = find_jj()
    if not jj:
        return "jj is not installed"
    base = tmp_path_factory.mktemp("jj-probe")
    home = base / "home"
    home.mkdir()
    r = Repo(base / "ds", home)
    r.root.mkdir()
    r.env = jj_env(r.env, jj)
    jj_init(r.root, r.env, colocate=False)
    r.write("f", "x")
    for args in (["init"], ["add", "f", "f", "--kind", "file"], ["commit", "-m", "probe"]):
        p = r.tether(*args, check_rc=None)
        if p.returncode != 0:
            return f"tether's jj adapter does not work here:{describe(p)}"
    return None


class Dataset(Repo):
    """A dataset (after `tether init`) in a git or jj repository."""

    def __init__(self, root, home, vcs):
        super().__init__(root, home)
        self.vcs = vcs

    def vcs_head(self):
        """The dataset's last commit as the VCS itself says: git's HEAD, jj's
        @- (None before the first commit)."""
        if self.vcs == "git":
            return self.head()
        p = subprocess.run(
            ["jj", "log", "--ignore-working-copy", "--no-graph", "-r", "@-", "-T", "commit_id"],
            cwd=str(self.root), env=self.env, capture_output=True, text=True,
        )
        assert p.returncode == 0, f"jj log failed:{describe(p)}"
        head = p.stdout.strip()
        return None if head == "0" * 40 else head

    def commit_ids(self):
        """The dataset's commits, newest first, as tether lists them."""
        return [c["id"] for c in self.tj("log")["commits"]]


def make_dataset(tmp_path, vcs, jj_problem):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    root = tmp_path / "dataset"
    root.mkdir()
    ds = Dataset(root, home, vcs)
    if vcs == "git":
        ds.git("init", "-q", "-b", "main")
        ds.git("config", "user.name", AUTHOR_NAME)
        ds.git("config", "user.email", AUTHOR_EMAIL)
        ds.git("config", "commit.gpgsign", "false")
    else:
        if jj_problem:
            pytest.skip(jj_problem)
        ds.env = jj_env(ds.env, find_jj())
        jj_init(ds.root, ds.env, colocate=vcs == "jj-colocated")
    ds.tether("init")
    return ds


@pytest.fixture(params=VCS_KINDS)
def dsv(request, tmp_path, jj_problem):
    """A dataset in each kind of enclosing repository."""
    return make_dataset(tmp_path, request.param, jj_problem)


@pytest.fixture
def gds(tmp_path, jj_problem):
    """A dataset in a plain git repository."""
    return make_dataset(tmp_path, "git", jj_problem)


# ---------------------------------------------------------------------------
# Code repositories
# ---------------------------------------------------------------------------

def code_commit(code, files, message, remove=()):
    """Write files, remove others, commit everything; the new sha."""
    for rel, text in files.items():
        code.write(rel, text)
    for rel in remove:
        code.git("rm", "-q", "--", rel)
    code.git("add", "-A")
    code.git("commit", "-q", "-m", message)
    return code.head()


@pytest.fixture
def code(new_repo):
    """A code repository outside the dataset, with one commit."""
    c = new_repo("code")
    code_commit(c, {"main.py": "a\nb\n", "README.md": "r1\nr2\n"}, "c1")
    return c


def tags(repo):
    return repo.git("tag", "-l", "tether.*").split()


def rev(repo, name):
    return repo.git("rev-parse", "--verify", "-q", name).strip()


def tag_target(repo, tag):
    """The commit a tag names, and that the tag is lightweight (the ref
    points straight at the commit)."""
    assert repo.git("cat-file", "-t", f"refs/tags/{tag}").strip() == "commit"
    return rev(repo, f"refs/tags/{tag}")


def pin_of(ds, code, sha):
    """The pin id of a code repository's commit: dirty and change_id are
    volatile, so only the sha counts."""
    return expected_pin(ds.dataset_id(), "git", {"path": str(code.root)}, {"sha": sha})


def ls_remote_tags(code, remote):
    out = code.git("ls-remote", "--tags", remote)
    return sorted(tuple(line.split("\t")) for line in out.splitlines() if line)


def add_code(ds, code, *options, key="code"):
    args = ["add", key, code.root, "--kind", "git"]
    for o in options:
        args += ["--option", o]
    return ds.tether(*args)


# ---------------------------------------------------------------------------
# Pins: tags at the sha, recorded in the manifest
# ---------------------------------------------------------------------------

def test_a_pin_is_a_lightweight_tag_and_the_checkout_is_left_alone(gds, code):
    """What git's pins look like; that commit pins each state, and keeps
    the earlier pins, is test_lifecycle.py's test_commit_pins."""
    sha1 = code.head()
    add_code(gds, code)
    assert gds.manifest("code")["locator"] == {"path": str(code.root), "ref": "HEAD"}
    gds.tether("commit", "-m", "one")
    pin1 = pin_of(gds, code, sha1)
    m = gds.manifest("code")
    assert m["state"] == {"sha": sha1, "dirty": False}
    assert m["pin_ref"] == {"tag": f"tether.{pin1}", "pin": pin1, "sha": sha1}
    assert tags(code) == [f"tether.{pin1}"]
    assert tag_target(code, f"tether.{pin1}") == sha1
    # The code repository's checkout is left as it was.
    assert code.git("status", "--porcelain") == ""
    assert code.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"


def test_diff_content_lists_changed_files_with_line_counts(dsv, code):
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    pin1 = dsv.manifest("code")["pin"]
    code_commit(code, {"main.py": "a\nB\nc\n", "util.py": "x\n"}, "c2", remove=["README.md"])
    dsv.tether("commit", "-m", "two")
    pin2 = dsv.manifest("code")["pin"]

    d = dsv.tj("diff", "HEAD~1", "HEAD", "--content")
    assert len(d["objects"]) == 1
    o = d["objects"][0]
    assert (o["key"], o["kind"], o["change"], o["from_pin"], o["to_pin"]) == (
        "code", "git", "changed", pin1, pin2)
    c = o["content"]
    assert c["unit"] == "files"
    assert c["truncated"] is False
    got = {e["path"]: (e["change"], e["lines_added"], e["lines_deleted"]) for e in c["entries"]}
    assert got == {
        "README.md": ("removed", 0, 2),
        "main.py": ("modified", 2, 1),
        "util.py": ("added", 1, 0),
    }
    assert (c["totals"]["added"], c["totals"]["removed"], c["totals"]["modified"]) == (1, 1, 1)
    assert c["summary"] == "1 added, 1 removed, 1 modified (0 renamed), +3 -3 lines"

    # --max-entries caps the list, never the counts.
    c = dsv.tj("diff", "HEAD~1", "HEAD", "--content", "--max-entries", "1")["objects"][0]["content"]
    assert len(c["entries"]) == 1 and c["truncated"] is True
    assert (c["totals"]["added"], c["totals"]["removed"], c["totals"]["modified"]) == (1, 1, 1)

    # Nothing changed between a revision and itself.
    assert dsv.tj("diff", "HEAD", "HEAD", "--content")["objects"] == []


def test_diff_content_keeps_a_path_that_is_not_utf8(gds, code):
    """A git path is bytes: one that is not UTF-8 (x\\xff) is an entry of its
    own, shown with \\xHH and its bytes in hex beside it, never dropped and
    never confused with the real name xÿ."""
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    root = os.fsencode(str(code.root))
    for name in (b"x\xff", "xÿ".encode()):
        with open(os.path.join(root, name), "wb") as f:
            f.write(b"line\n")
    code.git("add", "-A")
    code.git("commit", "-q", "-m", "c2")
    gds.tether("commit", "-m", "two")

    c = gds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    got = sorted((e["path"], e.get("path_bytes"), e["change"]) for e in c["entries"])
    assert got == [("x\\xFF", "78ff", "added"), ("xÿ", None, "added")], got
    assert c["totals"]["added"] == 2


def test_diff_content_text_shows_line_counts_not_bytes(dsv, code):
    """backends.md, Content diffs: git's detail is `modified main.py +1 -1`
    (git diff --numstat line counts)."""
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    code_commit(code, {"main.py": "a\nB\nc\n"}, "c2")
    dsv.tether("commit", "-m", "two")
    out = dsv.tether("diff", "HEAD~1", "HEAD", "--content").stdout
    assert "    modified main.py +2 -1\n" in out, out


def test_log_key_gives_git_authors_times_and_refs(gds, code):
    """git's own fields of `tether log KEY`; the ids, messages and refs
    against the system's history are test_lifecycle.py's test_log_key."""
    sha1 = code.head()
    add_code(gds, code)
    gds.tether("commit", "-m", "one")
    pin1 = gds.manifest("code")["pin"]
    sha2 = code_commit(code, {"main.py": "x\n"}, "c2")
    sha3 = code_commit(code, {"main.py": "y\n"}, "c3")
    gds.tether("commit", "-m", "three")
    pin3 = gds.manifest("code")["pin"]

    r = gds.tj("log", "code")
    ids = [e["id"] for e in r["entries"]]
    assert ids == [sha3, sha2, sha1]
    assert all((e["author"], e["email"]) == (AUTHOR_NAME, AUTHOR_EMAIL) for e in r["entries"])
    assert [int(code.git("log", "-1", "--format=%at", s)) for s in ids] == [e["time"] for e in r["entries"]]
    assert sorted(r["entries"][0]["refs"]) == sorted(["main", f"tether.{pin3}"])
    assert r["entries"][1]["refs"] == []
    assert r["entries"][2]["refs"] == [f"tether.{pin1}"]
    text = gds.tether("log", "code").stdout.splitlines()
    assert "c3" in text[0] and f"tether.{pin3}" in text[0] and "main" in text[0]


# ---------------------------------------------------------------------------
# Remotes
# ---------------------------------------------------------------------------

@pytest.fixture
def bare(tmp_path, code):
    """A bare repository, configured in `code` as remote origin."""
    path = tmp_path / "bare.git"
    code.git("init", "-q", "--bare", path)
    code.git("remote", "add", "origin", path)
    return path


def test_pin_is_pushed_to_the_named_remote(dsv, code, bare):
    sha1 = code.head()
    add_code(dsv, code, "remote=origin")
    assert dsv.manifest("code")["locator"] == {"path": str(code.root), "ref": "HEAD", "remote": "origin"}
    dsv.tether("commit", "-m", "one")
    pin1 = pin_of(dsv, code, sha1)
    m = dsv.manifest("code")
    assert m["pin"] == pin1
    assert m["pin_ref"] == {"tag": f"tether.{pin1}", "pin": pin1, "sha": sha1, "remote": "origin"}
    assert ls_remote_tags(code, "origin") == [(sha1, f"refs/tags/tether.{pin1}")]
    assert tags(code) == [f"tether.{pin1}"]
    # Nothing but the tag went there: no branch was pushed.
    assert subprocess.run(["git", "-C", bare, "for-each-ref", "--format=%(refname)"],
                          env=code.env, capture_output=True, text=True).stdout.split() == [
        f"refs/tags/tether.{pin1}"]

    sha2 = code_commit(code, {"main.py": "z\n"}, "c2")
    dsv.tether("commit", "-m", "two")
    pin2 = pin_of(dsv, code, sha2)
    assert ls_remote_tags(code, "origin") == sorted(
        [(sha1, f"refs/tags/tether.{pin1}"), (sha2, f"refs/tags/tether.{pin2}")])
    assert dsv.tj("verify")["ok"] is True


def test_add_refuses_a_remote_the_repository_does_not_configure(dsv, code):
    p = dsv.tether("add", "code", code.root, "--kind", "git", "--option", "remote=upstream", check_rc=2)
    assert p.stderr == f'tether: error: git repository {code.root} has no remote named "upstream"\n'
    assert not dsv.manifest_path("code").exists()


def test_failed_push_fails_the_commit_and_leaves_nothing(dsv, code, new_repo, tmp_path):
    """A pin is a pin only once its push succeeded: the commit fails, the
    tag it made is gone, every other pin this commit made is released, and
    no manifest or dataset commit changed."""
    lib = new_repo("lib")
    lib_sha1 = code_commit(lib, {"lib.py": "1\n"}, "l1")
    add_code(dsv, lib, key="lib")
    dsv.tether("commit", "-m", "lib")
    lib_pin1 = dsv.manifest("lib")["pin"]
    assert tags(lib) == [f"tether.{lib_pin1}"]

    code.git("remote", "add", "broken", tmp_path / "missing.git")
    add_code(dsv, code, "remote=broken")
    code_commit(lib, {"lib.py": "2\n"}, "l2")  # lib would get a new pin too
    head = dsv.vcs_head()
    ids = dsv.commit_ids()
    objects = dsv.tree(".tether/objects")

    p = dsv.tether("commit", "-m", "push fails", check_rc=1)
    assert p.stdout == ""
    assert tags(code) == []
    assert tags(lib) == [f"tether.{lib_pin1}"]
    assert tag_target(lib, f"tether.{lib_pin1}") == lib_sha1
    assert dsv.tree(".tether/objects") == objects
    assert dsv.vcs_head() == head
    assert dsv.commit_ids() == ids
    assert dsv.tj("gc")["release"] == []
    # The message names the object, its repository and the remote.
    assert p.stderr.startswith("tether: error: code: "), p.stderr
    assert f"git repository {code.root}: pushing 'refs/tags/tether." in p.stderr, p.stderr
    assert "to broken failed" in p.stderr, p.stderr


def test_an_object_with_a_remote_is_pushed_even_when_another_shares_its_pin(gds, code, bare):
    """Two objects on one repository and state share one pin; the one with
    a remote still needs the pin pushed there."""
    add_code(gds, code, key="a")
    add_code(gds, code, "remote=origin", key="b")
    gds.tether("commit", "-m", "one")
    pin = pin_of(gds, code, code.head())
    assert gds.manifest("a")["pin"] == gds.manifest("b")["pin"] == pin
    assert ls_remote_tags(code, "origin") == [(code.head(), f"refs/tags/tether.{pin}")]


def test_a_url_remote_in_secrets_is_pushed_to_and_never_committed(gds, code, tmp_path):
    path = tmp_path / "secret.git"
    code.git("init", "-q", "--bare", path)
    add_code(gds, code)
    gds.write(".tether/secrets.toml", f'[objects."code"]\nremote = "{path}"\n')
    gds.tether("commit", "-m", "one")
    pin = pin_of(gds, code, code.head())
    got = subprocess.run(["git", "-C", path, "for-each-ref", "--format=%(objectname) %(refname)"],
                         env=code.env, capture_output=True, text=True).stdout.split("\n")
    assert got == [f"{code.head()} refs/tags/tether.{pin}", ""]
    for rel in gds.commit_files():
        assert str(path) not in gds.git("show", f"HEAD:{rel}")
    assert ".tether/secrets.toml" not in gds.commit_files()


# ---------------------------------------------------------------------------
# Dirty checkouts
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["modified", "untracked", "staged"])
def test_dirty_code_repository_refuses_the_commit(dsv, code, how):
    add_code(dsv, code)
    if how == "modified":
        code.write("main.py", "edited\n")
    elif how == "untracked":
        code.write("new.py", "new\n")
    else:
        code.write("main.py", "edited\n")
        code.git("add", "main.py")
    objects = dsv.tree(".tether/objects")
    head = dsv.vcs_head()

    p = dsv.tether("commit", "-m", "dirty", check_rc=3)
    assert p.stdout == ""
    assert tags(code) == []
    assert dsv.tree(".tether/objects") == objects
    assert dsv.vcs_head() == head
    assert p.stderr.startswith("tether: error: code: "), p.stderr
    assert f"git repository {code.root} has uncommitted changes at 'HEAD'" in p.stderr, p.stderr


def test_allow_dirty_pins_the_checked_out_commit(dsv, code):
    sha = code.head()
    code.write("main.py", "edited\n")
    add_code(dsv, code, "allow_dirty=true")
    assert dsv.manifest("code")["locator"]["allow_dirty"] is True
    pin = pin_of(dsv, code, sha)
    r = dsv.tj("commit", "-m", "dirty")
    assert r["objects"] == [{"key": "code", "action": "pinned", "pin": pin, "recoverable": True}]
    m = dsv.manifest("code")
    assert m["state"] == {"sha": sha, "dirty": True}
    assert m["pin_ref"] == {"tag": f"tether.{pin}", "pin": pin, "sha": sha}
    assert tags(code) == [f"tether.{pin}"] and tag_target(code, f"tether.{pin}") == sha
    # The uncommitted change is still there, untouched.
    assert (code.root / "main.py").read_text() == "edited\n"
    # Cleaning the checkout changes no content state: dirty is volatile.
    code.git("checkout", "--", "main.py")
    assert [o["status"] for o in dsv.tj("status")["objects"]] == ["clean"]
    assert dsv.tj("commit", "-m", "clean")["commit"] is None


# ---------------------------------------------------------------------------
# A hostile code repository runs nothing
# ---------------------------------------------------------------------------

HOOKS = ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "pre-push",
         "post-merge", "post-rewrite", "pre-auto-gc", "push-to-checkout")


def make_hostile(code, tmp_path):
    """Arm `code`: hooks in .git/hooks and in a core.hooksPath directory, a
    core.fsmonitor command, ext:: allowed and a remote `evil` whose
    transport is a shell command. Each touches its own file in the marker
    directory, which is returned. Real git is shown to fire every trap
    before the markers are cleared."""
    markers = tmp_path / "markers"
    markers.mkdir()
    hooks_path = tmp_path / "hostile-hooks"
    hooks_path.mkdir()
    for where, d in (("hooks", code.root / ".git" / "hooks"), ("hookspath", hooks_path)):
        d.mkdir(exist_ok=True)
        for name in HOOKS:
            script = d / name
            script.write_text(f"#!/bin/sh\ntouch '{markers}/{where}-{name}'\n")
            script.chmod(0o755)
    fsmon = tmp_path / "fsmonitor.sh"
    fsmon.write_text(f"#!/bin/sh\ntouch '{markers}/fsmonitor'\n")
    fsmon.chmod(0o755)
    code.git("config", "core.hooksPath", hooks_path)
    code.git("config", "core.fsmonitor", fsmon)
    code.git("config", "protocol.ext.allow", "always")
    assert " " not in str(markers) and "%" not in str(markers)
    code.git("remote", "add", "evil", f"ext::sh -c touch% {markers}/ext")

    # The traps are real: git itself springs them.
    code.git("status", "--porcelain")
    code.git("commit", "-q", "--allow-empty", "-m", "armed")
    code.git("push", "-q", "evil", "HEAD:refs/heads/x", check=False)
    sprung = sorted(os.listdir(markers))
    for want in ("fsmonitor", "hookspath-pre-commit", "hookspath-reference-transaction", "ext"):
        assert want in sprung, sprung
    for f in markers.iterdir():
        f.unlink()
    return markers


def quiet_commit(code, files, message):
    """A commit in the hostile repository with every trap off."""
    for rel, text in files.items():
        code.write(rel, text)
    code.git("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "add", "-A")
    code.git("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "commit", "-q", "-m", message)
    return code.head()


def test_hostile_repository_runs_nothing(dsv, code, tmp_path):
    markers = make_hostile(code, tmp_path)
    sha1 = code.head()

    add_code(dsv, code)
    dsv.tj("status")
    dsv.tether("commit", "-m", "one")
    pin1 = dsv.manifest("code")["pin"]
    assert tag_target(code, f"tether.{pin1}") == sha1
    sha2 = quiet_commit(code, {"main.py": "hostile\n"}, "c2")
    assert sorted(os.listdir(markers)) == []
    dsv.tether("commit", "-m", "two")
    pin2 = dsv.manifest("code")["pin"]
    assert tag_target(code, f"tether.{pin2}") == sha2
    dsv.tj("diff", "HEAD~1", "HEAD", "--content")
    dsv.tj("log", "code")

    ds8 = dsv.dataset_id()[:8]
    dsv.tether("new", "-b", "feat")
    assert rev(code, f"refs/heads/tether.ws.{ds8}.feat") == sha2
    h = dsv.tj("open", "code")
    assert (h["read_only"], h["ref"], h["sha"]) == (False, f"tether.ws.{ds8}.feat", sha2)
    h = dsv.tj("open", "code", "-r", "HEAD~1")
    assert (h["read_only"], h["ref"], h["sha"]) == (True, f"tether.{pin1}", sha1)
    assert dsv.tj("verify", "--all-history")["ok"] is True
    dsv.tj("verify")

    if dsv.vcs == "git":
        # Drop the second commit so gc has a tag to delete.
        dsv.git("checkout", "-q", "main")
        dsv.git("branch", "-q", "-D", "feat")
        dsv.git("reset", "-q", "--hard", "HEAD~1")
        dsv.git("reflog", "expire", "--expire=now", "--all")
        assert [x["pin"] for x in dsv.tj("gc", "--no-dry-run")["release"]] == [pin2]
        assert tags(code) == [f"tether.{pin1}"]
    else:
        dsv.tj("gc", "--no-dry-run")
    dsv.tj("gc")
    dsv.tj("verify", "--all-history")
    dsv.tj("ops")
    assert sorted(os.listdir(markers)) == []


def test_hostile_ext_remote_is_refused_and_runs_nothing(gds, code, tmp_path):
    markers = make_hostile(code, tmp_path)
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", "remote=evil", check_rc=None)
    assert sorted(os.listdir(markers)) == []
    # Whatever add says, a manifest naming the remote (a clone's, say) must
    # not get to push through it either.
    gds.write(".tether/objects/code.toml",
              f'kind = "git"\n\n[locator]\npath = "{code.root}"\nref = "HEAD"\nremote = "evil"\n\n'
              '[policy]\npin = "native"\nwrite = "fork"\n')
    c = gds.tether("commit", "-m", "evil", check_rc=3)
    assert "ext::" in c.stderr, c.stderr
    assert tags(code) == []
    assert gds.head() is None
    assert sorted(os.listdir(markers)) == []
    assert p.returncode in (2, 3), describe(p)
    assert "evil" in p.stderr and "ext::" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# new and open
# ---------------------------------------------------------------------------

def test_git_handles_name_the_branch_or_the_tag(dsv, code):
    """The git handle, whole, in JSON and as environment variables, on every
    dataset VCS. That `new` forks at the pin, `open -r` reads the pin and a
    write on the fork is the next commit's are test_lifecycle.py's."""
    sha1 = code.head()
    add_code(dsv, code)
    commit = dsv.tj("commit", "-m", "one")["commit"]
    pin1 = dsv.manifest("code")["pin"]
    sha2 = code_commit(code, {"main.py": "later\n"}, "c2")  # the checkout moves on
    ds8 = dsv.dataset_id()[:8]
    branch = f"tether.ws.{ds8}.feature"

    r = dsv.tj("new", "-b", "feature")
    assert r["bookmark"] == "feature" and r["commit"] == commit
    assert r["objects"] == [{"key": "code", "action": "forked", "branch": branch,
                             "ref": {"branch": branch}}]
    # The code checkout itself is untouched.
    assert code.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert code.head() == sha2
    assert code.git("status", "--porcelain") == ""

    base = {"key": "code", "kind": "git", "path": str(code.root), "uri": str(code.root),
            "sha": sha1, "worktree": None}
    assert dsv.tj("open", "code") == {**base, "read_only": False, "ref": branch}
    ro = {**base, "read_only": True, "ref": f"tether.{pin1}", "rev": commit}
    assert dsv.tj("open", "code", "-r", "HEAD") == ro
    assert dsv.tj("open", "code", env={"TETHER_REV": "HEAD"}) == ro
    assert dsv.tj("open", "code", env={"TETHER_REV": commit}) == ro

    env = dsv.tether("open", "code", "--format", "env").stdout
    assert sorted(env.splitlines()) == sorted([
        "TETHER_HANDLE_KIND='git'",
        f"TETHER_HANDLE_URI='{code.root}'",
        f"TETHER_HANDLE_PATH='{code.root}'",
        f"TETHER_HANDLE_SHA='{sha1}'",
        f"TETHER_HANDLE_REF='{branch}'",
        "TETHER_HANDLE_READ_ONLY='false'",
        "TETHER_HANDLE_KEY='code'",
    ])
    env = dsv.tether("open", "code", "--format", "env", env={"TETHER_REV": "HEAD"}).stdout
    assert f"TETHER_HANDLE_REF='tether.{pin1}'\n" in env
    assert "TETHER_HANDLE_READ_ONLY='true'\n" in env
    assert f"TETHER_HANDLE_REV='{commit}'\n" in env


def test_open_refuses_a_missing_key_and_an_unknown_revision(dsv, code):
    add_code(dsv, code)
    dsv.tether("commit", "-m", "one")
    p = dsv.tether("open", "nokey", check_rc=1)
    assert p.stdout == "" and "'nokey'" in p.stderr, p.stderr
    p = dsv.tether("open", "code", "-r", "nosuchrev", check_rc=1)
    assert p.stdout == "" and "nosuchrev" in p.stderr, p.stderr
    p = dsv.tether("open", "code", "--json", env={"TETHER_REV": "nosuchrev"}, check_rc=1)
    assert p.stdout == "" and "nosuchrev" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# gc
# ---------------------------------------------------------------------------

def two_pins(ds, code):
    sha1 = code.head()
    add_code(ds, code)
    ds.tether("commit", "-m", "one")
    sha2 = code_commit(code, {"main.py": "2\n"}, "c2")
    ds.tether("commit", "-m", "two")
    return (sha1, pin_of(ds, code, sha1)), (sha2, pin_of(ds, code, sha2))


def drop_last_commit(ds):
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.git("reflog", "expire", "--expire=now", "--all")


def test_history_walk_cache_changes_no_answer(gds, code):
    """gc and verify --all-history keep what their walk read in a cache file
    in the repository's own directory (a clone cannot bring one along),
    keyed by object id: cold, warm, damaged or stale, the answers are the
    same, and a dropped commit's pin is released as without it."""
    (sha1, pin1), (sha2, pin2) = two_pins(gds, code)
    cache = gds.p(f".git/tether/cache/{gds.dataset_id()}/history-walk")
    assert not cache.exists()
    cold_v, cold_gc = gds.tj("verify", "--all-history"), gds.tj("gc")
    assert cache.exists() and cache.read_bytes().startswith(b"TTWALK2\n")
    assert gds.git("status", "--porcelain") == ""
    for _ in range(2):
        assert gds.tj("verify", "--all-history") == cold_v
        assert {k: v for k, v in gds.tj("gc").items() if k != "plan"} == \
            {k: v for k, v in cold_gc.items() if k != "plan"}
    cache.write_bytes(b"TTWALK2\n" + b"\0" * 200)  # damaged: not trusted, replaced
    assert gds.tj("verify", "--all-history") == cold_v
    assert cache.read_bytes() != b"TTWALK2\n" + b"\0" * 200
    # The cache still knows the commit dropped here; the walk no longer
    # reaches it, so its pin is unreferenced all the same.
    drop_last_commit(gds)
    r = gds.tj("gc", "--no-dry-run")
    assert [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    assert tags(code) == [f"tether.{pin1}"]
    assert gds.tj("verify", "--all-history")["states"] == 1


def test_gc_deletes_a_pushed_pin_on_the_remote_too(gds, code, bare):
    sha1 = code.head()
    add_code(gds, code, "remote=origin")
    gds.tether("commit", "-m", "one")
    sha2 = code_commit(code, {"main.py": "2\n"}, "c2")
    gds.tether("commit", "-m", "two")
    pin1, pin2 = pin_of(gds, code, sha1), pin_of(gds, code, sha2)
    assert len(ls_remote_tags(code, "origin")) == 2
    drop_last_commit(gds)
    r = gds.tj("gc", "--no-dry-run")
    assert [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    assert ls_remote_tags(code, "origin") == [(sha1, f"refs/tags/tether.{pin1}")]
    assert tags(code) == [f"tether.{pin1}"]


def test_verify_notices_a_deleted_or_moved_pin_tag(gds, code):
    (sha1, pin1), (sha2, pin2) = two_pins(gds, code)
    code.git("tag", "-d", f"tether.{pin2}")
    v = gds.tj("verify", check_rc=3)
    assert v["ok"] is False
    assert [(o["key"], o["ok"], o["detail"]) for o in v["objects"]] == [
        ("code", False, f"tag tether.{pin2} is missing from git repository {code.root}")]
    code.git("tag", f"tether.{pin2}", sha1)
    v = gds.tj("verify", check_rc=3)
    assert [(o["key"], o["ok"], o["detail"]) for o in v["objects"]] == [
        ("code", False, f"tag tether.{pin2} in git repository {code.root} moved: it names {sha1}, "
                        f"the recorded state is {sha2}")]
    code.git("tag", "-f", f"tether.{pin2}", sha2)
    assert gds.tj("verify")["ok"] is True
    assert gds.tj("verify", "--all-history")["ok"] is True


def test_verify_all_history_answers_each_state_of_one_store(dsv, code, new_repo):
    """verify --all-history checks the states of one store together (one
    open, one pass over its tags); each state still gets its own answer: a
    deleted tag, a moved one, an annotated tag at the right commit, a held
    one, and a second store whose repository is gone."""
    shas = [code.head()]
    add_code(dsv, code)
    other = new_repo("other")
    code_commit(other, {"x": "1\n"}, "x1")
    add_code(dsv, other, key="other")
    dsv.tether("commit", "-m", "c0")
    for i in range(1, 4):
        shas.append(code_commit(code, {"main.py": f"{i}\n"}, f"c{i}"))
        dsv.tether("commit", "-m", f"c{i}")
    pins = [pin_of(dsv, code, s) for s in shas]
    v = dsv.tj("verify", "--all-history")
    assert v["ok"] is True and v["states"] == 5

    code.git("tag", "-d", f"tether.{pins[0]}")
    code.git("tag", "-f", f"tether.{pins[1]}", shas[0])
    code.git("tag", "-f", "-a", "-m", "annotated now", f"tether.{pins[2]}", shas[2])
    shutil.rmtree(other.root)
    v = dsv.tj("verify", "--all-history", check_rc=3)
    by_pin = {o["pin"]: o for o in v["objects"]}
    assert by_pin[pins[0]]["ok"] is False
    assert by_pin[pins[0]]["detail"] == f"tag tether.{pins[0]} is missing from git repository {code.root}"
    assert by_pin[pins[1]]["ok"] is False
    assert by_pin[pins[1]]["detail"] == (f"tag tether.{pins[1]} in git repository {code.root} moved: "
                                          f"it names {shas[0]}, the recorded state is {shas[1]}")
    assert by_pin[pins[2]]["ok"] is True  # verify peels an annotated tag
    assert by_pin[pins[3]]["ok"] is True and by_pin[pins[3]]["detail"] is None
    gone = [o for o in v["objects"] if o["key"] == "other"]
    assert len(gone) == 1 and gone[0]["ok"] is False and str(other.root) in gone[0]["detail"]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_add_refuses_what_is_not_a_repository(gds, code, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (code.root / "sub").mkdir()
    for path, why in (
        (plain, f"tether: error: {plain} is not a git repository (the top of a checkout)\n"),
        (tmp_path / "missing", f"tether: error: {tmp_path / 'missing'} is not a git repository "
                               "(the top of a checkout)\n"),
        (code.root / "sub", f"tether: error: {code.root / 'sub'} is not a git repository "
                            f"(the top of a checkout)\nhint: it is inside the repository at {code.root}/"
                            ": give that path\n"),
    ):
        p = gds.tether("add", "code", path, "--kind", "git", check_rc=2)
        assert p.stderr == why
    bare = tmp_path / "b.git"
    code.git("init", "-q", "--bare", bare)
    p = gds.tether("add", "code", bare, "--kind", "git", check_rc=2)
    assert str(bare) in p.stderr and "bare" in p.stderr
    # The dataset's own repository is not an object of itself.
    p = gds.tether("add", "code", ".", "--kind", "git", check_rc=2)
    assert str(gds.root) in p.stderr and "outside the dataset" in p.stderr, p.stderr
    assert not gds.manifest_path("code").exists()


def test_add_refuses_a_missing_ref_and_bad_options(gds, code):
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", "ref=nosuch", check_rc=1)
    assert p.stderr == f"tether: error: git repository {code.root} has no ref or commit 'nosuch'\n"
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", "at=nosuch", check_rc=1)
    assert "'nosuch'" in p.stderr
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", "depth=1", check_rc=2)
    assert "'--depth'" in p.stderr
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", "allow_dirty=maybe", check_rc=2)
    assert "allow_dirty" in p.stderr
    # allow_dirty is a declared option too: listed, and its values checked.
    p = gds.tether("add", "--help")
    assert "--allow_dirty BOOL" in p.stdout
    p = gds.tether("add", "code", code.root, "--kind", "git", "--allow_dirty", "maybe", check_rc=2)
    assert "--allow_dirty" in p.stderr and "true" in p.stderr and "false" in p.stderr
    gds.tether("add", "dirty", code.root, "--kind", "git", "--allow_dirty", "true")
    assert gds.manifest("dirty")["locator"]["allow_dirty"] is True
    gds.manifest_path("dirty").unlink()
    p = gds.tether("add", "code", "https://example.com/code.git", "--kind", "git", check_rc=2)
    assert "https://example.com/code.git" in p.stderr
    assert not gds.manifest_path("code").exists()
    # A ref that does resolve is stored as given, and pinned where it points.
    c1 = code.head()
    code_commit(code, {"main.py": "2\n"}, "c2")
    code.git("tag", "v1", c1)
    add_code(gds, code, "ref=v1")
    gds.tether("commit", "-m", "v1")
    m = gds.manifest("code")
    assert m["locator"]["ref"] == "v1"
    assert m["state"] == {"sha": c1}
    assert tag_target(code, f"tether.{m['pin']}") == c1


@pytest.mark.parametrize("url", [
    "https://example.com/code.git",
    "git@example.com:code.git",
    "/srv/git/code.git",
    "../code.git",
    "file:///srv/git/code.git",
])
def test_add_refuses_a_url_remote(gds, code, url):
    p = gds.tether("add", "code", code.root, "--kind", "git", "--option", f"remote={url}", check_rc=2)
    assert f'"{url}"' in p.stderr and ".tether/secrets.toml" in p.stderr, p.stderr
    assert not gds.manifest_path("code").exists()


def test_committed_manifest_with_a_url_remote_is_refused(gds, code, bare):
    add_code(gds, code, "remote=origin")
    gds.tether("commit", "-m", "one")
    path = gds.manifest_path("code")
    path.write_text(path.read_text().replace('remote = "origin"', f'remote = "{bare}"'))
    gds.git_commit_all("point the remote at a path", ".tether/objects/code.toml")
    head = gds.head()
    code_commit(code, {"main.py": "2\n"}, "c2")
    tags_before = tags(code)
    remote_before = ls_remote_tags(code, "origin")

    for args in (("status",), ("status", "--json"), ("commit", "-m", "x"), ("verify",)):
        p = gds.tether(*args, check_rc=3)
        assert f'"{bare}"' in (p.stderr + p.stdout) and "secrets.toml" in (p.stderr + p.stdout), describe(p)
    assert gds.head() == head
    assert tags(code) == tags_before
    assert ls_remote_tags(code, "origin") == remote_before
