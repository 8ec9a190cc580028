/* Working branches: what `new`, a writable `open` and `commit`'s
 * new.auto_fork do to one object, the condition every fork is made on, and
 * taking a run's forks back.
 *
 * A fork of tether.ws.<dataset8>.<bookmark> is conditional on the head
 * tether last left that branch at in this checkout (workspace.toml's
 * heads), or on the branch being absent when tether never made it here:
 * writes nobody has committed are never overwritten. The condition can be
 * checked against the store beforehand, read-only (tt_fork_precheck), so a
 * command refuses before it has moved anything. */
#include "core/abi.h"
#include "core/engine.h"

#include "core/pinid.h"
#include "core/trunk.h"
#include "core/workspace.h"
#include "format/cjson.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static const char *write_policy(const struct tt_obj *o)
{
	const char *w = json_string_value(json_object_get(tt_manifest_policy(o->m), "write"));
	return w ? w : "none";
}

int tt_fork_wanted(const struct tt_obj *o)
{
	return (o->caps & TETHER_CAP_FORK) && strcmp(write_policy(o), "fork") == 0;
}

int tt_obj_detached(const struct tt_obj *o)
{
	return json_object_get(tt_manifest_locator(o->m), "at") != NULL;
}

const char *tt_fork_decision(const struct tt_obj *o, int on_trunk, const char **detail)
{
	const char *policy = write_policy(o);
	*detail = NULL;
	if (!(o->caps & TETHER_CAP_FORK) || strcmp(policy, "none") == 0) {
		*detail = !(o->caps & TETHER_CAP_FORK) ? "not forkable" : "write = none";
		return "skip";
	}
	if (strcmp(policy, "track") == 0) {
		*detail = "writes go to the upstream branch";
		return "track";
	}
	/* Where `at` puts it, it stays (pinned there by the first commit) until
	 * a `pull` on the trunk moves it onto its branch: a fork would hide
	 * that position, and two keys of one store at two states must coexist. */
	if (tt_obj_detached(o)) {
		*detail = "at its detached `at`: `tether pull` on the trunk moves it onto its branch";
		return "detached";
	}
	/* The trunk stands for the upstream branch itself. */
	if (on_trunk) {
		*detail = "on the trunk: works on its upstream branch";
		return "upstream";
	}
	if (!tt_manifest_state(o->m)) {
		*detail = "never recorded: commit it first";
		return "skip";
	}
	return "fork";
}

char *tt_fork_scope(struct tt_obj *o)
{
	json_t *identity = NULL;
	if (!o->b->identity || o->b->identity(&o->ctx, tt_manifest_locator(o->m), &identity) != 0) {
		tether_error_clear(); /* no scope: the object forks on its own */
		return NULL;
	}
	char *text = tt_cjson(identity);
	char *scope = text ? tt_strdupf("%s %s", o->b->kind, text) : NULL;
	free(text);
	json_decref(identity);
	return scope;
}

/* Another object of the workspace in the same branch scope (one store: two
 * keys on one Icechunk repository, two databases of one Neon project) that
 * has a head recorded on `branch`: its workspace entry, or NULL. */
static json_t *scope_mate(const json_t *ws, const char *key, const char *scope, const char *branch)
{
	const char *k;
	json_t *entry;
	if (!scope)
		return NULL;
	json_object_foreach(json_object_get(ws, "working"), k, entry) {
		const char *s = json_string_value(json_object_get(entry, "scope"));
		if (strcmp(k, key) != 0 && s && strcmp(s, scope) == 0 &&
		    json_object_get(json_object_get(entry, "heads"), branch))
			return entry;
	}
	return NULL;
}

json_t *tt_fork_expect(const json_t *ws, struct tt_obj *o, const char *branch)
{
	json_t *own = json_object_get(json_object_get(tt_workspace_entry(ws, o->m->key), "heads"), branch);
	if (own)
		return own;
	/* One store has one working branch per bookmark, whichever of its
	 * objects forked it first: where that one left it is the condition. */
	char *scope = tt_fork_scope(o);
	json_t *mate = scope_mate(ws, o->m->key, scope, branch);
	free(scope);
	return mate ? json_object_get(json_object_get(mate, "heads"), branch) : NULL;
}

char *tt_state_brief(const struct tether_backend *b, const json_t *state)
{
	json_t *content = tt_content_state(b, state);
	char *text = tt_cjson(content);
	json_decref(content);
	if (text && strlen(text) > 72)
		strcpy(text + 69, "...");
	return text ? text : strdup("?");
}

/* The row list_working_refs gives for `branch`, or NULL. */
static json_t *find_row(const json_t *rows, const char *branch)
{
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		const char *name = json_string_value(json_object_get(row, "branch"));
		if (name && strcmp(name, branch) == 0)
			return row;
	}
	return NULL;
}

int tt_fork_head(struct tt_obj *o, const char *branch, json_t **head, int *exists)
{
	*head = NULL;
	*exists = 0;
	if (TT_BACKEND_GET(o->b, list_working_refs)) {
		json_t *rows = NULL;
		int rc = TT_BACKEND_GET(o->b, list_working_refs)(&o->ctx, tt_manifest_locator(o->m), &rows);
		const json_t *row = rc ? NULL : find_row(rows, branch);
		const json_t *h = json_object_get(row, "head");
		*exists = row != NULL;
		*head = h ? json_deep_copy(h) : NULL;
		json_decref(rows);
		return rc;
	}
	/* No listing: the working branch's state is what the object reads
	 * there (its locator has the working ref merged in). */
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	int only = o->ctx.state_only;
	o->ctx.state_only = 1;
	int rc = o->b->fingerprint(&o->ctx, o->locator, tt_manifest_policy(o->m), &fp);
	o->ctx.state_only = only;
	free(fp.listing);
	if (rc) {
		json_decref(fp.state);
		return rc;
	}
	*head = fp.state;
	*exists = 1;
	return 0;
}

static int refuse(const struct tt_obj *o, const char *branch, const char *why)
{
	tether_error_set(TETHER_EREFUSED, "%s: cannot fork %s: %s", o->m->key, branch, why);
	tether_error_set_hint("nothing was moved; look at what is on that branch (commit it, or delete the branch if "
	                      "it holds nothing you need), then run the command again");
	return TETHER_EREFUSED;
}

int tt_fork_precheck(struct tt_obj *o, const char *branch, const json_t *expect)
{
	if (!TT_BACKEND_GET(o->b, list_working_refs))
		return 0; /* nothing to ask: the fork's own condition decides */
	json_t *rows = NULL;
	int rc = TT_BACKEND_GET(o->b, list_working_refs)(&o->ctx, tt_manifest_locator(o->m), &rows);
	if (rc) {
		rc = tether_error_set(rc, "%s: cannot check %s before forking it: %s", o->m->key, branch,
		                      tether_error_last());
		json_decref(rows);
		return rc;
	}
	const json_t *head = json_object_get(find_row(rows, branch), "head");
	char *now = head ? tt_state_brief(o->b, head) : NULL, *was = expect ? tt_state_brief(o->b, expect) : NULL;
	char *why = NULL;
	if (!expect && find_row(rows, branch))
		why = tt_strdupf("it exists already (at %s) and tether did not make it in this checkout",
		                 now ? now : "an unknown head");
	else if (expect && !find_row(rows, branch))
		why = tt_strdupf("it was deleted since tether last left it at %s", was);
	else if (expect && (!head || !tt_same_content(o->b, expect, head)))
		why = tt_strdupf("it moved since tether last left it (at %s, now at %s)", was, now ? now : "an unknown head");
	rc = why ? refuse(o, branch, why) : 0;
	free(why);
	free(now);
	free(was);
	json_decref(rows);
	return rc;
}

int tt_fork_find_working(struct tt_obj *o, const char *branch, json_t **wref, json_t **head)
{
	*wref = *head = NULL;
	if (!TT_BACKEND_GET(o->b, list_working_refs))
		return 0; /* nothing to find: a fork decides, on its own condition */
	json_t *rows = NULL;
	int rc = TT_BACKEND_GET(o->b, list_working_refs)(&o->ctx, tt_manifest_locator(o->m), &rows);
	if (rc) {
		rc = tether_error_set(rc, "%s: cannot look for %s: %s", o->m->key, branch, tether_error_last());
	} else {
		json_t *row = find_row(rows, branch);
		if (row && json_is_object(json_object_get(row, "ref")) && json_object_get(row, "head")) {
			*wref = json_incref(json_object_get(row, "ref"));
			*head = json_incref(json_object_get(row, "head"));
		}
	}
	json_decref(rows);
	return rc;
}

int tt_fork_adopt(struct tether_repo *repo, struct tt_obj *o, json_t *ws, const char *branch,
                  const json_t *planned_head, json_t **result)
{
	(void)repo;
	json_t *wref = NULL, *head = NULL;
	*result = NULL;
	int rc = tt_fork_find_working(o, branch, &wref, &head);
	/* Nothing is written to the store, but the head recorded is the one the
	 * plan showed: a branch that moved or went since is refused. */
	if (!rc && (!head || !tt_same_content(o->b, planned_head, head))) {
		char *was = tt_state_brief(o->b, planned_head), *now = head ? tt_state_brief(o->b, head) : NULL;
		rc = tether_error_set(TETHER_EREFUSED, "%s: cannot adopt %s: it %s since the plan (at %s%s%s)", o->m->key,
		                      branch, now ? "moved" : "was deleted", was, now ? ", now at " : "", now ? now : "");
		free(was);
		free(now);
	}
	if (!rc) {
		char *scope = tt_fork_scope(o);
		json_object_set_new(json_object_get(ws, "working"), o->m->key,
		                    json_pack("{s:O, s:s?, s:O?, s:s, s:{s:O}, s:s?}", "ref", wref, "from_pin",
		                              tt_manifest_pin(o->m), "state", tt_manifest_state(o->m), "branch", branch,
		                              "heads", branch, head, "scope", scope));
		*result = json_pack("{s:s, s:s, s:s, s:O, s:O}", "key", o->m->key, "action", "adopted", "branch", branch,
		                    "ref", wref, "head", head);
		free(scope);
	}
	json_decref(wref);
	json_decref(head);
	return rc;
}

int tt_fork_scopes_agree(struct tt_obj *objs, size_t n, const char *branch, int on_trunk)
{
	json_t *first = json_object(); /* scope -> index of its first forked object */
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		const char *detail;
		if (strcmp(tt_fork_decision(&objs[i], on_trunk, &detail), "fork") != 0)
			continue;
		char *scope = tt_fork_scope(&objs[i]);
		json_t *seen = scope ? json_object_get(first, scope) : NULL;
		if (scope && !seen) {
			json_object_set_new(first, scope, json_integer((json_int_t)i));
		} else if (seen) {
			struct tt_obj *a = &objs[json_integer_value(seen)], *b = &objs[i];
			if (!tt_same_content(b->b, tt_manifest_state(a->m), tt_manifest_state(b->m))) {
				char *sa = tt_state_brief(a->b, tt_manifest_state(a->m)), *sb = tt_state_brief(b->b, tt_manifest_state(b->m));
				char *why = tt_strdupf("%s and %s are objects of one store, which share its working branch, but are "
				                       "recorded at different states (%s, %s)", a->m->key, b->m->key, sa, sb);
				rc = refuse(b, branch, why);
				free(why);
				free(sa);
				free(sb);
			}
		}
		free(scope);
	}
	json_decref(first);
	return rc;
}

int tt_fork_object(struct tether_repo *repo, struct tt_obj *o, json_t *ws, const char *bookmark,
                   struct tt_fork_log *log, json_t **result)
{
	const json_t *state = tt_manifest_state(o->m);
	const char *detail;
	const char *action = tt_fork_decision(o, tt_is_trunk(repo, bookmark), &detail);
	*result = NULL;
	if (strcmp(action, "skip") == 0) {
		*result = json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", "skipped", "detail", detail);
		return 0;
	}
	if (strcmp(action, "fork") != 0) {
		/* No working ref: the object reads and writes its locator's own
		 * position (the upstream branch, or a detached `at`). */
		static const struct {
			const char *decision, *done;
		} done[] = {{"track", "tracking"}, {"upstream", "upstream"}, {"detached", "detached"}};
		const char *said = action;
		for (size_t i = 0; i < sizeof done / sizeof done[0]; i++)
			if (strcmp(done[i].decision, action) == 0)
				said = done[i].done;
		json_object_del(json_object_get(ws, "working"), o->m->key);
		*result = json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", said, "detail", detail);
		return 0;
	}
	char *branch = tt_working_branch_name(repo, bookmark);
	char *scope = tt_fork_scope(o);
	json_t *prev = tt_workspace_entry(ws, o->m->key);
	json_t *heads = json_object_get(prev, "heads");
	/* The head tether last left this branch at, or JSON null: a branch it
	 * never made must not exist yet, so nobody's work is overwritten. */
	json_t *known = tt_fork_expect(ws, o, branch);
	json_t *mate = json_object_get(heads, branch) ? NULL : scope_mate(ws, o->m->key, scope, branch);
	int rc = 0;
	if (mate && !tt_same_content(o->b, json_object_get(mate, "state"), state)) {
		/* Moving the shared branch to this object's state would change what
		 * the other object reads. */
		char *here = tt_state_brief(o->b, state), *there = tt_state_brief(o->b, json_object_get(mate, "state"));
		char *why = tt_strdupf("objects of one store share its working branch, and another object of this store "
		                       "works there at %s, not at %s", there, here);
		rc = refuse(o, branch, why);
		free(why);
		free(here);
		free(there);
	}
	json_t *absent = json_null();
	json_t *wref = NULL;
	if (!rc)
		rc = TT_BACKEND_GET(o->b, fork)(&o->ctx, tt_manifest_locator(o->m), state, json_object_get(o->m->doc, "pin_ref"), branch,
		                known ? known : absent, &wref);
	if (rc) {
		if (!mate || rc != TETHER_EREFUSED)
			rc = tether_error_set(rc, "%s: cannot fork %s: %s", o->m->key, branch, tether_error_last());
		free(branch);
		free(scope);
		return rc;
	}
	if (log) {
		if (log->n == log->cap) {
			log->cap = log->cap ? 2 * log->cap : 8;
			log->v = realloc(log->v, log->cap * sizeof *log->v);
			if (!log->v)
				abort();
		}
		log->v[log->n++] = (struct tt_fork_done){o, strdup(branch), known ? json_deep_copy(known) : NULL,
		                                         json_deep_copy(state), json_incref(wref)};
	}
	json_t *new_heads = heads ? json_deep_copy(heads) : json_object();
	json_object_set(new_heads, branch, (json_t *)state);
	json_object_set_new(json_object_get(ws, "working"), o->m->key,
	                    json_pack("{s:O, s:s?, s:O, s:s, s:o, s:s?}", "ref", wref, "from_pin", tt_manifest_pin(o->m),
	                              "state", state, "branch", branch, "heads", new_heads, "scope", scope));
	*result = json_pack("{s:s, s:s, s:s, s:o}", "key", o->m->key, "action", "forked", "branch", branch, "ref", wref);
	free(branch);
	free(scope);
	return 0;
}

/* Newest first: a branch this run made is deleted again, one it moved goes
 * back to where it was, on the condition that it is still where this run
 * put it. What cannot be taken back is said in *failed. */
void tt_fork_log_undo(struct tt_fork_log *log, char **failed)
{
	*failed = NULL;
	for (size_t i = log->n; i-- > 0;) {
		struct tt_fork_done *d = &log->v[i];
		struct tt_obj *o = d->obj;
		json_t *wref = NULL;
		tether_error_clear();
		int rc = d->before ? TT_BACKEND_GET(o->b, fork)(&o->ctx, tt_manifest_locator(o->m), d->before, NULL, d->branch, d->after,
		                                &wref)
		                   : TT_BACKEND_GET(o->b, delete_working_ref)(&o->ctx, tt_manifest_locator(o->m), d->wref);
		json_decref(wref);
		if (rc && !*failed)
			*failed = tt_strdupf("%s: %s", o->m->key, tether_error_last());
	}
}

void tt_fork_log_free(struct tt_fork_log *log)
{
	for (size_t i = 0; i < log->n; i++) {
		free(log->v[i].branch);
		json_decref(log->v[i].before);
		json_decref(log->v[i].after);
		json_decref(log->v[i].wref);
	}
	free(log->v);
	memset(log, 0, sizeof *log);
}
