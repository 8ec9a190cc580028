/* The Icechunk backend's parsers on arbitrary bytes: a whole file (header,
 * zstd, flatbuffer) or a bare flatbuffer, read as a `repo` file, a
 * snapshot and a transaction log. Whatever parses must survive what the
 * backend then does with it: every lookup, a mutation and a rewrite, and
 * the rewrite must read back as the same model. */
#include "fuzz.h"

#include "backends/icechunk/ic.h"
#include "format/icfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *copy_of(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);
	if (p && size)
		memcpy(p, data, size);
	return p;
}

static void lookups(const struct ic_repo *r)
{
	for (uint32_t i = 0; i < r->nbranches; i++) {
		char name[64];
		uint32_t n = r->branches[i].name.n < 63 ? r->branches[i].name.n : 63;
		memcpy(name, r->branches[i].name.p, n);
		name[n] = '\0';
		(void)ic_repo_branch(r, name);
		FUZZ_ASSERT(r->branches[i].snap < r->nsnaps);
	}
	for (uint32_t i = 0; i < r->nsnaps; i++) {
		FUZZ_ASSERT(r->snaps[i].parent >= -1 && r->snaps[i].parent < (int32_t)r->nsnaps);
		(void)ic_repo_snapshot(r, &r->snaps[i].id);
	}
	(void)ic_repo_tag_deleted(r, "tether.x");
	(void)ic_repo_flag_enabled(r, IC_FLAG_CREATE_TAG);
	(void)ic_repo_updates_per_file(r);
}

static void repo(uint8_t *payload, size_t len)
{
	struct ic_repo r, back;
	if (ic_repo_parse(payload, len, "fuzz", &r) != 0)
		return;
	lookups(&r);
	uint8_t *fb = NULL;
	size_t fblen = 0;
	int rc = ic_repo_serialize(&r, &fb, &fblen);
	FUZZ_ASSERT(rc == 0 || r.unwritable[0]);
	if (rc == 0) {
		FUZZ_ASSERT(ic_repo_parse(fb, fblen, "fuzz rewrite", &back) == 0);
		FUZZ_ASSERT(back.nsnaps == r.nsnaps && back.ntags == r.ntags && back.nbranches == r.nbranches &&
		            back.nupdates == r.nupdates && back.ndeleted == r.ndeleted && !back.unwritable[0]);
		ic_repo_free(&back);
		/* A pin, as the backend makes it, then its ops-log entry. */
		if (r.nsnaps && ic_repo_add_tag(&r, "tether.fuzz", 0) == 0) {
			struct ic_update u;
			memset(&u, 0, sizeof u);
			u.type = IC_UP_TAG_CREATED;
			u.name = ic_repo_strdup(&r, "tether.fuzz");
			u.at = r.nupdates ? r.updates[0].at + 1 : 1;
			if (u.at && ic_repo_log(&r, &u, "repo.00000000000000.FUZZ", 3) == 0 &&
			    ic_repo_serialize(&r, &fb, &fblen) == 0) {
				FUZZ_ASSERT(ic_repo_parse(fb, fblen, "fuzz pinned", &back) == 0);
				FUZZ_ASSERT(ic_repo_tag(&back, "tether.fuzz") >= 0);
				/* Past the 3 kept, only entries with no backup to continue
				 * from stay, as Icechunk keeps them. */
				for (uint32_t i = 3; i < back.nupdates; i++)
					FUZZ_ASSERT(!back.updates[i].has_backup);
				FUZZ_ASSERT(back.nupdates <= r.nupdates);
				ic_repo_free(&back);
			}
		}
	}
	ic_repo_free(&r);
}

static void snapshot_and_log(const uint8_t *payload, size_t len)
{
	struct ic_snapshot_file f;
	if (ic_snapshot_parse(copy_of(payload, len), len, NULL, "fuzz", &f) == 0) {
		for (uint32_t i = 0; i < f.nnodes; i++)
			FUZZ_ASSERT(f.nodes[i].path.n == 0 || f.nodes[i].path.p != NULL);
		ic_snapshot_free(&f);
	}
	struct ic_txlog t;
	if (ic_txlog_parse(copy_of(payload, len), len, "fuzz", &t) == 0) {
		uint64_t coords = 0;
		for (uint32_t i = 0; i < t.nchunks; i++)
			coords += t.chunks[i].ncoords;
		FUZZ_ASSERT(coords * 4 <= len);
		ic_txlog_free(&t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct icf_header h;
	uint8_t *payload = NULL;
	size_t plen = 0;
	if (icf_read(data, size, 0, 1 << 20, "fuzz", &h, &payload, &plen) == 0) {
		snapshot_and_log(payload, plen);
		repo(payload, plen); /* takes the payload */
		return 0;
	}
	snapshot_and_log(data, size);
	repo(copy_of(data, size), size);
	return 0;
}
