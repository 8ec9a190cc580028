/* store-tool: one byte-store operation from the command line, through
 * tether's public store API (include/tether/store.h), for the e2e tests
 * of remote stores: they set a server up, run one operation, and check
 * its answer and its error. Like the tether binary, it carries libtether
 * and exports its API, so a store module it loads binds to that copy.
 *
 *   store-tool URI OP [ARG...]        options: $TETHER_STORE_OPTIONS (JSON)
 *
 *   get KEY [OFFSET LENGTH]     the bytes to stdout; the version on stderr
 *   get-version KEY VERSION_ID  the bytes of that version
 *   stat KEY [VERSION_ID]       {"exists":..,"size":..,"version":..,"version_id":..}
 *   put KEY [absent|match TOKEN]   stdin as the object; prints the new version
 *   copy FROM TO [TOKEN]
 *   delete KEY
 *   list PREFIX START_AFTER PAGE_SIZE        one key a line (every page)
 *   list-stat PREFIX START_AFTER PAGE_SIZE   one stat object a line
 *   versions KEY                one stat object a line, newest first
 *   root-exists | make-root | remove-root
 *
 * Exit status: 0, or the TETHER_E* code negated (ENOTFOUND 5, EREFUSED 3,
 * EAUTH 9, EUSAGE 2, EIO 7, ETRANSIENT 10), with tether's message on
 * stderr, one line. */
#include <tether/backend.h>
#include <tether/store.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_stat(const char *key, const struct tether_store_stat *st)
{
	json_t *o = json_pack("{s:s?, s:b, s:I, s:s, s:s, s:b}", "key", key, "exists", st->exists, "size",
	                      (json_int_t)st->size, "version", st->version.token, "version_id", st->version_id,
	                      "is_latest", st->is_latest);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (s)
		puts(s);
	free(s);
	json_decref(o);
}

static int print_version(void *ud, const char *key, const struct tether_store_stat *st)
{
	(void)ud;
	print_stat(key, st);
	return 0;
}

static int read_stdin(char **data, size_t *len)
{
	size_t cap = 1 << 16;
	*len = 0;
	*data = malloc(cap);
	for (size_t n; *data && (n = fread(*data + *len, 1, cap - *len, stdin)) > 0;) {
		*len += n;
		if (*len == cap) {
			char *grown = realloc(*data, cap *= 2);
			if (!grown)
				free(*data);
			*data = grown;
		}
	}
	return *data ? 0 : tether_error_set(TETHER_EIO, "out of memory");
}

static int listing(tether_store *s, char **argv, int with_stat)
{
	tether_store_iter *it = NULL;
	int rc = tether_store_list(s, argv[0], argv[1], strtoul(argv[2], NULL, 10), &it);
	const char *key;
	const struct tether_store_stat *st;
	while (!rc && !(rc = with_stat ? tether_store_next_stat(it, &key, &st) : tether_store_next(it, &key)) && key) {
		if (with_stat)
			print_stat(key, st);
		else
			puts(key);
	}
	tether_store_iter_free(it);
	return rc;
}

static int run(tether_store *s, const char *op, int argc, char **argv)
{
	struct tether_store_version v = {{0}};
	struct tether_store_stat st;
	if (strcmp(op, "get") == 0 && (argc == 1 || argc == 3)) {
		uint8_t *data = NULL;
		size_t len = 0;
		int rc = argc == 3 ? tether_store_get_range(s, argv[0], strtoull(argv[1], NULL, 10),
		                                            strcmp(argv[2], "end") == 0 ? TETHER_STORE_TO_END
		                                                                        : strtoull(argv[2], NULL, 10),
		                                            &data, &len, &v)
		                   : tether_store_get(s, argv[0], &data, &len, &v);
		if (!rc) {
			fwrite(data, 1, len, stdout);
			fprintf(stderr, "version %s\n", v.token);
		}
		free(data);
		return rc;
	}
	if (strcmp(op, "get-version") == 0 && argc == 2) {
		uint8_t *data = NULL;
		size_t len = 0;
		int rc = tether_store_get_version(s, argv[0], argv[1], &data, &len, &st);
		if (!rc) {
			fwrite(data, 1, len, stdout);
			fprintf(stderr, "version %s id %s\n", st.version.token, st.version_id);
		}
		free(data);
		return rc;
	}
	if (strcmp(op, "stat") == 0 && (argc == 1 || argc == 2)) {
		int rc = tether_store_stat(s, argv[0], argc == 2 ? argv[1] : NULL, &st);
		if (!rc)
			print_stat(NULL, &st);
		return rc;
	}
	if (strcmp(op, "put") == 0 && argc >= 1 && argc <= 3) {
		enum tether_put_mode mode = TETHER_PUT_OVERWRITE;
		struct tether_store_version expect = {{0}};
		if (argc >= 2 && strcmp(argv[1], "absent") == 0)
			mode = TETHER_PUT_IF_ABSENT;
		else if (argc == 3 && strcmp(argv[1], "match") == 0) {
			mode = TETHER_PUT_IF_MATCH;
			snprintf(expect.token, sizeof expect.token, "%s", argv[2]);
		} else if (argc != 1)
			return tether_error_set(TETHER_EUSAGE, "put KEY [absent|match TOKEN]");
		char *data = NULL;
		size_t len = 0;
		int rc = read_stdin(&data, &len);
		if (!rc)
			rc = tether_store_put(s, argv[0], data, len, mode, &expect, &v);
		if (!rc)
			puts(v.token);
		free(data);
		return rc;
	}
	if (strcmp(op, "copy") == 0 && (argc == 2 || argc == 3)) {
		struct tether_store_version m = {{0}};
		if (argc == 3)
			snprintf(m.token, sizeof m.token, "%s", argv[2]);
		return tether_store_copy(s, argv[0], argv[1], argc == 3 ? &m : NULL);
	}
	if (strcmp(op, "delete") == 0 && argc == 1)
		return tether_store_delete(s, argv[0]);
	if ((strcmp(op, "list") == 0 || strcmp(op, "list-stat") == 0) && argc == 3)
		return listing(s, argv, strcmp(op, "list-stat") == 0);
	if (strcmp(op, "versions") == 0 && argc == 1)
		return tether_store_list_versions(s, argv[0], print_version, NULL);
	if (strcmp(op, "root-exists") == 0 && argc == 0) {
		int exists = 0;
		int rc = tether_store_root_exists(s, &exists);
		if (!rc)
			puts(exists ? "yes" : "no");
		return rc;
	}
	if (strcmp(op, "make-root") == 0 && argc == 0)
		return tether_store_make_root(s);
	if (strcmp(op, "remove-root") == 0 && argc == 0)
		return tether_store_remove_root(s);
	return tether_error_set(TETHER_EUSAGE, "unknown operation or wrong arguments: %s", op);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fputs("usage: store-tool URI OP [ARG...]   (options: $TETHER_STORE_OPTIONS, a JSON object)\n", stderr);
		return 2;
	}
	json_t *options = NULL;
	const char *opts = getenv("TETHER_STORE_OPTIONS");
	if (opts && *opts && !(options = json_loads(opts, 0, NULL))) {
		fputs("store-tool: $TETHER_STORE_OPTIONS is not JSON\n", stderr);
		return 2;
	}
	tether_store *s = NULL;
	int rc = tether_store_open(argv[1], options, &s);
	if (!rc)
		rc = run(s, argv[2], argc - 3, argv + 3);
	if (rc)
		fprintf(stderr, "store-tool: %s\n", tether_error_last());
	tether_store_close(s);
	json_decref(options);
	return rc ? -rc : 0;
}
