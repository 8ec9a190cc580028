/* Parquet's page codecs: their numbers (the writer's too) and the
 * reader's decompression of those it reads (uncompressed, snappy, gzip,
 * zstd) into a buffer of the size the page header declares. Internal to
 * format/parquet_*.c. */
#ifndef TETHER_FORMAT_PARQUET_CODEC_H
#define TETHER_FORMAT_PARQUET_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Parquet's CompressionCodec values. */
enum pq_codec {
	PQ_UNCOMPRESSED = 0,
	PQ_SNAPPY = 1,
	PQ_GZIP = 2,
	PQ_LZO = 3,
	PQ_BROTLI = 4,
	PQ_LZ4 = 5,
	PQ_ZSTD = 6,
	PQ_LZ4_RAW = 7,
};

/* The codec's name for messages ("SNAPPY", "codec 42"); buf holds the
 * latter form. */
const char *pq_codec_name(int codec, char buf[24]);

/* Decompress src into out, which has room for exactly want bytes; the
 * data must decompress to exactly want bytes. Returns NULL or a message
 * ("snappy data corrupt", "gzip data shorter than the page header says"). */
const char *pq_decompress(int codec, const uint8_t *src, size_t srclen, uint8_t *out, size_t want);

#endif
