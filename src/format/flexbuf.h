/* FlexBuffers <-> jansson, for the JSON-like values Icechunk keeps as
 * metadata (MetadataItem.value, Repo.config).
 *
 * flex_decode reads any valid FlexBuffer: null, bool, int, uint and float
 * of every width, indirect ones, strings, keys, blobs, untyped, typed and
 * fixed-size typed vectors, and maps. Ints and uints become JSON integers
 * (a uint above INT64_MAX is refused: jansson cannot hold it), floats
 * reals (NaN and infinities, which JSON cannot hold, null, as serde_json
 * reads them), keys strings, maps objects; a blob is refused (Icechunk's values
 * come from JSON and hold none). Like the flatbuffer reader it checks every
 * offset and width before reading and never reads outside the buffer;
 * nesting is capped at 64 levels.
 *
 * flex_encode writes what Rust's flexbuffers crate reads back into the same
 * serde_json::Value: null, bools, integers (UInt when non-negative, Int
 * when negative, as serde_json hands them to Rust), reals, strings, arrays
 * as untyped vectors, objects as maps with their keys sorted bytewise.
 * Widths, padding and key sharing are Rust's, so scalars, strings and maps
 * come out byte for byte as Rust writes them (Rust writes homogeneous
 * arrays as typed vectors; either reads back the same). A key holding a
 * NUL byte, or nesting deeper than 64 levels, is TETHER_EUSAGE.
 * Both return 0 or TETHER_EIO / TETHER_EUSAGE with a message. */
#ifndef TETHER_FORMAT_FLEXBUF_H
#define TETHER_FORMAT_FLEXBUF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

int flex_decode(const void *data, size_t len, json_t **out);
int flex_encode(const json_t *value, uint8_t **out, size_t *len);

#endif
