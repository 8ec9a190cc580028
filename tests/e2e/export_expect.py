"""What `tether export` should write, computed without tether: commits from
`git cat-file commit`, refs from `git for-each-ref`, manifests from `git
ls-tree` / `git show` parsed with tomllib, listings from their committed
JSON lines, state ids from conftest.cjson and hashlib. Shared by
test_export.py and test_publish.py.

Each table is a list of tuples in the column order docs/CLI.md gives, JSON
cells (locator, policy, state, pin_ref) as canonical JSON text, booleans as
bool, null as None; compare sorted."""
import hashlib
import json
import subprocess
import tomllib

from conftest import cjson

COLUMNS = {
    "commits": ["commit_id", "change_id", "parents", "author_name", "author_email", "author_time",
                "author_tz_minutes", "committer_name", "committer_email", "commit_time", "message"],
    "objects": ["commit_id", "key", "kind", "uri", "locator", "policy", "write", "pin_policy", "state_id",
                "state", "pin", "recoverable", "listing"],
    "object_states": ["state_id", "kind", "uri", "locator", "state", "pin", "pin_ref", "recoverable", "listing"],
    "refs": ["type", "name", "commit_id"],
    "listings": ["listing", "files", "bytes"],
    "listing_entries": ["listing", "path", "content", "size"],
    "meta": ["name", "value"],
}
INT_COLUMNS = {"author_time", "author_tz_minutes", "commit_time", "files", "bytes", "size"}
BOOL_COLUMNS = {"recoverable"}


def git(root, *args, text=True):
    p = subprocess.run(["git", *args], cwd=root, capture_output=True, text=text)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _signature(line):
    """'Name <email> 1234 +0130' -> name, email, time, offset in minutes."""
    name, rest = line.split(" <", 1)
    email, rest = rest.split("> ", 1)
    when, tz = rest.split(" ")
    sign = -1 if tz[0] == "-" else 1
    return name, email, int(when), sign * (int(tz[1:3]) * 60 + int(tz[3:5]))


def commit_row(root, cid, change_id=None):
    raw = git(root, "cat-file", "commit", cid)
    head, message = raw.split("\n\n", 1)
    parents, author, committer = [], None, None
    for line in head.split("\n"):
        field, _, value = line.partition(" ")
        if field == "parent":
            parents.append(value)
        elif field == "author":
            author = _signature(value)
        elif field == "committer":
            committer = _signature(value)
    return (cid, change_id, " ".join(parents), author[0], author[1], author[2], author[3], committer[0],
            committer[1], committer[2], message)


def state_id(doc):
    ident = {"kind": doc["kind"], "locator": doc["locator"], "state": doc["state"]}
    if "pin_ref" in doc:
        ident["pin_ref"] = doc["pin_ref"]
    return hashlib.sha256(cjson(ident).encode()).hexdigest()


def _opt(doc, *path):
    for p in path:
        if not isinstance(doc, dict) or p not in doc:
            return None
        doc = doc[p]
    return doc


def manifests_at(root, cid, prefix=".tether/objects/"):
    names = git(root, "ls-tree", "-r", "--name-only", cid, "--", prefix).split("\n")
    out = {}
    for name in filter(None, names):
        if name.endswith(".toml"):
            out[name[len(prefix):-5]] = tomllib.loads(git(root, "show", f"{cid}:{name}"))
    return out


def expected_tables(root, commits, dataset_id, refs, change_ids=None, listings_prefix=".tether/listings/"):
    """The tables for these commit ids and refs [(type, name, commit)]."""
    t = {name: [] for name in COLUMNS}
    states, listings = {}, {}
    newest = 0
    for cid in commits:
        row = commit_row(root, cid, (change_ids or {}).get(cid))
        newest = max(newest, row[9])
        t["commits"].append(row)
        for key, doc in manifests_at(root, cid).items():
            loc = doc["locator"]
            uri = loc.get("uri", loc.get("path"))
            sid = state_id(doc) if "state" in doc else None
            t["objects"].append((cid, key, doc["kind"], uri, cjson(loc), cjson(doc.get("policy", {})),
                                 _opt(doc, "policy", "write"), _opt(doc, "policy", "pin"), sid,
                                 cjson(doc["state"]) if "state" in doc else None, doc.get("pin"),
                                 doc.get("recoverable"), doc.get("listing")))
            if sid:
                states[sid] = (sid, doc["kind"], uri, cjson(loc), cjson(doc["state"]), doc.get("pin"),
                               cjson(doc["pin_ref"]) if "pin_ref" in doc else None, doc.get("recoverable"),
                               doc.get("listing"))
            if doc.get("listing"):
                listings.setdefault(doc["listing"], cid)
    t["object_states"] = list(states.values())
    for digest, cid in listings.items():
        text = git(root, "show", f"{cid}:{listings_prefix}{digest}.jsonl")
        files = size = 0
        for line in filter(None, text.split("\n")):
            e = json.loads(line)
            t["listing_entries"].append((digest, e["p"], e["k"], e["s"]))
            files += 1
            size += e["s"]
        t["listings"].append((digest, files, size))
    wanted = set(commits)
    t["refs"] = [r for r in refs if r[2] in wanted]
    import datetime
    when = datetime.datetime.fromtimestamp(newest, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    t["meta"] = [("dataset_id", dataset_id), ("export_time", when), ("schema_version", "1"),
                 ("tether_version", "0.1.0")]
    return t


def git_refs(root):
    out = []
    for line in filter(None, git(root, "for-each-ref", "--format=%(refname) %(objecttype) %(objectname) "
                                 "%(*objectname)").split("\n")):
        parts = line.split(" ")
        name, otype, oid = parts[0], parts[1], parts[2]
        target = parts[3] if otype == "tag" and len(parts) > 3 else oid
        for prefix, typ in (("refs/heads/", "branch"), ("refs/tags/", "tag"), ("refs/remotes/", "remote")):
            if name.startswith(prefix) and not (typ == "remote" and name.endswith("/HEAD")):
                out.append((typ, name[len(prefix):], target))
    return out


def all_commits(root):
    return [c for c in git(root, "rev-list", "--all").split("\n") if c]


def sorted_rows(rows):
    return sorted(rows, key=lambda r: tuple("" if c is None else str(c) for c in r))


def meta_subset(rows):
    """The meta rows expected_tables predicts (revisions and vcs are
    checked by the tests themselves)."""
    return [r for r in rows if r[0] in ("dataset_id", "export_time", "schema_version", "tether_version")]
