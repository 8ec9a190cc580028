/* What clients of JSON APIs over the HTTP client (lakeFS, Neon) share: is
 * a URL this machine's, and the one-line message of an error answer. */
#include "store/http/http.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int tt_http_loopback_url(const char *url)
{
	const char *host = url ? strstr(url, "://") : NULL;
	if (!host)
		return 0;
	host += 3;
	static const char *const loopback[] = {"127.0.0.1", "localhost", "[::1]", NULL};
	for (int i = 0; loopback[i]; i++) {
		size_t n = strlen(loopback[i]);
		if (strncasecmp(host, loopback[i], n) == 0 && (host[n] == ':' || host[n] == '/' || !host[n]))
			return 1;
	}
	return 0;
}

char *tt_http_error_message(const struct tt_http_response *r)
{
	json_t *j = json_loadb((const char *)r->body, r->body_len, 0, NULL);
	const char *m = json_string_value(json_object_get(j, "message"));
	size_t n = strcspn((const char *)r->body, "\r\n");
	if (n > 200)
		n = 200;
	char *out = m ? strdup(m) : malloc(n + 1);
	if (out && !m) {
		memcpy(out, r->body, n);
		out[n] = 0;
	}
	json_decref(j);
	/* One line: a server's control bytes never reach the terminal. */
	for (char *p = out; p && *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	return out;
}

int tt_http_shared_or_new(struct tt_http *shared, const char *url, int allow_http, long timeout_ms,
                          struct tt_http **out, int *own)
{
	int plain = strncmp(url, "http://", 7) == 0;
	*own = 0;
	if (shared && (!plain || tt_http_options(shared)->allow_http == allow_http)) {
		*out = shared;
		return 0;
	}
	struct tt_http_options o = {.allow_http = allow_http, .timeout_ms = timeout_ms};
	int rc = tt_http_new(&o, out);
	*own = rc == 0;
	return rc;
}
