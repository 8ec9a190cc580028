/* gitbe_read.h's reader without libgit2, for the front tether-backend-git.so:
 * refs through gitrefs.c, objects through gitodb.c (every object read is
 * hash-checked), the repository found by tt_grepo_find.
 *
 * Each hook answers only what it can answer exactly as libgit2 would, and
 * returns GB_FORWARD for the rest: a layout tt_grepo_find hands to libgit2,
 * a repository found anywhere but at the locator's own path (libgit2 opens
 * it with no upward search), a git directory libgit2 would not take (no
 * HEAD file, objects or refs, another owner), a name whose validity is not
 * plainly valid by git's rules, any damage (libgit2 words the error), and a
 * directory above the git directory that could be a repository (only
 * libgit2 reads an index to tell whether it tracks the git directory). */
#include "backends/git/gitbe_read.h"

#include "vcs/gitodb.h"
#include "vcs/gitrefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gb_native {
	struct tt_grepo repo;
	struct tt_godb *odb; /* opened on first need */
};

static int has(const char *dir, const char *name, mode_t type)
{
	char *path = gb_strdupf("%s/%s", dir, name);
	struct stat st;
	int ok = path && stat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;

	free(path);
	return ok;
}

/* What libgit2 checks before it takes a git directory (a HEAD file, the
 * objects and refs directories, the caller's own directories: any other
 * owner is libgit2's to judge, with safe.directory). */
static int libgit2_would_take(const struct tt_grepo *r)
{
	struct stat st;

	return has(r->gitdir, "HEAD", S_IFREG) && has(r->commondir, "objects", S_IFDIR) &&
	       has(r->commondir, "refs", S_IFDIR) && stat(r->gitdir, &st) == 0 && st.st_uid == geteuid() &&
	       stat(r->commondir, &st) == 0 && st.st_uid == geteuid() && stat(r->workdir, &st) == 0 &&
	       st.st_uid == geteuid();
}

void gb_close(struct gb_obj *o)
{
	if (o->native) {
		tt_godb_free(o->native->odb);
		tt_grepo_clear(&o->native->repo);
		free(o->native);
	}
	o->native = NULL;
	free(o->real);
	o->real = NULL;
}

/* The checks of backend.c's gb_open, in its order, on this reader. No
 * cache: an open costs a few stats and small reads, not libgit2's parse. */
int gb_rd_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o, int cached)
{
	struct gb_native *n = NULL;
	int rc = gb_parse_locator(locator, o);

	(void)cached;
	if (rc == 0)
		rc = gb_refuse_url_remote(o, TETHER_EREFUSED);
	if (rc == 0)
		rc = gb_resolve_path(o, TETHER_EREFUSED);
	if (rc == 0 && !(n = calloc(1, sizeof *n)))
		rc = gb_fail_oom();
	if (rc == 0) {
		o->native = n;
		/* Found only at the locator's own path: libgit2 opens it with
		 * GIT_REPOSITORY_OPEN_NO_SEARCH, and says why when it cannot. */
		if (tt_grepo_find(o->real, &n->repo) != 0 || strcmp(n->repo.workdir, o->real) != 0 ||
		    !libgit2_would_take(&n->repo))
			rc = GB_FORWARD;
	}
	if (rc == 0)
		/* tt_grepo_find's three paths are realpath'd already (the work
		 * tree is o->real itself, compared above). */
		rc = gb_refuse_resolved_place(ctx, o, n->repo.gitdir, n->repo.commondir, n->repo.workdir,
		                              TETHER_EREFUSED);
	if (rc != 0)
		gb_close(o);
	if (rc == GB_FORWARD)
		tether_error_clear();
	return rc;
}

static struct tt_godb *odb(const struct gb_obj *o)
{
	struct gb_native *n = o->native;
	char *objects;

	if (!n->odb && (objects = gb_strdupf("%s/objects", n->repo.commondir))) {
		if (tt_godb_open(objects, &n->odb) < 0)
			n->odb = NULL;
		free(objects);
	}
	return n->odb;
}

int gb_rd_has_object(const struct gb_obj *o, const unsigned char id[GB_OID_SIZE], int *has_it)
{
	struct tt_godb *db = odb(o);
	unsigned char one[GB_OID_SIZE];
	char hex[GB_HEX_SIZE];
	int count = 0;

	if (!db || tt_godb_prefix(db, gb_hex20(id, hex), 40, one, &count) < 0)
		return GB_FORWARD;
	*has_it = count > 0;
	return 0;
}

/* A tag object's target: its first line, "object <hex>". */
static int tag_object_target(const unsigned char *data, size_t len, unsigned char id[GB_OID_SIZE])
{
	char hex[GB_HEX_SIZE];

	if (len < 48 || memcmp(data, "object ", 7) != 0 || data[47] != '\n')
		return -1;
	memcpy(hex, data + 7, 40);
	hex[40] = '\0';
	return tt_goid_from_hex(hex, id);
}

/* As git_reference_peel to a commit: the ref's target (or the peel that
 * packed-refs records), each tag object followed to what it tags. */
int gb_rd_tag_target(const struct gb_obj *o, const char *refname, const unsigned char *peeled,
                     unsigned char out[GB_OID_SIZE])
{
	struct tt_godb *db;
	unsigned char id[GB_OID_SIZE];
	char *symref = NULL;

	if (peeled) {
		memcpy(id, peeled, GB_OID_SIZE);
	} else {
		int rc = tt_gref_resolve(&o->native->repo, refname, id, &symref);
		int symbolic = symref != NULL;
		free(symref);
		/* A symbolic tag leading nowhere is libgit2's error, not absence. */
		if (rc == 1 && !symbolic)
			return GB_NOTFOUND;
		if (rc != 0) {
			tether_error_clear();
			return GB_FORWARD;
		}
	}
	if (!(db = odb(o)))
		return GB_FORWARD;
	for (int depth = 0; depth < 64; depth++) {
		enum tt_gobj_type type;
		unsigned char *data = NULL;
		size_t len = 0;
		int rc = tt_godb_read(db, id, &type, &data, &len);
		if (rc == 0 && type == TT_GOBJ_COMMIT) {
			free(data);
			memcpy(out, id, GB_OID_SIZE);
			return 0;
		}
		rc = rc == 0 && type == TT_GOBJ_TAG ? tag_object_target(data, len, id) : -1;
		free(data);
		if (rc != 0)
			break;
	}
	tether_error_clear();
	return GB_FORWARD;
}

/* The tags as tt_gref_each lists them (byte order of name), to be handed
 * out in libgit2's iterator order: the loose ones first, then the packed
 * ones no loose one hides, each part in byte order. */
struct listed {
	char *name;
	unsigned char id[GB_OID_SIZE], peeled[GB_OID_SIZE];
	int has_peeled, symbolic, loose;
};

struct listing {
	struct listed *v;
	size_t len, cap;
};

static int collect_tag(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled,
                       int symbolic, int loose)
{
	struct listing *l = ud;
	if (l->len == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct listed *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return gb_fail_oom();
		l->v = v;
		l->cap = cap;
	}
	struct listed *t = &l->v[l->len];
	memset(t, 0, sizeof *t);
	t->loose = loose;
	if (!(t->name = strdup(name)))
		return gb_fail_oom();
	memcpy(t->id, id, GB_OID_SIZE);
	if ((t->has_peeled = peeled != NULL))
		memcpy(t->peeled, peeled, GB_OID_SIZE);
	t->symbolic = symbolic;
	l->len++;
	return 0;
}

int gb_rd_each_tag(const struct gb_obj *o, gb_tag_cb cb, void *ud)
{
	struct listing l = {NULL, 0, 0};
	int rc = tt_gref_each_where(&o->native->repo, "refs/tags/" GB_TAG_PREFIX, collect_tag, &l);

	/* damage (or no memory): libgit2 words it */
	if (rc != 0) {
		tether_error_clear();
		rc = GB_FORWARD;
	}
	for (int loose = 1; rc == 0 && loose >= 0; loose--)
		for (size_t i = 0; i < l.len && rc == 0; i++) {
			const struct listed *t = &l.v[i];
			if (t->loose == loose)
				rc = cb(ud, t->name + strlen("refs/tags/"), t->symbolic ? NULL : t->id,
				        !t->symbolic && t->has_peeled ? t->peeled : NULL);
		}
	for (size_t i = 0; i < l.len; i++)
		free(l.v[i].name);
	free(l.v);
	return rc;
}

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Plainly valid: letters, digits, '_' and '-', a letter or digit first.
 * Anything else is libgit2's to judge. */
int gb_rd_remote_name_valid(const char *name, int *valid)
{
	size_t n = strlen(name);

	*valid = 0;
	if (n == 0 || n > 200 || !is_alnum(name[0]))
		return GB_FORWARD;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(name[i]) && name[i] != '_' && name[i] != '-')
			return GB_FORWARD;
	*valid = 1;
	return 0;
}

/* Plainly valid: "refs/tags/tether." and one component of letters,
 * digits, '_', '-' and single dots, not ending in '.' or ".lock". */
int gb_rd_refname_valid(const char *refname, int *valid)
{
	static const char prefix[] = "refs/tags/" GB_TAG_PREFIX;
	size_t n = strlen(refname), p = sizeof prefix - 1;

	*valid = 0;
	if (n <= p || n > 1000 || strncmp(refname, prefix, p) != 0 || refname[n - 1] == '.' ||
	    (n >= 5 && strcmp(refname + n - 5, ".lock") == 0))
		return GB_FORWARD;
	for (size_t i = p; i < n; i++)
		if (!(is_alnum(refname[i]) || refname[i] == '_' || refname[i] == '-' ||
		      (refname[i] == '.' && refname[i - 1] != '.')))
			return GB_FORWARD;
	*valid = 1;
	return 0;
}

/* Could libgit2 open `cur` (GIT_REPOSITORY_OPEN_NO_SEARCH: cur/.git, then
 * cur itself) as a repository other than the one whose git directory is
 * `dir`? Any doubt says yes. */
static int maybe_another_repository(const char *cur, const char *dir)
{
	const char *sep = strcmp(cur, "/") == 0 ? "" : "/";
	char *dotgit = gb_strdupf("%s%s.git", cur, sep), *head = gb_strdupf("%s%sHEAD", cur, sep);
	struct stat st;
	int maybe = !dotgit || !head;

	if (!maybe && lstat(dotgit, &st) == 0) {
		/* the repository itself: libgit2's git directory would be `dir` */
		char *real = gb_resolved(dotgit);
		maybe = !S_ISDIR(st.st_mode) || !real || strcmp(real, dir) != 0;
		free(real);
	} else if (!maybe && errno != ENOENT && errno != ENOTDIR) {
		maybe = 1;
	}
	if (!maybe && (lstat(head, &st) == 0 || (errno != ENOENT && errno != ENOTDIR)))
		maybe = 1;
	free(dotgit);
	free(head);
	return maybe;
}

/* place_libgit2.c's walk, asking each directory above `dir` only whether
 * it could be a repository at all: when none could, none tracks `dir`. */
int gb_rd_tracked_by(const char *dir, char **by)
{
	char *cur = strdup(dir);
	int rc = cur ? 0 : GB_FORWARD;

	*by = NULL;
	while (cur && rc == 0) {
		char *slash = strrchr(cur, '/');

		if (!slash || cur[1] == '\0')
			break;
		slash[slash == cur ? 1 : 0] = '\0';
		if (maybe_another_repository(cur, dir))
			rc = GB_FORWARD;
	}
	free(cur);
	return rc;
}
