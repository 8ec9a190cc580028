/* include/tether/listing.h: the scanner and the listing writer, as
 * modules call them. The scan goes to core/scan.c; the writer writes the
 * scanner's own lines (tt_scan_put_line), so a listing of files that live
 * elsewhere is byte for byte what a scan of the same files writes. */
#include <tether/backend.h>
#include <tether/listing.h>

#include "core/listing_read.h"
#include "core/scan.h"
#include "core/abi.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

/* The caller's options as the scanner's: checked and read only as far as
 * the caller's size reaches (abi.h), as every option struct is. */
static int scan_opts_of(const struct tether_scan_opts *in, struct tt_scan_opts *out)
{
	struct tether_scan_opts o;
	memset(out, 0, sizeof *out);
	int rc = TT_OPTS_IN("struct tether_scan_opts", TETHER_SCAN_OPTS_VERSION, in, &o);
	if (rc)
		return rc;
	out->threads = o.threads;
	out->cache_dir = o.cache_dir;
	out->skip_name = o.skip_name;
	out->skip_dirs = o.skip_dirs;
	return 0;
}

int tether_scan_tree(const char *root, const struct tether_scan_opts *opts, int want_listing,
                     struct tether_listing_summary *out)
{
	memset(out, 0, sizeof *out);
	struct tt_scan_opts o;
	int rc = scan_opts_of(opts, &o);
	if (rc)
		return rc;
	struct tt_scan_summary s;
	rc = tt_scan_tree_summary(root, &o, want_listing, &s);
	if (rc)
		return rc;
	out->count = s.count;
	out->total_size = s.total_size;
	memcpy(out->digest, s.digest, sizeof out->digest);
	out->listing = s.listing;
	out->listing_len = s.listing_len;
	return 0;
}

int tether_scan_file(const char *path, const struct tether_scan_opts *opts, uint64_t *size,
                     unsigned char sha256[32])
{
	struct tt_scan_opts o;
	int rc = scan_opts_of(opts, &o);
	if (rc)
		return rc;
	return tt_scan_file(path, &o, size, sha256);
}

void tether_listing_summary_free(struct tether_listing_summary *s)
{
	if (!s)
		return;
	free(s->listing);
	s->listing = NULL;
	s->listing_len = 0;
}

char *tether_listing_display_name(const char *name, size_t len, char **bytes_hex)
{
	return tt_listing_display_name(name, len, bytes_hex);
}

/* ---- the writer ---- */

/* Without keep_text the lines are hashed through a window this big. */
#define WINDOW ((size_t)64 << 10)

struct tether_listing_writer {
	struct sha256_ctx sha;
	int keep;
	char *buf;
	size_t len, cap;
	char *last;  /* the previous entry's path, for the order check */
	size_t last_len, last_cap;
	int any;
	size_t count;
	uint64_t total;
};

struct tether_listing_writer *tether_listing_writer_new(int keep_text)
{
	struct tether_listing_writer *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->keep = keep_text;
	w->cap = WINDOW;
	w->buf = malloc(w->cap);
	if (!w->buf) {
		free(w);
		return NULL;
	}
	sha256_init(&w->sha);
	return w;
}

void tether_listing_writer_free(struct tether_listing_writer *w)
{
	if (!w)
		return;
	free(w->buf);
	free(w->last);
	free(w);
}

static int reserve(struct tether_listing_writer *w, size_t need)
{
	if (w->cap - w->len >= need)
		return 0;
	if (!w->keep && w->len > 0) {
		sha256_update(&w->sha, w->len, (const uint8_t *)w->buf);
		w->len = 0;
		if (w->cap >= need)
			return 0;
	}
	size_t ncap = w->cap * 2 > w->len + need ? w->cap * 2 : w->len + need;
	char *nbuf = realloc(w->buf, ncap);
	if (!nbuf)
		return tether_error_set(TETHER_ERROR, "listing: out of memory");
	w->buf = nbuf;
	w->cap = ncap;
	return 0;
}

/* Is b after a, bytewise (a shorter prefix first)? */
static int after(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c < 0 || (c == 0 && alen < blen);
}

/* One line of kind (TT_SCAN_FILE, _LINK or _TOKEN; target: the link's
 * target or the token), after the order check. */
static int add_line(struct tether_listing_writer *w, char kind, const char *path, size_t path_len, uint64_t size,
                    const unsigned char *sha256, const char *target)
{
	if (!path || !path_len || memchr(path, '\0', path_len))
		return tether_error_set(TETHER_EUSAGE, "listing: an entry needs a path without NUL bytes");
	if (w->any && !after(w->last, w->last_len, path, path_len)) {
		char *hex = NULL, *shown = tt_listing_display_name(path, path_len, &hex);
		free(hex);
		int rc = tether_error_set(TETHER_EUSAGE, "listing: '%s' comes %s '%s': entries go in bytewise path order, once each",
		                          shown ? shown : "?", w->last_len == path_len &&
		                          memcmp(w->last, path, path_len) == 0 ? "again after" : "before", w->last);
		free(shown);
		return rc;
	}
	size_t target_len = target ? strlen(target) : 0;
	int rc = reserve(w, tt_scan_line_room(path_len, target_len, target != NULL) + 1);
	if (rc)
		return rc;
	if (kind == TT_SCAN_LINK)
		size = 0;
	w->len = (size_t)(tt_scan_put_line(w->buf + w->len, kind, sha256, size, path, path_len, target, target_len) -
	                  w->buf);
	if (w->last_cap < path_len + 1) {
		char *n = realloc(w->last, path_len + 1);
		if (!n)
			return tether_error_set(TETHER_ERROR, "listing: out of memory");
		w->last = n;
		w->last_cap = path_len + 1;
	}
	memcpy(w->last, path, path_len);
	w->last[path_len] = '\0';
	w->last_len = path_len;
	w->any = 1;
	w->count++;
	w->total += size;
	return 0;
}

int tether_listing_writer_add(struct tether_listing_writer *w, const struct tether_listing_entry *e)
{
	int is_link = e->link_target != NULL;
	return add_line(w, is_link ? TT_SCAN_LINK : TT_SCAN_FILE, e->path, e->path_len, e->size, e->sha256,
	                e->link_target);
}

int tether_listing_writer_add_token(struct tether_listing_writer *w, const char *path, size_t path_len,
                                    uint64_t size, const char *token)
{
	if (!token || !*token)
		return tether_error_set(TETHER_EUSAGE, "listing: an entry named by a token needs a non-empty one");
	return add_line(w, TT_SCAN_TOKEN, path, path_len, size, NULL, token);
}

int tether_listing_writer_finish(struct tether_listing_writer *w, struct tether_listing_summary *out)
{
	memset(out, 0, sizeof *out);
	struct sha256_ctx sha = w->sha; /* finish leaves the writer as it was */
	sha256_update(&sha, w->len, (const uint8_t *)w->buf);
	unsigned char digest[32];
	sha256_digest(&sha, sizeof digest, digest);
	tt_hex(digest, 32, out->digest);
	out->count = w->count;
	out->total_size = w->total;
	if (w->keep) {
		out->listing = malloc(w->len + 1);
		if (!out->listing)
			return tether_error_set(TETHER_ERROR, "listing: out of memory");
		memcpy(out->listing, w->buf, w->len);
		out->listing[w->len] = '\0';
		out->listing_len = w->len;
	}
	return 0;
}
