"""Bad input of every sort: usage errors (exit 2) name what was wrong, bad
files (exit 1) name the file, and none of them writes anything."""
import pytest

USAGE_CASES = [
    # (argv, what stderr must name)
    (["status", "--bogus"], "unknown option '--bogus' for 'status'"),
    (["status", "-x"], "unknown option '-x' for 'status'"),
    (["status", "extra"], "unexpected argument 'extra' for 'status'"),
    (["status", "--json=yes"], "option '--json' takes no value for 'status'"),
    (["commit", "-m", "x", "--frobnicate"], "unknown option '--frobnicate' for 'commit'"),
    (["commit", "-m", "x", "positional"], "unexpected argument 'positional' for 'commit'"),
    (["commit", "-m"], "option '-m' needs a value"),
    (["commit", "--message"], "option '--message' needs a value"),
    (["diff", "--max-entries"], "option '--max-entries' needs a value"),
    (["diff", "--max-entries", "0"], "'--max-entries' needs a whole number >= 1 (got '0')"),
    (["diff", "--max-entries", "abc"], "(got 'abc')"),
    (["diff", "--max-entries", "5x"], "(got '5x')"),
    (["diff", "--max-entries=-3"], "(got '-3')"),
    (["diff", "a", "b", "c"], "unexpected argument 'c' for 'diff'"),
    (["diff", "--nope"], "unknown option '--nope' for 'diff'"),
    (["log", "-n", "0"], "'--max-count' needs a whole number"),
    (["log", "--max-count", "99999999999999999999"], "(got '99999999999999999999')"),
    (["log", "a", "b"], "unexpected argument 'b' for 'log'"),
    (["verify", "--deep"], "unknown option '--deep' for 'verify'"),
    (["verify", "x"], "unexpected argument 'x' for 'verify'"),
    (["backends", "--all"], "unknown option '--all' for 'backends'"),
    (["init", "--bare"], "unknown option '--bare' for 'init'"),
    (["init", "somewhere"], "unexpected argument 'somewhere' for 'init'"),
    (["add", "k", "p"], "missing option --kind K for 'add'"),
    (["add", "k", "--kind", "file"], "missing argument URI for 'add'"),
    (["add", "k", "p", "--kind"], "option '--kind' needs a value"),
    (["add", "k", "p", "--kind", "file", "--option", "novalue"], "needs NAME=VALUE (got 'novalue')"),
    (["add", "k", "p", "--kind", "file", "--option", "=v"], "needs NAME=VALUE (got '=v')"),
    (["help", "a", "b"], "unexpected argument 'b' for 'help'"),
    (["--bogus-global"], "unknown option '--bogus-global'"),
]


@pytest.mark.parametrize("argv,message", USAGE_CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_usage_errors_exit_2_and_write_nothing(plates, argv, message):
    ds = plates
    tree = ds.tree()
    p = ds.tether(*argv, check_rc=2)
    assert message in p.stderr
    assert p.stderr.startswith("tether: error: ")
    assert "hint: see 'tether " in p.stderr
    assert p.stdout == ""
    assert ds.tree() == tree
    assert ds.head() is None


def test_option_value_that_is_not_utf8(plates):
    ds = plates
    ds.write("data/x", "x")
    p = ds.tether("add", "x", "data/x", "--kind", "file", b"--option=region=\xff", check_rc=2)
    assert "not valid UTF-8" in p.stderr
    assert not ds.manifest_path("x").exists()


def test_double_dash_ends_options(plates):
    ds = plates
    ds.write("data/-dash", "d")
    ds.tether("add", "--kind", "file", "--", "-k", "data/-dash")
    assert ds.manifest("-k")["locator"]["uri"] == str(ds.p("data/-dash"))


def test_malformed_tether_toml(plates):
    ds = plates
    cfg = ds.p("tether.toml")
    cfg.write_text(cfg.read_text() + "[snapshot\n")
    for argv in (["status"], ["commit", "-m", "x"], ["diff"], ["log"], ["verify"], ["add", "y", "data", "--kind", "file"]):
        p = ds.tether(*argv, check_rc=1)
        assert str(cfg) in p.stderr, argv
        assert p.stdout == ""
    assert ds.head() is None


@pytest.mark.parametrize("edit,message", [
    (lambda t: t + "[colour]\nred = 1\n", "unknown key 'colour'"),
    (lambda t: t.replace("auto = true", 'auto = "yes"'), "snapshot.auto must be true or false"),
    (lambda t: t.replace('file = "immutable"', 'file = "frozen"'), "defaults.file"),
    (lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("id = ")) + "\n", "dataset.id"),
])
def test_invalid_tether_toml(plates, edit, message):
    ds = plates
    cfg = ds.p("tether.toml")
    cfg.write_text(edit(cfg.read_text()))
    p = ds.tether("status", check_rc=1)
    assert str(cfg) in p.stderr
    assert message in p.stderr


def test_dataset_id_not_hex(plates):
    ds = plates
    cfg = ds.p("tether.toml")
    ds_id = ds.dataset_id()
    cfg.write_text(cfg.read_text().replace(ds_id, ds_id.upper()))
    p = ds.tether("status", check_rc=1)
    assert "dataset.id must be 32 lower-case hex digits" in p.stderr


def test_manifest_of_an_unknown_kind(plates):
    ds = plates
    ds.write(".tether/objects/alien.toml", 'kind = "martian"\n[locator]\nuri = "x"\n')
    tree = ds.tree()
    for argv in (["status"], ["commit", "-m", "x"], ["verify"]):
        p = ds.tether(*argv, check_rc=1)
        assert "unknown kind 'martian'" in p.stderr
        assert "alien" in p.stderr
    assert ds.tree() == tree
    assert ds.head() is None


@pytest.mark.parametrize("text,message", [
    ('kind = 3\n[locator]\nuri = "/x"\n', "'kind' must be a string"),
    ('kind = "file"\n', "'locator' must be a table"),
    ('kind = "file"\nlisting = "abc"\n[locator]\nuri = "/x"\n', "'listing' must be a sha256 hex digest"),
    ('kind = "file"\nrecoverable = "no"\n[locator]\nuri = "/x"\n', "'recoverable' must be true or false"),
    ('kind = "file"\nkind = "file"\n[locator]\nuri = "/x"\n', ""),  # a duplicate key is malformed TOML
    ('kind = "file"\n[locator]\nuri = "/x"\n\x00', ""),
])
def test_invalid_manifests_name_the_file(plates, text, message):
    ds = plates
    bad = ds.write(".tether/objects/bad.toml", text)
    p = ds.tether("status", check_rc=1)
    assert str(bad) in p.stderr
    assert message in p.stderr
    assert p.stdout == ""


def test_manifest_file_name_that_is_not_a_key(plates):
    ds = plates
    ds.write(".tether/objects/sp ace.toml", 'kind = "file"\n[locator]\nuri = "/x"\n')
    p = ds.tether("status", check_rc=1)
    assert "sp ace.toml" in p.stderr
    assert "not a valid object key" in p.stderr


def test_no_git_identity(repo):
    """A commit needs an author: without one, tether says so and writes nothing."""
    repo.git("config", "--unset", "user.name")
    repo.git("config", "--unset", "user.email")
    repo.tether("init")
    repo.write("data/f", "f")
    repo.tether("add", "f", "data/f", "--kind", "file")
    tree = repo.tree()
    p = repo.tether("commit", "-m", "who?", check_rc=1, env={"EMAIL": ""})
    assert "user.name" in p.stderr
    assert repo.head() is None
    assert repo.tree() == tree
