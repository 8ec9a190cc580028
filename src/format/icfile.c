/* Icechunk's metadata file envelope: header, then exactly one zstd frame. */
#include "format/icfile.h"
#include "util/plural.h"

#include <tether/backend.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static const uint8_t icf_magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7, 0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};

#define ICF_IMPL_OFF 12
#define ICF_IMPL_LEN 24

/* The implementation name, trimmed of the padding (spaces, NULs) Icechunk
 * and others put around it. */
static void icf_impl(const uint8_t *field, char out[ICF_IMPL_LEN + 1])
{
	size_t start = 0, end = ICF_IMPL_LEN;
	while (start < end && (field[start] == ' ' || field[start] == '\0'))
		start++;
	while (end > start && (field[end - 1] == ' ' || field[end - 1] == '\0'))
		end--;
	memcpy(out, field + start, end - start);
	out[end - start] = '\0';
}

/* One compression and one decompression context per thread, kept for the
 * thread's life: a context is megabytes of tables at level 3, and making
 * one per file was most of what a small pin cost. */
struct icf_contexts {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
};

static pthread_key_t icf_key;
static pthread_once_t icf_once = PTHREAD_ONCE_INIT;

static void icf_contexts_free(void *p)
{
	struct icf_contexts *x = p;
	if (!x)
		return;
	ZSTD_freeCCtx(x->c);
	ZSTD_freeDCtx(x->d);
	free(x);
}

static void icf_key_init(void)
{
	pthread_key_create(&icf_key, icf_contexts_free);
}

/* The main thread's contexts go when the code is unloaded (a module). */
__attribute__((destructor)) static void icf_unload(void)
{
	pthread_once(&icf_once, icf_key_init);
	icf_contexts_free(pthread_getspecific(icf_key));
	pthread_setspecific(icf_key, NULL);
}

static struct icf_contexts *icf_contexts(void)
{
	pthread_once(&icf_once, icf_key_init);
	struct icf_contexts *x = pthread_getspecific(icf_key);
	if (!x && (x = calloc(1, sizeof *x)) && pthread_setspecific(icf_key, x) != 0) {
		free(x);
		x = NULL;
	}
	return x;
}

static ZSTD_DCtx *icf_dctx(void)
{
	struct icf_contexts *x = icf_contexts();
	if (x && !x->d)
		x->d = ZSTD_createDCtx();
	if (x && x->d)
		ZSTD_DCtx_reset(x->d, ZSTD_reset_session_and_parameters);
	return x ? x->d : NULL;
}

static ZSTD_CCtx *icf_cctx(void)
{
	struct icf_contexts *x = icf_contexts();
	if (x && !x->c)
		x->c = ZSTD_createCCtx();
	return x ? x->c : NULL;
}

/* The smallest window log covering n bytes, so a frame cannot make the
 * decoder allocate much more than the payload limit allows. zstd's default
 * (27) is kept as the ceiling and 23 (8 MiB, what streaming encoders use at
 * ordinary levels) as the floor, so small limits still read normal files. */
static int icf_window_log(size_t n)
{
	int log = 23;
	while (log < 27 && ((size_t)1 << log) < n)
		log++;
	return log;
}

/* A frame that does not say its size: decompress in steps, growing the
 * output up to the limit. */
static int icf_stream(ZSTD_DCtx *dctx, const void *src, size_t srclen, size_t max, const char *what,
                      uint8_t **out, size_t *outlen)
{
	size_t cap = srclen * 4 < max ? srclen * 4 : max;
	if (cap < 4096)
		cap = 4096;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return tether_error_set(TETHER_ERROR, "%s: out of memory", what);
	ZSTD_inBuffer in = {src, srclen, 0};
	ZSTD_outBuffer ob = {buf, cap, 0};
	for (;;) {
		size_t rc = ZSTD_decompressStream(dctx, &ob, &in);
		if (ZSTD_isError(rc)) {
			free(buf);
			return tether_error_set(TETHER_EIO, "%s: corrupt zstd frame (%s)", what, ZSTD_getErrorName(rc));
		}
		if (ob.pos > max) {
			free(buf);
			return tether_error_set(TETHER_EIO, "%s: payload over the limit of %zu bytes", what, max);
		}
		if (rc == 0)
			break;
		if (ob.pos == ob.size) {
			/* One byte past the limit is room enough to see it exceeded. */
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			if (ncap <= cap) {
				free(buf);
				return tether_error_set(TETHER_EIO, "%s: payload over the limit of %zu bytes", what, max);
			}
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				return tether_error_set(TETHER_ERROR, "%s: out of memory", what);
			}
			buf = nb;
			cap = ncap;
			ob.dst = buf;
			ob.size = cap;
		} else if (in.pos == in.size) {
			free(buf);
			return tether_error_set(TETHER_EIO, "%s: truncated zstd frame", what);
		}
	}
	*out = buf;
	*outlen = ob.pos;
	return 0;
}

static int icf_decompress(const uint8_t *src, size_t srclen, size_t max, const char *what, uint8_t **out,
                          size_t *outlen)
{
	if (srclen < 4 || (src[0] | src[1] << 8 | src[2] << 16 | (uint32_t)src[3] << 24) != ZSTD_MAGICNUMBER)
		return tether_error_set(TETHER_EIO, "%s: payload is not a zstd frame", what);
	size_t frame = ZSTD_findFrameCompressedSize(src, srclen);
	if (ZSTD_isError(frame))
		return tether_error_set(TETHER_EIO, "%s: corrupt zstd frame (%s)", what, ZSTD_getErrorName(frame));
	if (frame != srclen)
		return tether_error_set(TETHER_EIO, "%s: %zu trailing %s after the zstd frame", what, srclen - frame,
		                        tt_plural((long long)(srclen - frame), "byte", "bytes"));
	unsigned long long size = ZSTD_getFrameContentSize(src, srclen);
	if (size == ZSTD_CONTENTSIZE_ERROR)
		return tether_error_set(TETHER_EIO, "%s: corrupt zstd frame header", what);
	if (size != ZSTD_CONTENTSIZE_UNKNOWN && size > max)
		return tether_error_set(TETHER_EIO, "%s: payload of %llu bytes is over the limit of %zu", what, size, max);

	ZSTD_DCtx *dctx = icf_dctx();
	if (!dctx)
		return tether_error_set(TETHER_ERROR, "%s: out of memory", what);
	int rc = 0;
	size_t zr = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, icf_window_log(max));
	if (ZSTD_isError(zr)) {
		rc = tether_error_set(TETHER_ERROR, "%s: zstd: %s", what, ZSTD_getErrorName(zr));
	} else if (size == ZSTD_CONTENTSIZE_UNKNOWN) {
		rc = icf_stream(dctx, src, srclen, max, what, out, outlen);
	} else {
		uint8_t *buf = malloc(size ? (size_t)size : 1);
		if (!buf) {
			rc = tether_error_set(TETHER_ERROR, "%s: out of memory", what);
		} else {
			zr = ZSTD_decompressDCtx(dctx, buf, (size_t)size, src, srclen);
			if (ZSTD_isError(zr) || zr != size) {
				free(buf);
				rc = tether_error_set(TETHER_EIO, "%s: corrupt zstd frame (%s)", what,
				                      ZSTD_isError(zr) ? ZSTD_getErrorName(zr) : "short content");
			} else {
				*out = buf;
				*outlen = (size_t)size;
			}
		}
	}
	return rc;
}

int icf_read(const void *data, size_t len, uint8_t want_type, size_t max_payload, const char *what,
             struct icf_header *h, uint8_t **payload, size_t *plen)
{
	const uint8_t *p = data;
	*payload = NULL;
	*plen = 0;
	if (len < ICF_HEADER_SIZE)
		return tether_error_set(TETHER_EIO, "%s: %zu %s, too short for an Icechunk file", what, len,
		                        tt_plural((long long)len, "byte", "bytes"));
	if (memcmp(p, icf_magic, sizeof icf_magic) != 0)
		return tether_error_set(TETHER_EIO, "%s: not an Icechunk file (bad magic)", what);
	h->spec = p[36];
	h->type = p[37];
	h->compression = p[38];
	icf_impl(p + ICF_IMPL_OFF, h->impl);
	if (h->spec != 1 && h->spec != 2)
		return tether_error_set(TETHER_EIO, "%s: spec version %u (written by a newer Icechunk%s%s?)", what,
		                        h->spec, h->impl[0] ? ", " : "", h->impl);
	if (want_type && h->type != want_type)
		return tether_error_set(TETHER_EIO, "%s: file type %u where %u was expected", what, h->type, want_type);
	if (h->compression != 1)
		return tether_error_set(TETHER_EIO, "%s: compression %u (only zstd, 1, is read)", what, h->compression);
	return icf_decompress(p + ICF_HEADER_SIZE, len - ICF_HEADER_SIZE, max_payload, what, payload, plen);
}

int icf_write(uint8_t spec, uint8_t type, const char *impl, const void *payload, size_t plen, int level,
              uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (spec != 1 && spec != 2)
		return tether_error_set(TETHER_EUSAGE, "Icechunk file: spec version %u is not 1 or 2", spec);
	size_t bound = ZSTD_compressBound(plen);
	if (ZSTD_isError(bound) || bound > SIZE_MAX - ICF_HEADER_SIZE)
		return tether_error_set(TETHER_EUSAGE, "Icechunk file: payload too large");
	uint8_t *buf = malloc(ICF_HEADER_SIZE + bound);
	if (!buf)
		return tether_error_set(TETHER_ERROR, "Icechunk file: out of memory");
	memcpy(buf, icf_magic, sizeof icf_magic);
	/* Cut a long name at 24 bytes, backing off to a UTF-8 boundary. */
	size_t n = impl ? strlen(impl) : 0;
	if (n > ICF_IMPL_LEN) {
		n = ICF_IMPL_LEN;
		while (n > 0 && ((uint8_t)impl[n] & 0xC0) == 0x80)
			n--;
	}
	memset(buf + ICF_IMPL_OFF, ' ', ICF_IMPL_LEN);
	if (n)
		memcpy(buf + ICF_IMPL_OFF, impl, n);
	buf[36] = spec;
	buf[37] = type;
	buf[38] = 1;
	ZSTD_CCtx *cctx = icf_cctx();
	if (!cctx) {
		free(buf);
		return tether_error_set(TETHER_ERROR, "Icechunk file: out of memory");
	}
	size_t z = ZSTD_compressCCtx(cctx, buf + ICF_HEADER_SIZE, bound, payload, plen, level);
	if (ZSTD_isError(z)) {
		free(buf);
		return tether_error_set(TETHER_ERROR, "Icechunk file: zstd: %s", ZSTD_getErrorName(z));
	}
	*out = buf;
	*len = ICF_HEADER_SIZE + z;
	return 0;
}
