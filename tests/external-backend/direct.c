/* The suite as a library: a test program of the backend's own that links
 * libtether-testing, builds dirsnap and its harness in, and runs the
 * checks without tether-conformance or the module path.
 *
 *   cc -std=c17 direct.c dirsnap.c harness.c $(pkg-config --cflags --libs tether-testing)
 */
#include <tether/testing.h>

extern tether_backend_module_t tether_backend_module; /* dirsnap.c */
const struct tether_harness *tether_harness_entry(void); /* harness.c */

int main(void)
{
	struct tether_harness h = *tether_harness_entry();
	h.backend = tether_backend_module[0];
	struct tether_conformance_counts counts;
	tether_conformance_run_counts(&h, stdout, &counts);
	printf("%d passed, %d failed\n", counts.passed, counts.failed);
	return counts.failed ? 1 : 0;
}
