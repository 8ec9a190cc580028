/* One packfile and its idx v2, mapped read-only (gitodb.c's packs). */
#ifndef TETHER_VCS_GITPACK_H
#define TETHER_VCS_GITPACK_H

#include "vcs/gitodb.h"

#include <stddef.h>
#include <stdint.h>

struct tt_gpack {
	char *path; /* the .pack, for messages */
	const unsigned char *idx, *pack;
	size_t idx_len, pack_len;
	uint32_t count;
	const unsigned char *ids;     /* count x 20 bytes, sorted */
	const unsigned char *off32;   /* count x 4 */
	const unsigned char *off64;   /* the large-offset table */
	size_t n_off64;
};

/* Map `idx_path` and the .pack beside it and check their headers. */
int tt_gpack_open(const char *idx_path, struct tt_gpack *p);
void tt_gpack_close(struct tt_gpack *p);

/* The position of id in the index, or -1. */
long tt_gpack_find(const struct tt_gpack *p, const unsigned char id[20]);

/* The first position whose id is >= key (count when none). */
uint32_t tt_gpack_lower_bound(const struct tt_gpack *p, const unsigned char key[20]);

/* Read the object at index position `pos`, resolving deltas (REF deltas
 * through db, into other packs or a loose base). Not yet hash-checked: the
 * caller checks the result. */
int tt_gpack_read(struct tt_godb *db, const struct tt_gpack *p, uint32_t pos, enum tt_gobj_type *type,
                  unsigned char **data, size_t *len);

/* gitodb.c, for REF deltas: the pack and position holding id (0), or 1
 * when no pack has it. */
int tt_godb_locate(struct tt_godb *db, const unsigned char id[20], const struct tt_gpack **p, uint32_t *pos);

/* gitodb.c: read loose object id, unverified; TETHER_ENOTFOUND when absent. */
int tt_godb_read_loose(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type,
                       unsigned char **data, size_t *len);

/* gitodb.c: the database's cache of resolved pack entries (gitcache.h). */
struct tt_gcache *tt_godb_cache(struct tt_godb *db);

/* The decompressor (libdeflate's) a database keeps for the pack entries
 * it inflates, rather than one made and freed for each of a walk's
 * thousand small objects. One reader uses it at a time; a reader that
 * finds it taken makes one of its own. */
struct tt_ginflater;
struct tt_ginflater *tt_ginflater_new(void);
void tt_ginflater_free(struct tt_ginflater *f);
struct tt_ginflater *tt_godb_inflater(struct tt_godb *db);

/* gitodb.c: where loose object id would be (objects/xx/<38 hex>). */
void tt_godb_loose_path(const struct tt_godb *db, const unsigned char id[20], char *path, size_t cap);

/* Deltas deeper than this are refused (git's own limit is 4095). */
#define TT_GPACK_MAX_DEPTH 10000

/* deflate's greatest expansion (zlib's technical notes: 1032:1): a stream
 * of n bytes never inflates to more than n * this. */
#define TT_ZLIB_MAX_RATIO 1032

#endif
