"""tether commit: one git commit of the dataset's paths only, the states and
listings it records, and everything it refuses without writing a byte."""
import fcntl
import os
import re

import pytest

from conftest import (
    AUTHOR_EMAIL,
    AUTHOR_NAME,
    HEX64,
    expected_dir_state,
    expected_file_state,
    expected_listing,
    expected_pin,
    sha256_bytes,
)


def actions(report):
    return {o["key"]: o for o in report["objects"]}


def user_changes(repo):
    """A repository with history and a user mid-way through their own work:
    a staged modification, a staged new file, an unstaged modification on top
    of a staged one, a deletion, and untracked files."""
    repo.write("README.md", "hello\n")
    repo.write("src/main.py", "print(1)\n")
    repo.write("src/old.py", "old\n")
    repo.git_commit_all("project start", "README.md", "src")
    repo.write("README.md", "hello\nstaged line\n")
    repo.write("src/new.py", "new\n")
    repo.git("add", "README.md", "src/new.py")
    repo.write("README.md", "hello\nstaged line\nunstaged line\n")
    repo.write("src/main.py", "print(2)\n")  # unstaged only
    repo.git("rm", "-q", "--cached", "src/old.py")  # staged deletion
    repo.write("notes.txt", "untracked\n")


def without_dataset(porcelain):
    return [l for l in porcelain.splitlines() if "tether" not in l]


def test_commit_makes_one_commit_of_dataset_paths_only(plates):
    ds = plates
    user_changes(ds)
    head_before = ds.head()
    count_before = ds.commit_count()
    cached, unstaged, status = ds.git_state()

    r = ds.tj("commit", "-m", "Baseline plates")
    head = ds.head()
    assert r["commit"] == head
    assert r["message"] == "Baseline plates"
    assert ds.commit_count() == count_before + 1
    assert ds.git("rev-parse", "HEAD~1").strip() == head_before
    listing = ds.manifest("raw/plates")["listing"]
    assert ds.commit_files() == sorted([
        ".tether/.gitignore",
        f".tether/listings/{listing}.jsonl",
        ".tether/objects/raw/plates.toml",
        ".tether/objects/raw/samples.toml",
        "tether.toml",
    ])
    assert ds.git("log", "-1", "--format=%an <%ae>%n%B").strip() == f"{AUTHOR_NAME} <{AUTHOR_EMAIL}>\nBaseline plates"

    # the user's own work is exactly as it was
    cached2, unstaged2, status2 = ds.git_state()
    assert cached2 == cached
    assert unstaged2 == unstaged
    assert without_dataset(status2) == without_dataset(status)
    # and git sees the dataset's files as committed: nothing left to add
    assert ds.git("status", "--porcelain", "--untracked-files=all", "--", "tether.toml", ".tether") == ""
    # the committed manifests are the ones on disk
    for key in ("raw/plates", "raw/samples"):
        assert ds.git("show", f"HEAD:.tether/objects/{key}.toml") == ds.manifest_path(key).read_text()


def test_commit_text_output(plates):
    ds = plates
    p = ds.tether("commit", "-m", "Baseline\n\nwith a body")
    head = ds.head()
    pins = {k: ds.manifest(k)["pin"] for k in ("raw/plates", "raw/samples")}
    assert p.stdout.splitlines() == [
        f"[{head[:7]}] Baseline",
        f"  recorded  raw/plates pin {pins['raw/plates']} (not recoverable)",
        f"  recorded  raw/samples pin {pins['raw/samples']} (not recoverable)",
    ]
    assert "warning: raw/plates: state recorded, not recoverable" in p.stderr
    assert ds.git("log", "-1", "--format=%B").rstrip("\n") == "Baseline\n\nwith a body"


def test_message_option_spellings(plates):
    ds = plates
    ds.tether("commit", "-mfirst")
    assert ds.git("log", "-1", "--format=%s").strip() == "first"
    ds.write("data/plates/x", "x")
    ds.tether("commit", "--message=second")
    assert ds.git("log", "-1", "--format=%s").strip() == "second"
    ds.write("data/plates/y", "y")
    ds.tether("commit", "--message", "third")
    assert ds.git("log", "-1", "--format=%s").strip() == "third"


def test_listing_file_and_directory_state(ds):
    files = {
        "B": b"upper",
        "a.b": b"dot",
        "a/b": b"slash",  # "a.b" < "a/b" in byte order
        "a/z/deep.bin": bytes(range(256)) * 3,
        "sp ace.txt": b"space",
        'qu"ote\\back': b"escapes",
        "h\u00e9llo.txt": b"utf-8 name",
        "empty": b"",
        "new\nline": b"newline in the name",
        "tab\there": b"tab in the name",
    }
    for rel, data in files.items():
        ds.write(f"data/d/{rel}", data)
    os.symlink("B", ds.p("data/d/link-to-file"))
    os.symlink("a", ds.p("data/d/link-to-dir"))
    os.symlink("nowhere", ds.p("data/d/dangling"))
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    r = ds.tj("commit", "-m", "dir")

    m = ds.manifest("d")
    state = expected_dir_state(ds.p("data/d"))
    assert m["state"] == state
    assert state["count"] == len(files) + 3
    assert state["size"] == sum(len(v) for v in files.values()) + len(b"upper")
    assert HEX64.match(m["listing"])
    listing_bytes = expected_listing(ds.p("data/d"))
    assert m["listing"] == sha256_bytes(listing_bytes) == state["digest"]
    stored = ds.listing_path(m["listing"]).read_bytes()
    assert stored == listing_bytes
    assert sha256_bytes(stored) == m["listing"]  # content-addressed
    lines = stored.decode().splitlines()
    assert lines[0] == '{"k":"%s","p":"B","s":5}' % sha256_bytes(b"upper")
    assert [l.split('"p":')[1].split(",")[0] for l in lines[:3]] == ['"B"', '"a.b"', '"a/b"']
    assert '{"k":"symlink:a","p":"link-to-dir","s":0}' in lines
    assert '{"k":"symlink:nowhere","p":"dangling","s":0}' in lines
    assert m["recoverable"] is False
    assert m["pin"] == actions(r)["d"]["pin"] == expected_pin(
        ds.dataset_id(), "file", {"uri": str(ds.p("data/d"))}, state)
    assert os.listdir(ds.p(".tether/listings")) == [m["listing"] + ".jsonl"]


def test_empty_directory(ds):
    ds.p("data/empty").mkdir(parents=True)
    ds.tether("add", "e", "data/empty", "--kind", "file")
    ds.tether("commit", "-m", "empty")
    m = ds.manifest("e")
    assert m["state"] == {"type": "dir", "count": 0, "size": 0, "digest": sha256_bytes(b"")}
    assert ds.listing_path(m["listing"]).read_bytes() == b""


def test_single_file_state(ds):
    data = b"sample,plate\n" + bytes(range(256))
    ds.write("data/s.bin", data)
    ds.tether("add", "s", "data/s.bin", "--kind", "file")
    r = ds.tj("commit", "-m", "file")
    m = ds.manifest("s")
    assert m["state"] == {"type": "file", "size": len(data), "sha256": sha256_bytes(data)}
    assert "listing" not in m
    assert m["recoverable"] is False
    pin = expected_pin(ds.dataset_id(), "file", {"uri": str(ds.p("data/s.bin"))}, m["state"])
    assert m["pin"] == pin
    assert actions(r)["s"] == {"key": "s", "action": "recorded", "pin": pin, "recoverable": False}
    assert r["warnings"] == ["s: state recorded, not recoverable (kind file is observed)"]
    assert not ds.p(".tether/listings").exists() or os.listdir(ds.p(".tether/listings")) == []


def test_nothing_changed_makes_no_commit(plates):
    ds = plates
    first = ds.tj("commit", "-m", "baseline")
    head = ds.head()
    tree = ds.tree()
    p = ds.tether("commit", "-m", "again")
    assert p.stdout == "nothing to commit: every object is unchanged\n"
    r = ds.tj("commit", "-m", "and again")
    assert r["commit"] is None
    assert r["warnings"] == []
    assert {k: (o["action"], o["pin"]) for k, o in actions(r).items()} == {
        k: ("unchanged", o["pin"]) for k, o in actions(first).items()}
    assert ds.head() == head
    assert ds.commit_count() == 1
    assert ds.tree() == tree


def test_one_changed_one_unchanged(plates):
    ds = plates
    ds.tj("commit", "-m", "baseline")
    samples_pin = ds.manifest("raw/samples")["pin"]
    samples_text = ds.manifest_path("raw/samples").read_bytes()
    old_plates = ds.manifest("raw/plates")
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    r = ds.tj("commit", "-m", "plate 3")
    a = actions(r)
    assert a["raw/samples"]["action"] == "unchanged"
    assert a["raw/samples"]["pin"] == samples_pin
    assert a["raw/plates"]["action"] == "recorded"
    assert a["raw/plates"]["pin"] != old_plates["pin"]
    assert ds.manifest("raw/plates")["state"] == expected_dir_state(ds.p("data/plates"))
    assert ds.manifest_path("raw/samples").read_bytes() == samples_text
    new_listing = ds.manifest("raw/plates")["listing"]
    assert ds.commit_files() == sorted([f".tether/listings/{new_listing}.jsonl", ".tether/objects/raw/plates.toml"])
    # the old listing stays: HEAD~1 still names it
    assert ds.listing_path(old_plates["listing"]).is_file()


def test_identical_states_dedupe(ds):
    ds.write("data/a/x", "same")
    ds.write("data/b/x", "same")
    ds.tether("add", "one", "data/a", "--kind", "file")
    ds.tether("add", "two", "data/a/", "--kind", "file")  # same store
    ds.tether("add", "three", "data/b", "--kind", "file")  # same content, other store
    a = actions(ds.tj("commit", "-m", "dedupe"))
    assert a["one"]["pin"] == a["two"]["pin"]
    assert a["three"]["pin"] != a["one"]["pin"]
    # same content: one listing file serves both stores
    assert ds.manifest("one")["listing"] == ds.manifest("three")["listing"]
    assert len(os.listdir(ds.p(".tether/listings"))) == 1


def test_strict_refuses_observed_and_writes_nothing(plates):
    ds = plates
    user_changes(ds)
    head = ds.head()
    tree = ds.tree()
    git_state = ds.git_state()
    p = ds.tether("commit", "-m", "strict", "--strict", check_rc=3)
    assert "--strict" in p.stderr
    assert "raw/plates" in p.stderr
    assert p.stdout == ""
    assert ds.head() == head
    assert ds.tree() == tree
    assert ds.git_state() == git_state
    p = ds.tether("commit", "-m", "strict", "--strict", "--json", check_rc=3)
    assert p.stdout == ""


def test_drift_refuses_commit_and_writes_nothing(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    head = ds.head()
    ds.write("data/plates/plate9.csv", "new")  # a legitimate change ...
    ds.write("data/samples.csv", "tampered")  # ... and drift
    tree = ds.tree()
    p = ds.tether("commit", "-m", "should not land", check_rc=3)
    assert "raw/samples" in p.stderr
    assert "immutable data changed" in p.stderr
    assert ds.head() == head
    assert ds.tree() == tree  # raw/plates not recorded either, no listing written
    assert ds.git("status", "--porcelain", "--", ".tether", "tether.toml") == ""


def test_missing_or_empty_message(plates):
    ds = plates
    tree = ds.tree()
    p = ds.tether("commit", check_rc=2)
    assert "-m" in p.stderr
    p = ds.tether("commit", "-m", "", check_rc=2)
    assert "empty" in p.stderr
    p = ds.tether("commit", "-m", check_rc=2)
    assert "needs a value" in p.stderr
    assert ds.head() is None
    assert ds.tree() == tree


def test_whitespace_message_is_refused_after_recording_and_undone(plates):
    """Only git finds a blank message empty, after the states were recorded:
    the manifests are put back and the new listing is taken away."""
    ds = plates
    tree = ds.tree()
    p = ds.tether("commit", "-m", "  \n\t\n", check_rc=2)
    assert "message is empty" in p.stderr
    assert ds.head() is None
    assert ds.tree() == tree
    assert ds.tj("status")["objects"][0]["status"] == "never-recorded"


def test_message_starting_with_hash_is_kept(plates):
    plates.tether("commit", "-m", "#42: fix plate\n\n# not a comment")
    assert plates.git("log", "-1", "--format=%B").rstrip("\n") == "#42: fix plate\n\n# not a comment"


def test_workspace_files_are_never_committed(plates):
    ds = plates
    ds.write(".tether/workspace.toml", "workspace_id = \"w1\"\n")
    ds.write(".tether/journal/0001", "j")
    ds.write(".tether/secrets.toml", "[objects]\n")
    ds.tether("commit", "-m", "baseline")
    assert ds.p(".tether/cache").is_dir()  # the hash cache exists ...
    committed = ds.git("ls-tree", "-r", "--name-only", "HEAD").splitlines()
    for path in committed:  # ... and none of the per-checkout files is committed
        assert path == "tether.toml" or path.startswith((".tether/objects/", ".tether/listings/")) \
            or path == ".tether/.gitignore", path


def test_dataset_in_a_subdirectory(repo):
    repo.write("top.txt", "top\n")
    repo.git_commit_all("top", "top.txt")
    repo.write("top.txt", "top\nstaged\n")
    repo.git("add", "top.txt")
    repo.p("ds").mkdir()
    repo.tether("init", cwd=repo.p("ds"))
    repo.write("ds/data/f", "f")
    repo.tether("add", "f", "data/f", "--kind", "file", cwd=repo.p("ds"))
    repo.write("ds/data/dir/one", "1")
    repo.tether("add", "dir", "data/dir", "--kind", "file", "--file", "mutable", cwd=repo.p("ds"))
    cached = repo.git("diff", "--cached")
    c1 = repo.tj("commit", "-m", "sub", cwd=repo.p("ds"))["commit"]
    listing = repo.manifest("dir", "ds")["listing"]
    assert repo.commit_files() == ["ds/.tether/.gitignore", f"ds/.tether/listings/{listing}.jsonl",
                                   "ds/.tether/objects/dir.toml", "ds/.tether/objects/f.toml", "ds/tether.toml"]
    assert repo.git("diff", "--cached") == cached
    # and from the repository's root, -C finds it
    st = repo.tj("-C", "ds", "status")
    assert [o["status"] for o in st["objects"]] == ["clean", "clean"]
    # history and content diffs read the subdirectory's paths in the commits
    repo.write("ds/data/dir/two", "22")
    c2 = repo.tj("commit", "-m", "two", cwd=repo.p("ds"))["commit"]
    assert [c["id"] for c in repo.tj("-C", "ds", "log")["commits"]] == [c2, c1]
    content = repo.tj("-C", "ds", "diff", c1, c2, "--content")["objects"][0]["content"]
    assert content["entries"] == [{"path": "two", "change": "added", "size": 2, "size_delta": 2}]
    assert repo.tj("-C", "ds", "verify")["ok"] is True


def test_removed_object_is_committed_as_a_removal(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    os.remove(ds.manifest_path("raw/samples"))
    r = ds.tj("commit", "-m", "drop samples")
    assert r["commit"] == ds.head()
    assert ds.commit_files() == [".tether/objects/raw/samples.toml"]
    assert "raw/samples.toml" not in ds.git("ls-tree", "-r", "--name-only", "HEAD")
    assert ds.tj("status")["clean"] is True


def test_lock_held_times_out_with_exit_4(plates):
    ds = plates
    lock = ds.p(".tether/lock")
    tree = ds.tree()
    with open(lock, "a+") as f:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = ds.tether("commit", "-m", "locked", check_rc=4, env={"TETHER_LOCK_TIMEOUT_MS": "150"})
    assert "lock" in p.stderr
    assert ds.head() is None
    assert ds.tree() == tree


def test_refused_vcs_commit_leaves_nothing_behind(plates):
    """A commit git refuses (a merge in progress) after the states were
    recorded: the manifests are put back and no new file is left in .tether."""
    ds = plates
    ds.tether("commit", "-m", "baseline")
    head = ds.head()
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    (ds.root / ".git" / "MERGE_HEAD").write_text(head + "\n")
    tree = ds.tree()
    p = ds.tether("commit", "-m", "mid-merge", check_rc=3)
    assert "merge" in p.stderr
    assert ds.head() == head
    assert ds.tree() == tree
    assert ds.git("status", "--porcelain", "--untracked-files=all", "--", ".tether") == ""


def test_tracked_secrets_refuse_commit(plates):
    ds = plates
    ds.write(".tether/secrets.toml", "[objects]\n")
    ds.git("add", "-f", ".tether/secrets.toml")
    p = ds.tether("commit", "-m", "leak", check_rc=3)
    assert "secrets.toml" in p.stderr
    assert ds.head() is None


def test_states_recorded_match_hashlib_after_second_commit(plates):
    ds = plates
    ds.tether("commit", "-m", "one")
    ds.write("data/plates/plate1.csv", "well,value\nA1,0.5\nA2,0.7\nA3,0.9\n")
    ds.tether("commit", "-m", "two")
    assert ds.manifest("raw/plates")["state"] == expected_dir_state(ds.p("data/plates"))
    assert ds.manifest("raw/samples")["state"] == expected_file_state(ds.p("data/samples.csv"))
    for key in ("raw/plates", "raw/samples"):
        pin = ds.manifest(key)["pin"]
        assert re.fullmatch(r"[0-9a-f]{8}\.[0-9a-f]{16}", pin)
        assert pin.startswith(ds.dataset_id()[:8] + ".")


def test_user_ignore_rules_do_not_hide_manifests_or_listings(repo):
    """A repository that ignores its data directories ("raw/", "data/") and
    "*.jsonl": the patterns also match .tether/objects/raw/ and the
    listings, which must be committed all the same."""
    repo.write(".gitignore", "raw/\ndata/\n*.jsonl\n")
    repo.git_commit_all("ignore data", ".gitignore")
    repo.tether("init")
    repo.write("raw/a.csv", "a\n")
    repo.write("data/x/b.csv", "b\n")
    repo.tether("add", "raw/a", "raw/a.csv", "--kind", "file")
    repo.tether("add", "data/x", "data/x", "--kind", "file")
    repo.tether("commit", "-m", "ignored names")
    listing = repo.manifest("data/x")["listing"]
    assert repo.commit_files() == sorted([
        ".tether/.gitignore",
        f".tether/listings/{listing}.jsonl",
        ".tether/objects/data/x.toml",
        ".tether/objects/raw/a.toml",
        "tether.toml",
    ])
    assert repo.git("status", "--porcelain", "--", ".tether", "tether.toml") == ""
    assert [o["key"] for o in repo.tj("log")["commits"][0]["objects"]] == ["data/x", "raw/a"]


def test_a_manifest_git_leaves_out_is_reported_not_hidden(repo):
    """When the repository's ignore rules keep a manifest out of the commit
    (here '.*' ignores .tether/ as a whole), commit says so in a warning and
    status does not pretend the manifest is in HEAD."""
    repo.write(".gitignore", ".*\n!.gitignore\n")
    repo.git_commit_all("ignore dot files", ".gitignore")
    repo.tether("init")
    repo.write("f.csv", "f\n")
    repo.tether("add", "f", "f.csv", "--kind", "file")
    r = repo.tj("commit", "-m", "c")
    if "f" in [o["key"] for c in repo.tj("log")["commits"] for o in c["objects"]]:
        return  # committed after all (the VCS fix has landed): nothing to report
    assert f"f: its manifest is not in commit {r['commit'][:7]}: the repository ignores " \
           ".tether/objects/f.toml" in r["warnings"]
    st = repo.tj("status")
    assert st["objects"][0]["manifest"] == "added"
    assert st["clean"] is False


@pytest.mark.parametrize("pattern", ["*.toml", ".*"])
def test_ignored_tether_paths_are_still_committed(repo, pattern):
    repo.write(".gitignore", f"{pattern}\n!.gitignore\n")
    repo.git_commit_all("ignore", ".gitignore")
    repo.tether("init")
    repo.write("f.csv", "f\n")
    repo.tether("add", "f", "f.csv", "--kind", "file")
    repo.tether("commit", "-m", "c")
    assert repo.commit_files() == [".tether/.gitignore", ".tether/objects/f.toml", "tether.toml"]


def test_large_and_many_files_hash_like_hashlib(ds):
    big = bytes(range(256)) * (3 * 4096 + 7)  # 3 MiB and a bit, not a block multiple
    ds.write("data/big/blob.bin", big)
    for i in range(200):
        ds.write(f"data/big/small/{i:03d}.txt", f"line {i}\n" * i)
    ds.tether("add", "big", "data/big", "--kind", "file", "--file", "mutable")
    ds.tether("add", "blob", "data/big/blob.bin", "--kind", "file")
    ds.tether("commit", "-m", "big")
    assert ds.manifest("blob")["state"] == expected_file_state(ds.p("data/big/blob.bin"))
    assert ds.manifest("big")["state"] == expected_dir_state(ds.p("data/big"))
    assert ds.listing_path(ds.manifest("big")["listing"]).read_bytes() == expected_listing(ds.p("data/big"))


def test_unchanged_manifest_keeps_its_bytes(plates):
    """Issue 9, item 9: a comment a user put in a manifest (committed or not)
    was dropped by a commit that reported the object unchanged."""
    ds = plates
    ds.tether("commit", "-m", "baseline")
    path = ds.manifest_path("raw/samples")
    path.write_bytes(b"# the sample sheet, as sequenced\n" + path.read_bytes())
    ds.git_commit_all("a comment", str(path.relative_to(ds.root)))
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    commented = path.read_bytes()
    r = ds.tj("commit", "-m", "plate3")
    assert actions(r)["raw/samples"]["action"] == "unchanged"
    assert actions(r)["raw/plates"]["action"] == "recorded"
    assert path.read_bytes() == commented
    # A comment not committed yet: still unchanged, and committed as written.
    path.write_bytes(b"# second thoughts\n" + commented)
    ds.write("data/plates/plate4.csv", "well,value\nD1,0.4\n")
    r = ds.tj("commit", "-m", "plate4")
    assert actions(r)["raw/samples"]["action"] == "unchanged"
    assert path.read_bytes() == b"# second thoughts\n" + commented
    assert ds.git("show", "HEAD:.tether/objects/raw/samples.toml").encode() == path.read_bytes()
    assert ds.tj("status")["clean"] is True


def test_failed_commit_leaves_unchanged_manifests_byte_for_byte(plates):
    """The rollback put back every manifest in tether's canonical form,
    dropping the comment of one it never touched."""
    ds = plates
    ds.tether("commit", "-m", "baseline")
    path = ds.manifest_path("raw/samples")
    path.write_bytes(b"# keep me\n" + path.read_bytes())
    ds.git_commit_all("a comment", str(path.relative_to(ds.root)))
    head = ds.head()
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    (ds.root / ".git" / "MERGE_HEAD").write_text(head + "\n")
    tree = ds.tree()
    ds.tether("commit", "-m", "mid-merge", check_rc=3)
    assert ds.tree() == tree


def test_temporary_files_are_never_committed(plates):
    """Issue 9, item 7: a temporary a killed process left (f.toml.tmp.<pid>)
    was swept into the next commit. It is never staged, and a stale one is
    removed; one whose process is alive is left where it is."""
    ds = plates
    ds.tether("commit", "-m", "baseline")
    dead = 2 ** 22 + 12345  # above any pid_max: no such process
    stale = [ds.write(f".tether/objects/raw/samples.toml.tmp.{dead}", "junk\n"),
             ds.write(f".tether/listings/{'0' * 64}.jsonl.tmp.{dead}", "junk\n")]
    live = ds.write(f".tether/objects/raw/plates.toml.tmp.{os.getpid()}", "being written\n")
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    r = ds.tj("commit", "-m", "plate3")
    assert r["commit"] == ds.head()
    committed = ds.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert not [p for p in committed if ".tmp." in p], committed
    assert not any(p.exists() for p in stale)
    assert live.read_bytes() == b"being written\n"
    # The live one is not shown as something to commit either.
    assert ds.git("status", "--porcelain", "--untracked-files=all", "--", ".tether") == ""
    # Nothing else changed: no commit, and still nothing temporary in it.
    r = ds.tj("commit", "-m", "again")
    assert r["commit"] is None


def test_temporary_file_already_committed_is_removed_from_the_commit(plates):
    """A temporary an older tether committed goes out with the next commit,
    as if absent, even while its file is there (its pid is alive)."""
    ds = plates
    ds.tether("commit", "-m", "baseline")
    junk = ds.write(f".tether/objects/raw/samples.toml.tmp.{os.getpid()}", "junk\n")
    ds.git("add", "-f", str(junk.relative_to(ds.root)))
    ds.git("commit", "-q", "-m", "an old tether's leftover")
    ds.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    ds.tj("commit", "-m", "plate3")
    assert ".tmp." not in ds.git("ls-tree", "-r", "--name-only", "HEAD")
    assert junk.exists()
