/* The history walk behind gc and verify --all-history: every manifest in
 * every commit reachable from any ref, plus the working copy, each read
 * once. The VCS's history_files hands over each distinct (path, blob)
 * once, skipping commits whose .tether/objects tree it has already read,
 * so the cost grows with the number of distinct manifests, not commits. */
#include "core/cancel.h"
#include "core/history.h"

#include "core/registry.h"
#include "format/cjson.h"
#include "util/fsutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What gc and verify keep of a manifest: its record (kind, locator,
 * policy, state, pin_ref) and the record's canonical text, its id. Built
 * beside the parse, on the parser's thread when one runs: the walk's own
 * thread is the one a cold walk waits for. */
/* A member of a record, when present (taken from the manifest, whose
 * strings the reader checked as UTF-8 and tt_strings_check as free of NUL
 * bytes: jansson's own check of each, a good part of building a record for
 * every manifest in history, would find nothing). */
static void put_member(json_t *rec, const char *name, json_t *v)
{
	if (v && json_object_set_nocheck(rec, name, v) != 0)
		abort();
}

static json_t *record_of(const struct tt_manifest *m, char **id)
{
	json_t *rec = json_object();
	if (!rec)
		abort();
	put_member(rec, "kind", json_object_get(m->doc, "kind"));
	put_member(rec, "locator", tt_manifest_locator(m));
	put_member(rec, "policy", tt_manifest_policy(m));
	put_member(rec, "state", tt_manifest_state(m));
	put_member(rec, "pin_ref", json_object_get(m->doc, "pin_ref"));
	if (!(*id = tt_cjson(rec)))
		abort();
	return rec;
}

/* What the record step needs of a parsed manifest, taken out of it where
 * it was parsed (the manifest itself is freed there). */
struct parsed {
	json_t *rec; /* record_of's */
	char *id;
	char *pin, *listing; /* or NULL */
};

static void take_parsed(const struct tt_manifest *m, struct parsed *p)
{
	const char *pin = tt_manifest_pin(m), *listing = tt_manifest_listing(m);
	p->rec = record_of(m, &p->id);
	p->pin = pin ? strdup(pin) : NULL;
	p->listing = listing ? strdup(listing) : NULL;
	if ((pin && !p->pin) || (listing && !p->listing))
		abort();
}

static void parsed_free(struct parsed *p)
{
	json_decref(p->rec);
	free(p->id);
	free(p->pin);
	free(p->listing);
	memset(p, 0, sizeof *p);
}

/* Record one manifest (its key, and take_parsed's pieces, taken over) met
 * at `commit` ("" for the working copy). */
static void note_manifest(struct tt_history *h, const char *key, const char *commit, struct parsed *p)
{
	/* Every string here was checked already: the pin id and the listing
	 * digest (hex) by the manifest's validation, the key by tt_key_check,
	 * the commit is hex, the id canonical JSON of checked strings. */
	const char *pin = p->pin;
	if (pin)
		json_object_set_new_nocheck(h->pins, pin, json_true());
	if (p->listing && !*commit)
		json_object_set_new_nocheck(h->working_listings, p->listing, json_true());
	json_t *rec = p->rec, *entry = json_object_get(h->records, p->id);
	p->rec = NULL;
	if (!entry) {
		json_object_set_new_nocheck(rec, "keys", json_array());
		json_object_set_new_nocheck(rec, "commit", json_string_nocheck(*commit ? commit : "@"));
		if (pin)
			json_object_set_new_nocheck(rec, "pin", json_string_nocheck(pin));
		json_object_set_new_nocheck(h->records, p->id, rec);
		entry = rec;
	} else {
		json_decref(rec);
	}
	json_t *keys = json_object_get(entry, "keys");
	size_t i;
	json_t *k;
	int known = 0;
	json_array_foreach(keys, i, k) known |= strcmp(json_string_value(k), key) == 0;
	if (!known)
		json_array_append_new(keys, json_string_nocheck(key));
	parsed_free(p);
}

/* The manifests the walk hands over are parsed on a second thread while
 * the walk reads on (reading and parsing are about half of a cold walk
 * each), then recorded here in the order the walk met them, so the answer,
 * and the first error, are the walk's order's. */
struct blob {
	char *commit, *key, *path, *data;
	const char *dir;
	size_t len;
	struct parsed p; /* once parsed */
	int rc;      /* tt_manifest_parse_nodigest's */
	char *error; /* its message, and hint */
	char *hint;
	int done;    /* parsed (under the walk's lock) */
};

struct walk {
	struct tt_history *h;
	const char *dir;
	pthread_mutex_t mu;
	pthread_cond_t more;
	struct blob **v;
	size_t n, cap, next; /* next: the first not yet taken by a parser */
	size_t recorded;     /* blobs before it are recorded (or dropped) and freed */
	int finished, started;
	int rc;              /* the first blob that did not parse: its code, */
	char *error, *hint;  /* message and hint, set as the error at the end */
	pthread_t parser;
};

static void record_ready(struct walk *w);

/* A parser takes blobs in order until the walk has finished and none are
 * left: the second thread while the walk runs, then both. The second
 * thread also records (`record`): what is parsed at the front, in the
 * walk's order, so that the walk's own thread, the one a cold walk waits
 * for, only reads. */
static void parse_all(struct walk *w, int record)
{
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->next == w->n && !w->finished)
			pthread_cond_wait(&w->more, &w->mu);
		if (w->next == w->n)
			break;
		struct blob *b = w->v[w->next++];
		pthread_mutex_unlock(&w->mu);
		tether_error_clear();
		/* the name for messages, made here rather than on the walk's thread */
		char *name = tt_strdupf("%s/%s at %.12s", b->dir, b->path, b->commit);
		struct tt_manifest m;
		b->rc = tt_manifest_parse_nodigest(b->key, b->data, b->len, name, &m);
		free(name);
		if (!b->rc) {
			take_parsed(&m, &b->p);
			tt_manifest_free(&m);
		}
		free(b->data);
		b->data = NULL;
		if (b->rc) {
			b->error = strdup(tether_error_last());
			b->hint = tether_error_hint() ? strdup(tether_error_hint()) : NULL;
		}
		pthread_mutex_lock(&w->mu);
		b->done = 1;
		if (record) {
			pthread_mutex_unlock(&w->mu);
			record_ready(w);
			pthread_mutex_lock(&w->mu);
		}
	}
	pthread_mutex_unlock(&w->mu);
}

/* Record the parsed blobs at the front, in order, and free them: memory
 * holds only what is in flight. After a blob that did not parse, the rest
 * are dropped: its error is the walk's. One thread records at a time: the
 * walk's until the second thread starts, that one while it runs, the
 * walk's again once it has been joined. */
static void record_ready(struct walk *w)
{
	for (;;) {
		pthread_mutex_lock(&w->mu);
		struct blob *b = w->recorded < w->n && w->v[w->recorded]->done ? w->v[w->recorded] : NULL;
		if (b)
			w->v[w->recorded++] = NULL;
		pthread_mutex_unlock(&w->mu);
		if (!b)
			return;
		if (!w->rc && b->rc) {
			/* kept aside: the walk goes on, and clears the error slot */
			w->rc = b->rc;
			w->error = b->error;
			w->hint = b->hint;
			b->error = b->hint = NULL;
		}
		if (!w->rc && !b->rc) {
			note_manifest(w->h, b->key, b->commit, &b->p);
			w->h->manifests_read++;
		}
		parsed_free(&b->p);
		free(b->commit);
		free(b->key);
		free(b->path);
		free(b->data);
		free(b->error);
		free(b->hint);
		free(b);
	}
}

/* glibc gives a second thread an arena of its own and grows it a page at a
 * time, one mprotect call each (about 140 for the 650 KiB the parsed trees
 * of 200 manifests take there, each call taking the address space's lock
 * the walk's page faults need too): taking 1 MiB in blocks once and giving
 * it back grows the arena in a few calls, and what is given back stays
 * writable for it (glibc only advises the kernel it may drop the pages).
 * Each block is under glibc's mmap threshold (128 KiB), so it comes from
 * the arena. Elsewhere this is a few mallocs that change nothing. */
#define ARENA_BLOCKS 8
#define ARENA_BLOCK (120u << 10)

static void grow_arena(void)
{
	void *v[ARENA_BLOCKS];
	for (int i = 0; i < ARENA_BLOCKS; i++)
		v[i] = malloc(ARENA_BLOCK);
	/* in order: each joins the free one before it, and only the last
	 * reaches the top of the arena, which then shrinks once */
	for (int i = 0; i < ARENA_BLOCKS; i++)
		free(v[i]);
}

static void *parser_main(void *arg)
{
	grow_arena();
	parse_all(arg, 1);
	return NULL;
}

/* The second thread starts only for a history with this many manifests:
 * fewer parse in less time than a thread takes to start. */
#define PARSER_AFTER 16

/* One manifest blob the walk has not met before at its path. */
static int on_manifest(void *ud, const char *commit, const char *path, const char *data, size_t len)
{
	struct walk *w = ud;
	if (tt_cancelled())
		return tt_cancel_error("reading the history");
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	struct blob *b = calloc(1, sizeof *b);
	if (!b || !(b->data = malloc(len + 1)))
		abort();
	memcpy(b->data, data, len);
	b->data[len] = '\0';
	b->len = len;
	b->commit = strdup(commit);
	b->key = strndup(path, pl - 5);
	b->path = strdup(path);
	b->dir = w->dir;
	if (!b->commit || !b->key || !b->path)
		abort();
	pthread_mutex_lock(&w->mu);
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct blob **grown = realloc(w->v, cap * sizeof *grown);
		if (!grown)
			abort();
		w->v = grown;
		w->cap = cap;
	}
	/* Slots before `recorded` are empty: move the live ones down first. */
	if (w->recorded) {
		memmove(w->v, w->v + w->recorded, (w->n - w->recorded) * sizeof *w->v);
		w->n -= w->recorded;
		w->next -= w->recorded;
		w->recorded = 0;
	}
	w->v[w->n++] = b;
	pthread_cond_signal(&w->more);
	if (!w->started && w->n >= PARSER_AFTER && pthread_create(&w->parser, NULL, parser_main, w) == 0)
		w->started = 1;
	int started = w->started;
	pthread_mutex_unlock(&w->mu);
	if (!started)
		record_ready(w);
	return 0;
}

/* The walk is over: parse what is left (with the second thread, when it
 * runs), then record every manifest in the walk's order. The first that
 * did not parse is the error, as it was when the walk stopped at it (it
 * came before whatever error the walk met later). */
static int finish(struct walk *w, int walk_rc)
{
	pthread_mutex_lock(&w->mu);
	w->finished = 1;
	pthread_cond_broadcast(&w->more);
	pthread_mutex_unlock(&w->mu);
	parse_all(w, 0);
	if (w->started)
		pthread_join(w->parser, NULL);
	record_ready(w);
	free(w->v);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->more);
	if (!w->rc)
		return walk_rc;
	tether_error_set(w->rc, "%s", w->error ? w->error : "cannot read a manifest");
	if (w->hint)
		tether_error_set_hint("%s", w->hint);
	free(w->error);
	free(w->hint);
	return w->rc;
}

char *tt_history_cache_path(const struct tether_repo *repo)
{
	return repo->common_dir ? tt_strdupf("%s/tether/cache/%s/history-walk", repo->common_dir, repo->id) : NULL;
}

int tt_history_collect(struct tether_repo *repo, struct tt_history *h)
{
	memset(h, 0, sizeof *h);
	h->pins = json_object();
	h->records = json_object();
	h->working_listings = json_object();
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	/* Kept for the caller (gc notes the working refs' stores from them)
	 * rather than read and parsed again. */
	struct tt_manifest_set *work = &h->working;
	rc = tt_manifests_load_working(repo->root, work);
	if (rc)
		return rc;
	for (size_t i = 0; i < work->n; i++) {
		struct parsed p;
		take_parsed(&work->v[i], &p);
		note_manifest(h, work->v[i].key, "", &p);
	}
	char *dir = tt_repo_vcs_path(repo, ".tether/objects");
	/* Beside the journal, in the directory only the VCS and tether write:
	 * a clone cannot bring a cache along that would steer gc. */
	char *cache = tt_history_cache_path(repo);
	struct walk w = {.h = h, .dir = dir};
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.more, NULL);
	rc = finish(&w, repo->vcs->history_files(repo->vh, dir, cache, on_manifest, &w, &h->commits));
	if (!rc && tt_cancelled())
		rc = tt_cancel_error("reading the history");
	free(cache);
	free(dir);
	return rc;
}

void tt_history_free(struct tt_history *h)
{
	json_decref(h->pins);
	json_decref(h->records);
	json_decref(h->working_listings);
	tt_manifest_set_free(&h->working);
	memset(h, 0, sizeof *h);
}
