/* One Icechunk repository behind one interface, whichever spec it is: refs,
 * pins with their generations, working branches and ancestry, on the
 * `repo` file of spec 2 or the refs/ layout of spec 1.
 *
 * The spec is what Icechunk itself detects (repository.rs,
 * fetch_spec_version): a `repo` file means spec 2, even beside a refs/
 * directory a migration left; otherwise refs/branch.main/ref.json means
 * spec 1. */
#include "backends/icechunk/ic.h"

#include <stdlib.h>
#include <string.h>

int ic_store_options(const struct tether_bctx *ctx, const char *uri, json_t **out)
{
	return tether_bctx_store_options(ctx, uri, NULL, out);
}

int ic_repository_open_at(const struct tether_bctx *ctx, const char *uri, struct ic_repository *out)
{
	json_t *options = NULL;
	int rc = ic_store_options(ctx, uri, &options);
	if (rc) {
		memset(out, 0, sizeof *out);
		return rc;
	}
	rc = ic_repository_open(uri, options, out);
	json_decref(options); /* a store keeps what it needs of its options */
	return rc;
}

int ic_repository_open(const char *uri, const json_t *secrets, struct ic_repository *out)
{
	memset(out, 0, sizeof *out);
	int rc = tether_store_open(uri, secrets, &out->store);
	if (rc)
		return rc;
	out->uri = tether_store_uri(out->store);
	int v2 = 0, v1 = 0;
	rc = tether_store_head(out->store, "repo", &v2, NULL, NULL);
	if (rc == 0 && !v2)
		rc = tether_store_head(out->store, "refs/branch.main/ref.json", &v1, NULL, NULL);
	if (rc == 0 && !v1 && !v2)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s is not an Icechunk repository (no repo file, no "
		                                        "refs/branch.main)", uri);
	if (rc) {
		ic_repository_close(out);
		return rc;
	}
	out->spec = v2 ? 2 : 1;
	return 0;
}

void ic_repository_close(struct ic_repository *repo)
{
	ic_repo_view_release(repo);
	tether_store_close(repo->store);
	memset(repo, 0, sizeof *repo);
}

int ic_list_refs(struct ic_repository *repo, int tags, json_t **out)
{
	if (repo->spec == 1)
		return ic_v1_list_refs(repo, tags, out);
	const struct ic_repo *r;
	int rc = ic_repo_view(repo, &r);
	if (rc)
		return rc;
	*out = json_object();
	const struct ic_ref *refs = tags ? r->tags : r->branches;
	uint32_t n = tags ? r->ntags : r->nbranches;
	for (uint32_t i = 0; i < n && *out; i++) {
		char *name = strndup(refs[i].name.p, refs[i].name.n);
		char text[IC_ID_CHARS + 1];
		ic_id_text(&r->snaps[refs[i].snap].id, text);
		if (!name || json_object_set_new(*out, name, json_string(text)) != 0) {
			json_decref(*out);
			*out = NULL;
		}
		free(name);
	}
	return *out ? 0 : ic_fail_oom();
}

static int v2_ref(struct ic_repository *repo, int tag, const char *name, struct ic_id *out, int *found)
{
	const struct ic_repo *r;
	int rc = ic_repo_view(repo, &r);
	if (rc)
		return rc;
	long i = tag ? ic_repo_tag(r, name) : ic_repo_branch(r, name);
	*found = i >= 0;
	if (*found)
		*out = r->snaps[(tag ? r->tags : r->branches)[i].snap].id;
	return 0;
}

int ic_branch_head(struct ic_repository *repo, const char *branch, struct ic_id *out, int *found)
{
	return repo->spec == 1 ? ic_v1_ref(repo, 0, branch, out, found, NULL) : v2_ref(repo, 0, branch, out, found);
}

int ic_tag_target(struct ic_repository *repo, const char *tag, struct ic_id *out, int *found)
{
	return repo->spec == 1 ? ic_v1_ref(repo, 1, tag, out, found, NULL) : v2_ref(repo, 1, tag, out, found);
}

int ic_snapshot_exists(struct ic_repository *repo, const struct ic_id *id, int *exists)
{
	*exists = 0;
	if (repo->spec == 2) {
		const struct ic_repo *r;
		int rc = ic_repo_view(repo, &r);
		if (rc)
			return rc;
		if (!(*exists = ic_repo_snapshot(r, id) >= 0))
			return 0;
	}
	/* Listed, and its file still there (a garbage collection removes
	 * files; spec 1 has nothing but the file). */
	char text[IC_ID_CHARS + 1];
	ic_id_text(id, text);
	char *key = tt_strdupf("snapshots/%s", text);
	int rc = key ? tether_store_head(repo->store, key, exists, NULL, NULL) : ic_fail_oom();
	free(key);
	return rc;
}

int ic_resolve(struct ic_repository *repo, const char *ref, struct ic_id *out)
{
	int found = 0;
	/* A name that is no valid ref name in spec 1 cannot be a branch or
	 * tag there; it may still be a snapshot id. */
	int rc = strchr(ref, '/') ? 0 : ic_branch_head(repo, ref, out, &found);
	if (rc == 0 && !found && !strchr(ref, '/'))
		rc = ic_tag_target(repo, ref, out, &found);
	if (rc || found)
		return rc;
	int exists = 0;
	if (ic_id_parse(ref, out) == 0 && (rc = ic_snapshot_exists(repo, out, &exists)) == 0 && exists)
		return 0;
	if (rc)
		return rc;
	return tether_error_set(TETHER_ENOTFOUND, "%s: \"%s\" is not a branch, tag or snapshot id there",
	                        repo->uri, ref);
}

/* ------------------------------------------------------------------ */
/* Pins                                                                */
/* ------------------------------------------------------------------ */

char *ic_pin_of_tag(const char *tag)
{
	if (strncmp(tag, "tether.", 7) != 0 || !tag[7])
		return NULL;
	const char *rest = tag + 7, *last = strrchr(rest, '.');
	/* "<dataset8>.<hash16>.<N>": a later generation of "<dataset8>.<hash16>". */
	if (last && last != rest && strchr(rest, '.') != last && last[1]) {
		const char *p = last + 1;
		while (*p >= '0' && *p <= '9')
			p++;
		if (!*p)
			return strndup(rest, (size_t)(last - rest));
	}
	return strdup(rest);
}

static unsigned generation_of(const char *tag)
{
	const char *last = strrchr(tag + 7, '.');
	char *pin = ic_pin_of_tag(tag);
	unsigned gen = 1;
	if (pin && strlen(pin) < strlen(tag + 7) && last)
		gen = (unsigned)strtoul(last + 1, NULL, 10);
	free(pin);
	return gen;
}

static char *generation_name(const char *pin_id, unsigned gen)
{
	return gen == 1 ? tt_strdupf("tether.%s", pin_id) : tt_strdupf("tether.%s.%u", pin_id, gen);
}

struct pin_job {
	const char *pin_id;
	struct ic_id snap;
	char *tag;
	int created;
};

static int pin_mutation(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged)
{
	struct pin_job *job = ud;
	char want[IC_ID_CHARS + 1];
	ic_id_text(&job->snap, want);
	long snap = ic_repo_snapshot(r, &job->snap);
	if (snap < 0)
		return tether_error_set(TETHER_ENOTFOUND, "snapshot %s is not in the repository", want);
	free(job->tag);
	job->tag = NULL;
	for (unsigned gen = 1; gen <= IC_MAX_GENERATIONS; gen++) {
		char *name = generation_name(job->pin_id, gen);
		if (!name)
			return ic_fail_oom();
		long t = ic_repo_tag(r, name);
		if (t >= 0) {
			if (memcmp(r->snaps[r->tags[t].snap].id.b, job->snap.b, IC_ID_BYTES) != 0) {
				char have[IC_ID_CHARS + 1];
				ic_id_text(&r->snaps[r->tags[t].snap].id, have);
				int rc = tether_error_set(TETHER_EREFUSED, "tag %s already points at %s, not %s", name, have,
				                          want);
				free(name);
				return rc;
			}
			job->tag = name;
			job->created = 0;
			*unchanged = 1;
			return 0;
		}
		if (ic_repo_tag_deleted(r, name)) {
			free(name); /* a tombstone: the next generation */
			continue;
		}
		int rc = ic_repo_add_tag(r, name, (uint32_t)snap);
		if (rc) {
			free(name);
			return rc;
		}
		u->type = IC_UP_TAG_CREATED;
		u->name = ic_repo_strdup(r, name);
		job->tag = name;
		job->created = 1;
		return u->name.p ? 0 : ic_fail_oom();
	}
	return tether_error_set(TETHER_EREFUSED, "pin %s: every tag name up to generation %d was used and deleted",
	                        job->pin_id, IC_MAX_GENERATIONS);
}

static int v1_pin(struct ic_repository *repo, struct pin_job *job)
{
	int exists = 0, rc = ic_snapshot_exists(repo, &job->snap, &exists);
	char want[IC_ID_CHARS + 1];
	ic_id_text(&job->snap, want);
	if (rc == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "snapshot %s is not in the repository", want);
	for (unsigned gen = 1; rc == 0 && gen <= IC_MAX_GENERATIONS; gen++) {
		char *name = generation_name(job->pin_id, gen);
		int burnt = 0, live = 0, found = 0;
		struct ic_id at;
		if (!name)
			return ic_fail_oom();
		if ((rc = ic_v1_tag_burnt(repo, name, &burnt, &live)) == 0 && live)
			rc = ic_v1_ref(repo, 1, name, &at, &found, NULL);
		if (rc == 0 && live && found) {
			if (memcmp(at.b, job->snap.b, IC_ID_BYTES) != 0) {
				char have[IC_ID_CHARS + 1];
				ic_id_text(&at, have);
				rc = tether_error_set(TETHER_EREFUSED, "tag %s already points at %s, not %s", name, have, want);
				free(name);
				return rc;
			}
			job->tag = name;
			return 0;
		}
		if (rc == 0 && !burnt) {
			rc = ic_v1_create_tag(repo, name, &job->snap);
			if (rc == 0) {
				job->tag = name;
				job->created = 1;
				return 0;
			}
			if (rc == TETHER_EREFUSED) { /* someone made it meanwhile: look again */
				tether_error_clear();
				rc = 0;
				gen--;
			}
		}
		free(name);
	}
	return rc ? rc : tether_error_set(TETHER_EREFUSED, "pin %s: every tag name up to generation %d was "
	                                                  "used and deleted", job->pin_id, IC_MAX_GENERATIONS);
}

int ic_pin_tag(struct ic_repository *repo, const char *pin_id, const struct ic_id *snap, char **tag,
               int *created)
{
	struct pin_job job = {.pin_id = pin_id, .snap = *snap};
	int rc = repo->spec == 1 ? v1_pin(repo, &job) : ic_repo_update(repo->store, "pin", pin_mutation, &job);
	if (rc) {
		free(job.tag);
		return rc;
	}
	*tag = job.tag;
	*created = job.created;
	return 0;
}

int ic_live_tag(struct ic_repository *repo, const char *recorded_tag, const char *pin_id, char **tag,
                struct ic_id *snap)
{
	json_t *tags = NULL;
	*tag = NULL;
	int rc = ic_list_refs(repo, 1, &tags);
	if (rc)
		return rc;
	const char *best = NULL, *name;
	unsigned best_gen = 0;
	json_t *v;
	if (recorded_tag && json_object_get(tags, recorded_tag))
		best = recorded_tag;
	else {
		/* Someone deleted the recorded tag: a repair may have re-pinned the
		 * state under a later generation. */
		json_object_foreach(tags, name, v) {
			char *pin = ic_pin_of_tag(name);
			if (pin && strcmp(pin, pin_id) == 0 && generation_of(name) > best_gen) {
				best = name;
				best_gen = generation_of(name);
			}
			free(pin);
		}
	}
	if (best) {
		if (!(*tag = strdup(best)))
			rc = ic_fail_oom();
		else
			ic_id_parse(json_string_value(json_object_get(tags, best)), snap);
	}
	json_decref(tags);
	return rc;
}

static int delete_tag_mutation(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged)
{
	const char *name = ud;
	if (ic_repo_tag(r, name) < 0) {
		*unchanged = 1; /* gone already */
		return 0;
	}
	int rc = ic_repo_delete_tag(r, name, &u->prev);
	if (rc)
		return rc;
	u->type = IC_UP_TAG_DELETED;
	u->name = ic_repo_strdup(r, name);
	return u->name.p ? 0 : ic_fail_oom();
}

int ic_unpin_all(struct ic_repository *repo, const char *pin_id)
{
	json_t *tags = NULL;
	int rc = ic_list_refs(repo, 1, &tags);
	const char *name;
	json_t *v;
	json_object_foreach(tags, name, v) {
		char *pin = rc ? NULL : ic_pin_of_tag(name);
		if (pin && strcmp(pin, pin_id) == 0)
			rc = repo->spec == 1 ? ic_v1_delete_tag(repo, name)
			                     : ic_repo_update(repo->store, "unpin", delete_tag_mutation, (void *)name);
		free(pin);
	}
	json_decref(tags);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Branches                                                            */
/* ------------------------------------------------------------------ */

struct fork_job {
	const char *branch;
	struct ic_id to;
	int expect_absent;
	const struct ic_id *expect;
};

static int fork_mutation(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged)
{
	struct fork_job *job = ud;
	char to[IC_ID_CHARS + 1], have[IC_ID_CHARS + 1] = "absent", want[IC_ID_CHARS + 1] = "absent";
	ic_id_text(&job->to, to);
	long snap = ic_repo_snapshot(r, &job->to);
	if (snap < 0)
		return tether_error_set(TETHER_ENOTFOUND, "snapshot %s is not in the repository", to);
	long b = ic_repo_branch(r, job->branch);
	if (b >= 0)
		ic_id_text(&r->snaps[r->branches[b].snap].id, have);
	if (job->expect)
		ic_id_text(job->expect, want);
	if ((job->expect_absent && b >= 0) ||
	    (job->expect && (b < 0 || memcmp(r->snaps[r->branches[b].snap].id.b, job->expect->b, IC_ID_BYTES) != 0)))
		return tether_error_set(TETHER_EREFUSED, "branch %s is at %s, expected %s", job->branch, have, want);
	int rc;
	if (b < 0) {
		rc = ic_repo_add_branch(r, job->branch, (uint32_t)snap);
		u->type = IC_UP_BRANCH_CREATED;
	} else if (r->branches[b].snap == (uint32_t)snap) {
		*unchanged = 1;
		return 0;
	} else {
		rc = ic_repo_set_branch(r, job->branch, (uint32_t)snap, &u->prev);
		u->type = IC_UP_BRANCH_RESET;
	}
	if (rc)
		return rc;
	u->name = ic_repo_strdup(r, job->branch);
	return u->name.p ? 0 : ic_fail_oom();
}

int ic_fork_branch(struct ic_repository *repo, const char *branch, const struct ic_id *to,
                   int expect_absent, const struct ic_id *expect)
{
	if (repo->spec == 1) {
		int exists = 0, rc = ic_snapshot_exists(repo, to, &exists);
		char text[IC_ID_CHARS + 1];
		ic_id_text(to, text);
		if (rc == 0 && !exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "snapshot %s is not in the repository", text);
		return rc ? rc : ic_v1_set_branch(repo, branch, to, expect_absent, expect);
	}
	struct fork_job job = {branch, *to, expect_absent, expect};
	return ic_repo_update(repo->store, "fork", fork_mutation, &job);
}

struct delete_job {
	const char *branch;
	const struct ic_id *expect;
};

/* The condition is judged on the repository file this update read, and
 * the update writes the next one only if that file is still the current
 * one (ic_repo_update), so a writer that moved the branch in between
 * makes this run again, and refuse. */
static int delete_branch_mutation(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged)
{
	const struct delete_job *job = ud;
	const char *name = job->branch;
	long b = ic_repo_branch(r, name);
	if (b < 0) {
		*unchanged = 1;
		return 0;
	}
	if (job->expect && memcmp(r->snaps[r->branches[b].snap].id.b, job->expect->b, IC_ID_BYTES) != 0) {
		char have[IC_ID_CHARS + 1], want[IC_ID_CHARS + 1];
		ic_id_text(&r->snaps[r->branches[b].snap].id, have);
		ic_id_text(job->expect, want);
		return tether_error_set(TETHER_EREFUSED, "branch %s is at %s, expected %s; not deleted", name, have,
		                        want);
	}
	int rc = ic_repo_delete_branch(r, name, &u->prev);
	if (rc)
		return rc;
	u->type = IC_UP_BRANCH_DELETED;
	u->name = ic_repo_strdup(r, name);
	return u->name.p ? 0 : ic_fail_oom();
}

int ic_delete_branch(struct ic_repository *repo, const char *branch, const struct ic_id *expect)
{
	if (repo->spec == 1)
		return ic_v1_delete_branch(repo, branch, expect);
	struct delete_job job = {branch, expect};
	return ic_repo_update(repo->store, "delete branch", delete_branch_mutation, &job);
}

/* ------------------------------------------------------------------ */
/* Ancestry                                                            */
/* ------------------------------------------------------------------ */

static json_t *ancestry_entry(const struct ic_id *id, const struct ic_id *parent, uint64_t at,
                              struct ic_str message)
{
	char text[IC_ID_CHARS + 1], ptext[IC_ID_CHARS + 1];
	ic_id_text(id, text);
	if (parent)
		ic_id_text(parent, ptext);
	return json_pack("{s:s, s:s?, s:I, s:s%}", "id", text, "parent", parent ? ptext : NULL, "flushed_at",
	                 (json_int_t)at, "message", message.p ? message.p : "", (size_t)message.n);
}

static int v2_ancestry(struct ic_repository *repo, const struct ic_id *start, size_t max, json_t *out)
{
	const struct ic_repo *view;
	int rc = ic_repo_view(repo, &view);
	if (rc)
		return rc;
	const struct ic_repo r = *view;
	long i = ic_repo_snapshot(&r, start);
	if (i < 0) {
		char text[IC_ID_CHARS + 1];
		ic_id_text(start, text);
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: snapshot %s is not in the repository", repo->uri, text);
	}
	/* At most one step per snapshot: a parent loop in a hostile file ends. */
	for (uint32_t steps = 0; rc == 0 && i >= 0 && steps < r.nsnaps && (!max || json_array_size(out) < max);
	     steps++) {
		const struct ic_snap *s = &r.snaps[i];
		const struct ic_id *parent = s->parent >= 0 ? &r.snaps[s->parent].id : NULL;
		if (json_array_append_new(out, ancestry_entry(&s->id, parent, s->flushed_at, s->message)) != 0)
			rc = ic_fail_oom();
		i = s->parent;
	}
	return rc;
}

static int v1_ancestry(struct ic_repository *repo, const struct ic_id *start, size_t max, json_t *out)
{
	struct ic_id at = *start;
	json_t *seen = json_object();
	int rc = seen ? 0 : ic_fail_oom();
	/* One snapshot file per step. A hostile chain that loops back repeats
	 * an id: that ends the walk with an error, not after reading the loop
	 * forever. */
	while (rc == 0 && (!max || json_array_size(out) < max)) {
		struct ic_snapshot_file f;
		char text[IC_ID_CHARS + 1];
		ic_id_text(&at, text);
		if (json_object_get(seen, text)) {
			rc = tether_error_set(TETHER_EIO, "%s: the snapshot ancestry loops back to %s", repo->uri, text);
			break;
		}
		json_object_set_new(seen, text, json_true());
		if ((rc = ic_snapshot_read(repo->store, &at, &f)))
			break;
		if (json_array_append_new(out, ancestry_entry(&f.id, f.has_parent ? &f.parent : NULL, f.flushed_at,
		                                              f.message)) != 0)
			rc = ic_fail_oom();
		int more = f.has_parent;
		at = f.parent;
		ic_snapshot_free(&f);
		if (!more)
			break;
	}
	json_decref(seen);
	return rc;
}

int ic_ancestry(struct ic_repository *repo, const struct ic_id *start, size_t max, json_t **out)
{
	*out = json_array();
	if (!*out)
		return ic_fail_oom();
	int rc = repo->spec == 1 ? v1_ancestry(repo, start, max, *out) : v2_ancestry(repo, start, max, *out);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}
