/* The git backend's two modules give the same answers: the front
 * tether-backend-git.so (the native reader) and tether-gitbe-libgit2.so
 * (libgit2), both loaded from the build directory as the engine loads
 * them, asked the same list_pins, verify and verify_many questions about
 * repositories the git command line builds: pin tags loose and packed,
 * lightweight and annotated (one a tag of a tag), symbolic, moved to
 * another commit, missing, and states whose commit is gone.
 *
 * The front is asked first, and /proc/self/maps must then hold no libgit2:
 * those answers are the native reader's own, not libgit2's forwarded. Then
 * cases the native reader hands over (a tag of a tree, a symbolic tag to
 * nothing, a tag naming an object that is not there, a remote name only
 * libgit2's rules judge) must come back with libgit2's answers too. */
#include "check.h"

#include <tether/backend.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char scratch[1024], code[1200], dataset[1200];
static struct tether_bctx ctx;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int status = system(cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define MUST(...)                                                                                   \
	do {                                                                                        \
		if (sh(__VA_ARGS__) != 0) {                                                         \
			fprintf(stderr, "command failed at line %d\n", __LINE__);                  \
			exit(2);                                                                    \
		}                                                                                   \
	} while (0)

/* `git rev-parse` in the code repository. */
static void rev(const char *what, char out[41])
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse '%s'", code, what);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(out, 41, p) || strlen(out) != 40) {
		fprintf(stderr, "rev-parse %s failed\n", what);
		exit(2);
	}
	pclose(p);
}

static int libgit2_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, "libgit2") != NULL;
	if (f)
		fclose(f);
	return found;
}

/* One question and the answer a module gave, as text. */
struct item {
	const char *tag; /* NULL: an unpinned state */
	char sha[41];
};

#define MAX_ITEMS 16

static json_t *locator_for(const char *path, const char *remote)
{
	json_t *loc = json_pack("{s:s}", "path", path);
	if (remote)
		json_object_set_new(loc, "remote", json_string(remote));
	return loc;
}

/* Every answer of one module, one line per question. */
static char *answers(const struct tether_backend *b, const struct item *items, size_t n, const char *remote)
{
	json_t *loc = locator_for(code, remote);
	json_t *states[MAX_ITEMS], *refs[MAX_ITEMS];
	struct tether_verify_item many[MAX_ITEMS];
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = 0; i < n; i++) {
		int ok = -1;
		char *detail = NULL;
		states[i] = json_pack("{s:s}", "sha", items[i].sha);
		refs[i] = items[i].tag ? json_pack("{s:s}", "tag", items[i].tag) : NULL;
		tether_error_clear();
		int rc = b->verify(&ctx, loc, states[i], refs[i], &ok, &detail);
		fprintf(f, "verify %s %s: rc %d ok %d detail %s error %s\n", items[i].tag ? items[i].tag : "-",
		        items[i].sha, rc, ok, detail ? detail : "-", rc ? tether_error_last() : "-");
		free(detail);
		many[i] = (struct tether_verify_item){TETHER_VERIFY_ITEM_INIT, .locator = loc, .state = states[i], .pin_ref = refs[i]};
	}
	tether_error_clear();
	int rc = b->verify_many(&ctx, many, n);
	fprintf(f, "verify_many: rc %d\n", rc);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  %zu: ok %d detail %s\n", i, many[i].ok, many[i].detail ? many[i].detail : "-");
		free(many[i].detail);
		json_decref(states[i]);
		json_decref(refs[i]);
	}
	json_t *pins = NULL;
	tether_error_clear();
	rc = b->list_pins(&ctx, loc, &pins);
	char *text = pins ? json_dumps(pins, JSON_COMPACT) : NULL;
	fprintf(f, "list_pins: rc %d %s error %s\n", rc, text ? text : "-", rc ? tether_error_last() : "-");
	free(text);
	json_decref(pins);
	json_t *identity = NULL;
	tether_error_clear();
	rc = b->identity(&ctx, loc, &identity);
	text = identity ? json_dumps(identity, JSON_COMPACT) : NULL;
	fprintf(f, "identity: rc %d %s error %s\n", rc, text ? text : "-", rc ? tether_error_last() : "-");
	free(text);
	json_decref(identity);
	json_decref(loc);
	fclose(f);
	return out;
}

/* Where a locator leads: verify and list_pins for each path, with the
 * dataset at `dataset_root`. */
static char *place_answers(const struct tether_backend *b, const char *const *paths, const char *dataset_root,
                           const char *sha)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct tether_bctx c = ctx;

	c.dataset_root = dataset_root;
	for (size_t i = 0; paths[i]; i++) {
		json_t *loc = locator_for(paths[i], NULL), *state = json_pack("{s:s}", "sha", sha);
		json_t *ref = json_pack("{s:s}", "tag", "tether.lw-loose"), *pins = NULL;
		int ok = -1;
		char *detail = NULL;
		tether_error_clear();
		int rc = b->verify(&c, loc, state, ref, &ok, &detail);
		fprintf(f, "%s: verify rc %d ok %d detail %s error %s\n", paths[i], rc, ok, detail ? detail : "-",
		        rc ? tether_error_last() : "-");
		tether_error_clear();
		rc = b->list_pins(&c, loc, &pins);
		fprintf(f, "%s: list_pins rc %d n %zu error %s\n", paths[i], rc, json_array_size(pins),
		        rc ? tether_error_last() : "-");
		free(detail);
		json_decref(pins);
		json_decref(loc);
		json_decref(state);
		json_decref(ref);
	}
	fclose(f);
	return out;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char templ[PATH_MAX], real[PATH_MAX], modpath[PATH_MAX];
	char c1[41], c2[41], c3[41], c4[41], tree[41], gone[41];

	if (argc != 2) {
		fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
		return 2;
	}
	snprintf(templ, sizeof templ, "%s/tether-gitbe-front-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(templ) || !realpath(templ, real) || strlen(real) >= sizeof scratch - 64)
		return 2;
	strcpy(scratch, real);
	setenv("HOME", scratch, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CEILING_DIRECTORIES", scratch, 1);
	setenv("TETHER_MODULE_PATH", argv[1], 1);
	snprintf(code, sizeof code, "%s/code", scratch);
	snprintf(dataset, sizeof dataset, "%s/dataset", scratch);
	MUST("mkdir '%s'", dataset);
	ctx.dataset_root = dataset;
	ctx.dataset_id = "0123456789abcdef0123456789abcdef";
	ctx.threads = 1;

	/* c1..c4; packed tags first, then loose ones beside them. */
	MUST("git init -q '%s' && cd '%s' && git config user.name a && git config user.email a@b && "
	     "for i in 1 2 3 4; do git commit -q --allow-empty -m c$i; git tag c$i; done", code, code);
	rev("c1", c1), rev("c2", c2), rev("c3", c3), rev("c4", c4), rev("c1^{tree}", tree);
	MUST("cd '%s' && git tag tether.lw-packed c1 && git tag -a -m a tether.an-packed c2 && "
	     "git tag -a -m a tether.moved-packed c3 && git pack-refs --all && "
	     "git tag tether.lw-loose c1 && git tag -a -m a tether.an-loose c2 && "
	     "git tag -a -m nested tether.an-of-an tether.an-loose && git tag tether.moved c3 && "
	     "git symbolic-ref refs/tags/tether.sym refs/tags/tether.lw-loose && "
	     "git tag tether.lw-packed-shadow c1 && git pack-refs --all && git tag -f tether.lw-packed-shadow c4 >/dev/null",
	     code);
	/* a commit that existed once: made, then dropped and pruned */
	MUST("cd '%s' && git commit -q --allow-empty -m doomed && git rev-parse HEAD > '%s/gone' && "
	     "git reset -q --hard c4 && git reflog expire --expire=now --all && git gc -q --prune=now && "
	     "git tag tether.lw-after-gc c4",
	     code, scratch);
	FILE *g = fopen(strcat(strcpy(templ, scratch), "/gone"), "r");
	if (!g || !fgets(gone, sizeof gone, g))
		return 2;
	fclose(g);

	const struct item native[] = {
		{"tether.lw-loose", ""},  {"tether.lw-packed", ""}, {"tether.an-loose", ""},
		{"tether.an-packed", ""}, {"tether.an-of-an", ""},  {"tether.sym", ""},
		{"tether.moved", ""},     {"tether.moved-packed", ""}, {"tether.absent", ""},
		{"tether.lw-packed-shadow", ""}, {"tether.lw-after-gc", ""}, {NULL, ""},
		{NULL, ""},
	};
	size_t nn = sizeof native / sizeof *native;
	struct item q[MAX_ITEMS];
	memcpy(q, native, sizeof native);
	const char *shas[] = {c1, c1, c2, c2, c2, c1, c4, c4, c1, c4, c4, c3, gone};
	for (size_t i = 0; i < nn; i++)
		strcpy(q[i].sha, shas[i]);

	const struct tether_backend *front = tether_backend_find("git");
	CHECK(front != NULL);
	if (!front)
		CHECK_DONE();
	char *front_native = answers(front, q, nn, NULL);
	/* A remote name plainly valid is judged here too. */
	char *front_remote = answers(front, q, 2, "origin-2");
	CHECK(!libgit2_mapped());

	/* Cases only libgit2 answers. */
	MUST("cd '%s' && git tag tether.tree c1^{tree} && "
	     "git symbolic-ref refs/tags/tether.dangling refs/tags/nothing-here && "
	     "echo 1234567890123456789012345678901234567890 > .git/refs/tags/tether.nowhere",
	     code);
	struct item hard[] = {{"tether.tree", ""}, {"tether.dangling", ""}, {"tether.nowhere", ""},
	                      {"tether.lw-loose", ""}};
	strcpy(hard[0].sha, tree), strcpy(hard[1].sha, c1), strcpy(hard[2].sha, c1), strcpy(hard[3].sha, c1);
	char *front_hard = answers(front, hard, 4, NULL);
	char *front_dotted = answers(front, q, 2, "my.remote");

	snprintf(modpath, sizeof modpath, "%s/tether-gitbe-libgit2.so", argv[1]);
	void *h = dlopen(modpath, RTLD_NOW | RTLD_LOCAL);
	const struct tether_backend *const *full = h ? dlsym(h, "tether_gitbe_libgit2") : NULL;
	CHECK(full && *full);
	if (!full || !*full)
		CHECK_DONE();
	CHECK((*full)->caps == front->caps);
	CHECK_STR((*full)->summary, front->summary);
	/* The libgit2 answers, on the repository as the native ones saw it. */
	MUST("cd '%s' && git tag -d tether.tree tether.nowhere >/dev/null && git symbolic-ref -d refs/tags/tether.dangling",
	     code);
	char *full_native = answers(*full, q, nn, NULL);
	char *full_remote = answers(*full, q, 2, "origin-2");
	MUST("cd '%s' && git tag tether.tree c1^{tree} && "
	     "git symbolic-ref refs/tags/tether.dangling refs/tags/nothing-here && "
	     "echo 1234567890123456789012345678901234567890 > .git/refs/tags/tether.nowhere",
	     code);
	char *full_hard = answers(*full, hard, 4, NULL);
	char *full_dotted = answers(*full, q, 2, "my.remote");
	/* Places: through a link, /proc, a directory inside a checkout, a
	 * path that is not there, a repository inside another one, and the
	 * dataset's checkout around the repository (the libgit2 module's
	 * cache of checked repositories must not skip that check for another
	 * dataset). */
	char link[1300], proc[1300], sub[1300], missing[1300], inner[1300], inside[1300];
	snprintf(link, sizeof link, "%s/link", scratch);
	snprintf(proc, sizeof proc, "/proc/self");
	snprintf(sub, sizeof sub, "%s/sub", code);
	snprintf(missing, sizeof missing, "%s/missing", scratch);
	snprintf(inner, sizeof inner, "%s/outer/inner", scratch);
	snprintf(inside, sizeof inside, "%s/ds", code);
	MUST("cd '%s' && ln -s code link && mkdir code/sub code/ds && git init -q outer && cd outer && "
	     "git init -q inner && git -C inner -c user.name=a -c user.email=a@b commit -q --allow-empty -m i && git -C inner tag tether.lw-loose",
	     scratch);
	if (chdir(scratch) != 0)
		return 2;
	char cwdcode[1300];
	snprintf(cwdcode, sizeof cwdcode, "/proc/self/cwd/code");
	const char *places[] = {link, proc, cwdcode, sub, missing, inner, NULL};
	char *front_places = place_answers(front, places, dataset, c1);
	char *full_places = place_answers(*full, places, dataset, c1);
	CHECK_STR(front_places, full_places);
	CHECK(strstr(front_places, "under /proc: refused") && strstr(front_places, "is not a git repository"));
	const char *own[] = {code, NULL};
	char *front_inside = place_answers(front, own, inside, c1);
	char *full_inside = place_answers(*full, own, inside, c1);
	CHECK_STR(front_inside, full_inside);
	CHECK(strstr(front_inside, "a git object must live outside the dataset's own checkout"));
	free(front_places), free(full_places), free(front_inside), free(full_inside);

	CHECK_STR(front_native, full_native);
	CHECK_STR(front_remote, full_remote);
	CHECK_STR(front_hard, full_hard);
	CHECK_STR(front_dotted, full_dotted);
	/* and the answers say what git says */
	CHECK(strstr(front_native, "verify tether.lw-loose") && strstr(front_native, "  0: ok 1 detail -"));
	CHECK(strstr(front_native, "verify tether.an-of-an") && !strstr(front_native, "tether.an-of-an in git"));
	CHECK(strstr(front_native, "tag tether.moved in git repository") && strstr(front_native, "moved: it names"));
	CHECK(strstr(front_native, "tag tether.absent is missing from git repository"));
	CHECK(strstr(front_native, "is gone from git repository"));
	free(front_native), free(full_native), free(front_remote), free(full_remote);
	free(front_hard), free(full_hard), free(front_dotted), free(full_dotted);
	sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
