/* Reading the `repo` file, and changing it the way Icechunk does
 * (asset_manager.rs, update_repo_info): read it and its version, check it
 * is writable, apply the change to a fresh model, put the change at the
 * head of the ops log, copy the old file to overwritten/<backup> on the
 * condition that it is still the version read, then write the new file on
 * the same condition. A lost race starts over from a new read, so every
 * check runs against the latest state. A process that dies between the
 * copy and the write leaves only an unreferenced backup. */
#include "backends/icechunk/ic.h"

#include "format/base32.h"
#include "format/icfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ATTEMPTS 100
#define IMMEDIATE_RETRIES 5
/* How far the newest ops-log entry may be ahead of this clock before
 * tether gives up waiting for the clock to pass it. */
#define MAX_CLOCK_WAIT_US 2000000ull

uint64_t ic_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int ic_random_id(struct ic_id *id)
{
	if (getentropy(id->b, sizeof id->b) != 0)
		return tether_error_set(TETHER_EIO, "cannot read random bytes: %s", strerror(errno));
	return 0;
}

int ic_backup_name(char out[64])
{
	/* Icechunk names backups so that a plain listing sorts newest first:
	 * milliseconds until 3000-01-01, then a random id. */
	struct ic_id rnd;
	int rc = ic_random_id(&rnd);
	if (rc)
		return rc;
	char text[IC_ID_CHARS + 1];
	ic_id_text(&rnd, text);
	unsigned long long ms = ic_now_us() / 1000u;
	snprintf(out, 64, "repo.%014llu.%s", 32503680000000ull - ms, text);
	return 0;
}

static char *repo_path(tether_store *s)
{
	return tt_strdupf("%s/repo", tether_store_uri(s));
}

int ic_repo_read(tether_store *s, struct ic_repo *out, struct tether_store_version *version)
{
	uint8_t *data = NULL, *payload = NULL;
	size_t len = 0, plen = 0;
	char *what = repo_path(s);
	struct icf_header h;
	if (!what)
		return ic_fail_oom();
	memset(out, 0, sizeof *out);
	int rc = tether_store_get(s, "repo", &data, &len, version);
	if (rc == 0)
		rc = icf_read(data, len, ICF_REPO, IC_MAX_REPO_PAYLOAD, what, &h, &payload, &plen);
	free(data);
	if (rc == 0)
		rc = ic_repo_parse(payload, plen, what, out);
	free(what);
	return rc;
}

static int check_writable(tether_store *s, const struct ic_repo *r)
{
	if (r->unwritable[0])
		return tether_error_set(TETHER_EREFUSED, "%s: tether will not write to this repository: %s",
		                        tether_store_uri(s), r->unwritable);
	if (r->status.availability != IC_ONLINE) {
		const char *state = r->status.availability == IC_READ_ONLY ? "read-only" : "offline";
		if (r->status.has_reason)
			return tether_error_set(TETHER_EREFUSED, "%s: the repository is %s (%.*s): not writing",
			                        tether_store_uri(s), state, (int)r->status.reason.n, r->status.reason.p);
		return tether_error_set(TETHER_EREFUSED, "%s: the repository is %s: not writing", tether_store_uri(s),
		                        state);
	}
	return 0;
}

/* A time after the ops log's newest entry: now, after a short wait when
 * the entry was stamped by a clock slightly ahead of this one. */
static int update_time(tether_store *s, const struct ic_repo *r, uint64_t *at)
{
	uint64_t head = r->nupdates ? r->updates[0].at : 0, now = ic_now_us();
	if (now <= head && head - now < MAX_CLOCK_WAIT_US) {
		uint64_t wait = head - now + 1;
		struct timespec ts = {(time_t)(wait / 1000000u), (long)(wait % 1000000u) * 1000};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		now = ic_now_us();
	}
	if (now <= head)
		return tether_error_set(TETHER_EREFUSED,
		                        "%s: the repository's newest update is %.1f s ahead of this machine's "
		                        "clock; Icechunk requires its ops log to move forward: fix the clock",
		                        tether_store_uri(s), (double)(head - now) / 1e6);
	*at = now;
	return 0;
}

static int encode(const struct ic_repo *r, uint8_t **file, size_t *len)
{
	uint8_t *fb = NULL;
	size_t fblen = 0;
	int rc = ic_repo_serialize(r, &fb, &fblen);
	if (rc == 0)
		rc = icf_write(2, ICF_REPO, IC_IMPL_NAME, fb, fblen, IC_ZSTD_LEVEL, file, len);
	free(fb);
	return rc;
}

static void backoff(int attempt)
{
	if (attempt < IMMEDIATE_RETRIES)
		return;
	/* 50 ms doubling to 2 s, with jitter: what a writer racing on an
	 * object store needs, and never reached on a quiet one. */
	unsigned shift = (unsigned)(attempt - IMMEDIATE_RETRIES);
	long ms = 50L << (shift > 5 ? 5 : shift);
	struct ic_id r;
	if (ic_random_id(&r) == 0)
		ms = ms / 2 + (long)(r.b[0] * ms / 512);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One attempt; *retry = 1 when another writer won the race. */
static int attempt_update(tether_store *s, ic_mutation_fn fn, void *ud, int *retry)
{
	struct ic_repo r;
	struct tether_store_version version;
	struct ic_update u;
	char backup[64], backup_key[80];
	uint8_t *file = NULL;
	size_t len = 0;
	int unchanged = 0;
	*retry = 0;
	int rc = ic_repo_read(s, &r, &version);
	if (rc)
		return rc;
	memset(&u, 0, sizeof u);
	/* The change first: one that is already made (a pin that exists)
	 * needs no write, even where writes are refused. */
	if ((rc = fn(&r, ud, &u, &unchanged)) || unchanged || (rc = check_writable(s, &r)))
		goto out;
	if ((rc = update_time(s, &r, &u.at)) || (rc = ic_backup_name(backup)) ||
	    (rc = ic_repo_log(&r, &u, backup, ic_repo_updates_per_file(&r))) || (rc = encode(&r, &file, &len)))
		goto out;
	snprintf(backup_key, sizeof backup_key, "overwritten/%s", backup);
	rc = tether_store_copy(s, "repo", backup_key, &version);
	if (rc == 0)
		rc = tether_store_put(s, "repo", file, len, TETHER_PUT_IF_MATCH, &version, NULL);
	if (rc == TETHER_EREFUSED)
		*retry = 1;
out:
	free(file);
	ic_repo_free(&r);
	return rc;
}

int ic_repo_update(tether_store *s, const char *what, ic_mutation_fn fn, void *ud)
{
	for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
		int retry = 0;
		int rc = attempt_update(s, fn, ud, &retry);
		if (!retry)
			return rc;
		backoff(attempt);
	}
	return tether_error_set(TETHER_EREFUSED, "%s: %s: the repository kept changing under %d attempts",
	                        tether_store_uri(s), what, MAX_ATTEMPTS);
}

int ic_repo_create_file(tether_store *s, const struct ic_repo *r)
{
	uint8_t *file = NULL;
	size_t len = 0;
	int rc = encode(r, &file, &len);
	if (rc == 0)
		rc = tether_store_put(s, "repo", file, len, TETHER_PUT_IF_ABSENT, NULL, NULL);
	free(file);
	if (rc == TETHER_EREFUSED)
		return tether_error_set(TETHER_EREFUSED, "%s: an Icechunk repository was created there meanwhile",
		                        tether_store_uri(s));
	return rc;
}
