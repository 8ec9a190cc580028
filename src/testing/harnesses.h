/* The harnesses built into tether-conformance, one per in-tree backend.
 * Each leaves `backend` NULL: the runner fills in the one it finds by kind. */
#ifndef TETHER_TESTING_HARNESSES_H
#define TETHER_TESTING_HARNESSES_H

#include <tether/testing.h>

const struct tether_harness *tt_harness_memory(void);
const struct tether_harness *tt_harness_file(void);
const struct tether_harness *tt_harness_git(void);
const struct tether_harness *tt_harness_icechunk(void);
const struct tether_harness *tt_harness_lance(void);
const struct tether_harness *tt_harness_delta(void);
/* h with its objects on the fault store (--fault-store; fault_harness.c). */
const struct tether_harness *tt_fault_harness(const struct tether_harness *h);

/* A scratch directory under $TMPDIR (or /tmp): malloc'd path, or NULL. */
char *tt_harness_mkdtemp(const char *prefix);
/* "<a fresh scratch directory, resolved>/<name>" into out, for a store
 * that create_store may then make there; the child itself is not made. */
int tt_harness_scratch_child(const char *prefix, const char *name, char *out, size_t len);
/* Write text to dir/name; with exclusive, only as a new file. */
int tt_harness_write(const char *dir, const char *name, const char *text, int exclusive);
/* A harness's cleanup of a system at <scratch directory>/<name>: the
 * scratch directory removed. */
void tt_harness_remove_parent(void *ud, const json_t *locator);

#endif
