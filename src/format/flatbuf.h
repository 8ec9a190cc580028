/* FlatBuffers: a reader that checks every offset, length and alignment
 * before it reads, and a builder whose output Rust's flatbuffers verifier
 * accepts.
 *
 * The reader never trusts the bytes: any input, however hostile, gives
 * either a value or TETHER_EIO with a message naming the byte offset, never
 * a read outside the buffer. It checks what the Rust verifier checks on the
 * parts it is asked for: tables, vtables (even length, at least 4 bytes,
 * inside the buffer), fields inside the table's inline size, offsets that
 * point forward and stay inside the buffer, vectors and strings whose
 * length fits, strings that are valid UTF-8, and every scalar, offset and
 * vector aligned to its size relative to the start of the buffer (so the
 * buffer itself must be malloc-aligned, as a decompressed payload is).
 * Lazy: a field is checked when it is read, so a caller reads what it needs
 * and fb_used_slots tells it whether a table carries fields it does not
 * know.
 *
 * The builder writes back to front, the way FlatBuffers' own builders do:
 * children before the tables that point at them, so every uoffset points
 * forward. A table's fields may be added in any order; scalars are always
 * written, even when equal to the schema's default (a reader cannot tell
 * the difference, and a round trip stays exact). Errors are sticky: a
 * failed allocation or misuse marks the builder, and fbb_finish reports it.
 * Little-endian on every host. */
#ifndef TETHER_FORMAT_FLATBUF_H
#define TETHER_FORMAT_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Reader                                                              */
/* ------------------------------------------------------------------ */

struct fb_table {
	const uint8_t *buf; /* the whole buffer */
	size_t len;
	uint32_t pos;       /* where the table starts */
	uint32_t vt;        /* where its vtable starts */
	uint16_t vt_len;    /* vtable bytes, including the two u16 sizes */
	uint16_t size;      /* the table's inline size, in bytes */
};

struct fb_vec {
	const uint8_t *buf;
	size_t len;
	uint32_t pos;       /* the first element */
	uint32_t n;         /* number of elements */
	uint32_t elem_size; /* as given to fb_vector */
};

/* The root table of a finished buffer (its uoffset at byte 0). A file
 * identifier at bytes 4..8 is not checked; fb_identifier reads it. */
int fb_root(const void *data, size_t len, struct fb_table *root);
/* 1 when bytes 4..8 equal ident (4 chars), else 0. */
int fb_has_identifier(const void *data, size_t len, const char ident[4]);

/* Slots the vtable has room for. */
unsigned fb_slots(const struct fb_table *t);
/* One past the highest slot with a non-zero entry (0 when none). A writer
 * that knows N slots of a table must refuse one with more than N used. */
unsigned fb_used_slots(const struct fb_table *t);
/* 1 when the field at slot is present. */
int fb_has(const struct fb_table *t, unsigned slot);

/* Scalars: the default when the field is absent. */
int fb_u8(const struct fb_table *t, unsigned slot, uint8_t dflt, uint8_t *out);
int fb_u16(const struct fb_table *t, unsigned slot, uint16_t dflt, uint16_t *out);
int fb_u32(const struct fb_table *t, unsigned slot, uint32_t dflt, uint32_t *out);
int fb_i32(const struct fb_table *t, unsigned slot, int32_t dflt, int32_t *out);
int fb_u64(const struct fb_table *t, unsigned slot, uint64_t dflt, uint64_t *out);
/* An inline struct of `size` bytes aligned to `align`: *out points at it,
 * or is NULL when the field is absent. */
int fb_struct(const struct fb_table *t, unsigned slot, size_t size, size_t align,
              const uint8_t **out);
/* A sub-table (also a union's value). *present = 0 when absent. */
int fb_table(const struct fb_table *t, unsigned slot, struct fb_table *out, int *present);
/* A string: *s points into the buffer (not NUL-terminated by contract;
 * use *n), NULL when absent. Checked to be valid UTF-8. */
int fb_string(const struct fb_table *t, unsigned slot, const char **s, uint32_t *n);
/* A vector whose elements are elem_size bytes aligned to elem_align
 * (scalars, structs; 4/4 for vectors of tables or strings). *present = 0
 * when absent (out is then an empty vector). */
int fb_vector(const struct fb_table *t, unsigned slot, size_t elem_size, size_t elem_align,
              struct fb_vec *out, int *present);
/* Element i of a vector of scalars or structs (i < v->n is the caller's
 * duty; out of range gives NULL). */
const uint8_t *fb_vec_elem(const struct fb_vec *v, uint32_t i);
/* Element i of a vector of tables / of strings. */
int fb_vec_table(const struct fb_vec *v, uint32_t i, struct fb_table *out);
int fb_vec_string(const struct fb_vec *v, uint32_t i, const char **s, uint32_t *n);

/* Little-endian loads, for struct fields read through fb_struct or
 * fb_vec_elem. */
static inline uint16_t fb_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t fb_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fb_le64(const uint8_t *p) { return fb_le32(p) | (uint64_t)fb_le32(p + 4) << 32; }

/* ------------------------------------------------------------------ */
/* Builder                                                             */
/* ------------------------------------------------------------------ */

/* A reference to something already built: its distance from the end of
 * the buffer. 0 is never a valid reference. */
typedef uint32_t fb_ref;

#define FBB_MAX_SLOTS 64

struct fbb {
	uint8_t *buf;       /* data lives in buf[cap - used, cap) */
	size_t cap;
	size_t used;
	size_t minalign;
	int failed;         /* a TETHER_E* code once something went wrong */
	int in_table;
	size_t table_end;   /* `used` when the open table started */
	uint32_t slot_at[FBB_MAX_SLOTS]; /* `used` after each field, 0 = absent */
	unsigned nslots;    /* one past the highest slot added */
};

void fbb_init(struct fbb *b);
void fbb_free(struct fbb *b);
/* Make room for about n bytes up front (a hint: the buffer grows as
 * needed anyway), sparing a large buffer its doublings. */
void fbb_expect(struct fbb *b, size_t n);

/* Strings (NUL-terminated in the buffer), byte vectors, vectors of
 * scalars or structs (elements already little-endian, elem_size bytes
 * each, aligned to align), and vectors of references (tables, strings). */
fb_ref fbb_string(struct fbb *b, const char *s, size_t n);
fb_ref fbb_bytes(struct fbb *b, const void *p, size_t n);
fb_ref fbb_vector(struct fbb *b, const void *elems, size_t n, size_t elem_size, size_t align);
fb_ref fbb_vector_refs(struct fbb *b, const fb_ref *refs, size_t n);

/* A table: start, add fields (slot < FBB_MAX_SLOTS), end. Tables do not
 * nest: build the children first. */
void fbb_table_start(struct fbb *b);
void fbb_add_u8(struct fbb *b, unsigned slot, uint8_t v);
void fbb_add_u16(struct fbb *b, unsigned slot, uint16_t v);
void fbb_add_u32(struct fbb *b, unsigned slot, uint32_t v);
void fbb_add_i32(struct fbb *b, unsigned slot, int32_t v);
void fbb_add_u64(struct fbb *b, unsigned slot, uint64_t v);
void fbb_add_ref(struct fbb *b, unsigned slot, fb_ref r);
void fbb_add_struct(struct fbb *b, unsigned slot, const void *p, size_t size, size_t align);
fb_ref fbb_table_end(struct fbb *b);

/* Finish with `root` as the root table and ident (4 chars, or NULL) as the
 * file identifier. On success *out is the malloc'd buffer (the builder
 * hands over its memory and is left empty). The builder can be freed or
 * reused (fbb_free, fbb_init) afterwards. */
int fbb_finish(struct fbb *b, fb_ref root, const char *ident, uint8_t **out, size_t *len);

#endif
