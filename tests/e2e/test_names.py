"""File names in listings (scan.h, docs/ARCHITECTURE.md "Data model"):
every valid UTF-8 name is spelled exactly as it always was (jansson's
compact JSON), so listings, digests and pin ids of valid names never
change; a byte that is not part of valid UTF-8 is the lone surrogate
\\uDCXX, so "x\\xff" never spells the same JSON string as a real "xÿ" (as
"x\\u00FF" did), and every reader maps it back to the real bytes."""
import json
import os

from conftest import expected_dir_state, expected_listing, expected_pin, sha256_bytes

VALID_NAMES = [
    "x\u00ff",            # xÿ, the name "x\xff" used to collide with
    "\U0001f600.txt",     # an emoji (4 bytes of UTF-8)
    "e\u0301",            # e + COMBINING ACUTE ACCENT (decomposed é)
    "\u00e9",             # é precomposed: another name than the one above
    "\u65e5\u672c/\u00fcn\u00ef.csv",
    "tab\there",
    "ctl\x1fx",           # a control character jansson writes as \u001F
]


def old_listing_line(path, token, size):
    """A listing line as tether wrote every valid name before invalid ones
    got their own spelling: json.dumps, compact, sorted keys, UTF-8 as it
    is (with jansson's upper-case hex for control characters)."""
    line = json.dumps({"k": token, "p": path, "s": size}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return line.replace("\\u001f", "\\u001F")


def test_valid_non_ascii_names_keep_their_listing_bytes_and_digest(ds):
    entries = []
    for i, name in enumerate(VALID_NAMES):
        data = f"content {i}\n".encode()
        ds.write(f"data/names/{name}", data)
        entries.append((name, sha256_bytes(data), len(data)))
    entries.sort(key=lambda e: e[0].encode())
    listing = "".join(old_listing_line(p, k, s) + "\n" for p, k, s in entries).encode()
    ds.tether("add", "names", "data/names", "--kind", "file")
    ds.tether("commit", "-m", "names")
    m = ds.manifest("names")
    assert ds.listing_path(m["listing"]).read_bytes() == listing
    state = {"type": "dir", "count": len(entries), "size": sum(s for _, _, s in entries),
             "digest": sha256_bytes(listing)}
    assert m["state"] == state
    assert m["pin"] == expected_pin(ds.dataset_id(), "file", {"uri": str(ds.p("data/names"))}, state)


def names_dir(ds):
    return os.fsencode(ds.p("data/names"))


def test_an_invalid_name_and_its_lookalike_are_distinct(ds):
    d = names_dir(ds)
    os.makedirs(d)
    invalid = os.path.join(d, b"x\xff")
    valid = os.path.join(d, "x\u00ff".encode())
    with open(invalid, "wb") as f:
        f.write(b"hello")
    ds.tether("add", "names", "data/names", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "invalid")
    m = ds.manifest("names")
    listing = ds.listing_path(m["listing"]).read_bytes()
    assert listing == (b'{"k":"' + sha256_bytes(b"hello").encode() + b'","p":"x\\uDCFF","s":5}\n')
    assert listing == expected_listing(ds.p("data/names"))
    assert m["state"] == expected_dir_state(ds.p("data/names"))

    # The rename to the real "xÿ": a change, and diff --content says which.
    os.rename(invalid, valid)
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "modified", st
    assert st["current"]["digest"] != m["state"]["digest"]
    want = [
        {"change": "added", "path": "x\u00ff", "size": 5, "size_delta": 5},
        {"change": "removed", "path": "x\\xFF", "path_bytes": "78ff", "size": 5, "size_delta": -5},
    ]
    content = ds.tj("diff", "--content")["objects"][0]["content"]
    assert content["entries"] == want
    assert content["totals"] == {"added": 1, "removed": 1, "modified": 0, "size_delta": 0}
    text = ds.tether("diff", "--content").stdout
    assert "    added x\u00ff (+5 B)\n" in text and "    removed x\\xFF (-5 B)\n" in text, text

    # Committed, the same diff from the two stored listings.
    ds.tether("commit", "-m", "renamed")
    content = ds.tj("diff", "HEAD~1", "HEAD", "--content")["objects"][0]["content"]
    assert content["entries"] == want

    # Both at once: two files, two lines, each read back as itself.
    with open(invalid, "wb") as f:
        f.write(b"other")
    st = ds.tj("status")["objects"][0]
    assert st["status"] == "modified" and st["current"]["count"] == 2, st
    content = ds.tj("diff", "--content")["objects"][0]["content"]
    assert content["entries"] == [
        {"change": "added", "path": "x\\xFF", "path_bytes": "78ff", "size": 5, "size_delta": 5}]
    ds.tether("commit", "-m", "both")
    assert ds.manifest("names")["state"] == expected_dir_state(ds.p("data/names"))
    # Changing the invalid one's bytes is a modification of that file only.
    with open(invalid, "wb") as f:
        f.write(b"changed")
    content = ds.tj("diff", "--content")["objects"][0]["content"]
    assert content["entries"] == [
        {"change": "modified", "path": "x\\xFF", "path_bytes": "78ff", "size": 7, "size_delta": 2}]


def test_a_symlink_target_that_is_not_utf8_is_spelled_apart(ds):
    d = names_dir(ds)
    os.makedirs(d)
    os.symlink(b"gone-\xff", os.path.join(d, b"a"))
    os.symlink("gone-\u00ff".encode(), os.path.join(d, b"b"))
    ds.tether("add", "names", "data/names", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "links")
    m = ds.manifest("names")
    listing = ds.listing_path(m["listing"]).read_bytes()
    assert listing == (b'{"k":"symlink:gone-\\uDCFF","p":"a","s":0}\n'
                       b'{"k":"symlink:gone-\xc3\xbf","p":"b","s":0}\n')
    assert listing == expected_listing(ds.p("data/names"))
    # Swapping the two targets is seen as two modified entries.
    os.unlink(os.path.join(d, b"a"))
    os.unlink(os.path.join(d, b"b"))
    os.symlink("gone-\u00ff".encode(), os.path.join(d, b"a"))
    os.symlink(b"gone-\xff", os.path.join(d, b"b"))
    content = ds.tj("diff", "--content")["objects"][0]["content"]
    assert [(e["path"], e["change"]) for e in content["entries"]] == [("a", "modified"), ("b", "modified")]


def test_an_object_path_that_is_not_utf8_is_refused_by_add(ds):
    """A manifest is TOML (UTF-8): such a path cannot be recorded, and add
    says so (names inside a registered directory are fine, above)."""
    os.makedirs(os.fsencode(ds.p("data")) + b"/bad\xff")
    p = ds.tether("add", "k", b"data/bad\xff".decode("utf-8", "surrogateescape"), "--kind", "file",
                  check_rc=2)
    assert p.stderr == (f"tether: error: path '{ds.p('data')}/bad\\xFF' is not valid UTF-8: a manifest "
                        "cannot record it (register a directory above it, or rename it)\n"), p.stderr
    assert not ds.manifest_path("k").exists()
