"""Hostile clones (hostile.py) against the commands and flags of issue 12:
promote, merge, restore, drop, pull, abandon, undo, upgrade, new --adopt,
verify --deep, commit --force and gc --prune-bookmarks. Each case is an
attack test_hostile_clone.py or test_hostile_vcs.py makes on the older
commands, or one only the new ones meet (a crafted journal entry undo
would act on, a plan handed over in the clone, a layout from the future,
a store drop --delete-store did not create, a repository configuration
that runs programs when a VCS writes); every run is traced: nothing
executed, nothing contacted, nothing outside the dataset written, the trap
never read."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hostile import Sandbox, free_port
from test_hostile_clone import LINK_CASES, bend, kind_message, link_message

if not shutil.which("strace"):  # scripts/install-deps installs it
    pytest.skip("strace is not installed", allow_module_level=True)

# Every new command and flag, in a form that does real work.
LANDING = [
    ("promote",),
    ("promote", "--dry-run"),
    ("merge",),
    ("restore",),
    ("restore", "-r", "HEAD", "code"),
    ("drop", "code", "--dry-run"),
    ("drop", "code", "--delete-store"),
    ("pull",),
    ("abandon", "HEAD"),
    ("undo", "--dry-run"),
    ("undo",),
    ("upgrade", "--dry-run"),
    ("upgrade",),
    ("upgrade", "--all-history", "--yes"),
    ("new", "--adopt"),
    ("verify", "--deep"),
    ("commit", "-m", "hostile", "--force"),
    ("gc", "--prune-bookmarks"),
]


@pytest.mark.parametrize("case", LINK_CASES)
def test_a_committed_symlink_is_refused_by_every_new_command(tmp_path, case):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    rel = bend(sb, a, case)
    a.commit(f"hostile: {case}")
    clone = sb.clone(a)
    msg = link_message(clone, rel)
    if case == "objects-loop":
        msg = msg.replace(re.escape("[abc]"), "[abc]")
    sb.run_all(clone, rc=3, message=msg, commands=LANDING, leaks=case == LINK_CASES[0])


SPECIAL = [("tether.toml", "mkfifo", "a FIFO"), (".tether/objects/code.toml", "mkfifo", "a FIFO"),
           (".tether/workspace.toml", "mkfifo", "a FIFO"), (".tether/lock", "mksocket", "a socket"),
           (".tether/secrets.toml", "mkdir", "a directory")]


@pytest.mark.parametrize("rel,make,kind", SPECIAL, ids=[f"{r}-{m}" for r, m, _ in SPECIAL])
def test_a_special_file_is_refused_by_every_new_command_without_blocking(tmp_path, rel, make, kind):
    sb = Sandbox(tmp_path)
    clone = sb.clone(sb.attacker())
    target = clone / rel
    if target.exists():
        target.unlink()
    (os.mkdir if make == "mkdir" else getattr(sb, make))(target)
    sb.run_all(clone, rc=3, message=kind_message(clone, rel, kind), commands=LANDING, leaks=False)


# ---------------------------------------------------------------------------
# The journal in the repository's shared directory: a file, not proof
# ---------------------------------------------------------------------------

def journal_dir(clone, ds_id):
    return clone / ".git" / "tether" / "journal" / ds_id


def entries(clone, ds_id):
    return sorted(journal_dir(clone, ds_id).rglob("*.json"))


def test_a_crafted_journal_entry_makes_undo_release_nothing_it_does_not_own(tmp_path):
    """The victim's own commit in the clone (journalled, unpushed), whose
    journal entry has been bent to list, among the pins it created, a pin
    tag of another dataset in the victim's code repository, a pin of a
    store in the trap, a pin that is no pin id and entries of the wrong
    type. undo removes the commit and releases its own pin only; every
    other listed pin is reported, not released, and nothing outside the
    dataset and its own store is touched."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    ds_id = a.dataset_id()
    sb.code.write("main.py", "print('victim v2')\n")
    sb.code.git_commit_all("v2", "main.py")
    sb._tether(clone, "commit", "-m", "victim's commit")
    [entry_path] = [p for p in entries(clone, ds_id) if json.loads(p.read_text())["op"] == "commit"]
    entry = json.loads(entry_path.read_text())
    [own] = entry["created"]
    other_tag = "tether.0badf00d.0000000000000001"
    sb.code.git("tag", other_tag)
    trap_store = sb.trap / "store"
    subprocess.run(["git", "init", "-q", str(trap_store)], check=True, env=sb.env)
    (trap_store / "f").write_text(sb.marker)
    subprocess.run(["git", "-C", str(trap_store), "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x",
                    "--allow-empty"], check=True, env=sb.env)
    subprocess.run(["git", "-C", str(trap_store), "tag", f"tether.{ds_id[:8]}.0000000000000002"], check=True)
    entry["created"] = [
        own,
        dict(own, pin="0badf00d.0000000000000001", pin_ref=dict(own["pin_ref"], tag=other_tag,
                                                                 pin="0badf00d.0000000000000001")),
        dict(own, pin=f"{ds_id[:8]}.0000000000000002", locator={"path": str(trap_store), "ref": "HEAD"},
             pin_ref=dict(own["pin_ref"], tag=f"tether.{ds_id[:8]}.0000000000000002",
                          pin=f"{ds_id[:8]}.0000000000000002")),
        dict(own, pin="../../x\x1b[2J", key="code"),
        dict(own, pin_ref=dict(own["pin_ref"], tag="main")),
        {"key": 3, "pin": None, "kind": [], "locator": "x"},
        "not an object",
    ]
    entry_path.write_text(json.dumps(entry))
    tags_before = sb.code.git("tag", "-l")
    branches_before = sb.code.git("for-each-ref", "refs/heads")
    trap_before = sb.snapshot()
    t = sb.run_all(clone, rc=0, message=None, commands=[("undo", "--dry-run"), ("undo",)],
                   may_write=[sb.code.root])
    out = t[("undo",)].proc.stdout
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out), repr(out)
    # Only its own pin went; the other dataset's tag, the code's branches
    # and the trap store's tag stay.
    assert sb.code.git("tag", "-l") == tags_before.replace(own["pin_ref"]["tag"] + "\n", ""), out
    assert other_tag in sb.code.git("tag", "-l")
    assert sb.code.git("for-each-ref", "refs/heads") == branches_before
    assert sb.snapshot() == {k: v for k, v in sb.snapshot().items()}
    assert {k: v for k, v in trap_before.items() if sb.trap in k.parents} == \
        {k: v for k, v in sb.snapshot().items() if sb.trap in k.parents}


def test_a_crafted_new_entry_makes_undo_delete_no_branch_it_does_not_own(tmp_path):
    """A `new` entry bent to take back forks of the victim's `main` branch
    in the code repository, of a branch in a store in the trap, and of
    another dataset's working branch: each is refused before a store is
    opened (exit 3), and every branch stays."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    ds_id = a.dataset_id()
    sb._tether(clone, "new", "-b", "feat")
    [entry_path] = [p for p in entries(clone, ds_id) if json.loads(p.read_text())["op"] == "new"]
    good = json.loads(entry_path.read_text())
    [fork] = good["forks"]
    sb.code.git("branch", "tether.ws.0badf00d.feat")
    trap_store = sb.trap / "store"
    subprocess.run(["git", "init", "-q", "-b", "main", str(trap_store)], check=True, env=sb.env)
    subprocess.run(["git", "-C", str(trap_store), "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x",
                    "--allow-empty"], check=True, env=sb.env)
    subprocess.run(["git", "-C", str(trap_store), "branch", f"tether.ws.{ds_id[:8]}.feat"], check=True)
    bad_forks = [
        dict(fork, branch="main", ref={"branch": "main"}),
        dict(fork, ref={"branch": "main"}),  # the right branch, but a ref naming main
        dict(fork, branch="tether.ws.0badf00d.feat", ref={"branch": "tether.ws.0badf00d.feat"}),
        dict(fork, locator={"path": str(trap_store), "ref": "HEAD"}),
        dict(fork, key="../x", branch=3),
        "not an object",
    ]
    refs_before = sb.code.git("for-each-ref")
    trap_before = {k: v for k, v in sb.snapshot().items() if sb.trap in k.parents}
    for i, bad in enumerate(bad_forks):
        entry_path.write_text(json.dumps(dict(good, forks=[bad])))
        if i == 3:
            # A locator naming the trap store: its branches are listed (a
            # read of the trap, which the traced checks forbid, so this
            # one runs untraced); nothing there may move.
            for args in (("undo", "--dry-run"), ("undo",)):
                assert sb._plain(args, clone).returncode in (0, 3)
        else:
            # The right branch with a ref naming main (i == 1) is undone
            # through the ref the backend lists: the fork, never main.
            sb.run_all(clone, rc=3, message=r"journal entry|not one `new` makes|undo", leaks=False,
                       commands=[("undo", "--dry-run"), ("undo",)], may_write=[sb.code.root],
                       expect={"undo": (None, None)} if i == 1 else None)
        assert sb.code.git("rev-parse", "main").strip() == sb.code.head()
        assert "tether.ws.0badf00d.feat" in sb.code.git("branch", "--list")
        assert {k: v for k, v in sb.snapshot().items() if sb.trap in k.parents} == trap_before, i
        # put the victim's own fork back if a run took it (the right one)
        if f"tether.ws.{ds_id[:8]}.feat" not in sb.code.git("branch", "--list"):
            sb.code.git("branch", f"tether.ws.{ds_id[:8]}.feat", fork["after"]["sha"])
    assert "refs/heads/main" in refs_before


# ---------------------------------------------------------------------------
# Committed per-checkout state, committed remotes, a layout from the future
# ---------------------------------------------------------------------------

WRITERS = [c for c in LANDING if "--dry-run" not in c and c[0] not in ("verify", "upgrade")]


def test_a_tracked_workspace_is_refused_by_every_new_writer(tmp_path):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    branch = f"tether.ws.{a.dataset_id()[:8]}.main"
    a.write(".tether/workspace.toml",
            f'workspace_id = "abcd1234"\n\n[working.code]\nbranch = "{branch}"\n')
    a.commit("a workspace")
    clone = sb.clone(a)
    refs = sb.code.git("for-each-ref")
    sb.run_all(clone, rc=3, message=r"workspace\.toml is tracked by the repository", commands=WRITERS,
               expect={"upgrade": (None, None), ("abandon", "HEAD"): (3, None), ("undo",): (3, None)})
    assert sb.code.git("for-each-ref") == refs


def test_a_tracked_secrets_file_is_refused_by_every_new_writer(tmp_path):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    a.write(".tether/secrets.toml", f'[objects."code"]\nremote = "ext::sh -c touch% {sb.trap}/pwned"\n')
    a.commit("secrets")
    clone = sb.clone(a)
    refs = sb.code.git("for-each-ref")
    sb.run_all(clone, rc=3, message=r"secrets\.toml is tracked", commands=LANDING,
               expect={"upgrade": (None, None)})
    assert sb.code.git("for-each-ref") == refs
    assert not (sb.trap / "pwned").exists()


@pytest.mark.parametrize("remote", ["ext::sh -c 'touch /tmp/pwned'", "fd::3", "ssh://git@127.0.0.1:{port}/x.git"])
def test_a_committed_remote_in_a_locator_is_never_used_by_the_new_commands(tmp_path, remote):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    path = a.root / ".tether/objects/code.toml"
    remote = remote.format(port=free_port())
    path.write_text(path.read_text().replace("[locator]\n", f'[locator]\nremote = {json.dumps(remote)}\n'))
    a.commit("a remote")
    clone = sb.clone(a)
    refs = sb.code.git("for-each-ref")
    # Every command that opens the object refuses it; upgrade, abandon and
    # undo open no store (undo has nothing of this clone's to take back).
    # What has no working branch to act on skips the object without
    # opening it (promote, merge, restore, pull, new --adopt): any exit, but
    # the traced checks (nothing run, nothing contacted) hold for all.
    opens = {("commit", "-m", "hostile", "--force")}
    # (commit first: drop, further down, takes the manifest out)
    order = sorted(LANDING, key=lambda c: c not in opens)
    sb.run_all(clone, rc=None, message=None, commands=order, may_write=[sb.code.root],
               expect={c: (3, r"is a URL or a path|ext::|fd::|remote") for c in opens})
    assert sb.code.git("for-each-ref") == refs


@pytest.mark.parametrize("where,layout", [("tether.toml", "7"), ("tether.toml", "-1"), ("manifest", "7"),
                                          ("manifest", "-1"), ("tether.toml", "99999999999999999999")])
def test_a_committed_layout_from_the_future_or_negative_is_refused(tmp_path, where, layout):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    if where == "tether.toml":
        p = a.root / "tether.toml"
        text = p.read_text()
        p.write_text(re.sub(r"layout = \d+", f"layout = {layout}", text))
        rel = "tether.toml"
    else:
        p = a.root / ".tether/objects/code.toml"
        text = p.read_text()
        p.write_text(re.sub(r"^layout = \d+", f"layout = {layout}", text, flags=re.M)
                     if "layout = " in text else f"layout = {layout}\n" + text)
        rel = ".tether/objects/code.toml"
    a.commit("layout")
    clone = sb.clone(a)
    rc = 3 if layout == "7" else 1
    # A history reader names the file at its commit, the working copy's
    # reader by its path; a number past 64 bits is malformed TOML.
    msg = re.escape(rel) + (r".*layout 7 is newer than this tether understands" if rc == 3 else
                            r".*(layout|does not fit in 64 bits)")
    sb.run_all(clone, rc=rc, message=msg, commands=LANDING,
               expect={"abandon": (None, None), "undo": (None, None)} if where == "manifest" else None)


# ---------------------------------------------------------------------------
# Programs a repository's configuration names: hooks, fsmonitor, filters
# ---------------------------------------------------------------------------

HOOKS = ["pre-commit", "commit-msg", "post-commit", "post-checkout", "post-rewrite", "pre-rebase",
         "reference-transaction", "pre-push", "post-merge", "prepare-commit-msg"]


def arm(sb, git_dir):
    """A repository configuration that runs programs of the trap's when
    git would: every hook, core.fsmonitor, a clean/smudge filter on every
    file (.gitattributes, committed), a diff driver and an editor. Each
    program leaves a file in the trap when run (and the trap is never to be
    read, so even looking at one is seen)."""
    hooks = sb.trap / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS + ["fsmonitor", "filter", "editor"]:
        h = hooks / name
        h.write_text(f"#!/bin/sh\ntouch {sb.trap}/ran-{name}\ncat\n")
        h.chmod(0o755)
    for key, value in [("core.hooksPath", str(hooks)), ("core.fsmonitor", str(hooks / "fsmonitor")),
                       ("filter.evil.clean", str(hooks / "filter")), ("filter.evil.smudge", str(hooks / "filter")),
                       ("filter.evil.required", "true"), ("diff.evil.command", str(hooks / "filter")),
                       ("core.editor", str(hooks / "editor")), ("sequence.editor", str(hooks / "editor")),
                       ("core.sshCommand", str(hooks / "editor"))]:
        subprocess.run(["git", "config", "--file", str(Path(git_dir) / "config"), key, value], check=True)


def ran(sb):
    return sorted(p.name for p in sb.trap.glob("ran-*"))


def test_the_git_writing_paths_run_no_program_a_repository_configures(tmp_path):
    """abandon's rebase, undo's commit removal, new and new --adopt's
    checkouts, pull and upgrade --all-history's rewrite, in a clone whose
    .git/config names programs for every hook, fsmonitor and a filter on
    every file: libgit2 runs none of them, and tether starts no process."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    a.write(".gitattributes", "* filter=evil diff=evil\n")
    # layout 0 manifests and tether.toml, so that upgrade has a rewrite to do
    for p in [a.root / "tether.toml", *(a.root / ".tether/objects").rglob("*.toml")]:
        p.write_text(re.sub(r"^layout = \d+\n", "", p.read_text(), flags=re.M))
    a.git("add", "-A")  # not force-added: the dataset's caches stay ignored
    a.git("commit", "-q", "-m", "attributes, layout 0")
    clone = sb.clone(a)
    arm(sb, clone / ".git")

    def victim_commit(n):
        sb.code.write("main.py", f"print('v{n}')\n")
        sb.code.git_commit_all(f"v{n}", "main.py")
        sb._tether(clone, "commit", "-m", f"victim {n}")

    ok = (0, None)
    victim_commit(1)
    sb.run_all(clone, rc=0, message=None, commands=[("abandon", "HEAD")], may_write=[sb.code.root])
    victim_commit(2)
    sb.run_all(clone, rc=0, message=None, commands=[("undo",)], may_write=[sb.code.root])
    traces = sb.run_all(clone, rc=0, message=None, may_write=[sb.code.root], commands=[
        ("new", "-b", "feat"), ("commit", "-m", "on feat", "--force"), ("promote",), ("new", "main"), ("pull",),
        ("upgrade", "--all-history", "--yes", "--force")],
        expect={("promote",): (None, None), ("commit", "-m", "on feat", "--force"): (None, None),
                ("upgrade", "--all-history", "--yes", "--force"): ok})
    assert "rewrote" in traces[("upgrade", "--all-history", "--yes", "--force")].proc.stdout
    assert ran(sb) == []
    # The checkout moved under tether (by hand, with git's own programs
    # kept off: git would run them): adopt reconciles it.
    for args in (("branch", "moved"), ("symbolic-ref", "HEAD", "refs/heads/moved")):
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-C", str(clone), *args], check=True, env=sb.env)
    sb.run_all(clone, rc=0, message=None, commands=[("new", "--adopt")], may_write=[sb.code.root])
    assert ran(sb) == []


def test_the_jj_writing_paths_run_nothing_but_jj(tmp_path):
    """The same configuration in a colocated jj dataset (jj reads the
    colocated .git/config too): abandon (`jj abandon`), undo of a commit,
    new, new --adopt and pull go through jj, which runs no git hook,
    fsmonitor or filter; the only programs started are jj and the `tput`
    jj asks for the terminal's width. (jj keeps a
    repository's own config outside the repository, under the user's
    config directory, so a clone carries none.)"""
    jj = shutil.which("jj") or os.path.expanduser("~/.cargo/bin/jj")
    if not os.path.exists(jj):
        pytest.skip("jj is not installed")
    sb = Sandbox(tmp_path)
    root = sb.tmp / "jjds"
    cfg = sb.home / "jj-config.toml"
    cfg.write_text('user.name = "Victim"\nuser.email = "v@example.org"\n')
    for env in (sb.env, sb.plain_env):
        env["JJ_CONFIG"] = str(cfg)
        env["PATH"] = os.path.dirname(jj) + os.pathsep + env.get("PATH", "")
    subprocess.run([jj, "git", "init", "--colocate", str(root)], check=True, env=sb.env, capture_output=True)
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    sb._tether(root, "init")
    sb._tether(root, "add", "code", str(sb.code.root), "--kind", "git")
    sb._tether(root, "commit", "-m", "one")
    arm(sb, root / ".git")

    def victim_commit(n):
        sb.code.write("main.py", f"print('v{n}')\n")
        sb.code.git_commit_all(f"v{n}", "main.py")
        sb._tether(root, "commit", "-m", f"victim {n}")

    # jj itself asks `tput cols` for the terminal's width (its terminal
    # library does, when no terminal answers): a program from PATH, never
    # one the repository names.
    progs = {"jj", "tput"}
    # and looks its user up through libc, which asks nscd's local socket
    nscd = ["/var/run/nscd/socket", "/run/nscd/socket"]
    victim_commit(1)
    run = dict(may_write=[sb.code.root], programs=progs, sockets=nscd)
    sb.run_all(root, rc=0, message=None, commands=[("abandon", "@-")], **run)
    victim_commit(2)
    sb.run_all(root, rc=0, message=None, commands=[("undo",)], **run)
    # (pull works on the trunk only: off it, it refuses, running nothing)
    sb.run_all(root, rc=0, message=None, **run, commands=[
        ("pull",), ("new", "-b", "feat"), ("commit", "-m", "on feat", "--force"), ("pull",), ("new", "--adopt")],
        expect={("commit", "-m", "on feat", "--force"): (None, None), ("new", "--adopt"): (None, None),
                ("pull",): (None, None)})
    assert ran(sb) == []


@pytest.mark.parametrize("body", [
    {"op": 3, "status": [], "started": 5},
    {"op": "commit", "status": "COMPLETE", "started": "2024-01-01T00:00:00Z", "commit": 42, "head_before": ["x"],
     "created": "x"},
    {"op": "new", "status": "COMPLETE", "started": "2024-01-01T00:00:00Z", "forks": {"a": 1},
     "position_before": "x", "position_after": 3},
    {"op": "commit\x1b[2J", "status": "COMPLETE", "started": "\x1b]0;x\x07"},
    [1, 2],
    "garbage",
], ids=["types", "commit-types", "new-types", "escapes", "array", "garbage"])
def test_a_journal_entry_of_the_wrong_shape_is_never_acted_on(tmp_path, body):
    """The newest entry of the journal is malformed: ops lists what it
    can, undo refuses (exit 3, one line, control characters escaped) or
    takes back an older entry, and never acts on the bent one's fields;
    nothing in the dataset's files moves."""
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    clone = sb.clone(a)
    sb._tether(clone, "new", "-b", "feat")
    d = journal_dir(clone, a.dataset_id()) / "closed"
    d.mkdir(parents=True, exist_ok=True)
    (d / "9796228192246384020-1.json").write_text(body if isinstance(body, str) else json.dumps(body))
    ws = (clone / ".tether/workspace.toml").read_bytes()
    traces = sb.run_all(clone, rc=3, message=r"undo|journal entry", may_write=[sb.code.root],
                        commands=[("ops",), ("undo", "--dry-run")],
                        expect={("ops",): (0, None), ("undo", "--dry-run"): (None, None)})
    undo = traces[("undo", "--dry-run")].proc
    # An entry tether cannot read is skipped, and the `new` before it is
    # what undo would take back; one it reads and refuses is named.
    assert undo.returncode in (0, 3), undo.stderr
    if undo.returncode:
        assert len(undo.stderr.splitlines()) <= 2 and undo.stderr.startswith("tether: error: "), undo.stderr
    else:
        assert "new" in undo.stdout, undo.stdout
    out = "".join(t.proc.stdout + t.proc.stderr for t in traces.values())
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out), repr(out)
    assert (clone / ".tether/workspace.toml").read_bytes() == ws
