/* store-tool URI session: a byte store driven by JSON commands on stdin,
 * one a line, each answered by one JSON line on stdout, so a test can drive
 * a remote store (the GCS store against fake-gcs-server,
 * tests/e2e/test_gcs_store.py) and judge every answer itself. The commands
 * share one open store, as the calls of a tether command do (its token
 * cache, its connections), and `parallel` runs some on several threads at
 * once.
 *
 * Commands ({"op": ..., ...}; data as hex):
 *   get key [offset length version_id]   -> data, version, (version_id)
 *   stat key [version_id]                -> exists, size, version, version_id, is_latest
 *   put key data [mode expect]           -> version   (mode: overwrite,
 *                                           if-absent, if-match)
 *   copy from to [if_match]   delete key
 *   list [prefix start_after page_size]  -> keys (every page, through the iterator)
 *   list_stat [...]                      -> items [{key, size, version, version_id}]
 *   versions key                         -> items [{size, version_id, is_latest, exists}]
 *   root_exists   make_root   remove_root
 *   sleep seconds
 *   parallel threads commands            -> answers: the commands run by each
 *                                           of `threads` threads at once on
 *                                           the one open store (a list a thread)
 * An error answers {"ok": false, "code": N, "exit": E, "error": message}. */
#include "store_session.h"

#include <tether.h>

#include <jansson.h>
#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_t *failure(int rc)
{
	return json_pack("{s:b, s:i, s:i, s:s}", "ok", 0, "code", rc, "exit", tether_exit_code(rc), "error",
	                 tether_error_last());
}

static char *hex_of(const uint8_t *d, size_t n)
{
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; s && i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", d[i]);
	if (s)
		s[2 * n] = '\0';
	return s;
}

static uint8_t *bytes_of(const char *hex, size_t *n)
{
	size_t len = hex ? strlen(hex) : 0;
	uint8_t *d = malloc(len / 2 + 1);
	*n = len / 2;
	for (size_t i = 0; d && i < *n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
			free(d);
			return NULL;
		}
		d[i] = (uint8_t)v;
	}
	return d;
}

static json_t *stat_json(const struct tether_store_stat *st)
{
	return json_pack("{s:b, s:I, s:s, s:s, s:b}", "exists", st->exists, "size", (json_int_t)st->size, "version",
	                 st->version.token, "version_id", st->version_id, "is_latest", st->is_latest);
}

static const char *str(const json_t *cmd, const char *name)
{
	const char *s = json_string_value(json_object_get(cmd, name));
	return s ? s : "";
}

static int add_version(void *ud, const char *key, const struct tether_store_stat *st)
{
	(void)key;
	return json_array_append_new(ud, stat_json(st));
}

static json_t *do_list(tether_store *s, const json_t *cmd, int with_stat)
{
	tether_store_iter *it;
	size_t page = (size_t)json_integer_value(json_object_get(cmd, "page_size"));
	int rc = tether_store_list(s, str(cmd, "prefix"), str(cmd, "start_after"), page, &it);
	if (rc)
		return failure(rc);
	json_t *keys = json_array();
	for (;;) {
		const char *key;
		const struct tether_store_stat *st;
		rc = with_stat ? tether_store_next_stat(it, &key, &st) : tether_store_next(it, &key);
		if (rc || !key)
			break;
		if (!with_stat)
			json_array_append_new(keys, json_string(key));
		else {
			json_t *item = stat_json(st);
			json_object_set_new(item, "key", json_string(key));
			json_array_append_new(keys, item);
		}
	}
	tether_store_iter_free(it);
	if (rc) {
		json_decref(keys);
		return failure(rc);
	}
	return json_pack("{s:b, s:o}", "ok", 1, with_stat ? "items" : "keys", keys);
}

static json_t *run(tether_store *s, const json_t *cmd);

struct worker {
	pthread_t thread;
	tether_store *s;
	const json_t *commands;
	json_t *answers;
	pthread_barrier_t *start;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(w->start);
	size_t i;
	const json_t *cmd;
	json_array_foreach(w->commands, i, cmd)
		json_array_append_new(w->answers, run(w->s, cmd));
	return NULL;
}

/* Every thread runs the commands on the shared store, released together. */
static json_t *do_parallel(tether_store *s, const json_t *cmd)
{
	size_t n = (size_t)json_integer_value(json_object_get(cmd, "threads"));
	const json_t *commands = json_object_get(cmd, "commands");
	if (n < 1 || n > 64 || !json_is_array(commands))
		return json_pack("{s:b, s:s}", "ok", 0, "error", "parallel needs 1-64 threads and a list of commands");
	struct worker w[64];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		w[i] = (struct worker){.s = s, .commands = commands, .answers = json_array(), .start = &start};
		pthread_create(&w[i].thread, NULL, work, &w[i]);
	}
	for (size_t i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		json_array_append_new(out, w[i].answers);
	}
	pthread_barrier_destroy(&start);
	return json_pack("{s:b, s:o}", "ok", 1, "answers", out);
}

static json_t *run(tether_store *s, const json_t *cmd)
{
	const char *op = str(cmd, "op"), *key = str(cmd, "key");
	const char *version_id = json_string_value(json_object_get(cmd, "version_id"));
	int rc = 0;
	if (strcmp(op, "get") == 0) {
		uint8_t *data = NULL;
		size_t len = 0;
		struct tether_store_stat st = {0};
		json_t *off = json_object_get(cmd, "offset"), *n = json_object_get(cmd, "length");
		if (version_id)
			rc = tether_store_get_version(s, key, version_id, &data, &len, &st);
		else
			rc = tether_store_get_range(s, key, off ? (uint64_t)json_integer_value(off) : 0,
			                            n ? (uint64_t)json_integer_value(n) : TETHER_STORE_TO_END, &data, &len,
			                            &st.version);
		if (rc)
			return failure(rc);
		char *hex = hex_of(data, len);
		free(data);
		json_t *out = json_pack("{s:b, s:s, s:s, s:s}", "ok", 1, "data", hex, "version", st.version.token,
		                        "version_id", st.version_id);
		free(hex);
		return out;
	}
	if (strcmp(op, "stat") == 0) {
		struct tether_store_stat st;
		if ((rc = tether_store_stat(s, key, version_id, &st)))
			return failure(rc);
		json_t *out = stat_json(&st);
		json_object_set_new(out, "ok", json_true());
		return out;
	}
	if (strcmp(op, "put") == 0) {
		const char *mode = str(cmd, "mode");
		enum tether_put_mode m = strcmp(mode, "if-absent") == 0 ? TETHER_PUT_IF_ABSENT
		                         : strcmp(mode, "if-match") == 0 ? TETHER_PUT_IF_MATCH
		                                                         : TETHER_PUT_OVERWRITE;
		struct tether_store_version expect = {{0}}, got = {{0}};
		snprintf(expect.token, sizeof expect.token, "%s", str(cmd, "expect"));
		size_t len;
		uint8_t *data = bytes_of(str(cmd, "data"), &len);
		rc = data ? tether_store_put(s, key, data, len, m, &expect, &got) : TETHER_EUSAGE;
		free(data);
		return rc ? failure(rc) : json_pack("{s:b, s:s}", "ok", 1, "version", got.token);
	}
	if (strcmp(op, "copy") == 0) {
		struct tether_store_version v = {{0}};
		snprintf(v.token, sizeof v.token, "%s", str(cmd, "if_match"));
		rc = tether_store_copy(s, str(cmd, "from"), str(cmd, "to"), *v.token ? &v : NULL);
	} else if (strcmp(op, "delete") == 0)
		rc = tether_store_delete(s, key);
	else if (strcmp(op, "list") == 0 || strcmp(op, "list_stat") == 0)
		return do_list(s, cmd, strcmp(op, "list_stat") == 0);
	else if (strcmp(op, "versions") == 0) {
		json_t *items = json_array();
		if ((rc = tether_store_list_versions(s, key, add_version, items))) {
			json_decref(items);
			return failure(rc);
		}
		return json_pack("{s:b, s:o}", "ok", 1, "items", items);
	} else if (strcmp(op, "root_exists") == 0) {
		int exists;
		if ((rc = tether_store_root_exists(s, &exists)))
			return failure(rc);
		return json_pack("{s:b, s:b}", "ok", 1, "exists", exists);
	} else if (strcmp(op, "parallel") == 0)
		return do_parallel(s, cmd);
	else if (strcmp(op, "make_root") == 0)
		rc = tether_store_make_root(s);
	else if (strcmp(op, "remove_root") == 0)
		rc = tether_store_remove_root(s);
	else if (strcmp(op, "sleep") == 0) {
		double secs = json_number_value(json_object_get(cmd, "seconds"));
		struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
		nanosleep(&ts, NULL);
	} else
		return json_pack("{s:b, s:s}", "ok", 0, "error", "unknown op");
	return rc ? failure(rc) : json_pack("{s:b}", "ok", 1);
}

int store_session(tether_store *s, FILE *in, FILE *out)
{
	char line[1 << 16];
	while (fgets(line, sizeof line, in)) {
		json_t *cmd = json_loads(line, 0, NULL);
		json_t *answer = cmd ? run(s, cmd) : json_pack("{s:b, s:s}", "ok", 0, "error", "not JSON");
		json_dumpf(answer, out, JSON_COMPACT);
		fputc('\n', out);
		fflush(out);
		json_decref(answer);
		json_decref(cmd);
	}
	return 0;
}

int store_session_refused(int rc, FILE *out)
{
	json_t *answer = failure(rc);
	json_dumpf(answer, out, JSON_COMPACT);
	fputc('\n', out);
	json_decref(answer);
	return tether_exit_code(rc);
}
