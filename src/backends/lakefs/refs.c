/* States, pins and working branches of a lakeFS repository.
 *
 * The state is the head commit of the branch the locator reads, plus
 * `dirty = true` while that branch holds uncommitted (staged) objects
 * under the prefix: staging is in no commit, so a dirty state is shown by
 * status and refused by pin. A pin is the tag tether.<pin id> at the
 * commit; a fork is a branch made from the tag. A branch that already
 * exists is moved with hard_reset, and never while it holds staged
 * objects, which would be lost. */
#include "backends/lakefs/lakefs.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static const long absent_ok[] = {404, 0};

static char *repo_path(struct lfs_conn *c, const char *fmt_tail, const char *name)
{
	char *r = lfs_esc(c->repo), *n = name ? lfs_esc(name) : NULL;
	char *out = r && (!name || n) ? tt_strdupf("/repositories/%s%s%s", r, fmt_tail, n ? n : "") : NULL;
	free(r);
	free(n);
	return out;
}

int lfs_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                    struct tether_fingerprint *out)
{
	(void)policy;
	out->state = NULL;
	out->listing = NULL;
	out->listing_len = 0;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	int is_branch = 0, dirty = 0;
	char *pos = lfs_position(&loc, &is_branch), *commit = NULL;
	if (!pos)
		rc = tt_fail_oom();
	else if (is_branch)
		rc = lfs_branch_head(&c, pos, &commit);
	else
		rc = lfs_resolve(&c, pos, &commit);
	if (rc == 0 && is_branch)
		rc = lfs_branch_dirty(&c, pos, loc.prefix, &dirty);
	if (rc == 0) {
		out->state = json_pack("{s:s}", "commit", commit);
		if (out->state && dirty)
			json_object_set_new(out->state, "dirty", json_true());
		if (!out->state)
			rc = tt_fail_oom();
	}
	free(pos);
	free(commit);
	lfs_disconnect(&c);
	return rc;
}

static int tag_commit(struct lfs_conn *c, const char *tag, char **commit)
{
	*commit = NULL;
	char *path = repo_path(c, "/tags/", tag);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *j = NULL;
	int rc = lfs_request(c, "GET", path, NULL, absent_ok, &status, &j);
	if (rc == 0 && status != 404) {
		const char *id = json_string_value(json_object_get(j, "commit_id"));
		if (!id)
			rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: tag %s has no commit_id", c->repo, tag);
		else if (!(*commit = strdup(id)))
			rc = tt_fail_oom();
	}
	json_decref(j);
	free(path);
	return rc;
}

int lfs_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
            json_t **pin_ref, int *created)
{
	*created = 0;
	*pin_ref = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	const char *commit = lfs_state_commit(state);
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	if (json_is_true(json_object_get(state, "dirty"))) {
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s holds uncommitted changes under "
		                                       "'%s': commit them in lakeFS first (lakectl commit); tether records "
		                                       "committed states only", loc.repository,
		                      loc.working_branch ? loc.working_branch : loc.branch, loc.prefix);
		lfs_disconnect(&c);
		return rc;
	}
	char *tag = tt_strdupf("tether.%s", pin_id), *path = repo_path(&c, "/tags", NULL), *at = NULL;
	json_t *body = tag && commit ? json_pack("{s:s, s:s}", "id", tag, "ref", commit) : NULL;
	long status = 0;
	static const long exists_ok[] = {409, 0};
	if (!tag || !path || !body)
		rc = tt_fail_oom();
	else
		rc = lfs_request(&c, "POST", path, body, exists_ok, &status, NULL);
	/* 409 (there already) or no answer at all: the tag as it stands says
	 * whether this is the pin. */
	if (rc == 0 && status != 409)
		*created = 1;
	else if (rc == 0 || rc == TETHER_ETRANSIENT) {
		int first = rc;
		if ((rc = tag_commit(&c, tag, &at)) == 0 && !at)
			rc = first ? tether_error_set(first, "lakeFS repository %s: tag %s not made", c.repo, tag)
			           : tether_error_set(TETHER_EIO, "lakeFS repository %s: tag %s exists and is gone", c.repo, tag);
		else if (rc == 0 && strcmp(at, commit) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: tag %s already names commit %s, not %s",
			                      c.repo, tag, at, commit);
	}
	if (rc == 0 && !(*pin_ref = json_pack("{s:s, s:s, s:s}", "tag", tag, "pin", pin_id, "commit", commit)))
		rc = tt_fail_oom();
	json_decref(body);
	free(tag);
	free(path);
	free(at);
	lfs_disconnect(&c);
	return rc;
}

int lfs_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	if (!tag || strncmp(tag, "tether.", 7) != 0)
		return tether_error_set(TETHER_ECONFIG, "lakefs pin_ref names no tether tag");
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *path = repo_path(&c, "/tags/", tag);
	long status;
	rc = path ? lfs_request(&c, "DELETE", path, NULL, absent_ok, &status, NULL) : tt_fail_oom();
	free(path);
	lfs_disconnect(&c);
	return rc;
}

int lfs_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	*pin_refs = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *path = repo_path(&c, "/tags", NULL);
	json_t *tags = NULL;
	rc = path ? lfs_list_all(&c, path, "prefix=tether.", 1000000, &tags) : tt_fail_oom();
	json_t *out = rc == 0 ? json_array() : NULL;
	size_t i;
	json_t *t;
	json_array_foreach(tags, i, t) {
		const char *id = json_string_value(json_object_get(t, "id"));
		const char *commit = json_string_value(json_object_get(t, "commit_id"));
		if (out && id && commit && strncmp(id, "tether.", 7) == 0 && id[7])
			json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "tag", id, "pin", id + 7, "commit", commit));
	}
	json_decref(tags);
	free(path);
	lfs_disconnect(&c);
	if (rc == 0 && !out)
		rc = tt_fail_oom();
	*pin_refs = out;
	return rc;
}

static int commit_exists(struct lfs_conn *c, const char *commit, int *yes)
{
	char *path = repo_path(c, "/commits/", commit);
	long status = 0;
	int rc = path ? lfs_request(c, "GET", path, NULL, absent_ok, &status, NULL) : tt_fail_oom();
	*yes = rc == 0 && status != 404;
	free(path);
	return rc;
}

int lfs_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
               int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *commit = lfs_state_commit(state), *tag = json_string_value(json_object_get(pin_ref, "tag"));
	int held = 0;
	char *at = NULL;
	if ((rc = commit_exists(&c, commit, &held)) == 0 && held && tag)
		rc = tag_commit(&c, tag, &at);
	if (rc == 0) {
		*ok = held && (!tag || (at && strcmp(at, commit) == 0));
		if (!held)
			*detail = tt_strdupf("commit %s is gone from lakeFS repository %s", commit, c.repo);
		else if (!*ok)
			*detail = at ? tt_strdupf("tag %s moved to commit %s", tag, at) : tt_strdupf("tag %s is missing", tag);
	}
	free(at);
	lfs_disconnect(&c);
	return rc;
}

static int refuse_base(const struct lfs_loc *loc, const char *lakefs_name, const char *doing)
{
	if (strcmp(lakefs_name, loc->branch) == 0)
		return tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: will not %s branch %s, the object's base "
		                                         "branch", loc->repository, doing, lakefs_name);
	return 0;
}

/* The head of `name`, or NULL when there is no such branch. */
static int head_or_absent(struct lfs_conn *c, const char *name, char **head)
{
	int rc = lfs_branch_head(c, name, head);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	return rc;
}

int lfs_refuse_staged(struct lfs_conn *c, const char *name, const char *doing)
{
	int dirty = 0;
	int rc = lfs_branch_dirty(c, name, "", &dirty);
	if (rc == 0 && dirty)
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s holds uncommitted objects: will not "
		                                       "%s it (commit or reset them in lakeFS first)", c->repo, name, doing);
	return rc;
}

static int create_branch(struct lfs_conn *c, const char *name, const char *source, long *status)
{
	char *path = repo_path(c, "/branches", NULL);
	json_t *body = json_pack("{s:s, s:s}", "name", name, "source", source);
	static const long exists_ok[] = {409, 0};
	int rc = path && body ? lfs_request(c, "POST", path, body, exists_ok, status, NULL) : tt_fail_oom();
	json_decref(body);
	free(path);
	return rc;
}

int lfs_reset_branch(struct lfs_conn *c, const char *name, const char *commit)
{
	char *path = repo_path(c, "/branches/", name), *ref = lfs_esc(commit);
	char *full = path && ref ? tt_strdupf("%s/hard_reset?ref=%s", path, ref) : NULL;
	long status;
	int rc = full ? lfs_request(c, "PUT", full, NULL, NULL, &status, NULL) : tt_fail_oom();
	free(path);
	free(ref);
	free(full);
	return rc;
}

int lfs_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
             const char *branch, const json_t *expect, json_t **working_ref)
{
	*working_ref = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *name = lfs_branch_encode(branch), *head = NULL, *tagged = NULL;
	const char *target = lfs_state_commit(state), *tag = json_string_value(json_object_get(pin_ref, "tag"));
	if (!name)
		rc = tt_fail_oom();
	else if (!lfs_valid_branch(name))
		rc = tether_error_set(TETHER_EUSAGE, "lakeFS repository %s: branch name %s is too long", c.repo, name);
	if (rc == 0)
		rc = refuse_base(&loc, name, "fork over");
	/* The pin's tag, when there is one, must still name the state. */
	if (rc == 0 && tag && (rc = tag_commit(&c, tag, &tagged)) == 0 && (!tagged || strcmp(tagged, target) != 0))
		rc = tether_error_set(TETHER_ENOTFOUND, "lakeFS repository %s: cannot fork: tag %s is %s (`tether repair` "
		                                        "re-pins the state if the repository still holds it)", c.repo, tag,
		                      tagged ? "moved" : "gone");
	if (rc == 0)
		rc = head_or_absent(&c, name, &head);
	const char *want = expect && json_is_object(expect) ? lfs_state_commit(expect) : NULL;
	if (rc == 0 && expect && !want && head)
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s exists (at %s): expected it absent",
		                      c.repo, name, head);
	else if (rc == 0 && want && (!head || strcmp(head, want) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s moved: expected %s, found %s", c.repo,
		                      name, want, head ? head : "absent");
	if (rc == 0 && !head) {
		long status = 0;
		rc = create_branch(&c, name, tag ? tag : target, &status);
		if (rc == 0 && status == 409)
			rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s was created meanwhile", c.repo,
			                      name);
	} else if (rc == 0 && strcmp(head, target) != 0 && (rc = lfs_refuse_staged(&c, name, "move")) == 0)
		rc = lfs_reset_branch(&c, name, target);
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", branch)))
		rc = tt_fail_oom();
	free(name);
	free(head);
	free(tagged);
	lfs_disconnect(&c);
	return rc;
}

static int delete_branch(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                         const json_t *expect)
{
	const char *branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!branch)
		return tether_error_set(TETHER_ECONFIG, "lakefs working ref names no working_branch");
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *name = lfs_branch_encode(branch), *head = NULL, *path = NULL;
	if (!name)
		rc = tt_fail_oom();
	if (rc == 0)
		rc = refuse_base(&loc, name, "delete");
	if (rc == 0)
		rc = head_or_absent(&c, name, &head);
	const char *want = expect ? lfs_state_commit(expect) : NULL;
	if (rc == 0 && head && expect && (!want || strcmp(want, head) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: branch %s moved: expected %s, found %s; not "
		                                       "deleted", c.repo, name, want ? want : "?", head);
	if (rc == 0 && head && (rc = lfs_refuse_staged(&c, name, "delete")) == 0) {
		long status;
		path = repo_path(&c, "/branches/", name);
		rc = path ? lfs_request(&c, "DELETE", path, NULL, absent_ok, &status, NULL) : tt_fail_oom();
	}
	free(name);
	free(head);
	free(path);
	lfs_disconnect(&c);
	return rc;
}

int lfs_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	return delete_branch(ctx, locator, working_ref, NULL);
}

int lfs_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                              const json_t *expect)
{
	return delete_branch(ctx, locator, working_ref, expect);
}

int lfs_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	*refs = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *prefix = tt_strdupf("tether.ws.%.8s.", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	char *enc = prefix ? lfs_branch_encode(prefix) : NULL, *q = enc ? lfs_esc(enc) : NULL;
	char *query = q ? tt_strdupf("prefix=%s", q) : NULL, *path = repo_path(&c, "/branches", NULL);
	json_t *branches = NULL, *out = NULL;
	rc = query && path ? lfs_list_all(&c, path, query, 1000000, &branches) : tt_fail_oom();
	if (rc == 0 && !(out = json_array()))
		rc = tt_fail_oom();
	size_t i;
	json_t *b;
	json_array_foreach(branches, i, b) {
		const char *id = json_string_value(json_object_get(b, "id"));
		const char *commit = json_string_value(json_object_get(b, "commit_id"));
		char *name = id ? lfs_branch_decode(id) : NULL;
		if (out && name && commit && strncmp(name, prefix, strlen(prefix)) == 0)
			json_array_append_new(out, json_pack("{s:s, s:{s:s}, s:{s:s}}", "branch", name, "ref", "working_branch",
			                                     name, "head", "commit", commit));
		free(name);
	}
	json_decref(branches);
	free(prefix);
	free(enc);
	free(q);
	free(query);
	free(path);
	lfs_disconnect(&c);
	*refs = out;
	return rc;
}

/* The log of `of` (every ancestor, as lakeFS lists them) searched for
 * `ancestor`. */
int lfs_is_ancestor(struct lfs_conn *c, const char *ancestor, const char *of, int *yes)
{
	*yes = strcmp(ancestor, of) == 0;
	if (*yes)
		return 0;
	char *path = repo_path(c, "/refs/", of), *full = path ? tt_strdupf("%s/commits", path) : NULL;
	json_t *log = NULL;
	int rc = full ? lfs_list_all(c, full, "", 1000000, &log) : tt_fail_oom();
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e) {
		const char *id = json_string_value(json_object_get(e, "id"));
		if (id && strcmp(id, ancestor) == 0)
			*yes = 1;
	}
	json_decref(log);
	free(path);
	free(full);
	return rc;
}

int lfs_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                 const json_t *descendant, int *answer)
{
	*answer = 0;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *a = lfs_state_commit(ancestor), *d = lfs_state_commit(descendant);
	int have_a = 0, have_d = 0;
	if ((rc = commit_exists(&c, a, &have_a)) == 0 && (rc = commit_exists(&c, d, &have_d)) == 0 && (!have_a || !have_d))
		rc = tether_error_set(TETHER_ENOTFOUND, "lakeFS repository %s holds no commit %s", c.repo, have_a ? d : a);
	if (rc == 0)
		rc = lfs_is_ancestor(&c, a, d, answer);
	lfs_disconnect(&c);
	return rc;
}

/* verify, then the commit read back and its objects under the prefix
 * listed (one page): a commit whose metadata lakeFS cannot read fails
 * though its tag is in place. */
int lfs_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                    const json_t *pin_ref, int *ok, char **detail)
{
	int rc = lfs_verify(ctx, locator, state, pin_ref, ok, detail);
	if (rc || !*ok)
		return rc;
	struct lfs_loc loc;
	struct lfs_conn c;
	if ((rc = lfs_begin(ctx, locator, &loc, &c)) != 0)
		return rc;
	const char *commit = lfs_state_commit(state);
	char *path = repo_path(&c, "/commits/", commit), *ref = repo_path(&c, "/refs/", commit);
	char *p = lfs_esc(loc.prefix), *ls = ref && p ? tt_strdupf("%s/objects/ls?amount=1&prefix=%s", ref, p) : NULL;
	json_t *j = NULL, *list = NULL;
	long status;
	if (!path || !ls)
		rc = tt_fail_oom();
	else if ((rc = lfs_request(&c, "GET", path, NULL, NULL, &status, &j)) == 0 &&
	         !json_is_string(json_object_get(j, "meta_range_id")))
		rc = tether_error_set(TETHER_EIO, "commit %s has no meta_range_id", commit);
	if (rc == 0)
		rc = lfs_request(&c, "GET", ls, NULL, NULL, &status, &list);
	if (rc == 0 && !json_is_array(json_object_get(list, "results")))
		rc = tether_error_set(TETHER_EIO, "the objects of commit %s under '%s' are not a list", commit, loc.prefix);
	if (rc && rc != TETHER_ETRANSIENT && rc != TETHER_EAUTH && rc != TETHER_ECANCELLED) {
		*ok = 0;
		*detail = tt_strdupf("commit %s cannot be read: %s", commit, tether_error_last());
		tether_error_clear();
		rc = 0;
	}
	json_decref(j);
	json_decref(list);
	free(path);
	free(ref);
	free(p);
	free(ls);
	lfs_disconnect(&c);
	return rc;
}
