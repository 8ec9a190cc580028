/* What `tether export` asks of a git store on libgit2: commits' facts
 * (commits_info) and the named refs (list_refs). Shared by tether-vcs-
 * libgit2 (and through it tether-vcs-git) and tether-vcs-jj, which adds
 * change ids and names refs as jj does. */
#include "util/fail.h"
#include "util/git_error.h"
#include "util/jsonsort.h"
#include "vcs/git_store.h"
#include "vcs/vcs_refs.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>

static json_t *commit_info(const git_commit *c)
{
	char hex[GIT_OID_HEXSZ + 1];
	const git_signature *a = git_commit_author(c), *k = git_commit_committer(c);
	json_t *parents = json_array();
	for (unsigned i = 0; parents && i < git_commit_parentcount(c); i++)
		json_array_append_new(parents, json_string(git_oid_tostr(hex, sizeof hex, git_commit_parent_id(c, i))));
	git_oid_tostr(hex, sizeof hex, git_commit_id(c));
	return json_pack("{s:s, s:o, s:o, s:o, s:I, s:i, s:o, s:o, s:I, s:o}", "id", hex, "parents", parents,
	                 "author", tt_git_json_text(a->name), "email", tt_git_json_text(a->email), "time",
	                 (json_int_t)a->when.time, "tz", a->when.offset, "committer", tt_git_json_text(k->name),
	                 "committer_email", tt_git_json_text(k->email), "commit_time", (json_int_t)k->when.time,
	                 "message", tt_git_json_text(git_commit_message(c)));
}

int tt_git_commits_info(struct tether_vcs *v, const char *const *ids, size_t n, json_t **infos)
{
	git_repository *repo = tt_git_store_repository(v);
	json_t *out = json_array();
	*infos = NULL;
	if (!out)
		return tt_fail_oom();
	for (size_t i = 0; i < n; i++) {
		git_oid oid;
		git_commit *c = NULL;
		if (git_oid_fromstr(&oid, ids[i]) < 0) {
			json_decref(out);
			return tether_error_set(TETHER_EUSAGE, "'%s' is not a full commit id", ids[i]);
		}
		int rc = git_commit_lookup(&c, repo, &oid);
		if (rc < 0) {
			json_decref(out);
			return tt_git_fail(rc, "cannot read commit %s", ids[i]);
		}
		json_t *info = commit_info(c);
		git_commit_free(c);
		if (!info || json_array_append_new(out, info) < 0) {
			json_decref(out);
			return tt_fail_oom();
		}
	}
	*infos = out;
	return 0;
}

int tt_vcs_refs_sort(json_t *refs)
{
	tt_json_array_sort(refs, tt_vcs_refs_order);
	return 0;
}

static const struct {
	const char *prefix, *type;
} ref_kinds[] = {
	{ "refs/heads/", "branch" },
	{ "refs/remotes/", "remote" },
	{ "refs/tags/", "tag" },
};

int tt_git_list_refs(struct tether_vcs *v, json_t **refs)
{
	git_repository *repo = tt_git_store_repository(v);
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	json_t *out = json_array();
	*refs = NULL;
	int rc = git_reference_iterator_new(&it, repo);
	if (rc < 0) {
		json_decref(out);
		return tt_git_fail(rc, "cannot list the refs");
	}
	while ((rc = git_reference_next(&ref, it)) == 0) {
		const char *name = git_reference_name(ref);
		const char *type = NULL;
		size_t skip = 0;
		for (size_t k = 0; k < sizeof ref_kinds / sizeof ref_kinds[0]; k++)
			if (strncmp(name, ref_kinds[k].prefix, strlen(ref_kinds[k].prefix)) == 0) {
				type = ref_kinds[k].type;
				skip = strlen(ref_kinds[k].prefix);
			}
		size_t len = strlen(name);
		/* refs/remotes/origin/HEAD only repeats the branch it names */
		if (type && strcmp(type, "remote") == 0 && len > 5 && strcmp(name + len - 5, "/HEAD") == 0)
			type = NULL;
		git_object *peeled = NULL;
		if (type && git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT) == 0) {
			char hex[GIT_OID_HEXSZ + 1];
			git_oid_tostr(hex, sizeof hex, git_object_id(peeled));
			json_array_append_new(out, json_pack("{s:o, s:s, s:s}", "name", tt_git_json_text(name + skip),
			                                     "type", type, "commit", hex));
		}
		git_error_clear();
		git_object_free(peeled);
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	if (rc != GIT_ITEROVER) {
		json_decref(out);
		return tt_git_fail(rc, "cannot list the refs");
	}
	rc = tt_vcs_refs_sort(out);
	if (rc) {
		json_decref(out);
		return rc;
	}
	*refs = out;
	return 0;
}
