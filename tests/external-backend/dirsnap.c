/* dirsnap: a complete, small, Forkable tether backend, built out of tree.
 *
 * A store is a directory. Each branch is one file, <store>/branches/<name>,
 * and its state is the SHA-256 of the file's bytes. A pin is a copy of the
 * branch file, <store>/.pins/tether.<pin id>; a fork copies a pin (or the
 * branch itself, for a state recorded without a pin) to a new branch file.
 *
 * Every ref is written to a temporary file and renamed into place, so it
 * appears whole or not at all (ATOMIC_REF), and forks compare the branch
 * head the caller expected under an flock on <store>/.lock before they move
 * it (CONDITIONAL_REF).
 *
 *   cc -std=c17 -shared -fPIC dirsnap.c $(pkg-config --cflags tether) \
 *      -o tether-backend-dirsnap.so
 */
#define _DEFAULT_SOURCE /* realpath, flock */
#include <tether/backend.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- locators -------------------------------------------------------- */

static const char *store_of(const json_t *locator)
{
	return json_string_value(json_object_get(locator, "path"));
}

static const char *branch_of(const json_t *locator)
{
	const char *b = json_string_value(json_object_get(locator, "branch"));
	return b ? b : "main";
}

/* sync = "never": refs are renamed into place without an fsync first. */
static int sync_of(const json_t *locator)
{
	const char *s = json_string_value(json_object_get(locator, "sync"));
	return !s || strcmp(s, "never") != 0;
}

/* A branch or pin name becomes a file name: no '/', no leading '.'. */
static int name_ok(const char *name)
{
	return name && *name && name[0] != '.' && !strchr(name, '/') && strlen(name) < 200;
}

/* <store>/<rel>, or <store>/<rel>/<name> when name is given. */
static int store_path(char out[PATH_MAX], const json_t *locator, const char *rel, const char *name)
{
	const char *store = store_of(locator);
	if (!store)
		return tether_error_set(TETHER_ECONFIG, "dirsnap locator has no path");
	int n = snprintf(out, PATH_MAX, "%s/%s%s%s", store, rel, name ? "/" : "", name ? name : "");
	if (n < 0 || n >= PATH_MAX)
		return tether_error_set(TETHER_EUSAGE, "a path under %s is too long", store);
	return 0;
}

/* A branch file or a pin file: <store>/branches/<name>, <store>/.pins/<name>. */
static int path_in(char out[PATH_MAX], const json_t *locator, const char *dir, const char *name)
{
	if (!name_ok(name))
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a dirsnap branch or pin name", name ? name : "");
	return store_path(out, locator, dir, name);
}

static int ds_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                           const char *cwd, json_t **locator)
{
	(void)ctx;
	/* Options first: an unknown one is a usage error whatever the URI.
	 * (tether has checked --sync's value against ds_add_options already;
	 * --option NAME=VALUE reaches here unchecked.) */
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)options, key, value) {
		if ((strcmp(key, "branch") != 0 && strcmp(key, "sync") != 0) || !json_is_string(value))
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind dirsnap", key);
	}
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind dirsnap needs a store directory");
	/* Locators are committed and read from anywhere: store them absolute. */
	int relative = uri[0] != '/';
	char joined[PATH_MAX], real[PATH_MAX], probe[PATH_MAX + 16];
	int n = snprintf(joined, sizeof joined, "%s%s%s", relative && cwd ? cwd : "", relative ? "/" : "", uri);
	if (n < 0 || n >= PATH_MAX || !realpath(joined, real))
		return tether_error_set(TETHER_ENOTFOUND, "%s: %s", uri, n >= PATH_MAX ? "too long" : strerror(errno));
	snprintf(probe, sizeof probe, "%s/branches", real);
	if (access(probe, F_OK) != 0)
		return tether_error_set(TETHER_ENOTFOUND, "%s is not a dirsnap store (no branches/)", uri);
	const char *branch = json_string_value(json_object_get(options, "branch"));
	if (branch && !name_ok(branch))
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a dirsnap branch name", branch);
	*locator = json_pack("{s:s, s:s}", "path", real, "branch", branch ? branch : "main");
	const char *sync = json_string_value(json_object_get(options, "sync"));
	if (sync)
		json_object_set_new(*locator, "sync", json_string(sync));
	return 0;
}

/* The store names the system; the branch is only where the object reads. */
static int ds_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	if (!store_of(locator))
		return tether_error_set(TETHER_ECONFIG, "dirsnap locator has no path");
	*identity = json_pack("{s:s}", "path", store_of(locator));
	return 0;
}

/* ---- files ------------------------------------------------------------ */

/* The SHA-256 of a file; TETHER_ENOTFOUND when it does not exist. */
static int file_sha(const char *path, char hex[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tether_error_set(errno == ENOENT ? TETHER_ENOTFOUND : TETHER_EIO, "%s: %s", path, strerror(errno));
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int ok = fstat(fd, &st) == 0 && (data = malloc((size_t)st.st_size + 1)) != NULL;
	while (ok && len < (size_t)st.st_size) {
		ssize_t n = read(fd, data + len, (size_t)st.st_size - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || errno != EINTR)
			ok = 0; /* truncated under us, or unreadable */
	}
	close(fd);
	if (ok)
		tether_sha256_hex(data, len, hex);
	free(data);
	return ok ? 0 : tether_error_set(TETHER_EIO, "cannot read %s", path);
}

/* Copy `from` to `to` through a temporary file in to's directory, so the
 * ref appears whole or not at all (and, with sync, is on disk first). */
static int copy_atomic(const char *from, const char *to, int sync)
{
	char tmp[PATH_MAX + 32];
	const char *slash = strrchr(to, '/');
	int len = snprintf(tmp, sizeof tmp, "%.*s/.tmp.%ld.%s", (int)(slash - to), to, (long)getpid(), slash + 1);
	if (len < 0 || (size_t)len >= sizeof tmp)
		return tether_error_set(TETHER_EUSAGE, "%s: path too long", to);
	FILE *in = fopen(from, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
	char buf[8192];
	size_t n;
	int ok = in && out;
	while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
		ok = fwrite(buf, 1, n, out) == n;
	ok = ok && !ferror(in);
	if (in)
		fclose(in);
	if (out && (fflush(out) != 0 || (sync && fsync(fileno(out)) != 0) || fclose(out) != 0))
		ok = 0;
	if (ok && rename(tmp, to) == 0)
		return 0;
	int err = errno;
	unlink(tmp);
	return tether_error_set(TETHER_EIO, "cannot copy %s to %s: %s", from, to, strerror(err));
}

/* The store's lock, held while a ref is compared and moved. */
static int lock_store(const json_t *locator, int *fd)
{
	char path[PATH_MAX];
	*fd = -1;
	int rc = store_path(path, locator, ".lock", NULL);
	if (rc)
		return rc;
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0 || flock(*fd, LOCK_EX) != 0) {
		int err = errno;
		if (*fd >= 0)
			close(*fd);
		return tether_error_set(TETHER_EIO, "cannot lock %s: %s", path, strerror(err));
	}
	return 0;
}

static const char *sha_of(const json_t *state)
{
	return json_string_value(json_object_get(state, "sha256"));
}

/* ---- state ------------------------------------------------------------ */

static int ds_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)ctx;
	(void)policy;
	memset(out, 0, sizeof *out);
	char path[PATH_MAX], hex[65];
	struct stat st;
	int rc = path_in(path, locator, "branches", branch_of(locator));
	if (!rc)
		rc = file_sha(path, hex);
	if (!rc && stat(path, &st) != 0)
		rc = tether_error_set(TETHER_EIO, "%s: %s", path, strerror(errno));
	if (!rc)
		out->state = json_pack("{s:s, s:I}", "sha256", hex, "mtime", (json_int_t)st.st_mtime);
	return rc;
}

/* "mtime" moves when a file is touched without changing: it is noted, but
 * two states that differ only there are one state, and pin as one. */
static const char *const ds_volatile_keys[] = {"mtime", NULL};

/* ---- pins ------------------------------------------------------------- */

static json_t *pin_ref_for(const char *pin_id)
{
	return json_pack("{s:s+, s:s}", "file", "tether.", pin_id, "pin", pin_id);
}

static int ds_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
                  json_t **pin_ref, int *created)
{
	(void)ctx;
	*created = 0;
	char name[256], pin[PATH_MAX], head[PATH_MAX], have[65];
	int fd, n = snprintf(name, sizeof name, "tether.%s", pin_id);
	int rc = n > 0 && (size_t)n < sizeof name ? path_in(pin, locator, ".pins", name)
	                                          : tether_error_set(TETHER_EUSAGE, "pin id too long");
	if (!rc)
		rc = path_in(head, locator, "branches", branch_of(locator));
	if (!rc && !sha_of(state))
		rc = tether_error_set(TETHER_ECONFIG, "dirsnap state has no sha256");
	if (rc || (rc = lock_store(locator, &fd)))
		return rc;
	if (file_sha(pin, have) == 0) {
		/* Pinned before: the same state is the same pin; another is refused. */
		if (strcmp(have, sha_of(state)) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "%s already holds another state", name);
	} else if (file_sha(head, have) != 0 || strcmp(have, sha_of(state)) != 0) {
		rc = tether_error_set(TETHER_ENOTFOUND, "branch %s no longer holds state %.12s", branch_of(locator),
		                      sha_of(state));
	} else {
		char dir[PATH_MAX];
		rc = store_path(dir, locator, ".pins", NULL);
		if (!rc && mkdir(dir, 0755) != 0 && errno != EEXIST)
			rc = tether_error_set(TETHER_EIO, "%s: %s", dir, strerror(errno));
		if (!rc)
			rc = copy_atomic(head, pin, sync_of(locator));
		*created = rc == 0;
	}
	close(fd);
	if (!rc) {
		tether_error_clear(); /* the probes above may have left a message */
		*pin_ref = pin_ref_for(pin_id);
	}
	return rc;
}

static int ds_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	(void)ctx;
	char pin[PATH_MAX];
	int rc = path_in(pin, locator, ".pins", json_string_value(json_object_get(pin_ref, "file")));
	if (!rc && unlink(pin) != 0 && errno != ENOENT)
		rc = tether_error_set(TETHER_EIO, "%s: %s", pin, strerror(errno));
	return rc;
}

static int ds_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	(void)ctx;
	char dir[PATH_MAX];
	int rc = store_path(dir, locator, ".pins", NULL);
	if (rc)
		return rc;
	*pin_refs = json_array();
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : tether_error_set(TETHER_EIO, "%s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, "tether.", 7) == 0)
			json_array_append_new(*pin_refs, pin_ref_for(e->d_name + 7));
	closedir(d);
	return 0;
}

static int ds_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                     int *ok, char **detail)
{
	(void)ctx;
	char path[PATH_MAX], have[65], why[512];
	const char *held_by = pin_ref ? json_string_value(json_object_get(pin_ref, "file")) : branch_of(locator);
	int rc = path_in(path, locator, pin_ref ? ".pins" : "branches", held_by);
	if (rc)
		return rc;
	rc = file_sha(path, have);
	if (rc && rc != TETHER_ENOTFOUND)
		return rc;
	*ok = rc == 0 && sha_of(state) && strcmp(have, sha_of(state)) == 0;
	*detail = NULL;
	if (!*ok) {
		snprintf(why, sizeof why, "%s %s %s", pin_ref ? "pin" : "branch", held_by,
		         rc ? "is missing" : "holds another state");
		*detail = strdup(why);
	}
	tether_error_clear();
	return 0;
}

/* ---- forks ------------------------------------------------------------ */

static int ds_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   const char *branch, const json_t *expect, json_t **working_ref)
{
	(void)ctx;
	char from[PATH_MAX], to[PATH_MAX], have[65], head[65];
	/* From the pin, or, for a state recorded without one, from the base
	 * while it still holds that state. */
	int fd, rc = pin_ref ? path_in(from, locator, ".pins", json_string_value(json_object_get(pin_ref, "file")))
	                     : path_in(from, locator, "branches", branch_of(locator));
	if (!rc)
		rc = path_in(to, locator, "branches", branch);
	if (!rc && strcmp(branch, branch_of(locator)) == 0)
		rc = tether_error_set(TETHER_EREFUSED, "cannot fork onto the base branch %s", branch);
	if (rc || (rc = lock_store(locator, &fd)))
		return rc;
	if (file_sha(from, have) != 0 || !sha_of(state) || strcmp(have, sha_of(state)) != 0) {
		rc = tether_error_set(TETHER_ENOTFOUND, "cannot fork: the recorded state is no longer held");
	} else if (expect) {
		/* A state is the head the caller saw; JSON null says the branch
		 * must not exist yet. */
		const char *want = sha_of(expect);
		int exists = file_sha(to, head) == 0;
		if (exists != (want != NULL) || (want && strcmp(want, head) != 0))
			rc = tether_error_set(TETHER_EREFUSED, "branch %s moved: expected %.12s, found %.12s", branch,
			                      want ? want : "absent", exists ? head : "absent");
	}
	if (!rc)
		rc = copy_atomic(from, to, sync_of(locator));
	close(fd);
	if (!rc)
		*working_ref = json_pack("{s:s}", "branch", branch);
	return rc;
}

static int ds_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	(void)ctx;
	const char *branch = json_string_value(json_object_get(working_ref, "branch"));
	char path[PATH_MAX];
	int rc = path_in(path, locator, "branches", branch);
	if (!rc && strcmp(branch, branch_of(locator)) == 0)
		rc = tether_error_set(TETHER_EREFUSED, "%s is the base branch, not a working ref", branch);
	if (!rc && unlink(path) != 0 && errno != ENOENT)
		rc = tether_error_set(TETHER_EIO, "%s: %s", path, strerror(errno));
	return rc;
}

/* A handle is what a program opens: here, the file to read or write. */
static int ds_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   const json_t *working_ref, int read_only, json_t **handle)
{
	(void)ctx;
	char path[PATH_MAX];
	int rc;
	if (read_only && pin_ref)
		rc = path_in(path, locator, ".pins", json_string_value(json_object_get(pin_ref, "file")));
	else if (!read_only && working_ref)
		rc = path_in(path, locator, "branches", json_string_value(json_object_get(working_ref, "branch")));
	else
		rc = path_in(path, locator, "branches", branch_of(locator));
	if (rc)
		return rc;
	*handle = json_pack("{s:s, s:s, s:s?, s:b}", "kind", "dirsnap", "path", path, "sha256", sha_of(state),
	                    "read_only", read_only);
	return 0;
}

/* ---- the module -------------------------------------------------------- */

/* `tether add --kind dirsnap --branch NAME --sync always|never`: tether
 * lists these in `tether add --help`, parses them, refuses a --sync that is
 * neither, and hands both to ds_make_locator. */
static const char *const ds_sync_choices[] = {"always", "never", NULL};
static const struct tether_add_option ds_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the branch file to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "sync", .value_name = "WHEN",
	 .help = "fsync a ref before renaming it into place", .choices = ds_sync_choices,
	 .default_value = "always", .field = TETHER_ADD_LOCATOR},
	{0},
};

static const struct tether_backend dirsnap_backend = {
	TETHER_BACKEND_INIT,
	.kind = "dirsnap",
	.maturity = "experimental",
	.summary = "example: a directory of branch files, pinned and forked by copying",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_CHEAP_FINGERPRINT | TETHER_CAP_ATOMIC_REF | TETHER_CAP_CONDITIONAL_REF,
	.volatile_keys = ds_volatile_keys,
	.make_locator = ds_make_locator,
	.identity = ds_identity,
	.fingerprint = ds_fingerprint,
	.pin = ds_pin,
	.unpin = ds_unpin,
	.list_pins = ds_list_pins,
	.verify = ds_verify,
	.fork = ds_fork,
	.delete_working_ref = ds_delete_working_ref,
	.open = ds_open,
	.add_options = ds_add_options,
};

/* What tether looks up after loading tether-backend-dirsnap.so. */
TETHER_API tether_backend_module_t tether_backend_module = {&dirsnap_backend, NULL};
