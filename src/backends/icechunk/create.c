/* Repositories tether creates (`tether add --create`), and removes again
 * while they are still empty (a failed add).
 *
 * create_store does what Repository.create does (repository.rs): the
 * initial snapshot file, its empty transaction log, then the `repo` file,
 * created only if absent; and then what Python tether did after it, an
 * update of the repository metadata that names the owning dataset under
 * "tether.owner". Only a tether that made the store writes that key, and a
 * clone's manifest cannot forge it.
 *
 * delete_store removes a repository only while it is still exactly that:
 * owned by this dataset, no tag, no branch but the base, the base at the
 * first snapshot, and nothing under the root but Icechunk's own names. */
#include "backends/icechunk/ic.h"

#include "format/flexbuf.h"

#include <stdlib.h>
#include <string.h>

static const char *const layout[] = {"repo", "overwritten", "snapshots", "transactions", "manifests", "chunks",
                                     "config.yaml", "refs", NULL};

static int icechunk_name(const char *key)
{
	size_t n = strcspn(key, "/");
	for (int i = 0; layout[i]; i++)
		if (strlen(layout[i]) == n && strncmp(layout[i], key, n) == 0)
			return 1;
	return 0;
}

/* The first `repo` file: main at the initial snapshot, one ops-log entry. */
static int initial_repo(struct ic_repo *r, uint64_t now)
{
	memset(r, 0, sizeof *r);
	struct ic_snap *snap = ic_repo_alloc(r, sizeof *snap);
	struct ic_ref *main_ref = ic_repo_alloc(r, sizeof *main_ref);
	struct ic_meta *marker = ic_repo_alloc(r, sizeof *marker);
	struct ic_update *u = ic_repo_alloc(r, sizeof *u);
	uint8_t *value = NULL;
	size_t len = 0;
	json_t *v = json_pack("{s:b}", "is_root", 1);
	int rc = snap && main_ref && marker && u && v ? flex_encode(v, &value, &len) : ic_fail_oom();
	json_decref(v);
	uint8_t *kept = rc ? NULL : ic_repo_alloc(r, len);
	if (rc == 0 && !kept)
		rc = ic_fail_oom();
	if (rc == 0) {
		memcpy(kept, value, len);
		memset(snap, 0, sizeof *snap);
		ic_id_parse(IC_INITIAL_SNAPSHOT, &snap->id);
		snap->parent = -1;
		snap->flushed_at = now;
		snap->message = ic_repo_strdup(r, "Repository initialized");
		*marker = (struct ic_meta){ic_repo_strdup(r, "__icechunk"), {kept, (uint32_t)len}};
		snap->meta = (struct ic_metas){marker, 1, 1};
		*main_ref = (struct ic_ref){ic_repo_strdup(r, "main"), 0};
		memset(u, 0, sizeof *u);
		u->type = IC_UP_REPO_INITIALIZED;
		u->at = now;
		r->spec_version = 2;
		r->branches = main_ref;
		r->nbranches = 1;
		r->snaps = snap;
		r->nsnaps = 1;
		r->status = (struct ic_status){IC_ONLINE, now, {NULL, 0}, 0};
		r->meta.present = 1;
		r->updates = u;
		r->nupdates = 1;
		if (!snap->message.p || !marker->name.p || !main_ref->name.p)
			rc = ic_fail_oom();
	}
	free(value);
	return rc;
}

static int owner_mutation(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged)
{
	const char *owner = ud;
	(void)unchanged;
	json_t *v = json_string(owner);
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc = v ? flex_encode(v, &bytes, &len) : ic_fail_oom();
	json_decref(v);
	struct ic_meta *items = rc ? NULL : ic_repo_alloc(r, ((size_t)r->meta.n + 1) * sizeof *items);
	uint8_t *kept = rc ? NULL : ic_repo_alloc(r, len);
	if (rc == 0 && (!items || !kept))
		rc = ic_fail_oom();
	if (rc == 0) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < r->meta.n; i++)
			if (!ic_str_eq(r->meta.v[i].name, IC_OWNER_KEY))
				items[n++] = r->meta.v[i];
		memcpy(kept, bytes, len);
		items[n++] = (struct ic_meta){ic_repo_strdup(r, IC_OWNER_KEY), {kept, (uint32_t)len}};
		rc = items[n - 1].name.p ? ic_repo_set_metadata(r, items, n) : ic_fail_oom();
		u->type = IC_UP_METADATA_CHANGED;
	}
	free(bytes);
	return rc;
}

int ic_create_store(const struct tether_bctx *ctx, const json_t *locator)
{
	struct ic_loc loc;
	tether_store *s = NULL;
	int rc = ic_read_locator(locator, &loc);
	if (rc)
		return rc;
	if (!ctx || !ctx->dataset_id)
		return tether_error_set(TETHER_ERROR, "create_store needs the dataset's id");
	if (strcmp(loc.branch, "main") != 0)
		return tether_error_set(TETHER_EUSAGE, "a new Icechunk repository has only the branch main, not \"%s\"",
		                        loc.branch);
	json_t *store_options = NULL;
	if ((rc = ic_store_options(ctx, loc.uri, &store_options)) == 0)
		rc = tether_store_open(loc.uri, store_options, &s);
	json_decref(store_options);
	if (rc)
		return rc;
	/* Anything at the path is someone's: create never adopts it. */
	int exists = 0;
	if ((rc = tether_store_root_exists(s, &exists)) == 0 && exists)
		rc = tether_error_set(TETHER_EREFUSED, "%s already exists; `add --create` makes a new repository and "
		                                       "never adopts what is there", loc.uri);
	if (rc) {
		tether_store_close(s);
		return rc;
	}
	uint64_t now = ic_now_us();
	struct ic_repo r;
	if ((rc = tether_store_make_root(s)) == 0 && (rc = ic_write_initial_files(s, now)) == 0 &&
	    (rc = initial_repo(&r, now)) == 0) {
		rc = ic_repo_create_file(s, &r);
		ic_repo_free(&r);
	}
	if (rc == 0)
		rc = ic_repo_update(s, "mark the owner", owner_mutation, (void *)ctx->dataset_id);
	if (rc) {
		/* Take back what this call wrote, and nothing else. */
		char *keep = strdup(tether_error_last());
		static const char *const written[] = {"repo", "snapshots/" IC_INITIAL_SNAPSHOT,
		                                      "transactions/" IC_INITIAL_SNAPSHOT, NULL};
		json_t *keys = NULL;
		for (int i = 0; written[i]; i++)
			tether_store_delete(s, written[i]);
		if (ic_store_keys(s, "overwritten", &keys) == 0 && json_array_size(keys) <= 1) {
			size_t i;
			json_t *k;
			json_array_foreach(keys, i, k)
				tether_store_delete(s, json_string_value(k));
		}
		json_decref(keys);
		tether_store_remove_root(s);
		tether_error_set(rc, "%s", keep ? keep : "create_store failed");
		free(keep);
	}
	tether_store_close(s);
	return rc;
}

/* The owner the repository's metadata names, malloc'd, or NULL. */
static char *owner_of(const struct ic_repo *r)
{
	for (uint32_t i = 0; i < r->meta.n; i++) {
		if (!ic_str_eq(r->meta.v[i].name, IC_OWNER_KEY))
			continue;
		json_t *v = NULL;
		char *owner = NULL;
		if (flex_decode(r->meta.v[i].value.p, r->meta.v[i].value.n, &v) == 0 && json_is_string(v))
			owner = strdup(json_string_value(v));
		json_decref(v);
		tether_error_clear();
		return owner;
	}
	return NULL;
}

static int check_ref_empty(const struct ic_repository *repo, const struct ic_repo *r, const char *base)
{
	struct ic_id first;
	ic_id_parse(IC_INITIAL_SNAPSHOT, &first);
	if (r->ntags)
		return tether_error_set(TETHER_EREFUSED, "%s has tags (%.*s): not deleted", repo->uri, (int)r->tags[0].name.n,
		                        r->tags[0].name.p);
	for (uint32_t i = 0; i < r->nbranches; i++) {
		const struct ic_ref *b = &r->branches[i];
		if (!ic_str_eq(b->name, base) && !ic_str_eq(b->name, "main"))
			return tether_error_set(TETHER_EREFUSED, "%s has branch %.*s: not deleted", repo->uri, (int)b->name.n,
			                        b->name.p);
		if (memcmp(r->snaps[b->snap].id.b, first.b, IC_ID_BYTES) != 0)
			return tether_error_set(TETHER_EREFUSED, "%s holds commits on %.*s: not deleted", repo->uri,
			                        (int)b->name.n, b->name.p);
	}
	return 0;
}

int ic_delete_store(const struct tether_bctx *ctx, const json_t *locator)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_repo r;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if (repo.spec != 2)
		rc = tether_error_set(TETHER_EREFUSED, "%s is a spec-1 repository, which tether never creates: not deleted",
		                      repo.uri);
	if (rc == 0 && (rc = ic_repo_read(repo.store, &r, NULL)) == 0) {
		char *owner = owner_of(&r);
		if (!owner || !ctx || !ctx->dataset_id || strcmp(owner, ctx->dataset_id) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "%s was not created by this dataset (tether.owner is %s): "
			                                       "not deleted", repo.uri, owner ? owner : "unset");
		if (rc == 0)
			rc = check_ref_empty(&repo, &r, loc.branch);
		free(owner);
		ic_repo_free(&r);
	}
	json_t *keys = NULL;
	if (rc == 0)
		rc = ic_store_keys(repo.store, "", &keys);
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k) {
		if (rc == 0 && !icechunk_name(json_string_value(k)))
			rc = tether_error_set(TETHER_EREFUSED, "%s holds %s, which is not Icechunk's: not deleted", repo.uri,
			                      json_string_value(k));
	}
	/* `repo` first: once it is gone nothing is a repository any more, so a
	 * removal cut short leaves loose files, never a broken repository. */
	if (rc == 0)
		rc = tether_store_delete(repo.store, "repo");
	json_array_foreach(keys, i, k) {
		if (rc == 0 && strcmp(json_string_value(k), "repo") != 0)
			rc = tether_store_delete(repo.store, json_string_value(k));
	}
	if (rc == 0)
		rc = tether_store_remove_root(repo.store);
	json_decref(keys);
	ic_repository_close(&repo);
	return rc;
}
