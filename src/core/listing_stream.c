/* A committed listing read in pieces: see listing_stream.h.
 *
 * The VCS's stream of the file is read ahead by a thread of its own into
 * a ring of a few chunks, and hashed there as it goes (SHA-256, which
 * names the listing). So reading a listing (inflating it, git's SHA-1
 * check, the SHA-256) runs beside the merge that consumes it, the two
 * listings of a diff on two threads, and memory holds a few chunks rather
 * than the listing. */
#include "core/listing_stream.h"

#include "util/fsutil.h"
#include "util/hash.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (256 * 1024)
#define RING 4

struct chunk {
	char data[CHUNK];
	size_t len;
};

struct tt_listing_stream {
	/* read ahead from the VCS */
	const struct tether_vcs_ops *ops;
	struct tether_vcs_stream *vs;
	char *where;     /* the listing's path, for messages */
	char hex[65];    /* its name: the SHA-256 its content must have */
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t changed;
	struct chunk *ring;
	size_t head, count; /* ring[head] is the next full chunk; count are full */
	size_t at;          /* how much of ring[head] the reader has taken */
	int done, stop, rc; /* done: no more chunks (rc 0: the end, checked) */
	char *error;        /* rc's message */
	/* or the whole text (a VCS without streams) */
	char *whole;
	size_t len, taken;
};

static void fail(struct tt_listing_stream *s, int rc, const char *message)
{
	s->rc = rc;
	s->error = strdup(message ? message : "cannot read the listing");
}

static void *read_ahead(void *arg)
{
	struct tt_listing_stream *s = arg;
	struct sha256_ctx sha;
	size_t slot = 0;
	sha256_init(&sha);
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		if (s->count == RING) {
			pthread_cond_wait(&s->changed, &s->mu);
			continue;
		}
		slot = (s->head + s->count) % RING;
		pthread_mutex_unlock(&s->mu);
		/* Fill one chunk (outside the lock: the reader takes from others). */
		struct chunk *c = &s->ring[slot];
		size_t got = 1;
		int rc = 0;
		c->len = 0;
		while (!rc && got && c->len < CHUNK)
			if (!(rc = TT_VCS_GET(s->ops, read_stream)(s->vs, c->data + c->len, CHUNK - c->len, &got)))
				c->len += got;
		if (!rc)
			sha256_update(&sha, c->len, (const uint8_t *)c->data);
		int end = !rc && !got;
		unsigned char digest[SHA256_DIGEST_SIZE];
		char hex[65];
		if (end) {
			sha256_digest(&sha, sizeof digest, digest);
			tt_hex(digest, sizeof digest, hex);
		}
		pthread_mutex_lock(&s->mu);
		if (rc) {
			fail(s, rc, tether_error_last());
			s->done = 1;
		} else {
			if (c->len)
				s->count++;
			if (end) {
				if (strcmp(hex, s->hex) != 0) {
					char *m = tt_strdupf("%s: listing is corrupt (its content hashes to %.12s…)", s->where, hex);
					fail(s, TETHER_ECONFIG, m);
					free(m);
				}
				s->done = 1;
			}
		}
		pthread_cond_broadcast(&s->changed);
		if (s->done)
			break;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int tt_listing_stream_open(struct tether_repo *repo, const char *id, const char *hex, struct tt_listing_stream **out)
{
	*out = NULL;
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_listing_stream *s = calloc(1, sizeof *s);
	if (!s)
		return tether_error_set(TETHER_ERROR, "out of memory");
	snprintf(s->hex, sizeof s->hex, "%s", hex);
	if (!TT_VCS_GET(repo->vcs, open_stream) || !TT_VCS_GET(repo->vcs, read_stream) ||
	    !TT_VCS_GET(repo->vcs, close_stream)) {
		rc = tt_listing_load(repo, id, hex, &s->whole, &s->len);
		if (rc) {
			free(s);
			return rc;
		}
		*out = s;
		return 0;
	}
	char *rel = tt_strdupf(".tether/listings/%s.jsonl", hex);
	s->where = tt_repo_vcs_path(repo, rel);
	free(rel);
	s->ops = repo->vcs;
	rc = TT_VCS_GET(s->ops, open_stream)(repo->vh, id, s->where, &s->vs);
	if (!rc && !(s->ring = malloc(RING * sizeof *s->ring)))
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	if (!rc) {
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->changed, NULL);
		if (pthread_create(&s->thread, NULL, read_ahead, s) != 0)
			rc = tether_error_set(TETHER_ERROR, "cannot start a thread to read %s", s->where);
		else
			s->started = 1;
	}
	if (rc) {
		tt_listing_stream_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tt_listing_stream_fill(void *ud, char *buf, size_t cap, size_t *got)
{
	struct tt_listing_stream *s = ud;
	*got = 0;
	if (!s->started) {
		size_t n = s->len - s->taken < cap ? s->len - s->taken : cap;
		memcpy(buf, s->whole + s->taken, n);
		s->taken += n;
		*got = n;
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	while (*got < cap) {
		if (s->count) {
			struct chunk *c = &s->ring[s->head];
			size_t n = c->len - s->at < cap - *got ? c->len - s->at : cap - *got;
			memcpy(buf + *got, c->data + s->at, n);
			*got += n;
			s->at += n;
			if (s->at == c->len) {
				s->head = (s->head + 1) % RING;
				s->count--;
				s->at = 0;
				pthread_cond_broadcast(&s->changed);
			}
			continue;
		}
		if (s->done || *got)
			break; /* the end (or its error), or something to hand over now */
		pthread_cond_wait(&s->changed, &s->mu);
	}
	/* An error counts once the chunks before it are consumed; the end
	 * (got 0) only after the hash matched. */
	int rc = !*got && s->done && s->rc ? s->rc : 0;
	if (rc)
		tether_error_set(rc, "%s", s->error ? s->error : "cannot read the listing");
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void tt_listing_stream_close(struct tt_listing_stream *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->changed);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	if (s->ops && s->vs)
		TT_VCS_GET(s->ops, close_stream)(s->vs);
	if (s->ring) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->changed);
	}
	free(s->ring);
	free(s->error);
	free(s->where);
	free(s->whole);
	free(s);
}
