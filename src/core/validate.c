#include "core/validate.h"

#include <tether/backend.h>

#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tt_key_check(const char *key)
{
	size_t n = strlen(key);
	const char *why = NULL;
	if (n == 0)
		why = "it is empty";
	else if (n > TT_KEY_MAX)
		why = "it is longer than 200 bytes";
	for (size_t i = 0; !why && i < n; i++) {
		char c = key[i];
		int seg_start = i == 0 || key[i - 1] == '/';
		if (c == '/' && (seg_start || i + 1 == n))
			why = "it has an empty path segment";
		else if (seg_start && c == '.')
			why = "a segment starts with '.'";
		else if (!(c == '/' || c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') ||
		           (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			why = "keys use only letters, digits, '.', '_', '-' and '/'";
	}
	if (why)
		return tether_error_set(TETHER_EUSAGE, "invalid object key '%s': %s", key, why);
	return 0;
}

int tt_key_check_in(const json_t *key, const char *where)
{
	const char *s = json_string_value(key);
	if (!s || strlen(s) != json_string_length(key))
		return tether_error_set(TETHER_ECONFIG, "%s: an object key must be a string without NUL bytes", where);
	if (tt_key_check(s) != 0)
		return tether_error_set(TETHER_ECONFIG, "%s: '%s' is not a valid object key", where, s);
	return 0;
}

static int is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int tt_pin_id_check(const char *pin, const char *where)
{
	if (!pin || strlen(pin) != 25 || pin[8] != '.' || !is_lower_hex(pin, 8) || !is_lower_hex(pin + 9, 16))
		return tether_error_set(TETHER_ECONFIG, "%s: '%s' is not a pin id (<dataset8>.<hash16>, lower-case hex)",
		                        where, pin ? pin : "");
	return 0;
}

static int nul_at(const char *where, const char *field)
{
	return tether_error_set(TETHER_ECONFIG, "%s: %s holds a NUL byte (\\u0000), which tether refuses in any string",
	                        where, *field ? field : "a value");
}

/* field: the dotted name so far, for the message (truncated when long). */
static int check_value(const json_t *v, const char *where, char *field, size_t len, size_t cap, int depth)
{
	if (depth > 64)
		return 0; /* the TOML and JSON readers bound nesting well below */
	if (json_is_string(v))
		return strlen(json_string_value(v)) != json_string_length(v) ? nul_at(where, field) : 0;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach((json_t *)v, i, e) {
			int n = snprintf(field + len, cap - len, "[%zu]", i);
			size_t nl = n > 0 && (size_t)n < cap - len ? len + (size_t)n : len;
			int rc = check_value(e, where, field, nl, cap, depth + 1);
			field[len] = '\0';
			if (rc)
				return rc;
		}
		return 0;
	}
	if (json_is_object(v)) {
		const char *k;
		size_t klen;
		json_t *e;
		json_object_keylen_foreach((json_t *)v, k, klen, e) {
			int n = snprintf(field + len, cap - len, "%s%s", len ? "." : "", k);
			size_t nl = n > 0 && (size_t)n < cap - len ? len + (size_t)n : len;
			int rc = strlen(k) != klen ? nul_at(where, field) : check_value(e, where, field, nl, cap, depth + 1);
			field[len] = '\0';
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Does any string or key under v hold a NUL? The common answer, no, needs
 * no field names: check_value spells them only for a value that fails. */
static int any_nul(const json_t *v, int depth)
{
	if (depth > 64)
		return 0;
	if (json_is_string(v))
		return strlen(json_string_value(v)) != json_string_length(v);
	size_t i, klen;
	const char *k;
	json_t *e;
	if (json_is_array(v))
		json_array_foreach((json_t *)v, i, e) {
			if (any_nul(e, depth + 1))
				return 1;
		}
	else if (json_is_object(v))
		json_object_keylen_foreach((json_t *)v, k, klen, e) {
			if (strlen(k) != klen || any_nul(e, depth + 1))
				return 1;
		}
	return 0;
}

int tt_strings_check(const json_t *v, const char *where)
{
	char field[256] = "";
	return any_nul(v, 0) ? check_value(v, where, field, 0, sizeof field, 0) : 0;
}
