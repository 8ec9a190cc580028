/* Dolt pins: a tag tether.<pin id> at the state's commit (CALL DOLT_TAG),
 * read back from dolt_tags. A server without them (Dolt before DOLT_TAG
 * and dolt_tags existed, as v0.40.4) cannot hold a pin: pin says so, and
 * list_pins has nothing to list. */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static int no_tags(struct dt_conn *c, const char *what)
{
	return tether_error_set(TETHER_EREFUSED,
	                        "dolt %s: cannot %s: this server has no DOLT_TAG procedure and dolt_tags table, so it "
	                        "cannot hold tether's pins (add the object with --pin record to record states "
	                        "without pins, or use a Dolt server that has DOLT_TAG)",
	                        c->where, what);
}

/* The commit tag `name` points at: *found 0 when there is no such tag. */
static int tag_target(struct dt_conn *c, const char *name, char hash[DT_HASH_MAX], int *found)
{
	*found = 0;
	json_t *rows;
	int rc = dt_rows(c, dt_sql(c, "SELECT tag_hash FROM dolt_tags WHERE tag_name = ?", name), "cannot read dolt_tags",
	                 &rows);
	if (rc)
		return rc;
	const char *h = dt_cell(rows, 0, 0);
	if (h && strlen(h) < DT_HASH_MAX) {
		*found = 1;
		memcpy(hash, h, strlen(h) + 1);
	}
	json_decref(rows);
	return 0;
}

static int open_tags(const struct tether_bctx *ctx, const json_t *locator, struct dt_conn *c, int *has_tags);

/* The state's commit, and a connection that knows whether tags are there. */
static int open_for_state(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                          const char **commit, struct dt_conn *c, int *has_tags)
{
	int rc = dt_state_commit(state, commit);
	return rc ? rc : open_tags(ctx, locator, c, has_tags);
}

static int open_tags(const struct tether_bctx *ctx, const json_t *locator, struct dt_conn *c, int *has_tags)
{
	struct dt_loc loc;
	int rc = dt_connect_locator(ctx, locator, &loc, c);
	if (rc)
		return rc;
	if ((rc = dt_has_table(c, "dolt_tags", has_tags)))
		dt_release(c, 0);
	return rc;
}

int dt_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created)
{
	*created = 0;
	*pin_ref = NULL;
	const char *commit;
	struct dt_conn c;
	int has_tags = 0, rc = open_for_state(ctx, locator, state, &commit, &c, &has_tags);
	if (rc)
		return rc;
	char *tag = tt_strdupf(DT_TAG_PREFIX "%s", pin_id);
	char at[DT_HASH_MAX];
	int found = 0;
	if (!tag)
		rc = tt_fail_oom();
	else if (json_is_true(json_object_get(state, "dirty")))
		rc = tether_error_set(TETHER_EREFUSED,
		                      "dolt %s: the branch has uncommitted changes (its working set): a pin holds "
		                      "commits only; commit them in Dolt (CALL DOLT_COMMIT('-Am', ...)) and retry",
		                      c.where);
	else if (!has_tags)
		rc = no_tags(&c, "pin");
	else if ((rc = tag_target(&c, tag, at, &found)) == 0 && found && strcmp(at, commit) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: tag %s exists at commit %s, not at %s: refused", c.where,
		                      tag, at, commit);
	if (rc == 0 && !found) {
		char *sql = dt_sql(&c, "CALL DOLT_TAG(?, ?)", tag, commit);
		if ((rc = dt_exec(&c, sql)) == -1) {
			const char *msg = mysql_error(c.my);
			rc = (dt_errno(&c) == 1305 || strstr(msg, "does not exist")) ? no_tags(&c, "pin")
			                                                             : dt_fail(&c, "CALL DOLT_TAG");
		} else if (rc == 0) {
			*created = 1;
		}
		free(sql);
	}
	if (rc == 0 && !(*pin_ref = json_pack("{s:s, s:s, s:s}", "tag", tag, "pin", pin_id, "commit", commit)))
		rc = tt_fail_oom();
	free(tag);
	dt_release(&c, rc == 0);
	return rc;
}

static const char *ref_tag(const json_t *pin_ref)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	return tag && strncmp(tag, DT_TAG_PREFIX, strlen(DT_TAG_PREFIX)) == 0 ? tag : NULL;
}

int dt_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	const char *tag = ref_tag(pin_ref);
	if (!tag)
		return tether_error_set(TETHER_ECONFIG, "dolt pin: \"tag\" must name a tether.* tag");
	struct dt_conn c;
	int has_tags = 0, found = 0, rc = open_tags(ctx, locator, &c, &has_tags);
	if (rc)
		return rc;
	char at[DT_HASH_MAX];
	if (has_tags && (rc = tag_target(&c, tag, at, &found)) == 0 && found) {
		char *sql = dt_sql(&c, "CALL DOLT_TAG('-d', ?)", tag);
		if (dt_exec(&c, sql) == -1)
			rc = dt_fail(&c, "CALL DOLT_TAG('-d')");
		free(sql);
	}
	dt_release(&c, rc == 0);
	return rc;
}

int dt_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	struct dt_conn c;
	int has_tags = 0, rc = open_tags(ctx, locator, &c, &has_tags);
	*pin_refs = NULL;
	if (rc)
		return rc;
	json_t *rows = NULL, *out = json_array();
	if (has_tags)
		rc = dt_rows(&c, strdup("SELECT tag_name, tag_hash FROM dolt_tags WHERE tag_name LIKE 'tether.%'"),
		             "cannot read dolt_tags", &rows);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		const char *name = dt_cell(rows, i, 0), *hash = dt_cell(rows, i, 1);
		if (name && hash && strncmp(name, DT_WS_PREFIX, strlen(DT_WS_PREFIX)) != 0)
			json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "tag", name, "pin",
			                                     name + strlen(DT_TAG_PREFIX), "commit", hash));
	}
	json_decref(rows);
	return dt_finish(&c, rc, out, pin_refs);
}

int dt_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	const char *commit;
	struct dt_conn c;
	int has_tags = 0, rc = open_for_state(ctx, locator, state, &commit, &c, &has_tags);
	if (rc)
		return rc;
	const char *tag = pin_ref ? ref_tag(pin_ref) : NULL;
	char at[DT_HASH_MAX];
	int found = 0;
	if (pin_ref && !tag)
		rc = tether_error_set(TETHER_ECONFIG, "dolt pin: \"tag\" must name a tether.* tag");
	else if (tag && !has_tags)
		*detail = tt_strdupf("dolt %s has no dolt_tags table: pin %s cannot be checked there", c.where, tag);
	else if (tag && (rc = tag_target(&c, tag, at, &found)) == 0) {
		if (!found)
			*detail = tt_strdupf("tag %s is missing from dolt %s", tag, c.where);
		else if (strcmp(at, commit) != 0)
			*detail = tt_strdupf("tag %s in dolt %s is at commit %s, not %s", tag, c.where, at, commit);
		else
			*ok = 1;
	} else if (!tag) {
		int exists = 0;
		if ((rc = dt_commit_exists(&c, commit, &exists)) == 0 && !(*ok = exists))
			*detail = tt_strdupf("commit %s is missing from dolt %s", commit, c.where);
	}
	dt_release(&c, rc == 0);
	return rc;
}
