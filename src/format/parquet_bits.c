/* Parquet's bit-level encodings: the RLE/bit-packed hybrid (levels,
 * dictionary indices, booleans) and DELTA_BINARY_PACKED (integers, and
 * the lengths of the delta byte-array encodings). Every count and width is
 * checked against the bytes before a value is read. */
#include "format/parquet_internal.h"

/* An unsigned LEB128 varint of at most max_bits bits at p[*pos]. */
static const char *pq_uvarint(const uint8_t *p, size_t len, size_t *pos, int max_bits, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		if (*pos >= len)
			return "varint past the end";
		if (shift >= max_bits)
			return "varint too long";
		uint8_t b = p[(*pos)++];
		if (shift == 63 && (b & 0x7e))
			return "varint too long";
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	*out = v;
	return NULL;
}

uint64_t pq_bits(const uint8_t *p, uint64_t bit, int width)
{
	uint64_t v = 0;
	int got = 0;
	while (got < width) {
		uint64_t at = bit + (uint64_t)got;
		int sh = (int)(at & 7);
		int take = 8 - sh < width - got ? 8 - sh : width - got;
		v |= (uint64_t)((p[at >> 3] >> sh) & ((1u << take) - 1)) << got;
		got += take;
	}
	return v;
}

const char *pq_rle(const uint8_t *p, size_t len, int bw, size_t count, uint32_t *out)
{
	size_t pos = 0, got = 0;
	size_t vbytes = ((size_t)bw + 7) / 8;
	uint64_t vmax = bw == 32 ? UINT32_MAX : ((uint64_t)1 << bw) - 1;
	while (got < count) {
		uint64_t h;
		const char *err = pq_uvarint(p, len, &pos, 35, &h);
		if (err)
			return err;
		if (h & 1) {
			uint64_t groups = h >> 1;
			uint64_t n = groups * 8;
			if (n > count - got)
				n = count - got;
			/* The bytes the used values span (a writer may stop short of
			 * the padding of the last group). */
			if ((n * (uint64_t)bw + 7) / 8 > len - pos)
				return "bit-packed run past the end";
			for (uint64_t j = 0; j < n; j++)
				out[got++] = (uint32_t)pq_bits(p + pos, j * (uint64_t)bw, bw);
			uint64_t full = groups * (uint64_t)bw;
			pos = full > len - pos ? len : pos + (size_t)full;
		} else {
			uint64_t run = h >> 1;
			if (vbytes > len - pos)
				return "RLE run value past the end";
			uint64_t v = 0;
			for (size_t k = 0; k < vbytes; k++)
				v |= (uint64_t)p[pos + k] << (8 * k);
			pos += vbytes;
			if (v > vmax)
				return "RLE run value wider than its bit width";
			if (run > count - got)
				run = count - got;
			for (uint64_t j = 0; j < run; j++)
				out[got++] = (uint32_t)v;
		}
	}
	return NULL;
}

const char *pq_delta_binary(const uint8_t *p, size_t len, size_t count, uint64_t *out, size_t *used)
{
	size_t pos = 0;
	uint64_t block, nmini, total, zfirst;
	const char *err;
	if ((err = pq_uvarint(p, len, &pos, 64, &block)) || (err = pq_uvarint(p, len, &pos, 64, &nmini)) ||
	    (err = pq_uvarint(p, len, &pos, 64, &total)) || (err = pq_uvarint(p, len, &pos, 64, &zfirst)))
		return err;
	if (block == 0 || block % 128 != 0 || nmini == 0 || block % nmini != 0 || (block / nmini) % 32 != 0 ||
	    block > ((uint64_t)1 << 24))
		return "delta block sizes not as the format allows";
	if (total != count)
		return "delta value count disagrees with the page";
	uint64_t per_mini = block / nmini;
	uint64_t last = (zfirst >> 1) ^ -(zfirst & 1);
	size_t got = 0;
	if (count > 0)
		out[got++] = last;
	while (got < count) {
		uint64_t zmin;
		if ((err = pq_uvarint(p, len, &pos, 64, &zmin)))
			return err;
		uint64_t min_delta = (zmin >> 1) ^ -(zmin & 1);
		if (nmini > len - pos)
			return "delta bit widths past the end";
		const uint8_t *widths = p + pos;
		pos += (size_t)nmini;
		for (uint64_t m = 0; m < nmini && got < count; m++) {
			int w = widths[m];
			if (w > 64)
				return "delta bit width over 64";
			uint64_t n = count - got < per_mini ? count - got : per_mini;
			if ((n * (uint64_t)w + 7) / 8 > len - pos)
				return "delta miniblock past the end";
			for (uint64_t j = 0; j < n; j++) {
				/* Wrapping arithmetic, as the format defines it. */
				last += min_delta + pq_bits(p + pos, j * (uint64_t)w, w);
				out[got++] = last;
			}
			uint64_t full = per_mini * (uint64_t)w / 8;
			pos = full > len - pos ? len : pos + (size_t)full;
		}
	}
	*used = pos;
	return NULL;
}
