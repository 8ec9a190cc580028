"""Bad input of every sort: usage errors (exit 2) name what was wrong, bad
files (exit 1) name the file, and none of them writes anything."""
import re

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
    (["verify", "--shallow"], "unknown option '--shallow' for 'verify'"),  # (--deep is one of verify's)
    (["verify", "x"], "unexpected argument 'x' for 'verify'"),
    (["backends", "--all"], "unknown option '--all' for 'backends'"),
    (["init", "--bare"], "unknown option '--bare' for 'init'"),
    (["init", "somewhere"], "unexpected argument 'somewhere' for 'init'"),
    (["add", "k", "p"], "missing option --kind K for 'add'"),
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


# -- a manifest's fields: typed, positioned, checked by kind -------------------

def recorded_samples(plates):
    """plates committed: raw/samples's manifest records a file state. Returns
    (path, text) of that manifest."""
    plates.tether("commit", "-m", "first")
    path = plates.manifest_path("raw/samples")
    return path, path.read_text()


def line_col(text, needle):
    """1-based line:column of the first character of needle in text."""
    before = text[: text.index(needle)]
    return f"{before.count(chr(10)) + 1}:{len(before) - before.rfind(chr(10))}"


@pytest.mark.parametrize("old,new,at,message", [
    # (what to replace in the recorded manifest, by what, the text the
    # message's line:col points at, the message)
    (r"size = (\d+)", r'size = "\1"', "size", "size must be a non-negative integer, not a string"),
    (r"size = (\d+)", r"size = \1.0", "size", "size must be a non-negative integer, not a float"),
    (r"size = (\d+)", "size = 1979-05-27T07:32:00Z", "size", "size must be a non-negative integer, not a table"),
    (r"size = (\d+)", "size = -1", "size", "size must be a non-negative integer, not a negative one"),
    (r'type = "file"', 'type = "dir"', "count", "a dir state needs 'count'"),
    (r'type = "file"', 'type = "folder"', "type", 'type must be "file", "dir", "object", "prefix" or "missing"'),
    (r'sha256 = "[0-9a-f]+"', 'sha256 = "xyz"', "sha256", "sha256 must be a sha256 hex digest"),
    (r'sha256 = "', 'colour = "red"\nsha256 = "', "colour", "'colour' is not a key of a file state"),
])
def test_a_wrongly_typed_state_is_a_malformed_manifest_not_drift(plates, old, new, at, message):
    path, text = recorded_samples(plates)
    bad = re.sub(old, new, text, count=1)
    assert bad != text
    path.write_text(bad)
    # A key that is absent is placed at its table, [state].
    lines = bad.splitlines()
    row = next((i for i, line in enumerate(lines) if line.startswith(at + " = ")), None)
    where = f"{row + 1}:1" if row is not None else line_col(bad, "state]")
    for argv in (["status"], ["status", "--json"], ["commit", "-m", "x"], ["verify"], ["diff"],
                 ["open", "raw/samples"]):
        p = plates.tether(*argv, check_rc=1)
        assert f"{path}:{where}: recorded state of kind file: {message}" in p.stderr, (argv, p.stderr)
        assert p.stdout == ""
    assert plates.commit_count() == 1


def test_a_wrongly_typed_state_in_history_is_refused_by_every_reader(plates):
    path, text = recorded_samples(plates)
    bad_text = re.sub(r"size = (\d+)", r'size = "\1"', text, count=1)
    path.write_text(bad_text)
    plates.git_commit_all("a bad manifest, committed by hand", path)
    bad = plates.head()
    path.write_text(text)  # the working copy is fine again
    plates.git_commit_all("fixed", path)
    name = f".tether/objects/raw/samples.toml at {bad[:12]}:{line_col(bad_text, 'size =')}"
    for argv in (["open", "raw/samples", "-r", bad], ["diff", bad, "HEAD"], ["verify", "--all-history"],
                 ["gc"], ["log"]):
        p = plates.tether(*argv, check_rc=1)
        assert name in p.stderr and "size must be a non-negative integer, not a string" in p.stderr, (argv, p.stderr)


@pytest.mark.parametrize("text,where,message", [
    ('kind = 3\n[locator]\nuri = "/x"\n', "1:1", "'kind' must be a string"),
    ('kind = "file"\n\nrecoverable = "no"\n[locator]\nuri = "/x"\n', "3:1", "'recoverable' must be true or false"),
    ('kind = "file"\nlisting = "abc"\n[locator]\nuri = "/x"\n', "2:1", "'listing' must be a sha256 hex digest"),
    ('kind = "file"\n[locator]\nuri = "/x"\n[state]\n  colour = 1\n[extra]\n', "6:2", "unknown key 'extra'"),
    ('kind = "file"\nstate = 3\n[locator]\nuri = "/x"\n', "2:1", "'state' must be a table"),
    ('kind = "file"\n[locator]\nuri = "/x"\n[policy]\nwrite = "none"\npin = "bogus"\n', "6:1",
     'policy.pin must be one of "native" or "record"'),
    ('kind = "file"\n[locator]\nuri = "/x"\n[policy]\nwrite = "sometimes"\n', "5:1",
     'policy.write must be one of "fork", "track" or "none"'),
    ('kind = "file"\n[locator]\nuri = "/x"\n[policy]\nfile = "frozen"\n', "5:1",
     'policy.file must be one of "immutable", "mutable" or "versioned"'),
    ('kind = "file"\n[locator]\nuri = "/x"\n[policy]\n  fiel = "mutable"\n', "5:3",
     "unknown policy key 'fiel' for kind file (allowed: write, pin, file)"),
    ('kind = "git"\n[locator]\npath = "/x"\n[policy]\nfile = "mutable"\n', "5:1",
     "unknown policy key 'file' for kind git (allowed: write, pin)"),
    ('kind = "git"\n[locator]\npath = "/x"\n[state]\nsha = 12\n', "5:1",
     "recorded state of kind git: sha must be a commit id"),
])
def test_manifest_field_errors_name_line_and_column(plates, text, where, message):
    bad = plates.write(".tether/objects/bad.toml", text)
    p = plates.tether("status", check_rc=1)
    assert f"{bad}:{where}: {message}" in p.stderr, p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("text,where,message", [
    ('[object."raw/samples"]\nremote = "x"\n', "1:2", "unknown key 'object' (allowed: objects, uris, backends, databases)"),
    ('token = "x"\n', "1:1", "unknown key 'token' (allowed: objects, uris, backends, databases)"),
    ('objects = 3\n', "1:1", "'objects' must be a table"),
    ('[objects]\n"raw/samples" = "x"\n', "2:1", 'objects."raw/samples" must be a table'),
    ('[databases."postgresql://h/"]\nuser = "x"\n', "2:1", "unknown key 'user' in postgresql://h/ (allowed: password)"),
    ('[databases."postgresql://h/"]\n', "1:12", 'databases."postgresql://h/" needs password = "..."'),
])
def test_secrets_file_errors_name_line_and_column(plates, text, where, message):
    secrets = plates.write(".tether/secrets.toml", text)
    for argv in (["status"], ["commit", "-m", "x"], ["verify"]):
        p = plates.tether(*argv, check_rc=1)
        assert f"{secrets}:{where}: {message}" in p.stderr, (argv, p.stderr)
    assert plates.head() is None


def test_a_nul_byte_in_secrets_is_refused(plates):
    """A URL or token in secrets.toml is handed on as a C string: one with
    a NUL inside ("ssh://x\\u0000y" would act as "ssh://x") is refused."""
    secrets = plates.write(".tether/secrets.toml", '[objects."raw/samples"]\nremote = "ssh://x\\u0000y"\n')
    for argv in (["status"], ["commit", "-m", "x"], ["verify"]):
        p = plates.tether(*argv, check_rc=1)
        assert f"{secrets}" in p.stderr and "holds a NUL byte" in p.stderr and "remote" in p.stderr, (argv, p.stderr)
    assert plates.head() is None


@pytest.mark.parametrize("edit,where,message", [
    (lambda t: t + "[colour]\nred = 1\n", "colour]", "unknown key 'colour' (allowed: dataset, snapshot"),
    (lambda t: t.replace("auto = true", 'auto = "yes"'), "auto =", "snapshot.auto must be true or false"),
    (lambda t: t.replace('file = "immutable"', 'file = "frozen"'), "file =",
     'defaults.file must be one of "immutable", "mutable" or "versioned"'),
    (lambda t: t.replace('pin = "native"', 'pin = "bogus"'), "pin =", 'defaults.pin must be one of "native" or "record"'),
    (lambda t: t.replace("auto = true", "auto = true\nautomatic = false"), "automatic",
     "unknown key 'automatic' in snapshot (allowed: auto)"),
    (lambda t: t.replace('write = "fork"', 'writes = "fork"'), "writes",
     "unknown key 'writes' in defaults (allowed: file, write, pin)"),
])
def test_tether_toml_errors_name_line_and_column(plates, edit, where, message):
    cfg = plates.p("tether.toml")
    text = edit(cfg.read_text())
    cfg.write_text(text)
    p = plates.tether("status", check_rc=1)
    assert f"{cfg}:{line_col(text, where)}" in p.stderr, p.stderr
    assert message in p.stderr


def test_a_secret_the_objects_backend_does_not_read_is_refused(plates, new_repo):
    code = new_repo("code")
    code.write("main.py", "a\n")
    code.git_commit_all("c1", "main.py")
    plates.tether("add", "code", code.root, "--kind", "git")
    secrets = plates.write(".tether/secrets.toml", '[objects."code"]\n\n  remot = "/elsewhere.git"\n')
    for argv in (["status"], ["commit", "-m", "x"], ["verify"]):
        p = plates.tether(*argv, check_rc=1)
        assert (f"{secrets}:3:3: unknown key 'remot' in objects.\"code\" (kind git reads remote)"
                in p.stderr), (argv, p.stderr)
    assert plates.head() is None
    assert code.git("tag", "-l") == ""


def test_the_first_bad_manifest_of_a_long_history_is_the_one_named(ds):
    """A walk of many manifests parses them on a second thread as it reads
    (from the sixteenth on) and records them in the walk's order: of two
    bad manifests in history, gc and verify --all-history name the one the
    walk meets first (the newer commit: walks go newest first), as a walk
    that stopped at it did."""
    for i in range(24):
        ds.write(f"data/f{i:02d}.txt", f"{i}\n")
        ds.tether("add", f"o{i:02d}", f"data/f{i:02d}.txt", "--kind", "file", "--file", "mutable")
    ds.tether("commit", "-m", "24 objects")
    for i in range(24):  # 24 commits, each one changed manifest: 48 distinct blobs
        ds.write(f"data/f{i:02d}.txt", f"{i} changed\n")
        ds.tether("commit", "-m", f"o{i:02d} changed")
    bads = []
    for key in ("o03", "o17"):
        path = ds.manifest_path(key)
        text = path.read_text()
        bad_text = re.sub(r"size = (\d+)", r'size = "\1"', text, count=1)
        path.write_text(bad_text)
        ds.git_commit_all(f"a bad {key}, committed by hand", path)
        bads.append((key, ds.head(), bad_text))
        path.write_text(text)
        ds.git_commit_all(f"{key} fixed", path)
    key, bad, bad_text = bads[1]  # the newer one: first in the walk
    name = f".tether/objects/{key}.toml at {bad[:12]}:{line_col(bad_text, 'size =')}"
    for argv in (["gc"], ["verify", "--all-history"]):
        p = ds.tether(*argv, check_rc=1)
        assert name in p.stderr and "size must be a non-negative integer, not a string" in p.stderr, (argv, p.stderr)
        assert "o03.toml" not in p.stderr
