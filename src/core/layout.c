/* Reading a file's layout version (core/layout.h). */
#include "core/layout.h"

#include <tether/backend.h>

static int layout_of(const json_t *v, const char *path, const char *field, int *layout)
{
	*layout = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
		return tether_error_set(TETHER_ECONFIG, "%s: %s must be a whole number (this tether writes %d)", path,
		                        field, TT_LAYOUT_CURRENT);
	json_int_t n = json_integer_value(v);
	if (n > TT_LAYOUT_CURRENT) {
		tether_error_set(TETHER_EREFUSED,
		                 "%s: layout %lld is newer than this tether understands (layout %d at most)", path,
		                 (long long)n, TT_LAYOUT_CURRENT);
		tether_error_set_hint("a newer tether wrote this dataset: install that version (or newer) to use it");
		return TETHER_EREFUSED;
	}
	*layout = (int)n;
	return 0;
}

int tt_layout_of_config(const json_t *config, const char *path, int *layout)
{
	return layout_of(json_object_get(json_object_get(config, "dataset"), "layout"), path, "dataset.layout",
	                 layout);
}

int tt_layout_of_manifest(const json_t *doc, const char *name, int *layout)
{
	return layout_of(json_object_get(doc, "layout"), name, "layout", layout);
}
