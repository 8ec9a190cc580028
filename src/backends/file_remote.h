/* The `file` backend on object stores: a single object
 * (s3://bucket/key) or a prefix (s3://bucket/prefix/, or a whole bucket),
 * read through the byte-store seam (include/tether/store.h), so every
 * scheme a store module serves works and none is named here. file.c
 * hands a locator over when its URI is not a local path. */
#ifndef TETHER_BACKENDS_FILE_REMOTE_H
#define TETHER_BACKENDS_FILE_REMOTE_H

#include <tether/backend.h>

/* Does uri name an object store rather than a local path ("scheme://",
 * except file://)? */
int fr_is_remote(const char *uri);

/* The locator of `tether add KEY URI`: {uri, [region]}, uri canonical (a
 * prefix keeps exactly one trailing '/', an object none). The store must
 * answer: an object must exist; a prefix may be empty. */
int fr_make_locator(const struct tether_bctx *ctx, const char *uri, const char *region, json_t **locator);
/* Capabilities for the locator: REMOTE_FINGERPRINT, and ADDRESSABLE for
 * a single object with policy file = "versioned" (which a prefix refuses). */
int fr_caps(const json_t *locator, const json_t *policy, unsigned *caps);
/* State: {type=object, size, etag[, version_id]}, {type=prefix, count,
 * size, digest} with the listing (unless ctx->state_only), or
 * {type=missing} for an object that is gone. */
int fr_fingerprint(const struct tether_bctx *ctx, const json_t *locator, struct tether_fingerprint *out);
/* verify: an object state with a version id is held while the store still
 * has that version with that ETag; anything else while it is what the
 * store has now. */
int fr_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, int *ok, char **detail);
/* A read-only handle {kind, uri, state, read_only, [version_id]}; a
 * versioned object's state without a version id is refused. */
int fr_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, json_t **handle);

#endif
