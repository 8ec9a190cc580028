#include "core/repo.h"

#include "core/abi.h"
#include "core/add_options.h"
#include "core/cancel.h"
#include "core/layout.h"
#include "core/lock.h"
#include "core/module.h"
#include "core/registry.h"
#include "core/sessions.h"
#include "core/validate.h"
#include "core/vcs_detect.h"
#include "format/toml.h"
#include "store/options.h"
#include <tether/store.h>
#include "util/fsutil.h"
#include "util/safefs.h"
#include "util/hash.h"
#include "util/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The negations keep the manifests and listings committable whatever the
 * repository's own ignore rules say: a user's "raw/" or "data/" pattern
 * also matches .tether/objects/raw/, and the commit would leave the
 * manifests of those keys out. Rules in a deeper .gitignore win. */
static const char GITIGNORE[] = "# tether: per-checkout files, never committed\n"
                                "/workspace.toml\n"
                                "/secrets.toml\n"
                                "/cache/\n"
                                "/journal/\n"
                                "/lock\n"
                                "# tether: committed, even where the repository ignores such names\n"
                                "!/objects/**\n"
                                "!/listings/**\n"
                                "# tether: a write in progress (util/tempname.h), never committed\n"
                                "*.tmp.*[0-9]\n";

const char *tether_repo_root(const tether_repo *repo)
{
	return repo->root;
}

const char *tether_repo_id(const tether_repo *repo)
{
	return repo->id;
}

void tether_repo_free(tether_repo *repo)
{
	if (!repo)
		return;
	tt_sessions_free(repo);
	if (repo->vh)
		repo->vcs->close(repo->vh);
	free(repo->root);
	free(repo->tether_dir);
	free(repo->cache_dir);
	free(repo->workdir);
	free(repo->common_dir);
	free(repo->rel);
	free(repo->trunk);
	json_decref(repo->config);
	json_decref(repo->secrets);
	tt_toml_where_free(repo->secrets_where);
	pthread_mutex_destroy(&repo->turn);
	free(repo);
}

static int is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* A committed or hand-written TOML file being validated: its path, and
 * where each key was written, so a refusal names the line and column. */
struct cfgcheck {
	const char *path;
	const struct tt_toml_where *where;
};

/* "PATH:LINE:COL: message" at `key` of `table` (TETHER_ECONFIG). */
__attribute__((format(printf, 4, 5)))
static int refuse_at(const struct cfgcheck *c, const json_t *table, const char *key, const char *fmt, ...)
{
	char msg[512], at[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tt_toml_where_name(c->where, table, key, c->path, at, sizeof at);
	return tether_error_set(TETHER_ECONFIG, "%s: %s", at, msg);
}

static int check_bool(const struct cfgcheck *c, const json_t *table, const char *tname, const char *key)
{
	json_t *v = json_object_get(table, key);
	if (v && !json_is_boolean(v))
		return refuse_at(c, table, key, "%s.%s must be true or false", tname, key);
	return 0;
}

/* [new] trunk names the bookmark that stands for the upstream branches: a
 * bookmark name, so no whitespace and nothing a branch name cannot hold. */
static int check_trunk(const struct cfgcheck *c, const json_t *table)
{
	json_t *v = json_object_get(table, "trunk");
	const char *s = json_string_value(v);
	int ok = s && *s && *s != '-' && strncmp(s, "detached-", 9) != 0;
	for (const char *p = s; ok && *p; p++)
		ok = (unsigned char)*p > ' ' && *p != 0x7f && !strchr("~^:?*[\\", *p);
	if (v && !ok)
		return refuse_at(c, table, "trunk", "new.trunk must be a bookmark name (a string such as \"main\")");
	return 0;
}

static int check_choice(const struct cfgcheck *c, const json_t *table, const char *tname, const char *key,
                        const char *const *choices)
{
	json_t *v = json_object_get(table, key);
	if (!v)
		return 0;
	char allowed[256] = "";
	size_t o = 0;
	for (size_t i = 0; choices[i]; i++) {
		if (json_is_string(v) && strcmp(json_string_value(v), choices[i]) == 0)
			return 0;
		if (o < sizeof allowed)
			o += (size_t)snprintf(allowed + o, sizeof allowed - o, "%s\"%s\"",
			                      i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);
	}
	return refuse_at(c, table, key, "%s.%s must be one of %s", tname, key, allowed);
}

/* Unknown keys of a table: refused, naming the ones it may hold. */
static int check_known(const struct cfgcheck *c, const json_t *table, const char *tname,
                       const char *const *known, const char *allowed)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)table, k, v) {
		size_t i = 0;
		while (known[i] && strcmp(known[i], k) != 0)
			i++;
		if (!known[i])
			return refuse_at(c, table, k, "unknown key '%s'%s%s (allowed: %s)", k, tname ? " in " : "",
			                 tname ? tname : "", allowed);
	}
	return 0;
}

/* [defaults] key k (not write or pin) against the add options the known
 * backends declare with TETHER_ADD_DEFAULTS: *found when one does, and
 * its value must be one that option takes (for each declaring kind). */
static int check_default_key(const struct cfgcheck *c, const json_t *defaults, const char *k, int *found)
{
	size_t n;
	const struct tether_backend **list = tt_backends_loaded(&n);
	int rc = 0;
	*found = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		struct tether_add_option o;
		if (!tt_add_option_find(list[i], k, &o) || !(o.flags & TETHER_ADD_DEFAULTS))
			continue;
		*found = 1;
		if (o.choices)
			rc = check_choice(c, defaults, "defaults", k, o.choices);
		else if (!json_is_string(json_object_get(defaults, k)))
			rc = refuse_at(c, defaults, k, "defaults.%s must be a string", k);
	}
	free(list);
	return rc;
}

/* "file, write, pin": the keys [defaults] may hold, as the known backends
 * declare them, then the engine's. */
static void defaults_keys(char *out, size_t cap)
{
	size_t n, o = 0;
	const struct tether_backend **list = tt_backends_loaded(&n);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		struct tether_add_option a;
		for (size_t j = 0; tt_add_option_at(list[i], j, &a) && o < cap; j++)
			if (a.flags & TETHER_ADD_DEFAULTS)
				o += (size_t)snprintf(out + o, cap - o, "%s, ", a.name);
	}
	if (o < cap)
		snprintf(out + o, cap - o, "write, pin");
	free(list);
}

/* [defaults]: write and pin are the engine's; every other key is an add
 * option some backend declares with TETHER_ADD_DEFAULTS. A key no known
 * backend declares makes the engine load the modules on the path before
 * it refuses the key (a module's option may be what was meant), so a
 * tether.toml that holds only keys of built-in kinds loads none. */
static int check_defaults(const struct cfgcheck *c, const json_t *defaults)
{
	const char *k;
	json_t *v;
	int all_loaded = 0;
	json_object_foreach((json_t *)defaults, k, v) {
		if (strcmp(k, "write") == 0 || strcmp(k, "pin") == 0)
			continue;
		int found = 0;
		int rc = check_default_key(c, defaults, k, &found);
		if (!rc && !found && !all_loaded) {
			tt_backends_load_modules();
			all_loaded = 1;
			rc = check_default_key(c, defaults, k, &found);
		}
		if (rc)
			return rc;
		if (!found) {
			char allowed[512];
			defaults_keys(allowed, sizeof allowed);
			return refuse_at(c, defaults, k, "unknown key '%s' in defaults (allowed: %s)", k, allowed);
		}
	}
	return 0;
}

/* [backends.<kind>]: each table the keys its backend declares (config_keys).
 * A kind this build does not have, or one that declares none, is left
 * unchecked: the table is that backend's, and it may be missing here. */
static int check_backend_tables(const struct cfgcheck *c, const json_t *backends)
{
	const char *kind;
	json_t *table;
	json_object_foreach((json_t *)backends, kind, table) {
		if (!json_is_object(table))
			return refuse_at(c, backends, kind, "backends.%s must be a table", kind);
		const struct tether_backend *b = tether_backend_find(kind);
		if (!b) {
			tether_error_clear();
			continue;
		}
		const char *const *keys = TT_BACKEND_GET(b, config_keys);
		if (!keys)
			continue;
		char allowed[512] = "";
		size_t o = 0;
		for (size_t i = 0; keys[i] && o < sizeof allowed; i++)
			o += (size_t)snprintf(allowed + o, sizeof allowed - o, "%s%s", i ? ", " : "", keys[i]);
		char tname[128];
		snprintf(tname, sizeof tname, "backends.%s", kind);
		int rc = check_known(c, table, tname, keys, o ? allowed : "none");
		if (rc)
			return rc;
	}
	return 0;
}

/* tether.toml is committed: anyone's clone hands it to us. Check every key
 * we read, and refuse what we do not know rather than ignore a typo. */
static int validate_config(const struct cfgcheck *c, json_t *cfg, char id[33])
{
	static const char *const tables[] = {"dataset", "snapshot", "verify", "new", "defaults", "backends", NULL};
	int rc = check_known(c, cfg, NULL, tables, "dataset, snapshot, verify, new, defaults, backends");
	if (rc)
		return rc;
	const char *k;
	json_t *v;
	int bad = tt_strings_check(cfg, c->path);
	if (bad)
		return bad;
	json_object_foreach(cfg, k, v) {
		if (!json_is_object(v))
			return refuse_at(c, cfg, k, "'%s' must be a table", k);
	}
	/* The tables' own keys. [backends.<kind>] belongs to each backend. */
	static const struct {
		const char *table;
		const char *const keys[4];
		const char *allowed;
	} inner[] = {
		{"dataset", {"id", "layout", NULL}, "id, layout"},
		{"snapshot", {"auto", NULL}, "auto"},
		{"verify", {"on_status", NULL}, "on_status"},
		{"new", {"auto_fork", "trunk", NULL}, "auto_fork, trunk"},
	};
	for (size_t i = 0; !rc && i < sizeof inner / sizeof inner[0]; i++)
		rc = check_known(c, json_object_get(cfg, inner[i].table), inner[i].table, inner[i].keys, inner[i].allowed);
	if (rc)
		return rc;
	json_t *dataset = json_object_get(cfg, "dataset");
	const char *ds = json_string_value(json_object_get(dataset, "id"));
	if (!ds || !is_hex(ds, 32))
		return json_object_get(dataset, "id") ? refuse_at(c, dataset, "id", "dataset.id must be 32 lower-case hex digits")
		                                      : refuse_at(c, cfg, "dataset", "dataset.id must be 32 lower-case hex digits");
	memcpy(id, ds, 33);
	static const char *const writes[] = {"fork", "track", "none", NULL};
	static const char *const pins[] = {"native", "record", NULL};
	rc = check_bool(c, json_object_get(cfg, "snapshot"), "snapshot", "auto");
	if (!rc)
		rc = check_bool(c, json_object_get(cfg, "verify"), "verify", "on_status");
	if (!rc)
		rc = check_bool(c, json_object_get(cfg, "new"), "new", "auto_fork");
	if (!rc)
		rc = check_trunk(c, json_object_get(cfg, "new"));
	json_t *defaults = json_object_get(cfg, "defaults");
	if (!rc)
		rc = check_choice(c, defaults, "defaults", "write", writes);
	if (!rc)
		rc = check_choice(c, defaults, "defaults", "pin", pins);
	if (!rc)
		rc = check_defaults(c, defaults);
	if (!rc)
		rc = check_backend_tables(c, json_object_get(cfg, "backends"));
	return rc;
}

/* One [uris."<prefix>"] table: the prefix a canonical store URI with a
 * scheme (it is compared with the canonical URIs tether records), its
 * keys store options of their types. */
static int validate_uri_table(const struct cfgcheck *c, const json_t *uris, const char *prefix, const json_t *t)
{
	if (!json_is_object(t))
		return refuse_at(c, uris, prefix, "uris.\"%s\" must be a table", prefix);
	char *canon = NULL;
	int bad = !strstr(prefix, "://") || tether_store_canonical(prefix, NULL, &canon) != 0 ||
	          strcmp(canon, prefix) != 0;
	if (bad) {
		int rc = refuse_at(c, uris, prefix,
		                   "uris.\"%s\": the prefix must be a store URI as tether records it (scheme://bucket"
		                   "[/path], lowercase scheme and host, no trailing '/')%s%s",
		                   prefix, canon ? ": " : "", canon ? canon : "");
		free(canon);
		return rc;
	}
	free(canon);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)t, k, v) {
		char why[768];
		if (tt_store_option_check(k, v, why, sizeof why) != 0)
			return refuse_at(c, t, k, "uris.\"%s\": %s", prefix, why);
	}
	return 0;
}

/* .tether/secrets.toml: [uris."<prefix>"] tables (store options for every
 * store at or under the prefix) and [objects."<key>"] tables, one per
 * object, each the backend's (git reads `remote`). A misspelt table would
 * leave an object without the secret meant for it, silently. */
static int validate_secrets(const struct cfgcheck *c, const json_t *secrets)
{
	static const char *const tables[] = {"objects", "uris", "backends", "databases", NULL};
	int rc = check_known(c, secrets, NULL, tables, "objects, uris, backends, databases");
	json_t *kinds = json_object_get(secrets, "backends");
	if (!rc && kinds && !json_is_object(kinds))
		rc = refuse_at(c, secrets, "backends", "'backends' must be a table of [backends.<kind>] tables");
	if (!rc) /* a URL or token is handed on as a C string: no NUL inside */
		rc = tt_strings_check(secrets, c->path);
	json_t *objects = json_object_get(secrets, "objects");
	if (!rc && objects && !json_is_object(objects))
		rc = refuse_at(c, secrets, "objects", "'objects' must be a table of [objects.\"<key>\"] tables");
	const char *k;
	json_t *v;
	json_object_foreach(objects, k, v) {
		if (rc)
			break;
		if (!json_is_object(v))
			rc = refuse_at(c, objects, k, "objects.\"%s\" must be a table", k);
	}
	json_t *uris = json_object_get(secrets, "uris");
	if (!rc && uris && !json_is_object(uris))
		rc = refuse_at(c, secrets, "uris", "'uris' must be a table of [uris.\"<prefix>\"] tables");
	json_object_foreach(uris, k, v) {
		if (rc)
			break;
		rc = validate_uri_table(c, uris, k, v);
	}
	/* [databases."postgresql://host/db"] password = "...": for publish
	 * and import, whose URLs carry none. */
	json_t *dbs = json_object_get(secrets, "databases");
	if (!rc && dbs && !json_is_object(dbs))
		rc = refuse_at(c, secrets, "databases", "'databases' must be a table of [databases.\"<url>\"] tables");
	json_object_foreach(dbs, k, v) {
		static const char *const keys[] = {"password", NULL};
		if (rc)
			break;
		if (!json_is_object(v))
			rc = refuse_at(c, dbs, k, "databases.\"%s\" must be a table", k);
		else if (!(rc = check_known(c, v, k, keys, "password")) && !json_is_string(json_object_get(v, "password")))
			rc = refuse_at(c, dbs, k, "databases.\"%s\" needs password = \"...\"", k);
	}
	return rc;
}

static int load_config(struct tether_repo *repo)
{
	char *path = tt_path_join(repo->root, "tether.toml");
	char *data;
	size_t len;
	int rc = tt_safe_read(repo->root, path, &data, &len);
	if (rc) {
		free(path);
		return rc;
	}
	char err[512];
	struct tt_toml_where *where = NULL;
	repo->config = tt_toml_parse_at(data, len, path, err, sizeof err, &where);
	free(data);
	struct cfgcheck c = {path, where};
	if (!repo->config)
		rc = tether_error_set(TETHER_ECONFIG, "%s", err);
	/* The layout first: a newer one may hold tables this tether does not
	 * know, and "newer layout" is the refusal that says what to do. */
	if (!rc)
		rc = tt_layout_of_config(repo->config, path, &repo->layout);
	if (!rc)
		rc = validate_config(&c, repo->config, repo->id);
	tt_toml_where_free(where);
	free(path);
	return rc;
}

static struct tether_repo *repo_new(const char *root)
{
	struct tether_repo *repo = calloc(1, sizeof *repo);
	if (!repo)
		abort();
	repo->root = strdup(root);
	repo->tether_dir = tt_path_join(root, ".tether");
	repo->cache_dir = tt_path_join(repo->tether_dir, "cache");
	pthread_mutex_init(&repo->turn, NULL);
	return repo;
}

static int has_entry(const char *dir, const char *name)
{
	char *path = tt_path_join(dir, name);
	int found = tt_exists(path);
	free(path);
	return found;
}

/* The top of a checkout: .git (a directory, or the file of a worktree or
 * submodule) or .jj (a jj workspace, colocated or not). */
static int is_checkout_top(const char *dir)
{
	return has_entry(dir, ".git") || has_entry(dir, ".jj");
}

/* The nearest directory at or above `dir` holding tether.toml, without
 * leaving the checkout: the search stops at the first checkout top, so
 * that a repository nested in another one never finds the outer one's
 * dataset. */
static char *find_root(const char *dir)
{
	char *cur = strdup(dir);
	for (;;) {
		if (has_entry(cur, "tether.toml"))
			return cur;
		int top = is_checkout_top(cur);
		char *slash = strrchr(cur, '/');
		if (top || !slash || slash == cur) {
			free(cur);
			return NULL;
		}
		*slash = '\0';
	}
}

int tether_repo_find(const char *start_dir, tether_repo **out)
{
	*out = NULL;
	char real[PATH_MAX];
	if (!realpath(start_dir, real))
		return tether_error_set(TETHER_ENOTFOUND, "%s: %s", start_dir, strerror(errno));
	char *root = find_root(real);
	if (!root) {
		tether_error_set(TETHER_ENOREPO, "no tether dataset here: no tether.toml in %s or any parent", real);
		tether_error_set_hint("run `tether init` inside a git repository to create one");
		return TETHER_ENOREPO;
	}
	struct tether_repo *repo = repo_new(root);
	free(root);
	/* A clone is untrusted: refuse a symlinked or special file in the
	 * dataset's own layout before anything reads it or contacts a store. */
	int rc = tt_safe_check_dataset(repo->root);
	if (!rc)
		rc = load_config(repo);
	if (rc) {
		tether_repo_free(repo);
		return rc;
	}
	*out = repo;
	return 0;
}

int tt_repo_vcs(struct tether_repo *repo)
{
	if (repo->vh)
		return 0;
	const struct tether_vcs_ops *ops;
	char *start;
	int rc = tt_vcs_detect(repo->root, &ops, &start);
	if (rc)
		return rc;
	rc = ops->open(start, &repo->vh, &repo->workdir, &repo->common_dir);
	free(start);
	if (rc)
		return rc;
	if ((rc = tt_vcs_check_shared_dir(repo->workdir, repo->common_dir)) != 0) {
		ops->close(repo->vh);
		repo->vh = NULL;
		free(repo->workdir);
		free(repo->common_dir);
		repo->workdir = repo->common_dir = NULL;
		return rc;
	}
	repo->vcs = ops;
	size_t wl = strlen(repo->workdir);
	if (strncmp(repo->root, repo->workdir, wl) != 0 || (repo->root[wl] && repo->root[wl] != '/'))
		return tether_error_set(TETHER_ENOREPO, "the dataset %s is not inside the checkout %s",
		                        repo->root, repo->workdir);
	repo->rel = strdup(repo->root[wl] ? repo->root + wl + 1 : "");
	return 0;
}

char *tt_repo_vcs_path(const struct tether_repo *repo, const char *dataset_rel)
{
	if (!repo->rel || !*repo->rel)
		return strdup(dataset_rel);
	return tt_path_join(repo->rel, dataset_rel);
}

void tt_repo_bctx(struct tether_repo *repo, const char *kind, const char *key, struct tether_bctx *ctx)
{
	*ctx = (struct tether_bctx){TETHER_BCTX_INIT};
	ctx->dataset_root = repo->root;
	ctx->dataset_id = repo->id;
	ctx->cache_dir = repo->cache_dir;
	ctx->config = json_object_get(json_object_get(repo->config, "backends"), kind);
	ctx->defaults = json_object_get(repo->config, "defaults");
	ctx->key = key;
	ctx->threads = tt_pool_default_threads();
	ctx->cancel = tt_cancel_flag();
	tt_sessions_progress(repo, ctx);
	json_t *objects = json_object_get(repo->secrets, "objects");
	ctx->secrets = key ? json_object_get(objects, key) : NULL;
	/* No table of its own: the kind's [backends.<kind>] one, the secrets
	 * every object of the kind shares (an Iceberg catalog's URI). */
	if (!ctx->secrets)
		ctx->secrets = json_object_get(json_object_get(repo->secrets, "backends"), kind);
	ctx->uri_secrets = json_object_get(repo->secrets, "uris");
}

int tt_repo_config_bool(const struct tether_repo *repo, const char *table, const char *key, int dflt)
{
	json_t *v = json_object_get(json_object_get(repo->config, table), key);
	return v ? json_is_true(v) : dflt;
}

/* Refuse .tether/<name> when the VCS tracks it: a file of this checkout's
 * own that a clone must not be able to supply. *present says whether it
 * exists (the file itself, never one a link points at: the tracked check
 * must be about the bytes that are read). */
static int refuse_tracked(struct tether_repo *repo, const char *name, const char *why, const char *hint,
                          int *present)
{
	char *path = tt_path_join(repo->tether_dir, name);
	*present = tt_safe_exists(repo->root, path);
	int rc = *present < 0 ? *present : 0;
	if (*present > 0) {
		rc = tt_repo_vcs(repo);
		int tracked = 0;
		char *rel = tt_strdupf(".tether/%s", name);
		char *vpath = rc ? NULL : tt_repo_vcs_path(repo, rel);
		if (!rc)
			rc = repo->vcs->is_tracked(repo->vh, vpath, &tracked);
		if (!rc && tracked) {
			rc = tether_error_set(TETHER_EREFUSED, "%s is tracked by the repository: %s", path, why);
			/* Untracking alone does not do: the command commits the removal. */
			char *untrack = tt_vcs_untrack_command(repo->vcs, path, vpath);
			tether_error_set_hint("untrack it and commit the removal: `%s`%s", untrack ? untrack : "?", hint);
			free(untrack);
		}
		free(vpath);
		free(rel);
	}
	free(path);
	return rc;
}

int tt_repo_check_secrets(struct tether_repo *repo)
{
	/* workspace.toml holds the heads tether last left each working branch
	 * at, the condition that lets a fork move a branch: one a clone
	 * committed would let `new` overwrite work nobody pinned. */
	int present = 0;
	int rc = refuse_tracked(repo, "workspace.toml",
	                        "it is this checkout's own state (its working branches and where tether left them) "
	                        "and must never be committed",
	                        ", and check the working branches it names before trusting them", &present);
	return rc ? rc : tt_repo_load_secrets(repo);
}

int tt_repo_load_secrets(struct tether_repo *repo)
{
	if (repo->secrets_loaded)
		return 0;
	int present = 0;
	int rc = refuse_tracked(repo, "secrets.toml", "secrets must never be committed", " and rotate what it held",
	                        &present);
	char *path = tt_path_join(repo->tether_dir, "secrets.toml");
	if (!rc && present) {
		char *data;
		size_t len;
		rc = tt_safe_read(repo->root, path, &data, &len);
		if (!rc) {
			char err[512];
			struct tt_toml_where *where = NULL;
			repo->secrets = tt_toml_parse_at(data, len, path, err, sizeof err, &where);
			free(data);
			struct cfgcheck c = {path, where};
			if (!repo->secrets)
				rc = tether_error_set(TETHER_ECONFIG, "%s", err);
			else
				rc = validate_secrets(&c, repo->secrets);
			if (rc) {
				json_decref(repo->secrets);
				repo->secrets = NULL;
				tt_toml_where_free(where);
			} else {
				repo->secrets_where = where;
			}
		}
	}
	/* Absent is loaded too: every command that opens objects asks, some
	 * twice (check_secrets, then the objects' preparation). */
	repo->secrets_loaded = rc == 0;
	free(path);
	return rc;
}

int tt_repo_check_object_secrets(const struct tether_repo *repo, const struct tether_backend *b,
                                 const char *key)
{
	json_t *mine = json_object_get(json_object_get(repo->secrets, "objects"), key);
	const char *const *keys = TT_BACKEND_GET(b, secret_keys);
	char table[300];
	snprintf(table, sizeof table, "objects.\"%s\"", key);
	if (!mine) { /* what the object gets instead (tt_repo_bctx) */
		mine = json_object_get(json_object_get(repo->secrets, "backends"), b->kind);
		snprintf(table, sizeof table, "backends.%s", b->kind);
	}
	if (!mine || !keys)
		return 0;
	if (!json_is_object(mine)) {
		char *path = tt_path_join(repo->tether_dir, "secrets.toml");
		int rc = tether_error_set(TETHER_ECONFIG, "%s: %s must be a table", path, table);
		free(path);
		return rc;
	}
	const char *k;
	json_t *v;
	json_object_foreach(mine, k, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], k) != 0)
			i++;
		if (keys[i])
			continue;
		char allowed[256] = "", *path = tt_path_join(repo->tether_dir, "secrets.toml");
		size_t o = 0;
		for (i = 0; keys[i] && o < sizeof allowed; i++)
			o += (size_t)snprintf(allowed + o, sizeof allowed - o, "%s%s", i ? ", " : "", keys[i]);
		struct cfgcheck c = {path, repo->secrets_where};
		int rc = refuse_at(&c, mine, k, "unknown key '%s' in %s (kind %s reads %s)", k, table, b->kind,
		                   *allowed ? allowed : "none");
		free(path);
		return rc;
	}
	return 0;
}

int tt_repo_resolve(struct tether_repo *repo, const char *rev, char id[41])
{
	if (!rev || strcmp(rev, "@") == 0) {
		id[0] = '\0';
		return 0;
	}
	int rc = tt_repo_vcs(repo);
	return rc ? rc : repo->vcs->resolve(repo->vh, rev, id);
}

static int random_id(char out[33])
{
	unsigned char bytes[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, bytes, sizeof bytes) != (ssize_t)sizeof bytes) {
		if (fd >= 0)
			close(fd);
		return tether_error_set(TETHER_EIO, "cannot read /dev/urandom");
	}
	close(fd);
	tt_hex(bytes, sizeof bytes, out);
	return 0;
}

/* [defaults]' lines for the built-in kinds' options that take one: each
 * at its declared default, its help as the comment. */
static char *backend_default_lines(void)
{
	char *text = strdup("");
	size_t n;
	const struct tether_backend **list = tt_backends_loaded(&n);
	for (size_t i = 0; text && i < n; i++) {
		struct tether_add_option a;
		for (size_t j = 0; text && tt_add_option_at(list[i], j, &a); j++) {
			if (!(a.flags & TETHER_ADD_DEFAULTS) || !a.default_value)
				continue;
			char *more = tt_strdupf("%s%s = \"%s\" # kind %s: %s\n", text, a.name, a.default_value,
			                        list[i]->kind, a.help ? a.help : "");
			free(text);
			text = more;
		}
	}
	free(list);
	return text;
}

static char *default_config_text(const char *id)
{
	char *lines = backend_default_lines();
	char *text = tt_strdupf("# tether dataset: committed with the repository.\n"
	                  "[dataset]\n"
	                  "id = \"%s\"\n"
	                  "layout = %d         # the layout of tether's files; `tether upgrade` migrates older ones\n"
	                  "\n"
	                  "[snapshot]\n"
	                  "auto = true        # status and commit fingerprint every object\n"
	                  "\n"
	                  "[verify]\n"
	                  "on_status = false  # status does not check pins unless asked\n"
	                  "\n"
	                  "[new]\n"
	                  "auto_fork = true   # commit re-forks working refs\n"
	                  "\n"
	                  "[defaults]\n"
	                  "%s"
	                  "write = \"fork\"\n"
	                  "pin = \"native\"\n",
	                  id, TT_LAYOUT_CURRENT, lines ? lines : "");
	free(lines);
	return text;
}

int tether_repo_init(const char *start_dir, tether_repo **out)
{
	*out = NULL;
	char real[PATH_MAX];
	if (!realpath(start_dir, real))
		return tether_error_set(TETHER_ENOTFOUND, "%s: %s", start_dir, strerror(errno));
	char *existing = find_root(real);
	if (existing) {
		int rc = tether_error_set(TETHER_EREFUSED, "a tether dataset already exists at %s", existing);
		free(existing);
		return rc;
	}
	struct tether_repo *repo = repo_new(real);
	int rc = tt_safe_check_dataset(repo->root);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (rc == TETHER_ENOREPO && !tether_error_hint()) /* a bare repository says what to do instead */
		tether_error_set_hint("tether lives inside a git or jj repository: run `git init` or "
		                      "`jj git init` first");
	if (!rc)
		rc = random_id(repo->id);
	char *objects = tt_path_join(repo->tether_dir, "objects");
	char *gitignore = tt_path_join(repo->tether_dir, ".gitignore");
	char *config_path = tt_path_join(real, "tether.toml");
	char *text = rc ? NULL : default_config_text(repo->id);
	int objects_fd = -1;
	if (!rc)
		rc = tt_safe_open_dir(repo->root, objects, 1, &objects_fd);
	if (objects_fd >= 0)
		close(objects_fd);
	if (!rc)
		rc = tt_safe_write_atomic(repo->root, gitignore, GITIGNORE, sizeof GITIGNORE - 1);
	/* tether.toml last: its presence is what makes this a dataset. */
	if (!rc)
		rc = tt_safe_write_atomic(repo->root, config_path, text, strlen(text));
	if (!rc)
		rc = load_config(repo);
	free(objects);
	free(gitignore);
	free(config_path);
	free(text);
	if (rc) {
		tether_repo_free(repo);
		return rc;
	}
	*out = repo;
	return 0;
}

int tt_repo_lock(struct tether_repo *repo, struct tt_lock *checkout, struct tt_lock *shared)
{
	checkout->fd = shared->fd = -1;
#ifdef _WIN32
	/* No fcntl: nothing could order two writers, so none may write. */
	(void)repo;
	return tether_error_set(TETHER_EREFUSED, "writing commands need POSIX locks; run them from a POSIX system or WSL");
#endif
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	pthread_mutex_lock(&repo->turn);
	char *path = tt_path_join(repo->tether_dir, "lock");
	int fd;
	rc = tt_safe_open_file(repo->root, path, O_RDWR | O_CREAT, &fd);
	if (!rc)
		rc = tt_lock_hold(fd, path, "checkout lock", 30000, checkout);
	free(path);
	if (!rc) {
		path = tt_path_join(repo->common_dir, "tether.lock");
		rc = tt_lock_take(path, "repository lock", 60000, shared);
		free(path);
	}
	if (rc) {
		tt_lock_release(checkout);
		pthread_mutex_unlock(&repo->turn);
	}
	return rc;
}

void tt_repo_unlock(struct tether_repo *repo, struct tt_lock *checkout, struct tt_lock *shared)
{
	int held = checkout->fd >= 0;
	tt_lock_release(shared);
	tt_lock_release(checkout);
	if (held)
		pthread_mutex_unlock(&repo->turn);
}
