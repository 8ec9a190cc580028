/* The S3 store's object operations: GetObject (whole, ranged, at a
 * version), HeadObject, PutObject with If-None-Match / If-Match,
 * CopyObject, DeleteObject. */
#include "store/s3/s3.h"

#include "format/xml.h"
#include "store/http/http.h"
#include "util/hex.h"

#include <inttypes.h>
#include <nettle/md5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a request is about: the object's name under the bucket and its URI. */
struct target {
	char *object;
	char *uri;
};

static int target_of(const struct s3 *s, const char *key, struct target *t)
{
	t->object = s3_object_name(s, key);
	t->uri = t->object ? s3_object_uri(s, t->object) : NULL;
	return t->uri ? 0 : s3_oom();
}

static void target_clear(struct target *t)
{
	free(t->object);
	free(t->uri);
}

static void copy_token(struct tether_store_version *v, const char *etag)
{
	if (v)
		snprintf(v->token, sizeof v->token, "%s", etag ? etag : "");
}

static void mark_bucket_seen(struct s3 *s)
{
	__atomic_store_n(&s->bucket_seen, 1, __ATOMIC_RELAXED);
}

/* A HEAD answer carries no body, so its 404 does not say whether the key
 * or the whole bucket is missing: ask about the bucket once per store. */
static int bucket_check(struct s3 *s)
{
	if (__atomic_load_n(&s->bucket_seen, __ATOMIC_RELAXED))
		return 0;
	struct s3_call c = {.method = "HEAD"};
	struct tt_http_response r;
	int attempts;
	char what[512];
	snprintf(what, sizeof what, "s3://%s", s->bucket);
	int rc = s3_perform(s, &c, what, &r, &attempts);
	if (rc == 0 && r.status == 404)
		rc = tether_error_set(TETHER_ENOTFOUND, "s3://%s: 404 NoSuchBucket: bucket '%s' does not exist", s->bucket,
		                      s->bucket);
	else if (rc == 0 && r.status >= 300)
		rc = s3_fail(s, what, &r, attempts);
	else if (rc == 0)
		mark_bucket_seen(s);
	tt_http_response_free(&r);
	return rc;
}

static uint64_t header_u64(const struct tt_http_response *r, const char *name)
{
	const char *v = tt_http_header(r, name);
	return v ? strtoull(v, NULL, 10) : 0;
}

/* What the headers of a GET or HEAD answer say of the object. */
static void stat_from_headers(const struct tt_http_response *r, struct tether_store_stat *st, int latest)
{
	memset(st, 0, sizeof *st);
	st->exists = 1;
	st->size = header_u64(r, "Content-Length");
	/* A ranged answer's size is the part; Content-Range names the whole. */
	const char *range = tt_http_header(r, "Content-Range");
	const char *slash = range ? strrchr(range, '/') : NULL;
	if (slash && slash[1] != '*')
		st->size = strtoull(slash + 1, NULL, 10);
	copy_token(&st->version, tt_http_header(r, "ETag"));
	const char *vid = tt_http_header(r, "x-amz-version-id");
	snprintf(st->version_id, sizeof st->version_id, "%s", vid ? vid : "");
	st->is_latest = latest;
}

static int has_id(const char *version_id)
{
	return version_id && *version_id;
}

static char *version_query(const char *version_id)
{
	if (!has_id(version_id))
		return strdup("");
	struct s3_query q = {0};
	s3_query_add(&q, "versionId", version_id);
	char *out = s3_query_build(&q);
	s3_query_clear(&q);
	return out;
}

int s3_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st)
{
	struct s3 *s = impl;
	memset(st, 0, sizeof *st);
	struct target t;
	char *query = version_query(version_id);
	if (!query || target_of(s, key, &t) != 0) {
		free(query);
		return s3_oom();
	}
	struct s3_call c = {.method = "HEAD", .object = t.object, .query = query};
	struct tt_http_response r;
	int attempts;
	int rc = s3_perform(s, &c, t.uri, &r, &attempts);
	if (rc == 0) {
		if (r.status < 300) {
			mark_bucket_seen(s);
			stat_from_headers(&r, st, !has_id(version_id));
		} else if (r.status == 404 || (has_id(version_id) && (r.status == 400 || r.status == 405))) {
			const char *marker = tt_http_header(&r, "x-amz-delete-marker");
			int is_marker = marker && strcmp(marker, "true") == 0;
			rc = bucket_check(s);
			/* A version that is a delete marker: the object was absent then. */
			if (rc == 0 && has_id(version_id) && is_marker)
				snprintf(st->version_id, sizeof st->version_id, "%s", version_id);
			else if (rc == 0 && has_id(version_id))
				rc = tether_error_set(TETHER_ENOTFOUND, "%s: %ld: no version '%s' of this object", t.uri,
				                      r.status, version_id);
		} else if (r.status >= 400 && r.status < 500) {
			/* A HEAD answer has no body, so no code: ask a one-byte GET
			 * for the error document ("403 SignatureDoesNotMatch" says
			 * more than "403"). */
			struct tt_http_header range[1] = {{"Range", "bytes=0-0"}};
			struct tt_http_response g;
			int gattempts;
			c.method = "GET";
			c.headers = range;
			c.n_headers = 1;
			if (s3_perform(s, &c, t.uri, &g, &gattempts) == 0 && g.status == r.status && g.body_len)
				rc = s3_fail(s, t.uri, &g, attempts);
			else
				rc = s3_fail(s, t.uri, &r, attempts);
			tt_http_response_free(&g);
		} else {
			rc = s3_fail(s, t.uri, &r, attempts);
		}
	}
	tt_http_response_free(&r);
	target_clear(&t);
	free(query);
	return rc;
}

int s3_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	struct tether_store_stat st;
	int rc = s3_stat(impl, key, NULL, &st);
	*exists = rc == 0 && st.exists;
	if (version)
		copy_token(version, rc == 0 && st.exists ? st.version.token : "");
	if (size)
		*size = rc == 0 ? st.size : 0;
	return rc;
}

int s3_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                   uint8_t **data, size_t *len, struct tether_store_stat *st)
{
	struct s3 *s = impl;
	*data = NULL;
	*len = 0;
	struct tether_store_stat here;
	if (!st)
		st = &here;
	if (length == 0) {
		/* Nothing to read, but the object (or version) must be there. */
		int rc = s3_stat(s, key, version_id, st);
		if (rc == 0 && !st->exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "s3://%s/%s%s%s: not found", s->bucket, s->root,
			                      *s->root ? "/" : "", key);
		if (rc == 0 && !(*data = malloc(1)))
			rc = s3_oom();
		return rc;
	}
	struct target t;
	char *query = version_query(version_id);
	if (!query || target_of(s, key, &t) != 0) {
		free(query);
		return s3_oom();
	}
	char range[64];
	struct tt_http_header h[1];
	size_t nh = 0;
	if (offset != 0 || length != TETHER_STORE_TO_END) {
		if (length == TETHER_STORE_TO_END || offset + length < offset)
			snprintf(range, sizeof range, "bytes=%" PRIu64 "-", offset);
		else
			snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, offset, offset + length - 1);
		h[nh++] = (struct tt_http_header){"Range", range};
	}
	struct s3_call c = {.method = "GET", .object = t.object, .query = query, .headers = h, .n_headers = nh};
	struct tt_http_response r;
	int attempts;
	int rc = s3_perform(s, &c, t.uri, &r, &attempts);
	if (rc == 0) {
		if (r.status < 300) {
			mark_bucket_seen(s);
			stat_from_headers(&r, st, !has_id(version_id));
			if (nh && r.status == 200) {
				/* A server that ignored the Range sent the whole object:
				 * keep the part asked for. */
				uint64_t from = offset < r.body_len ? offset : r.body_len;
				uint64_t n = r.body_len - from;
				if (length < n)
					n = length;
				memmove(r.body, r.body + from, (size_t)n);
				r.body_len = (size_t)n;
			}
			*data = r.body;
			*len = r.body_len;
			r.body = NULL;
		} else if (r.status == 416) {
			/* The offset is past the end: no bytes, and what the object is. */
			rc = s3_stat(s, key, version_id, st);
			if (rc == 0 && !(*data = malloc(1)))
				rc = s3_oom();
		} else if (has_id(version_id) && (r.status == 400 || r.status == 405)) {
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: %ld: no readable version '%s' of this object%s", t.uri,
			                      r.status, version_id, r.status == 405 ? " (it is a delete marker)" : "");
		} else {
			rc = s3_fail(s, t.uri, &r, attempts);
		}
	}
	tt_http_response_free(&r);
	target_clear(&t);
	free(query);
	return rc;
}

int s3_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
           struct tether_store_version *version)
{
	struct tether_store_stat st;
	int rc = s3_get_version(impl, key, NULL, offset, length, data, len, &st);
	if (rc == 0 && version)
		copy_token(version, st.version.token);
	return rc;
}

/* The ETag S3 gives an object written by one PutObject: its MD5, quoted. */
static void md5_etag(const void *data, size_t len, char out[35])
{
	struct md5_ctx ctx;
	uint8_t d[MD5_DIGEST_SIZE];
	md5_init(&ctx);
	if (len)
		md5_update(&ctx, len, data);
	md5_digest(&ctx, sizeof d, d);
	out[0] = '"';
	tt_hex(d, sizeof d, out + 1);
	out[33] = '"';
	out[34] = '\0';
}

/* Without atomic conditional writes (conditional_put = "disabled"): check,
 * then write, under compare_lock so the writers of this process are
 * ordered, as the local store orders them. A writer elsewhere can still
 * come in between; the store then claims no TETHER_STORE_ATOMIC_CAS, so
 * the engine knows. */
static pthread_mutex_t compare_lock = PTHREAD_MUTEX_INITIALIZER;

static int precheck(struct s3 *s, const char *key, const char *uri, enum tether_put_mode mode,
                    const struct tether_store_version *expect)
{
	struct tether_store_stat st;
	int rc = s3_stat(s, key, NULL, &st);
	if (rc != 0)
		return rc;
	if (mode == TETHER_PUT_IF_ABSENT && st.exists)
		return tether_error_set(TETHER_EREFUSED, "%s: an object is already there", uri);
	if (mode == TETHER_PUT_IF_MATCH && (!st.exists || strcmp(st.version.token, expect->token) != 0))
		return tether_error_set(TETHER_EREFUSED, "%s: the object is no longer at version %s", uri, expect->token);
	return 0;
}

int s3_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
           const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	struct s3 *s = impl;
	struct target t;
	if (target_of(s, key, &t) != 0)
		return s3_oom();
	struct tt_http_header h[1];
	size_t nh = 0;
	int rc = 0;
	int compared = mode != TETHER_PUT_OVERWRITE && !s->conditional_put;
	if (compared) {
		pthread_mutex_lock(&compare_lock);
		rc = precheck(s, key, t.uri, mode, expect);
	} else if (mode == TETHER_PUT_IF_ABSENT)
		h[nh++] = (struct tt_http_header){"If-None-Match", "*"};
	else if (mode == TETHER_PUT_IF_MATCH)
		h[nh++] = (struct tt_http_header){"If-Match", expect->token};
	struct tt_http_response r = {0};
	int attempts = 0;
	if (rc == 0)
		rc = s3_perform(s, &(struct s3_call){.method = "PUT", .object = t.object, .headers = h, .n_headers = nh,
		                                     .body = data, .body_len = len},
		                t.uri, &r, &attempts);
	if (compared)
		pthread_mutex_unlock(&compare_lock);
	if (rc == 0 && r.status < 300) {
		mark_bucket_seen(s);
		copy_token(new_version, tt_http_header(&r, "ETag"));
	} else if (rc == 0 && nh && attempts > 1 && r.status == 412) {
		/* An attempt that was cut off may have written before the retry
		 * found the object there: if it holds our bytes, the write is ours. */
		struct tether_store_stat st;
		char mine[35];
		md5_etag(data, len, mine);
		if (s3_stat(s, key, NULL, &st) == 0 && st.exists && strcmp(st.version.token, mine) == 0)
			copy_token(new_version, mine);
		else
			rc = s3_fail(s, t.uri, &r, attempts);
	} else if (rc == 0 && mode == TETHER_PUT_IF_MATCH && r.status == 404 && !s3_no_bucket(&r)) {
		/* If-Match on a key deleted since it was read: the precondition
		 * failed, as for any other version. */
		rc = tether_error_set(TETHER_EREFUSED, "%s: 404 NoSuchKey: the object was deleted since version %s", t.uri,
		                      expect->token);
	} else if (rc == 0) {
		rc = s3_fail(s, t.uri, &r, attempts);
	}
	tt_http_response_free(&r);
	target_clear(&t);
	return rc;
}

/* CopyObject may answer 200 and still fail: the error is in the body. */
static int copy_answer_failed(const struct tt_http_response *r)
{
	struct tt_xml_doc *d = tt_xml_parse((const char *)r->body, r->body_len, "CopyObject answer", NULL, 0);
	int failed = d && strcmp(tt_xml_name(tt_xml_root(d)), "Error") == 0;
	tt_xml_free(d);
	return failed;
}

/* copy with if_match: the source read only at that version (GET with
 * If-Match), written to a target that must not exist (PUT with
 * If-None-Match). Not CopyObject's x-amz-copy-source-if-match: libcurl
 * 7.88's SigV4 sorts the signed headers as "name:value" lines, so it puts
 * x-amz-copy-source-if-match before x-amz-copy-source where the server
 * sorts by name, and every such request fails its signature (seen with
 * moto and SeaweedFS). */
static int copy_if_match(struct s3 *s, const char *from, const char *to, const struct tether_store_version *if_match)
{
	struct target src;
	if (target_of(s, from, &src) != 0)
		return s3_oom();
	struct tt_http_header h[1] = {{"If-Match", if_match->token}};
	struct tt_http_response r;
	int attempts;
	int rc = s3_perform(s, &(struct s3_call){.method = "GET", .object = src.object, .headers = h, .n_headers = 1},
	                    src.uri, &r, &attempts);
	if (rc == 0 && r.status < 300)
		rc = s3_put(s, to, r.body, r.body_len, TETHER_PUT_IF_ABSENT, NULL, NULL);
	else if (rc == 0 && r.status == 412)
		rc = tether_error_set(TETHER_EREFUSED, "%s: 412 PreconditionFailed: the source is no longer at version %s",
		                      src.uri, if_match->token);
	else if (rc == 0)
		rc = s3_fail(s, src.uri, &r, attempts);
	tt_http_response_free(&r);
	target_clear(&src);
	return rc;
}

int s3_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match)
{
	struct s3 *s = impl;
	if (if_match)
		return copy_if_match(s, from, to, if_match);
	struct target src, dst;
	if (target_of(s, from, &src) != 0)
		return s3_oom();
	if (target_of(s, to, &dst) != 0) {
		target_clear(&src);
		return s3_oom();
	}
	int rc = 0;
	char *esc_bucket = tt_http_escape(s->bucket, 0), *esc_key = tt_http_escape(src.object, 1);
	size_t n = (esc_bucket ? strlen(esc_bucket) : 0) + (esc_key ? strlen(esc_key) : 0) + 3;
	char *source = esc_bucket && esc_key ? malloc(n) : NULL;
	if (!source)
		rc = s3_oom();
	else
		snprintf(source, n, "/%s/%s", esc_bucket, esc_key);
	/* The target must not exist. Where conditional writes are on, the
	 * copy carries If-None-Match: * (atomic on servers that honour it on
	 * CopyObject); the HEAD before it refuses an existing target on those
	 * that do not, leaving only the moment between the two open. */
	int compared = !s->conditional_put;
	if (compared)
		pthread_mutex_lock(&compare_lock);
	if (rc == 0)
		rc = precheck(s, to, dst.uri, TETHER_PUT_IF_ABSENT, NULL);
	struct tt_http_header h[2];
	size_t nh = 0;
	if (rc == 0) {
		h[nh++] = (struct tt_http_header){"x-amz-copy-source", source};
		if (s->conditional_put)
			h[nh++] = (struct tt_http_header){"If-None-Match", "*"};
	}
	struct tt_http_response r = {0};
	int attempts = 0;
	if (rc == 0)
		rc = s3_perform(s, &(struct s3_call){.method = "PUT", .object = dst.object, .headers = h, .n_headers = nh},
		                dst.uri, &r, &attempts);
	if (compared)
		pthread_mutex_unlock(&compare_lock);
	if (rc == 0 && (r.status >= 300 || copy_answer_failed(&r))) {
		if (r.status < 300)
			r.status = 500; /* an error inside a 200: its code says which */
		const char *what = r.status == 404 ? src.uri : dst.uri;
		rc = s3_fail(s, what, &r, attempts);
	}
	tt_http_response_free(&r);
	free(source);
	free(esc_bucket);
	free(esc_key);
	target_clear(&src);
	target_clear(&dst);
	return rc;
}

int s3_del(void *impl, const char *key)
{
	struct s3 *s = impl;
	struct target t;
	if (target_of(s, key, &t) != 0)
		return s3_oom();
	struct tt_http_response r;
	int attempts;
	int rc = s3_perform(s, &(struct s3_call){.method = "DELETE", .object = t.object}, t.uri, &r, &attempts);
	if (rc == 0 && r.status >= 300) {
		/* One already gone is not an error; a missing bucket is. */
		if (!(r.status == 404 && !s3_no_bucket(&r)))
			rc = s3_fail(s, t.uri, &r, attempts);
	}
	tt_http_response_free(&r);
	target_clear(&t);
	return rc;
}
