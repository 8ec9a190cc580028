/* Packfiles: the input is up to two pack index + pack pairs, the four
 * parts separated by "\n--\n" (idx, pack, idx, pack). They are written as
 * objects/pack/pack-<n>.{idx,pack}; every id either index lists is then
 * read through tt_godb_read (deltas within a pack, REF deltas across
 * them, loose fallback to an empty directory), and every prefix lookup
 * answered. Nothing may crash, leak or hang, whatever the bytes.
 * FUZZ_GIT_VERBOSE=1 prints how many objects each input gave (for checking
 * that the seeds still reach the delta code: make_git_seeds.sh). */
#include "fuzz.h"
#include "fuzz_tmpdir.h"

#include "vcs/gitodb.h"
#include "vcs/gitpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many ids per index are read, so one input stays fast. */
#define MAX_READS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_tmpdir();
	size_t off[4], len[4];
	size_t parts = fuzz_split(data, size, "\n--\n", 4, off, len);
	static const char *const names[] = { "objects/pack/pack-a.idx", "objects/pack/pack-a.pack",
		                                 "objects/pack/pack-b.idx", "objects/pack/pack-b.pack" };
	fuzz_clear();
	fuzz_write(dir, "objects/info/.keep", "", 0);
	for (size_t i = 0; i < parts; i++)
		fuzz_write(dir, names[i], data + off[i], len[i]);

	char objects[4200], path[4300];
	snprintf(objects, sizeof objects, "%s/objects", dir);
	struct tt_godb *db = NULL;
	if (tt_godb_open(objects, &db) != 0)
		return 0;
	unsigned listed = 0, read = 0;
	for (int k = 0; k < 2; k++) {
		struct tt_gpack p;
		snprintf(path, sizeof path, "%s/%s", dir, names[2 * k]);
		if (tt_gpack_open(path, &p) != 0)
			continue;
		for (uint32_t pos = 0; pos < p.count && pos < MAX_READS; pos++) {
			const unsigned char *id = p.ids + (size_t)pos * 20;
			listed++;
			enum tt_gobj_type type;
			unsigned char *out = NULL;
			size_t out_len = 0;
			if (tt_godb_read(db, id, &type, &out, &out_len) == 0) {
				FUZZ_ASSERT(type >= TT_GOBJ_COMMIT && type <= TT_GOBJ_TAG && out[out_len] == '\0');
				free(out);
				read++;
			}
			char hex[41];
			unsigned char one[20];
			int count;
			tt_goid_hex(id, hex);
			/* a hostile idx need not be sorted or match its fan-out, so the
			 * id itself may be missed; what is found must match */
			if (tt_godb_prefix(db, hex, 7, one, &count) == 0) {
				char got[41];
				tt_goid_hex(one, got);
				FUZZ_ASSERT(count >= 0 && count <= 2 && (count == 0 || memcmp(got, hex, 7) == 0));
			}
		}
		tt_gpack_close(&p);
	}
	tt_godb_free(db);
	if (getenv("FUZZ_GIT_VERBOSE"))
		fprintf(stderr, "gpack: %zu parts, %u of %u objects read\n", parts, read, listed);
	return 0;
}
