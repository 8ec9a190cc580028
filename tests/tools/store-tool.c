/* store-tool: one call of the byte-store API (include/tether/store.h) from
 * the command line, for the e2e tests of the remote stores
 * (tests/e2e/test_s3_store.py, test_azure_store.py): what a server or a
 * fault does to one operation, seen as the exit code and the one-line
 * message the CLI would print.
 *
 *   store-tool [--options JSON] [--raw-code] URI OP ARG...
 *
 *   get KEY [OFFSET LENGTH|end]      bytes on stdout
 *   get-version KEY VERSION_ID       bytes of that version on stdout
 *   put KEY [absent | match TOKEN]   bytes from stdin; the new token on stdout
 *   head KEY                         "exists SIZE TOKEN" or "absent"
 *   stat KEY [VERSION_ID]            one JSON object (exists, size, version,
 *                                    version_id, is_latest)
 *   list PREFIX [PAGE [START_AFTER]] "KEY SIZE TOKEN" lines, every page
 *   versions KEY                     one JSON object a line, newest first
 *   copy FROM TO [TOKEN]             TOKEN: only while FROM is at it
 *   delete KEY
 *   root-exists                      "yes" or "no"
 *   make-root | remove-root
 *   session                          JSON commands on stdin, one answer a
 *                                    line (store_session.c)
 *
 * An error prints "store-tool: error: MESSAGE" on stderr and exits with
 * tether_exit_code, or with --raw-code with the TETHER_E* code negated
 * (ENOTFOUND 5, EAUTH 9, ETRANSIENT 10 ...), which tells apart what the
 * CLI's exit codes do not. Built in the build directory's tests/. */
#include <tether/backend.h>
#include <tether/store.h>

#include "store_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int raw_code;

static int fail(int rc)
{
	fprintf(stderr, "store-tool: error: %s\n", tether_error_last());
	return raw_code ? -rc : tether_exit_code(rc);
}

static int read_stdin(uint8_t **data, size_t *len)
{
	size_t cap = 65536;
	*len = 0;
	*data = malloc(cap);
	size_t n;
	while (*data && (n = fread(*data + *len, 1, cap - *len, stdin)) > 0) {
		*len += n;
		if (*len == cap) {
			uint8_t *more = realloc(*data, cap *= 2);
			if (!more)
				free(*data);
			*data = more;
		}
	}
	return *data ? 0 : -1;
}

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

static int write_bytes(uint8_t *data, size_t len, int rc)
{
	if (rc == 0)
		fwrite(data, 1, len, stdout);
	free(data);
	return rc;
}

static int op_get(tether_store *s, int argc, char **argv)
{
	uint8_t *data = NULL;
	size_t len = 0;
	if (argc == 1)
		return write_bytes(data, len, tether_store_get(s, argv[0], &data, &len, NULL));
	uint64_t length = strcmp(argv[2], "end") == 0 ? TETHER_STORE_TO_END : strtoull(argv[2], NULL, 10);
	return write_bytes(data, len,
	                   tether_store_get_range(s, argv[0], strtoull(argv[1], NULL, 10), length, &data, &len, NULL));
}

static int op_put(tether_store *s, int argc, char **argv)
{
	enum tether_put_mode mode = TETHER_PUT_OVERWRITE;
	struct tether_store_version expect = {{0}}, v = {{0}};
	if (argc == 2 && strcmp(argv[1], "absent") == 0) {
		mode = TETHER_PUT_IF_ABSENT;
	} else if (argc == 3 && strcmp(argv[1], "match") == 0) {
		mode = TETHER_PUT_IF_MATCH;
		snprintf(expect.token, sizeof expect.token, "%s", argv[2]);
	} else if (argc != 1) {
		return tether_error_set(TETHER_EUSAGE, "put KEY [absent | match TOKEN]");
	}
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = read_stdin(&data, &len) ? tether_error_set(TETHER_EIO, "out of memory")
	                                 : tether_store_put(s, argv[0], data, len, mode, &expect, &v);
	if (rc == 0)
		puts(v.token);
	free(data);
	return rc;
}

static int op_list(tether_store *s, int argc, char **argv)
{
	tether_store_iter *it = NULL;
	size_t page = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	int rc = tether_store_list(s, argv[0], argc > 2 ? argv[2] : NULL, page, &it);
	const char *k;
	const struct tether_store_stat *st;
	while (rc == 0 && (rc = tether_store_next_stat(it, &k, &st)) == 0 && k)
		printf("%s %llu %s\n", k, (unsigned long long)st->size, st->version.token);
	tether_store_iter_free(it);
	return rc;
}

static int op_copy(tether_store *s, int argc, char **argv)
{
	struct tether_store_version m = {{0}};
	if (argc == 3)
		snprintf(m.token, sizeof m.token, "%s", argv[2]);
	return tether_store_copy(s, argv[0], argv[1], argc == 3 ? &m : NULL);
}

static int op_head(tether_store *s, const char *key)
{
	int exists = 0;
	struct tether_store_version v;
	uint64_t size = 0;
	int rc = tether_store_head(s, key, &exists, &v, &size);
	if (rc == 0 && exists)
		printf("exists %llu %s\n", (unsigned long long)size, v.token);
	else if (rc == 0)
		printf("absent\n");
	return rc;
}

static int op_root(tether_store *s, const char *op)
{
	int exists = 0, rc;
	if (strcmp(op, "make-root") == 0)
		return tether_store_make_root(s);
	if (strcmp(op, "remove-root") == 0)
		return tether_store_remove_root(s);
	if ((rc = tether_store_root_exists(s, &exists)) == 0)
		puts(exists ? "yes" : "no");
	return rc;
}

/* The operation, its arguments checked against its count. */
static int run(tether_store *s, const char *op, int argc, char **argv)
{
	static const struct {
		const char *name;
		int min, max;
	} ops[] = {
		{"get", 1, 3},    {"get-version", 2, 2}, {"put", 1, 3},         {"head", 1, 1},
		{"stat", 1, 2},   {"list", 1, 3},        {"versions", 1, 1},    {"copy", 2, 3},
		{"delete", 1, 1}, {"root-exists", 0, 0}, {"make-root", 0, 0},   {"remove-root", 0, 0},
	};
	size_t i = 0;
	while (i < sizeof ops / sizeof ops[0] && strcmp(ops[i].name, op) != 0)
		i++;
	if (i == sizeof ops / sizeof ops[0])
		return tether_error_set(TETHER_EUSAGE, "unknown operation '%s'", op);
	if (argc < ops[i].min || argc > ops[i].max || (strcmp(op, "get") == 0 && argc == 2))
		return tether_error_set(TETHER_EUSAGE, "%s: wrong number of arguments", op);
	struct tether_store_stat st;
	uint8_t *data = NULL;
	size_t len = 0;
	int rc;
	switch (i) {
	case 0:
		return op_get(s, argc, argv);
	case 1:
		return write_bytes(data, len, tether_store_get_version(s, argv[0], argv[1], &data, &len, NULL));
	case 2:
		return op_put(s, argc, argv);
	case 3:
		return op_head(s, argv[0]);
	case 4:
		if ((rc = tether_store_stat(s, argv[0], argc == 2 ? argv[1] : NULL, &st)) == 0)
			print_stat(NULL, &st);
		return rc;
	case 5:
		return op_list(s, argc, argv);
	case 6:
		return tether_store_list_versions(s, argv[0], print_version, NULL);
	case 7:
		return op_copy(s, argc, argv);
	case 8:
		return tether_store_delete(s, argv[0]);
	default:
		return op_root(s, op);
	}
}

int main(int argc, char **argv)
{
	json_t *options = NULL;
	int i = 1;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--raw-code") == 0) {
			raw_code = 1;
		} else if (strcmp(argv[i], "--options") == 0 && i + 1 < argc) {
			json_error_t e;
			json_decref(options);
			if (!(options = json_loads(argv[++i], 0, &e))) {
				fprintf(stderr, "store-tool: error: --options: %s\n", e.text);
				return 2;
			}
		} else {
			break;
		}
	}
	int session = argc - i == 2 && strcmp(argv[i + 1], "session") == 0;
	if (argc - i < 2) {
		fputs("usage: store-tool [--options JSON] [--raw-code] URI OP ARG... | URI session (see tests/tools/store-tool.c)\n",
		      stderr);
		json_decref(options);
		return 2;
	}
	tether_store *s = NULL;
	int rc = tether_store_open(argv[i], options, &s);
	json_decref(options);
	if (rc != 0)
		return session ? store_session_refused(rc, stdout) : fail(rc);
	rc = session ? store_session(s, stdin, stdout) : run(s, argv[i + 1], argc - i - 2, argv + i + 2);
	tether_store_close(s);
	return rc ? fail(rc) : 0;
}
