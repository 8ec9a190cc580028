/* tether diff A B: which objects were added, removed or changed between two
 * revisions, and with --content what changed inside each, natively. */
#include "core/abi.h"
#include "core/engine.h"
#include "core/sessions.h"
#include "core/listing_stream.h"

#include "core/pinid.h"
#include "core/registry.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ENTRIES 2000

struct side {
	const char *rev;
	char id[41];
	struct tt_manifest_set set;
	/* The working side, snapshotted: live listings by manifest index. */
	struct tt_obj *objs;
};

/* The working copy as the next commit would record it: each object's
 * live state, pin id and listing replace the recorded ones. An object
 * whose system cannot be read keeps its manifest as it is; compare
 * reports it as an error rather than letting it hide the others. */
static int snapshot_working(struct tether_repo *repo, struct side *s)
{
	int rc = tt_objs_prepare(repo, &s->set, 0, &s->objs);
	if (rc)
		return rc;
	tt_objs_snapshot(s->objs, s->set.n);
	for (size_t i = 0; i < s->set.n; i++) {
		struct tt_obj *o = &s->objs[i];
		if (o->rc || strcmp(o->status, "clean") == 0)
			continue;
		char pin_id[TT_PIN_ID_LEN + 1];
		rc = tt_obj_pin_id(repo, o, pin_id);
		if (rc)
			return rc;
		json_object_set(o->m->doc, "state", o->fp.state);
		json_object_set_new(o->m->doc, "pin", json_string(pin_id));
		json_object_del(o->m->doc, "listing");
		if (o->fp.listing) {
			char hex[65];
			tether_sha256_hex(o->fp.listing, o->fp.listing_len, hex);
			json_object_set_new(o->m->doc, "listing", json_string(hex));
		}
	}
	return 0;
}

static int load_side(struct tether_repo *repo, const char *rev, struct side *s)
{
	s->rev = rev ? rev : "@";
	int rc = tt_repo_resolve(repo, rev, s->id);
	if (rc == TETHER_ENOTFOUND && rev && strcmp(rev, "HEAD") == 0) {
		/* No commit yet: HEAD holds no objects, as status sees it. */
		tether_error_clear();
		strcpy(s->id, "unborn");
		return 0;
	}
	if (!rc)
		rc = tt_manifests_at(repo, s->id, &s->set);
	if (!rc && !*s->id && tt_repo_config_bool(repo, "snapshot", "auto", 1))
		rc = snapshot_working(repo, s);
	return rc;
}

static json_t *side_json(const struct side *s)
{
	int has_id = *s->id && strcmp(s->id, "unborn") != 0;
	return json_pack("{s:s, s:s?}", "rev", s->rev, "id", has_id ? s->id : NULL);
}

/* A listing named by a manifest, or NULL when the commit has none (commits
 * from before listings existed, or a listing removed by hand). The working
 * side's is lent from its snapshot (*owned = NULL: not copied, it can be
 * large); a commit's is read and handed over in *owned. */
static int load_listing(struct tether_repo *repo, const struct side *s, const struct tt_manifest *m, size_t *len,
                        char **owned, const char **text)
{
	const char *hex = tt_manifest_listing(m);
	*owned = NULL;
	*text = NULL;
	if (s->objs) {
		struct tt_obj *o = &s->objs[m - s->set.v];
		if (o->fp.listing) {
			*len = o->fp.listing_len;
			*text = o->fp.listing;
			return 0;
		}
	}
	int rc = hex ? tt_listing_load(repo, s->id, hex, owned, len) : 0;
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		*owned = NULL;
		return 0;
	}
	if (rc) {
		free(*owned);
		*owned = NULL;
	}
	*text = *owned;
	return rc;
}

/* Both sides are commits: their listings are read in pieces (two threads
 * reading ahead) while the backend merges them. A listing that cannot be
 * opened counts as missing, as load_listing has it. */
static int streamed_diff(struct tether_repo *repo, const struct tether_backend *be, const struct tether_bctx *ctx,
                         const struct side *a, const struct side *b, const struct tt_manifest *ma,
                         const struct tt_manifest *mb, size_t max, json_t **out)
{
	const char *ha = tt_manifest_listing(ma), *hb = tt_manifest_listing(mb);
	struct tt_listing_stream *sa = NULL, *sb = NULL;
	int rc = ha ? tt_listing_stream_open(repo, a->id, ha, &sa) : 0;
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 0;
	}
	if (!rc && hb && (rc = tt_listing_stream_open(repo, b->id, hb, &sb)) == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 0;
	}
	struct tether_listing_source src_a = {TETHER_LISTING_SOURCE_INIT, .read = tt_listing_stream_fill, .ud = sa};
	struct tether_listing_source src_b = {TETHER_LISTING_SOURCE_INIT, .read = tt_listing_stream_fill, .ud = sb};
	if (!rc)
		rc = TT_BACKEND_GET(be, diff_streams)(ctx, tt_manifest_locator(mb), tt_manifest_state(ma), tt_manifest_state(mb),
		                      sa ? &src_a : NULL, sb ? &src_b : NULL, max, out);
	if (rc)
		rc = tether_error_set(rc, "%s: %s", mb->key, tether_error_last());
	tt_listing_stream_close(sa);
	tt_listing_stream_close(sb);
	return rc;
}

static int content_diff(struct tether_repo *repo, const struct side *a, const struct side *b,
                        const struct tt_manifest *ma, const struct tt_manifest *mb, size_t max, json_t **out)
{
	*out = NULL;
	const struct tether_backend *be = tether_backend_find(tt_manifest_kind(mb));
	if (!be) {
		tether_error_clear();
		return 0;
	}
	if (!(be->caps & TETHER_CAP_DIFF) || !tt_manifest_state(ma) || !tt_manifest_state(mb))
		return 0;
	struct tether_bctx ctx;
	tt_repo_bctx(repo, be->kind, mb->key, &ctx);
	if (TT_BACKEND_GET(be, diff_streams) && *a->id && *b->id && strcmp(a->id, "unborn") != 0 && strcmp(b->id, "unborn") != 0)
		return streamed_diff(repo, be, &ctx, a, b, ma, mb, max, out);
	size_t la = 0, lb = 0;
	char *own_a = NULL, *own_b = NULL;
	const char *ta, *tb = NULL;
	int rc = load_listing(repo, a, ma, &la, &own_a, &ta);
	if (!rc)
		rc = load_listing(repo, b, mb, &lb, &own_b, &tb);
	if (!rc)
		rc = TT_BACKEND_GET(be, diff)(&ctx, tt_manifest_locator(mb), tt_manifest_state(ma), tt_manifest_state(mb), ta, la, tb, lb,
		              max, out);
	if (rc)
		rc = tether_error_set(rc, "%s: %s", mb->key, tether_error_last());
	free(own_a);
	free(own_b);
	return rc;
}

static int same_object(const struct tt_manifest *a, const struct tt_manifest *b)
{
	return json_equal(tt_manifest_state(a), tt_manifest_state(b)) &&
	       json_equal(tt_manifest_locator(a), tt_manifest_locator(b)) &&
	       json_equal(json_object_get(a->doc, "pin"), json_object_get(b->doc, "pin"));
}

/* The side's object for m, when it was fingerprinted and failed. */
static const struct tt_obj *side_failed(const struct side *s, const struct tt_manifest *m)
{
	if (!m || !s->objs)
		return NULL;
	const struct tt_obj *o = &s->objs[m - s->set.v];
	return o->rc ? o : NULL;
}

static json_t *entry(const struct tt_manifest *m, const char *change, const char *from_pin, const char *to_pin)
{
	return json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:n}", "key", m->key, "kind", tt_manifest_kind(m), "change",
	                 change, "from_pin", from_pin, "to_pin", to_pin, "content");
}

/* The objects a diff could not finish, counted, and the first one's
 * code and message for the command's return. */
struct diff_errors {
	int n;
	int first_rc;
	char *first;
};

/* Entry e could not be finished: "error" holds why. */
static void mark_error(json_t *e, int rc, const char *why, struct diff_errors *errs)
{
	json_object_set_new(e, "error", json_string(why));
	if (!errs->n++) {
		errs->first_rc = rc;
		errs->first = strdup(why);
	}
}

static int compare(struct tether_repo *repo, struct side *a, struct side *b, const struct tether_diff_opts *opts,
                   json_t *list, struct diff_errors *errs)
{
	size_t i = 0, j = 0, max = opts->max_entries ? opts->max_entries : DEFAULT_MAX_ENTRIES;
	while (i < a->set.n || j < b->set.n) {
		int c = i == a->set.n ? 1 : j == b->set.n ? -1 : strcmp(a->set.v[i].key, b->set.v[j].key);
		if (c < 0) {
			json_t *e = entry(&a->set.v[i], "removed", tt_manifest_pin(&a->set.v[i]), NULL);
			const struct tt_obj *o = side_failed(a, &a->set.v[i]);
			if (o)
				mark_error(e, o->rc, o->error, errs);
			json_array_append_new(list, e);
			i++;
			continue;
		}
		if (c > 0) {
			json_t *e = entry(&b->set.v[j], "added", NULL, tt_manifest_pin(&b->set.v[j]));
			const struct tt_obj *o = side_failed(b, &b->set.v[j]);
			if (o)
				mark_error(e, o->rc, o->error, errs);
			json_array_append_new(list, e);
			j++;
			continue;
		}
		struct tt_manifest *ma = &a->set.v[i++], *mb = &b->set.v[j++];
		const struct tt_obj *failed = side_failed(a, ma) ? side_failed(a, ma) : side_failed(b, mb);
		if (failed) {
			/* Its live state is unknown: whether it changed is too. */
			json_t *e = entry(mb, "error", tt_manifest_pin(ma), NULL);
			mark_error(e, failed->rc, failed->error, errs);
			json_array_append_new(list, e);
			continue;
		}
		if (same_object(ma, mb))
			continue;
		json_t *e = entry(mb, "changed", tt_manifest_pin(ma), tt_manifest_pin(mb));
		if (opts->content) {
			json_t *content;
			int rc = content_diff(repo, a, b, ma, mb, max, &content);
			if (rc)
				mark_error(e, rc, tether_error_last(), errs);
			else if (content)
				json_object_set_new(e, "content", content);
		}
		json_array_append_new(list, e);
	}
	return 0;
}

static int diff_command(tether_repo *repo, const struct tether_diff_opts *opts, json_t **report)
{
	*report = NULL;
	struct side a = {0}, b = {0};
	/* A content diff asks the objects' systems, which are reached with
	 * what secrets.toml gives them (an endpoint, keys, a catalog's
	 * password), as for status: a tracked secrets.toml is refused. diff
	 * only reads, so a committed workspace.toml, which could steer a
	 * fork, does not stop it (tt_repo_check_secrets would). */
	int rc = opts->content ? tt_repo_load_secrets(repo) : 0;
	if (!rc)
		rc = load_side(repo, opts->from ? opts->from : "HEAD", &a);
	if (!rc)
		rc = load_side(repo, opts->to, &b);
	json_t *list = json_array();
	struct diff_errors errs = {0};
	if (!rc)
		rc = compare(repo, &a, &b, opts, list, &errs);
	if (!rc)
		*report = json_pack("{s:o, s:o, s:i, s:O}", "from", side_json(&a), "to", side_json(&b), "errors", errs.n,
		                    "objects", list);
	/* The report stands; the return is the first failure's code. */
	if (!rc && errs.n)
		rc = tether_error_set(errs.first_rc, "%d %s could not be compared (marked error); first: %s", errs.n,
		                      tt_plural(errs.n, "object", "objects"), errs.first);
	free(errs.first);
	json_decref(list);
	tt_objs_free(a.objs, a.set.n);
	tt_objs_free(b.objs, b.set.n);
	tt_manifest_set_free(&a.set);
	tt_manifest_set_free(&b.set);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_diff(tether_repo *repo, const struct tether_diff_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_diff_opts opts;
	int rc = TT_OPTS_IN("struct tether_diff_opts", TETHER_DIFF_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = diff_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
