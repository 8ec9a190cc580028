/* The history walk's cache (git_walk_cache.h).
 *
 *   header:  "TTWALK2\n", u32 length, the directory (normalised, as
 *            history_files walks it), 64 hex digits: SHA-256 of the header
 *   segment: u32 length, then that many bytes:
 *              u32 n, n x (20-byte commit id, 20-byte tree id; zero: none)
 *              u32 n, n x (20-byte object id, u8 type, u32 size, size bytes)
 *            then 64 hex digits: SHA-256 of those bytes
 *   ...more segments
 *
 * Integers are little-endian. A walk that read something new appends one
 * segment with just that (a single write to a file opened O_APPEND, so two
 * processes appending at once each add a whole segment), so keeping the
 * cache current after a commit costs what the commit added, not the whole
 * file. A segment that fails its checksum (a write cut short) ends the
 * file for readers, and the next save rewrites the file whole: to a
 * temporary file, renamed over the old one. Loaded objects point into the
 * file's buffer; objects added later are copies. */
#include "vcs/git_walk_cache.h"

#include <tether/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'T', 'T', 'W', 'A', 'L', 'K', '2', '\n'};

/* Manifests are small; a big blob under the directory is data that would
 * only bloat the file. */
#define MAX_OBJECT ((size_t)1 << 20)
#define MAX_TOTAL ((size_t)256 << 20)

struct commit_dir {
	unsigned char commit[20], tree[20];
};

struct raw_object {
	unsigned char id[20];
	enum tt_gobj_type type;
	size_t size;
	const unsigned char *data;
	unsigned char *owned; /* an object added this run: a copy of our own */
};

/* Open addressing over oids: slot values are index + 1, 0 is empty. */
struct oid_index {
	size_t *slots;
	size_t cap, count;
};

struct walk_cache {
	char *path, *dir;
	unsigned char *file; /* the loaded file, which loaded objects point into */
	struct commit_dir *commits;
	size_t ncommits, capcommits;
	struct raw_object *objects;
	size_t nobjects, capobjects;
	struct oid_index commit_index, object_index;
	size_t bytes;
	size_t saved_commits, saved_objects; /* entries [0, saved) are in the file */
	int rewrite;                          /* the file must be written whole */
};

static size_t oid_hash(const unsigned char id[20])
{
	uint64_t h;
	memcpy(&h, id, sizeof h); /* an object id is already a uniform digest */
	return (size_t)h;
}

/* The slot for id: its entry, or the empty slot where it would go. */
static size_t *index_slot(const struct oid_index *ix, const unsigned char id[20], const void *base, size_t stride)
{
	size_t mask = ix->cap - 1;
	for (size_t i = oid_hash(id) & mask;; i = (i + 1) & mask) {
		size_t v = ix->slots[i];
		if (!v || memcmp((const unsigned char *)base + (v - 1) * stride, id, 20) == 0)
			return &ix->slots[i];
	}
}

/* Index entry `n` (0-based) of `base`; 0, or -1 when out of memory. */
static int index_add(struct oid_index *ix, const void *base, size_t stride, size_t n)
{
	if (2 * (ix->count + 1) > ix->cap) {
		struct oid_index bigger = {calloc(ix->cap ? 2 * ix->cap : 256, sizeof *bigger.slots),
		                           ix->cap ? 2 * ix->cap : 256, ix->count};
		if (!bigger.slots)
			return -1;
		for (size_t i = 0; i < ix->cap; i++) {
			size_t v = ix->slots[i];
			if (v)
				*index_slot(&bigger, (const unsigned char *)base + (v - 1) * stride, base, stride) = v;
		}
		free(ix->slots);
		*ix = bigger;
	}
	const unsigned char *id = (const unsigned char *)base + n * stride;
	size_t *slot = index_slot(ix, id, base, stride);
	if (!*slot) {
		*slot = n + 1;
		ix->count++;
	}
	return 0;
}

static size_t index_find(const struct oid_index *ix, const void *base, size_t stride, const unsigned char id[20])
{
	return ix->cap ? *index_slot(ix, id, base, stride) : 0;
}

/* ------------------------------------------------------------------ */
/* Adding                                                              */
/* ------------------------------------------------------------------ */

static int add_commit(struct walk_cache *c, const unsigned char commit[20], const unsigned char tree[20])
{
	if (index_find(&c->commit_index, c->commits, sizeof *c->commits, commit))
		return 1; /* known (two writers appended it) */
	if (c->ncommits == c->capcommits) {
		size_t cap = c->capcommits ? 2 * c->capcommits : 256;
		struct commit_dir *grown = realloc(c->commits, cap * sizeof *grown);
		if (!grown)
			return -1;
		c->commits = grown;
		c->capcommits = cap;
		/* The index holds positions, not pointers: it survives the move. */
	}
	memcpy(c->commits[c->ncommits].commit, commit, 20);
	memcpy(c->commits[c->ncommits].tree, tree, 20);
	if (index_add(&c->commit_index, c->commits, sizeof *c->commits, c->ncommits) < 0)
		return -1;
	c->ncommits++;
	return 0;
}

static int add_object(struct walk_cache *c, const unsigned char id[20], enum tt_gobj_type type,
                      const unsigned char *data, size_t size, unsigned char *owned)
{
	if (index_find(&c->object_index, c->objects, sizeof *c->objects, id))
		return 1;
	if (c->nobjects == c->capobjects) {
		size_t cap = c->capobjects ? 2 * c->capobjects : 256;
		struct raw_object *grown = realloc(c->objects, cap * sizeof *grown);
		if (!grown)
			return -1;
		c->objects = grown;
		c->capobjects = cap;
	}
	c->objects[c->nobjects] = (struct raw_object){.type = type, .size = size, .data = data, .owned = owned};
	memcpy(c->objects[c->nobjects].id, id, 20);
	if (index_add(&c->object_index, c->objects, sizeof *c->objects, c->nobjects) < 0)
		return -1;
	c->nobjects++;
	c->bytes += size;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

struct reader {
	const unsigned char *p, *end;
};

static int take(struct reader *r, size_t n, const unsigned char **out)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	*out = r->p;
	r->p += n;
	return 0;
}

static int take_u32(struct reader *r, uint32_t *v)
{
	const unsigned char *b;
	if (take(r, 4, &b) < 0)
		return -1;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int known_type(unsigned t)
{
	return t == TT_GOBJ_TREE || t == TT_GOBJ_BLOB;
}

static int checked(const unsigned char *data, size_t len, const unsigned char *hex)
{
	char want[65];
	tether_sha256_hex(data, len, want);
	return memcmp(want, hex, 64) == 0;
}

/* The header: 0 when it is this directory's. */
static int parse_header(const struct walk_cache *c, struct reader *r)
{
	const unsigned char *start = r->p, *b, *dir, *hex;
	uint32_t n;
	if (take(r, sizeof MAGIC, &b) < 0 || memcmp(b, MAGIC, sizeof MAGIC) != 0 || take_u32(r, &n) < 0 ||
	    take(r, n, &dir) < 0 || take(r, 64, &hex) < 0 || !checked(start, (size_t)(hex - start), hex))
		return -1;
	return n == strlen(c->dir) && memcmp(dir, c->dir, n) == 0 ? 0 : -1;
}

/* One segment's entries into c; -1 on anything unexpected. */
static int parse_entries(struct walk_cache *c, struct reader *r)
{
	const unsigned char *b;
	uint32_t n;
	if (take_u32(r, &n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		if (take(r, 2 * 20, &b) < 0)
			return -1;
		if (add_commit(c, b, b + 20) < 0)
			return -1;
	}
	if (take_u32(r, &n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t size;
		const unsigned char *bytes;
		if (take(r, 20 + 1, &b) < 0 || !known_type(b[20]) || take_u32(r, &size) < 0 || take(r, size, &bytes) < 0)
			return -1;
		if (add_object(c, b, (enum tt_gobj_type)b[20], bytes, size, NULL) < 0)
			return -1;
	}
	return r->p == r->end ? 0 : -1;
}

/* The file into c: the header, then every whole, checksummed segment. A
 * bad header empties the cache; a bad segment ends it there. Either way
 * the next save writes the file whole. */
static void parse(struct walk_cache *c, const unsigned char *data, size_t len)
{
	struct reader r = {data, data + len};
	if (parse_header(c, &r) < 0) {
		c->rewrite = 1;
		return;
	}
	while (r.p < r.end) {
		uint32_t n;
		const unsigned char *seg, *hex;
		if (take_u32(&r, &n) < 0 || take(&r, n, &seg) < 0 || take(&r, 64, &hex) < 0 || !checked(seg, n, hex)) {
			c->rewrite = 1;
			return;
		}
		struct reader sr = {seg, seg + n};
		if (parse_entries(c, &sr) < 0) {
			c->rewrite = 1;
			return;
		}
	}
}

static void forget_entries(struct walk_cache *c)
{
	for (size_t i = 0; i < c->nobjects; i++)
		free(c->objects[i].owned);
	free(c->commit_index.slots);
	free(c->object_index.slots);
	memset(&c->commit_index, 0, sizeof c->commit_index);
	memset(&c->object_index, 0, sizeof c->object_index);
	c->ncommits = c->nobjects = c->bytes = 0;
}

static unsigned char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long size;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)size)) && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		*len = (size_t)size;
	return buf;
}

struct walk_cache *wc_load(const char *path, const char *dir)
{
	struct walk_cache *c = calloc(1, sizeof *c);
	if (!c || !(c->path = strdup(path)) || !(c->dir = strdup(dir))) {
		wc_free(c);
		return NULL;
	}
	size_t len = 0;
	c->file = read_whole(path, &len);
	if (c->file)
		parse(c, c->file, len);
	else
		c->rewrite = 1;
	c->saved_commits = c->ncommits;
	c->saved_objects = c->nobjects;
	return c;
}

void wc_free(struct walk_cache *c)
{
	if (!c)
		return;
	forget_entries(c);
	free(c->commits);
	free(c->objects);
	free(c->file);
	free(c->path);
	free(c->dir);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

int wc_commit_dir(const struct walk_cache *c, const unsigned char commit[20], unsigned char tree[20])
{
	size_t v = index_find(&c->commit_index, c->commits, sizeof *c->commits, commit);
	if (!v)
		return 0;
	memcpy(tree, c->commits[v - 1].tree, 20);
	return 1;
}

void wc_put_commit_dir(struct walk_cache *c, const unsigned char commit[20], const unsigned char tree[20])
{
	add_commit(c, commit, tree);
}

const unsigned char *wc_object(const struct walk_cache *c, const unsigned char id[20], enum tt_gobj_type *type,
                               size_t *size)
{
	size_t v = index_find(&c->object_index, c->objects, sizeof *c->objects, id);
	if (!v)
		return NULL;
	*type = c->objects[v - 1].type;
	*size = c->objects[v - 1].size;
	return c->objects[v - 1].data;
}

void wc_put_object(struct walk_cache *c, const unsigned char id[20], enum tt_gobj_type type,
                   const unsigned char *data, size_t size)
{
	unsigned char *copy;
	if (!known_type((unsigned)type) || size > MAX_OBJECT || c->bytes + size > MAX_TOTAL ||
	    index_find(&c->object_index, c->objects, sizeof *c->objects, id) || !(copy = malloc(size ? size : 1)))
		return;
	memcpy(copy, data, size);
	if (add_object(c, id, type, copy, size, copy) != 0)
		free(copy);
}

/* ------------------------------------------------------------------ */
/* Saving                                                              */
/* ------------------------------------------------------------------ */

struct writer {
	unsigned char *buf;
	size_t len, cap;
	int failed;
};

static void put(struct writer *w, const void *data, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 1 << 12;
		while (cap < w->len + n)
			cap *= 2;
		unsigned char *grown = realloc(w->buf, cap);
		if (!grown) {
			w->failed = 1;
			return;
		}
		w->buf = grown;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

static void put_u32(struct writer *w, size_t v)
{
	unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 24)};
	put(w, b, 4);
}

/* mkdir -p of the directory holding `path`. */
static int make_parent(const char *path)
{
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	struct stat st;
	int rc = 0;
	if (!slash) {
		free(dir);
		return dir ? 0 : -1;
	}
	*slash = '\0';
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		free(dir);
		return 0;
	}
	for (char *p = dir + 1; rc == 0; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char was = *p;
		*p = '\0';
		if (mkdir(dir, 0777) != 0 && errno != EEXIST)
			rc = -1;
		*p = was;
		if (!was)
			break;
	}
	free(dir);
	return rc;
}

/* One segment holding entries [from_commit, n) and [from_object, n). */
static void put_segment(struct writer *w, const struct walk_cache *c, size_t from_commit, size_t from_object)
{
	size_t at = w->len;
	char hex[65];
	put_u32(w, 0); /* its length, filled in below */
	put_u32(w, c->ncommits - from_commit);
	for (size_t i = from_commit; i < c->ncommits; i++) {
		put(w, c->commits[i].commit, 20);
		put(w, c->commits[i].tree, 20);
	}
	put_u32(w, c->nobjects - from_object);
	for (size_t i = from_object; i < c->nobjects; i++) {
		unsigned char type = (unsigned char)c->objects[i].type;
		put(w, c->objects[i].id, 20);
		put(w, &type, 1);
		put_u32(w, c->objects[i].size);
		put(w, c->objects[i].data, c->objects[i].size);
	}
	if (w->failed)
		return;
	size_t n = w->len - at - 4;
	for (int k = 0; k < 4; k++)
		w->buf[at + (size_t)k] = (unsigned char)(n >> (8 * k));
	tether_sha256_hex(w->buf + at + 4, n, hex);
	put(w, hex, 64);
}

static void put_header(struct writer *w, const struct walk_cache *c)
{
	char hex[65];
	put(w, MAGIC, sizeof MAGIC);
	put_u32(w, strlen(c->dir));
	put(w, c->dir, strlen(c->dir));
	if (!w->failed) {
		tether_sha256_hex(w->buf, w->len, hex);
		put(w, hex, 64);
	}
}

static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The whole cache to a temporary file, renamed over the old one: a reader
 * sees one complete file or the other. No fsync: a file lost or torn in a
 * crash only fails its checksums. */
static void rewrite_file(struct walk_cache *c, const struct writer *w)
{
	size_t n = strlen(c->path) + 32;
	char *tmp = malloc(n);
	if (!tmp || make_parent(c->path) != 0) {
		free(tmp);
		return;
	}
	snprintf(tmp, n, "%s.tmp.%ld", c->path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	int ok = fd >= 0 && write_all(fd, w->buf, w->len) == 0;
	if (fd >= 0)
		ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, c->path) == 0)
		c->rewrite = 0;
	else if (fd >= 0)
		unlink(tmp);
	free(tmp);
}

/* What put_segment will write, so that the buffer is allocated once. */
static size_t segment_size(const struct walk_cache *c, size_t from_commit, size_t from_object)
{
	size_t n = 4 + 4 + (c->ncommits - from_commit) * 2 * 20 + 4 + 64;
	for (size_t i = from_object; i < c->nobjects; i++)
		n += 20 + 1 + 4 + c->objects[i].size;
	return n;
}

void wc_save(struct walk_cache *c)
{
	int grew = c->ncommits > c->saved_commits || c->nobjects > c->saved_objects;
	if (!grew && !c->rewrite)
		return;
	size_t from_commit = c->rewrite ? 0 : c->saved_commits, from_object = c->rewrite ? 0 : c->saved_objects;
	struct writer w = {0};
	w.cap = segment_size(c, from_commit, from_object) + 8 + 4 + strlen(c->dir) + 64;
	if (!(w.buf = malloc(w.cap)))
		return;
	if (c->rewrite) {
		put_header(&w, c);
		put_segment(&w, c, 0, 0);
		if (!w.failed)
			rewrite_file(c, &w);
	} else {
		/* One write of one segment, appended: whatever else appends at the
		 * same time appends a whole segment of its own. */
		put_segment(&w, c, from_commit, from_object);
		int fd = w.failed ? -1 : open(c->path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			if (write_all(fd, w.buf, w.len) != 0)
				c->rewrite = 1; /* a short write: the next save starts afresh */
			close(fd);
		}
	}
	c->saved_commits = c->ncommits;
	c->saved_objects = c->nobjects;
	free(w.buf);
}
