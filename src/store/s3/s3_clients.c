/* One HTTP client per set of client options, shared by every S3 store the
 * process opens: a command that opens a store per object (a status of a
 * hundred S3 objects) then reuses one pool of connections, DNS answers and
 * TLS sessions instead of opening new ones per store. Clients live as long
 * as the process (store modules are never unloaded): freeing them at exit
 * would run after OpenSSL's own exit-time cleanup, from curl's. */
#include "store/s3/s3.h"

#include "store/http/http.h"

#include <stdlib.h>
#include <string.h>

struct shared_client {
	struct tt_http_options opts;
	struct tt_http *http;
	struct shared_client *next;
};

static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_client *clients;

static int same_options(const struct tt_http_options *a, const struct tt_http_options *b)
{
	return a->connect_timeout_ms == b->connect_timeout_ms && a->timeout_ms == b->timeout_ms &&
	       a->max_attempts == b->max_attempts && a->allow_http == b->allow_http;
}

int s3_client_get(const struct tt_http_options *opts, struct tt_http **out)
{
	*out = NULL;
	int rc = 0;
	pthread_mutex_lock(&clients_lock);
	struct shared_client *c;
	for (c = clients; c && !same_options(&c->opts, opts); c = c->next)
		;
	if (!c) {
		if (!(c = calloc(1, sizeof *c))) {
			rc = s3_oom();
		} else if ((rc = tt_http_new(opts, &c->http)) != 0) {
			free(c);
			c = NULL;
		} else {
			c->opts = *opts;
			c->next = clients;
			clients = c;
		}
	}
	if (c)
		*out = c->http;
	pthread_mutex_unlock(&clients_lock);
	return rc;
}
