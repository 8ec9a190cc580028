/* A read-only git object database in C on zlib and Nettle's SHA-1: loose
 * objects and packfiles (idx v2, OFS and REF deltas), so that commands that
 * only read history never load libgit2 (which, as Debian builds it, parses
 * the whole CA bundle at initialisation).
 *
 * Every object handed out has been checked: its SHA-1 over "<type> <size>\0"
 * and the content equals the id it was asked for, as libgit2 checks with
 * strict hash verification (gc acts on what the history walk reads). Every
 * offset and length read from a file is bounds-checked; damage is
 * TETHER_ERROR naming the file, never a crash.
 *
 * Not handled here (the caller falls back to libgit2 before opening):
 * alternates, SHA-256 repositories. Internal to tether-vcs-git. */
#ifndef TETHER_VCS_GITODB_H
#define TETHER_VCS_GITODB_H

#include <stddef.h>

enum tt_gobj_type { TT_GOBJ_COMMIT = 1, TT_GOBJ_TREE = 2, TT_GOBJ_BLOB = 3, TT_GOBJ_TAG = 4 };

struct tt_godb;

/* Open the objects directory `objects_dir` (its packs are indexed now,
 * loose objects are read on demand). */
int tt_godb_open(const char *objects_dir, struct tt_godb **out);
void tt_godb_free(struct tt_godb *db);

/* Read object `id` (20 raw bytes): *data malloc'd with a NUL after the
 * content (*len excludes it). TETHER_ENOTFOUND when absent. */
int tt_godb_read(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                 unsigned char **data, size_t *len);

/* How many distinct objects have an id starting with the hex digits
 * hex[0..n) (lower-case, 1 <= n <= 40): 0, 1 (*one set) or 2 (two or more). */
int tt_godb_prefix(struct tt_godb *db, const char *hex, size_t n, unsigned char one[20], int *count);

/* The name of a type ("commit", ...), for messages and the hash header. */
const char *tt_gobj_type_name(enum tt_gobj_type type);

/* A loose object's header, "<type> <size>\0", at the start of the n
 * inflated bytes at head: its length with the NUL, and *type and *size;
 * 0 when it is not one (an unknown type, a size that is not plain
 * decimal or too large to hold). */
size_t tt_gobj_parse_header(const char *head, size_t n, enum tt_gobj_type *type, size_t *size);

/* Hex conversions for 20-byte ids. from_hex: 0 when s holds 40 hex digits. */
void tt_goid_hex(const unsigned char id[20], char hex[41]);
int tt_goid_from_hex(const char *s, unsigned char id[20]);

/* Apply a git delta to base (exposed for the fuzz target). *out malloc'd,
 * NUL-terminated. TETHER_ERROR when the delta is malformed. */
int tt_gdelta_apply(const unsigned char *base, size_t base_len, const unsigned char *delta,
                    size_t delta_len, unsigned char **out, size_t *out_len);

#endif
