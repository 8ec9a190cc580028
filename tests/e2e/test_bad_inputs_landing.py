"""Bad input to the commands and flags of issue 12 (promote, merge,
restore, drop, pull, abandon, undo, upgrade, new --adopt, verify --deep,
commit --force, gc --prune-bookmarks), as test_bad_inputs.py does for the
older ones: a usage error is exit 2 with one `tether: error:` line naming
the argument (and the command's help hint), a bad KEY or REV is exit 1
naming it, a plan that is not this command's is exit 3, and none of them
writes anything: the working tree, .tether/, HEAD, every ref of the
dataset's repository and of the store, the index and the journal stay as
they were.

The dataset: a git object `code` (pinned by a commit, then forked by
`new -b feat`, so promote, merge, restore and drop have a working branch
to act on) and a mutable file object `f`."""
import json
import re

import pytest

from conftest import check_sanitizers

# (argv, the exit code, what the one error line must say)
USAGE_CASES = [
    (["promote", "--bogus"], 2, "unknown option '--bogus' for 'promote'"),
    (["promote", "--json=1"], 2, "option '--json' takes no value for 'promote'"),
    (["promote", "--plan"], 2, "option '--plan' needs a value"),
    (["promote", "--from-plan"], 2, "option '--from-plan' needs a value"),
    (["promote", "code", "--from-plan", "p.json"], 2, "for 'promote'"),
    (["merge", "--bogus"], 2, "unknown option '--bogus' for 'merge'"),
    (["merge", "-m"], 2, "option '-m' needs a value"),
    (["merge", "-m", "x", "--from-plan", "p.json"], 2, "for 'merge'"),
    (["restore", "--bogus"], 2, "unknown option '--bogus' for 'restore'"),
    (["restore", "-r"], 2, "option '-r' needs a value"),
    (["restore", "-r", "HEAD", "--from-plan", "p.json"], 2, "--from-plan takes no -r and no KEY"),
    (["drop"], 2, "missing argument KEY for 'drop'"),
    (["drop", "code", "--bogus"], 2, "unknown option '--bogus' for 'drop'"),
    (["drop", "code", "--force=yes"], 2, "option '--force' takes no value for 'drop'"),
    (["drop", "code", "--from-plan", "p.json"], 2, "--from-plan takes no KEY, --force or --delete-store"),
    (["pull", "--bogus"], 2, "unknown option '--bogus' for 'pull'"),
    (["pull", "code", "--from-plan", "p.json"], 2, "for 'pull'"),
    (["abandon"], 2, "missing REV, the commit to drop, for 'abandon'"),
    (["abandon", "HEAD", "HEAD~1"], 2, "unexpected argument 'HEAD~1' for 'abandon'"),
    (["abandon", "HEAD", "--bogus"], 2, "unknown option '--bogus' for 'abandon'"),
    (["abandon", "HEAD", "--from-plan", "p.json"], 2, "--from-plan takes no REV and no --force"),
    (["undo", "extra"], 2, "unexpected argument 'extra' for 'undo'"),
    (["undo", "--bogus"], 2, "unknown option '--bogus' for 'undo'"),
    (["undo", "--plan", "p.json", "--from-plan", "p.json"], 2, "--plan and --from-plan cannot be combined"),
    (["upgrade", "extra"], 2, "unexpected argument 'extra' for 'upgrade'"),
    (["upgrade", "--plan", "p.json"], 2, "unknown option '--plan' for 'upgrade'"),
    (["upgrade", "--all-history=yes"], 2, "option '--all-history' takes no value for 'upgrade'"),
    (["new", "--adopt", "feat"], 2, "--adopt takes no REV and no -b"),
    (["new", "--adopt", "-b", "x"], 2, "--adopt takes no REV and no -b"),
    (["new", "--adopt=1"], 2, "option '--adopt' takes no value for 'new'"),
    (["verify", "--deep=1"], 2, "option '--deep' takes no value for 'verify'"),
    (["verify", "--deep", "extra"], 2, "unexpected argument 'extra' for 'verify'"),
    (["commit", "-m", "x", "--force=1"], 2, "option '--force' takes no value for 'commit'"),
    (["gc", "--prune-bookmarks=3"], 2, "option '--prune-bookmarks' takes no value for 'gc'"),
    (["gc", "--prune-bookmarks", "extra"], 2, "unexpected argument 'extra' for 'gc'"),
    # An unknown KEY or REV: exit 1, named.
    (["promote", "nokey"], 1, "no object 'nokey'"),
    (["merge", "nokey"], 1, "no object 'nokey'"),
    (["restore", "nokey"], 1, "no object 'nokey'"),
    (["drop", "nokey"], 1, "no object 'nokey'"),
    (["pull", "nokey"], 1, "no object 'nokey'"),
    (["restore", "-r", "nosuchrev"], 1, "-r nosuchrev: unknown revision 'nosuchrev'"),
    (["abandon", "nosuchrev"], 1, "unknown revision 'nosuchrev'"),
    (["abandon", "0" * 40], 1, "0" * 40),
    # A control character in an argument is printed escaped, never raw.
    (["restore", "-r", "HEAD\x1b[31m"], 1, r"-r HEAD\x1B[31m"),
    (["abandon", "HEAD\x1b]0;x\x07"], 1, r"HEAD\x1B]0;x\a"),
    (["drop", "no\nkey"], 2, r"invalid object key 'no\nkey'"),
]

# Every command of the issue that takes --plan FILE (and so --from-plan FILE).
PLANNING = {
    "promote": ["promote"],
    "merge": ["merge"],
    "restore": ["restore"],
    "drop": ["drop", "code"],
    "pull": ["pull"],
    "abandon": ["abandon", "HEAD"],
    "undo": ["undo"],
}
FROM_PLAN = {op: [argv[0]] for op, argv in PLANNING.items()}


@pytest.fixture
def landing(plates, code):
    """plates plus a git object `code`, committed, then forked by `new -b
    feat`, and one more commit so that abandon and undo have one."""
    ds = plates
    ds.tether("add", "code", code.root, "--kind", "git")
    ds.tether("commit", "-m", "one")
    ds.tether("new", "-b", "feat")
    ds.write("data/plates/plate3.csv", "well,value\nC1,1\n")
    ds.tether("commit", "-m", "two")
    ds.code = code
    return ds


def everything(ds):
    """All a command could write: the working tree, .tether/ (less the hash
    cache and the lock), HEAD, every ref, the index, the journal and the
    store's refs."""
    common = ds.root / ".git" / "tether"
    journal = sorted(str(p.relative_to(common)) + ":" + p.read_text()
                     for p in common.rglob("*.json")) if common.exists() else []
    return {
        "tree": ds.tree(".", skip=(".git", ".tether")),
        "tether": ds.tree(".tether"),
        "head": ds.head(),
        "symbolic": ds.git("symbolic-ref", "-q", "HEAD", check=False),
        "refs": ds.git("for-each-ref"),
        "git": ds.git_state(),
        "journal": journal,
        "store": ds.code.git("for-each-ref"),
    }


def one_error(p, rc, message):
    check_sanitizers(p)
    assert p.returncode == rc, (p.returncode, p.stderr)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("tether: error: ")]
    others = [ln for ln in p.stderr.splitlines() if ln and not ln.startswith(("tether: error: ", "hint: "))]
    assert len(errors) == 1 and not others, p.stderr
    assert message in errors[0], (message, p.stderr)
    # No raw control character reaches the terminal.
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", p.stderr), repr(p.stderr)
    return errors[0]


@pytest.mark.parametrize("argv,rc,message", USAGE_CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_landing_bad_input_names_the_argument_and_writes_nothing(landing, argv, rc, message):
    ds = landing
    (ds.root / "p.json").write_text("{}")  # a file --from-plan could read
    before = everything(ds)
    p = ds.tether(*argv, check_rc=None)
    one_error(p, rc, message)
    if rc == 2:
        if message.startswith(("unknown option", "unexpected argument", "missing", "option ")):
            assert "hint: see 'tether " in p.stderr, p.stderr
    assert p.stdout == ""
    assert everything(ds) == before


@pytest.mark.parametrize("op", sorted(PLANNING))
def test_plan_into_a_missing_directory_is_refused_and_not_created(landing, tmp_path, op):
    ds = landing
    missing = tmp_path / "nonexistent-dir"
    before = everything(ds)
    p = ds.tether(*PLANNING[op], "--plan", str(missing / "p.json"), check_rc=None)
    one_error(p, 2, f"--plan {missing}/p.json: the directory {missing} does not exist")
    assert not missing.exists()
    assert everything(ds) == before


def gc_plan(ds, tmp_path):
    path = tmp_path / "gc-plan.json"
    ds.tether("gc", "--plan", str(path))
    return path


# What each --from-plan must refuse: (name, how to make the file, rc, message)
def bad_plans(ds, tmp_path, op):
    d = tmp_path / "plans"
    d.mkdir(exist_ok=True)
    gc = json.loads(gc_plan(ds, tmp_path).read_text())
    yield "not-json", "#!/bin/sh\nrm -rf /\n", 2, "plan "
    yield "truncated", json.dumps(gc)[:40], 2, "plan "
    yield "an-array", "[1, 2, 3]", 2, "plan "
    yield "empty", "", 2, "plan "
    yield "other-op", json.dumps(gc), 3, f"plan is for `gc`, not `{op}`"
    other = dict(gc, op=op, dataset="0" * 32)
    yield "other-dataset", json.dumps(other), 3, "plan is for dataset " + "0" * 32
    yield "future-version", json.dumps(dict(gc, op=op, tether_plan=99)), 3, "unsupported plan version 99"
    yield "version-string", json.dumps(dict(gc, op=op, tether_plan="1")), None, "plan"
    yield "op-number", json.dumps(dict(gc, op=7)), None, "plan"
    yield "actions-string", json.dumps(dict(gc, op=op, actions="rm -rf")), None, "plan"
    yield "preconditions-null", json.dumps(dict(gc, op=op, preconditions=None)), None, "plan"


def own_plan(ds, tmp_path, op):
    """The command's own plan, saved now (None when it has nothing to plan).
    pull's plan moves objects at a detached `at` on the trunk: one is made
    there first (an older commit of the code repository)."""
    path = tmp_path / f"{op}-own.json"
    if op == "pull":
        ds.tether("new", "main")
        first = ds.code.git("rev-list", "--max-parents=0", "HEAD").strip()
        ds.tether("add", "old/code", ds.code.root, "--kind", "git", "--at", first)
        ds.tether("commit", "-m", "a detached object")
    p = ds.tether(*PLANNING[op], "--plan", str(path), check_rc=None)
    return json.loads(path.read_text()) if p.returncode == 0 and path.exists() else None


def mangled(plan):
    """The command's own plan with each field of its first action (and of
    its preconditions) set in turn to something of the wrong type or a
    name of another dataset's, or climbing out: what a plan file handed
    over by someone else could hold."""
    actions = plan.get("actions") or []
    pre = plan.get("preconditions") or {}
    bad_values = [3, None, [], {"x": 1}, "../../../../etc/passwd", "tether.ws.00000000.x\n\x1b[2J",
                  "0" * 40]
    for i, a in enumerate(actions[:1]):
        if not isinstance(a, dict):
            continue
        for field in sorted(a):
            for v in bad_values:
                if a[field] == v:
                    continue
                yield f"actions[{i}].{field}={v!r}", dict(plan, actions=[dict(a, **{field: v})] + actions[1:])
    for field in sorted(pre):
        for v in bad_values:
            if pre[field] == v:
                continue
            yield f"preconditions.{field}={v!r}", dict(plan, preconditions=dict(pre, **{field: v}))
    for field in sorted(set(plan) - {"tether_plan", "op", "dataset", "created", "preconditions", "actions"}):
        for v in bad_values:
            if plan[field] == v:
                continue
            yield f"{field}={v!r}", dict(plan, **{field: v})


@pytest.mark.parametrize("op", sorted(FROM_PLAN))
def test_from_plan_of_what_is_no_plan_for_it_is_refused(landing, tmp_path, op):
    ds = landing
    before = everything(ds)
    for name, text, rc, message in bad_plans(ds, tmp_path, op):
        path = tmp_path / "plans" / f"{name}.json"
        path.write_text(text)
        for extra in ([], ["--dry-run"]):
            p = ds.tether(*FROM_PLAN[op], "--from-plan", str(path), *extra, check_rc=None)
            assert p.returncode in ((2, 3) if rc is None else (rc,)), (name, extra, p.returncode, p.stderr)
            one_error(p, p.returncode, message)
            assert everything(ds) == before, (name, extra)


@pytest.mark.parametrize("op", sorted(FROM_PLAN))
def test_a_plan_with_fields_of_the_wrong_type_is_refused(landing, tmp_path, op):
    """Every field of the command's own plan, bent: refused (2: malformed,
    3: stale or not this dataset's) with one line, or, where the field is
    one tether only reports, run as planned; never a crash, a raw control
    character, or a write the plan did not review."""
    ds = landing
    plan = own_plan(ds, tmp_path, op)
    if plan is None:
        pytest.skip(f"{op} has nothing to plan here")
    before = everything(ds)
    path = tmp_path / "bent.json"
    accepted = []
    for name, bent in mangled(plan):
        path.write_text(json.dumps(bent))
        p = ds.tether(*FROM_PLAN[op], "--from-plan", str(path), "--dry-run", check_rc=None)
        check_sanitizers(p)
        assert p.returncode in (0, 2, 3), (name, p.returncode, p.stderr)
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", p.stdout + p.stderr), (name, repr(p.stdout + p.stderr))
        if p.returncode:
            one_error(p, p.returncode, "plan")
        else:
            accepted.append(name)
        assert everything(ds) == before, name
    # A field that names where to act is checked: a key, a branch or a commit.
    for name in accepted:
        assert not re.search(r"\.(key|branch|commit|entry)=", name), f"{op} accepted {name}"


def test_upgrade_of_a_layout_far_in_the_future_or_negative(landing):
    ds = landing
    cfg = ds.p("tether.toml")
    text = cfg.read_text()
    for layout, rc, message in (("999999", 3, "layout 999999 is newer than this tether understands"),
                                ("99999999999999999999999", 1, "layout"),
                                ("-1", 1, "layout"), ('"1"', 1, "layout"), ("1.5", 1, "layout")):
        cfg.write_text(re.sub(r"layout = \d+", f"layout = {layout}", text)
                       if "layout = " in text else text.replace("[dataset]\n", f"[dataset]\nlayout = {layout}\n"))
        before = everything(ds)
        for argv in (["upgrade"], ["upgrade", "--dry-run"], ["upgrade", "--all-history", "--yes"], ["promote"],
                     ["merge"], ["restore"], ["drop", "code"], ["pull"], ["abandon", "HEAD"], ["undo"],
                     ["new", "--adopt"], ["verify", "--deep"], ["commit", "-m", "x", "--force"],
                     ["gc", "--prune-bookmarks"]):
            p = ds.tether(*argv, check_rc=None)
            one_error(p, rc, message)
            assert str(cfg) in p.stderr, (argv, p.stderr)
            assert everything(ds) == before, argv
    cfg.write_text(text)
