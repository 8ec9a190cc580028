/* Object manifests: .tether/objects/<key>.toml, one per object.
 *
 *   layout = 1                    # the dataset's layout (core/layout.h); absent: 0
 *   kind = "<kind>"               # the backend's name
 *   pin = "<dataset8>.<hash16>"   # when recorded
 *   recoverable = false           # when recorded
 *   listing = "<sha256>"          # when the state has a stored listing
 *   [locator]  ...                # which system, as the backend built it
 *   [policy]   ...                # write, pin, and backend policy keys
 *   [state]    ...                # the recorded state, when recorded
 *   [pin_ref]  ...                # the native reference, when pinned
 */
#ifndef TETHER_CORE_MANIFEST_H
#define TETHER_CORE_MANIFEST_H

#include "core/validate.h"

#include <jansson.h>
#include <stddef.h>

struct tt_manifest {
	char *key;
	json_t *doc;      /* the whole manifest */
	char digest[65];  /* sha256 of the manifest's bytes as read */
	int layout;       /* its `layout`, 0 when absent */
};

struct tt_manifest_set {
	struct tt_manifest *v; /* sorted by key */
	size_t n;
};

/* Parse and validate a manifest's text; `name` is used in messages. */
int tt_manifest_parse(const char *key, const char *text, size_t len, const char *name,
                      struct tt_manifest *out);
/* The same, leaving out->digest empty: for readers that never compare
 * manifests by their bytes (the history walks, which see every manifest
 * ever committed). */
int tt_manifest_parse_nodigest(const char *key, const char *text, size_t len, const char *name,
                               struct tt_manifest *out);
/* Canonical text of a manifest. malloc'd. */
char *tt_manifest_text(const struct tt_manifest *m);

/* All manifests in the working copy of the dataset at root. */
int tt_manifests_load_working(const char *root, struct tt_manifest_set *out);
/* One manifest from the working copy; TETHER_ENOTFOUND when absent. */
int tt_manifest_load_working(const char *root, const char *key, struct tt_manifest *out);
/* Write one manifest into the working copy, atomically, in `layout` (the
 * dataset's, repo->layout): its `layout` key set to it, or dropped for 0. */
int tt_manifest_save(const char *root, int layout, struct tt_manifest *m);
/* Give a manifest's document the `layout` key of `layout` (none for 0). */
void tt_manifest_set_layout(struct tt_manifest *m, int layout);
/* The manifest's path relative to the dataset root (malloc'd). */
char *tt_manifest_relpath(const char *key);

void tt_manifest_free(struct tt_manifest *m);
void tt_manifest_set_free(struct tt_manifest_set *s);
/* Find by key in a sorted set, or NULL. */
struct tt_manifest *tt_manifest_set_find(const struct tt_manifest_set *s, const char *key);
/* Sort a set by key (after adding to it). */
void tt_manifest_set_sort(struct tt_manifest_set *s);
/* Append a manifest (takes ownership of its key and doc). */
void tt_manifest_set_push(struct tt_manifest_set *s, struct tt_manifest *m);

/* Accessors. */
const char *tt_manifest_kind(const struct tt_manifest *m);
json_t *tt_manifest_locator(const struct tt_manifest *m);
json_t *tt_manifest_policy(const struct tt_manifest *m);
json_t *tt_manifest_state(const struct tt_manifest *m);  /* NULL when never recorded */
const char *tt_manifest_pin(const struct tt_manifest *m);
const char *tt_manifest_listing(const struct tt_manifest *m);

#endif
