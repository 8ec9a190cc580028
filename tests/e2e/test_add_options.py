"""Backend-declared `tether add` options (docs/BACKENDS.md, "Declaring
options"): the CLI's parser, `tether add --help`, the checks of a value,
tether.toml's [defaults] and [backends.<kind>], and the drift hint all come
from the backends' declarations, not from a list in the CLI or the engine."""
import json


def line_col(text, needle):
    """1-based line:column of the first character of needle in text."""
    before = text[: text.index(needle)]
    return f"{before.count(chr(10)) + 1}:{len(before) - before.rfind(chr(10))}"


def kind_section(help_text, kind):
    """The lines `tether add --help` lists under `  KIND:`."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line == f"  {kind}:":
            inside = True
        elif inside and line.startswith("    "):
            out.append(line.strip())
        elif inside:
            break
    return out


def test_add_help_lists_each_kinds_options_under_the_kind(run):
    text = run("add", "--help").stdout
    generic = text.split("\noptions of each kind")[0]
    # the kinds' options are not the command's own ...
    for name in ("--file", "--remote", "--ref"):
        assert name not in generic
    # ... but each kind's, as its backend declares them
    file_opt, region = kind_section(text, "file")
    assert file_opt.startswith("--file POLICY")
    assert "one of immutable, mutable or versioned; default immutable; [defaults] file in tether.toml" in file_opt
    assert region.startswith("--region REGION")
    git = kind_section(text, "git")
    assert [l.split()[0] for l in git] == ["--remote", "--ref", "--allow_dirty"]
    assert git[1].startswith("--ref REF") and git[1].endswith("default HEAD")
    # memory and Icechunk declare the branch they follow (they took it only
    # as --option branch=NAME before)
    for kind in ("memory", "icechunk"):
        (branch,) = kind_section(text, kind)
        assert branch.startswith("--branch NAME") and branch.endswith("; default main"), branch
    assert run("help", "add").stdout == text


def test_backends_json_carries_the_declarations(run):
    kinds = {b["kind"]: b for b in json.loads(run("backends", "--json").stdout)}
    assert kinds["file"]["add_options"] == [{
        "name": "file", "value_name": "POLICY",
        "help": "a change of the data is drift (immutable) or is recorded (mutable; versioned: and a single "
                "object in a versioned bucket is read back by version id)",
        "choices": ["immutable", "mutable", "versioned"], "default": "immutable", "field": "policy",
        "defaults": True}, {
        "name": "region", "value_name": "REGION",
        "help": "the object store's region, over the store's own (object-store URIs only)",
        "choices": None, "default": None, "field": "locator", "defaults": False}]
    assert [o["name"] for o in kinds["git"]["add_options"]] == ["remote", "ref", "allow_dirty"]
    assert all(o["field"] == "locator" for o in kinds["git"]["add_options"])
    assert [o["choices"] for o in kinds["git"]["add_options"]] == [None, None, ["true", "false"]]
    for kind in ("memory", "icechunk"):
        (branch,) = kinds[kind]["add_options"]
        assert {k: branch[k] for k in ("name", "value_name", "choices", "default", "field", "defaults")} == {
            "name": "branch", "value_name": "NAME", "choices": None, "default": "main", "field": "locator",
            "defaults": False}


def test_a_kinds_option_is_refused_for_another_kind(ds, new_repo):
    ds.write("data/a", "a")
    for flag in ("--ref", "--remote"):
        p = ds.tether("add", "x", "data/a", "--kind", "file", flag, "main", check_rc=2)
        assert f"unknown option '{flag}' for 'add'" in p.stderr
    code = new_repo("code")
    code.write("main.py", "a\n")
    code.git_commit_all("c1", "main.py")
    p = ds.tether("add", "c", code.root, "--kind", "git", "--file", "mutable", check_rc=2)
    assert "unknown option '--file' for 'add'" in p.stderr
    assert ds.objects_files() == []


def test_a_bad_value_is_one_usage_line_naming_option_and_values(ds):
    ds.write("data/a", "a")
    p = ds.tether("add", "x", "data/a", "--kind", "file", "--file", "frozen", check_rc=2)
    assert p.stderr.splitlines() == [
        "tether: error: option '--file' of kind file takes immutable, mutable or versioned, not 'frozen', for 'add'",
        "hint: see 'tether add --help'"]
    # the same through --option, and --kind=K spelt with '='
    p = ds.tether("add", "x", "data/a", "--kind=file", "--option", "file=frozen", check_rc=2)
    assert "option '--file' of kind file takes immutable, mutable or versioned, not 'frozen'" in p.stderr
    assert ds.objects_files() == []


def test_git_options_land_in_the_locator(ds, new_repo):
    code = new_repo("code")
    code.write("main.py", "a\n")
    code.git_commit_all("c1", "main.py")
    code.git("branch", "side")
    code.git("remote", "add", "origin", str(code.root))
    ds.tether("add", "c", code.root, "--kind", "git", "--ref", "side", "--remote", "origin")
    assert ds.manifest("c")["locator"] == {"path": str(code.root), "ref": "side", "remote": "origin"}
    assert "remote" not in ds.manifest("c")["policy"]


def test_memory_branch_is_declared_and_option_still_works(ds):
    """--branch NAME and the older --option branch=NAME record the same
    locator; an empty one, the two at once, or --branch on a kind that does
    not declare it are usage errors that write nothing."""
    ds.tether("add", "m", "memory://sys", "--kind", "memory", "--branch", "dev")
    assert ds.manifest("m")["locator"] == {"system": "sys", "branch": "dev"}
    assert "branch" not in ds.manifest("m")["policy"]
    ds.tether("add", "n", "memory://sys", "--kind", "memory", "--option", "branch=dev")
    assert ds.manifest("n")["locator"] == ds.manifest("m")["locator"]
    ds.tether("add", "o", "memory://sys", "--kind", "memory")
    assert ds.manifest("o")["locator"]["branch"] == "main"
    before = ds.objects_files()
    p = ds.tether("add", "x", "memory://sys", "--kind", "memory", "--branch", "", check_rc=2)
    assert "--branch for kind memory takes a non-empty branch name" in p.stderr
    p = ds.tether("add", "x", "memory://sys", "--kind", "memory", "--branch", "a", "--option", "branch=b",
                  check_rc=2)
    assert "backend option 'branch' given twice" in p.stderr
    p = ds.tether("add", "x", "memory://sys", "--kind", "memory", "--branch", check_rc=2)
    assert "--branch" in p.stderr
    ds.write("data/a", "a")
    p = ds.tether("add", "x", "data/a", "--kind", "file", "--branch", "dev", check_rc=2)
    assert "unknown option '--branch' for 'add'" in p.stderr
    assert ds.objects_files() == before


def test_defaults_file_is_the_file_kinds_default(ds):
    """[defaults] file comes from the file backend's declaration
    (TETHER_ADD_DEFAULTS): init writes it, add takes it, the command line
    wins over it."""
    cfg = ds.p("tether.toml")
    assert 'file = "immutable"' in cfg.read_text()
    cfg.write_text(cfg.read_text().replace('file = "immutable"', 'file = "mutable"'))
    ds.write("data/a", "a")
    ds.tether("add", "a", "data/a", "--kind", "file")
    assert ds.manifest("a")["policy"]["file"] == "mutable"
    ds.tether("add", "b", "data/a", "--kind", "file", "--file", "immutable")
    assert ds.manifest("b")["policy"]["file"] == "immutable"


def test_defaults_keys_and_values_come_from_the_declarations(ds):
    cfg = ds.p("tether.toml")
    base = cfg.read_text()
    for edit, where, message in [
        (base.replace('file = "immutable"', 'file = "frozen"'), 'file = "frozen"',
         'defaults.file must be one of "immutable", "mutable" or "versioned"'),
        (base.replace('file = "immutable"', "file = 3"), "file = 3",
         'defaults.file must be one of "immutable", "mutable" or "versioned"'),
        (base.replace('file = "immutable"', 'ref = "main"'), 'ref = "main"',
         # git declares ref, but not for [defaults]
         "unknown key 'ref' in defaults (allowed: file, write, pin)"),
    ]:
        cfg.write_text(edit)
        p = ds.tether("status", check_rc=1)
        assert f"{cfg}:{line_col(edit, where)}: {message}" in p.stderr, p.stderr


def test_backends_tables_hold_the_keys_their_backend_declares(ds):
    cfg = ds.p("tether.toml")
    base = cfg.read_text()
    # the file backend declares it reads none
    text = base + "\n[backends.file]\nthreads = 4\n"
    cfg.write_text(text)
    p = ds.tether("status", check_rc=1)
    assert f"{cfg}:{line_col(text, 'threads')}: unknown key 'threads' in backends.file (allowed: storage_options)" in p.stderr
    text = base + "\n[backends]\nfile = 1\n"
    cfg.write_text(text)
    p = ds.tether("status", check_rc=1)
    assert "backends.file must be a table" in p.stderr
    # a kind this build does not have keeps its table: it is that backend's
    cfg.write_text(base + "\n[backends.notinstalled]\nregion = \"eu\"\n")
    ds.tether("status")


def test_the_drift_hint_is_the_backends(plates):
    plates.tether("commit", "-m", "baseline")
    plates.write("data/samples.csv", "tampered")
    p = plates.tether("commit", "-m", "drift", check_rc=3)
    assert "hint: restore the recorded data, or re-add the object with --file mutable" in p.stderr
