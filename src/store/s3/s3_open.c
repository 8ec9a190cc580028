/* Opening an S3 store: the URI (s3://bucket[/root]), its options, the
 * region and endpoint as AWS's tools find them (creds.h), the addressing
 * style, and one HTTP client for every request of the store. Nothing is
 * asked of the network here: credentials are resolved on the first
 * request, so opening a store that is never read costs nothing. */
#include "store/s3/s3.h"

#include "store/http/http.h"
#include "store/s3/creds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int s3_oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

/* A boolean option: 1, 0, or -1 when not given. */
static int opt_bool(const json_t *options, const char *name)
{
	const json_t *v = options ? json_object_get(options, name) : NULL;
	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* A number of seconds as milliseconds, 0 when not given. */
static long opt_ms(const json_t *options, const char *name)
{
	const json_t *v = options ? json_object_get(options, name) : NULL;
	return json_is_number(v) ? (long)(json_number_value(v) * 1000.0) : 0;
}

/* bucket and root of s3://bucket[/root] (canonical: no trailing '/'). */
static int split_uri(const char *uri, char **bucket, char **root)
{
	const char *b = uri + strlen("s3://");
	size_t bl = strcspn(b, "/");
	if (strncmp(uri, "s3://", 5) != 0 || bl == 0)
		return tether_error_set(TETHER_EUSAGE, "%s: not an S3 URI (s3://BUCKET[/PREFIX])", uri);
	*bucket = strndup(b, bl);
	*root = strdup(b[bl] ? b + bl + 1 : "");
	if (!*bucket || !*root)
		return s3_oom();
	return 0;
}

void s3_close(void *impl)
{
	struct s3 *s = impl;
	if (!s)
		return;
	if (s->creds)
		tt_aws_provider_free(s->creds);
	tt_http_free(s->http);
	s3_endpoint_clear(&s->ep);
	json_decref(s->options);
	pthread_mutex_destroy(&s->creds_lock);
	free(s->uri);
	free(s->bucket);
	free(s->root);
	free(s->region);
	free(s);
}

int s3_open(const char *uri, const json_t *options, void **impl)
{
	*impl = NULL;
	struct s3 *s = calloc(1, sizeof *s);
	if (!s)
		return s3_oom();
	pthread_mutex_init(&s->creds_lock, NULL);
	int rc = 0;
	s->options = options ? json_deep_copy(options) : json_object();
	s->uri = strdup(uri);
	if (!s->options || !s->uri) {
		rc = s3_oom();
		goto out;
	}
	if ((rc = split_uri(uri, &s->bucket, &s->root)) != 0)
		goto out;
	const char *cp = json_string_value(json_object_get(s->options, "conditional_put"));
	s->conditional_put = !(cp && strcmp(cp, "disabled") == 0);
	if (!(s->region = tt_aws_region(s->options))) {
		rc = s3_oom();
		goto out;
	}
	char *endpoint = tt_aws_endpoint(s->options, "s3");
	if (!endpoint) {
		size_t n = strlen(s->region) + 32;
		if ((endpoint = malloc(n)))
			snprintf(endpoint, n, "https://s3.%s.amazonaws.com", s->region);
	}
	if (!endpoint) {
		rc = s3_oom();
		goto out;
	}
	rc = s3_endpoint_parse(endpoint, &s->ep);
	free(endpoint);
	if (rc == 0)
		rc = s3_choose_path_style(&s->ep, s->bucket, opt_bool(s->options, "force_path_style"),
		                          opt_bool(s->options, "virtual_hosted_style_request"));
	if (rc != 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", tether_error_last());
		rc = tether_error_set(rc, "%s: %s", uri, msg);
		goto out;
	}
	struct tt_http_options ho = {
	    .connect_timeout_ms = opt_ms(s->options, "connect_timeout"),
	    .timeout_ms = opt_ms(s->options, "timeout"),
	    .allow_http = opt_bool(s->options, "allow_http") == 1,
	};
	if ((rc = tt_http_new(&ho, &s->http)) != 0)
		goto out;
	if (strcmp(s->ep.scheme, "http") == 0 && !ho.allow_http) {
		rc = tether_error_set(TETHER_EUSAGE,
		                      "%s: the endpoint %s://%s is plain http; set allow_http = true to use it",
		                      uri, s->ep.scheme, s->ep.authority);
		goto out;
	}
out:
	if (rc != 0) {
		s3_close(s);
		return rc;
	}
	*impl = s;
	return 0;
}

char *s3_object_name(const struct s3 *s, const char *key)
{
	size_t n = strlen(s->root) + strlen(key) + 2;
	char *o = malloc(n);
	if (o)
		snprintf(o, n, "%s%s%s", s->root, *s->root && *key ? "/" : "", key);
	return o;
}

char *s3_object_uri(const struct s3 *s, const char *object)
{
	size_t n = strlen(s->bucket) + strlen(object) + 8;
	char *u = malloc(n);
	if (u)
		snprintf(u, n, "s3://%s%s%s", s->bucket, *object ? "/" : "", object);
	return u;
}
