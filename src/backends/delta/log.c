/* The `_delta_log/` listing: which commits and checkpoints the log holds,
 * where the newest version is, whether the commits after the checkpoint a
 * reader starts from have a gap, and which versions can still be rebuilt
 * (PROTOCOL.md, "Delta Log Entries", "Checkpoints", "Metadata Cleanup"). */
#include "backends/delta/delta.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dl_fail_oom(void)
{
	return tt_fail_oom();
}

void dl_commit_key(int64_t v, char out[40])
{
	snprintf(out, 40, DL_LOG "%020" PRId64 ".json", v);
}

/* n decimal digits at p, as a version; -1 when they are not. */
static int64_t digits(const char *p, size_t n)
{
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* The listing, gathered. */
struct gather {
	struct dl_log *log;
	int64_t *json;
	size_t njson, capjson;
	size_t capcps;
	int rc;
};

static int add_json(struct gather *g, int64_t v)
{
	if (g->njson == g->capjson) {
		size_t cap = g->capjson ? g->capjson * 2 : 256;
		int64_t *p = realloc(g->json, cap * sizeof *p);
		if (!p)
			return dl_fail_oom();
		g->json = p;
		g->capjson = cap;
	}
	g->json[g->njson++] = v;
	return 0;
}

static struct dl_checkpoint *find_cp(struct dl_log *log, int64_t v, enum dl_cp_kind kind, uint32_t parts)
{
	for (size_t i = log->ncps; i-- > 0;) {
		struct dl_checkpoint *c = &log->cps[i];
		if (c->version != v)
			return NULL; /* the listing is in order: a version's names are together */
		if (c->kind == kind && c->parts == parts)
			return c;
	}
	return NULL;
}

static int add_cp(struct gather *g, const char *key, int64_t v, enum dl_cp_kind kind, uint32_t part, uint32_t parts,
                  int json)
{
	struct dl_log *log = g->log;
	if (kind == DL_CP_MULTIPART) {
		struct dl_checkpoint *c = find_cp(log, v, kind, parts);
		if (c) {
			if (part <= 64 && !(c->seen_mask_lo & (1ull << (part - 1)))) {
				c->seen_mask_lo |= 1ull << (part - 1);
				c->seen++;
			} else if (part > 64) {
				c->seen++; /* a listing names a key once */
			}
			if (part == 1) {
				free(c->key);
				if (!(c->key = strdup(key)))
					return dl_fail_oom();
			}
			return 0;
		}
	}
	if (log->ncps == g->capcps) {
		size_t cap = g->capcps ? g->capcps * 2 : 16;
		struct dl_checkpoint *p = realloc(log->cps, cap * sizeof *p);
		if (!p)
			return dl_fail_oom();
		log->cps = p;
		g->capcps = cap;
	}
	struct dl_checkpoint *c = &log->cps[log->ncps];
	memset(c, 0, sizeof *c);
	c->version = v;
	c->kind = kind;
	c->json = json;
	c->parts = parts;
	if (kind == DL_CP_MULTIPART) {
		c->seen = 1;
		if (part <= 64)
			c->seen_mask_lo = 1ull << (part - 1);
	}
	if (!(c->key = strdup(key)))
		return dl_fail_oom();
	log->ncps++;
	return 0;
}

/* One key of the listing: a commit, a checkpoint, or something a reader
 * of the log leaves alone (.crc, .compacted.json, _last_checkpoint,
 * _sidecars/, _staged_commits/, anything else). */
static int take_key(struct gather *g, const char *key)
{
	if (strncmp(key, DL_LOG, strlen(DL_LOG)) != 0)
		return 0;
	const char *name = key + strlen(DL_LOG);
	if (strchr(name, '/') || strlen(name) < 21 || name[20] != '.')
		return 0;
	int64_t v = digits(name, 20);
	if (v < 0)
		return 0;
	const char *rest = name + 21;
	if (strcmp(rest, "json") == 0)
		return add_json(g, v);
	if (strncmp(rest, "checkpoint.", 11) != 0)
		return 0;
	rest += 11;
	if (strcmp(rest, "parquet") == 0)
		return add_cp(g, key, v, DL_CP_SINGLE, 0, 0, 0);
	size_t n = strlen(rest);
	if (n == 10 + 1 + 10 + 8 && rest[10] == '.' && strcmp(rest + 21, ".parquet") == 0) {
		int64_t part = digits(rest, 10), parts = digits(rest + 11, 10);
		if (part >= 1 && parts >= 1 && part <= parts && parts <= UINT32_MAX)
			return add_cp(g, key, v, DL_CP_MULTIPART, (uint32_t)part, (uint32_t)parts, 0);
		return 0;
	}
	if (n > 5 && strcmp(rest + n - 5, ".json") == 0)
		return add_cp(g, key, v, DL_CP_UUID, 0, 0, 1);
	if (n > 8 && strcmp(rest + n - 8, ".parquet") == 0)
		return add_cp(g, key, v, DL_CP_UUID, 0, 0, 0);
	return 0;
}

static int list_from(struct dl_log *log, const char *start_after, struct gather *g)
{
	tether_store_iter *it = NULL;
	/* Pages as large as a long log: a local store walks its directory
	 * once per page, and an object store pages by its own limit anyway. */
	int rc = tether_store_list(log->store, "_delta_log", start_after, DL_LIST_PAGE, &it);
	for (const char *key = NULL; rc == 0;) {
		if ((rc = tether_store_next(it, &key)) || !key)
			break;
		rc = take_key(g, key);
	}
	tether_store_iter_free(it);
	return rc;
}

static int listed_complete(const struct dl_checkpoint *c)
{
	return c->kind != DL_CP_MULTIPART || c->seen == c->parts;
}

/* _last_checkpoint's version, or -1 when there is none. A torn or foreign
 * file is refused: a writer that left half a pointer may have left more. */
static int last_checkpoint_hint(struct dl_log *log, int64_t *hint)
{
	*hint = -1;
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = tether_store_get(log->store, DL_LOG "_last_checkpoint", &data, &len, NULL);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	json_error_t err;
	json_t *doc = len <= DL_MAX_LAST_CHECKPOINT_BYTES ? json_loadb((const char *)data, len, 0, &err) : NULL;
	free(data);
	json_t *v = json_object_get(doc, "version");
	if (!doc)
		rc = tether_error_set(TETHER_EIO, "%s/" DL_LOG "_last_checkpoint: not JSON (%s at line %d column %d)", log->uri,
		                      len > DL_MAX_LAST_CHECKPOINT_BYTES ? "too large" : err.text, err.line, err.column);
	else if (!json_is_integer(v) || json_integer_value(v) < 0)
		rc = tether_error_set(TETHER_EIO, "%s/" DL_LOG "_last_checkpoint: \"version\" is not a version number",
		                      log->uri);
	else
		*hint = json_integer_value(v);
	json_decref(doc);
	return rc;
}

static int cmp_cp(const void *a, const void *b)
{
	const struct dl_checkpoint *x = a, *y = b;
	return x->version < y->version ? -1 : x->version > y->version;
}

static void reset_listing(struct dl_log *log, struct gather *g)
{
	for (size_t i = 0; i < log->ncps; i++)
		free(log->cps[i].key);
	free(log->cps);
	log->cps = NULL;
	log->ncps = 0;
	g->njson = 0;
	g->capcps = 0;
}

int dl_log_has_json(const struct dl_log *log, int64_t v)
{
	if (v < log->have_base || v - log->have_base >= (int64_t)log->have_len)
		return 0;
	return log->have[v - log->have_base];
}

/* The newest checkpoint at or below v whose listed parts are all there. */
static const struct dl_checkpoint *newest_listed_cp(const struct dl_log *log, int64_t v)
{
	for (size_t i = log->ncps; i-- > 0;)
		if (log->cps[i].version <= v && listed_complete(&log->cps[i]))
			return &log->cps[i];
	return NULL;
}

/* The JSON versions as a presence map over [first, latest]; a listing
 * whose versions are too far apart to map is a log no writer made. */
static int build_map(struct dl_log *log, struct gather *g)
{
	int64_t first = g->json[0], last = g->json[g->njson - 1];
	if (last - first >= (int64_t)1 << 30)
		return tether_error_set(TETHER_EIO, "%s/" DL_LOG ": commit versions %" PRId64 " and %" PRId64
		                                    " are too far apart to be one log",
		                        log->uri, first, last);
	log->have_base = first;
	log->have_len = (size_t)(last - first + 1);
	if (!(log->have = calloc(log->have_len, 1)))
		return dl_fail_oom();
	for (size_t i = 0; i < g->njson; i++)
		log->have[g->json[i] - first] = 1;
	log->latest = last;
	int64_t v = last;
	while (v > first && log->have[v - 1 - first])
		v--;
	log->oldest_json = v;
	return 0;
}

int dl_log_open(const struct tether_bctx *ctx, const json_t *locator, const char *uri, int full, struct dl_log *out)
{
	memset(out, 0, sizeof *out);
	out->latest = out->oldest_json = -1;
	json_t *options = NULL;
	int rc = dl_store_options(ctx, locator, uri, &options);
	if (!rc)
		rc = tether_store_open(uri, options, &out->store);
	json_decref(options);
	if (rc)
		return rc;
	out->uri = tether_store_uri(out->store);
	out->cache_dir = ctx ? ctx->cache_dir : NULL;
	struct gather g = {.log = out};
	int64_t hint = -1;
	if (!full)
		rc = last_checkpoint_hint(out, &hint);
	if (!rc && hint >= 0) {
		char after[40];
		snprintf(after, sizeof after, DL_LOG "%020" PRId64, hint);
		rc = list_from(out, after, &g);
		/* A stale hint (its checkpoint gone, or none listed complete):
		 * the whole log decides. */
		if (!rc && (!out->ncps || !newest_listed_cp(out, INT64_MAX) || !g.njson)) {
			reset_listing(out, &g);
			hint = -1;
		}
	}
	if (!rc && hint < 0) {
		out->full = 1;
		rc = list_from(out, NULL, &g);
	}
	if (!rc && !g.njson) {
		int exists = 0;
		if (tether_store_root_exists(out->store, &exists) == 0 && !exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s does not exist", out->uri);
		else
			rc = tether_error_set(TETHER_ENOTFOUND, "%s is not a Delta table (no commits in %s/" DL_LOG ")",
			                      out->uri, out->uri);
	}
	if (!rc) {
		if (out->ncps)
			qsort(out->cps, out->ncps, sizeof *out->cps, cmp_cp);
		rc = build_map(out, &g);
	}
	/* The commits a reader replays, from the newest checkpoint it would
	 * start at (or from version 0), must all be there. */
	if (!rc) {
		const struct dl_checkpoint *cp = newest_listed_cp(out, out->latest);
		int64_t from = cp ? cp->version + 1 : 0;
		for (int64_t v = out->latest; v >= from; v--)
			if (!dl_log_has_json(out, v)) {
				char key[40];
				dl_commit_key(v, key);
				rc = tether_error_set(TETHER_EIO, "%s/%s is missing: the log has a gap below version %" PRId64
				                                  " %s",
				                      out->uri, key, out->latest,
				                      cp ? "after its newest checkpoint" : "and no checkpoint to start from");
				break;
			}
	}
	free(g.json);
	if (rc)
		dl_log_close(out);
	return rc;
}

void dl_log_close(struct dl_log *log)
{
	for (size_t i = 0; i < log->ncps; i++)
		free(log->cps[i].key);
	free(log->cps);
	free(log->have);
	json_decref(log->protocol);
	json_decref(log->metadata);
	tether_store_close(log->store);
	memset(log, 0, sizeof *log);
}

const char *dl_table_id(const struct dl_log *log)
{
	return json_string_value(json_object_get(log->metadata, "id"));
}

int dl_log_load_state(struct dl_log *log)
{
	const struct dl_checkpoint *cp = newest_listed_cp(log, log->latest);
	int64_t stop = cp ? cp->version + 1 : 0;
	int rc = 0;
	for (int64_t v = log->latest; rc == 0 && v >= stop && !(log->protocol && log->metadata); v--) {
		json_t *actions = NULL;
		rc = dl_read_commit(log->store, log->uri, v, &actions);
		size_t i;
		json_t *a;
		/* Within one commit the last action of a kind wins. */
		json_t *p = NULL, *m = NULL;
		json_array_foreach(actions, i, a) {
			if (json_object_get(a, "protocol"))
				p = json_object_get(a, "protocol");
			if (json_object_get(a, "metaData"))
				m = json_object_get(a, "metaData");
		}
		if (p && !log->protocol)
			log->protocol = json_incref(p);
		if (m && !log->metadata)
			log->metadata = json_incref(m);
		json_decref(actions);
	}
	if (rc == 0 && cp && !(log->protocol && log->metadata)) {
		json_t *p = NULL, *m = NULL;
		char *cached = NULL;
		if (!dl_cache_get(log, cp, &p, &m, &cached) && (rc = dl_checkpoint_state(log, cp, &p, &m)) == 0)
			dl_cache_put(cached, p, m);
		free(cached);
		if (!log->protocol)
			log->protocol = p;
		else
			json_decref(p);
		if (!log->metadata)
			log->metadata = m;
		else
			json_decref(m);
	}
	if (rc == 0 && !log->protocol)
		rc = tether_error_set(TETHER_EIO, "%s: the log holds no protocol action", log->uri);
	if (rc == 0 && (!json_is_object(log->metadata) || !json_is_string(json_object_get(log->metadata, "id")) ||
	                !*json_string_value(json_object_get(log->metadata, "id"))))
		rc = tether_error_set(TETHER_EIO, "%s: the log holds no metaData action with an id", log->uri);
	if (rc == 0)
		rc = dl_protocol_check(log->protocol, log->uri);
	return rc;
}

/* Every commit in (from, to] is listed. */
static int commits_from(const struct dl_log *log, int64_t from, int64_t to)
{
	for (int64_t w = from + 1; w <= to; w++)
		if (!dl_log_has_json(log, w))
			return 0;
	return 1;
}

int dl_log_reconstructable(struct dl_log *log, int64_t v, int *ok, int64_t *oldest)
{
	*ok = 0;
	*oldest = -1;
	if (v < 0 || v > log->latest)
		return 0;
	int rc = 0;
	/* Every commit from 0 up to v: nothing was cleaned up below it. */
	int from_zero = log->have_base == 0 && dl_log_has_json(log, 0);
	if (from_zero && commits_from(log, 0, v)) {
		*ok = 1;
		*oldest = 0;
		return 0;
	}
	/* Else the newest whole checkpoint at or below v: an older one would
	 * need every commit this one needs, and more. */
	for (size_t i = log->ncps; rc == 0 && !*ok && i-- > 0;) {
		struct dl_checkpoint *c = &log->cps[i];
		int complete = 0;
		if (c->version > v || (rc = dl_checkpoint_complete(log, c, &complete)) || !complete)
			continue;
		*ok = commits_from(log, c->version, v);
		if (!*ok)
			break;
	}
	/* The oldest version that can be rebuilt, for the message. */
	if (from_zero)
		*oldest = 0;
	for (size_t i = 0; rc == 0 && *oldest < 0 && i < log->ncps && log->cps[i].version <= log->latest; i++) {
		int complete = 0;
		if ((rc = dl_checkpoint_complete(log, &log->cps[i], &complete)) == 0 && complete &&
		    commits_from(log, log->cps[i].version, log->latest))
			*oldest = log->cps[i].version;
	}
	return rc;
}

const struct dl_checkpoint *dl_base_checkpoint(struct dl_log *log, int64_t v, int *rc)
{
	*rc = 0;
	for (size_t i = log->ncps; i-- > 0;) {
		int complete = 0;
		if (log->cps[i].version > v)
			continue;
		if ((*rc = dl_checkpoint_complete(log, &log->cps[i], &complete)))
			return NULL;
		if (complete)
			return &log->cps[i];
	}
	return NULL;
}
