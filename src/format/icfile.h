/* Icechunk's metadata file envelope: a 39-byte header, then one zstd frame
 * holding the flatbuffer.
 *
 *   0  12  magic "ICE🧊CHUNK" (49 43 45 F0 9F A7 8A 43 48 55 4E 4B)
 *   12 24  implementation name, UTF-8, right-padded with spaces ("ic-2.2.2")
 *   36  1  spec version, 1 or 2
 *   37  1  file type (enum icf_type)
 *   38  1  compression: 1 = zstd (the only one Icechunk reads)
 *   39 ..  the payload */
#ifndef TETHER_FORMAT_ICFILE_H
#define TETHER_FORMAT_ICFILE_H

#include <stddef.h>
#include <stdint.h>

#define ICF_HEADER_SIZE 39

enum icf_type {
	ICF_SNAPSHOT = 1,
	ICF_MANIFEST = 2,
	ICF_ATTRIBUTES = 3, /* reserved */
	ICF_TXLOG = 4,
	ICF_CHUNK = 5,      /* reserved */
	ICF_REPO = 6,
};

struct icf_header {
	uint8_t spec;          /* 1 or 2 */
	uint8_t type;          /* enum icf_type */
	uint8_t compression;   /* 1 */
	char impl[25];         /* trimmed, NUL-terminated */
};

/* Parse the header of `data` and decompress its payload into a malloc'd
 * (so suitably aligned) buffer of at most max_payload bytes. Refuses, with
 * TETHER_EIO and a message naming `what` (a path, say): a short file, bad
 * magic, a spec version other than 1 or 2 ("written by a newer Icechunk"),
 * a type other than want_type (0 = any), a compression other than zstd, a
 * corrupt frame, trailing bytes, or a payload over the limit. */
int icf_read(const void *data, size_t len, uint8_t want_type, size_t max_payload,
             const char *what, struct icf_header *h, uint8_t **payload, size_t *plen);
/* Build a file: header (impl padded or cut to 24 bytes) plus the payload
 * compressed at zstd `level`. *out is malloc'd. */
int icf_write(uint8_t spec, uint8_t type, const char *impl, const void *payload, size_t plen,
              int level, uint8_t **out, size_t *len);

#endif
