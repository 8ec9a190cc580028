/* Refs and repository discovery: the input is split at "\n--\n" into a
 * .git directory's HEAD, packed-refs, refs/heads/main, refs/tags/v1 and
 * config, written into a scratch checkout; tt_grepo_find then finds it
 * (or hands it to libgit2) and tt_gref_resolve resolves HEAD and a few
 * names through loose, symbolic and packed refs; status's HEAD probe
 * (src/vcs/probe.c) reads the same files. */
#include "fuzz.h"
#include "fuzz_tmpdir.h"

#include "vcs/gitrefs.h"
#include "vcs/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const files[] = { ".git/HEAD", ".git/packed-refs", ".git/refs/heads/main",
		                                 ".git/refs/tags/v1", ".git/config" };
	static const char *const names[] = { "HEAD", "refs/heads/main", "refs/tags/v1", "refs/heads/other",
		                                 "refs/remotes/origin/main", "main" };
	const char *dir = fuzz_tmpdir();
	size_t off[5], len[5];
	size_t parts = fuzz_split(data, size, "\n--\n", 5, off, len);

	fuzz_clear();
	fuzz_write(dir, ".git/objects/pack/.keep", "", 0);
	for (size_t i = 0; i < parts; i++)
		fuzz_write(dir, files[i], data + off[i], len[i]);

	char head[41];
	tt_vcs_probe_head(dir, head);

	struct tt_grepo r;
	int rc = tt_grepo_find(dir, &r);
	FUZZ_ASSERT(rc <= 1);
	if (rc != 0)
		return 0;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		unsigned char id[20];
		char *symref = NULL;
		rc = tt_gref_resolve(&r, names[i], id, &symref);
		FUZZ_ASSERT(rc <= 1);
		FUZZ_ASSERT(rc >= 0 || symref == NULL);
		free(symref);
	}
	tt_grepo_clear(&r);
	return 0;
}
