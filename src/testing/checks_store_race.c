/* The store contract, concurrent conditional writes: SC_RACERS threads,
 * each with a store handle of its own (as separate processes would have),
 * released at once to race put if-absent on one key, or put if-match from
 * one token: exactly one wins, the others are refused with
 * TETHER_EREFUSED, and the object holds the winner's bytes. A store with
 * TETHER_STORE_ATOMIC_CAS must order every writer so; one without (the
 * local store) orders tether's writers under its lock, which is what
 * these threads are. */
#include "testing/store_contract.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 4

_Static_assert(SC_RACERS == 8, "the checks' names say 8 writers");

struct racer {
	pthread_barrier_t *start;
	const struct sc_suite *s;
	const char *key;
	enum tether_put_mode mode;
	struct tether_store_version expect;
	char bytes[32];
	int rc;
	char why[256];
};

static void *race(void *arg)
{
	struct racer *w = arg;
	tether_store *st = NULL;
	int opened = tether_store_open(w->s->uri, w->s->options, &st);
	if (opened)
		snprintf(w->why, sizeof w->why, "open: %s", tether_error_last());
	pthread_barrier_wait(w->start);
	if (opened)
		return NULL;
	tether_error_clear();
	w->rc = tether_store_put(st, w->key, w->bytes, strlen(w->bytes), w->mode, &w->expect, NULL);
	if (w->rc && w->rc != TETHER_EREFUSED)
		snprintf(w->why, sizeof w->why, "a racing put returned %s, not 0 or TETHER_EREFUSED: %s",
		         conf_code_name(w->rc), tether_error_last());
	else if (w->rc && !*tether_error_last())
		snprintf(w->why, sizeof w->why, "a racing put was refused without a message");
	tether_store_close(st);
	return NULL;
}

static int one_round(struct sc_run *r, const char *k, enum tether_put_mode mode,
                     const struct tether_store_version *expect, int round)
{
	struct racer w[SC_RACERS];
	pthread_t tid[SC_RACERS];
	pthread_barrier_t start;
	if (pthread_barrier_init(&start, NULL, SC_RACERS) != 0)
		return sc_fail(r, "cannot make a barrier for %d threads", SC_RACERS);
	memset(w, 0, sizeof w);
	int started = 0;
	for (int i = 0; i < SC_RACERS; i++) {
		w[i].start = &start;
		w[i].s = r->s;
		w[i].key = k;
		w[i].mode = mode;
		if (expect)
			w[i].expect = *expect;
		snprintf(w[i].bytes, sizeof w[i].bytes, "round %d writer %d", round, i);
	}
	for (; started < SC_RACERS; started++)
		if (pthread_create(&tid[started], NULL, race, &w[started]) != 0)
			break;
	if (started < SC_RACERS) {
		/* The barrier waits for SC_RACERS: stand in for the missing ones. */
		for (int i = started; i < SC_RACERS; i++)
			pthread_barrier_wait(&start);
	}
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	if (started < SC_RACERS)
		return sc_fail(r, "cannot start %d threads", SC_RACERS);
	int winner = -1, wins = 0;
	for (int i = 0; i < SC_RACERS; i++) {
		if (w[i].why[0])
			return sc_fail(r, "round %d: %s", round, w[i].why);
		if (w[i].rc == 0) {
			winner = i;
			wins++;
		}
	}
	if (wins != 1)
		return sc_fail(r, "round %d: %d of %d racing writers won; exactly one must", round, wins, SC_RACERS);
	char key[SC_KEY_MAX];
	snprintf(key, sizeof key, "%s", k + strlen(r->area) + 1);
	return sc_expect_bytes(r, key, w[winner].bytes, strlen(w[winner].bytes));
}

static int check_race_if_absent(struct sc_run *r)
{
	int rc = 0;
	for (int round = 1; !rc && round <= ROUNDS; round++) {
		char key[32];
		snprintf(key, sizeof key, "absent-%d", round);
		rc = one_round(r, sc_key(r, key), TETHER_PUT_IF_ABSENT, NULL, round);
	}
	return rc;
}

static int check_race_if_match(struct sc_run *r)
{
	int rc = 0;
	for (int round = 1; !rc && round <= ROUNDS; round++) {
		struct tether_store_version v;
		if (!(rc = sc_put(r, "ref", "base", 4, &v)))
			rc = one_round(r, sc_key(r, "ref"), TETHER_PUT_IF_MATCH, &v, round);
	}
	return rc;
}

const struct sc_check sc_checks_race[] = {
	{"race: 8 writers racing put if-absent on one key: exactly one wins", check_race_if_absent},
	{"race: 8 writers racing put if-match from one version: exactly one wins", check_race_if_match},
	{NULL, NULL},
};
