/* Backends' add-option tables (core/add_options.h): read by the module's
 * own stride, so a table built against an older or a newer layout of
 * struct tether_add_option reads right; malformed tables are refused when
 * the backend registers. */
#include "core/add_options.h"

#include "check.h"

#include <string.h>

static int no_locator(const struct tether_bctx *c, const char *u, const json_t *o, const char *d, json_t **l)
{
	(void)c, (void)u, (void)o, (void)d, (void)l;
	return tether_error_set(TETHER_ERROR, "unused");
}
static int no_identity(const struct tether_bctx *c, const json_t *l, json_t **i)
{
	(void)c, (void)l, (void)i;
	return tether_error_set(TETHER_ERROR, "unused");
}
static int no_fingerprint(const struct tether_bctx *c, const json_t *l, const json_t *p, struct tether_fingerprint *f)
{
	(void)c, (void)l, (void)p, (void)f;
	return tether_error_set(TETHER_ERROR, "unused");
}

static struct tether_backend backend(const char *kind, const struct tether_add_option *options)
{
	return (struct tether_backend){TETHER_BACKEND_INIT, .kind = kind, .caps = TETHER_CAP_FINGERPRINT,
	                               .make_locator = no_locator, .identity = no_identity,
	                               .fingerprint = no_fingerprint, .add_options = options};
}

static const char *const modes[] = {"fast", "safe", NULL};

/* A shorter layout (as if field and flags had been appended later): the
 * members it lacks read as zero. */
struct old_option {
	unsigned version, size;
	const char *name, *value_name, *help;
	const char *const *choices;
	const char *default_value;
};
static const struct old_option old_table[] = {
	{1, sizeof(struct old_option), "mode", "M", "how", modes, "safe"},
	{1, sizeof(struct old_option), "where", "W", "there", NULL, NULL},
	{0},
};

/* A later layout with a member appended: its entries are further apart,
 * and TETHER_ADD_OPTION_INIT in that header would say so in size. */
struct new_option {
	struct tether_add_option base;
	const char *later;
};
static const struct new_option new_table[] = {
	{{.version = 2, .size = sizeof(struct new_option), .name = "mode", .choices = modes,
	  .field = TETHER_ADD_POLICY, .flags = TETHER_ADD_DEFAULTS}, "x"},
	{{.version = 2, .size = sizeof(struct new_option), .name = "where", .field = TETHER_ADD_LOCATOR}, "y"},
	{{0}, NULL},
};

static void test_strides(void)
{
	struct tether_add_option o;
	/* The casts are what the engine meets: a table of another layout
	 * behind the pointer type it knows; size tells them apart. */
	struct tether_backend old = backend("old", (const struct tether_add_option *)(const void *)old_table);
	old.add_options = (const void *)old_table;
	CHECK(sizeof(struct old_option) < sizeof(struct tether_add_option));
	CHECK(tt_add_option_at(&old, 1, &o) == 1);
	CHECK_STR(o.name, "where");
	CHECK_STR(o.help, "there");
	CHECK(o.field == 0 && o.flags == 0);
	CHECK(tt_add_option_at(&old, 2, &o) == 0);
	CHECK(tt_add_option_find(&old, "mode", &o) == 1 && o.flags == 0 && o.choices == modes);
	CHECK_STR(o.default_value, "safe");

	struct tether_backend newer = backend("newer", (const void *)new_table);
	CHECK(tt_add_option_at(&newer, 1, &o) == 1);
	CHECK_STR(o.name, "where");
	CHECK(tt_add_option_find(&newer, "mode", &o) == 1 && (o.flags & TETHER_ADD_DEFAULTS));
	CHECK(tt_add_option_at(&newer, 2, &o) == 0);

	struct tether_backend none = backend("none", NULL);
	CHECK(tt_add_option_at(&none, 0, &o) == 0);
	json_t *j = tt_add_options_json(&newer);
	CHECK(json_array_size(j) == 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(j, 0), "field")), "policy");
	CHECK(json_is_true(json_object_get(json_array_get(j, 0), "defaults")));
	CHECK(json_is_null(json_object_get(json_array_get(j, 1), "choices")));
	json_decref(j);
}

static void refused(const char *kind, const struct tether_add_option *options, const char *why)
{
	struct tether_backend *b = malloc(sizeof *b); /* registered ones must outlive the call */
	*b = backend(kind, options);
	int rc = tether_backend_register(b);
	CHECK(rc == TETHER_ERROR);
	if (rc == TETHER_ERROR) {
		CHECK(strstr(tether_error_last(), why) != NULL);
		free(b);
	} else {
		fprintf(stderr, "%s was registered\n", kind); /* and stays: not freed */
	}
}

static void test_register_checks(void)
{
	static const struct tether_add_option bad_name[] = {
		{TETHER_ADD_OPTION_INIT, .name = "Bad Name", .field = TETHER_ADD_LOCATOR}, {0}};
	static const struct tether_add_option no_field[] = {{TETHER_ADD_OPTION_INIT, .name = "x"}, {0}};
	static const struct tether_add_option policy_free[] = {
		{TETHER_ADD_OPTION_INIT, .name = "x", .field = TETHER_ADD_POLICY}, {0}};
	static const struct tether_add_option bad_default[] = {
		{TETHER_ADD_OPTION_INIT, .name = "x", .choices = modes, .default_value = "slow",
		 .field = TETHER_ADD_LOCATOR}, {0}};
	static const struct tether_add_option twice[] = {
		{TETHER_ADD_OPTION_INIT, .name = "x", .field = TETHER_ADD_LOCATOR},
		{TETHER_ADD_OPTION_INIT, .name = "x", .field = TETHER_ADD_LOCATOR}, {0}};
	static const struct tether_add_option no_size[] = {{.name = "x", .field = TETHER_ADD_LOCATOR}, {0}};
	refused("t-bad-name", bad_name, "'Bad Name' is not 1-64 of a-z 0-9 - _");
	refused("t-no-field", no_field, "'x' has no field");
	refused("t-policy-free", policy_free, "'x' lands in the policy without choices");
	refused("t-bad-default", bad_default, "'x' has a default outside its choices");
	refused("t-twice", twice, "'x' is declared twice");
	refused("t-no-size", no_size, "TETHER_ADD_OPTION_INIT");
	static const struct tether_backend good = {TETHER_BACKEND_INIT, .kind = "t-good",
	                                           .caps = TETHER_CAP_FINGERPRINT, .make_locator = no_locator,
	                                           .identity = no_identity, .fingerprint = no_fingerprint,
	                                           .add_options = (const void *)new_table};
	CHECK(tether_backend_register(&good) == 0);
	json_t *decl = tether_add_options("t-good");
	CHECK(json_array_size(decl) == 2);
	json_decref(decl);
	CHECK(tether_add_options("t-no-such-kind") == NULL);
}

int main(void)
{
	test_strides();
	test_register_checks();
	CHECK_DONE();
}
