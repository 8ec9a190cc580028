"""gc and verify --all-history: history walks over every ref."""

import json


def commit_twice(plates):
    plates.tether("commit", "-m", "baseline")
    first = plates.manifest("raw/plates")["listing"]
    plates.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    plates.tether("commit", "-m", "plate 3")
    second = plates.manifest("raw/plates")["listing"]
    assert first != second
    return first, second


def test_gc_dry_run_reports_orphaned_listing_and_changes_nothing(plates):
    first, second = commit_twice(plates)
    before = plates.tree()
    r = plates.tj("gc")
    assert r["dry_run"] is True
    assert r["listings"] == [first]
    assert r["release"] == []
    assert r["commits"] == 2
    assert plates.tree() == before
    assert "dry run" in plates.tether("gc").stdout


def test_gc_removes_orphaned_listing_and_old_diffs_still_work(plates):
    first, second = commit_twice(plates)
    r = plates.tj("gc", "--no-dry-run")
    assert r["dry_run"] is False and r["listings"] == [first]
    assert not plates.listing_path(first).exists()
    assert plates.listing_path(second).exists()
    assert plates.tj("gc")["listings"] == []
    # The listing is still in the commit that named it: diffs read it there.
    c = plates.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert c["totals"]["added"] == 1
    # The removal is committed with the next change, and verify stays clean.
    plates.write("data/plates/plate4.csv", "x\n")
    plates.tether("commit", "-m", "plate 4")
    assert f".tether/listings/{first}.jsonl" in plates.commit_files()
    plates.tether("verify")


def test_gc_counts_commits_on_every_ref(plates):
    plates.tether("commit", "-m", "baseline")
    plates.git("checkout", "-q", "-b", "side")
    plates.write("data/plates/side.csv", "s\n")
    plates.tether("commit", "-m", "on side")
    plates.git("checkout", "-q", "main")
    assert plates.tj("gc")["commits"] == 2


def test_verify_all_history_checks_each_distinct_state_once(plates):
    commit_twice(plates)
    r = plates.tj("verify", "--all-history")
    assert r["ok"] is True
    assert r["all_history"] is True and r["commits"] == 2
    # raw/plates: two states (observed, skipped), raw/samples: one state.
    keys = sorted(o["key"] for o in r["objects"])
    assert keys == ["raw/plates", "raw/plates", "raw/samples"]
    assert all("not recoverable" in (o["detail"] or "") for o in r["objects"])


def test_gc_refuses_a_tracked_secrets_file(plates):
    plates.tether("commit", "-m", "baseline")
    plates.write(".tether/secrets.toml", "")
    plates.git("add", "-f", ".tether/secrets.toml")
    p = plates.tether("gc", check_rc=3)
    assert "secrets.toml" in p.stderr


# ---------------------------------------------------------------------------
# Stores named by more than one locator, and stores only history names
# ---------------------------------------------------------------------------

def code_repo(new_repo, name="code"):
    """A git repository outside the dataset, with one commit."""
    code = new_repo(name)
    code.write("main.py", "1\n")
    code.git_commit_all("c1", "main.py")
    return code


def code_commit(code, text):
    code.write("main.py", text)
    return code.git_commit_all("next", "main.py")


def git_tags(repo, where=None):
    if where is None:
        return sorted(repo.git("tag", "-l", "tether.*").split())
    out = repo.git("ls-remote", "--tags", where)
    return sorted(line.split("\t")[1][len("refs/tags/"):] for line in out.splitlines() if line)


def forget_last_commit(ds):
    ds.git("reset", "-q", "--hard", "HEAD~1")
    ds.git("reflog", "expire", "--expire=now", "--all")


def two_keys_one_with_a_remote(ds, new_repo, tmp_path):
    """Keys a (no remote) and b (--remote origin, a bare repository) on one
    code repository, committed once: (code, origin)."""
    code = code_repo(new_repo)
    origin = tmp_path / "origin.git"
    code.git("init", "-q", "--bare", origin)
    code.git("remote", "add", "origin", origin)
    ds.tether("add", "a", code.root, "--kind", "git")
    ds.tether("add", "b", code.root, "--kind", "git", "--remote", "origin")
    ds.tether("commit", "-m", "one")
    return code, origin


def test_gc_releases_a_pin_on_every_remote_the_store_is_named_with(ds, new_repo, tmp_path):
    """Two keys on one repository, one of them with a remote: the pin they
    share is released on the remote too, not only locally."""
    code, origin = two_keys_one_with_a_remote(ds, new_repo, tmp_path)
    pin1 = ds.manifest("a")["pin"]
    code_commit(code, "2\n")
    ds.tether("commit", "-m", "two")
    pin2 = ds.manifest("a")["pin"]
    assert ds.manifest("b")["pin"] == pin2
    assert git_tags(code) == git_tags(code, "origin") == sorted([f"tether.{pin1}", f"tether.{pin2}"])

    forget_last_commit(ds)
    r = ds.tj("gc")
    # The locator with the remote is the first the pin is released with.
    assert [x["locators"] for x in r["release"]] == [[ds.manifest("b")["locator"], ds.manifest("a")["locator"]]]
    r = ds.tj("gc", "--no-dry-run")
    assert r["errors"] == [] and [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    assert git_tags(code) == [f"tether.{pin1}"]
    assert git_tags(code, "origin") == [f"tether.{pin1}"]
    assert ds.tj("gc")["release"] == []


def test_gc_releases_a_pin_on_each_of_several_remotes(ds, new_repo, tmp_path):
    """Keys on one repository pushing to two remotes, two of them to the
    same one: each remote loses the tag, and releasing it twice on one
    remote is no error."""
    code = code_repo(new_repo)
    for name in ("origin", "mirror"):
        code.git("init", "-q", "--bare", tmp_path / f"{name}.git")
        code.git("remote", "add", name, tmp_path / f"{name}.git")
    ds.tether("add", "a", code.root, "--kind", "git", "--remote", "origin")
    ds.tether("add", "b", code.root, "--kind", "git", "--remote", "origin", "--option", "allow_dirty=true")
    ds.tether("add", "c", code.root, "--kind", "git", "--remote", "mirror")
    ds.tether("commit", "-m", "one")
    pin1 = ds.manifest("a")["pin"]
    code_commit(code, "2\n")
    ds.tether("commit", "-m", "two")
    pin2 = ds.manifest("a")["pin"]
    assert git_tags(code, "mirror") == git_tags(code, "origin") == sorted([f"tether.{pin1}", f"tether.{pin2}"])

    forget_last_commit(ds)
    r = ds.tj("gc", "--no-dry-run")
    assert r["errors"] == [] and [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    assert (git_tags(code), git_tags(code, "origin"), git_tags(code, "mirror")) == ([f"tether.{pin1}"],) * 3


def test_gc_keeps_the_local_tag_when_the_remote_release_fails(ds, new_repo, tmp_path):
    """Remote first: when the remote cannot be reached the local tag stays,
    so the next gc finds the pin again and finishes on the remote."""
    code, origin = two_keys_one_with_a_remote(ds, new_repo, tmp_path)
    code_commit(code, "2\n")
    ds.tether("commit", "-m", "two")
    pin2 = ds.manifest("a")["pin"]
    forget_last_commit(ds)

    moved = tmp_path / "moved.git"
    origin.rename(moved)
    p = ds.tether("gc", "--no-dry-run", check_rc=1)
    assert pin2 in p.stderr and "origin" in p.stderr
    assert f"tether.{pin2}" in git_tags(code)  # the local tag is kept for the retry
    moved.rename(origin)
    r = ds.tj("gc", "--no-dry-run")
    assert [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    assert f"tether.{pin2}" not in git_tags(code)
    assert f"tether.{pin2}" not in git_tags(code, "origin")


def test_gc_releases_pins_in_a_store_only_a_deleted_branch_named(ds, new_repo):
    """A store only the commits of a deleted branch named is still visited:
    the journal names it, so its pins are released."""
    main_code = code_repo(new_repo, "main-code")
    ds.tether("add", "main", main_code.root, "--kind", "git")
    ds.tether("commit", "-m", "main")
    ds.git("checkout", "-q", "-b", "exp")
    exp_code = code_repo(new_repo, "exp-code")
    ds.tether("add", "exp", exp_code.root, "--kind", "git")
    ds.tether("commit", "-m", "exp")
    exp_pin = ds.manifest("exp")["pin"]
    assert git_tags(exp_code) == [f"tether.{exp_pin}"]
    ds.git("checkout", "-q", "main")
    ds.git("branch", "-q", "-D", "exp")
    ds.git("reflog", "expire", "--expire=now", "--all")

    r = ds.tj("gc")
    assert r["stores"] == 2
    assert [x["pin"] for x in r["release"]] == [exp_pin]
    r = ds.tj("gc", "--no-dry-run")
    assert r["errors"] == [] and [x["done"] for x in r["release"]] == [True]
    assert git_tags(exp_code) == []
    assert git_tags(main_code) == [f"tether.{ds.manifest('main')['pin']}"]


def journal_top(ds):
    """The journal directory of ds (in .git/, beside the walk's cache)."""
    tops = list((ds.root / ".git" / "tether" / "journal").iterdir())
    assert len(tops) == 1
    return tops[0]


def exp_branch_gone(ds, new_repo, name):
    """A commit on a branch that is then deleted: only its (closed) journal
    entry names the store it pinned in. Returns (code repository, pin)."""
    ds.git("checkout", "-q", "-b", name)
    code = code_repo(new_repo, f"{name}-code")
    ds.tether("add", name, code.root, "--kind", "git")
    ds.tether("commit", "-m", name)
    pin = ds.manifest(name)["pin"]
    ds.git("checkout", "-q", "main")
    ds.git("branch", "-q", "-D", name)
    ds.git("reflog", "expire", "--expire=now", "--all")
    return code, pin


def test_gc_journal_index_is_a_cache_of_the_closed_entries(ds, new_repo):
    """gc reads the closed entries' stores from closed.index, a summary it
    keeps beside them: an entry closed since is read and added, a damaged
    index is rebuilt, and one that covers an entry no longer there is not
    believed."""
    main_code = code_repo(new_repo, "main-code")
    ds.tether("add", "main", main_code.root, "--kind", "git")
    ds.tether("commit", "-m", "main")
    assert ds.tj("gc")["stores"] == 1
    top = journal_top(ds)
    index = top / "closed.index"
    first = json.loads(index.read_text())
    assert first["format"] == 1 and len(first["entries"]) == 1
    assert [p["locator"]["path"] for p in first["pins"]] == [str(main_code.root)]

    # An entry closed after the index was written: read, and then covered.
    exp_code, exp_pin = exp_branch_gone(ds, new_repo, "exp")
    r = ds.tj("gc")
    assert r["stores"] == 2 and [x["pin"] for x in r["release"]] == [exp_pin]
    second = json.loads(index.read_text())
    assert len(second["entries"]) == 2 and len(second["pins"]) == 2
    assert sorted(second["entries"]) == second["entries"]

    # Damaged (torn, or not tether's): rebuilt from the entries, no error.
    for bad in ("{\"format\": 1, \"entries\": [", "[]",
                json.dumps({"format": 1, "entries": second["entries"],
                            "pins": [{"kind": "git", "locator": {"path": "/x"}, "pin": "../../x"}]})):
        index.write_text(bad)
        r = ds.tj("gc")
        assert r["stores"] == 2 and [x["pin"] for x in r["release"]] == [exp_pin]
        assert json.loads(index.read_text()) == second

    # An index that covers an entry that is gone is not believed: the
    # store only that entry named is no longer visited.
    gone = top / "closed" / second["entries"][1]
    assert "exp" in gone.read_text()
    gone.unlink()
    assert ds.tj("gc")["stores"] == 1
    assert json.loads(index.read_text())["entries"] == second["entries"][:1]
