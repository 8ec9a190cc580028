"""The lifecycle every Pinnable or Forkable backend must pass, written once
and run per kind through the adapters of lifecycle_adapters.py (git, where
a data object is a git repository; Icechunk spec 2; Icechunk spec 1;
Icechunk on S3), and Addressable kinds as far as their tier goes (Delta,
DuckLake: a commit records the state, pins nothing, and the checks of pins
are skipped as needing PIN).

Each check drives the tether CLI as a user does and asks the system's own
tool or library (git for-each-ref, the icechunk library) what refs exist
and where they point: commit pins; an unchanged commit is a no-op; `new`
forks at the pin; `open -r` is read-only at the pin; a write on the fork is
what the next commit pins; gc releases exactly the unreferenced pins and
keeps the referenced ones (and refs that are not this dataset's); verify
notices a lost pin; repair pins it again; `log KEY` is the system's
history; `add --at` and `--pick` start from an earlier state; `--pin
record` records without a ref; a commit killed at each of its kill points
is finished by the re-run with no pin lost or leaked.

Which checks apply to a kind is decided by what the backend declares in
`tether backends --json` (its tier and flags): a check that needs FORK or
HISTORY is skipped as not applicable, naming the capability, for a kind
that does not declare it. An Addressable kind (states recorded, no pins:
Delta) runs only the checks of ADDRESSABLE_CHECKS, where a commit
"records" rather than "pins"; every other check needs PIN. A check the system itself cannot do is skipped
with the reason its adapter gives (`Adapter.cannot`); `pytest -rs` prints
every reason.

The dataset is a plain git repository; commit pins and the write on the
fork (new, open, write, commit, open -r HEAD~1) also run in a colocated and
a non-colocated jj repository, as the per-kind tests they replace did. To add a backend, see lifecycle_adapters.py.
"""
import json
import subprocess

import pytest

from conftest import TETHER_BIN, check_sanitizers, expected_pin, run_tether, base_env
from lifecycle_adapters import ADAPTERS, EXEMPT
from test_git_backend import VCS_KINDS, jj_problem, make_dataset  # noqa: F401

KEY = "obj"
# The checks an Addressable kind takes part in: those about recording,
# history and `add --at`, not about pins.
ADDRESSABLE_CHECKS = {"unchanged_commit_is_a_noop", "log_key", "add_at_an_earlier_state", "add_pick", "pin_record"}

TIERS = {"observed": ["FINGERPRINT"], "addressable": ["FINGERPRINT", "ADDRESSABLE"],
         "pinnable": ["FINGERPRINT", "ADDRESSABLE", "PIN"],
         "forkable": ["FINGERPRINT", "ADDRESSABLE", "PIN", "FORK"]}


@pytest.fixture(scope="session")
def declared(tmp_path_factory):
    """kind -> the capabilities its backend declares (tiers and flags), as
    `tether backends --json` says."""
    home = tmp_path_factory.mktemp("backends-home")
    p = run_tether(["backends", "--json"], home, base_env(home))
    return {b["kind"]: set(TIERS[b["tier"]]) | set(b["flags"]) for b in json.loads(p.stdout)}


class Life:
    """One check's world: a dataset, a store of the adapter's kind, and
    helpers that speak of both."""

    def __init__(self, ds, adapter, caps, tmp_path):
        self.ds, self.a, self.caps, self.tmp = ds, adapter, caps, tmp_path
        self.store = adapter.make_store(tmp_path)

    def need(self, *caps):
        missing = [c for c in caps if c not in self.caps]
        if missing:
            pytest.skip(f"not applicable: kind {self.a.kind} does not declare {', '.join(missing)} "
                        "(tether backends --json)")

    def add(self, *extra, key=KEY, check_rc=0):
        return self.ds.tether("add", key, *self.a.add_args(self.store), *extra, check_rc=check_rc)

    def pin_of(self, state_id):
        return expected_pin(self.ds.dataset_id(), self.a.kind, self.a.identity(self.store),
                            self.a.content_state(state_id))

    def pins(self):
        """This system's tether.* refs and the state each names, as the
        system lists them ({} for a kind that cannot pin)."""
        if "PIN" not in self.caps:
            return {}
        return {n: s for n, s in self.a.refs(self.store)["pins"].items() if n.startswith("tether.")}

    def pin_ref(self, key=KEY):
        """The native ref KEY's manifest names, or None (an Addressable kind)."""
        ref = self.ds.manifest(key).get("pin_ref")
        return self.a.pin_ref_name(ref) if ref is not None else None

    def pins_after(self, ref, state_id):
        """What pins() holds after a commit recorded state_id under ref."""
        return {ref: state_id} if "PIN" in self.caps else {}

    def state(self, key=KEY):
        return self.a.state_id(self.ds.manifest(key)["state"])

    def commit(self, message):
        """Commit, check it pinned KEY at the pin id its state gives (an
        Addressable kind: recorded it), and return (state id, pin id, pin
        ref name or None)."""
        sid = self.a.head(self.store)
        r = self.ds.tj("commit", "-m", message)
        pin = self.pin_of(self.state())
        pins = "PIN" in self.caps
        assert r["objects"] == [{"key": KEY, "action": "pinned" if pins else "recorded", "pin": pin,
                                 "recoverable": True}], r
        return self.state(), pin, self.pin_ref() if pins else None

    def drop_last_commit(self):
        self.ds.git("reset", "-q", "--hard", "HEAD~1")
        self.ds.git("reflog", "expire", "--expire=now", "--all")

    def statuses(self):
        return [(o["key"], o["status"]) for o in self.ds.tj("status")["objects"]]


def _life(request, tmp_path, declared, jj_problem, vcs):
    adapter = request.param
    check = request.node.originalname[len("test_"):]
    if check in adapter.cannot:
        pytest.skip(f"not possible: {adapter.name} cannot: {adapter.cannot[check]}")
    # an adapter's `suites` and `vcs_kinds` are applied at collection
    # (conftest.py's pytest_collection_modifyitems): what they leave out
    # never gets here
    adapter.prepare()
    if adapter.server_fixture:
        adapter.bind(request.getfixturevalue(adapter.server_fixture))
    caps = declared.get(adapter.kind)
    assert caps is not None, f"kind {adapter.kind} is not in `tether backends`"
    assert "ADDRESSABLE" in caps, f"kind {adapter.kind} is not Addressable: the lifecycle suite is for kinds " \
        "that can give a recorded state back"
    if "PIN" not in caps and check not in ADDRESSABLE_CHECKS:
        pytest.skip(f"not applicable: kind {adapter.kind} does not declare PIN (an Addressable kind records "
                    "states and pins nothing)")
    life = Life(make_dataset(tmp_path, vcs, jj_problem), adapter, caps, tmp_path)
    adapter.reach(life.ds.root, life.ds.env, life.store)
    return life


@pytest.fixture(params=ADAPTERS, ids=lambda a: a.name)
def life(request, tmp_path, declared, jj_problem):
    """A check's world in a plain git dataset."""
    return _life(request, tmp_path, declared, jj_problem, "git")


@pytest.fixture(params=VCS_KINDS)
def vcs(request):
    return request.param


@pytest.fixture(params=ADAPTERS, ids=lambda a: a.name)
def life_vcs(request, tmp_path, declared, jj_problem, vcs):
    """A check's world in a git, a colocated jj and a jj dataset."""
    return _life(request, tmp_path, declared, jj_problem, vcs)


def test_every_stable_pinnable_kind_has_an_adapter(tmp_path):
    """A stable backend that pins is held to this suite: it has an adapter,
    or an exemption in lifecycle_adapters.EXEMPT saying why it cannot."""
    p = run_tether(["backends", "--json"], tmp_path, base_env(tmp_path))
    pinnable = {b["kind"] for b in json.loads(p.stdout)
                if b["maturity"] == "stable" and "PIN" in TIERS[b["tier"]]}
    covered = {a.kind for a in ADAPTERS} | set(EXEMPT)
    assert pinnable - covered == set(), "add an adapter to tests/e2e/lifecycle_adapters.py"
    assert set(EXEMPT) <= pinnable, "an exemption for a kind that is not a stable Pinnable one"


# ---------------------------------------------------------------------------
# commit pins; an unchanged commit is a no-op
# ---------------------------------------------------------------------------

def test_commit_pins(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    L.need("PIN")
    s1 = a.head(L.store)
    c1 = a.content(L.store, a.base_branch)
    L.add()
    m = ds.manifest(KEY)
    assert m["kind"] == a.kind and "state" not in m and "pin" not in m
    r = ds.tj("commit", "-m", "one")
    pin1 = L.pin_of(s1)
    assert r["objects"] == [{"key": KEY, "action": "pinned", "pin": pin1, "recoverable": True}]
    assert r["commit"] == ds.vcs_head()
    m = ds.manifest(KEY)
    assert (m["pin"], m["recoverable"], a.state_id(m["state"])) == (pin1, True, s1)
    assert m["pin_ref"]["pin"] == pin1
    ref1 = L.pin_ref()
    assert ref1 == f"tether.{pin1}"
    assert L.pins() == {ref1: s1}, "the system holds exactly the one pin, at the state"
    assert a.content(L.store, ref1) == c1
    assert L.statuses() == [(KEY, "clean")]

    s2 = a.mutate(L.store)
    st = ds.tj("status")["objects"]
    assert [(o["key"], o["status"]) for o in st] == [(KEY, "modified")]
    assert a.state_id(st[0]["current"]) == s2
    r = ds.tj("commit", "-m", "two")
    pin2 = L.pin_of(s2)
    assert r["objects"] == [{"key": KEY, "action": "pinned", "pin": pin2, "recoverable": True}]
    ref2 = L.pin_ref()
    assert L.pins() == {ref1: s1, ref2: s2}, "a later pin leaves the earlier one"
    assert a.content(L.store, ref1) == c1 != a.content(L.store, ref2)

    log = ds.tj("log")["commits"]
    assert [c["summary"] for c in log] == ["two", "one"]
    assert log[0]["objects"] == [{"key": KEY, "change": "changed", "pin": pin2}]
    assert log[1]["objects"] == [{"key": KEY, "change": "added", "pin": pin1}]
    v = ds.tj("verify")
    assert v["ok"] is True and [(o["key"], o["ok"]) for o in v["objects"]] == [(KEY, True)]
    assert ds.tj("commit", "-m", "nothing")["commit"] is None


def test_unchanged_commit_is_a_noop(life):
    """Nothing changed: no dataset commit, no manifest rewritten, nothing
    written to the store. Two keys on one store and state share one pin."""
    L, ds, a = life, life.ds, life.a
    L.add()
    L.add(key="twin")
    ds.tether("commit", "-m", "both")
    assert ds.manifest(KEY)["pin"] == ds.manifest("twin")["pin"] == L.pin_of(a.head(L.store))
    assert len(L.pins()) == (1 if "PIN" in L.caps else 0)
    witness, head, objects = a.witness(L.store), ds.head(), ds.tree(".tether")
    r = ds.tj("commit", "-m", "again")
    assert r["commit"] is None
    assert [o["action"] for o in r["objects"]] == ["unchanged", "unchanged"]
    assert ds.tether("commit", "-m", "again").stdout == "nothing to commit: every object is unchanged\n"
    assert a.witness(L.store) == witness, "an unchanged commit wrote to the store"
    assert (ds.head(), ds.tree(".tether")) == (head, objects)


# ---------------------------------------------------------------------------
# new forks; open -r is read-only at the pin; write on the fork, commit
# ---------------------------------------------------------------------------

def test_new_forks_at_the_pin_and_open_reads_it(life):
    L, ds, a = life, life.ds, life.a
    L.need("FORK")
    c1 = a.content(L.store, a.base_branch)
    L.add()
    commit = ds.tj("commit", "-m", "base")["commit"]
    s1, ref1 = L.state(), L.pin_ref()
    moved = a.mutate(L.store)  # the base moves on after the commit
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feature"

    branches_before = a.refs(L.store)["branches"]
    r = ds.tj("new", "-b", "feature")
    assert r["bookmark"] == "feature" and r["commit"] == commit
    assert [(o["key"], o["action"], o["branch"]) for o in r["objects"]] == [(KEY, "forked", branch)]
    refs = a.refs(L.store)
    assert refs["branches"] == {**branches_before, branch: s1}, "the fork starts at the recorded state"
    assert refs["branches"][a.base_branch] == moved, "forking moved the base branch"
    assert L.pins() == {ref1: s1}

    h = ds.tj("open", KEY)
    assert (h["key"], h["kind"], h["read_only"]) == (KEY, a.kind, False)
    assert (a.handle_ref(h), a.handle_state(h)) == (branch, s1)
    for ro in (ds.tj("open", KEY, "-r", "HEAD"), ds.tj("open", KEY, env={"TETHER_REV": "HEAD"})):
        assert ro["read_only"] is True
        assert (a.handle_ref(ro), a.handle_state(ro)) == (ref1, s1)
        assert a.content(L.store, a.handle_ref(ro)) == c1


def test_write_on_the_fork_then_commit(life_vcs):
    L, ds, a = life_vcs, life_vcs.ds, life_vcs.a
    L.need("FORK")
    c1 = a.content(L.store, a.base_branch)
    L.add()
    s1, pin1, ref1 = L.commit("base")
    ds.tether("new", "-b", "feature")
    h = ds.tj("open", KEY)
    s2 = a.write_via_handle(h)
    assert a.head(L.store) == s1, "the fork's write must not touch the base branch"
    assert L.pins() == {ref1: s1}
    assert a.handle_state(ds.tj("open", KEY)) == s2
    st = ds.tj("status")["objects"][0]
    assert (st["status"], a.state_id(st["current"])) == ("modified", s2)

    s2_, pin2, ref2 = L.commit("fork write")
    assert s2_ == s2 and pin2 == L.pin_of(s2)
    assert L.pins() == {ref1: s1, ref2: s2}
    assert a.content(L.store, ref2) == a.content(L.store, a.handle_ref(h)) != c1
    assert a.content(L.store, ref1) == c1
    old = ds.tj("open", KEY, "-r", "HEAD~1")
    assert (old["read_only"], a.handle_ref(old), a.handle_state(old)) == (True, ref1, s1)


# ---------------------------------------------------------------------------
# gc
# ---------------------------------------------------------------------------

def two_pins(L):
    L.add()
    first = L.commit("one")
    L.a.mutate(L.store)
    return first, L.commit("two")


def test_gc_releases_exactly_the_unreferenced_pins(life):
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    (s1, pin1, ref1), (s2, pin2, ref2) = two_pins(L)
    # Someone's release tag and another dataset's pin are not this gc's.
    foreign = {"release-1": s2, "tether.ffffffff.0123456789abcdef": s2}
    for name, sid in foreign.items():
        a.add_foreign_ref(L.store, name, sid)
    v = ds.tj("verify", "--all-history")
    assert v["ok"] is True and v["states"] == 2 and v["commits"] == 2
    assert ds.tj("gc")["release"] == []

    pin_ref2 = ds.manifest(KEY)["pin_ref"]
    L.drop_last_commit()
    before = a.refs(L.store)
    r = ds.tj("gc")
    assert r["dry_run"] is True and r["commits"] == 1 and r["errors"] == []
    assert [(x["kind"], x["pin"]) for x in r["release"]] == [(a.kind, pin2)]
    assert r["release"][0]["identity"] == a.identity(L.store)
    assert r["release"][0]["pin_ref"] == pin_ref2, "the row names the ref the dropped commit recorded"
    assert a.refs(L.store) == before, "a dry run releases nothing"

    r = ds.tj("gc", "--no-dry-run")
    assert r["dry_run"] is False and r["errors"] == []
    assert [(x["pin"], x["done"]) for x in r["release"]] == [(pin2, True)]
    after = a.refs(L.store)
    assert after["pins"] == {ref1: s1, **foreign}, "gc released exactly the unreferenced pin"
    assert after["branches"] == before["branches"], "gc touched only the pin"
    assert a.head(L.store) == s2
    assert ds.tj("gc")["release"] == []
    v = ds.tj("verify", "--all-history")
    assert v["ok"] is True and v["states"] == 1
    assert ds.tj("verify")["ok"] is True


def test_gc_keeps_a_pin_another_branch_names(life):
    L, ds = life, life.ds
    L.need("PIN")
    (s1, _, ref1), (s2, _, ref2) = two_pins(L)
    ds.git("branch", "keep")
    L.drop_last_commit()
    assert ds.tj("gc")["release"] == []
    r = ds.tj("gc", "--no-dry-run")
    assert r["release"] == [] and r["commits"] == 2
    assert L.pins() == {ref1: s1, ref2: s2}
    assert ds.tj("verify", "--all-history")["ok"] is True


# ---------------------------------------------------------------------------
# verify and repair
# ---------------------------------------------------------------------------

def test_verify_notices_a_lost_pin(life):
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    (s1, pin1, ref1), (s2, pin2, ref2) = two_pins(L)
    v = ds.tj("verify")
    assert v["ok"] is True and [(o["key"], o["ok"], o["detail"]) for o in v["objects"]] == [(KEY, True, None)]
    a.delete_pin(L.store, ref2)
    assert L.pins() == {ref1: s1}
    v = ds.tj("verify", check_rc=3)
    assert v["ok"] is False
    assert [(o["key"], o["ok"]) for o in v["objects"]] == [(KEY, False)]
    assert ref2 in v["objects"][0]["detail"], v
    vh = ds.tj("verify", "--all-history", check_rc=3)
    assert {o["pin"]: o["ok"] for o in vh["objects"]} == {pin1: True, pin2: False}


def test_verify_deep_agrees_with_verify_on_held_and_lost_pins(life):
    """--deep re-reads each held state through the system (every kind here
    has a deeper check); a pin that is gone fails as verify says, not as a
    deep failure."""
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    (s1, pin1, ref1), (s2, pin2, ref2) = two_pins(L)
    v = ds.tj("verify", "--deep")
    assert v["ok"] is True and v["deep_failed"] == []
    assert [(o["key"], o["deep"]) for o in v["objects"]] == [(KEY, "ok")]
    vh = ds.tj("verify", "--all-history", "--deep")
    assert {o["pin"]: o["deep"] for o in vh["objects"]} == {pin1: "ok", pin2: "ok"}
    a.delete_pin(L.store, ref2)
    vh = ds.tj("verify", "--all-history", "--deep", check_rc=3)
    assert {o["pin"]: (o["ok"], o.get("deep")) for o in vh["objects"]} == {pin1: (True, "ok"), pin2: (False, None)}
    assert vh["deep_failed"] == []


def test_status_on_status_notices_a_lost_pin(life):
    """[verify] on_status = true: status checks HEAD's pin and reports it
    gone; without it, status stays clean."""
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    (s1, pin1, ref1), (s2, pin2, ref2) = two_pins(L)
    toml = ds.p("tether.toml")
    toml.write_text(toml.read_text().replace("on_status = false", "on_status = true"))
    ds.git_commit_all("check pins on status", "tether.toml")
    st = ds.tj("status")
    assert st["clean"] is True and st["pins"] == {"checked": 1, "missing": []}
    a.delete_pin(L.store, ref2)
    st = ds.tj("status", check_rc=3)
    assert [(o["key"], o["status"]) for o in st["objects"]] == [(KEY, "unpinned")]
    assert [(m["key"], m["pin"]) for m in st["pins"]["missing"]] == [(KEY, pin2)]
    toml.write_text(toml.read_text().replace("on_status = true", "on_status = false"))
    st = ds.tj("status")
    assert [(o["key"], o["status"]) for o in st["objects"]] == [(KEY, "clean")] and "pins" not in st


def test_repair_after_a_lost_pin(life):
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    c1 = a.content(L.store, a.base_branch)
    L.add()
    s1, pin1, ref1 = L.commit("pin")
    a.delete_pin(L.store, ref1)
    ds.tether("verify", check_rc=3)
    dry = ds.tj("repair", "--dry-run")
    assert [(o["key"], o["action"]) for o in dry["objects"]] == [(KEY, "would-repin")]
    assert L.pins() == {}, "a dry run pins nothing"
    r = ds.tj("repair")
    assert r["ok"] is True and [(o["key"], o["action"]) for o in r["objects"]] == [(KEY, "repinned")]
    # The system holds the state again under a pin of this id (a system
    # that cannot reuse a deleted ref's name gives it a generation).
    live = L.pin_ref()
    assert live.startswith(ref1) and L.pins() == {live: s1}
    assert a.content(L.store, live) == c1
    assert ds.tj("verify")["ok"] is True
    assert ds.tj("verify", "--all-history")["ok"] is True
    ro = ds.tj("open", KEY, "-r", "HEAD")
    assert (ro["read_only"], a.handle_ref(ro), a.handle_state(ro)) == (True, live, s1)


# ---------------------------------------------------------------------------
# History: log KEY, add --at, add --pick
# ---------------------------------------------------------------------------

def test_log_key(life):
    L, ds, a = life, life.ds, life.a
    L.need("HISTORY")
    a.mutate(L.store)
    L.add()
    s1, _, ref1 = L.commit("one")
    a.mutate(L.store)
    s3 = a.mutate(L.store)
    _, _, ref3 = L.commit("three")
    history = a.history(L.store)
    assert len(history) >= 4 and history[0][0] == s3

    r = ds.tj("log", KEY)
    assert (r["key"], r["kind"]) == (KEY, a.kind)
    entries = r["entries"]
    assert [(e["id"], e["message"]) for e in entries] == history
    assert all(isinstance(e["time"], int) for e in entries)
    refs = {e["id"]: e["refs"] for e in entries}
    if "PIN" in L.caps:
        assert set(refs[s3]) >= {a.base_branch, ref3}
        assert ref1 in refs[s1]
    assert [e["id"] for e in ds.tj("log", KEY, "-n", "2")["entries"]] == [h[0] for h in history[:2]]
    text = ds.tether("log", KEY).stdout.splitlines()
    assert len(text) == len(entries)
    for line, e in zip(text, entries):
        assert line.startswith(e.get("short_id", e["id"][:12]) + " "), line
        assert e["message"] in line


def tether_stdin(ds, stdin, *args, check_rc=0):
    p = subprocess.run([TETHER_BIN, *map(str, args)], cwd=str(ds.root), env=ds.env, input=stdin,
                       capture_output=True, text=True)
    check_sanitizers(p)
    assert p.returncode == check_rc, p.stderr
    return p


def test_add_at_an_earlier_state(life):
    L, ds, a = life, life.ds, life.a
    L.need("HISTORY")
    first = a.head(L.store)
    a.mutate(L.store)
    L.add("--at", first)
    s, pin, ref = L.commit("old state")
    assert s == first and L.pins() == L.pins_after(ref, first)
    p = L.add("--at", "NOSUCHREF", key="bad", check_rc=None)
    assert p.returncode in (1, 2) and "NOSUCHREF" in p.stderr, p.stderr
    assert not ds.manifest_path("bad").exists()


def test_add_pick(life):
    L, ds, a = life, life.ds, life.a
    L.need("HISTORY")
    a.mutate(L.store)
    history = a.history(L.store)
    p = tether_stdin(ds, "2\n", "add", KEY, *a.add_args(L.store), "--pick")
    assert f"start from which entry [1-{len(history)}]?" in p.stderr, p.stderr
    s, _, ref = L.commit("picked")
    assert s == history[1][0] and L.pins() == L.pins_after(ref, s)
    p = tether_stdin(ds, f"{len(history) + 1}\n", "add", "bad", *a.add_args(L.store), "--pick", check_rc=2)
    assert "no valid choice" in p.stderr
    assert not ds.manifest_path("bad").exists()


# ---------------------------------------------------------------------------
# --pin record: the state alone, no native ref
# ---------------------------------------------------------------------------

def test_pin_record(life):
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    L.add("--pin", "record")
    s1 = a.head(L.store)
    witness = a.witness(L.store)
    r = ds.tj("commit", "-m", "recorded")
    assert [(o["key"], o["action"], o["pin"]) for o in r["objects"]] == [(KEY, "recorded", L.pin_of(s1))]
    m = ds.manifest(KEY)
    assert a.state_id(m["state"]) == s1 and "pin_ref" not in m
    assert a.witness(L.store) == witness, "--pin record wrote to the store"
    assert L.pins() == {}
    assert ds.tj("verify")["ok"] is True, "the system itself still holds the state"
    if "FORK" in L.caps:
        ds.tether("new", "-b", "x")
        assert a.refs(L.store)["branches"][f"tether.ws.{ds.dataset_id()[:8]}.x"] == s1
        ro = ds.tj("open", KEY, "-r", "HEAD")
        assert (ro["read_only"], a.handle_state(ro)) == (True, s1)
    a.mutate(L.store)
    ds.tether("commit", "-m", "again")
    assert L.pins() == {} and ds.tj("gc")["release"] == []


# ---------------------------------------------------------------------------
# A commit killed at each kill point, then re-run
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("step", ["journal-written", "object-recorded", "vcs-committed"])
def test_kill_mid_commit(life, step):
    """test_crash.py's kill points (TETHER_FAULT=commit:<step>), on one
    object of the kind: the pin the dead run made is kept by gc, the re-run
    finishes in one dataset commit, and the system ends holding exactly the
    pins history names."""
    L, ds, a = life, life.ds, life.a
    L.need("PIN")
    L.add()
    s1, pin1, ref1 = L.commit("base")
    head0 = ds.head()
    s2 = a.mutate(L.store)
    pin2 = L.pin_of(s2)
    ref2 = f"tether.{pin2}"

    ds.tether("commit", "-m", "killed", check_rc=-9, env={"TETHER_FAULT": f"commit:{step}"})
    expected = {ref1: s1} if step == "journal-written" else {ref1: s1, ref2: s2}
    assert L.pins() == expected
    if step == "vcs-committed":
        assert ds.git("rev-parse", "HEAD~1").strip() == head0
        assert ds.manifest_at("HEAD", KEY)["pin"] == pin2
    else:
        assert ds.head() == head0
    open_entries = [e for e in ds.tj("ops")["ops"] if e["status"] == "INCOMPLETE"]
    assert [[p["pin"] for p in e["pins"]] for e in open_entries] == [[pin2]]

    # gc keeps every pin the open journal entry names, even run from
    # another checkout, whose working manifests do not name the new pin.
    wt = ds.root.parent / "other-checkout"
    ds.git("worktree", "add", "-q", wt, "-b", "side", head0)
    a.reach(wt, ds.env, L.store)  # secrets are per checkout
    for cwd in (wt, ds.root):
        assert ds.tj("gc", cwd=cwd)["release"] == []
        assert ds.tj("gc", "--no-dry-run", cwd=cwd)["release"] == []
        assert L.pins() == expected

    r = ds.tj("commit", "-m", "killed")
    if step == "vcs-committed":
        assert r["commit"] is None
    else:
        assert r["commit"] == ds.head() and ds.git("rev-parse", "HEAD~1").strip() == head0
    assert [e for e in ds.tj("ops")["ops"] if e["status"] == "INCOMPLETE"] == []
    assert ds.tj("verify", "--all-history")["ok"] is True
    ds.tether("gc", "--no-dry-run")
    named = {a.pin_ref_name(ds.manifest_at(rev, KEY)["pin_ref"]) for rev in ("HEAD", "HEAD~1")}
    assert named == {ref1, ref2} and L.pins() == {ref1: s1, ref2: s2}
    assert a.content(L.store, ref2) == a.content(L.store, a.base_branch)
