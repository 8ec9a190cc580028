/* A committed listing (.tether/listings/<sha256>.jsonl at a commit) read
 * in pieces, for diff --content to merge two listings of a million files
 * without holding either: a tether_listing_source's read is
 * tt_listing_stream_fill with the stream as its ud. Its content is checked
 * as tt_listing_load checks it (git's object id, then the SHA-256 that
 * names it), by the end: the fill that reaches the end fails when it does
 * not match. A VCS that cannot stream a file has it read whole, and the
 * stream hands it out from memory. */
#ifndef TETHER_CORE_LISTING_STREAM_H
#define TETHER_CORE_LISTING_STREAM_H

#include "core/engine.h"

struct tt_listing_stream;

/* Start reading the listing `hex` of commit `id` (not the working copy). */
int tt_listing_stream_open(struct tether_repo *repo, const char *id, const char *hex, struct tt_listing_stream **out);
int tt_listing_stream_fill(void *ud, char *buf, size_t cap, size_t *got);
/* Stops the reading (a merge that ended early) and frees the stream. */
void tt_listing_stream_close(struct tt_listing_stream *s);

#endif
