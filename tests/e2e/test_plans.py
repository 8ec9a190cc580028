"""Plans for commit, new and gc: --dry-run, --plan FILE, --from-plan FILE.

A dry run and --plan write nothing but the plan file; --from-plan re-checks
the plan and performs exactly its actions, refusing (exit 3, nothing
written) when anything it planned on moved. The objects are a mutable
directory and an immutable file (the `plates` fixture) and, for pins and
forks, a second git repository tracked with the git backend.
"""
import json
import re
import shutil

import pytest

from conftest import HEX32, HEX64, Repo, cjson, expected_dir_state, expected_file_state, expected_pin, sha256_bytes

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


# -- fixtures and helpers ---------------------------------------------------

@pytest.fixture
def mixed(plates, code):
    """`plates` plus `code`, a git object (pinned by tags, forked by branches)."""
    p = plates.tether("add", "code", code.root, "--kind", "git", check_rc=None)
    if p.returncode != 0 and "kind" in p.stderr and "git" in p.stderr:
        pytest.skip("this build has no git backend")
    assert p.returncode == 0, p.stderr
    return plates


def everything(r, *stores):
    """All a command could write: the working tree (data included), .tether/
    (but the hash cache and the lock file), HEAD, every ref, the index and
    the refs of the stores (git objects) it might pin or fork in."""
    return {
        "tree": r.tree(".", skip=(".git", ".tether")),
        "tether": r.tree(".tether"),
        "head": r.head(),
        "symbolic": r.git("symbolic-ref", "-q", "HEAD", check=False),
        "refs": r.git("for-each-ref"),
        "git": r.git_state(),
        "stores": [s.git("for-each-ref") for s in stores],
    }


def twin(r, tmp_path, name="twin"):
    """A copy of the repository, dataset and all. Its manifests name the
    same data (locators are absolute), so it plans the same pins."""
    dst = tmp_path / name
    shutil.copytree(r.root, dst, symlinks=True)
    return Repo(dst, r.home)


def load(path):
    return json.loads(path.read_text())


def save(path, plan):
    path.write_text(json.dumps(plan, indent=2))


def refused(r, *args, match):
    p = r.tether(*args, check_rc=3)
    assert re.search(match, p.stderr), p.stderr
    assert p.stderr.count("\n") == 1, "a refusal is one line"
    assert p.stdout == ""
    return p


def tags(store):
    return sorted(store.git("tag", "--list").split())


def branches(store):
    return sorted(store.git("for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def code_change(code, text):
    code.write("README", text)
    return code.git_commit_all(text.strip(), "README")


def orphan_pin(mixed, code):
    """A pin of `code` that no commit names any more: committed on a side
    branch that is then deleted. Returns (pin, the side commit)."""
    mixed.tether("commit", "-m", "baseline")
    mixed.git("checkout", "-q", "-b", "side")
    code_change(code, "code v2\n")
    r = mixed.tj("commit", "-m", "code v2")
    pin = next(o["pin"] for o in r["objects"] if o["key"] == "code")
    side = mixed.head()
    mixed.git("checkout", "-q", "main")
    mixed.git("branch", "-q", "-D", "side")
    code.git("reset", "-q", "--hard", "HEAD~1")  # back to the state main records
    return pin, side


# -- commit -------------------------------------------------------------------

def test_commit_dry_run_reports_the_exact_plan_and_writes_nothing(plates):
    before = everything(plates)
    r = plates.tj("commit", "-m", "baseline", "--dry-run")
    assert everything(plates) == before
    assert r["dry_run"] is True and r["commit"] is None and r["plan_file"] is None
    plan = r["plan"]
    did = plates.dataset_id()
    assert plan["tether_plan"] == 1 and plan["op"] == "commit" and plan["dataset"] == did
    assert HEX32.match(plan["dataset"]) and ISO_UTC.match(plan["created"])
    assert plan["message"] == "baseline"
    pre = plan["preconditions"]
    assert pre["head"] is None
    plates_dir, samples = plates.p("data/plates"), plates.p("data/samples.csv")
    states = {"raw/plates": expected_dir_state(plates_dir), "raw/samples": expected_file_state(samples)}
    assert [o["key"] for o in pre["objects"]] == ["raw/plates", "raw/samples"]
    for o in pre["objects"]:
        assert o["manifest"] == sha256_bytes(plates.manifest_path(o["key"]).read_bytes())
        assert o["state"] == states[o["key"]]
        assert o["digest"] == sha256_bytes(cjson(o["state"]).encode()) and HEX64.match(o["digest"])
    uris = {"raw/plates": str(plates_dir), "raw/samples": str(samples)}
    assert plan["actions"] == [
        {"key": k, "action": "record", "recoverable": False,
         "pin": expected_pin(did, "file", {"uri": uris[k]}, states[k])}
        for k in ("raw/plates", "raw/samples")
    ]
    assert "objects" not in r  # nothing was done to any object


def test_commit_dry_run_text_is_one_line_per_action(plates):
    p = plates.tether("commit", "-m", "baseline\n\nbody", "--dry-run")
    lines = p.stdout.splitlines()
    assert lines[0] == 'plan: commit "baseline" on an unborn branch'
    assert re.match(r"^  record    raw/plates pin [0-9a-f]{8}\.[0-9a-f]{16} \(not recoverable\)$", lines[1])
    assert re.match(r"^  record    raw/samples pin ", lines[2])
    assert lines[3:] == ["dry run: nothing written"]
    plates.tether("commit", "-m", "baseline")
    p = plates.tether("commit", "-m", "again", "--dry-run")
    assert p.stdout.splitlines()[0] == f'plan: commit "again" on {plates.head()[:12]}'
    assert p.stdout.splitlines()[1].startswith("  unchanged raw/plates pin ")


def test_commit_dry_run_with_a_git_object_pins_nothing(mixed, code):
    before = everything(mixed, code)
    r = mixed.tj("commit", "-m", "baseline", "--dry-run")
    assert everything(mixed, code) == before
    assert tags(code) == []
    actions = {a["key"]: a for a in r["plan"]["actions"]}
    assert actions["code"]["action"] == "pin" and actions["code"]["recoverable"] is True
    code_state = next(o for o in r["plan"]["preconditions"]["objects"] if o["key"] == "code")
    assert code_state["state"]["sha"] == code.head()


def test_commit_plan_saves_the_plan_and_writes_nothing_else(mixed, code, tmp_path):
    plan_file = tmp_path / "plans" / "commit.json"
    plan_file.parent.mkdir()  # --plan never creates a directory (test_hostile_clone.py)
    before = everything(mixed, code)
    r = mixed.tj("commit", "-m", "baseline", "--plan", plan_file)
    assert everything(mixed, code) == before
    assert r["dry_run"] is True and r["plan_file"] == str(plan_file)
    text = plan_file.read_text()
    assert text.endswith("}\n")
    assert json.loads(text) == r["plan"]
    p = mixed.tether("commit", "-m", "baseline", "--plan", plan_file)
    assert p.stdout.splitlines()[-1] == (f"plan saved to {plan_file}; apply it with "
                                         f"`tether commit --from-plan {plan_file}`")


def test_commit_from_plan_gives_the_direct_result(mixed, code, tmp_path):
    other = twin(mixed, tmp_path)
    plan_file = tmp_path / "commit.json"
    plan = mixed.tj("commit", "-m", "baseline", "--plan", plan_file)["plan"]
    applied = mixed.tj("commit", "--from-plan", plan_file)
    direct = other.tj("commit", "-m", "baseline")
    assert applied["dry_run"] is False and applied["commit"] == mixed.head()
    assert applied["message"] == "baseline"
    summary = [(o["key"], o["action"], o["pin"]) for o in applied["objects"]]
    assert summary == [(o["key"], o["action"], o["pin"]) for o in direct["objects"]]
    done = {"pin": "pinned", "record": "recorded", "unchanged": "unchanged"}
    assert summary == [(a["key"], done[a["action"]], a["pin"]) for a in plan["actions"]]
    # The same manifests, listings and configuration: the same tree.
    assert mixed.tree(".tether/objects") == other.tree(".tether/objects")
    assert mixed.git("rev-parse", "HEAD^{tree}") == other.git("rev-parse", "HEAD^{tree}")
    code_pin = next(a["pin"] for a in plan["actions"] if a["key"] == "code")
    assert tags(code) == [f"tether.{code_pin}"]
    assert mixed.manifest("code")["pin"] == code_pin
    mixed.tether("verify")


def test_commit_from_plan_after_a_change_and_with_another_message(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    code_change(code, "code v2\n")
    plan_file = tmp_path / "commit.json"
    plan = mixed.tj("commit", "-m", "planned message", "--plan", plan_file)["plan"]
    actions = {a["key"]: a["action"] for a in plan["actions"]}
    assert actions == {"code": "pin", "raw/plates": "unchanged", "raw/samples": "unchanged"}
    r = mixed.tj("commit", "--from-plan", plan_file, "-m", "given message")
    assert r["message"] == "given message"
    assert mixed.git("log", "-1", "--format=%s").strip() == "given message"
    assert {o["key"]: o["action"] for o in r["objects"]} == {
        "code": "pinned", "raw/plates": "unchanged", "raw/samples": "unchanged"}
    assert len(tags(code)) == 2


def test_commit_from_plan_with_dry_run_only_checks(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "baseline", "--plan", plan_file)
    before = everything(plates)
    r = plates.tj("commit", "--from-plan", plan_file, "--dry-run")
    assert r["dry_run"] is True and r["plan"]["actions"] == load(plan_file)["actions"]
    assert everything(plates) == before


def test_commit_refuses_a_plan_whose_data_changed(mixed, code, tmp_path):
    plan_file = tmp_path / "commit.json"
    plan = mixed.tj("commit", "-m", "baseline", "--plan", plan_file)["plan"]
    was = next(o["digest"] for o in plan["preconditions"]["objects"] if o["key"] == "raw/plates")
    mixed.write("data/plates/plate3.csv", "well,value\nC1,0.3\n")
    now = sha256_bytes(cjson(expected_dir_state(mixed.p("data/plates"))).encode())
    before = everything(mixed, code)
    refused(mixed, "commit", "--from-plan", plan_file,
            match=rf"^tether: error: stale plan: raw/plates changed since the plan "
                  rf"\(digest {was[:8]}… → {now[:8]}…\)$")
    assert everything(mixed, code) == before
    assert tags(code) == [] and not (mixed.root / ".tether" / "journal").exists()


def test_commit_refuses_a_plan_whose_git_object_moved(mixed, code, tmp_path):
    plan_file = tmp_path / "commit.json"
    mixed.tether("commit", "-m", "baseline", "--plan", plan_file)
    code_change(code, "code v2\n")
    before = everything(mixed, code)
    refused(mixed, "commit", "--from-plan", plan_file, match=r"stale plan: code changed since the plan \(digest ")
    assert everything(mixed, code) == before


def test_commit_refuses_a_plan_when_head_moved(plates, tmp_path):
    plates.tether("commit", "-m", "baseline")
    first = plates.head()
    plates.write("data/plates/plate3.csv", "x\n")
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "plate 3", "--plan", plan_file)
    plates.write("README", "hello\n")
    second = plates.git_commit_all("readme", "README")
    before = everything(plates)
    refused(plates, "commit", "--from-plan", plan_file,
            match=rf"^tether: error: stale plan: HEAD moved from {first[:12]} to {second[:12]}$")
    assert everything(plates) == before


def test_commit_refuses_a_plan_when_the_first_commit_landed_meanwhile(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "baseline", "--plan", plan_file)
    plates.tether("commit", "-m", "baseline")
    refused(plates, "commit", "--from-plan", plan_file, match=r"stale plan: HEAD moved from \(no commit\) to ")


def test_commit_refuses_a_plan_when_a_manifest_changed_or_an_object_came(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "baseline", "--plan", plan_file)
    saved = plates.manifest_path("raw/plates").read_bytes()
    plates.manifest_path("raw/plates").write_bytes(saved + b"\n")
    refused(plates, "commit", "--from-plan", plan_file,
            match=r"stale plan: raw/plates's manifest changed since the plan \(manifest [0-9a-f]{8}… → ")
    plates.manifest_path("raw/plates").write_bytes(saved)
    plates.write("data/more.csv", "m\n")
    plates.tether("add", "raw/more", "data/more.csv", "--kind", "file")
    refused(plates, "commit", "--from-plan", plan_file, match=r"stale plan: raw/more was added since the plan$")
    plates.manifest_path("raw/more").unlink()
    plates.manifest_path("raw/samples").unlink()
    refused(plates, "commit", "--from-plan", plan_file, match=r"stale plan: raw/samples was removed since the plan$")


def test_commit_refuses_edited_actions(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plan = plates.tj("commit", "-m", "baseline", "--plan", plan_file)["plan"]
    plan["actions"][0]["action"] = "pin"
    save(plan_file, plan)
    before = everything(plates)
    refused(plates, "commit", "--from-plan", plan_file,
            match=r"stale plan: raw/plates: the plan says `pin [0-9a-f.]+`; `commit` would now do `record ")
    assert everything(plates) == before


def test_commit_needs_a_message_from_somewhere(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plan = plates.tj("commit", "-m", "baseline", "--plan", plan_file)["plan"]
    del plan["message"]
    save(plan_file, plan)
    p = plates.tether("commit", "--from-plan", plan_file, check_rc=2)
    assert "no commit message" in p.stderr
    p = plates.tether("commit", check_rc=2)
    assert "missing option -m MSG" in p.stderr


def test_plan_and_from_plan_exclude_each_other(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "baseline", "--plan", plan_file)
    p = plates.tether("commit", "--from-plan", plan_file, "--plan", tmp_path / "x.json", check_rc=2)
    assert "cannot be combined" in p.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_plan_holds_no_secrets(plates, tmp_path):
    plates.write(".tether/secrets.toml", '[objects."raw/plates"]\nsecret_access_key = "SEKRIT-0451"\n')
    for args in (("commit", "-m", "baseline"), ("gc",)):
        plan_file = tmp_path / f"{args[0]}.json"
        plates.tether(*args, "--plan", plan_file)
        assert "SEKRIT" not in plan_file.read_text()
        plates.tether("commit", "-m", "baseline")


# -- new ----------------------------------------------------------------------

def test_new_dry_run_reports_the_plan_and_writes_nothing(mixed, code):
    mixed.tether("commit", "-m", "baseline")
    before = everything(mixed, code)
    r = mixed.tj("new", "-b", "feat", "--dry-run")
    assert everything(mixed, code) == before
    assert not (mixed.root / ".tether" / "workspace.toml").exists()
    did = mixed.dataset_id()
    plan = r["plan"]
    assert r["dry_run"] is True and r["commit"] == mixed.head() and r["bookmark"] == "feat"
    assert plan["op"] == "new" and plan["dataset"] == did and plan["bookmark"] == "feat"
    assert plan["switch"] == {"to": None, "create": "feat"}
    pre = plan["preconditions"]
    assert pre["commit"] == mixed.head() and pre["ref"] == "HEAD"
    assert [o["key"] for o in pre["objects"]] == ["code"]
    assert pre["objects"][0]["state"] == {"sha": code.head()}
    assert pre["objects"][0]["pin"] == mixed.manifest("code")["pin"]
    # A fork is conditional: tether never made this branch here, so it must
    # not exist ("expect": null).
    assert plan["actions"] == [
        {"key": "code", "action": "fork", "branch": f"tether.ws.{did[:8]}.feat", "expect": None},
        {"key": "raw/plates", "action": "skip", "detail": "not forkable"},
        {"key": "raw/samples", "action": "skip", "detail": "not forkable"},
    ]
    p = mixed.tether("new", "-b", "feat", "--dry-run")
    assert p.stdout.splitlines() == [
        f"plan: new on feat at {mixed.head()[:12]} (creating branch feat)",
        f"  fork      code -> tether.ws.{did[:8]}.feat (if the branch does not exist)",
        "  skip      raw/plates (not forkable)",
        "  skip      raw/samples (not forkable)",
        "dry run: nothing written",
    ]


def test_new_from_plan_gives_the_direct_result(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    other = twin(mixed, tmp_path)
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "-b", "feat", "--plan", plan_file)
    assert branches(code) == ["main"]
    did = mixed.dataset_id()
    working = f"tether.ws.{did[:8]}.feat"
    direct = other.tj("new", "-b", "feat")
    forked_at = code.git("rev-parse", working).strip()
    code.git("branch", "-q", "-D", working)  # the twins share the store: make room
    applied = mixed.tj("new", "--from-plan", plan_file)
    for k in ("commit", "bookmark", "objects"):
        assert applied[k] == direct[k]
    assert applied["dry_run"] is False
    assert [o["action"] for o in applied["objects"]] == ["forked", "skipped", "skipped"]
    assert mixed.git("symbolic-ref", "HEAD").strip() == "refs/heads/feat"
    assert branches(code) == ["main", working]
    assert code.git("rev-parse", working).strip() == forked_at == code.head()
    ws_a = (mixed.root / ".tether" / "workspace.toml").read_text()
    ws_b = (other.root / ".tether" / "workspace.toml").read_text()
    strip = lambda t: re.sub(r'workspace_id = "[0-9a-f]+"', "", t)
    assert strip(ws_a) == strip(ws_b) and 'bookmark = "feat"' in ws_a


def test_new_from_plan_checks_a_local_branch_out_by_name(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    mixed.git("checkout", "-q", "-b", "side")
    plan_file = tmp_path / "new.json"
    plan = mixed.tj("new", "main", "--plan", plan_file)["plan"]
    assert plan["preconditions"]["ref"] == "refs/heads/main" and plan["switch"]["to"] == "main"
    assert plan["bookmark"] == "main"
    r = mixed.tj("new", "--from-plan", plan_file)
    assert r["bookmark"] == "main"
    assert mixed.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"


def test_new_from_plan_to_a_commit_detaches(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    first = mixed.head()
    code_change(code, "code v2\n")
    mixed.tether("commit", "-m", "code v2")
    plan_file = tmp_path / "new.json"
    plan = mixed.tj("new", "HEAD~1", "--plan", plan_file)["plan"]
    assert plan["preconditions"]["ref"] is None and plan["switch"]["to"] == first
    assert plan["bookmark"] == f"detached-{first[:12]}"
    # The plan names the commit: a rev resolving elsewhere now changes nothing.
    mixed.write("README", "r\n")
    mixed.git_commit_all("readme", "README")
    r = mixed.tj("new", "--from-plan", plan_file)
    assert r["commit"] == first and mixed.head() == first
    assert mixed.git("symbolic-ref", "-q", "HEAD", check=False) == ""


def test_new_refuses_a_plan_when_head_moved(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    first = mixed.head()
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "-b", "feat", "--plan", plan_file)
    code_change(code, "code v2\n")
    mixed.tether("commit", "-m", "code v2")
    before = everything(mixed, code)
    refused(mixed, "new", "--from-plan", plan_file,
            match=rf"^tether: error: stale plan: HEAD moved from {first[:12]} to {mixed.head()[:12]}$")
    assert everything(mixed, code) == before
    assert branches(code) == ["main"]


def test_new_refuses_a_plan_when_its_branch_moved(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    first = mixed.head()
    mixed.git("checkout", "-q", "-b", "side")
    mixed.write("README", "r\n")
    second = mixed.git_commit_all("readme", "README")
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "main", "--plan", plan_file)
    mixed.git("branch", "-f", "main", "side")
    before = everything(mixed, code)
    refused(mixed, "new", "--from-plan", plan_file,
            match=rf"stale plan: branch main moved from {first[:12]} to {second[:12]}$")
    assert everything(mixed, code) == before


def test_new_refuses_a_plan_when_the_bookmark_changed(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "--plan", plan_file)
    mixed.git("checkout", "-q", "-b", "other")  # the same commit, another branch
    refused(mixed, "new", "--from-plan", plan_file, match=r"stale plan: the bookmark is now other, not main$")


def test_new_refuses_a_plan_whose_forks_changed(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    plan = mixed.tj("new", "-b", "feat", "--plan", plan_file)["plan"]
    plan["actions"][0] = {"key": "code", "action": "skip", "detail": "write = none"}
    save(plan_file, plan)
    before = everything(mixed, code)
    refused(mixed, "new", "--from-plan", plan_file,
            match=r"stale plan: code: the plan says `skip`; `new` would now do `fork tether\.ws\.")
    assert everything(mixed, code) == before


def test_new_refuses_a_branch_that_exists_while_planning(mixed, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "-b", "feat", "--plan", plan_file)
    mixed.git("branch", "feat")
    refused(mixed, "new", "-b", "feat", "--dry-run", match=r"branch 'feat' already exists")
    refused(mixed, "new", "--from-plan", plan_file, match=r"branch 'feat' already exists")


def test_new_from_plan_takes_no_rev(mixed, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "--plan", plan_file)
    for extra in (("main",), ("-b", "x")):
        p = mixed.tether("new", "--from-plan", plan_file, *extra, check_rc=2)
        assert "--from-plan takes no REV" in p.stderr


def test_new_plans_with_file_objects_only(plates, tmp_path):
    plates.tether("commit", "-m", "baseline")
    before = everything(plates)
    plan_file = tmp_path / "new.json"
    plan = plates.tj("new", "-b", "feat", "--plan", plan_file)["plan"]
    assert everything(plates) == before
    assert [a["action"] for a in plan["actions"]] == ["skip", "skip"]
    assert plan["preconditions"]["objects"] == []
    r = plates.tj("new", "--from-plan", plan_file)
    assert [o["action"] for o in r["objects"]] == ["skipped", "skipped"]
    assert plates.git("symbolic-ref", "HEAD").strip() == "refs/heads/feat"


# -- gc -----------------------------------------------------------------------

def test_gc_dry_run_reports_the_plan_and_writes_nothing(mixed, code):
    pin, _ = orphan_pin(mixed, code)
    before = everything(mixed, code)
    r = mixed.tj("gc", "--dry-run")
    assert everything(mixed, code) == before
    assert f"tether.{pin}" in tags(code)
    plan = r["plan"]
    assert plan["op"] == "gc" and plan["dataset"] == mixed.dataset_id()
    assert plan["preconditions"] == {"unreferenced": {"pins": [pin], "listings": []}}
    assert plan["actions"] == [{"action": "release", "kind": "git", "identity": {"path": str(code.root)},
                                "pin": pin}]


def test_gc_from_plan_gives_the_direct_result(mixed, code, tmp_path):
    pin, _ = orphan_pin(mixed, code)
    first = mixed.manifest("raw/plates")["listing"]
    mixed.write("data/plates/plate3.csv", "x\n")
    mixed.tether("commit", "-m", "plate 3")
    direct = mixed.tj("gc")  # what a direct run releases
    plan_file = tmp_path / "gc.json"
    before = everything(mixed, code)
    plan = mixed.tj("gc", "--plan", plan_file)["plan"]
    assert everything(mixed, code) == before
    assert load(plan_file) == plan
    assert [a["pin"] for a in plan["actions"] if a["action"] == "release"] == [r["pin"] for r in direct["release"]]
    assert [a["listing"] for a in plan["actions"] if a["action"] == "remove-listing"] == direct["listings"] == [first]
    r = mixed.tj("gc", "--from-plan", plan_file)
    assert r["dry_run"] is False and r["skipped"] == [] and r["errors"] == []
    assert [(x["pin"], x["done"]) for x in r["release"]] == [(pin, True)]
    assert r["listings"] == [first]
    assert f"tether.{pin}" not in tags(code) and len(tags(code)) == 1
    assert not mixed.listing_path(first).exists()
    after = mixed.tj("gc")
    assert after["release"] == [] and after["listings"] == []
    mixed.tether("verify")


def test_gc_from_plan_releases_nothing_it_did_not_plan(mixed, code, tmp_path):
    pin, _ = orphan_pin(mixed, code)
    plan_file = tmp_path / "gc.json"
    mixed.tether("gc", "--plan", plan_file)
    # Another pin becomes unreferenced after the plan: it stays.
    mixed.git("checkout", "-q", "-b", "side2")
    code_change(code, "code v3\n")
    later = next(o["pin"] for o in mixed.tj("commit", "-m", "v3")["objects"] if o["key"] == "code")
    mixed.git("checkout", "-q", "main")
    mixed.git("branch", "-q", "-D", "side2")
    code.git("reset", "-q", "--hard", "HEAD~1")
    r = mixed.tj("gc", "--from-plan", plan_file)
    assert [x["pin"] for x in r["release"]] == [pin]
    assert f"tether.{later}" in tags(code)


def test_gc_refuses_a_plan_whose_pin_is_referenced_again(mixed, code, tmp_path):
    pin, side = orphan_pin(mixed, code)
    first = mixed.manifest("raw/plates")["listing"]
    mixed.write("data/plates/plate3.csv", "x\n")
    mixed.tether("commit", "-m", "plate 3")
    plan_file = tmp_path / "gc.json"
    mixed.tether("gc", "--plan", plan_file)
    mixed.git("branch", "side", side)  # the commit naming the pin is back
    before = everything(mixed, code)
    refused(mixed, "gc", "--from-plan", plan_file,
            match=rf"^tether: error: stale plan: pin {re.escape(pin)} is referenced again since the plan")
    assert everything(mixed, code) == before
    assert f"tether.{pin}" in tags(code) and mixed.listing_path(first).exists()


def test_gc_from_plan_skips_what_is_already_gone(mixed, code, tmp_path):
    pin, _ = orphan_pin(mixed, code)
    plan_file = tmp_path / "gc.json"
    mixed.tether("gc", "--plan", plan_file)
    code.git("tag", "-d", f"tether.{pin}")
    r = mixed.tj("gc", "--from-plan", plan_file)
    assert r["release"] == [] and r["skipped"] == [{"pin": pin, "reason": "already released"}]
    p = mixed.tether("gc", "--from-plan", plan_file)
    assert f"skipped        pin {pin} (already released)" in p.stdout


def test_gc_from_plan_with_file_objects_only(plates, tmp_path):
    plates.tether("commit", "-m", "baseline")
    first = plates.manifest("raw/plates")["listing"]
    plates.write("data/plates/plate3.csv", "x\n")
    plates.tether("commit", "-m", "plate 3")
    plan_file = tmp_path / "gc.json"
    before = everything(plates)
    plates.tether("gc", "--plan", plan_file)
    assert everything(plates) == before
    plates.tether("gc", "--from-plan", plan_file, "--dry-run")
    assert plates.listing_path(first).exists()
    r = plates.tj("gc", "--from-plan", plan_file)
    assert r["listings"] == [first] and not plates.listing_path(first).exists()
    r = plates.tj("gc", "--from-plan", plan_file)
    assert r["listings"] == [] and r["skipped"] == [{"listing": first, "reason": "already removed"}]


def test_gc_plan_cannot_be_combined_with_no_dry_run(plates, tmp_path):
    p = plates.tether("gc", "--plan", tmp_path / "gc.json", "--no-dry-run", check_rc=2)
    assert "--plan only plans" in p.stderr
    assert not (tmp_path / "gc.json").exists()


# -- what every op refuses ---------------------------------------------------

def make_plan(r, op, plan_file):
    if op == "commit":
        r.tether("commit", "-m", "baseline", "--plan", plan_file)
    elif op == "new":
        r.tether("commit", "-m", "baseline")
        r.tether("new", "--plan", plan_file)
    else:
        r.tether("commit", "-m", "baseline")  # gc walks history: it needs a commit
        r.tether("gc", "--plan", plan_file)


def apply_args(op, plan_file):
    return (op, "--from-plan", plan_file)


OPS = ["commit", "new", "gc"]


@pytest.mark.parametrize("op", OPS)
def test_a_plan_for_another_dataset_is_refused(op, plates, new_repo, tmp_path):
    other = new_repo("other")
    other.tether("init")
    other.write("x.csv", "x\n")
    other.tether("add", "raw/x", "x.csv", "--kind", "file")
    plan_file = tmp_path / "other.json"
    make_plan(other, op, plan_file)
    if op == "new":
        plates.tether("commit", "-m", "baseline")
    before = everything(plates)
    refused(plates, *apply_args(op, plan_file),
            match=rf"^tether: error: plan is for dataset {other.dataset_id()}; "
                  rf"this dataset is {plates.dataset_id()}$")
    assert everything(plates) == before


@pytest.mark.parametrize("op", OPS)
def test_a_plan_for_another_op_is_refused(op, plates, tmp_path):
    other_op = "gc" if op != "gc" else "commit"
    plan_file = tmp_path / "plan.json"
    make_plan(plates, other_op, plan_file)
    if op == "new" and plates.head() is None:
        plates.tether("commit", "-m", "baseline")
    before = everything(plates)
    refused(plates, *apply_args(op, plan_file), match=rf"^tether: error: plan is for `{other_op}`, not `{op}`$")
    assert everything(plates) == before


@pytest.mark.parametrize("op", OPS)
def test_an_unsupported_plan_version_is_refused(op, plates, tmp_path):
    plan_file = tmp_path / "plan.json"
    make_plan(plates, op, plan_file)
    plan = load(plan_file)
    plan["tether_plan"] = 2
    save(plan_file, plan)
    before = everything(plates)
    refused(plates, *apply_args(op, plan_file), match=r"^tether: error: unsupported plan version 2 ")
    assert everything(plates) == before


@pytest.mark.parametrize("op", OPS)
def test_a_malformed_plan_file_is_a_usage_error_naming_it(op, plates, tmp_path):
    plan_file = tmp_path / "bad.json"
    plan_file.write_text('{"tether_plan": 1,\n  "op": oops}\n')
    before = everything(plates)
    p = plates.tether(*apply_args(op, plan_file), check_rc=2)
    assert re.match(rf"^tether: error: plan {re.escape(str(plan_file))}:2:\d+: ", p.stderr), p.stderr
    assert p.stderr.count("\n") == 1 and p.stdout == ""
    p = plates.tether(*apply_args(op, tmp_path / "missing.json"), check_rc=2)
    assert "missing.json" in p.stderr
    plan_file.write_text("[1, 2]\n")
    p = plates.tether(*apply_args(op, plan_file), check_rc=2)
    assert "not a tether plan" in p.stderr
    plan_file.write_text('{"op": "commit"}\n')
    p = plates.tether(*apply_args(op, plan_file), check_rc=2)
    assert "malformed plan" in p.stderr
    assert everything(plates) == before


def malformed(r, op, plan_file, field):
    """Exit 2, one line naming the plan file and the field, nothing written."""
    before = everything(r)
    p = r.tether(*apply_args(op, plan_file), check_rc=2)
    assert p.stderr.startswith(f"tether: error: malformed plan {plan_file}: {field}: "), p.stderr
    assert p.stderr.count("\n") == 1 and p.stdout == ""
    assert everything(r) == before
    return p


def test_gc_plan_naming_a_path_as_a_listing_is_malformed(plates, tmp_path):
    plates.tether("commit", "-m", "baseline")
    plates.write("data/plates/plate3.csv", "x\n")
    plates.tether("commit", "-m", "plate 3")
    plan_file = tmp_path / "gc.json"
    plates.tether("gc", "--plan", plan_file)
    plan = load(plan_file)
    good = json.dumps(plan)
    plan["actions"].append({"action": "remove-listing", "listing": "../../tether.toml"})
    save(plan_file, plan)
    p = malformed(plates, "gc", plan_file, "actions[1].listing")
    assert '"../../tether.toml" is not a listing hash' in p.stderr
    assert (plates.root / "tether.toml").exists()
    for bad_action, field in (({"action": "release", "kind": "git", "pin": "../x"}, "actions[1].pin"),
                              ({"action": "release", "kind": "../../k", "pin": "x"}, "actions[1].kind"),
                              ({"action": "remove-listing", "listing": "A" * 64}, "actions[1].listing"),
                              ({"action": "delete-everything"}, "actions[1].action")):
        plan = json.loads(good)
        plan["actions"].append(bad_action)
        save(plan_file, plan)
        malformed(plates, "gc", plan_file, field)
    plan = json.loads(good)
    plan["preconditions"]["unreferenced"]["listings"].append("../x")
    save(plan_file, plan)
    malformed(plates, "gc", plan_file, "preconditions.unreferenced.listings[1]")
    save(plan_file, json.loads(good))
    plates.tj("gc", "--from-plan", plan_file)


def test_commit_plan_with_a_key_that_is_a_path_is_malformed(plates, tmp_path):
    plan_file = tmp_path / "commit.json"
    plates.tether("commit", "-m", "baseline", "--plan", plan_file)
    good = load(plan_file)
    for edit, field in ((lambda p: p["preconditions"]["objects"][0].update(key="../../tether"),
                         "preconditions.objects[0].key"),
                        (lambda p: p["actions"][0].update(key="raw/../x"), "actions[0].key"),
                        (lambda p: p["actions"][0].update(pin="../../x"), "actions[0].pin"),
                        (lambda p: p["preconditions"].update(head="HEAD"), "preconditions.head")):
        plan = json.loads(json.dumps(good))
        edit(plan)
        save(plan_file, plan)
        malformed(plates, "commit", plan_file, field)


def test_new_plan_with_a_bad_branch_name_is_malformed(mixed, code, tmp_path):
    mixed.tether("commit", "-m", "baseline")
    plan_file = tmp_path / "new.json"
    mixed.tether("new", "-b", "feature", "--plan", plan_file)
    good = load(plan_file)
    assert good["switch"]["create"] == "feature"
    for edit, field in ((lambda p: p["switch"].update(create="../../HEAD"), "switch.create"),
                        (lambda p: p["switch"].update(create="-x"), "switch.create"),
                        (lambda p: p["preconditions"].update(ref="refs/heads/a..b"), "preconditions.ref"),
                        (lambda p: p["actions"][0].update(branch="x y"), "actions[0].branch")):
        plan = json.loads(json.dumps(good))
        edit(plan)
        save(plan_file, plan)
        malformed(mixed, "new", plan_file, field)


@pytest.mark.parametrize("op", OPS)
def test_help_documents_the_plan_options(op, plates):
    out = plates.tether(op, "--help").stdout
    for opt in ("--dry-run", "--plan FILE", "--from-plan FILE"):
        assert opt in out
