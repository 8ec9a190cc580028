/* Page decompression on Debian's libsnappy, zlib and libzstd. */
#include "format/parquet_codec.h"

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

const char *pq_codec_name(int codec, char buf[24])
{
	static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
	if (codec >= 0 && codec < (int)(sizeof names / sizeof *names))
		return names[codec];
	snprintf(buf, 24, "codec %d", codec);
	return buf;
}

static const char *pq_gunzip(const uint8_t *src, size_t srclen, uint8_t *out, size_t want)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	/* 15 + 32: a gzip or zlib header, detected (writers differ). */
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return "gzip: out of memory";
	const char *err = NULL;
	size_t in_done = 0, out_done = 0;
	for (;;) {
		/* avail_in/avail_out are 32-bit: feed big buffers in slices. */
		size_t in_left = srclen - in_done, out_left = want - out_done;
		z.next_in = (Bytef *)(src + in_done);
		z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
		z.next_out = out + out_done;
		z.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
		uInt ai = z.avail_in, ao = z.avail_out;
		int rc = inflate(&z, Z_NO_FLUSH);
		in_done += ai - z.avail_in;
		out_done += ao - z.avail_out;
		if (rc == Z_STREAM_END) {
			/* Another gzip member may follow (concatenated streams). */
			if (in_done < srclen && out_done < want) {
				if (inflateReset(&z) != Z_OK) {
					err = "gzip data corrupt";
					break;
				}
				continue;
			}
			if (out_done != want)
				err = "gzip data shorter than the page header says";
			break;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			err = "gzip data corrupt";
			break;
		}
		if (out_done == want) {
			err = "gzip data longer than the page header says";
			break;
		}
		if (in_done == srclen || (ai == z.avail_in && ao == z.avail_out)) {
			err = "gzip data truncated";
			break;
		}
	}
	inflateEnd(&z);
	return err;
}

const char *pq_decompress(int codec, const uint8_t *src, size_t srclen, uint8_t *out, size_t want)
{
	switch (codec) {
	case PQ_UNCOMPRESSED:
		if (srclen != want)
			return "uncompressed page of another size than its header says";
		if (want)
			memcpy(out, src, want);
		return NULL;
	case PQ_SNAPPY: {
		size_t n;
		if (snappy_uncompressed_length((const char *)src, srclen, &n) != SNAPPY_OK)
			return "snappy data corrupt";
		if (n != want)
			return "snappy data of another size than the page header says";
		if (want == 0)
			return NULL;
		if (snappy_uncompress((const char *)src, srclen, (char *)out, &n) != SNAPPY_OK || n != want)
			return "snappy data corrupt";
		return NULL;
	}
	case PQ_GZIP:
		return pq_gunzip(src, srclen, out, want);
	case PQ_ZSTD: {
		size_t n = ZSTD_decompress(want ? out : NULL, want, src, srclen);
		if (ZSTD_isError(n))
			return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? "zstd data longer than the page header says"
			                                                            : "zstd data corrupt";
		if (n != want)
			return "zstd data shorter than the page header says";
		return NULL;
	}
	default:
		return "unsupported codec";
	}
}
