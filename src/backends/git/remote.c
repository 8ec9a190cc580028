/* Where a pin is pushed: a configured remote's push URL, or the URL from
 * .tether/secrets.toml, rewritten by url.<base>.insteadOf and
 * pushInsteadOf as git would.
 *
 * The rewriting is done here rather than by git_remote_lookup: libgit2 1.5
 * matches those keys through a regex iterator that leaks one pcre2 match
 * block per configuration entry (fixed upstream in libgit2 1.6, PR #6382).
 * So remotes are made in memory from their URL, with libgit2's own
 * rewriting switched off. Nothing here runs a command: libgit2 has no ext::
 * transport and no credential helpers. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

#define URL_PREFIX "url."

/* The base of "url.<base>.<suffix>", when `name` has that shape. */
static int rewrite_base(const char *name, const char *suffix, const char **base, size_t *len)
{
	size_t n = strlen(name), pre = strlen(URL_PREFIX), suf = strlen(suffix);

	if (n <= pre + suf + 1 || strncmp(name, URL_PREFIX, pre) != 0 || name[n - suf - 1] != '.' ||
	    strcmp(name + n - suf, suffix) != 0)
		return 0;
	*base = name + pre;
	*len = n - pre - suf - 1;
	return 1;
}

/* The URL rewritten by the longest url.<base>.<suffix> whose value
 * prefixes it; NULL (no error) when none does. */
static int rewrite_url(git_config *cfg, const char *url, const char *suffix, char **out)
{
	git_config_iterator *it = NULL;
	git_config_entry *entry;
	size_t best = 0;
	int rc = git_config_iterator_new(&it, cfg);

	*out = NULL;
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the git configuration");
	while (rc == 0 && git_config_next(&entry, it) == 0) {
		const char *base;
		size_t base_len, n = strlen(entry->value ? entry->value : "");

		if (!rewrite_base(entry->name, suffix, &base, &base_len) || n <= best ||
		    strncmp(url, entry->value, n) != 0)
			continue;
		free(*out);
		best = n;
		if (!(*out = gb_strdupf("%.*s%s", (int)base_len, base, url + n)))
			rc = gb_fail_oom();
	}
	git_config_iterator_free(it);
	return rc;
}

/* pushInsteadOf first, then insteadOf, for a URL that is not an explicit
 * pushurl; an explicit pushurl takes insteadOf only. */
static int push_url_of(git_config *cfg, const char *url, int explicit_push, char **out)
{
	int rc = explicit_push ? 0 : rewrite_url(cfg, url, "pushinsteadof", out);

	if (rc == 0 && !*out)
		rc = rewrite_url(cfg, url, "insteadof", out);
	if (rc == 0 && !*out && !(*out = strdup(url)))
		rc = gb_fail_oom();
	return rc;
}

static int config_string(git_config *cfg, const char *key, char **out)
{
	git_buf buf = GIT_BUF_INIT;
	int rc = git_config_get_string_buf(&buf, cfg, key);

	*out = NULL;
	if (rc == GIT_ENOTFOUND)
		return 0;
	if (rc < 0)
		return tt_git_fail(rc, "cannot read %s from the git configuration", key);
	*out = strdup(buf.ptr);
	git_buf_dispose(&buf);
	return *out ? 0 : gb_fail_oom();
}

static int named_push_url(git_repository *repo, git_config *cfg, const char *name, char **out)
{
	char *key_url = gb_strdupf("remote.%s.url", name), *key_push = gb_strdupf("remote.%s.pushurl", name);
	char *url = NULL, *pushurl = NULL;
	int rc = key_url && key_push ? 0 : gb_fail_oom();

	*out = NULL;
	if (rc == 0)
		rc = config_string(cfg, key_push, &pushurl);
	if (rc == 0)
		rc = config_string(cfg, key_url, &url);
	if (rc == 0 && !url && !pushurl)
		rc = tether_error_set(TETHER_ENOTFOUND, "git repository %s has no remote named \"%s\"",
		                      git_repository_workdir(repo), name);
	if (rc == 0)
		rc = push_url_of(cfg, pushurl ? pushurl : url, pushurl != NULL, out);
	free(key_url);
	free(key_push);
	free(url);
	free(pushurl);
	return rc;
}

/* git's ext:: and fd:: transports run commands or use inherited file
 * descriptors. libgit2 has neither (it would read "ext::..." as an ssh
 * host); say so plainly instead of resolving a host called "ext". */
static int refuse_command_transport(git_repository *repo, const char *url, const char *which)
{
	if (strncmp(url, "ext::", 5) != 0 && strncmp(url, "fd::", 4) != 0)
		return 0;
	return tether_error_set(TETHER_EREFUSED, "git repository %s: the remote %s uses git's ext:: or fd:: "
	                        "transport, which runs commands; tether never uses it",
	                        git_repository_workdir(repo), which);
}

static int config_snapshot(git_repository *repo, git_config **cfg)
{
	int rc = git_repository_config_snapshot(cfg, repo);

	return rc < 0 ? tt_git_fail(rc, "cannot read the configuration of %s", git_repository_path(repo)) : 0;
}

/* Does the repository configure a remote called `name`? */
int gb_remote_exists(git_repository *repo, const char *name, int *exists)
{
	git_config *cfg = NULL;
	char *url = NULL;
	int rc = config_snapshot(repo, &cfg);

	*exists = 0;
	if (rc == 0) {
		rc = named_push_url(repo, cfg, name, &url);
		*exists = rc == 0;
		if (rc == TETHER_ENOTFOUND)
			rc = 0;
	}
	/* Refused when the object is added, not first when it is pinned. */
	if (rc == 0 && url)
		rc = refuse_command_transport(repo, url, name);
	free(url);
	git_config_free(cfg);
	return rc;
}

/* An in-memory remote to push to: the URL given (a secret), else the
 * configured remote `name`. */
int gb_push_remote(git_repository *repo, const char *name, const char *url, git_remote **out)
{
	git_remote_create_options opts;
	git_config *cfg = NULL;
	char *push_url = NULL;
	int rc = config_snapshot(repo, &cfg);

	if (rc == 0)
		rc = url ? push_url_of(cfg, url, 0, &push_url) : named_push_url(repo, cfg, name, &push_url);
	if (rc == 0)
		rc = refuse_command_transport(repo, push_url, url ? "in .tether/secrets.toml" : name);
	if (rc == 0) {
		git_remote_create_options_init(&opts, GIT_REMOTE_CREATE_OPTIONS_VERSION);
		opts.repository = repo;
		opts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
		if ((rc = git_remote_create_with_opts(out, push_url, &opts)) < 0)
			rc = tt_git_fail(rc, "git repository %s: the remote %s is not usable", git_repository_workdir(repo),
			                 url ? "in .tether/secrets.toml" : name);
	}
	free(push_url);
	git_config_free(cfg);
	return rc;
}
