"""tether init and tether add: what they write, and what they refuse."""
import json
import os
import tomllib

import pytest

from conftest import HEX32


# -- init ---------------------------------------------------------------------

def test_init_creates_config_and_gitignore(repo):
    p = repo.tether("init")
    cfg = tomllib.loads(repo.p("tether.toml").read_text())
    dataset_id = cfg["dataset"]["id"]
    assert HEX32.match(dataset_id), dataset_id
    assert p.stdout == f"Initialized tether dataset {dataset_id[:8]} in {repo.root}\n"
    assert p.stderr == ""
    assert cfg["snapshot"]["auto"] is True
    assert cfg["defaults"]["file"] == "immutable"
    assert cfg["dataset"]["layout"] == 1  # the layout of the dataset's files (test_upgrade.py)

    gitignore = repo.p(".tether/.gitignore").read_text().splitlines()
    for entry in ("/workspace.toml", "/secrets.toml", "/cache/", "/journal/", "/lock"):
        assert entry in gitignore
    assert repo.p(".tether/objects").is_dir()
    assert repo.objects_files() == []

    # git's own view: the per-checkout files are ignored, manifests are not.
    for ignored in (".tether/workspace.toml", ".tether/secrets.toml", ".tether/cache/x.bin",
                    ".tether/journal/1", ".tether/lock"):
        assert repo.git("check-ignore", ignored, check=False).strip() == ignored
    for kept in (".tether/objects/a.toml", ".tether/listings/x.jsonl", "tether.toml"):
        assert repo.git("check-ignore", kept, check=False) == ""
    # init writes files, it makes no commit
    assert repo.head() is None


def test_init_ids_are_random(repo, new_repo):
    other = new_repo("other")
    repo.tether("init")
    other.tether("init")
    assert repo.dataset_id() != other.dataset_id()


def test_second_init_refuses(ds):
    before = ds.p("tether.toml").read_bytes()
    tree = ds.tree()
    p = ds.tether("init", check_rc=3)
    assert "already exists" in p.stderr
    assert str(ds.root) in p.stderr
    assert p.stdout == ""
    assert ds.p("tether.toml").read_bytes() == before
    assert ds.tree() == tree


def test_init_below_a_dataset_refuses(ds):
    ds.p("sub/deeper").mkdir(parents=True)
    p = ds.tether("init", cwd=ds.p("sub/deeper"), check_rc=3)
    assert f"a tether dataset already exists at {ds.root}" in p.stderr
    assert not ds.p("sub/deeper/tether.toml").exists()
    assert not ds.p("sub/deeper/.tether").exists()


def test_init_outside_git_fails_and_writes_nothing(run, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    p = run("init", cwd=plain, check_rc=1)
    assert "not inside a git repository" in p.stderr
    assert "git init" in p.stderr  # the hint says what to do
    assert p.stdout == ""
    assert os.listdir(plain) == []


def test_init_in_a_subdirectory_of_the_checkout(repo):
    repo.p("ds").mkdir()
    p = repo.tether("init", cwd=repo.p("ds"))
    assert p.stdout.endswith(f" in {repo.root / 'ds'}\n")
    assert repo.p("ds/tether.toml").is_file()
    assert repo.p("ds/.tether/.gitignore").is_file()
    assert not repo.p("tether.toml").exists()


def test_a_repository_nested_in_another_is_its_own_checkout(repo):
    """The dataset is searched for up to the top of the enclosing checkout,
    never beyond: a repository inside another one's working tree does not
    see the outer one's dataset (CLI.md: "inside the enclosing git checkout")."""
    repo.tether("init")
    inner = repo.p("vendor/inner")
    inner.mkdir(parents=True)
    repo.git("init", "-q", "-b", "main", cwd=inner)
    p = repo.tether("status", cwd=inner, check_rc=1)
    assert "no tether dataset" in p.stderr
    p = repo.tether("init", cwd=inner)
    assert p.stdout.endswith(f" in {inner}\n")
    assert repo.tj("status", cwd=inner)["dataset"] == str(inner)
    # a plain subdirectory of the outer checkout still finds the outer dataset
    repo.p("plain/sub").mkdir(parents=True)
    assert repo.tj("status", cwd=repo.p("plain/sub"))["dataset"] == str(repo.root)


# -- add ----------------------------------------------------------------------

def test_add_directory(ds):
    ds.write("data/plates/p1.csv", "a,b\n1,2\n")
    p = ds.tether("add", "raw/plates", "data/plates", "--kind", "file", "--file", "mutable")
    assert p.stdout == "Added raw/plates (kind file, tier observed)\n"
    assert "warning: raw/plates is observed only" in p.stderr
    assert ds.objects_files() == ["raw", "raw/plates.toml"]
    assert ds.manifest("raw/plates") == {
        "layout": 1,
        "kind": "file",
        "locator": {"uri": str(ds.root / "data" / "plates")},
        "policy": {"file": "mutable", "pin": "native", "write": "none"},
    }
    # add contacts nothing and commits nothing
    assert ds.head() is None


def test_add_single_file_is_immutable_by_default(ds):
    ds.write("data/samples.csv", "s,p\n")
    ds.tether("add", "samples", "data/samples.csv", "--kind", "file")
    m = ds.manifest("samples")
    assert m["kind"] == "file"
    assert m["locator"] == {"uri": str(ds.root / "data" / "samples.csv")}
    assert m["policy"]["file"] == "immutable"
    for recorded in ("state", "pin", "listing", "recoverable"):
        assert recorded not in m


def test_add_json_report(ds):
    ds.write("data/f.bin", b"\x00\x01")
    p = ds.tether("add", "raw/f", "data/f.bin", "--kind", "file", "--json")
    # warnings go to stderr in --json mode too, stdout is the JSON alone
    assert p.stderr == "warning: raw/f is observed only: tether detects changes but cannot recover earlier states\n"
    r = json.loads(p.stdout)
    assert r["key"] == "raw/f"
    assert r["kind"] == "file"
    assert r["tier"] == "observed"
    assert r["manifest"] == ".tether/objects/raw/f.toml"
    assert r["warnings"] == ["raw/f is observed only: tether detects changes but cannot recover earlier states"]


def test_add_resolves_every_spelling_of_a_path_to_one_uri(ds):
    ds.write("data/d/x.txt", "x\n")
    os.symlink("data", ds.p("lnk"))
    ds.p("sub").mkdir()
    real = os.path.realpath(ds.p("data/d"))
    spellings = [
        ("plain", "data/d", None),
        ("dotted", "./data/../data/d", None),
        ("trailing", "data/d/", None),
        ("doubled", f"{ds.root}/data//d", None),
        ("absolute", f"{ds.root}/data/d", None),
        ("fileuri", f"file://{ds.root}/data/d", None),
        ("fileurislash", f"file://{ds.root}/data/d/", None),
        ("symlinked", "lnk/d", None),
        ("fromsub", "../data/d", "sub"),
    ]
    for key, path, cwd in spellings:
        ds.tether("add", key, path, "--kind", "file", cwd=ds.p(cwd) if cwd else None)
        assert ds.manifest(key)["locator"] == {"uri": real}, key
    # one store to pin ids as well: every object is recorded at the same pin
    r = ds.tj("commit", "-m", "same store")
    pins = {o["key"]: o["pin"] for o in r["objects"]}
    assert sorted(pins) == sorted(k for k, _, _ in spellings)
    assert len(set(pins.values())) == 1


def test_add_json_is_utf8_unescaped(ds):
    ds.write("données/f.csv", "x")
    p = ds.tether("add", "fr", "données/f.csv", "--kind", "file", "--json")
    assert f'"uri": "{ds.root}/données/f.csv"' in p.stdout
    assert ds.manifest("fr")["locator"]["uri"] == f"{ds.root}/données/f.csv"


def test_add_tilde_is_home(ds):
    ds.write("data/f", "x")
    ds.tether("add", "t", "~/data/f", "--kind", "file", env={"HOME": str(ds.root)})
    assert ds.manifest("t")["locator"]["uri"] == str(ds.root / "data" / "f")


def test_add_global_C_changes_directory_first(ds, run, tmp_path):
    ds.write("data/f", "x")
    run("-C", ds.root, "-C", "data", "add", "viaC", "f", "--kind", "file", cwd=tmp_path)
    assert ds.manifest("viaC")["locator"]["uri"] == str(ds.root / "data" / "f")


def test_add_nested_keys(ds):
    for name in ("plate1", "plate2"):
        ds.write(f"data/{name}.csv", name)
        ds.tether("add", f"raw/{name}", f"data/{name}.csv", "--kind", "file")
    ds.write("data/deep.csv", "deep")
    ds.tether("add", "a/b/c-d_e.f", "data/deep.csv", "--kind", "file")
    assert ds.objects_files() == ["a", "a/b", "a/b/c-d_e.f.toml", "raw", "raw/plate1.toml", "raw/plate2.toml"]
    st = ds.tj("status")
    assert [o["key"] for o in st["objects"]] == ["a/b/c-d_e.f", "raw/plate1", "raw/plate2"]


@pytest.mark.parametrize(
    "key",
    ["", "/abs", "a//b", "../x", ".hidden", "sp ace", "a/", "x/.y", "a/./b", "tab\tkey", "k\u00e9y", "a" * 201],
)
def test_add_refuses_bad_keys(ds, key):
    ds.write("data/f", "x")
    before = ds.tree()
    p = ds.tether("add", "--kind", "file", "--", key, "data/f", check_rc=2)
    # Shown escaped: a tab or a newline in a key cannot split the line.
    assert f"invalid object key '{key}'".replace("\t", "\\t") in p.stderr
    assert p.stdout == ""
    assert ds.tree() == before


def test_add_longest_key_is_accepted(ds):
    ds.write("data/f", "x")
    key = "k" * 200
    ds.tether("add", key, "data/f", "--kind", "file")
    assert ds.manifest_path(key).is_file()


def test_add_duplicate_key_refused_and_manifest_unchanged(ds):
    ds.write("data/a", "a")
    ds.write("data/b", "b")
    ds.tether("add", "raw/x", "data/a", "--kind", "file", "--file", "mutable")
    before = ds.tree()
    text = ds.manifest_path("raw/x").read_bytes()
    p = ds.tether("add", "raw/x", "data/b", "--kind", "file", check_rc=3)
    assert "object 'raw/x' already exists" in p.stderr
    assert ds.manifest_path("raw/x").read_bytes() == text
    assert ds.tree() == before


def test_add_unknown_kind(ds):
    ds.write("data/a", "a")
    before = ds.tree()
    p = ds.tether("add", "x", "data/a", "--kind", "nosuchkind", check_rc=2)
    assert "unknown kind 'nosuchkind'" in p.stderr
    assert ds.tree() == before


def test_add_missing_kind(ds):
    ds.write("data/a", "a")
    p = ds.tether("add", "x", "data/a", check_rc=2)
    assert "--kind" in p.stderr
    assert ds.objects_files() == []


def test_add_path_that_does_not_exist(ds):
    before = ds.tree()
    p = ds.tether("add", "raw/x", "data/nope.csv", "--kind", "file", check_rc=1)
    assert "data/nope.csv" in p.stderr
    assert "does not exist" in p.stderr
    assert ds.tree() == before


def test_add_unknown_option(ds):
    ds.write("data/a", "a")
    p = ds.tether("add", "x", "data/a", "--kind", "file", "--bogus", check_rc=2)
    assert "unknown option '--bogus' for 'add'" in p.stderr
    assert "hint: see 'tether add --help'" in p.stderr
    assert ds.objects_files() == []


def test_add_bad_file_policy(ds):
    ds.write("data/a", "a")
    before = ds.tree()
    p = ds.tether("add", "raw/x", "data/a", "--kind", "file", "--file", "bogus", check_rc=2)
    assert "'bogus'" in p.stderr
    assert ds.tree() == before


def test_add_option_passthrough(ds):
    ds.write("data/a", "a")
    ds.tether("add", "x", "data/a", "--kind", "file", "--option", "file=mutable")
    assert ds.manifest("x")["policy"]["file"] == "mutable"
    # an option the backend does not know is refused, naming it
    p = ds.tether("add", "y", "data/a", "--kind", "file", "--option", "region=eu", check_rc=2)
    assert "region" in p.stderr
    # the same option twice, by --file and --option, is a usage error
    p = ds.tether("add", "z", "data/a", "--kind", "file", "--file", "mutable",
                  "--option", "file=immutable", check_rc=2)
    assert "'file' given twice" in p.stderr
    assert ds.objects_files() == ["x.toml"]


def test_add_refuses_a_path_holding_the_dataset(ds):
    for path in (".", str(ds.root.parent)):
        p = ds.tether("add", "whole", path, "--kind", "file", check_rc=2)
        assert "contains the dataset" in p.stderr
    assert ds.objects_files() == []


def test_add_refuses_a_scheme_without_a_store(ds):
    # Remote objects are the store modules' (tests/e2e/test_file_remote.py);
    # a scheme no module serves is refused, naming it, and nothing is written.
    p = ds.tether("add", "obj", "nosuch://bucket/key", "--kind", "file", check_rc=2)
    assert "nosuch://" in p.stderr
    p = ds.tether("add", "obj", "nosuch://bucket/key", "--kind", "file", "--file", "versioned", check_rc=2)
    assert "nosuch://" in p.stderr
    assert ds.objects_files() == []


def test_add_outside_a_dataset(repo):
    repo.write("data/a", "a")
    p = repo.tether("add", "x", "data/a", "--kind", "file", check_rc=1)
    assert "no tether dataset" in p.stderr
    assert not repo.p(".tether").exists()
    assert not repo.p("tether.toml").exists()


def test_add_missing_positional(ds):
    # The URI is optional on the command line (a kind named by its options
    # alone takes none); a kind that needs one refuses its absence.
    for kind, why in (("file", "kind file needs a path"), ("git", "kind git needs a path"),
                      ("icechunk", "kind icechunk needs the repository's path"),
                      ("delta", "kind delta needs the table's path or URI")):
        p = ds.tether("add", "onlykey", "--kind", kind, check_rc=2)
        assert why in p.stderr
    p = ds.tether("add", check_rc=2)
    assert "missing argument KEY" in p.stderr
    p = ds.tether("add", "k", "u", "extra", "--kind", "file", check_rc=2)
    assert "unexpected argument 'extra'" in p.stderr
    assert ds.objects_files() == []
