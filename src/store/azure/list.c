/* List Blobs (restype=container&comp=list): a page of blob names under a
 * prefix, with each blob's size and ETag, paged with the opaque markers
 * Azure hands back (NextMarker), which cannot be made from a key. So
 * Azure has no "start after": a call that starts after a key pages from
 * the prefix and skips what sorts at or before it, except where it
 * continues the previous call (as the store front pages), which takes up
 * where that one stopped (struct az_resume): one request a page.
 * Directories of an account with a hierarchical namespace (zero-length
 * blobs with the metadata hdi_isfolder=true) are not objects. */
#include "store/azure/az.h"

#include "format/xml.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AZ_PAGE_MAX 5000

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

/* One page of the listing under name_prefix (the full blob name's),
 * parsed; *doc NULL when the container is not there and missing_ok. */
static int fetch_page(struct az_store *s, const char *op, const char *name_prefix, const char *marker,
                      size_t maxresults, int versions, int missing_ok, struct tt_xml_doc **doc)
{
	*doc = NULL;
	char *p = tt_http_escape(name_prefix, 0), *m = marker && *marker ? tt_http_escape(marker, 0) : NULL;
	char *q = p ? tt_strdupf("comp=list&include=%s%s%s&maxresults=%zu&prefix=%s&restype=container",
	                         versions ? "metadata%2Cversions" : "metadata", m ? "&marker=" : "", m ? m : "",
	                         maxresults, p)
	            : NULL;
	free(p);
	free(m);
	if (!q)
		return oom();
	struct az_request r = {.method = "GET", .query = q};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	free(q);
	char code[128];
	if (!rc && resp.status == 200) {
		char err[512], *name = tt_strdupf("List Blobs answer from %s", s->uri);
		*doc = tt_xml_parse((const char *)resp.body, resp.body_len, name ? name : "List Blobs answer", err,
		                    sizeof err);
		free(name);
		if (!*doc)
			rc = tether_error_set(TETHER_EIO, "%s: %s: %s", s->uri, op, err);
		else if (strcmp(tt_xml_name(tt_xml_root(*doc)), "EnumerationResults") != 0)
			rc = tether_error_set(TETHER_EIO, "%s: %s: the answer is <%s>, not <EnumerationResults>", s->uri, op,
			                      tt_xml_name(tt_xml_root(*doc)));
	} else if (!rc && !(missing_ok && resp.status == 404 &&
	                    strcmp(az_error_code(&resp, code, sizeof code), "ContainerNotFound") == 0)) {
		rc = az_fail(s, op, NULL, &resp);
	}
	tt_http_response_free(&resp);
	if (rc) {
		tt_xml_free(*doc);
		*doc = NULL;
	}
	return rc;
}

/* The blob's name (decoded when the service percent-encoded it, as it
 * does for a name XML cannot carry), malloc'd. */
static char *blob_name(const struct tt_xml_node *blob)
{
	const struct tt_xml_node *n = tt_xml_child(blob, "Name");
	if (!n)
		return NULL;
	const char *t = tt_xml_text(n), *enc = tt_xml_attr(n, "Encoded");
	if (!enc || strcmp(enc, "true") != 0)
		return strdup(t);
	char *o = malloc(strlen(t) + 1), *w = o;
	for (const char *c = t; o && *c; c++) {
		if (c[0] == '%' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2])) {
			char hex[3] = {c[1], c[2], '\0'};
			*w++ = (char)strtol(hex, NULL, 16);
			c += 2;
		} else {
			*w++ = *c;
		}
	}
	if (o)
		*w = '\0';
	return o;
}

static int is_folder(const struct tt_xml_node *blob)
{
	/* Metadata names are case-insensitive (Azurite answers Hdi_Isfolder). */
	const struct tt_xml_node *md = tt_xml_child(blob, "Metadata");
	for (const struct tt_xml_node *m = md ? tt_xml_child(md, NULL) : NULL; m; m = tt_xml_next(m, NULL))
		if (strcasecmp(tt_xml_name(m), "hdi_isfolder") == 0)
			return strcasecmp(tt_xml_text(m), "true") == 0;
	return 0;
}

static void blob_stat(const struct tt_xml_node *blob, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	const struct tt_xml_node *props = tt_xml_child(blob, "Properties");
	const char *len = props ? tt_xml_child_text(props, "Content-Length") : NULL;
	const char *etag = props ? tt_xml_child_text(props, "Etag") : NULL;
	const char *id = tt_xml_child_text(blob, "VersionId");
	const char *current = tt_xml_child_text(blob, "IsCurrentVersion");
	st->exists = 1;
	st->size = len ? strtoull(len, NULL, 10) : 0;
	az_version_from_etag(etag, &st->version);
	snprintf(st->version_id, sizeof st->version_id, "%s", id ? id : "");
	st->is_latest = !current || strcmp(current, "true") == 0;
}

static int last_segment_is_staging(const char *key)
{
	const char *slash = strrchr(key, '/');
	return tether_store_is_staging_name(slash ? slash + 1 : key);
}

/* Where a call of the listing stopped: the next call, the one that
 * starts after `after` under `prefix`, takes it up. Either the blob the
 * call stopped at was the last of its page: then it is `pending` (with
 * what the listing said of it) and the listing goes on at `marker`, the
 * page's NextMarker ("": there is no next page). Or it stopped inside a
 * page: then `marker` is the one that page was fetched with, and the
 * next call fetches it again and skips what it has given. */
struct az_resume {
	char *prefix, *after, *marker, *pending;
	struct tether_store_stat pending_stat;
};

void az_resume_free(struct az_resume *r)
{
	if (!r)
		return;
	free(r->prefix);
	free(r->after);
	free(r->marker);
	free(r->pending);
	free(r);
}

/* Keep r as the store's resume point (NULL: forget it); r is taken. */
static void resume_set(struct az_store *s, struct az_resume *r)
{
	pthread_mutex_lock(&s->resume_lock);
	az_resume_free(s->resume);
	s->resume = r;
	pthread_mutex_unlock(&s->resume_lock);
}

/* The resume point of a call that continues the previous one, taken from
 * the store; NULL otherwise. */
static struct az_resume *resume_take(struct az_store *s, const char *name_prefix, const char *after)
{
	struct az_resume *r = NULL;
	pthread_mutex_lock(&s->resume_lock);
	if (s->resume && *after && strcmp(s->resume->prefix, name_prefix) == 0 && strcmp(s->resume->after, after) == 0) {
		r = s->resume;
		s->resume = NULL;
	}
	pthread_mutex_unlock(&s->resume_lock);
	return r;
}

static struct az_resume *resume_new(const char *name_prefix, const char *after, const char *marker,
                                    const char *pending, const struct tether_store_stat *st)
{
	struct az_resume *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->prefix = strdup(name_prefix);
	r->after = strdup(after);
	r->marker = strdup(marker ? marker : "");
	r->pending = pending ? strdup(pending) : NULL;
	if (st)
		r->pending_stat = *st;
	if (!r->prefix || !r->after || !r->marker || (pending && !r->pending)) {
		az_resume_free(r);
		return NULL;
	}
	return r;
}

struct emitter {
	tether_store_key_fn key;
	tether_store_stat_fn stat;
	void *ud;
};

/* A listing call in progress. */
struct walk {
	struct az_store *s;
	const struct emitter *e;
	const char *name_prefix, *after;
	size_t max_keys, emitted;
	char *last; /* the last key given */
	int done, more;
};

static int give(struct walk *w, const char *key, const struct tether_store_stat *st)
{
	int rc = w->e->key ? w->e->key(w->e->ud, key) : w->e->stat(w->e->ud, key, st);
	w->emitted++;
	free(w->last);
	w->last = strdup(key);
	return rc ? rc : w->last ? 0 : oom();
}

/* The blobs of one page, fetched with marker, whose NextMarker is next. */
static int walk_page(struct walk *w, const struct tt_xml_node *root, const char *marker, const char *next)
{
	const struct tt_xml_node *blobs = tt_xml_child(root, "Blobs");
	size_t plen = strlen(w->s->prefix);
	int rc = 0;
	for (const struct tt_xml_node *b = blobs ? tt_xml_child(blobs, "Blob") : NULL; !rc && !w->done && b;
	     b = tt_xml_next(b, "Blob")) {
		char *name = blob_name(b);
		if (!name)
			return tether_error_set(TETHER_EIO, "%s: list: a <Blob> without a <Name>", w->s->uri);
		const char *key = name + plen;
		struct tether_store_stat st;
		blob_stat(b, &st);
		if (strncmp(name, w->s->prefix, plen) != 0 || !*key || is_folder(b) || last_segment_is_staging(key) ||
		    (*w->after && strcmp(key, w->after) <= 0)) {
			/* not a key of this listing */
		} else if (w->emitted < w->max_keys) {
			rc = give(w, key, &st);
		} else {
			w->more = 1;
			w->done = 1;
			int last_of_page = tt_xml_next(b, "Blob") == NULL;
			if (last_of_page || (marker && *marker))
				resume_set(w->s, last_of_page ? resume_new(w->name_prefix, w->last, next, key, &st)
				                              : resume_new(w->name_prefix, w->last, marker, NULL, NULL));
		}
		free(name);
	}
	return rc;
}

static int list_pages(struct az_store *s, const char *prefix, const char *start_after, size_t max_keys,
                      const struct emitter *e, int *more)
{
	*more = 0;
	struct walk w = {.s = s, .e = e, .after = start_after ? start_after : "", .max_keys = max_keys};
	/* The keys under prefix: "prefix/...", as under a directory. */
	char *name_prefix = tt_strdupf("%s%s%s", s->prefix, prefix, *prefix ? "/" : "");
	if (!name_prefix)
		return oom();
	w.name_prefix = name_prefix;
	struct az_resume *r = resume_take(s, name_prefix, w.after);
	char *marker = r ? r->marker : NULL;
	int rc = 0;
	if (r && r->pending) {
		rc = give(&w, r->pending, &r->pending_stat);
		w.done = !*r->marker; /* it was the last blob of the last page */
	}
	/* Skipping up to start_after from the prefix's first blob: big pages.
	 * Else one blob more than the call still gives, so that it stops at
	 * the last blob of a page and the next call needs no page twice. */
	int skipping = *w.after && !r;
	char *owned = NULL;
	while (!rc && !w.done) {
		size_t want = max_keys - w.emitted + 1;
		size_t page = skipping || want > AZ_PAGE_MAX ? AZ_PAGE_MAX : want;
		struct tt_xml_doc *doc = NULL;
		rc = fetch_page(s, "list", name_prefix, marker, page, 0, 0, &doc);
		const struct tt_xml_node *root = doc ? tt_xml_root(doc) : NULL;
		const char *next = root ? tt_xml_child_text(root, "NextMarker") : NULL;
		if (!rc)
			rc = walk_page(&w, root, marker, next);
		if (!rc && !w.done && (!next || !*next))
			w.done = 1;
		if (!rc && !w.done) {
			free(owned);
			marker = owned = strdup(next);
			if (!marker)
				rc = oom();
		}
		tt_xml_free(doc);
	}
	*more = !rc && w.more;
	free(owned);
	free(w.last);
	az_resume_free(r);
	free(name_prefix);
	return rc;
}

int az_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
            void *ud, int *more)
{
	struct emitter e = {.key = emit, .ud = ud};
	return list_pages(impl, prefix, start_after, max_keys, &e, more);
}

int az_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                 tether_store_stat_fn emit, void *ud, int *more)
{
	struct emitter e = {.stat = emit, .ud = ud};
	return list_pages(impl, prefix, start_after, max_keys, &e, more);
}

int az_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud)
{
	struct az_store *s = impl;
	char *name = tt_strdupf("%s%s", s->prefix, key), *marker = NULL;
	struct tether_store_stat *all = NULL;
	size_t n = 0, cap = 0;
	int rc = name ? 0 : oom(), done = 0;
	while (!rc && !done) {
		struct tt_xml_doc *doc = NULL;
		rc = fetch_page(s, "list versions", name, marker, AZ_PAGE_MAX, 1, 0, &doc);
		const struct tt_xml_node *root = doc ? tt_xml_root(doc) : NULL;
		const struct tt_xml_node *blobs = root ? tt_xml_child(root, "Blobs") : NULL;
		for (const struct tt_xml_node *b = blobs ? tt_xml_child(blobs, "Blob") : NULL; !rc && b;
		     b = tt_xml_next(b, "Blob")) {
			char *bn = blob_name(b);
			if (bn && strcmp(bn, name) == 0) {
				if (n == cap) {
					cap = cap ? cap * 2 : 8;
					struct tether_store_stat *grown = realloc(all, cap * sizeof *all);
					if (!grown)
						rc = oom();
					else
						all = grown;
				}
				if (!rc)
					blob_stat(b, &all[n++]);
			}
			free(bn);
		}
		const char *next = root ? tt_xml_child_text(root, "NextMarker") : NULL;
		if (!rc && (!next || !*next))
			done = 1;
		if (!rc && !done) {
			free(marker);
			if (!(marker = strdup(next)))
				rc = oom();
		}
		tt_xml_free(doc);
	}
	/* Azure lists a blob's versions oldest first (by version id, a
	 * timestamp); the contract is newest first. */
	for (size_t i = n; !rc && i > 0; i--)
		rc = emit(ud, key, &all[i - 1]);
	free(all);
	free(marker);
	free(name);
	return rc;
}

/* Is any blob under the root? *container_missing when the container is
 * not there at all. */
static int any_blob(struct az_store *s, const char *op, int *exists, int *container_missing)
{
	struct tt_xml_doc *doc = NULL;
	int rc = fetch_page(s, op, s->prefix, NULL, 1, 0, 1, &doc);
	const struct tt_xml_node *blobs = doc ? tt_xml_child(tt_xml_root(doc), "Blobs") : NULL;
	*exists = blobs && tt_xml_child(blobs, "Blob");
	*container_missing = !rc && !doc;
	tt_xml_free(doc);
	return rc;
}

int az_root_exists(void *impl, int *exists)
{
	int missing;
	return any_blob(impl, "root exists", exists, &missing);
}

/* Containers are made by the account's owner, not by tether: make_root
 * checks that the container is there, so a missing one is reported where
 * the store is made rather than at its first write. */
int az_make_root(void *impl)
{
	struct az_store *s = impl;
	int exists, missing;
	int rc = any_blob(s, "make root", &exists, &missing);
	if (!rc && missing)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: container '%s' not found in account '%s' (HTTP 404 "
		                      "ContainerNotFound); create it first", s->uri, s->container, s->cfg.account);
	return rc;
}

int az_remove_root(void *impl)
{
	struct az_store *s = impl;
	int exists, missing;
	int rc = any_blob(s, "remove root", &exists, &missing);
	if (!rc && exists)
		rc = tether_error_set(TETHER_EREFUSED, "%s: not removed: objects are left under it", s->uri);
	return rc;
}
