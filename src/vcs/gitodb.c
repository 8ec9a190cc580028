/* The object database: see gitodb.h. Loose objects are zlib streams of
 * "<type> <size>\0<content>" under objects/xx/<38 hex>; packs are read by
 * gitpack.c. What a read returns is checked against its id here, once. */
#include "util/fail.h"
#include "vcs/gitodb.h"
#include "vcs/gitpack.h"
#include "vcs/gitcache.h"

#include "util/hex.h"

#include <tether/backend.h>

#include <nettle/sha1.h>
#include <zlib.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tt_godb {
	char *dir;
	struct tt_gpack *packs;
	size_t npacks;
	struct tt_gcache *cache;
	struct tt_ginflater *inflater;
};

/* What the delta base cache may hold (git's core.deltaBaseCacheLimit
 * defaults to 96 MiB; a history walk's manifests need far less). */
#define CACHE_BUDGET (16u << 20)

struct tt_gcache *tt_godb_cache(struct tt_godb *db)
{
	return db->cache;
}

struct tt_ginflater *tt_godb_inflater(struct tt_godb *db)
{
	return db->inflater;
}

/* Any "<name>.idx" is a pack index, as git and libgit2 read the pack
 * directory (a pack need not be called pack-<hash>). */
static int is_idx_name(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && name[0] != '.' && strcmp(name + n - 4, ".idx") == 0;
}

int tt_godb_open(const char *objects_dir, struct tt_godb **out)
{
	struct tt_godb *db = calloc(1, sizeof *db);
	char path[4096];
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (!db || !(db->dir = strdup(objects_dir)) || !(db->cache = tt_gcache_new(CACHE_BUDGET)) ||
	    !(db->inflater = tt_ginflater_new())) {
		if (db) {
			free(db->dir);
			tt_gcache_free(db->cache);
		}
		free(db);
		return tt_fail_oom();
	}
	snprintf(path, sizeof path, "%s/pack", objects_dir);
	d = opendir(path);
	while (d && rc == 0 && (e = readdir(d))) {
		if (!is_idx_name(e->d_name))
			continue;
		struct tt_gpack *grown = realloc(db->packs, (db->npacks + 1) * sizeof *grown);
		if (!grown) {
			rc = tt_fail_oom();
			break;
		}
		db->packs = grown;
		snprintf(path, sizeof path, "%s/pack/%s", objects_dir, e->d_name);
		/* git writes the .pack before its .idx; an .idx without its pack is
		 * damage (git would report it too) */
		if ((rc = tt_gpack_open(path, &db->packs[db->npacks])) == 0)
			db->npacks++;
	}
	if (d)
		closedir(d);
	if (rc < 0) {
		tt_godb_free(db);
		return rc;
	}
	*out = db;
	return 0;
}

void tt_godb_free(struct tt_godb *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->npacks; i++)
		tt_gpack_close(&db->packs[i]);
	free(db->packs);
	free(db->dir);
	tt_gcache_free(db->cache);
	tt_ginflater_free(db->inflater);
	free(db);
}

void tt_godb_loose_path(const struct tt_godb *db, const unsigned char id[20], char *path, size_t cap)
{
	char hex[41];
	tt_goid_hex(id, hex);
	snprintf(path, cap, "%s/%.2s/%s", db->dir, hex, hex + 2);
}

static int read_whole(int fd, const char *path, unsigned char **buf, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return tether_error_set(TETHER_EIO, "cannot read %s", path);
	size_t n = (size_t)st.st_size, got = 0;
	unsigned char *b = malloc(n ? n : 1);
	if (!b)
		return tt_fail_oom();
	while (got < n) {
		ssize_t r = read(fd, b + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(b);
			return tether_error_set(TETHER_EIO, "cannot read %s", path);
		}
		got += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* 1 when there is no such loose object. */
static int read_loose(const struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                      unsigned char **data, size_t *len)
{
	char path[4200], head[64];
	unsigned char *raw = NULL, *buf = NULL;
	size_t raw_len = 0, hlen, size = 0;
	z_stream z;
	int fd, zrc;

	tt_godb_loose_path(db, id, path, sizeof path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 1 : tether_error_set(TETHER_EIO, "cannot open %s", path);
	int rc = read_whole(fd, path, &raw, &raw_len);
	close(fd);
	if (rc < 0)
		return rc;
	memset(&z, 0, sizeof z);
	if (inflateInit(&z) != Z_OK) {
		free(raw);
		return tether_error_set(TETHER_ERROR, "cannot start zlib");
	}
	z.next_in = raw;
	z.avail_in = (uInt)raw_len;
	z.next_out = (unsigned char *)head;
	z.avail_out = sizeof head;
	zrc = inflate(&z, Z_SYNC_FLUSH);
	hlen = sizeof head - z.avail_out;
	enum tt_gobj_type t = 0;
	size_t head_len = zrc == Z_OK || zrc == Z_STREAM_END ? tt_gobj_parse_header(head, hlen, &t, &size) : 0;
	if (!head_len) {
		inflateEnd(&z);
		free(raw);
		return tether_error_set(TETHER_ERROR, "damaged git object %s: bad header", path);
	}
	/* deflate expands at most 1032:1: refuse a declared size the file
	 * cannot hold before allocating it */
	if (size / TT_ZLIB_MAX_RATIO > raw_len) {
		inflateEnd(&z);
		free(raw);
		return tether_error_set(TETHER_ERROR, "damaged git object %s: declares a size larger than its data can hold",
		                        path);
	}
	size_t have = hlen - head_len;
	if (have > size || !(buf = malloc(size + 1))) {
		inflateEnd(&z);
		free(raw);
		return have > size ? tether_error_set(TETHER_ERROR, "damaged git object %s: too long", path) : tt_fail_oom();
	}
	memcpy(buf, head + head_len, have);
	z.next_out = buf + have;
	z.avail_out = (uInt)(size - have + 1);
	if (zrc != Z_STREAM_END)
		zrc = inflate(&z, Z_FINISH);
	size_t total = have + (size + 1 - have - z.avail_out);
	inflateEnd(&z);
	free(raw);
	if (zrc != Z_STREAM_END || total != size) {
		free(buf);
		return tether_error_set(TETHER_ERROR, "damaged git object %s: wrong size", path);
	}
	buf[size] = '\0';
	*type = t;
	*data = buf;
	*len = size;
	return 0;
}

int tt_godb_locate(struct tt_godb *db, const unsigned char id[20], const struct tt_gpack **p, uint32_t *pos)
{
	for (size_t i = 0; i < db->npacks; i++) {
		long at = tt_gpack_find(&db->packs[i], id);
		if (at >= 0) {
			*p = &db->packs[i];
			*pos = (uint32_t)at;
			return 0;
		}
	}
	return 1;
}

int tt_godb_read_loose(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                       unsigned char **data, size_t *len)
{
	int rc = read_loose(db, id, type, data, len);
	if (rc == 1) {
		char hex[41];
		tt_goid_hex(id, hex);
		return tether_error_set(TETHER_ENOTFOUND, "git object %s not found", hex);
	}
	return rc;
}

static int read_unverified(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                           unsigned char **data, size_t *len)
{
	const struct tt_gpack *p;
	uint32_t pos;
	if (tt_godb_locate(db, id, &p, &pos) == 0)
		return tt_gpack_read(db, p, pos, type, data, len);
	return tt_godb_read_loose(db, id, type, data, len);
}

/* "TYPE LEN" and its NUL, the header git hashes before an object's bytes,
 * into out (64 bytes); its length with the NUL. Written by hand: this runs
 * for every object read, and snprintf costs more than the SHA-1 of a small
 * tree. */
static size_t object_header(enum tt_gobj_type type, size_t len, char *out)
{
	const char *name = tt_gobj_type_name(type);
	size_t n = strlen(name);
	memcpy(out, name, n);
	out[n++] = ' ';
	char digits[24];
	size_t d = 0;
	do {
		digits[d++] = (char)('0' + len % 10);
		len /= 10;
	} while (len);
	while (d)
		out[n++] = digits[--d];
	out[n++] = '\0';
	return n;
}

int tt_godb_read(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                 unsigned char **data, size_t *len)
{
	int rc = read_unverified(db, id, type, data, len);
	if (rc < 0)
		return rc;
	/* The id is the SHA-1 of the object: what does not hash to it is not it. */
	struct sha1_ctx ctx;
	unsigned char got[20];
	char head[64];
	size_t n = object_header(*type, *len, head);
	sha1_init(&ctx);
	sha1_update(&ctx, n, (const uint8_t *)head);
	sha1_update(&ctx, *len, *data);
	sha1_digest(&ctx, sizeof got, got);
	if (memcmp(got, id, 20) != 0) {
		char want[41], have[41];
		tt_goid_hex(id, want);
		tt_goid_hex(got, have);
		free(*data);
		*data = NULL;
		return tether_error_set(TETHER_ERROR, "git object %s is damaged: its content hashes to %s", want,
		                        have);
	}
	return 0;
}

static int hex_matches(const unsigned char id[20], const char *hex, size_t n)
{
	char full[41];
	tt_goid_hex(id, full);
	return strncmp(full, hex, n) == 0;
}

static void note_match(const unsigned char id[20], unsigned char one[20], int *count)
{
	if (*count == 0) {
		memcpy(one, id, 20);
		*count = 1;
	} else if (memcmp(one, id, 20) != 0) {
		*count = 2;
	}
}

int tt_godb_prefix(struct tt_godb *db, const char *hex, size_t n, unsigned char one[20], int *count)
{
	unsigned char key[20] = { 0 };

	*count = 0;
	if (n < 1 || n > 40)
		return tether_error_set(TETHER_EUSAGE, "bad object id prefix");
	for (size_t i = 0; i < n; i++) {
		int v = tt_hex_digit(hex[i]);
		if (v < 0)
			return tether_error_set(TETHER_EUSAGE, "bad object id prefix");
		key[i / 2] |= (unsigned char)(i % 2 ? v : v << 4);
	}
	for (size_t i = 0; i < db->npacks && *count < 2; i++) {
		const struct tt_gpack *p = &db->packs[i];
		for (uint32_t pos = tt_gpack_lower_bound(p, key);
		     pos < p->count && *count < 2 && hex_matches(p->ids + (size_t)pos * 20, hex, n); pos++)
			note_match(p->ids + (size_t)pos * 20, one, count);
	}
	if (n >= 2 && *count < 2) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%.2s", db->dir, hex);
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && *count < 2 && (e = readdir(d))) {
			char full[41];
			unsigned char id[20];
			if (strlen(e->d_name) != 38)
				continue;
			memcpy(full, hex, 2);
			memcpy(full + 2, e->d_name, 39);
			if (tt_goid_from_hex(full, id) == 0 && hex_matches(id, hex, n))
				note_match(id, one, count);
		}
		if (d)
			closedir(d);
	} else if (n < 2) {
		return tether_error_set(TETHER_EUSAGE, "object id prefix too short");
	}
	return 0;
}
