/* The AWS credential chain (src/store/s3/creds.h) from the command line,
 * for tests/e2e/test_aws_creds.py: make a provider, then ask it for
 * credentials a given number of times, printing for each the source, the
 * key id and the expiry (never the secret nor the session token).
 *
 *   aws-creds-probe [--options JSON] [--gets N] [--sleep SECONDS]
 *                   [--threads N] [--region] [--endpoint SERVICE]
 *
 * One line per get: "get N: source=S key=K token=yes|no expires_in=SECS|never".
 * --threads N: N threads each make the gets at once (the provider is
 * shared). --region / --endpoint print tt_aws_region / tt_aws_endpoint.
 * A failure: "aws-creds-probe: MESSAGE" on stderr, tether's exit code. */
#include "store/http/http.h"
#include "store/s3/creds.h"

#include <tether.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct run {
	struct tt_aws_provider *p;
	int gets;
	double sleep_s;
	int failed;
	int thread;
};

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void *gets(void *arg)
{
	struct run *r = arg;
	for (int i = 1; i <= r->gets; i++) {
		if (i > 1 && r->sleep_s > 0) {
			struct timespec ts = {(time_t)r->sleep_s, (long)((r->sleep_s - (double)(time_t)r->sleep_s) * 1e9)};
			nanosleep(&ts, NULL);
		}
		struct tt_aws_creds c;
		int rc = tt_aws_provider_get(r->p, &c);
		pthread_mutex_lock(&out_lock);
		if (rc != 0) {
			fprintf(stderr, "aws-creds-probe: %s\n", tether_error_last());
			r->failed = rc;
		} else {
			char expiry[32] = "never";
			if (c.expires_at)
				snprintf(expiry, sizeof expiry, "%lld", (long long)(c.expires_at - (int64_t)time(NULL)));
			printf("get %d: source=%s key=%s token=%s expires_in=%s\n", i, c.source, c.access_key_id,
			       c.session_token ? "yes" : "no", expiry);
			fflush(stdout);
			tt_aws_creds_clear(&c);
		}
		pthread_mutex_unlock(&out_lock);
		if (rc != 0)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	json_t *options = NULL;
	int n_gets = 1, threads = 1;
	double sleep_s = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--region") == 0) {
			char *r = tt_aws_region(options);
			printf("region=%s\n", r);
			free(r);
			json_decref(options);
			return 0;
		}
		if (!v) {
			fprintf(stderr, "aws-creds-probe: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--options") == 0) {
			json_error_t e;
			json_decref(options);
			if (!(options = json_loads(v, 0, &e))) {
				fprintf(stderr, "aws-creds-probe: --options: %s\n", e.text);
				return 2;
			}
		} else if (strcmp(a, "--gets") == 0) {
			n_gets = atoi(v);
		} else if (strcmp(a, "--sleep") == 0) {
			sleep_s = atof(v);
		} else if (strcmp(a, "--threads") == 0) {
			threads = atoi(v);
		} else if (strcmp(a, "--endpoint") == 0) {
			char *e = tt_aws_endpoint(options, v);
			printf("endpoint=%s\n", e ? e : "(none)");
			free(e);
			json_decref(options);
			return 0;
		} else {
			fprintf(stderr, "aws-creds-probe: unknown argument %s\n", a);
			return 2;
		}
	}
	if (threads < 1 || threads > 64 || n_gets < 0) {
		fprintf(stderr, "aws-creds-probe: --threads 1..64, --gets >= 0\n");
		return 2;
	}
	/* The provider makes its own HTTP client (allow_http from the
	 * options), as it does when its caller has none. */
	struct tt_aws_provider *p;
	int rc = tt_aws_provider_new(options, NULL, &p);
	json_decref(options);
	if (rc != 0) {
		fprintf(stderr, "aws-creds-probe: %s\n", tether_error_last());
		return tether_exit_code(rc);
	}
	struct run runs[64];
	pthread_t tids[64];
	for (int t = 0; t < threads; t++) {
		runs[t] = (struct run){p, n_gets, sleep_s, 0, t};
		pthread_create(&tids[t], NULL, gets, &runs[t]);
	}
	int failed = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tids[t], NULL);
		if (runs[t].failed)
			failed = runs[t].failed;
	}
	tt_aws_provider_free(p);
	return failed ? tether_exit_code(failed) : 0;
}
