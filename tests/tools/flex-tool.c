/* flex-tool encode|decode: one item per line on stdin, one per line on
 * stdout. encode turns JSON into FlexBuffer hex; decode turns FlexBuffer
 * hex into compact JSON with sorted keys. A line that fails gives
 * "error: <message>". Test-only: the e2e suite checks both directions
 * against an independent FlexBuffers implementation. */
#include "format/flexbuf.h"
#include "util/hex.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void encode_line(const char *line, size_t n)
{
	json_error_t err;
	json_t *v = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!v) {
		printf("error: bad JSON: %s\n", err.text);
		return;
	}
	uint8_t *buf;
	size_t len;
	if (flex_encode(v, &buf, &len) != 0) {
		printf("error: %s\n", tether_error_last());
	} else {
		for (size_t i = 0; i < len; i++)
			printf("%02x", buf[i]);
		printf("\n");
		free(buf);
	}
	json_decref(v);
}

static void decode_line(const char *line, size_t n)
{
	uint8_t *buf = malloc(n / 2 + 1);
	if (!buf || n % 2) {
		printf("error: odd hex length\n");
		free(buf);
		return;
	}
	for (size_t i = 0; i < n / 2; i++) {
		int hi = tt_hex_digit(line[2 * i]), lo = tt_hex_digit(line[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			printf("error: bad hex\n");
			free(buf);
			return;
		}
		buf[i] = (uint8_t)(hi << 4 | lo);
	}
	json_t *v;
	if (flex_decode(buf, n / 2, &v) != 0) {
		printf("error: %s\n", tether_error_last());
	} else {
		char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
		printf("%s\n", text ? text : "error: unprintable");
		free(text);
		json_decref(v);
	}
	free(buf);
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "encode") != 0 && strcmp(argv[1], "decode") != 0)) {
		fprintf(stderr, "usage: flex-tool encode|decode < lines\n");
		return 2;
	}
	int encode = strcmp(argv[1], "encode") == 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (encode)
			encode_line(line, (size_t)n);
		else
			decode_line(line, (size_t)n);
		fflush(stdout);
	}
	free(line);
	return 0;
}
