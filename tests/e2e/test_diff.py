"""tether diff: objects added, removed and changed between revisions, and
with --content the exact per-file changes from the stored listings."""
import hashlib
import json
import os

import pytest

from conftest import expected_dir_state


def by_key(report):
    return {o["key"]: o for o in report["objects"]}


def sizes(ds, rel):
    base = ds.p(rel)
    return {p.relative_to(base).as_posix(): p.stat().st_size for p in base.rglob("*") if p.is_file()}


@pytest.fixture
def thirty(ds):
    """A mutable directory of 30 files, committed, then changed: 3 removed,
    4 added, 5 modified (each by a different number of bytes), committed
    again. Returns (ds, expected entries sorted by path, before, after)."""
    for i in range(30):
        ds.write(f"data/many/f{i:02d}.txt", "x" * (10 + i))
    ds.tether("add", "many", "data/many", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "thirty files")
    before = sizes(ds, "data/many")
    for i in (3, 11, 27):
        os.remove(ds.p(f"data/many/f{i:02d}.txt"))
    for name, n in (("new/a.bin", 100), ("f00a.txt", 1), ("zz.txt", 2048), ("f15.txt.bak", 7)):
        ds.write(f"data/many/{name}", b"y" * n)
    for i, n in ((0, 5), (7, 17), (14, 24), (20, 100), (29, 39)):
        ds.write(f"data/many/f{i:02d}.txt", "z" * n)  # f29 keeps its size, other bytes
    after = sizes(ds, "data/many")
    entries = []
    for path in sorted(set(before) | set(after), key=lambda s: s.encode()):
        if path not in after:
            entries.append({"path": path, "change": "removed", "size": before[path], "size_delta": -before[path]})
        elif path not in before:
            entries.append({"path": path, "change": "added", "size": after[path], "size_delta": after[path]})
        elif path in ("f00.txt", "f07.txt", "f14.txt", "f20.txt", "f29.txt"):
            entries.append({"path": path, "change": "modified", "size": after[path],
                            "size_delta": after[path] - before[path]})
    assert len(entries) == 12
    return ds, entries, before, after


def test_content_diff_between_commits(thirty):
    ds, entries, before, after = thirty
    ds.tether("commit", "-m", "changed")
    r = ds.tj("diff", "HEAD~1", "HEAD", "--content")
    assert r["from"] == {"rev": "HEAD~1", "id": ds.git("rev-parse", "HEAD~1").strip()}
    assert r["to"] == {"rev": "HEAD", "id": ds.head()}
    assert len(r["objects"]) == 1
    o = r["objects"][0]
    assert o["key"] == "many"
    assert o["kind"] == "file"
    assert o["change"] == "changed"
    assert o["from_pin"] == ds.manifest_at("HEAD~1", "many")["pin"]
    assert o["to_pin"] == ds.manifest_at("HEAD", "many")["pin"]
    c = o["content"]
    assert c["unit"] == "files"
    assert c["entries"] == entries
    assert c["totals"] == {"added": 4, "removed": 3, "modified": 5,
                           "size_delta": sum(after.values()) - sum(before.values())}
    assert c["truncated"] is False


def test_content_diff_text(thirty):
    ds, entries, before, after = thirty
    ds.tether("commit", "-m", "changed")
    p = ds.tether("diff", "HEAD~1", "HEAD", "--content")
    lines = p.stdout.splitlines()
    a, b = ds.manifest_at("HEAD~1", "many")["pin"], ds.manifest_at("HEAD", "many")["pin"]
    assert lines[0] == f"~ many  {a} -> {b}"
    assert "    removed f03.txt (-13 B)" in lines
    assert "    added zz.txt (+2.0 KiB)" in lines
    assert "    modified f00.txt -5 B" in lines
    assert "    modified f20.txt +70 B" in lines
    assert "    modified f29.txt +0 B" in lines
    delta = sum(after.values()) - sum(before.values())
    assert lines[-1] == f"    4 added, 3 removed, 5 modified, +{delta / 1024:.1f} KiB"
    assert len(lines) == 1 + 12 + 1
    # without --content: one line per object, nothing else
    assert ds.tether("diff", "HEAD~1", "HEAD").stdout == f"~ many  {a} -> {b}\n"


def test_max_entries_caps_the_list_not_the_totals(thirty):
    ds, entries, before, after = thirty
    ds.tether("commit", "-m", "changed")
    full = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    capped = ds.tj("diff", "HEAD~1", "HEAD", "--content", "--max-entries", "5")["objects"][0]["content"]
    assert capped["entries"] == entries[:5]
    assert capped["truncated"] is True
    assert capped["totals"] == full["totals"]
    p = ds.tether("diff", "HEAD~1", "HEAD", "--content", "--max-entries=5")
    lines = p.stdout.splitlines()
    assert "    … 7 more" in lines
    assert len(lines) == 1 + 5 + 1 + 1
    exact = ds.tj("diff", "HEAD~1", "HEAD", "--content", "--max-entries", "12")["objects"][0]["content"]
    assert exact["entries"] == entries
    assert exact["truncated"] is False
    one = ds.tj("diff", "HEAD~1", "HEAD", "--content", "--max-entries", "1")["objects"][0]["content"]
    assert one["entries"] == entries[:1]
    assert one["truncated"] is True


def test_cap_with_thirty_added_files(ds):
    ds.p("data/d").mkdir(parents=True)
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "empty")
    for i in range(30):
        ds.write(f"data/d/{i:02d}", b"q" * i)
    ds.tether("commit", "-m", "thirty")
    c = ds.tj("diff", "HEAD~1", "HEAD", "--content", "--max-entries", "5")["objects"][0]["content"]
    assert [e["path"] for e in c["entries"]] == ["00", "01", "02", "03", "04"]
    assert c["totals"] == {"added": 30, "removed": 0, "modified": 0, "size_delta": sum(range(30))}
    assert c["truncated"] is True


def test_working_copy_diff_shows_what_commit_records(thirty):
    ds, entries, before, after = thirty
    r = ds.tj("diff", "--content")  # HEAD vs the working copy
    assert r["from"] == {"rev": "HEAD", "id": ds.head()}
    assert r["to"] == {"rev": "@", "id": None}
    o = r["objects"][0]
    assert o["content"]["entries"] == entries
    assert o["from_pin"] == ds.manifest("many")["pin"]
    r2 = ds.tj("diff", "HEAD", "@", "--content")
    assert r2 == r
    committed = ds.tj("commit", "-m", "as diff said")
    assert committed["objects"][0]["pin"] == o["to_pin"]
    assert ds.manifest("many")["state"] == expected_dir_state(ds.p("data/many"))
    # committed: the two sides agree, and text output is empty
    assert ds.tj("diff")["objects"] == []
    assert ds.tether("diff").stdout == ""


def test_objects_added_and_removed(ds):
    for name in ("a", "b"):
        ds.write(f"data/{name}", name)
        ds.tether("add", name, f"data/{name}", "--kind", "file")
    ds.tether("commit", "-m", "a and b")
    pin_b = ds.manifest("b")["pin"]
    os.remove(ds.manifest_path("b"))
    ds.write("data/c", "c")
    ds.tether("add", "c", "data/c", "--kind", "file")
    ds.tether("commit", "-m", "c, not b")
    pin_c = ds.manifest("c")["pin"]
    r = ds.tj("diff", "HEAD~1", "HEAD", "--content")
    assert r["objects"] == [
        {"key": "b", "kind": "file", "change": "removed", "from_pin": pin_b, "to_pin": None, "content": None},
        {"key": "c", "kind": "file", "change": "added", "from_pin": None, "to_pin": pin_c, "content": None},
    ]
    assert ds.tether("diff", "HEAD~1", "HEAD").stdout == f"- b  {pin_b}\n+ c  {pin_c}\n"
    # and backwards
    r = ds.tj("diff", "HEAD", "HEAD~1")
    assert [(o["key"], o["change"]) for o in r["objects"]] == [("b", "added"), ("c", "removed")]


def test_single_file_content_diff(ds):
    ds.write("data/s.csv", "a\n")
    ds.tether("add", "s", "data/s.csv", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "one")
    ds.write("data/s.csv", "a\nb\nc\n")
    ds.tether("commit", "-m", "two")
    c = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert c["entries"] == [{"path": "s.csv", "change": "modified", "size": 6, "size_delta": 4}]
    assert c["totals"] == {"added": 0, "removed": 0, "modified": 1, "size_delta": 4}


def test_revisions_by_name_and_id(thirty):
    ds, entries, _, _ = thirty
    first = ds.head()
    ds.tether("commit", "-m", "changed")
    by_id = ds.tj("diff", first, "main", "--content")
    assert by_id["from"]["id"] == first
    assert by_id["to"]["id"] == ds.head()
    assert by_id["objects"][0]["content"]["entries"] == entries
    assert ds.tj("diff", "HEAD", "HEAD")["objects"] == []


def test_unknown_revision(plates):
    ds = plates
    ds.tether("commit", "-m", "baseline")
    for args in (["nope"], ["HEAD", "nope"], ["HEAD~5"]):
        p = ds.tether("diff", *args, check_rc=1)
        assert f"'{args[-1]}'" in p.stderr
        assert p.stdout == ""
    p = ds.tether("diff", "nope", "--json", check_rc=1)
    assert "unknown revision 'nope'" in p.stderr
    assert p.stdout == ""


def lose_listing_in_a_later_commit(ds):
    """Two tether commits of a directory, then a plain git commit that drops
    the second one's listing from the tree (as a commit made before listings
    existed would lack it)."""
    ds.write("data/d/a", "1\n")
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "c1")
    ds.write("data/d/b", "2\n")
    ds.tether("commit", "-m", "c2")
    listing = ds.manifest("d")["listing"]
    ds.git("rm", "-q", f".tether/listings/{listing}.jsonl")
    ds.git("commit", "-q", "-m", "drop a listing")


def test_diff_with_a_missing_listing_falls_back_to_a_summary(ds):
    lose_listing_in_a_later_commit(ds)
    # the tree of HEAD~1 still has both listings: exact
    exact = ds.tj("diff", "HEAD~2", "HEAD~1", "--content")["objects"][0]["content"]
    assert exact["entries"] == [{"path": "b", "change": "added", "size": 2, "size_delta": 2}]
    # HEAD's tree lacks the listing: no entries, a count and size summary
    c = ds.tj("diff", "HEAD~2", "HEAD", "--content")["objects"][0]["content"]
    assert c["entries"] == []
    assert "1 → 2 files" in c["summary"]
    assert "no stored listing" in c["summary"]


def test_missing_listing_fallback_does_not_claim_zero_changes(ds):
    lose_listing_in_a_later_commit(ds)
    c = ds.tj("diff", "HEAD~2", "HEAD", "--content")["objects"][0]["content"]
    assert c["totals"] is None
    text = ds.tether("diff", "HEAD~2", "HEAD", "--content").stdout
    assert "0 added, 0 removed, 0 modified" not in text
    assert "no stored listing" in text


def test_sizes_are_binary_with_one_decimal(ds):
    ds.p("data/s").mkdir(parents=True)
    ds.tether("add", "s", "data/s", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "empty")
    ds.write("data/s/a", b"a" * 1023)
    ds.write("data/s/b", b"b" * 1024)
    ds.write("data/s/c", b"c" * (1536 * 1024))
    ds.tether("commit", "-m", "three")
    lines = ds.tether("diff", "HEAD~1", "HEAD", "--content").stdout.splitlines()
    assert lines[1:] == [
        "    added a (+1023 B)",
        "    added b (+1.0 KiB)",
        "    added c (+1.5 MiB)",
        "    3 added, 0 removed, 0 modified, +1.5 MiB",
    ]
    lines = ds.tether("diff", "HEAD", "HEAD~1", "--content").stdout.splitlines()
    assert lines[1:] == [
        "    removed a (-1023 B)",
        "    removed b (-1.0 KiB)",
        "    removed c (-1.5 MiB)",
        "    0 added, 3 removed, 0 modified, -1.5 MiB",
    ]


def test_an_unreachable_store_does_not_hide_the_other_objects(plates, new_repo):
    from test_status import plates_and_gone_code
    ds = plates_and_gone_code(plates, new_repo)
    p = ds.tether("diff", "--json", check_rc=1)
    r = json.loads(p.stdout)
    objs = by_key(r)
    assert r["errors"] == 1
    assert objs["code"]["change"] == "error" and "code" in objs["code"]["error"]
    assert objs["raw/plates"]["change"] == "changed" and "error" not in objs["raw/plates"]
    assert "raw/samples" not in objs
    assert "1 object could not be compared" in p.stderr
    p = ds.tether("diff", "--content", check_rc=1)
    assert "! code" in p.stdout and "(error: " in p.stdout
    assert "~ raw/plates" in p.stdout and "added plate3.csv" in p.stdout
    # Between two commits no store is contacted: nothing fails.
    assert ds.tj("diff", "HEAD", "HEAD")["errors"] == 0


def two_commits_of_d(ds):
    """Two commits of a directory object d of three files (a, b, c, then b
    changed)."""
    for name in "abc":
        ds.write(f"data/d/{name}", f"{name}\n")
    ds.tether("add", "d", "data/d", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "c1")
    ds.write("data/d/b", "changed\n")
    ds.tether("commit", "-m", "c2")


def commit_doctored_listing(ds, doctor):
    """two_commits_of_d, then a plain git commit whose listing for the
    second is doctor(lines), stored under its own digest and named by the
    manifest, as a hostile clone could: the digest checks pass, the lines
    are what is tested."""
    two_commits_of_d(ds)
    old = ds.manifest("d")["listing"]
    lines = ds.listing_path(old).read_bytes().splitlines(keepends=True)
    text = b"".join(doctor(lines))
    new = hashlib.sha256(text).hexdigest()
    ds.listing_path(new).write_bytes(text)
    m = ds.manifest_path("d")
    m.write_text(m.read_text().replace(old, new))
    ds.git("add", "-A", ".tether")
    ds.git("commit", "-q", "-m", "doctored listing")


@pytest.mark.parametrize("doctor, line, what", [
    (lambda ls: [ls[0], ls[0]] + ls[1:], 2, "out of order or repeated"),  # a listed twice
    (lambda ls: [ls[1], ls[0], ls[2]], 2, "out of order or repeated"),  # b before a
    (lambda ls: ls[:2] + [b'{"k":"x","p":"c","s":-1}\n'], 3, "is malformed"),
])
def test_a_listing_out_of_order_repeated_or_malformed_is_refused(ds, doctor, line, what):
    """The merge of two listings relies on their order: a path listed twice
    or out of order would make it report changes that are not there."""
    commit_doctored_listing(ds, doctor)
    p = ds.tether("diff", "HEAD~2", "HEAD", "--content", check_rc=1)
    assert f"listing of the 'to' side, line {line}" in p.stderr and what in p.stderr, p.stderr
    # The object is reported as an error, with no entries made up from the
    # listing, and nothing else said about its content.
    assert p.stdout.startswith("~ d  ") and "(error: d: listing of the 'to' side" in p.stdout, p.stdout
    assert len(p.stdout.splitlines()) == 1, p.stdout
    p = ds.tether("diff", "HEAD", "HEAD~2", "--content", check_rc=1)
    assert f"listing of the 'from' side, line {line}" in p.stderr and what in p.stderr, p.stderr


def test_a_listing_bigger_than_the_read_ahead_diffs_exactly(ds):
    """Listings of commits are read in pieces (256 KiB chunks, a thread
    each) and merged as they come: a listing of several chunks, with lines
    cut at every chunk boundary, diffs as the files say."""
    names = [f"d{i // 100:02d}/file-with-a-long-name-{i:05d}.txt" for i in range(6000)]
    for n in names:
        ds.write(f"data/big/{n}", n)
    ds.tether("add", "big", "data/big", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "6000 files")
    assert ds.listing_path(ds.manifest("big")["listing"]).stat().st_size > 3 * 256 * 1024 / 2
    changed = names[::997]
    for n in changed:
        ds.write(f"data/big/{n}", n + " changed")
    os.remove(ds.p(f"data/big/{names[1]}"))
    ds.write("data/big/d59/zz-last.txt", "new")
    ds.tether("commit", "-m", "some changed")
    c = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    want = sorted([{"path": n, "change": "modified", "size": len(n) + 8, "size_delta": 8} for n in changed]
                  + [{"path": names[1], "change": "removed", "size": len(names[1]), "size_delta": -len(names[1])},
                     {"path": "d59/zz-last.txt", "change": "added", "size": 3, "size_delta": 3}],
                  key=lambda e: e["path"].encode())
    assert c["entries"] == want
    assert c["totals"] == {"added": 1, "removed": 1, "modified": len(changed), "size_delta": 8 * len(changed) - len(names[1]) + 3}


def test_a_committed_listing_that_does_not_match_its_name_is_an_error(ds):
    """A listing is named by the SHA-256 of its bytes: one whose bytes were
    changed (by hand, or by whoever prepared the clone) is refused, naming
    it, whether read in pieces (two commits) or whole (a commit and the
    working copy); the diff reports the object as an error, not as if its
    files had changed."""
    def doctor(lines):
        lines[0] = lines[0].replace(b'"s":2', b'"s":3')
        return lines
    two_commits_of_d(ds)
    listing = ds.manifest("d")["listing"]
    path = ds.listing_path(listing)
    path.write_bytes(b"".join(doctor(path.read_bytes().splitlines(keepends=True))))
    ds.git("add", "-A", ".tether")
    ds.git("commit", "-q", "-m", "listing changed under its name")
    for a, b in (("HEAD~2", "HEAD"), ("HEAD", "HEAD~2")):
        p = ds.tether("diff", a, b, "--content", check_rc=1)
        assert f"{listing}.jsonl: listing is corrupt" in p.stderr, p.stderr
        assert "(error: d: " in p.stdout and len(p.stdout.splitlines()) == 1, p.stdout
    # against the working copy, whose listing is the live one: the commit's
    # listing is read whole, and refused the same way
    ds.write("data/d/c", "changed too\n")
    p = ds.tether("diff", "HEAD", "--content", check_rc=1)
    assert f"{listing}.jsonl: listing is corrupt" in p.stderr, p.stderr
