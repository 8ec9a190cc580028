/* A minimal unit-test harness: CHECK records a failure and goes on; each
 * test program ends with CHECK_DONE(), which prints the closing line
 * "N passed, N failed" and exits non-zero on any failure. */
#ifndef TETHER_TEST_CHECK_H
#define TETHER_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                  \
	do {                                                                             \
		if (cond) {                                                                  \
			check_passed++;                                                          \
		} else {                                                                     \
			check_failed++;                                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                            \
	} while (0)

#define CHECK_STR(a, b)                                                                      \
	do {                                                                                     \
		const char *check_a_ = (a), *check_b_ = (b);                                         \
		if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) {                       \
			check_passed++;                                                                  \
		} else {                                                                             \
			check_failed++;                                                                  \
			fprintf(stderr, "%s:%d: CHECK_STR failed: %s == %s\n  got: %s\n  want: %s\n",    \
			        __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",              \
			        check_b_ ? check_b_ : "(null)");                                         \
		}                                                                                    \
	} while (0)

#define CHECK_DONE()                                                    \
	do {                                                                \
		printf("%d passed, %d failed\n", check_passed, check_failed);   \
		return check_failed ? 1 : 0;                                    \
	} while (0)

#endif
