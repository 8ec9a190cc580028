"""Crash safety of `tether commit`: the journal and the TETHER_FAULT kill
points.

src/core/journal.h: with TETHER_FAULT=<op>:<step> the process kills itself
with SIGKILL when it reaches that step. The kill points are the
tt_fault_point() calls; there are three, all in src/core/commit.c
(apply_plan), and none in new.c or gc.c:

  commit:journal-written   after the INCOMPLETE journal entry naming the
                           pins is written, before any pin is created
  commit:object-recorded   after the first object's planned action (its
                           pin created, its manifest rewritten); the hook
                           fires on the first call only, since the process
                           is dead by the second
  commit:vcs-committed     after the VCS commit, before the journal entry
                           is closed

Every test uses a dataset holding three code repositories (kind git, so a
pin is a real tag `tether.<pin id>` in that repository) and one mutable
directory (kind file, observed: its state is recorded, no ref). Keys sort
code-a, code-b, code-c, files, which is the order commit works in.

After every crash and recovery the same invariants must hold: one dataset
commit for the work, no INCOMPLETE journal entry left, `verify` and
`verify --all-history` clean, and after `gc --no-dry-run` the `tether.*`
tags of each code repository are exactly the pins that manifests in the
dataset's history name (none lost, none leaked).
"""
import json
import os
import random
import re
import subprocess
import time
import tomllib

import pytest

from conftest import SANITIZER_MARKERS, TETHER_BIN, expected_dir_state, expected_pin

CODE_KEYS = ("code-a", "code-b", "code-c")
FILE_KEY = "files"
KEYS = CODE_KEYS + (FILE_KEY,)
JOURNAL_ID = re.compile(r"^[0-9]{19}-[0-9]+$")
ISO_UTC = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
MERGE_REFUSAL = "tether: error: a merge is in progress in this repository; finish or abort it first\n"


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def code_advance(code, text):
    """Commit a new main.py in a code repository; the new sha."""
    code.write("main.py", text)
    code.git("add", "-A")
    code.git("commit", "-q", "-m", text.strip())
    return code.head()


def tags(code):
    return set(code.git("tag", "-l", "tether.*").split())


def git_pin(ds, code, sha):
    """A code repository commit's pin id (dirty and change_id are volatile:
    only the sha counts)."""
    return expected_pin(ds.dataset_id(), "git", {"path": str(code.root)}, {"sha": sha})


def files_pin(ds):
    return expected_pin(ds.dataset_id(), "file", {"uri": str(ds.p("data/files"))},
                        expected_dir_state(ds.p("data/files")))


def journal_pin(code, key, pin):
    return {"key": key, "kind": "git", "locator": {"path": str(code.root), "ref": "HEAD"}, "pin": pin}


def ops(ds, cwd=None):
    return ds.tj("ops", cwd=cwd)["ops"]


def incomplete(ds, cwd=None):
    return [e for e in ops(ds, cwd) if e["status"] == "INCOMPLETE"]


def manifest_bytes(ds, root=None):
    base = (root or ds.root) / ".tether" / "objects"
    return {p.name: p.read_bytes() for p in sorted(base.glob("*.toml"))}


def listing_files(ds):
    d = ds.p(".tether/listings")
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def dataset_commits(ds, rev="HEAD"):
    """The commits of rev's history that touch .tether (tether's own)."""
    return ds.git("rev-list", rev, "--", ".tether").split()


def history_pins(ds, key):
    """Every pin a manifest of `key` names, in any commit reachable from any
    ref (and every worktree's HEAD), plus the working copy: read with git
    itself, through one `git cat-file --batch`."""
    revs = ds.git("rev-list", "--all").split()
    pins = set()
    work = ds.manifest_path(key)
    if work.exists():
        m = tomllib.loads(work.read_text())
        if "pin" in m:
            pins.add(m["pin"])
    if not revs:
        return pins
    query = "".join(f"{r}:.tether/objects/{key}.toml\n" for r in revs).encode()
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=ds.root, env=ds.env, input=query,
                         capture_output=True, check=True).stdout
    pos = 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode().split()
        pos = nl + 1
        if header[-1] == "missing":
            continue
        size = int(header[2])
        m = tomllib.loads(out[pos:pos + size].decode())
        pos += size + 1
        if "pin" in m:
            pins.add(m["pin"])
    return pins


def assert_clean_and_exact(ds, codes):
    """No INCOMPLETE entry, verify and verify --all-history clean, status
    clean, and after gc --no-dry-run every code repository's tether.* tags
    are exactly the pins its manifests in history name."""
    assert incomplete(ds) == []
    v = ds.tj("verify")
    assert v["ok"] is True
    assert [(o["key"], o["ok"]) for o in v["objects"]] == [(k, True) for k in KEYS]
    vh = ds.tj("verify", "--all-history")
    assert vh["ok"] is True
    assert all(o["ok"] for o in vh["objects"]), vh
    st = ds.tj("status")
    assert st["clean"] is True
    assert [(o["key"], o["status"]) for o in st["objects"]] == [(k, "clean") for k in KEYS]
    ds.tj("gc", "--no-dry-run")
    for key, code in codes.items():
        assert tags(code) == {f"tether.{p}" for p in history_pins(ds, key)}, key
    # gc found nothing more to do: a second pass releases nothing.
    g = ds.tj("gc")
    assert (g["release"], g["listings"], g["errors"]) == ([], [], [])


# ---------------------------------------------------------------------------
# Fixture: a dataset with three code repositories and one directory
# ---------------------------------------------------------------------------

class Scene:
    def __init__(self, ds, codes):
        self.ds = ds
        self.codes = codes  # key -> Repo

    def change_everything(self, n):
        """A new commit in every code repository and a changed directory;
        returns the pins the next commit creates, by key."""
        pins = {}
        for key, code in self.codes.items():
            sha = code_advance(code, f"{key} v{n}\n")
            pins[key] = git_pin(self.ds, code, sha)
        self.ds.write("data/files/run.csv", f"run,{n}\n")
        return pins


@pytest.fixture
def scene(ds, new_repo):
    codes = {}
    for key in CODE_KEYS:
        code = new_repo(key)
        code_advance(code, f"{key} v0\n")
        codes[key] = code
        ds.tether("add", key, code.root, "--kind", "git")
    ds.write("data/files/plate.csv", "well,value\nA1,0.5\n")
    ds.write("data/files/run.csv", "run,0\n")
    ds.tether("add", FILE_KEY, "data/files", "--kind", "file", "--file", "mutable")
    r = ds.tj("commit", "-m", "base")
    assert [o["action"] for o in r["objects"]] == ["pinned", "pinned", "pinned", "recorded"]
    for key, code in codes.items():
        assert tags(code) == {f"tether.{ds.manifest(key)['pin']}"}
    assert incomplete(ds) == []
    return Scene(ds, codes)


# ---------------------------------------------------------------------------
# Kills before the VCS commit: the journal keeps the pins, a re-run finishes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("step", ["journal-written", "object-recorded"])
def test_kill_before_vcs_commit_then_rerun_finishes(scene, step):
    ds, codes = scene.ds, scene.codes
    head0 = ds.head()
    commits0 = dataset_commits(ds)
    tags0 = {k: tags(c) for k, c in codes.items()}
    manifests0 = manifest_bytes(ds)
    listings0 = listing_files(ds)
    ops0 = ops(ds)
    pins = scene.change_everything(1)
    fpin = files_pin(ds)

    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": f"commit:{step}"})

    # Nothing landed in the dataset's history.
    assert ds.head() == head0
    # The journal names every pin the commit was about to create.
    after = ops(ds)
    assert after[:len(ops0)] == ops0
    assert len(after) == len(ops0) + 1
    entry = after[-1]
    assert JOURNAL_ID.match(entry["id"]) and ISO_UTC.match(entry["started"])
    assert {k: v for k, v in entry.items() if k not in ("id", "started")} == {
        "op": "commit", "status": "INCOMPLETE", "message": "x", "commit": None, "head_before": head0,
        "pins": [journal_pin(codes[k], k, pins[k]) for k in CODE_KEYS],
    }
    # What the dead process left behind, exactly.
    if step == "journal-written":
        assert {k: tags(c) for k, c in codes.items()} == tags0
        assert manifest_bytes(ds) == manifests0
    else:
        # code-a was pinned and its manifest rewritten; nothing else.
        assert tags(codes["code-a"]) == tags0["code-a"] | {f"tether.{pins['code-a']}"}
        assert {k: tags(codes[k]) for k in ("code-b", "code-c")} == {k: tags0[k] for k in ("code-b", "code-c")}
        now = manifest_bytes(ds)
        assert {k: v for k, v in now.items() if k != "code-a.toml"} == {
            k: v for k, v in manifests0.items() if k != "code-a.toml"}
        m = ds.manifest("code-a")
        assert (m["pin"], m["pin_ref"]["tag"]) == (pins["code-a"], f"tether.{pins['code-a']}")
    assert listing_files(ds) == listings0

    # gc keeps every pin the INCOMPLETE entry names: nothing is unreferenced.
    g = ds.tj("gc")
    assert g["dry_run"] is True
    assert not {r["pin"] for r in g["release"]} & set(pins.values())
    assert (g["release"], g["listings"], g["errors"]) == ([], [], [])
    g = ds.tj("gc", "--no-dry-run")
    assert (g["release"], g["listings"], g["errors"]) == ([], [], [])
    if step == "object-recorded":
        assert f"tether.{pins['code-a']}" in tags(codes["code-a"])

    # The re-run finishes the work in exactly one new dataset commit.
    r = ds.tj("commit", "-m", "x")
    assert r["commit"] == ds.head()
    assert ds.git("rev-parse", "HEAD~1").strip() == head0
    assert dataset_commits(ds) == [r["commit"]] + commits0
    for key in CODE_KEYS:
        assert ds.manifest_at("HEAD", key)["pin"] == pins[key]
        assert ds.manifest_at("HEAD", key)["pin_ref"]["tag"] == f"tether.{pins[key]}"
    assert ds.manifest_at("HEAD", FILE_KEY)["pin"] == fpin
    log = ds.tj("log", "-n", "1")["commits"][0]
    assert (log["id"], log["summary"]) == (r["commit"], "x")
    assert log["objects"] == [{"key": k, "change": "changed", "pin": pins[k]} for k in CODE_KEYS] + [
        {"key": FILE_KEY, "change": "changed", "pin": fpin}]
    for key, code in codes.items():
        assert tags(code) == tags0[key] | {f"tether.{pins[key]}"}

    # The dead run's entry is closed by the commit that finished its work.
    final = {e["id"]: e for e in ops(ds)}
    closed = final[entry["id"]]
    assert (closed["status"], closed["commit"], closed["finished_by"]) == ("COMPLETE", r["commit"], r["commit"])
    assert_clean_and_exact(ds, codes)
    for key, code in codes.items():
        assert tags(code) == tags0[key] | {f"tether.{pins[key]}"}


def test_kill_after_first_pin_then_code_moves_on_leaks_nothing(scene):
    """The dead run pinned code-a at v1; before the re-run code-a moves to
    v2. The re-run records v2, the v1 pin is named by no commit, and gc
    releases it (its INCOMPLETE entry was closed by the re-run)."""
    ds, codes = scene.ds, scene.codes
    tags0 = {k: tags(c) for k, c in codes.items()}
    pins1 = scene.change_everything(1)
    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:object-recorded"})
    assert f"tether.{pins1['code-a']}" in tags(codes["code-a"])
    pin_a2 = git_pin(ds, codes["code-a"], code_advance(codes["code-a"], "code-a v2\n"))

    r = ds.tj("commit", "-m", "x")
    assert {o["key"]: (o["action"], o["pin"]) for o in r["objects"]}["code-a"] == ("pinned", pin_a2)
    assert ds.manifest_at("HEAD", "code-a")["pin"] == pin_a2
    assert incomplete(ds) == []
    g = ds.tj("gc")
    assert [(x["kind"], x["pin"]) for x in g["release"]] == [("git", pins1["code-a"])]
    assert_clean_and_exact(ds, codes)
    assert tags(codes["code-a"]) == tags0["code-a"] | {f"tether.{pin_a2}"}
    for key in ("code-b", "code-c"):
        assert tags(codes[key]) == tags0[key] | {f"tether.{pins1[key]}"}


def test_rerun_reports_the_object_the_dead_run_pinned_as_pinned(scene):
    ds = scene.ds
    pins = scene.change_everything(1)
    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:object-recorded"})
    r = ds.tj("commit", "-m", "x")
    assert r["objects"][0] == {"key": "code-a", "action": "pinned", "pin": pins["code-a"], "recoverable": True}


# ---------------------------------------------------------------------------
# A kill after the VCS commit: the commit stands
# ---------------------------------------------------------------------------

def test_kill_after_vcs_commit_leaves_the_commit(scene):
    ds, codes = scene.ds, scene.codes
    head0 = ds.head()
    commits0 = dataset_commits(ds)
    tags0 = {k: tags(c) for k, c in codes.items()}
    base_listing = ds.manifest(FILE_KEY)["listing"]
    pins = scene.change_everything(1)
    fpin = files_pin(ds)

    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:vcs-committed"})

    # The VCS commit landed, naming every pin, and every pin exists.
    head1 = ds.head()
    assert ds.git("rev-parse", "HEAD~1").strip() == head0
    assert dataset_commits(ds) == [head1] + commits0
    assert ds.git("log", "-1", "--format=%s").strip() == "x"
    for key in CODE_KEYS:
        assert ds.manifest_at("HEAD", key)["pin"] == pins[key]
    assert ds.manifest_at("HEAD", FILE_KEY)["pin"] == fpin
    for key, code in codes.items():
        assert tags(code) == tags0[key] | {f"tether.{pins[key]}"}
    # Its entry stays INCOMPLETE: the process died before closing it.
    entry = ops(ds)[-1]
    assert (entry["status"], entry["commit"], entry["message"]) == ("INCOMPLETE", None, "x")
    assert [p["pin"] for p in entry["pins"]] == [pins[k] for k in CODE_KEYS]
    # No pin is unreferenced; only the listing of the directory's previous
    # state, which no working manifest names any more, is.
    g = ds.tj("gc")
    assert (g["release"], g["listings"], g["errors"]) == ([], [base_listing], [])

    # The re-run has nothing to commit, and closes the dead run's entry: its
    # commit is HEAD.
    r = ds.tj("commit", "-m", "x")
    assert r["commit"] is None
    closed = {e["id"]: e for e in ops(ds)}[entry["id"]]
    assert (closed["status"], closed["finished_by"]) == ("COMPLETE", head1)
    assert [o["action"] for o in r["objects"]] == ["unchanged"] * 4
    assert ds.head() == head1
    assert ds.tether("commit", "-m", "x").stdout == "nothing to commit: every object is unchanged\n"

    v = ds.tj("verify")
    assert v["ok"] is True
    assert ds.tj("verify", "--all-history")["ok"] is True
    ds.tj("gc", "--no-dry-run")
    for key, code in codes.items():
        assert tags(code) == {f"tether.{p}" for p in history_pins(ds, key)} == tags0[key] | {
            f"tether.{pins[key]}"}

    scene.change_everything(2)
    ds.tj("commit", "-m", "next")
    assert_clean_and_exact(ds, codes)


def test_rerun_after_vcs_commit_kill_closes_the_entry(scene):
    ds = scene.ds
    scene.change_everything(1)
    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:vcs-committed"})
    assert ds.tj("commit", "-m", "x")["commit"] is None
    assert incomplete(ds) == []


def test_pins_of_a_dropped_commit_are_released_after_vcs_commit_kill(scene):
    ds, codes = scene.ds, scene.codes
    tags0 = {k: tags(c) for k, c in codes.items()}
    pins = scene.change_everything(1)
    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:vcs-committed"})
    assert ds.tj("commit", "-m", "x")["commit"] is None
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.git("reflog", "expire", "--expire=now", "--all")
    g = ds.tj("gc", "--no-dry-run")
    assert sorted(x["pin"] for x in g["release"]) == sorted(pins.values())
    for key, code in codes.items():
        assert tags(code) == tags0[key]


# ---------------------------------------------------------------------------
# A failure that is not a kill rolls back
# ---------------------------------------------------------------------------

def test_vcs_commit_refused_during_merge_rolls_back(scene):
    ds, codes = scene.ds, scene.codes
    # A conflicted merge in the dataset repository, on a file of its own.
    ds.write("README", "base\n")
    ds.git_commit_all("readme", "README")
    ds.git("checkout", "-q", "-b", "other")
    ds.write("README", "other\n")
    ds.git_commit_all("other", "README")
    ds.git("checkout", "-q", "main")
    ds.write("README", "main\n")
    head0 = ds.git_commit_all("main", "README")
    ds.git("merge", "other", check=False)  # CONFLICT (content): Merge conflict in README
    assert ds.p(".git/MERGE_HEAD").exists()
    assert ds.git("status", "--porcelain", "--", "README") == "UU README\n"

    tags0 = {k: tags(c) for k, c in codes.items()}
    manifests0 = manifest_bytes(ds)
    listings0 = listing_files(ds)
    ops0 = ops(ds)
    pins = scene.change_everything(1)

    p = ds.tether("commit", "-m", "x", check_rc=3)
    assert (p.stdout, p.stderr) == ("", MERGE_REFUSAL)

    # Rolled back: no new tag, manifests byte-identical, the new listing gone.
    assert {k: tags(c) for k, c in codes.items()} == tags0
    assert manifest_bytes(ds) == manifests0
    assert listing_files(ds) == listings0
    assert ds.head() == head0
    assert ds.p(".git/MERGE_HEAD").exists()  # the user's merge is left alone
    after = ops(ds)
    assert after[:len(ops0)] == ops0 and len(after) == len(ops0) + 1
    entry = after[-1]
    assert {k: v for k, v in entry.items() if k not in ("id", "started")} == {
        "op": "commit", "status": "ABORTED", "message": "x", "commit": None, "head_before": ds.head(),
        "pins": [journal_pin(codes[k], k, pins[k]) for k in CODE_KEYS],
    }
    assert incomplete(ds) == []
    g = ds.tj("gc")
    assert (g["release"], g["listings"], g["errors"]) == ([], [], [])

    # Once the merge is aborted the same commit goes through.
    ds.git("merge", "--abort")
    r = ds.tj("commit", "-m", "x")
    assert r["commit"] == ds.head() and ds.git("rev-parse", "HEAD~1").strip() == head0
    for key, code in codes.items():
        assert ds.manifest_at("HEAD", key)["pin"] == pins[key]
        assert tags(code) == tags0[key] | {f"tether.{pins[key]}"}
    assert_clean_and_exact(ds, codes)


def test_empty_message_writes_nothing(scene):
    ds, codes = scene.ds, scene.codes
    head0 = ds.head()
    tags0 = {k: tags(c) for k, c in codes.items()}
    manifests0 = manifest_bytes(ds)
    ops0 = ops(ds)
    scene.change_everything(1)
    p = ds.tether("commit", "-m", "", check_rc=2)
    assert (p.stdout, p.stderr) == (
        "", "tether: error: empty commit message for 'commit'\nhint: see 'tether commit --help'\n")
    assert {k: tags(c) for k, c in codes.items()} == tags0
    assert manifest_bytes(ds) == manifests0
    assert ops(ds) == ops0
    assert ds.head() == head0


# ---------------------------------------------------------------------------
# gc from another checkout of the same repository
# ---------------------------------------------------------------------------

def test_gc_in_another_checkout_keeps_pins_of_a_killed_commit(scene):
    ds, codes = scene.ds, scene.codes
    wt = ds.root.parent / "wt"
    ds.git("worktree", "add", "-q", wt, "-b", "side")
    pins = scene.change_everything(1)
    ds.tether("commit", "-m", "x", check_rc=-9, env={"TETHER_FAULT": "commit:object-recorded"})
    assert f"tether.{pins['code-a']}" in tags(codes["code-a"])

    g = ds.tj("gc", cwd=wt)
    assert (g["release"], g["listings"], g["errors"]) == ([], [], [])
    ds.tj("gc", "--no-dry-run", cwd=wt)
    assert f"tether.{pins['code-a']}" in tags(codes["code-a"])
    ds.tj("commit", "-m", "x")
    assert ds.tj("verify")["ok"] is True


# ---------------------------------------------------------------------------
# The journal's layout: open entries on top, closed ones under closed/
# ---------------------------------------------------------------------------

def journal_dir(ds):
    return ds.p(f".git/tether/journal/{ds.dataset_id()}")


def entry_files(d):
    return sorted(p.name for p in d.glob("*.json"))


def test_closed_entries_leave_the_top_of_the_journal(scene):
    """gc reads only the entries at the top of the journal, so closed ones
    live under closed/; `ops` lists both, and a commit tidies what an
    earlier tether (which closed entries in place) or a close that died
    half-way left at the top."""
    ds, codes = scene.ds, scene.codes
    top = journal_dir(ds)
    scene.change_everything(1)
    ds.tether("commit", "-m", "second")
    assert entry_files(top) == []
    names = entry_files(top / "closed")
    assert len(names) == 2
    listed = ops(ds)
    assert [e["id"] + ".json" for e in listed] == names and {e["status"] for e in listed} == {"COMPLETE"}

    # An entry an earlier tether closed in place: listed once, moved by the
    # next commit, even one that commits nothing.
    (top / "closed" / names[0]).rename(top / names[0])
    assert ops(ds) == listed
    assert ds.tj("gc")["errors"] == []
    ds.tether("commit", "-m", "nothing")
    assert entry_files(top) == [] and entry_files(top / "closed") == names
    assert ops(ds) == listed

    # A close that died between writing closed/ and removing the open copy:
    # the closed copy counts, and the stale open one goes at the next commit.
    stale = (top / "closed" / names[1]).read_text().replace('"COMPLETE"', '"INCOMPLETE"')
    (top / names[1]).write_text(stale)
    assert ops(ds) == listed
    ds.tether("commit", "-m", "nothing")
    assert entry_files(top) == [] and ops(ds) == listed
    assert_clean_and_exact(ds, codes)


# ---------------------------------------------------------------------------
# Kills inside `new` and `gc`
# ---------------------------------------------------------------------------

def ws_branches(code, ds):
    return set(code.git("branch", "--list", f"tether.ws.{ds.dataset_id()[:8]}.*",
                        "--format=%(refname:short)").split())


@pytest.mark.parametrize("step", ["switched", "forked"])
def test_kill_inside_new_then_rerun(scene, step):
    ds, codes = scene.ds, scene.codes
    scene.change_everything(1)
    ds.tether("commit", "-m", "x")
    ds.tether("new", "-b", "feature", check_rc=-9, env={"TETHER_FAULT": f"new:{step}"})
    # The checkout moved before the kill; the re-run forks what is missing
    # without refusing the branches the dead run already made.
    assert ds.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    r = ds.tj("new", "feature")
    assert [o["action"] for o in r["objects"] if o["key"] in CODE_KEYS] == ["forked"] * 3
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feature"
    for key, code in codes.items():
        assert branch in ws_branches(code, ds)
        assert code.git("rev-parse", branch).strip() == code.git("rev-parse", f"tether.{ds.manifest(key)['pin']}").strip()
    assert_clean_and_exact(ds, codes)


def test_kill_inside_gc_then_rerun(scene):
    ds, codes = scene.ds, scene.codes
    scene.change_everything(1)
    ds.tether("commit", "-m", "one")
    scene.change_everything(2)
    ds.tether("commit", "-m", "two")
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.git("reflog", "expire", "--expire=now", "--all")
    planned = sorted(x["pin"] for x in ds.tj("gc")["release"])
    assert len(planned) == 3
    ds.tether("gc", "--no-dry-run", check_rc=-9, env={"TETHER_FAULT": "gc:released"})
    # One pin went before the kill; the re-run releases exactly the rest.
    rest = sorted(x["pin"] for x in ds.tj("gc", "--no-dry-run")["release"])
    assert len(rest) == 2 and set(rest) < set(planned)
    assert ds.tj("gc")["release"] == []
    # (The directory object now differs from the reset manifest: only the
    # code repositories' pins are checked here.)
    assert ds.tj("verify", "--all-history")["ok"] is True
    for key, code in codes.items():
        assert tags(code) == {f"tether.{p}" for p in history_pins(ds, key)}


# ---------------------------------------------------------------------------
# A rollback takes back only what its run made; a commit that landed stands
# ---------------------------------------------------------------------------

def back_to_a_pin_of_history(scene):
    """code-a moves on and is committed (B), then goes back to the state
    the base commit pinned: the next commit re-uses that existing pin.
    Returns that pin."""
    ds, codes = scene.ds, scene.codes
    base_pin = ds.manifest("code-a")["pin"]
    code_advance(codes["code-a"], "code-a v1\n")
    ds.tether("commit", "-m", "B")
    codes["code-a"].git("reset", "-q", "--hard", "HEAD~1")
    assert git_pin(ds, codes["code-a"], codes["code-a"].head()) == base_pin
    return base_pin


@pytest.mark.parametrize("failure", ["dirty-object", "branch-lock"])
def test_failed_commit_keeps_a_pin_an_earlier_commit_made(scene, failure):
    """Issue 9, item 1: the rollback released every pin its run asked for,
    the re-used one of commit A included, and verify --all-history failed."""
    ds, codes = scene.ds, scene.codes
    base_pin = back_to_a_pin_of_history(scene)
    new_b = git_pin(ds, codes["code-b"], code_advance(codes["code-b"], "code-b v1\n"))
    head0, tags0 = ds.head(), {k: tags(c) for k, c in codes.items()}
    if failure == "dirty-object":
        codes["code-b"].write("main.py", "uncommitted\n")
        p = ds.tether("commit", "-m", "C", check_rc=3)
        assert "uncommitted changes" in p.stderr
    else:
        lock = ds.p(".git/refs/heads/main.lock")
        lock.write_text("")
        # git's own lock file held: a failed VCS operation (exit 1), not a
        # lock timeout (exit 4, tether's locks only).
        p = ds.tether("commit", "-m", "C", check_rc=1)
        assert "main.lock" in p.stderr
    assert ds.head() == head0
    assert f"tether.{base_pin}" in tags(codes["code-a"])
    assert f"tether.{new_b}" not in tags(codes["code-b"])  # what this run made is gone
    assert {k: tags(c) for k, c in codes.items()} == tags0
    assert incomplete(ds) == []
    assert ds.tj("verify", "--all-history")["ok"] is True
    # Cleared up, the same commit goes through and nothing is lost or leaked.
    if failure == "dirty-object":
        codes["code-b"].git("checkout", "-q", "--", "main.py")
    else:
        lock.unlink()
    r = ds.tj("commit", "-m", "C")
    assert r["commit"] == ds.head()
    assert ds.manifest_at("HEAD", "code-a")["pin"] == base_pin
    assert_clean_and_exact(ds, codes)


def test_commit_that_landed_stands_when_the_index_is_locked(scene):
    """Issue 9, item 2: the VCS commit was made, then the index could not be
    updated; the commit's pins were deleted, its manifests put back and the
    journal marked ABORTED (exit 4). Now the commit stands, exit 1."""
    ds, codes = scene.ds, scene.codes
    base_pin = back_to_a_pin_of_history(scene)
    new_b = git_pin(ds, codes["code-b"], code_advance(codes["code-b"], "code-b v1\n"))
    head0 = ds.head()
    ds.p(".git/index.lock").write_text("")
    p = ds.tether("commit", "-m", "C", check_rc=1)
    m = re.search(r"committed ([0-9a-f]{40}), but the index could not be updated", p.stderr)
    assert m, p.stderr
    sha = m.group(1)
    assert ds.head() == sha and ds.git("rev-parse", "HEAD~1").strip() == head0
    # Nothing the commit names was released or put back.
    assert ds.manifest_at("HEAD", "code-a")["pin"] == base_pin
    assert ds.manifest_at("HEAD", "code-b")["pin"] == new_b
    assert f"tether.{base_pin}" in tags(codes["code-a"])
    assert f"tether.{new_b}" in tags(codes["code-b"])
    assert manifest_bytes(ds) == {
        f"{k}.toml": ds.git("show", f"HEAD:.tether/objects/{k}.toml").encode() for k in KEYS
    }
    entry = ops(ds)[-1]
    assert (entry["status"], entry["commit"]) == ("COMPLETE", sha)
    assert ds.tj("verify", "--all-history")["ok"] is True
    # With the lock gone, a re-run makes no commit and brings the index up.
    ds.p(".git/index.lock").unlink()
    r = ds.tj("commit", "-m", "again")
    assert r["commit"] is None and ds.head() == sha
    assert ds.git("status", "--porcelain", "--", ".tether") == ""
    assert_clean_and_exact(ds, codes)


# ---------------------------------------------------------------------------
# Random kills: SIGKILL at any instant of a commit, then a re-run
# ---------------------------------------------------------------------------

# `make check` runs a few; `make stress` runs TETHER_STRESS_KILLS of them
# (TETHER_STRESS_SEED repeats a run: the seed is in every failure message).
STRESS_KILLS = int(os.environ.get("TETHER_STRESS_KILLS") or "16")


def clear_stale_git_locks(*repos):
    """A git write killed mid-way leaves its lock file (index.lock,
    refs/.../main.lock), and git says to remove it by hand once no git
    process runs: here only the killed tether was writing. tether.lock is
    tether's own fcntl lock file, which a dead process does not hold."""
    for r in repos:
        for lock in (r.root / ".git").rglob("*.lock"):
            if lock.name != "tether.lock":
                lock.unlink()


def temporaries_on_disk(ds):
    found = []
    for d in ("objects", "listings"):
        base = ds.p(f".tether/{d}")
        if base.exists():
            found += [p.relative_to(ds.root).as_posix() for p in base.rglob("*") if ".tmp." in p.name]
    return found


def test_random_kills_during_commit(scene):
    """Issue 9: after SIGKILLs at random instants of `tether commit`, the
    re-run finishes, no temporary file is on disk, in `git status` or in a
    commit, and at the end verify --all-history and gc agree: every pin
    history names is held, and gc leaves exactly those."""
    ds, codes = scene.ds, scene.codes
    seed = int(os.environ.get("TETHER_STRESS_SEED") or random.randrange(2 ** 32))
    rng = random.Random(seed)
    scene.change_everything(1)
    t0 = time.monotonic()
    ds.tether("commit", "-m", "timed")
    took = time.monotonic() - t0
    kills = 0
    for i in range(STRESS_KILLS):
        where = f"seed {seed}, kill {i}"
        key = rng.choice(CODE_KEYS)
        code_advance(codes[key], f"{key} kill {i}\n")
        ds.write("data/files/run.csv", f"run,kill {i}\n")
        proc = subprocess.Popen([TETHER_BIN, "commit", "-m", f"kill {i}"], cwd=ds.root, env=ds.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0, took))
        proc.kill()
        _, err = proc.communicate()
        assert not any(m in err for m in SANITIZER_MARKERS), f"{where}: {err}"
        assert proc.returncode in (0, -9), f"{where}: exit {proc.returncode}: {err}"
        kills += proc.returncode == -9
        clear_stale_git_locks(ds, *codes.values())
        p = ds.tether("commit", "-m", f"rerun {i}", check_rc=None)
        assert p.returncode == 0, f"{where}: the re-run failed: {p.stderr}"
        assert temporaries_on_disk(ds) == [], where
        status = ds.git("status", "--porcelain", "--untracked-files=all")
        assert ".tmp." not in status, f"{where}: {status}"
        assert ".tmp." not in ds.git("ls-tree", "-r", "--name-only", "HEAD"), where
        assert incomplete(ds) == [], where
    assert kills >= STRESS_KILLS // 2, f"seed {seed}: only {kills} of {STRESS_KILLS} runs were killed"
    assert not [c for c in ds.git("rev-list", "--all").split()
                if ".tmp." in ds.git("ls-tree", "-r", "--name-only", c)], f"seed {seed}"
    assert_clean_and_exact(ds, codes)


@pytest.mark.parametrize("field, value, says", [
    ("key", "../../../tmp/EVIL", "pins[0]"),
    ("pin", "../../tether.toml", "is not a pin id"),
    ("locator", "HEAD", "must have a string kind and pin and a locator table"),
])
def test_a_malformed_journal_entry_stops_gc_and_ops_naming_it(scene, field, value, says):
    """gc keeps the pins an open entry names and visits the stores any entry
    names: an entry tether did not write (a key that is a path, a pin id
    that is not one, no locator table) is refused by name, never acted on."""
    ds, codes = scene.ds, scene.codes
    d = journal_dir(ds)
    d.mkdir(parents=True, exist_ok=True)
    pin = journal_pin(codes["code-a"], "code-a", ds.manifest("code-a")["pin"])
    pin[field] = value
    bad = d / "0000000000000000001-1.json"
    bad.write_text(json.dumps({"op": "commit", "status": "INCOMPLETE", "started": "2026-01-01T00:00:00Z",
                               "message": "m", "pins": [pin], "commit": None}))
    tags_before = {k: tags(c) for k, c in codes.items()}
    for args in (("gc",), ("gc", "--no-dry-run"), ("ops",)):
        p = ds.tether(*args, check_rc=1)
        assert str(bad) in p.stderr and says in p.stderr, p.stderr
        assert p.stderr.startswith("tether: error: "), p.stderr
    assert {k: tags(c) for k, c in codes.items()} == tags_before
    # A commit still lands: the entry is gc's and ops's to report.
    code_advance(codes["code-b"], "code-b v1\n")
    ds.tether("commit", "-m", "after")
    bad.unlink()
    ds.tether("gc", "--no-dry-run")
