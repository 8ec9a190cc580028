"""The lakefs backend against the fake lakeFS API (tests/e2e/lakefsfake.py),
whose every request and answer lakefs-sdk's models parse; the repository is
written and read with lakefs-sdk's client, never through tether.

What the lifecycle suite (test_lifecycle.py, adapter LakeFSAdapter) does not
hold: the locator forms, staging (dirty) in status and at commit, prefixes
in diff, tether's spelling of its working branches, merges and their
conflicts, and bad input: wrong keys, a missing repository, no endpoint, a
hostile manifest, a server that fails or drops the connection.
"""
import json

import lakefs_sdk
import pytest

from conftest import expected_pin
from lakefsfake import decode_branch, encode_branch, upload

KEY = "lake"


class Lake:
    def __init__(self, server, ds, repo):
        self.server, self.ds, self.repo = server, ds, repo

    def api(self, name):
        return getattr(lakefs_sdk, name)(self.server.client())

    def write(self, path, data=b"x", branch="main", commit=True):
        upload(self.server.client(), self.repo, branch, path, data)
        if commit:
            return self.api("CommitsApi").commit(self.repo, branch,
                                                 lakefs_sdk.CommitCreation(message=f"write {path}")).id
        return None

    def delete(self, path, branch="main"):
        self.api("ObjectsApi").delete_object(self.repo, branch, path)
        return self.api("CommitsApi").commit(self.repo, branch, lakefs_sdk.CommitCreation(message=f"rm {path}")).id

    def head(self, branch="main"):
        return self.api("BranchesApi").get_branch(self.repo, branch).commit_id

    def tags(self):
        return {t.id: t.commit_id for t in self.api("TagsApi").list_tags(self.repo, amount=1000).results}

    def branches(self):
        return {b.id: b.commit_id for b in self.api("BranchesApi").list_branches(self.repo, amount=1000).results}


def secrets_for(server, key=KEY, **extra):
    lines = [f'[objects."{key}"]', f'endpoint = "{server.endpoint}"', f'access_key_id = "{server.key}"',
             f'secret_access_key = "{server.secret}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def lake(ds, lakefs_server):
    repo = lakefs_server.repo("lake")
    (ds.root / ".tether" / "secrets.toml").write_text(secrets_for(lakefs_server))
    lk = Lake(lakefs_server, ds, repo)
    lk.write("raw/a.csv", b"a,b\n1,2\n")
    lk.write("other/z.bin", b"zz")
    yield lk
    lakefs_server.clear_faults()


def test_add_by_options_or_uri_and_commit_pins_a_tag(lake):
    ds = lake.ds
    r = ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    assert r["tier"] == "forkable"
    assert any("experimental" in w and "tether backends" in w for w in r.get("warnings", [])), r
    summary = {b["kind"]: b["summary"] for b in ds.tj("backends")}["lakefs"]
    assert "fake" in summary and "not a lakeFS server" in summary
    loc = ds.manifest(KEY)["locator"]
    assert loc == {"repository": lake.repo, "branch": "main", "prefix": "raw/"}
    ds.tj("add", "lake2", f"lakefs://{lake.repo}/main/raw/", "--kind", "lakefs",
          env={"LAKECTL_SERVER_ENDPOINT_URL": lake.server.endpoint,
               "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": lake.server.key,
               "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": lake.server.secret})
    assert ds.manifest("lake2")["locator"] == loc
    ds.tether("drop", "lake2")

    head = lake.head()
    r = ds.tj("commit", "-m", "first")
    pin = expected_pin(ds.dataset_id(), "lakefs", {"repository": lake.repo}, {"commit": head})
    assert r["objects"] == [{"key": KEY, "action": "pinned", "pin": pin, "recoverable": True}]
    m = ds.manifest(KEY)
    assert m["state"] == {"commit": head}
    assert m["pin_ref"] == {"tag": f"tether.{pin}", "pin": pin, "commit": head}
    assert lake.tags() == {f"tether.{pin}": head}
    # Nothing changed: a second commit is a no-op and makes no tag.
    assert ds.tj("commit", "-m", "again")["commit"] is None
    assert lake.tags() == {f"tether.{pin}": head}


def test_staging_under_the_prefix_is_dirty_and_refused_at_commit(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    ds.tj("commit", "-m", "first")
    # Staged outside the prefix: not this object's business.
    lake.write("other/staged.bin", b"s", commit=False)
    assert [o["status"] for o in ds.tj("status")["objects"]] == ["clean"]
    # Staged under it: reported, and refused at commit with nothing written.
    lake.write("raw/b.csv", b"staged", commit=False)
    st = ds.tj("status")["objects"][0]
    assert st["current"].get("dirty") is True, st
    tags, objects, head = lake.tags(), ds.tree(".tether/objects"), ds.head()
    lake.write("raw/c.csv", b"committed too")  # commits the staging: the branch moves
    lake.write("raw/d.csv", b"staged again", commit=False)
    p = ds.tether("commit", "-m", "dirty", check_rc=3)
    assert "holds uncommitted changes under 'raw/'" in p.stderr and "lakectl commit" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) <= 2
    assert lake.tags() == tags and ds.tree(".tether/objects") == objects and ds.head() == head


def test_log_diff_and_open(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    ds.tj("commit", "-m", "first")
    c1 = lake.head()
    lake.write("raw/b.csv", b"bbbb")
    lake.write("raw/a.csv", b"changed")
    lake.write("other/y.bin", b"not under the prefix")
    c2 = lake.delete("raw/b.csv")
    lake.write("raw/new.csv", b"12345")
    c3 = lake.head()
    ds.tj("commit", "-m", "second")

    log = ds.tj("log", KEY)
    ids = [e["id"] for e in log["entries"]] if isinstance(log, dict) else [e["id"] for e in log]
    sdk_log = [c.id for c in lake.api("RefsApi").log_commits(lake.repo, "main", amount=1000).results]
    assert ids == sdk_log[:len(ids)] and ids[0] == c3

    d = ds.tj("diff", "HEAD~1", "HEAD", "--content")
    entry = next(o for o in d["objects"] if o["key"] == KEY)
    content = entry["content"]
    assert content["unit"] == "objects"
    got = {(e["path"], e["change"]) for e in content["entries"]}
    assert got == {("raw/a.csv", "modified"), ("raw/new.csv", "added")}, content
    assert content["totals"]["added"] == 1 and content["totals"]["modified"] == 1
    assert c1 != c2

    ro = ds.tj("open", KEY, "-r", "HEAD~1")
    pin1 = ds.manifest_at("HEAD~1", KEY)["pin_ref"]["tag"]
    assert ro["read_only"] is True and ro["ref"] == pin1 and ro["commit"] == c1
    assert ro["uri"] == f"lakefs://{lake.repo}/{pin1}/raw/" and ro["s3_uri"] == f"s3://{lake.repo}/{pin1}/raw/"
    rw = ds.tj("open", KEY)
    assert rw["read_only"] is False and rw["ref"] == "main"


def test_fork_spells_the_branch_for_lakefs_promote_and_merge(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    ds.tj("commit", "-m", "first")
    c1 = lake.head()
    r = ds.tj("new", "-b", "feat_x")
    branch = f"tether.ws.{ds.dataset_id()[:8]}.feat_x"
    assert [(o["key"], o["action"], o["branch"]) for o in r["objects"]] == [(KEY, "forked", branch)]
    name = encode_branch(branch)
    assert name == f"tether_dws_d{ds.dataset_id()[:8]}_dfeat__x" and decode_branch(name) == branch
    assert lake.branches()[name] == c1
    h = ds.tj("open", KEY)
    assert h["ref"] == name and h["read_only"] is False
    c2 = lake.write("raw/fork.csv", b"on the fork", branch=name)
    ds.tj("commit", "-m", "on the fork")
    assert ds.manifest(KEY)["state"] == {"commit": c2}

    # promote: lakeFS has no fast-forward merge; the base is reset to the
    # fork's head, which it is an ancestor of.
    ds.tj("promote", KEY)
    assert lake.head("main") == c2

    # merge: a diverged base, merged by lakeFS's three-way merge.
    c3 = lake.write("raw/fork2.csv", b"more", branch=name)
    ds.tj("commit", "-m", "more")
    lake.write("other/base.bin", b"base moved")
    r = ds.tj("merge", KEY)
    merged = lake.head("main")
    assert merged not in (c2, c3)
    parents = lake.api("CommitsApi").get_commit(lake.repo, merged).parents
    assert c3 in parents


def test_merge_conflict_is_refused_and_nothing_is_merged(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    ds.tj("commit", "-m", "first")
    ds.tj("new", "-b", "work")
    name = encode_branch(f"tether.ws.{ds.dataset_id()[:8]}.work")
    lake.write("raw/a.csv", b"fork's a", branch=name)
    ds.tj("commit", "-m", "fork")
    base = lake.write("raw/a.csv", b"base's a")
    r = ds.tj("merge", KEY, check_rc=3)
    assert lake.head("main") == base
    text = json.dumps(r)
    assert "conflict" in text and "raw/a.csv" in text, r


def test_verify_notices_a_deleted_tag_and_a_deleted_fork(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--prefix", "raw/")
    ds.tj("commit", "-m", "first")
    tag = ds.manifest(KEY)["pin_ref"]["tag"]
    lake.api("TagsApi").delete_tag(lake.repo, tag)
    p = ds.tether("verify", check_rc=3)
    assert f"tag {tag} is missing" in p.stdout + p.stderr
    ds.tether("repair")
    ds.tj("new", "-b", "gone")
    name = encode_branch(f"tether.ws.{ds.dataset_id()[:8]}.gone")
    lake.api("BranchesApi").delete_branch(lake.repo, name)
    p = ds.tether("status", check_rc=None)
    assert "no branch" in p.stdout + p.stderr and name in p.stdout + p.stderr


# ---------------------------------------------------------------------------
# Bad input and faults
# ---------------------------------------------------------------------------

def test_wrong_keys_are_a_one_line_auth_error(lake):
    ds = lake.ds
    (ds.root / ".tether" / "secrets.toml").write_text(
        secrets_for(lake.server).replace(lake.server.secret, "wrong-secret"))
    p = ds.tether("add", KEY, "--kind", "lakefs", "--repository", lake.repo, check_rc=1)
    line = p.stderr.splitlines()[0]
    assert f"lakeFS repository {lake.repo}" in line and "401" in line and "error authenticating" in line, p.stderr
    assert "secrets.toml" in p.stderr  # the hint says where keys come from
    assert ds.objects_files() == []


def test_missing_repository_branch_and_endpoint(lake):
    ds = lake.ds
    p = ds.tether("add", KEY, "--kind", "lakefs", "--repository", "no-such-repo", check_rc=1)
    assert "no-such-repo" in p.stderr and "not found" in p.stderr
    p = ds.tether("add", KEY, "--kind", "lakefs", "--repository", lake.repo, "--branch", "nope", check_rc=1)
    assert 'has no branch "nope"' in p.stderr
    p = ds.tether("add", KEY, "--kind", "lakefs", "--repository", "Bad_Name", check_rc=2)
    assert "is not a lakeFS repository name" in p.stderr
    p = ds.tether("add", KEY, "--kind", "lakefs", check_rc=2)
    assert "kind lakefs needs a repository" in p.stderr
    (ds.root / ".tether" / "secrets.toml").write_text("")
    p = ds.tether("add", KEY, "--kind", "lakefs", "--repository", lake.repo, check_rc=1)
    assert "no lakeFS endpoint" in p.stderr and "LAKECTL_SERVER_ENDPOINT_URL" in p.stderr
    assert ds.objects_files() == []


def test_a_manifest_cannot_choose_the_server_or_smuggle_a_path(lake):
    """The endpoint and keys come only from secrets.toml or lakectl's
    variables: a locator naming a host is refused, and so is a name that
    would add a path segment or a query to the URL."""
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo)
    path = ds.manifest_path(KEY)
    good = path.read_text()
    for bad, why in (('endpoint = "http://evil.example"', 'unknown key "endpoint"'),):
        path.write_text(good.replace("[locator]", "[locator]\n" + bad))
        p = ds.tether("status", check_rc=1)
        assert why in p.stderr, p.stderr
    for field, value in (("repository", "x/../../y"), ("branch", "main?x=1"), ("branch", "a/b")):
        path.write_text(good.replace(f'{field} = "{lake.repo if field == "repository" else "main"}"',
                                     f'{field} = "{value}"'))
        p = ds.tether("status", check_rc=1)
        assert "is not a lakeFS" in p.stderr, p.stderr
    lake.server.clear_requests()
    path.write_text(good)
    ds.tj("status")
    assert all(r["auth"] for r in lake.server.requests())


def test_server_errors_are_retried_and_drops_reported(lake):
    ds = lake.ds
    ds.tj("add", KEY, "--kind", "lakefs", "--repository", lake.repo)
    lake.server.clear_requests()
    lake.server.fault(rf"/{lake.repo}/branches/main$", status=503, method="GET", count=2)
    st = ds.tj("status")["objects"][0]  # two 503s, then the answer: retried
    assert st["current"] == {"commit": lake.head()}
    gets = [r for r in lake.server.requests() if r["method"] == "GET" and r["path"].endswith("/branches/main")]
    assert len(gets) >= 3  # the two that failed, then the one answered (and any later read)
    lake.server.fault(rf"/{lake.repo}/tags$", drop=True, method="POST", count=1)
    tags_before = lake.tags()
    p = ds.tether("commit", "-m", "dropped", check_rc=None)
    # A tag POST whose answer never came is read back: either the commit
    # went through with the pin, or it failed saying so and wrote nothing.
    if p.returncode == 0:
        assert len(lake.tags()) == len(tags_before) + 1
    else:
        assert "lakeFS repository" in p.stderr and ds.manifest(KEY).get("state") is None
    lake.server.fault(rf"/{lake.repo}/branches/main$", status=503, method="GET", count=50)
    p = ds.tether("status", check_rc=1)
    assert "503" in p.stderr
