#include "core/workspace.h"

#include "core/validate.h"
#include "format/toml.h"
#include "util/fsutil.h"
#include "util/safefs.h"
#include "util/hash.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *workspace_path(const struct tether_repo *repo)
{
	return tt_path_join(repo->tether_dir, "workspace.toml");
}

static int new_workspace_id(char out[9])
{
	unsigned char b[4];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	int ok = fd >= 0 && read(fd, b, sizeof b) == (ssize_t)sizeof b;
	if (fd >= 0)
		close(fd);
	if (!ok)
		return tether_error_set(TETHER_EIO, "cannot read /dev/urandom");
	tt_hex(b, sizeof b, out);
	return 0;
}

/* Each entry of [working] is named by an object key. */
static int check_working_keys(const char *path, const json_t *working)
{
	const char *key;
	json_t *entry;
	json_object_foreach((json_t *)working, key, entry) {
		if (tt_key_check(key) != 0)
			return tether_error_set(TETHER_ECONFIG, "%s: [working.\"%s\"] is not named by a valid object key",
			                        path, key);
		if (!json_is_object(entry))
			return tether_error_set(TETHER_ECONFIG, "%s: [working.\"%s\"] must be a table", path, key);
	}
	return 0;
}

int tt_workspace_load(struct tether_repo *repo, json_t **ws)
{
	*ws = NULL;
	char *path = workspace_path(repo);
	char *data;
	size_t len;
	int rc = tt_safe_read(repo->root, path, &data, &len);
	if (rc == TETHER_ENOTFOUND) {
		/* The id is drawn when the workspace is first saved. */
		tether_error_clear();
		*ws = json_pack("{s:{}}", "working");
		rc = 0;
	} else if (!rc) {
		char err[512];
		*ws = tt_toml_parse(data, len, path, err, sizeof err);
		free(data);
		if (!*ws)
			rc = tether_error_set(TETHER_ECONFIG, "%s", err);
		else if (!json_is_string(json_object_get(*ws, "workspace_id")) ||
		         (json_object_get(*ws, "working") && !json_is_object(json_object_get(*ws, "working"))))
			rc = tether_error_set(TETHER_ECONFIG, "%s: needs workspace_id and a [working] table", path);
		else if (!json_object_get(*ws, "working"))
			json_object_set_new(*ws, "working", json_object());
		else
			rc = check_working_keys(path, json_object_get(*ws, "working"));
		if (!rc)
			rc = tt_strings_check(*ws, path);
		if (rc) {
			json_decref(*ws);
			*ws = NULL;
		}
	}
	free(path);
	return rc;
}

int tt_workspace_save(struct tether_repo *repo, json_t *ws)
{
	if (!json_object_get(ws, "workspace_id")) {
		char id[9];
		int rc = new_workspace_id(id);
		if (rc)
			return rc;
		json_object_set_new(ws, "workspace_id", json_string(id));
	}
	char err[256];
	char *text = tt_toml_write(ws, err, sizeof err);
	if (!text)
		return tether_error_set(TETHER_ERROR, "workspace.toml: %s", err);
	char *path = workspace_path(repo);
	int rc = tt_safe_write_atomic(repo->root, path, text, strlen(text));
	free(path);
	free(text);
	return rc;
}

int tt_workspace_text(struct tether_repo *repo, char **text)
{
	char *path = workspace_path(repo);
	size_t len;
	int rc = tt_safe_read(repo->root, path, text, &len);
	free(path);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		*text = NULL;
		rc = 0;
	}
	return rc;
}

int tt_workspace_restore(struct tether_repo *repo, const char *text)
{
	char *path = workspace_path(repo);
	int rc = text ? tt_safe_write_atomic(repo->root, path, text, strlen(text)) : tt_safe_remove(repo->root, path);
	free(path);
	return rc;
}

json_t *tt_workspace_entry(const json_t *ws, const char *key)
{
	return json_object_get(json_object_get(ws, "working"), key);
}

json_t *tt_locator_at(const json_t *locator, const json_t *working_ref)
{
	json_t *out = json_deep_copy(locator);
	if (json_is_object(working_ref))
		json_object_update(out, (json_t *)working_ref);
	return out;
}

char *tt_working_branch_name(const struct tether_repo *repo, const char *bookmark)
{
	char *name = tt_strdupf("tether.ws.%.8s.%s", repo->id, bookmark);
	/* Keep to what every system's branch names accept. */
	for (char *p = name + 10; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '-' || *p == '_'))
			*p = '-';
	return name;
}

void tt_workspace_set_position(json_t *ws, const char *bookmark, const char *head)
{
	json_object_set_new(ws, "bookmark", json_string(bookmark));
	if (head && *head)
		json_object_set_new(ws, "head", json_string(head));
	else
		json_object_del(ws, "head");
}
