"""The icechunk backend on s3://, against SeaweedFS and moto (tests/e2e/s3servers.py).

The icechunk library (2.3, through its own S3 client: icechunk.s3_storage)
makes and writes the repositories; tether reaches the same server through
its S3 store module (tether-store-s3.so) and Icechunk's format in C. The
lifecycle every Forkable kind passes runs on S3 too: test_lifecycle*.py's
adapter icechunk-s3 (lifecycle_adapters.IcechunkS3). This file holds what
is S3's own: where the store options come from (.tether/secrets.toml or
AWS's environment variables), the library opening every tag and branch
tether made and committing on the forks, CONDITIONAL_REF claimed per
object, two `tether new` racing on one repository, a stale plan,
`add --create` and its removal on a prefix, and a secret the server
refuses.
"""
import json
import subprocess
import threading

import icechunk_oracle as oracle  # first: it quiets icechunk's logging before the import
import pytest

from conftest import TETHER_BIN, check_sanitizers, run_stopped
from lifecycle_adapters import S3Prefix


@pytest.fixture
def srv(s3_server):
    """Each S3 server in turn: SeaweedFS, then moto (authenticated)."""
    return s3_server


@pytest.fixture
def s3repo(srv):
    """A repository holding /data (8 int32s) on main, in a fresh bucket."""
    store = S3Prefix(srv, srv.bucket("icechunk"), "team/imaging.icechunk")
    oracle.create(store.storage())
    return store


def secrets_for(srv, bucket):
    """.tether/secrets.toml naming the server for the whole bucket."""
    return (f'[uris."s3://{bucket}"]\n'
            f'endpoint_url = "{srv.endpoint}"\n'
            'allow_http = true\n'
            'force_path_style = true\n'
            f'region = "{srv.region}"\n'
            f'access_key_id = "{srv.access_key}"\n'
            f'secret_access_key = "{srv.secret}"\n')


def allow_http(ds, bucket):
    """secrets.toml: plain http allowed for the bucket (the one option the
    environment cannot give: the S3 store refuses an http endpoint without it)."""
    path = ds.p(".tether/secrets.toml")
    old = path.read_text() if path.exists() else ""
    ds.write(".tether/secrets.toml", old + f'[uris."s3://{bucket}"]\nallow_http = true\n')


@pytest.fixture
def s3ds(ds, srv, s3repo):
    """A dataset that reaches the server through AWS's environment
    variables (the endpoint, keys and region)."""
    ds.env = srv.env(ds.env)
    allow_http(ds, s3repo.bucket)
    return ds


def add(ds, key, store, *extra, check_rc=0):
    return ds.tether("add", key, str(store), "--kind", "icechunk", *extra, check_rc=check_rc)


def refs(store):
    return oracle.refs_of(store.storage())


def fork_branch(ds, bookmark):
    return f"tether.ws.{ds.dataset_id()[:8]}.{bookmark}"


def test_the_lifecycle_with_options_from_secrets_toml(ds, srv, s3repo):
    """No AWS_* variable at all: the endpoint, keys and addressing come from
    .tether/secrets.toml's table for the bucket."""
    ds.env = {k: v for k, v in ds.env.items() if not k.startswith("AWS_")}
    ds.env["AWS_EC2_METADATA_DISABLED"] = "true"  # never ask 169.254.169.254
    ds.write(".tether/secrets.toml", secrets_for(srv, s3repo.bucket))
    r = ds.tj("add", "img", str(s3repo), "--kind", "icechunk")
    assert r["locator"] == {"uri": str(s3repo), "branch": "main"}
    assert "CONDITIONAL_REF" in r["flags"]
    [o] = ds.tj("status")["objects"]
    assert (o["status"], o["current"]) == ("never-recorded", {"snapshot_id": oracle.branch_head(s3repo.storage())})

    # commit pins: a tag the library reads
    ds.tether("commit", "-m", "baseline")
    m = ds.manifest("img")
    tag = m["pin_ref"]["tag"]
    assert refs(s3repo)["tags"] == {tag: m["state"]["snapshot_id"]}
    assert oracle.read_data(s3repo.storage(), tag=tag) == list(range(8))

    # the library writes; status sees it; commit pins again
    moved = oracle.commit(s3repo.storage())
    [o] = ds.tj("status")["objects"]
    assert (o["status"], o["current"]) == ("modified", {"snapshot_id": moved})
    ds.tether("commit", "-m", "moved")
    tag2 = ds.manifest("img")["pin_ref"]["tag"]
    assert refs(s3repo)["tags"] == {tag: m["state"]["snapshot_id"], tag2: moved}

    # new forks a branch the library commits on
    ds.tether("new", "-b", "work")
    branch = fork_branch(ds, "work")
    assert refs(s3repo)["branches"] == {"main": moved, branch: moved}
    h = ds.tj("open", "img")
    assert (h["uri"], h["branch"], h["read_only"]) == (str(s3repo), branch, False)
    on_fork = oracle.commit(s3repo.storage(), branch=branch)
    [o] = ds.tj("status")["objects"]
    assert o["current"] == {"snapshot_id": on_fork}
    ds.tether("commit", "-m", "on the fork")

    # promote fast-forwards main; verify holds every pin; log lists them
    ds.tether("promote")
    assert oracle.branch_head(s3repo.storage()) == on_fork
    ds.tether("verify")
    assert [e["id"] for e in ds.tj("log", "img")["entries"]][:3] == [on_fork, moved,
                                                                       m["state"]["snapshot_id"]]

    # every tag and branch tether made opens in the library, and the
    # library commits on the fork
    for t, sid in refs(s3repo)["tags"].items():
        assert oracle.read_data(s3repo.storage(), tag=t) == oracle.read_data(s3repo.storage(), snapshot_id=sid)
    oracle.commit(s3repo.storage(), branch=branch)

    # restore resets the fork to the first commit's state; gc then keeps
    # the pins HEAD's history names
    first = ds.git("log", "--format=%H", "--grep", "baseline").strip()
    ds.tether("restore", "-r", first)
    assert refs(s3repo)["branches"][branch] == m["state"]["snapshot_id"]
    [o] = ds.tj("status")["objects"]
    assert o["current"] == {"snapshot_id": m["state"]["snapshot_id"]}
    ds.tether("gc")
    assert tag in refs(s3repo)["tags"]
    ds.tether("verify")


def test_the_environment_gives_endpoint_keys_and_region(s3ds, s3repo):
    """AWS_ENDPOINT_URL_S3, the keys and the region, as AWS's tools read
    them (path-style chosen for an IP-address endpoint); secrets.toml only
    allows plain http, which no AWS variable says."""
    add(s3ds, "img", s3repo)
    s3ds.tether("commit", "-m", "baseline")
    tag = s3ds.manifest("img")["pin_ref"]["tag"]
    assert tag in refs(s3repo)["tags"]


def test_conditional_ref_is_claimed_on_s3_only(s3ds, s3repo, tmp_path):
    r = s3ds.tj("add", "img", str(s3repo), "--kind", "icechunk")
    assert "CONDITIONAL_REF" in r["flags"]
    local = tmp_path / "local.icechunk"
    oracle.create(local)
    r = s3ds.tj("add", "loc", str(local), "--kind", "icechunk")
    assert "CONDITIONAL_REF" not in r["flags"]
    # What `tether backends` lists holds for every object of the kind.
    ice = next(b for b in s3ds.tj("backends") if b["kind"] == "icechunk")
    assert "CONDITIONAL_REF" not in ice["flags"]
    # A store whose options turn conditional writes off has no atomic ref
    # moves: not claimed for its objects.
    s3ds.write(".tether/secrets.toml", f'[uris."s3://{s3repo.bucket}"]\nallow_http = true\n'
                                       'conditional_put = "disabled"\n')
    r = s3ds.tj("add", "off", str(s3repo), "--kind", "icechunk")
    assert "CONDITIONAL_REF" not in r["flags"]


def two_checkouts(ds, new_repo):
    """ds committed with its S3 object, and a clone of it: the same dataset
    (same working branch names) in a second checkout, with ds's env and
    secrets (which are never committed)."""
    ds.tether("commit", "-m", "baseline")
    other = new_repo("other")
    other.git("fetch", "-q", str(ds.root), "main")
    other.git("reset", "-q", "--hard", "FETCH_HEAD")
    other.env = dict(ds.env)
    other.write(".tether/secrets.toml", ds.p(".tether/secrets.toml").read_text())
    return other


def test_a_new_that_lost_the_race_for_the_branch_is_refused_and_writes_nothing(s3ds, s3repo, new_repo):
    """The plan of one checkout expects the working branch absent; another
    checkout forks it between that plan and the move: the move is refused
    (exit 3), the branch stays where the winner put it, and the loser's
    checkout and workspace are as before."""
    ds = s3ds
    add(ds, "img", s3repo)
    other = two_checkouts(ds, new_repo)
    branch = fork_branch(ds, "race")
    head_before, ws_before = ds.head(), ds.tree(".tether")

    def race():
        return other.tether("new", "-b", "race")

    p, won = run_stopped(ds, ["new", "-b", "race"], "new:switched:stop", race)
    assert won.returncode == 0
    assert p.returncode == 3, p.stderr
    assert branch in p.stderr
    winner_head = refs(s3repo)["branches"][branch]
    assert winner_head == ds.manifest("img")["state"]["snapshot_id"]
    # The library still opens the repository, and writes on the winner's fork.
    oracle.commit(s3repo.storage(), branch=branch)
    assert ds.head() == head_before and ds.tree(".tether") == ws_before
    assert [o["status"] for o in ds.tj("status")["objects"]] == ["clean"]


def test_two_new_racing_on_one_repository_exactly_one_forks(s3ds, s3repo, new_repo):
    """Two checkouts run `tether new -b NAME` at the same moment, several
    times: each time exactly one makes the branch, the other is refused
    cleanly (exit 3), and the repository stays whole."""
    ds = s3ds
    add(ds, "img", s3repo)
    other = two_checkouts(ds, new_repo)
    sid = ds.manifest("img")["state"]["snapshot_id"]
    for n in range(4):
        name = f"race{n}"
        go = threading.Barrier(2)
        done = {}

        def run(who, d):
            go.wait()
            p = subprocess.run([TETHER_BIN, "new", "-b", name], cwd=str(d.root), env=d.env, capture_output=True,
                               text=True, timeout=120)
            check_sanitizers(p)
            done[who] = p

        threads = [threading.Thread(target=run, args=(w, d)) for w, d in (("a", ds), ("b", other))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(p.returncode for p in done.values())
        assert codes == [0, 3], {w: (p.returncode, p.stderr) for w, p in done.items()}
        loser = next(p for p in done.values() if p.returncode == 3)
        assert fork_branch(ds, name) in loser.stderr
        assert refs(s3repo)["branches"][fork_branch(ds, name)] == sid
        # both go back to the trunk for the next round
        for d in (ds, other):
            d.tether("new", "main")
    assert sorted(refs(s3repo)["branches"]) == sorted(["main"] + [fork_branch(ds, f"race{n}") for n in range(4)])


def test_a_stale_plan_is_refused(s3ds, s3repo, tmp_path):
    """A promote planned before main moved is refused and moves nothing (a
    writer moving main between the re-check and the move is the lifecycle
    suite's test_a_writer_racing_the_move_makes_it_fail, which runs on S3 too)."""
    ds = s3ds
    add(ds, "img", s3repo)
    ds.tether("commit", "-m", "base")
    ds.tether("new", "-b", "work")
    branch = fork_branch(ds, "work")
    oracle.commit(s3repo.storage(), branch=branch)
    ds.tether("commit", "-m", "on the fork")
    plan = tmp_path / "promote.json"
    ds.tether("promote", "--plan", str(plan))
    # main moves after the plan was reviewed
    moved = oracle.commit(s3repo.storage(), branch="main")
    p = ds.tether("promote", "--from-plan", str(plan), check_rc=3)
    assert "stale plan: img: its base branch moved since the plan" in p.stderr
    assert moved in p.stderr
    assert oracle.branch_head(s3repo.storage()) == moved


def test_add_create_and_delete_store_on_a_prefix(s3ds, srv):
    """add --create makes a repository under a prefix (never adopting what
    is there), `drop --delete-store` removes exactly it while it is still
    ref-empty, and a key beside the prefix that shares its first bytes is
    not under it."""
    ds = s3ds
    bucket = srv.bucket("create")
    allow_http(ds, bucket)
    store = S3Prefix(srv, bucket, "new/repo.icechunk")
    neighbour = S3Prefix(srv, bucket, "new/repo.icechunk-not")
    srv.client().put_object(Bucket=bucket, Key="new/repo.icechunk-not/keep", Body=b"mine")
    kept = neighbour.objects()
    add(ds, "fresh", store, "--create")
    repo = oracle.open_repo(store.storage())
    assert repo.metadata == {"tether.owner": ds.dataset_id()}
    assert list(repo.list_branches()) == ["main"] and repo.list_tags() == set()
    before = store.objects()
    # create never adopts: a prefix holding anything is refused, untouched
    p = add(ds, "again", store, "--create", check_rc=3)
    assert "already exists" in p.stderr
    p = add(ds, "again", neighbour, "--create", check_rc=3)
    assert store.objects() == before and neighbour.objects() == kept
    assert not ds.manifest_path("again").exists()

    ds.tether("drop", "fresh", "--delete-store")
    assert not store.exists()
    assert neighbour.objects() == kept

    # Created again, then written by the library: no longer ref-empty, so
    # delete_store refuses and the drop removes nothing.
    add(ds, "fresh", store, "--create")
    oracle.commit(store.storage())
    p = ds.tether("drop", "fresh", "--delete-store", check_rc=3)
    assert "holds commits" in p.stderr
    assert ds.manifest_path("fresh").exists() and store.exists()
    assert oracle.open_repo(store.storage()).lookup_branch("main")
    # and tether pins what the library wrote there
    ds.tether("commit", "-m", "first data")
    assert list(refs(store)["tags"]) == [ds.manifest("fresh")["pin_ref"]["tag"]]


def test_a_wrong_secret_commits_nothing_and_hides_no_other_object(s3ds, s3repo, srv):
    """A secret the server refuses: commit fails in one line naming the
    URI and the server's code, and writes nothing (no tag, no dataset
    commit); status reports that object as unreachable (with the store's
    one-line error) and the others as they are, and exits non-zero after
    reporting all."""
    ds = s3ds
    add(ds, "img", s3repo)
    ds.write("notes.txt", "a local file\n")
    ds.tether("add", "notes", "notes.txt", "--kind", "file")
    ds.tether("commit", "-m", "baseline")
    oracle.commit(s3repo.storage())
    head, tags = ds.head(), refs(s3repo)["tags"]
    wrong = {"AWS_SECRET_ACCESS_KEY": srv.secret[::-1]}
    p = ds.tether("commit", "-m", "refused", env=wrong, check_rc=1)
    [line] = [l for l in p.stderr.splitlines() if l.startswith("tether: error:")]
    assert str(s3repo) in line and "403" in line, p.stderr
    assert ds.head() == head and refs(s3repo)["tags"] == tags
    p = ds.tether("status", "--json", env=wrong, check_rc=1)
    objects = {o["key"]: o for o in json.loads(p.stdout)["objects"]}
    assert objects["img"]["status"] == "unreachable" and "403" in objects["img"]["detail"]
    assert objects["notes"]["status"] == "clean"
    # With the right secret again, the commit goes through.
    ds.tether("commit", "-m", "accepted")
    assert len(refs(s3repo)["tags"]) == len(tags) + 1
