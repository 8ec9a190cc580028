/* See gitstream.h. A loose object is a zlib stream of "<type> <size>\0"
 * and the content; the header is inflated at open, the content as the
 * reader asks for it, each piece hashed on the way (SHA-1 over the header
 * and the content is the object's id). */
#include "util/fail.h"
#include "vcs/gitstream.h"
#include "vcs/gitpack.h"

#include <tether/backend.h>

#include <nettle/sha1.h>
#include <zlib.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IN_SIZE (64 * 1024)

struct tt_gstream {
	unsigned char id[20];
	size_t size, done; /* the content's length, and how much was handed over */
	/* a packed object, read whole */
	unsigned char *whole;
	/* a loose one */
	int fd;
	char path[4200];
	z_stream z;
	int z_live, z_end;
	unsigned char *in;
	struct sha1_ctx sha;
	unsigned char head_rest[64]; /* content inflated with the header */
	size_t rest_at, rest_len;
	int checked;
};

static int damaged(const struct tt_gstream *s, const char *what)
{
	return tether_error_set(TETHER_ERROR, "damaged git object %s: %s", s->path, what);
}

/* More compressed input; 0 at the end of the file. */
static int refill(struct tt_gstream *s, size_t *n)
{
	for (;;) {
		ssize_t r = read(s->fd, s->in, IN_SIZE);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return tether_error_set(TETHER_EIO, "cannot read %s: %s", s->path, strerror(errno));
		s->z.next_in = s->in;
		s->z.avail_in = (uInt)r;
		*n = (size_t)r;
		return 0;
	}
}

/* Inflate into out (cap bytes) until it is full or the stream ends. */
static int inflate_some(struct tt_gstream *s, unsigned char *out, size_t cap, size_t *got)
{
	s->z.next_out = out;
	s->z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
	while (s->z.avail_out && !s->z_end) {
		if (!s->z.avail_in) {
			size_t n = 0;
			int rc = refill(s, &n);
			if (rc)
				return rc;
			if (!n)
				return damaged(s, "ends before its data does");
		}
		int zrc = inflate(&s->z, Z_NO_FLUSH);
		if (zrc == Z_STREAM_END)
			s->z_end = 1;
		else if (zrc != Z_OK)
			return damaged(s, "does not inflate");
	}
	*got = (size_t)(s->z.next_out - out);
	return 0;
}

/* "<type> <size>\0" at the start of the inflated bytes. */
static int parse_header(struct tt_gstream *s, const char *head, size_t n, enum tt_gobj_type *type)
{
	size_t head_len = tt_gobj_parse_header(head, n, type, &s->size);
	if (!head_len)
		return damaged(s, "bad header");
	/* The id hashes the header as git writes it ("blob 12", no leading
	 * zeros), as tt_godb_read checks it: one spelled otherwise is not it. */
	char canonical[64];
	int hl = snprintf(canonical, sizeof canonical, "%s %zu", tt_gobj_type_name(*type), s->size);
	sha1_update(&s->sha, (size_t)hl + 1, (const uint8_t *)canonical);
	s->rest_at = head_len;
	return 0;
}

static int open_loose(struct tt_gstream *s, enum tt_gobj_type *type)
{
	struct stat st;
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		char hex[41];
		tt_goid_hex(s->id, hex);
		return errno == ENOENT ? tether_error_set(TETHER_ENOTFOUND, "git object %s not found", hex)
		                       : tether_error_set(TETHER_EIO, "cannot open %s: %s", s->path, strerror(errno));
	}
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return tether_error_set(TETHER_EIO, "cannot read %s", s->path);
	if (!(s->in = malloc(IN_SIZE)))
		return tt_fail_oom();
	/* zlib's own check of the inflated bytes (adler32) is left out: the
	 * SHA-1 over them, which must equal the id, is the stronger one. So the
	 * stream's two-byte header is checked here and the rest inflated raw. */
	size_t n = 0;
	int rc = refill(s, &n);
	if (rc)
		return rc;
	const unsigned char *h = s->in;
	if (n < 2 || (h[0] & 0x0f) != 8 || (h[0] >> 4) > 7 || (h[0] << 8 | h[1]) % 31 != 0 || (h[1] & 0x20))
		return damaged(s, "not a zlib stream");
	s->z.next_in += 2;
	s->z.avail_in -= 2;
	if (inflateInit2(&s->z, -15) != Z_OK)
		return tether_error_set(TETHER_ERROR, "cannot start zlib");
	s->z_live = 1;
	sha1_init(&s->sha);
	/* The header is at most "commit " and 20 digits and a NUL. */
	size_t got;
	if ((rc = inflate_some(s, s->head_rest, sizeof s->head_rest, &got)))
		return rc;
	if ((rc = parse_header(s, (const char *)s->head_rest, got, type)))
		return rc;
	/* deflate expands at most 1032:1: a size the file cannot hold is damage */
	if (s->size / TT_ZLIB_MAX_RATIO > (size_t)st.st_size)
		return damaged(s, "declares a size larger than its data can hold");
	s->rest_len = got - s->rest_at;
	if (s->rest_len > s->size)
		return damaged(s, "too long");
	sha1_update(&s->sha, s->rest_len, s->head_rest + s->rest_at);
	return 0;
}

int tt_gstream_open(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type, size_t *size,
                    struct tt_gstream **out)
{
	struct tt_gstream *s = calloc(1, sizeof *s);
	const struct tt_gpack *p;
	uint32_t pos;
	int rc;

	*out = NULL;
	if (!s)
		return tt_fail_oom();
	s->fd = -1;
	memcpy(s->id, id, 20);
	if (tt_godb_locate(db, id, &p, &pos) == 0) {
		rc = tt_godb_read(db, id, type, &s->whole, &s->size);
		s->checked = 1;
	} else {
		tt_godb_loose_path(db, id, s->path, sizeof s->path);
		rc = open_loose(s, type);
	}
	if (rc) {
		tt_gstream_close(s);
		return rc;
	}
	*size = s->size;
	*out = s;
	return 0;
}

/* At the end of a loose object: nothing more inflates, and the bytes hash
 * to the id. */
static int check_end(struct tt_gstream *s)
{
	unsigned char extra[1], got[20];
	size_t n = 0;
	int rc = s->z_end ? 0 : inflate_some(s, extra, sizeof extra, &n);
	if (rc)
		return rc;
	if (n || !s->z_end)
		return damaged(s, "longer than its header says");
	sha1_digest(&s->sha, sizeof got, got);
	if (memcmp(got, s->id, 20) != 0) {
		char want[41], have[41];
		tt_goid_hex(s->id, want);
		tt_goid_hex(got, have);
		return tether_error_set(TETHER_ERROR, "git object %s is damaged: its content hashes to %s", want, have);
	}
	s->checked = 1;
	return 0;
}

int tt_gstream_read(struct tt_gstream *s, unsigned char *buf, size_t cap, size_t *got)
{
	size_t left = s->size - s->done, n = cap < left ? cap : left;
	*got = 0;
	if (s->whole) {
		memcpy(buf, s->whole + s->done, n);
		s->done += n;
		*got = n;
		return 0;
	}
	if (!n)
		return s->checked ? 0 : check_end(s);
	size_t from_head = s->rest_len < n ? s->rest_len : n;
	memcpy(buf, s->head_rest + s->rest_at, from_head);
	s->rest_at += from_head;
	s->rest_len -= from_head;
	size_t more = 0;
	if (from_head < n) {
		int rc = inflate_some(s, buf + from_head, n - from_head, &more);
		if (rc)
			return rc;
		if (from_head + more < n && s->z_end)
			return damaged(s, "shorter than its header says");
		sha1_update(&s->sha, more, buf + from_head);
	}
	s->done += from_head + more;
	*got = from_head + more;
	return 0;
}

void tt_gstream_close(struct tt_gstream *s)
{
	if (!s)
		return;
	if (s->z_live)
		inflateEnd(&s->z);
	if (s->fd >= 0)
		close(s->fd);
	free(s->in);
	free(s->whole);
	free(s);
}
