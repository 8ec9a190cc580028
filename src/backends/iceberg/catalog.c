/* The catalog factory and the table a backend call works on.
 *
 * A catalog's properties come from two places, kept apart on purpose: the
 * committed ones (the locator's "catalog" table, else [backends.iceberg]
 * catalog in tether.toml) may say only type, warehouse and name, since a
 * clone someone else prepared is untrusted and must not choose where
 * credentials go; the URI, tokens and passwords come only from the
 * table `catalog` in .tether/secrets.toml (the object's
 * [objects."<key>"], else [backends.iceberg]). The
 * implementation is chosen by "type" ("sql" or "rest"), or, absent, by
 * the URI's scheme. */
#include "backends/iceberg/ib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* .tether/secrets.toml holds the catalog's secret properties as the
 * table `catalog` (uri, password, token, credential, ...), in the
 * object's [objects."<key>"] or, for every iceberg object, in
 * [backends.iceberg]. */
const char *const ib_secret_keys[] = {"catalog", NULL};

static const char *const committed_keys[] = {"type", "warehouse", "name", NULL};

static int check_committed(const json_t *cat, const char *where)
{
	if (!cat)
		return 0;
	if (!json_is_object(cat))
		return tether_error_set(TETHER_ECONFIG, "%s: catalog must be a table", where);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)cat, k, v) {
		size_t i = 0;
		while (committed_keys[i] && strcmp(committed_keys[i], k) != 0)
			i++;
		if (!committed_keys[i])
			return tether_error_set(TETHER_EREFUSED, "%s: catalog property \"%s\" may not be committed (only type, "
			                                         "warehouse and name): put it in .tether/secrets.toml, "
			                                         "[backends.iceberg] catalog = {%s = ...}", where, k, k);
		if (!json_is_string(v))
			return tether_error_set(TETHER_ECONFIG, "%s: catalog.%s must be a string", where, k);
	}
	return 0;
}

int ib_catalog_check_committed(const json_t *locator_catalog, const json_t *config)
{
	int rc = check_committed(locator_catalog, "iceberg locator");
	return rc ? rc : check_committed(json_object_get(config, "catalog"), "tether.toml [backends.iceberg]");
}

static int merge(json_t *into, const json_t *from)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)from, k, v)
		if (json_object_set(into, k, v))
			return ib_fail_oom();
	return 0;
}

static const char *infer_type(const char *uri)
{
	if (!uri)
		return NULL;
	if (strncmp(uri, "http://", 7) == 0 || strncmp(uri, "https://", 8) == 0)
		return "rest";
	if (strncmp(uri, "sqlite:", 7) == 0 || strncmp(uri, "postgres", 8) == 0)
		return "sql";
	return NULL;
}

int ib_catalog_open(const struct tether_bctx *ctx, const struct ib_loc *loc, struct ib_catalog **out)
{
	*out = NULL;
	const json_t *config = ctx ? ctx->config : NULL;
	int rc = ib_catalog_check_committed(loc->catalog, config);
	if (rc)
		return rc;
	json_t *props = json_object();
	if (!props)
		return ib_fail_oom();
	rc = merge(props, json_object_get(config, "catalog"));
	if (rc == 0)
		rc = merge(props, loc->catalog);
	json_t *secret = ctx && ctx->secrets ? json_object_get(ctx->secrets, "catalog") : NULL;
	if (rc == 0 && secret && !json_is_object(secret))
		rc = tether_error_set(TETHER_ECONFIG, ".tether/secrets.toml: catalog must be a table of catalog properties");
	if (rc == 0 && secret)
		rc = merge(props, secret);
	const char *uri = json_string_value(json_object_get(props, "uri"));
	const char *type = json_string_value(json_object_get(props, "type"));
	if (rc == 0 && !uri)
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s' has no uri: set it in .tether/secrets.toml "
		                                      "([backends.iceberg] catalog = {uri = ...})", loc->catalog_name);
	if (rc == 0 && !type && !(type = infer_type(uri)))
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': cannot tell its type from its uri; set "
		                                      "catalog.type (sql or rest) in tether.toml [backends.iceberg]",
		                      loc->catalog_name);
	if (rc == 0 && strcmp(type, "sql") == 0)
		rc = ib_catalog_sql_open(ctx, loc->catalog_name, props, out);
	else if (rc == 0 && strcmp(type, "rest") == 0)
		/* the committed keys are checked above, so props' uri and
		 * credentials came from secrets.toml */
		rc = ib_catalog_rest_open(NULL, props, loc->catalog_name, out);
	else if (rc == 0)
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': unknown type \"%s\" (sql or rest)",
		                      loc->catalog_name, type);
	json_decref(props);
	return rc;
}

void ib_catalog_close(struct ib_catalog *c)
{
	if (c)
		c->ops->close(c);
}

int ib_table_open(const struct tether_bctx *ctx, const json_t *locator, struct ib_table *t)
{
	memset(t, 0, sizeof *t);
	int rc = ib_read_locator(locator, &t->loc);
	if (rc)
		return rc;
	snprintf(t->what, sizeof t->what, "iceberg table %s (catalog '%s')", t->loc.identifier, t->loc.catalog_name);
	struct ib_session *s = ctx ? ctx->session : NULL;
	if (s && (t->cat = ib_session_take(s, ctx, &t->loc, &rc)))
		t->session = s;
	else if (rc == 0)
		rc = ib_catalog_open(ctx, &t->loc, &t->cat);
	if (rc == 0)
		rc = ib_table_reload(t);
	if (rc)
		ib_table_close(t);
	return rc;
}

int ib_table_reload(struct ib_table *t)
{
	json_decref(t->md);
	free(t->md_location);
	t->md = NULL;
	t->md_location = NULL;
	return t->cat->ops->load(t->cat, t->loc.ns, t->loc.table, &t->md, &t->md_location);
}

int ib_table_commit(struct ib_table *t, json_t *requirements, json_t *updates)
{
	json_t *after = NULL;
	int rc = t->cat->ops->commit(t->cat, t->loc.ns, t->loc.table, requirements, updates, &after);
	if (rc == 0 && after) {
		json_decref(t->md);
		t->md = after;
	}
	return rc;
}

void ib_table_close(struct ib_table *t)
{
	if (t->session)
		ib_session_give(t->session);
	else
		ib_catalog_close(t->cat);
	t->session = NULL;
	json_decref(t->md);
	free(t->md_location);
	t->cat = NULL;
	t->md = NULL;
	t->md_location = NULL;
}
