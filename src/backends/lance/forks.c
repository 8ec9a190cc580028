/* Working branches: a fork is a Lance branch created from the pin's tag
 * (clone.c). Lance cannot delete a branch a tag references, so a pinned
 * working branch outlives its workspace; a fork onto such a name picks
 * name.2, name.3, ... and returns the name it made. A conditional fork
 * onto an existing branch compares its head, deletes it and creates it
 * again (a window Lance's refs leave open); one expecting no branch is a
 * put-if-absent of the branch's manifest and JSON. */
#include "backends/lance/lance.h"

#include <stdlib.h>
#include <string.h>

static int same_pos(const struct lc_pos *a, const struct lc_pos *b)
{
	return strcmp(a->branch, b->branch) == 0 && a->version == b->version &&
	       (!a->branch_id) == (!b->branch_id) && (!a->branch_id || strcmp(a->branch_id, b->branch_id) == 0);
}

static int source_of(struct lc_dataset *ds, const json_t *state, const json_t *pin_ref, struct lc_pos *src)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	int rc = lc_state_read(state, src);
	if (rc || !tag)
		return rc;
	char *branch = NULL;
	uint64_t version = 0;
	int exists = 0;
	rc = lc_tag_read(ds, tag, &branch, &version, &exists);
	if (rc == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot fork: tag %s is gone", ds->uri, tag);
	else if (rc == 0 && (strcmp(branch, src->branch) != 0 || version != src->version))
		rc = tether_error_set(TETHER_EREFUSED, "%s: cannot fork: tag %s points at version %llu of %s, not the "
		                                       "pinned %llu of %s", ds->uri, tag, (unsigned long long)version,
		                      branch, (unsigned long long)src->version, src->branch);
	free(branch);
	return rc;
}

static int refuse_base(const struct lc_loc *loc, const char *branch, const char *doing)
{
	if (strcmp(branch, loc->branch) == 0 || strcmp(branch, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "%s: will not %s branch %s, the object's base branch", loc->uri,
		                        doing, branch);
	return 0;
}

/* The first of name, name.2, name.3, ... with no branch JSON. */
static int free_name(struct lc_dataset *ds, const char *name, char **out)
{
	for (int i = 2; i < 1000; i++) {
		char *cand = tt_strdupf("%s.%d", name, i);
		struct lc_branch b;
		int exists = 0;
		int rc = cand ? lc_branch_read(ds, cand, &b, &exists) : lc_fail_oom();
		lc_branch_free(&b);
		if (rc || !exists) {
			if (rc)
				free(cand);
			else
				*out = cand;
			return rc;
		}
		free(cand);
	}
	return tether_error_set(TETHER_EREFUSED, "%s: branches %s.2 to %s.999 all exist", ds->uri, name, name);
}

int lc_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos src, head;
	struct lc_branch held;
	*working_ref = NULL;
	memset(&src, 0, sizeof src);
	memset(&head, 0, sizeof head);
	int rc = lc_open(ctx, locator, &loc, &ds), exists = 0;
	if (rc)
		return rc;
	char *name = NULL;
	json_t *tags = NULL;
	if ((rc = refuse_base(&loc, branch, "fork over")) == 0 && (rc = lc_check_branch_name(branch)) == 0)
		rc = source_of(&ds, state, pin_ref, &src);
	if (rc == 0 && (rc = lc_branch_read(&ds, branch, &held, &exists)) == 0)
		lc_branch_free(&held);
	int absent = expect && !json_is_object(expect);
	if (rc == 0 && exists && !absent && expect) {
		struct lc_pos want;
		if ((rc = lc_state_read(expect, &want)) == 0 && (rc = lc_branch_head(&ds, branch, &head)) == 0 &&
		    !same_pos(&want, &head))
			rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s moved: expected version %llu of %s, found %llu "
			                                       "of %s; nothing was changed", ds.uri, branch,
			                      (unsigned long long)want.version, want.branch, (unsigned long long)head.version,
			                      head.branch);
		lc_pos_free(&want);
	}
	/* Already there (a commit on the fork moves it to its own head): a
	 * no-op, under its own name. */
	int there = 0;
	if (rc == 0 && exists) {
		if (!head.branch)
			rc = lc_branch_head(&ds, branch, &head);
		there = rc == 0 && same_pos(&head, &src);
	}
	if (rc == 0 && exists && !there && (rc = lc_tags_on_branch(&ds, branch, &tags)) == 0) {
		if (json_array_size(tags) > 0)
			rc = free_name(&ds, branch, &name); /* held by a pin: Lance will not delete it */
		else if (absent)
			rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s exists already; nothing was changed", ds.uri,
			                      branch);
		else
			rc = lc_branch_delete(&ds, branch);
	}
	if (rc == 0 && !name && !(name = strdup(branch)))
		rc = lc_fail_oom();
	if (rc == 0 && !there)
		rc = lc_branch_create(&ds, name, src.branch, src.version);
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", name)))
		rc = lc_fail_oom();
	json_decref(tags);
	free(name);
	lc_pos_free(&src);
	lc_pos_free(&head);
	lc_close(&ds);
	return rc;
}

static int open_working(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                        struct lc_loc *loc, struct lc_dataset *ds, const char **branch)
{
	*branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!*branch)
		return tether_error_set(TETHER_ECONFIG, "lance working ref names no working_branch");
	int rc = lc_open(ctx, locator, loc, ds);
	if (rc == 0 && (rc = refuse_base(loc, *branch, "delete")))
		lc_close(ds);
	return rc;
}

int lc_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	const char *branch;
	int rc = open_working(ctx, locator, working_ref, &loc, &ds, &branch);
	if (rc)
		return rc;
	rc = lc_branch_delete(&ds, branch);
	lc_close(&ds);
	return rc;
}

int lc_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                             const json_t *expect)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos want, head;
	const char *branch;
	int rc = open_working(ctx, locator, working_ref, &loc, &ds, &branch), exists = 0;
	if (rc)
		return rc;
	struct lc_branch b;
	if ((rc = lc_branch_read(&ds, branch, &b, &exists)) == 0)
		lc_branch_free(&b);
	if (rc == 0 && exists && (rc = lc_state_read(expect, &want)) == 0) {
		if ((rc = lc_branch_head(&ds, branch, &head)) == 0) {
			if (!same_pos(&want, &head))
				rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s is at version %llu of %s, not %llu of %s; "
				                                       "it stays", ds.uri, branch, (unsigned long long)head.version,
				                      head.branch, (unsigned long long)want.version, want.branch);
			else
				rc = lc_branch_delete(&ds, branch);
			lc_pos_free(&head);
		}
		lc_pos_free(&want);
	}
	lc_close(&ds);
	return rc;
}

/* A working branch whose head a pin holds, which Lance will not let be
 * deleted while the tag lives: everything on it is recorded, and tether
 * never writes there again (a later fork under its name picks name.2).
 * It is not listed as this workspace's, so `new` does not take it for a
 * branch someone else made, and gc does not try to delete it. */
static int retired(const json_t *tags, const char *name, const struct lc_pos *head)
{
	const char *tag;
	json_t *t;
	if (strcmp(head->branch, name) != 0)
		return 0;
	json_object_foreach((json_t *)tags, tag, t)
		if (strncmp(tag, "tether.", 7) == 0 && strcmp(json_string_value(json_object_get(t, "branch")), name) == 0 &&
		    (uint64_t)json_integer_value(json_object_get(t, "version")) == head->version)
			return 1;
	return 0;
}

int lc_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	json_t *all = NULL;
	*refs = NULL;
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc)
		return rc;
	char *prefix = tt_strdupf("tether.ws.%.8s.", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	json_t *out = json_array();
	if (!prefix || !out)
		rc = lc_fail_oom();
	json_t *tags = NULL;
	if (rc == 0 && (rc = lc_branch_list(&ds, &all)) == 0)
		rc = lc_tag_list(&ds, &tags);
	const char *name;
	json_t *doc;
	json_object_foreach(all, name, doc) {
		if (rc || strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		struct lc_pos head;
		if ((rc = lc_branch_head(&ds, name, &head)) == TETHER_ENOTFOUND) {
			/* A JSON without manifests: a branch Lance is still making
			 * (it writes the manifest first), or the remains of one; not
			 * a working branch tether could have left. */
			tether_error_clear();
			rc = 0;
		} else if (rc == 0) {
			if (!retired(tags, name, &head))
				json_array_append_new(out, json_pack("{s:s, s:{s:s}, s:o}", "branch", name, "ref", "working_branch",
				                                     name, "head", lc_state_of(&head)));
			lc_pos_free(&head);
		}
	}
	json_decref(tags);
	json_decref(all);
	free(prefix);
	lc_close(&ds);
	if (rc) {
		json_decref(out);
		return rc;
	}
	*refs = out;
	return 0;
}
