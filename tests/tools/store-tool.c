/* store-tool: one call of the byte-store API (include/tether/store.h) from
 * the command line, for the e2e tests of the remote stores
 * (tests/e2e/test_s3_store.py): what a fault does to one operation, seen
 * as the exit code and the one-line message the CLI would print.
 *
 *   store-tool [--options JSON] URI get KEY          bytes on stdout
 *   store-tool [--options JSON] URI put KEY          bytes from stdin
 *   store-tool [--options JSON] URI head KEY         "exists SIZE TOKEN" or "absent"
 *   store-tool [--options JSON] URI list PREFIX [PAGE]  "KEY SIZE TOKEN" lines
 *   store-tool [--options JSON] URI delete KEY
 *
 * An error prints "store-tool: error: MESSAGE" on stderr and exits with
 * tether_exit_code. Built in the build directory's tests/. */
#include <tether/backend.h>
#include <tether/store.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(int rc)
{
	fprintf(stderr, "store-tool: error: %s\n", tether_error_last());
	return tether_exit_code(rc);
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

int main(int argc, char **argv)
{
	json_t *options = NULL;
	int i = 1;
	if (argc > 2 && strcmp(argv[1], "--options") == 0) {
		json_error_t e;
		if (!(options = json_loads(argv[2], 0, &e))) {
			fprintf(stderr, "store-tool: error: --options: %s\n", e.text);
			return 2;
		}
		i = 3;
	}
	if (argc - i < 3) {
		fputs("usage: store-tool [--options JSON] URI get|put|head|list|delete KEY [PAGE]\n", stderr);
		return 2;
	}
	const char *uri = argv[i], *op = argv[i + 1], *key = argv[i + 2];
	tether_store *s = NULL;
	int rc = tether_store_open(uri, options, &s);
	json_decref(options);
	if (rc != 0)
		return fail(rc);
	if (strcmp(op, "get") == 0) {
		uint8_t *data = NULL;
		size_t len = 0;
		if ((rc = tether_store_get(s, key, &data, &len, NULL)) == 0)
			fwrite(data, 1, len, stdout);
		free(data);
	} else if (strcmp(op, "put") == 0) {
		uint8_t *data = NULL;
		size_t len = 0;
		if (read_stdin(&data, &len) != 0)
			rc = tether_error_set(TETHER_EIO, "out of memory");
		else
			rc = tether_store_put(s, key, data, len, TETHER_PUT_OVERWRITE, NULL, NULL);
		free(data);
	} else if (strcmp(op, "head") == 0) {
		int exists = 0;
		struct tether_store_version v;
		uint64_t size = 0;
		if ((rc = tether_store_head(s, key, &exists, &v, &size)) == 0) {
			if (exists)
				printf("exists %llu %s\n", (unsigned long long)size, v.token);
			else
				printf("absent\n");
		}
	} else if (strcmp(op, "list") == 0) {
		tether_store_iter *it = NULL;
		size_t page = argc - i > 3 ? strtoul(argv[i + 3], NULL, 10) : 0;
		rc = tether_store_list(s, key, NULL, page, &it);
		const char *k;
		const struct tether_store_stat *st;
		while (rc == 0 && (rc = tether_store_next_stat(it, &k, &st)) == 0 && k)
			printf("%s %llu %s\n", k, (unsigned long long)st->size, st->version.token);
		tether_store_iter_free(it);
	} else if (strcmp(op, "delete") == 0) {
		rc = tether_store_delete(s, key);
	} else {
		fprintf(stderr, "store-tool: error: unknown operation '%s'\n", op);
		tether_store_close(s);
		return 2;
	}
	tether_store_close(s);
	return rc ? fail(rc) : 0;
}
