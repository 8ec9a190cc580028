#include "core/journal.h"

#include "util/fsutil.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void tt_fault_point(const char *op, const char *step)
{
	const char *want = getenv("TETHER_FAULT");
	if (!want || !*want)
		return;
	size_t ol = strlen(op);
	if (strncmp(want, op, ol) == 0 && want[ol] == ':' && strcmp(want + ol + 1, step) == 0)
		kill(getpid(), SIGKILL);
}

/* In the directory every checkout of the repository shares, per dataset:
 * gc in any checkout must keep the pins a commit that died in another
 * one named. Falls back to the checkout's .tether/journal when there is
 * no VCS to share. */
static char *journal_dir(struct tether_repo *repo)
{
	if (tt_repo_vcs(repo) != 0 || !repo->common_dir) {
		tether_error_clear();
		return tt_path_join(repo->tether_dir, "journal");
	}
	return tt_strdupf("%s/tether/journal/%s", repo->common_dir, repo->id);
}

static int write_entry(struct tt_journal *j)
{
	char *text = json_dumps(j->entry, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text)
		return tether_error_set(TETHER_ERROR, "cannot encode the journal entry");
	int rc = tt_write_file_atomic(j->path, text, strlen(text));
	free(text);
	return rc;
}

static void now_iso(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int tt_journal_begin(struct tether_repo *repo, const char *op, const char *message, json_t *pins,
                     struct tt_journal *j)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *dir = journal_dir(repo);
	j->path = tt_strdupf("%s/%019lld-%ld.json", dir, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec,
	                     (long)getpid());
	free(dir);
	char started[32];
	now_iso(started);
	j->entry = json_pack("{s:s, s:s, s:s, s:s?, s:O, s:n}", "op", op, "status", "INCOMPLETE", "started", started,
	                     "message", message, "pins", pins, "commit");
	return write_entry(j);
}

int tt_journal_end(struct tt_journal *j, const char *status, const char *commit)
{
	if (!j->entry)
		return 0;
	json_object_set_new(j->entry, "status", json_string(status));
	json_object_set_new(j->entry, "commit", commit && *commit ? json_string(commit) : json_null());
	return write_entry(j);
}

void tt_journal_free(struct tt_journal *j)
{
	free(j->path);
	json_decref(j->entry);
	j->path = NULL;
	j->entry = NULL;
}

static int by_id(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "id"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "id"));
	return strcmp(x, y);
}

int tt_journal_list(struct tether_repo *repo, json_t **entries)
{
	*entries = json_array();
	char *dir = journal_dir(repo);
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		char *path = tt_path_join(dir, e->d_name);
		json_t *entry = json_load_file(path, 0, NULL);
		free(path);
		if (!json_is_object(entry)) {
			json_decref(entry);
			continue; /* a torn write of our own: the atomic rename never happened */
		}
		json_object_set_new(entry, "id", json_stringn(e->d_name, n - 5));
		json_array_append_new(*entries, entry);
	}
	closedir(d);
	free(dir);
	size_t count = json_array_size(*entries);
	json_t **v = calloc(count + 1, sizeof *v);
	for (size_t i = 0; i < count; i++)
		v[i] = json_incref(json_array_get(*entries, i));
	qsort(v, count, sizeof *v, by_id);
	json_array_clear(*entries);
	for (size_t i = 0; i < count; i++)
		json_array_append_new(*entries, v[i]);
	free(v);
	return 0;
}

int tt_journal_close_finished(struct tether_repo *repo, const char *commit)
{
	json_t *entries;
	int rc = tt_journal_list(repo, &entries);
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e) {
		if (rc)
			break;
		const char *status = json_string_value(json_object_get(e, "status"));
		if (!status || strcmp(status, "INCOMPLETE") != 0)
			continue;
		/* Only a dead process's entry: a live one may still be working. */
		const char *id = json_string_value(json_object_get(e, "id"));
		const char *dash = strrchr(id, '-');
		long pid = dash ? atol(dash + 1) : 0;
		if (pid > 0 && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0))
			continue;
		char *dir = journal_dir(repo);
		struct tt_journal j = {tt_strdupf("%s/%s.json", dir, id), json_incref(e)};
		free(dir);
		json_object_del(j.entry, "id");
		json_object_set_new(j.entry, "finished_by", commit && *commit ? json_string(commit) : json_null());
		rc = tt_journal_end(&j, "COMPLETE", commit);
		tt_journal_free(&j);
	}
	json_decref(entries);
	return rc;
}

int tether_ops(tether_repo *repo, json_t **report)
{
	json_t *entries;
	int rc = tt_journal_list(repo, &entries);
	*report = rc ? NULL : json_pack("{s:o}", "ops", entries);
	return rc;
}
