"""Where store options come from: .tether/secrets.toml's [uris."<prefix>"]
tables (the longest prefix at or above a store's URI, a whole segment at a
time) and the object's own [objects."<key>"] on top; every key checked when
the file is read. The store that receives them is the memtest module built
for the tests (tests/store-module/memtest.c), which refuses a store opened
with profile "show-options" and names the options it was handed."""
import json
import pathlib
import re

import pytest

from conftest import TETHER_BIN

MODULES = str(pathlib.Path(TETHER_BIN).parent / "tests")


def options_at(ds, key, uri):
    """The options the store at uri was opened with when `add` of key
    opened it (an Icechunk object: add opens the repository)."""
    p = ds.tether("add", key, uri, "--kind", "icechunk", check_rc=1, env={"TETHER_MODULE_PATH": MODULES})
    m = re.search(r"refused, options (\{.*\})", p.stderr)
    assert m, p.stderr
    assert not ds.p(f".tether/objects/{key}.toml").exists()
    return json.loads(m.group(1))


SECRETS = '''
[uris."memtest://b"]
profile = "show-options"
region = "bucket-wide"
endpoint_url = "http://127.0.0.1:9"

[uris."memtest://b/pre"]
profile = "show-options"
region = "pre"
allow_http = true

[uris."memtest://b/pre/deeper"]
profile = "show-options"
region = "deeper"

[objects."mine"]
region = "own"
timeout = 7
'''


def test_the_longest_prefix_wins_a_segment_at_a_time_and_the_object_last(ds):
    ds.write(".tether/secrets.toml", SECRETS)
    bucket = {"profile": "show-options", "endpoint_url": "http://127.0.0.1:9", "region": "bucket-wide"}
    pre = {"profile": "show-options", "region": "pre", "allow_http": True}
    assert options_at(ds, "a", "memtest://b/other") == bucket
    assert options_at(ds, "a", "memtest://b") == bucket
    # The longest prefix's table alone: tables of shorter prefixes do not cascade.
    assert options_at(ds, "a", "memtest://b/pre") == pre
    assert options_at(ds, "a", "memtest://b/pre/x/y") == pre
    # "memtest://b/pre" is not above "memtest://b/prefix2": not the same segment.
    assert options_at(ds, "a", "memtest://b/prefix2") == bucket
    assert options_at(ds, "a", "memtest://b/pre/deeper/z") == {"profile": "show-options", "region": "deeper"}
    # The URI is compared as tether records it (scheme and host lowercased, no doubled '/').
    assert options_at(ds, "a", "MEMTEST://B//pre/") == pre
    # The object's own table on top.
    assert options_at(ds, "mine", "memtest://b/pre") == dict(pre, region="own", timeout=7)


def test_a_store_under_no_prefix_gets_the_objects_table_alone(ds):
    ds.write(".tether/secrets.toml", '[uris."memtest://other"]\nregion = "x"\n'
                                     '[objects."mine"]\nprofile = "show-options"\n')
    assert options_at(ds, "mine", "memtest://b/pre") == {"profile": "show-options"}


@pytest.mark.parametrize("text,where,message", [
    ('[uris."memtest://b"]\nregoin = "x"\n', "2:1",
     'uris."memtest://b": unknown store option \'regoin\' (allowed: endpoint_url, region, profile'),
    ('[uris."memtest://b"]\nallow_http = "yes"\n', "2:1", 'uris."memtest://b": allow_http must be true or false'),
    ('[uris."memtest://b"]\ntimeout = 0\n', "2:1", "timeout must be a number of seconds"),
    ('[uris."memtest://b"]\nconditional_put = "maybe"\n', "2:1", 'conditional_put must be "etag" or "disabled"'),
    ('[uris."memtest://b/"]\nregion = "x"\n', "1:7", "the prefix must be a store URI as tether records it"),
    ('[uris."memtest://B/x"]\nregion = "x"\n', "1:7", "memtest://b/x"),
    ('[uris."/data/local"]\nregion = "x"\n', "1:7", "the prefix must be a store URI"),
    ('[uris]\n"memtest://b" = 3\n', "2:1", 'uris."memtest://b" must be a table'),
    ('uris = 3\n', "1:1", "'uris' must be a table"),
])
def test_secrets_uri_tables_are_checked_when_read(plates, text, where, message):
    secrets = plates.write(".tether/secrets.toml", text)
    for argv in (["status"], ["commit", "-m", "x"], ["verify"]):
        p = plates.tether(*argv, check_rc=1)
        assert f"{secrets}:{where}: " in p.stderr and message in p.stderr, (argv, p.stderr)
    assert plates.head() is None


def test_an_objects_table_of_a_store_backend_holds_store_options_only(ds):
    """An Icechunk object's [objects."<key>"] table is its store's options:
    a misspelt key is refused by name, line and column, before any store
    is opened."""
    ds.write("data/x.txt", "x\n")
    secrets = ds.write(".tether/secrets.toml", '[objects."img"]\n  endpoint = "http://127.0.0.1:9"\n')
    p = ds.tether("add", "img", "memtest://b/img", "--kind", "icechunk", check_rc=1,
                  env={"TETHER_MODULE_PATH": MODULES})
    assert f"{secrets}:2:3: unknown key 'endpoint' in objects.\"img\" (kind icechunk reads endpoint_url," in p.stderr, \
        p.stderr
    assert "refused, options" not in p.stderr
