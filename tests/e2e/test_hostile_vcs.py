"""Hostile clones aimed at the VCS layer (issue 9, items 11 to 13): what a
clone commits must not choose a repository's configuration (its remotes),
switch a git checkout to jj, keep tether's shared state inside committed
content, or smuggle keys, refs and paths past the readers of history.

Each clone is built as an attacker would commit it (hostile.py's
Sandbox.attacker, then bent) and cloned as a victim would; every command of
hostile.COMMANDS then runs in it under strace with all of the harness's
checks: nothing executed, no connect(), nothing outside the dataset
written, the trap untouched and unread, the expected exit code and one
error line. What the generic checks cannot say (a committed git
directory's refs stay as they were, where tether's lock went) is asserted
after the run. Remotes point at 127.0.0.1 ports nobody listens on, so an
attempted connection is harmless but seen.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hostile import Sandbox, free_port

if not shutil.which("strace"):  # scripts/install-deps installs it
    pytest.skip("strace is not installed", allow_module_level=True)

INIT = {"init": (3, r"a tether dataset already exists at ")}


def files_of(top):
    """Every file under top with its bytes (links as links)."""
    return {str(p.relative_to(top)): (os.readlink(p) if p.is_symlink() else p.read_bytes())
            for p in sorted(Path(top).rglob("*")) if p.is_symlink() or p.is_file()}


def manifest_git(path, ref="HEAD", remote=None, pin=None, sha=None, allow_dirty=True):
    """A git object's manifest as `tether add` and `commit` write it."""
    text = 'kind = "git"\n'
    if pin:
        text += f'pin = "{pin}"\nrecoverable = true\n'
    text += f'\n[locator]\nallow_dirty = {"true" if allow_dirty else "false"}\npath = "{path}"\nref = "{ref}"\n'
    if remote:
        text += f'remote = "{remote}"\n'
    if pin:
        text += f'\n[pin_ref]\npin = "{pin}"\nsha = "{sha}"\ntag = "tether.{pin}"\n'
    text += '\n[policy]\npin = "native"\nwrite = "fork"\n'
    if sha:
        text += f'\n[state]\nsha = "{sha}"\n'
    return text


# ---------------------------------------------------------------------------
# 11. A committed git directory must not choose the endpoint
# ---------------------------------------------------------------------------

def commit_git_dir(sb, a, rel, remotes, worktree=None):
    """Commit, at `rel` in the attacker's repository, a copy of the victim's
    code repository's git directory under another name than .git,
    configured as a clone would be: not bare, its work tree the trap (never
    to be read), and remotes of the attacker's choosing."""
    dest = a.root / rel
    shutil.copytree(sb.code.root / ".git", dest)
    cfg = dest / "config"
    for key, value in [("core.bare", "false"), ("core.worktree", str(worktree or sb.trap)), *remotes]:
        subprocess.run(["git", "config", "--file", str(cfg), key, value], check=True)
    # git keeps empty directories out; libgit2 wants refs/ and objects/.
    (dest / "refs" / "tags" / ".keep").write_text("")
    return dest


def hostile_remotes():
    return [("remote.origin.url", f"ssh://git@127.0.0.1:{free_port()}/x.git"),
            ("remote.web.url", f"http://127.0.0.1:{free_port()}/x.git"),
            ("remote.daemon.url", f"git://127.0.0.1:{free_port()}/x.git")]


ENDPOINT = r"inside one another|committed content"
# verify and repair report each object on stdout and exit 3, no error line.
REPORTS = {"verify": (3, None), "repair": (3, None)}


def assert_reported(traces, why):
    """Each of verify's and repair's reports names the refusal."""
    for cmd, t in traces.items():
        if cmd[0] in ("verify", "repair"):
            assert re.search(why, t.proc.stdout), f"{' '.join(cmd)} should say why:\n{t.proc.stdout}"


@pytest.mark.parametrize("layout", ["in-dataset", "beside-dataset"])
def test_committed_git_dir_chooses_no_endpoint(tmp_path, layout):
    sb = Sandbox(tmp_path)
    ds_rel = "." if layout == "in-dataset" else "data"
    a = sb.attacker(ds_rel=ds_rel)
    evil = commit_git_dir(sb, a, "evil", hostile_remotes())
    # Named through /proc/self/cwd: tether's cwd is the dataset's directory.
    path = "/proc/self/cwd/evil" if ds_rel == "." else "/proc/self/cwd/../evil"
    # Recorded and pinned, so that verify and the history walks open it too;
    # and a stray pin tag no manifest names, which gc would delete remotely.
    sha = sb.code.head()
    ds8 = a.dataset_id(ds_rel)[:8]
    (evil / "refs" / "tags" / f"tether.{ds8}.0000000000000000").write_text(sha + "\n")
    for n, (key, remote) in enumerate((("code", "origin"), ("web", "web"), ("daemon", "daemon"))):
        pin = f"{ds8}.{n:016x}"
        (evil / "refs" / "tags" / f"tether.{pin}").write_text(sha + "\n")
        a.write(f"{ds_rel}/.tether/objects/{key}.toml", manifest_git(path, remote=remote, pin=pin, sha=sha))
    a.commit("a dataset with a present")

    clone = sb.clone(a)
    evil_before = files_of(clone / "evil")
    tags = clone / "evil" / "refs" / "tags"
    tags_before = sorted(p.name for p in tags.iterdir())
    head = subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    # Every command that opens the object refuses it; log (no object
    # named), ops and adding another object have no need to.
    traces = sb.run_all(clone, rc=3, message=ENDPOINT, cwd=clone / ds_rel, expect={
        **INIT, **REPORTS, ("log",): (0, None), ("ops",): (0, None), "add": (0, None)})
    assert_reported(traces, ENDPOINT)
    # What a push or gc would have changed in the committed git directory.
    assert sorted(p.name for p in tags.iterdir()) == tags_before
    assert files_of(clone / "evil") == evil_before
    assert subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == head


def test_a_committed_git_dir_outside_the_dataset_checkout_is_refused(tmp_path):
    """The git directory lives in another clone (not the dataset's), where
    it is committed content: its config is that clone's choice too. `add`
    refuses it (exit 2) and a manifest naming it is refused at every use."""
    sb = Sandbox(tmp_path)
    other = sb.attacker(name="other")
    a = sb.attacker()
    pin, sha = f"{a.dataset_id()[:8]}.{0:016x}", sb.code.head()
    git_dir = commit_git_dir(sb, other, "inner", [("remote.origin.url", f"git://127.0.0.1:{free_port()}/x.git")],
                             worktree=sb.code.root)
    (git_dir / "refs" / "tags" / f"tether.{pin}").write_text(sha + "\n")
    other.commit("carry a git dir")
    theirs = sb.clone(other, name="theirs")
    inner = theirs / "inner"

    # Recorded and pinned, so that verify, repair and open -r read it too.
    a.write(".tether/objects/code.toml", manifest_git(inner, remote="origin", pin=pin, sha=sha))
    a.commit("name their git dir")
    clone = sb.clone(a)
    add_inner = ("add", "code2", str(inner), "--kind", "git", "--option", "remote=origin",
                 "--option", "allow_dirty=true")
    traces = sb.run_all(clone, rc=3, message="committed content", extra=[add_inner], expect={
        **INIT, **REPORTS, ("log",): (0, None), ("ops",): (0, None), "add": (0, None),
        add_inner: (2, "committed content")})
    assert_reported(traces, "committed content")


def test_a_symlinked_locator_is_resolved_before_the_checks(tmp_path):
    """A path through a symbolic link into the dataset's checkout is the
    checkout: refused, whatever the spelling."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    inner = clone / "vendored"
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    (tmp_path / "link").symlink_to(inner)
    add = ("add", "vendored", str(tmp_path / "link"), "--kind", "git")
    sb.run_all(clone, rc=2, message=r"inside one another", commands=[add])


# ---------------------------------------------------------------------------
# 12. A committed .jj must not switch a git clone to jj, and a committed git
#     directory must not hold tether's shared state
# ---------------------------------------------------------------------------

def fake_jj_dir(where, git_target):
    """The files jj reads to find its repository: a .jj whose store is a
    git directory of its author's choice."""
    store = Path(where) / ".jj" / "repo" / "store"
    store.mkdir(parents=True)
    (store / "type").write_text("git")
    (store / "git_target").write_text(str(git_target))
    (Path(where) / ".jj" / "working_copy").mkdir()
    (Path(where) / ".jj" / "working_copy" / "type").write_text("local")


def trap_store(sb):
    """A bare git repository in the trap: a store a hostile .jj names."""
    store = sb.trap / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(store)], check=True, env=sb.env)
    return store


@pytest.mark.parametrize("level", ["colocated", "in-dataset"])
def test_a_committed_dotjj_does_not_make_a_git_clone_jj(tmp_path, level):
    """Every command works on git (no jj started: the harness allows no
    program), and tether's lock and history-walk cache go in .git, not in
    .jj."""
    sb = Sandbox(tmp_path)
    ds_rel = "." if level == "colocated" else "data"
    a = sb.attacker(ds_rel=ds_rel)
    # A file object outside the clone that changes after the clone, so
    # that `commit` has something to commit.
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "f.txt").write_text("one\n")
    sb._tether(a.root / ds_rel, "add", "f", str(shared / "f.txt"), "--kind", "file", "--file", "mutable")
    sb._tether(a.root / ds_rel, "commit", "-m", "one")
    fake_jj_dir(a.root / ds_rel, trap_store(sb))
    a.commit("a present")

    clone = sb.clone(a)
    ds = clone / ds_rel
    (shared / "f.txt").write_text("two\n")
    jj_before = sorted(str(p.relative_to(ds)) for p in (ds / ".jj").rglob("*"))
    # The forks of `new` and a writable `open` are branches in the code
    # repository: ordinary work in the victim's own repository.
    traces = sb.run_all(clone, rc=0, message=None, cwd=ds, expect=INIT, may_write=[sb.code.root])
    # git committed it (the code object is unchanged), and tether's shared
    # state is in .git, not in .jj.
    commit = traces[("commit", "-m", "hostile")].proc
    sha = re.match(r"\[([0-9a-f]{7,})\] hostile", commit.stdout)
    assert sha, commit.stdout
    files = subprocess.run(["git", "-C", clone, "show", "--name-only", "--format=", sha.group(1)],
                           capture_output=True, text=True, check=True).stdout.split()
    assert files == [str(Path(ds_rel) / ".tether/objects/f.toml")]
    assert (clone / ".git" / "tether.lock").exists()
    assert list((clone / ".git" / "tether" / "cache").glob("*/history-walk"))
    assert sorted(str(p.relative_to(ds)) for p in (ds / ".jj").rglob("*")) == jj_before


def test_a_dotjj_that_disagrees_with_dotgit_is_refused(tmp_path):
    """Untracked, beside .git, but naming another git directory as its
    store: not the repository this checkout is."""
    sb = Sandbox(tmp_path)
    clone = sb.clone(sb.attacker())
    fake_jj_dir(clone, trap_store(sb))
    with open(clone / ".git" / "info" / "exclude", "a") as f:
        f.write("/.jj/\n")
    # What needs no VCS (verify, log of a git object, add) does its work;
    # ops reads the journal in the repository's shared directory.
    sb.run_all(clone, rc=3, message="disagrees with .git", expect={
        **INIT, ("verify",): (0, None), ("log", "code"): (0, None), "add": (0, None)})


def test_a_committed_git_dir_is_not_the_datasets_repository(tmp_path):
    """A committed directory that is a git directory (HEAD, objects, refs,
    config with a work tree) holding a dataset: git's discovery would open
    it, and tether.lock and the journal would go inside committed content."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    sub = a.root / "sub"
    shutil.copytree(a.root / ".git", sub)
    subprocess.run(["git", "config", "--file", str(sub / "config"), "core.worktree", ".."], check=True)
    (sub / "refs" / "tags" / ".keep").write_text("")
    shutil.copy(a.root / "tether.toml", sub / "tether.toml")
    # And a journal of its own where tether once fell back to when the VCS
    # could not be opened: `ops` listed it, and gc visits the stores
    # journal entries name.
    journal = sub / ".tether" / "journal" / a.dataset_id()
    journal.mkdir(parents=True)
    (journal / "0000000000000000001-1.json").write_text(
        f'{{"op": "commit", "status": "INCOMPLETE", "started": "2024-01-01T00:00:00Z", "message": "{sb.marker}", '
        f'"pins": [{{"kind": "git", "locator": {{"path": "{sb.trap}"}}, "pin": "{a.dataset_id()[:8]}.{0:016x}"}}], '
        '"commit": null}\n')
    a.commit("a present")

    clone = sb.clone(a)
    before = files_of(clone / "sub")
    # Commands that need the repository refuse it (ops too: the journal is
    # in its shared directory); verify needs no VCS, and the copied dataset
    # has no objects and no extra.txt.
    sb.run_all(clone, rc=3, message="shared directory", cwd=clone / "sub", expect={
        **INIT, ("verify",): (0, None),
        ("open", "code"): (1, "no object 'code'"), "add": (1, "path does not exist: extra.txt")})
    # No tether.lock, journal or cache was made (or touched) inside it.
    assert files_of(clone / "sub") == before


# ---------------------------------------------------------------------------
# 13. Keys, refs and strings from history are validated by every reader
# ---------------------------------------------------------------------------

HISTORY = r"malformed tree|not a valid object key"


def test_a_tree_entry_climbing_out_of_the_dataset_is_refused_by_every_reader(tmp_path):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    # Branch `evil`: a commit whose .tether/objects holds the entry
    # "../../../trap/EVIL.toml", i.e. the trap seen from a clone's objects
    # directory (<tmp>/cloneN/.tether/objects).
    blob = a.git_out("hash-object", "-w", "--stdin", data=(a.root / ".tether/objects/code.toml").read_bytes())
    objects = a.literal_tree([(b"100644", b"../../../trap/EVIL.toml", blob)])
    dot_tether = a.literal_tree([(b"40000", b"objects", objects)])
    config = a.git_out("rev-parse", "HEAD:tether.toml")
    root = a.literal_tree([(b"40000", b".tether", dot_tether), (b"100644", b"tether.toml", config)])
    a.git("branch", "evil", a.git_out("commit-tree", root, "-p", "HEAD", "-m", "evil"))
    clone = sb.clone(a, branches=["evil"])
    assert (clone / ".." / "trap").resolve() == sb.trap
    sb.trap_file("sentinel")

    # The history walks and every reader of evil's manifests refuse it;
    # the rest works on main, where nothing is wrong.
    refused = (1, HISTORY)
    sb.run_all(clone, rc=0, message=None, may_write=[sb.code.root],
               extra=[("diff", "HEAD", "evil"), ("log", "evil"), ("new", "evil"), ("open", "code", "-r", "evil")],
               expect={**INIT, ("verify", "--all-history"): refused, ("gc",): refused,
                       ("gc", "--no-dry-run"): refused, "repair": refused,
                       ("diff", "HEAD", "evil"): refused, ("log", "evil"): refused, ("new", "evil"): refused,
                       ("open", "code", "-r", "evil"): refused})
    assert sorted(os.listdir(sb.trap)) == ["sentinel"]


def test_a_string_with_a_nul_byte_is_refused(tmp_path):
    """`ref = "HEAD\\u0000x"` would act as HEAD once it is a C string: a
    committed manifest holding one is malformed, for every command that
    reads it."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    a.write(".tether/objects/code.toml",
            f'kind = "git"\n\n[locator]\npath = "{sb.code.root}"\nref = "HEAD\\u0000x"\n\n'
            '[policy]\npin = "native"\nwrite = "fork"\n')
    a.commit("a NUL in a ref")
    clone = sb.clone(a)
    head = subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    # `log code`: with its manifest refused, `code` is no key, so no revision.
    sb.run_all(clone, rc=1, message=r"code\.toml.*: locator\.ref holds a NUL byte", expect={
        **INIT, ("ops",): (0, None), "add": (0, None), ("log", "code"): (1, "unknown revision 'code'")})
    # Nothing was committed.
    assert subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head


def test_a_nul_byte_met_only_by_the_history_walk_is_refused(tmp_path):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    a.git("checkout", "-q", "-b", "side")
    a.write(".tether/objects/g.toml", 'kind = "file"\n\n[locator]\nuri = "/tmp/x\\u0000y"\n')
    a.commit("nul")
    a.git("checkout", "-q", "main")
    clone = sb.clone(a, branches=["side"])
    refused = (1, r"g\.toml at [0-9a-f]+: locator\.uri holds a NUL byte")
    sb.run_all(clone, rc=0, message=None, may_write=[sb.code.root], expect={
        **INIT, ("verify", "--all-history"): refused, ("gc",): refused, ("gc", "--no-dry-run"): refused,
        "repair": refused})


@pytest.mark.parametrize("case", ["tether-toml", "workspace-key"])
def test_committed_config_with_a_bad_string_is_refused(tmp_path, case):
    """tether.toml and .tether/workspace.toml are read the same way: a NUL
    byte in a string, or a [working] table not named by an object key.
    (A committed workspace.toml is refused before it is read, below; this
    one is the checkout's own, so the reader's own check is what speaks.)"""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    readers = {}
    if case == "tether-toml":
        cfg = (a.root / "tether.toml").read_text()
        a.write("tether.toml", cfg.replace('write = "fork"', 'write = "fork\\u0000x"'))
        msg = r"tether\.toml: defaults\.write holds a NUL byte"
    a.commit(case)
    clone = sb.clone(a)
    if case == "workspace-key":
        (clone / ".tether/workspace.toml").write_text('workspace_id = "abcd1234"\n\n[working."../x"]\nbranch = "b"\n')
        msg = r"workspace\.toml: \[working\.\"\.\./x\"\] is not named by a valid object key"
        # What never reads the workspace (it names no object's working ref).
        readers = {cmd: (0, None) for cmd in (("log",), ("verify", "--all-history"), ("repair",),
                                              ("repair", "--all-history"), ("ops",))}
        readers["add"] = (0, None)
    sb.run_all(clone, rc=1, message=msg, expect={**INIT, **readers})


# ---------------------------------------------------------------------------
# What the issue implies besides: a committed URL remote, committed
# per-checkout state (workspace, cache, journal)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["locator", "history"])
def test_a_committed_url_remote_is_never_used(tmp_path, where):
    """A URL comes only from .tether/secrets.toml: `remote = "ssh://..."`
    in a committed manifest is refused at every use, and nothing is
    contacted: in HEAD's manifest, or only in history, where gc would
    release a stray pin of the store with every locator naming a remote."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    url = f"ssh://git@127.0.0.1:{free_port()}/x.git"
    path = a.root / ".tether/objects/code.toml"
    good = path.read_text()
    path.write_text(good.replace("[locator]\n", f'[locator]\nremote = "{url}"\n'))
    a.commit("a URL remote")
    if where == "history":
        path.write_text(good)
        a.commit("and back")
        stray = f"tether.{a.dataset_id()[:8]}.{0:016x}"
        sb.code.git("tag", stray)
    clone = sb.clone(a)
    tags = sb.code.git("tag", "-l")
    url_refused = r'remote "ssh://[^"]+" is a URL or a path'
    if where == "locator":
        # Every command that opens the object; log (none named), ops and
        # adding another object have no need to.
        expect = {**INIT, **REPORTS, ("log",): (0, None), ("ops",): (0, None), "add": (0, None)}
        traces = sb.run_all(clone, rc=3, message=url_refused, expect=expect)
        assert_reported(traces, url_refused)
    else:
        # Only the history walks meet it: they refuse, the rest works.
        refused = (3, url_refused)
        expect = {**INIT, ("gc",): refused, ("gc", "--no-dry-run"): refused,
                  ("verify", "--all-history"): (3, None), ("repair", "--all-history"): (3, None)}
        traces = sb.run_all(clone, rc=0, message=None, may_write=[sb.code.root], expect=expect)
        assert_reported({c: t for c, t in traces.items() if c[-1] == "--all-history"}, url_refused)
    # The stray pin was not released (nor anything else of the store).
    assert sb.code.git("tag", "-l") == tags


def test_a_committed_workspace_is_refused_before_it_steers_a_fork(tmp_path):
    """.tether/workspace.toml is this checkout's own state: among it, the
    head tether last left each working branch at, which is what lets a
    fork move a branch that exists. Committed, it would let `new` move the
    victim's working branch (their unpinned work on it) onto the clone's
    recorded state. Every command that forks or writes a store refuses a
    tracked one (exit 3), as it refuses a tracked secrets.toml."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    branch = f"tether.ws.{a.dataset_id()[:8]}.feature"
    # The victim's own work on that working branch (from another checkout
    # of the dataset), which the attacker has seen: its sha.
    sb.code.git("checkout", "-q", "-b", branch)
    sb.code.write("main.py", "print('unpinned work')\n")
    work = sb.code.git_commit_all("work nobody pinned", "main.py")
    sb.code.git("checkout", "-q", "main")
    a.write(".tether/workspace.toml",
            f'workspace_id = "abcd1234"\n\n[working.code.heads."{branch}"]\ndirty = false\nsha = "{work}"\n')
    a.commit("a workspace")
    clone = sb.clone(a)
    tracked = (3, r"workspace\.toml is tracked by the repository: it is this checkout's own state")
    # What reads a store's secrets (status and verify too) or may fork
    # refuses; the readers of history (diff, log, open -r) and ops do not
    # read the workspace's heads.
    ok = (0, None)
    sb.run_all(clone, rc=tracked[0], message=tracked[1], expect={
        **INIT, "diff": ok, "log": ok, ("open", "code", "-r", "HEAD"): ok, "ops": ok})
    assert sb.code.git("rev-parse", branch).strip() == work


def test_committed_cache_lock_and_journal_are_never_trusted(tmp_path):
    """.tether/cache, .tether/lock and a .tether/journal force-added by the
    attacker: the caches are keyed by commit id (HEAD's cannot be in HEAD's
    own tree) and by stat (inode, ctime), so they are misses; the journal
    lives only in .git, so a committed entry naming a store in the trap is
    never listed, and gc never visits that store. Every command does its
    work as in a clone nobody bent."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    a.write("data/f.txt", "one\n")
    sb._tether(a.root, "add", "f", "data/f.txt", "--kind", "file", "--file", "mutable")
    sb._tether(a.root, "commit", "-m", "f")
    sb._tether(a.root, "status")  # its caches, current for the attacker
    cache = a.root / ".tether" / "cache"
    assert list(cache.iterdir())
    # A view of HEAD's manifests claiming f is at a state it never had.
    (cache / "head-manifests.json").write_text(
        '{"commit": "%s", "objects": {"f": {"digest": "%s", "kind": "file", "state": {"sha256": "%s", '
        '"size": 2, "type": "file"}}}}' % ("0" * 40, "1" * 64, "2" * 64))
    pin = f"{a.dataset_id()[:8]}.{0:016x}"
    journal = a.root / ".tether" / "journal" / a.dataset_id()
    journal.mkdir(parents=True)
    (journal / "0000000000000000001-1.json").write_text(
        f'{{"op": "commit", "status": "INCOMPLETE", "started": "2024-01-01T00:00:00Z", "message": "{sb.marker}", '
        f'"pins": [{{"key": "code", "kind": "git", "locator": {{"path": "{sb.trap / "store"}"}}, "pin": "{pin}"}}], '
        '"commit": null}\n')
    sb.trap_file("store/HEAD", "ref: refs/heads/main\n")
    a.commit("caches, a lock and a journal")
    clone = sb.clone(a)
    tracked = subprocess.run(["git", "-C", clone, "ls-files", ".tether"], capture_output=True, text=True).stdout
    assert ".tether/lock" in tracked and ".tether/cache/" in tracked and ".tether/journal/" in tracked, tracked
    # The object is the file at its resolved path, the attacker's: it
    # changes after the clone, so every cached hash of it is stale.
    (a.root / "data/f.txt").write_text("two\n")
    traces = sb.run_all(clone, rc=0, message=None, may_write=[sb.code.root], expect=INIT)
    # status saw the real change, not a cached view; ops the real journal.
    assert "modified" in traces[("status",)].proc.stdout, traces[("status",)].proc.stdout
    assert sb.marker not in traces[("ops",)].proc.stdout


def put_loose(git_dir, kind, body):
    """Write one loose object straight into the object store (git's own
    fast-import and mktree recurse per level, and cannot build what this
    test needs); its id, raw."""
    import hashlib
    import zlib
    raw = kind.encode() + b" %d\0" % len(body) + body
    hexid = hashlib.sha1(raw).hexdigest()
    d = Path(git_dir) / "objects" / hexid[:2]
    d.mkdir(parents=True, exist_ok=True)
    (d / hexid[2:]).write_bytes(zlib.compress(raw, 1))
    return bytes.fromhex(hexid)


DEEP = 30000  # levels: far past any key, and past what a walk recursing per level survives


def test_trees_nested_past_any_key_end_in_an_error_not_a_crash(ds):
    """A tree is the clone's content, and every walker (read_tree natively
    and through libgit2, the history walk) recursed once per level: a chain
    of nested trees under .tether/objects on some branch overflowed the
    stack of diff, verify --all-history and gc. Now a walk stops at
    TETHER_VCS_TREE_DEPTH_MAX levels with one line."""
    ds.write("f.txt", "one\n")
    ds.tether("add", "f", "f.txt", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "one")
    git_dir = ds.root / ".git"
    t = put_loose(git_dir, "blob", ds.manifest_path("f").read_bytes())
    t = put_loose(git_dir, "tree", b"100644 x.toml\0" + t)
    for _ in range(DEEP):
        t = put_loose(git_dir, "tree", b"40000 a\0" + t)
    dot_tether = put_loose(git_dir, "tree", b"40000 objects\0" + t)
    config = bytes.fromhex(ds.git("rev-parse", "HEAD:tether.toml").strip())
    root = put_loose(git_dir, "tree", b"100644 tether.toml\0" + config + b"40000 .tether\0" + dot_tether)
    commit = ds.git("commit-tree", root.hex(), "-p", "HEAD", "-m", "deep").strip()
    ds.git("branch", "evil", commit)
    for args in (("diff", "HEAD", "evil"), ("verify", "--all-history"), ("gc",)):
        p = ds.tether(*args, check_rc=1)
        assert re.search(r"nests deeper than \d+ directories: no object key is that deep", p.stderr), p.stderr
        assert len(p.stderr.splitlines()) == 1, p.stderr
    # main itself is fine.
    assert ds.tj("status")["objects"][0]["status"] == "clean"
