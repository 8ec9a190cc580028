/* A git object read piece by piece (gitodb.h's tt_godb_read hands over the
 * whole of it), for objects too big to hold twice: directory listings of
 * a million files, diffed as they are read.
 *
 * A loose object is inflated as it is read, in the caller's buffer; a
 * packed one is read whole at open (a delta needs its base in memory
 * anyway) and handed out from there. Either way the content is checked
 * against the id, as tt_godb_read checks it: a stream's last read, the one
 * that reaches the end, fails when the object is damaged, so a reader that
 * acts only on a stream it read to its end acts only on verified bytes.
 * One stream is read by one thread at a time; streams of one database may
 * be read from different threads at once. Internal to tether-vcs-git. */
#ifndef TETHER_VCS_GITSTREAM_H
#define TETHER_VCS_GITSTREAM_H

#include "vcs/gitodb.h"

#include <stddef.h>

struct tt_gstream;

/* Open object `id`: *type and *size (the content's) are known now.
 * TETHER_ENOTFOUND when absent. */
int tt_gstream_open(struct tt_godb *db, const unsigned char id[20], enum tt_gobj_type *type, size_t *size,
                    struct tt_gstream **out);
/* Up to cap bytes of content into buf: *got 0 at the end, once every byte
 * has been handed over and checked. */
int tt_gstream_read(struct tt_gstream *s, unsigned char *buf, size_t cap, size_t *got);
void tt_gstream_close(struct tt_gstream *s);

#endif
