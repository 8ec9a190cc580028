/* A scratch directory for the fuzz targets whose product code reads files
 * (a git repository's objects, packs and refs): made once per process,
 * rewritten by every input, removed at exit. */
#ifndef TETHER_FUZZ_TMPDIR_H
#define TETHER_FUZZ_TMPDIR_H

#include <stddef.h>

/* The scratch directory (created on first use; aborts when it cannot be). */
const char *fuzz_tmpdir(void);

/* Write `len` bytes to dir/rel, creating the parent directories. */
void fuzz_write(const char *dir, const char *rel, const void *data, size_t len);

/* Empty the scratch directory (it stays). */
void fuzz_clear(void);

/* Split data at each occurrence of `sep` into at most max parts: returns
 * how many parts (>= 1); part i is data[off[i], off[i] + len[i]). */
size_t fuzz_split(const unsigned char *data, size_t size, const char *sep, size_t max, size_t *off,
                  size_t *len);

#endif
