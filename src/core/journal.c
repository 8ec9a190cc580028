#include "core/journal.h"

#include "core/validate.h"
#include "format/cjson.h"
#include "util/jsonsort.h"
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
	size_t ol = strlen(op), sl = strlen(step);
	if (strncmp(want, op, ol) != 0 || want[ol] != ':' || strncmp(want + ol + 1, step, sl) != 0)
		return;
	const char *rest = want + ol + 1 + sl;
	if (!*rest)
		kill(getpid(), SIGKILL);
	else if (strcmp(rest, ":stop") == 0)
		kill(getpid(), SIGSTOP); /* a test moves something meanwhile, then sends SIGCONT */
}

/* In the directory every checkout of the repository shares, per dataset:
 * gc in any checkout must keep the pins a commit that died in another
 * one named. Never anywhere else: a VCS that cannot be opened (or is
 * refused: a shared directory that is committed content) is an error, not
 * a reason to read .tether/journal, which in a clone is whatever was
 * committed there, and whose entries name stores and locators gc visits.
 *
 * Open entries (INCOMPLETE: running, or left by a process that died) sit
 * in that directory; a closed one (COMPLETE, ABORTED) is written to its
 * closed/ subdirectory and then removed from the top. So gc, which needs
 * only the open ones, reads a handful of files however long the history,
 * and an entry is never in closed/ before its closed text is there: a
 * crash between the write and the removal leaves both copies, and the
 * closed one wins. */
static int journal_dir(struct tether_repo *repo, char **dir)
{
	*dir = NULL;
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	if (!repo->common_dir)
		return tether_error_set(TETHER_ERROR, "the repository of %s has no shared directory for the journal",
		                        repo->root);
	*dir = tt_strdupf("%s/tether/journal/%s", repo->common_dir, repo->id);
	return 0;
}

#define CLOSED_DIR "closed"

static int is_incomplete_entry(const json_t *e)
{
	const char *status = json_string_value(json_object_get(e, "status"));
	return status && strcmp(status, "INCOMPLETE") == 0;
}

static int write_entry(const char *path, const json_t *entry)
{
	char *text = json_dumps(entry, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text)
		return tether_error_set(TETHER_ERROR, "cannot encode the journal entry");
	int rc = tt_write_file_atomic(path, text, strlen(text));
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
	return tt_journal_begin_with(repo, op, message, pins, NULL, j);
}

int tt_journal_begin_with(struct tether_repo *repo, const char *op, const char *message, json_t *pins,
                          const json_t *fields, struct tt_journal *j)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int rc = journal_dir(repo, &j->dir);
	if (rc)
		return rc;
	j->name = tt_strdupf("%019lld-%ld.json", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (long)getpid());
	char started[32];
	now_iso(started);
	j->entry = json_pack("{s:s, s:s, s:s, s:s?, s:O, s:n}", "op", op, "status", "INCOMPLETE", "started", started,
	                     "message", message, "pins", pins, "commit");
	if (fields)
		json_object_update_missing(j->entry, (json_t *)fields);
	char *path = tt_path_join(j->dir, j->name);
	rc = write_entry(path, j->entry);
	free(path);
	return rc;
}

int tt_journal_begin_op(struct tether_repo *repo, const char *op, json_t *fields, struct tt_journal *j)
{
	json_t *pins = json_array();
	int rc = tt_journal_begin(repo, op, NULL, pins, j);
	json_decref(pins);
	if (!rc && fields) {
		json_object_update(j->entry, fields);
		rc = tt_journal_update(j);
	}
	json_decref(fields);
	return rc;
}

/* Write the entry's closed text under closed/, then remove the open copy. */
static int close_entry(const char *dir, const char *name, const json_t *entry)
{
	char *closed = tt_strdupf("%s/" CLOSED_DIR "/%s", dir, name);
	char *open = tt_path_join(dir, name);
	int rc = write_entry(closed, entry);
	if (!rc)
		rc = tt_remove_if_exists(open);
	free(closed);
	free(open);
	return rc;
}

int tt_journal_update(struct tt_journal *j)
{
	if (!j->entry)
		return 0;
	char *path = tt_path_join(j->dir, j->name);
	int rc = write_entry(path, j->entry);
	free(path);
	return rc;
}

int tt_journal_close_dead(struct tether_repo *repo, const json_t *entry, const char *finished_by)
{
	return tt_journal_close_other(repo, entry, "COMPLETE",
	                              json_pack("{s:o}", "finished_by", finished_by ? json_string(finished_by) : json_null()));
}

int tt_journal_entry_dead(const json_t *entry)
{
	const char *id = json_string_value(json_object_get(entry, "id"));
	const char *dash = id ? strrchr(id, '-') : NULL;
	long pid = dash ? atol(dash + 1) : 0;
	return is_incomplete_entry(entry) && !(pid > 0 && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0));
}

int tt_journal_end(struct tt_journal *j, const char *status, const char *commit)
{
	if (!j->entry)
		return 0;
	json_object_set_new(j->entry, "status", json_string(status));
	json_object_set_new(j->entry, "commit", commit && *commit ? json_string(commit) : json_null());
	return close_entry(j->dir, j->name, j->entry);
}

int tt_journal_discard(struct tt_journal *j)
{
	if (!j->entry)
		return 0;
	char *path = tt_path_join(j->dir, j->name);
	int rc = tt_remove_if_exists(path);
	free(path);
	json_decref(j->entry);
	j->entry = NULL;
	return rc;
}

void tt_journal_free(struct tt_journal *j)
{
	free(j->dir);
	free(j->name);
	json_decref(j->entry);
	j->dir = j->name = NULL;
	j->entry = NULL;
}

int tt_journal_close_other(struct tether_repo *repo, const json_t *entry, const char *status, json_t *extra)
{
	char *dir = NULL;
	int rc = journal_dir(repo, &dir);
	const char *id = json_string_value(json_object_get(entry, "id"));
	if (!rc && !id)
		rc = tether_error_set(TETHER_ERROR, "a journal entry without an id");
	if (!rc) {
		json_t *e = json_deep_copy(entry);
		json_object_del(e, "id");
		if (extra)
			json_object_update(e, extra);
		json_object_set_new(e, "status", json_string(status));
		char *name = tt_strdupf("%s.json", id);
		rc = close_entry(dir, name, e);
		free(name);
		json_decref(e);
	}
	json_decref(extra);
	free(dir);
	return rc;
}

static int by_id(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "id"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "id"));
	return strcmp(x, y);
}

static int is_entry_name(const char *name)
{
	size_t n = strlen(name);
	return n >= 6 && strcmp(name + n - 5, ".json") == 0;
}

/* An entry is tether's own file, in the VCS's shared directory, but gc
 * trusts what it names (it keeps those pins and visits those stores), so
 * it is checked as any manifest is: every key, pin id and string valid,
 * or the command stops naming the file, rather than act on a store or a
 * pin an entry merely claims. */
static int entry_check(const json_t *entry, const char *path)
{
	int rc = tt_strings_check(entry, path);
	const json_t *pins = json_object_get(entry, "pins");
	if (!rc && pins && !json_is_array(pins))
		rc = tether_error_set(TETHER_ECONFIG, "%s: \"pins\" must be an array", path);
	size_t i;
	const json_t *p;
	json_array_foreach(pins, i, p) {
		if (rc)
			break;
		char *where = tt_strdupf("%s: pins[%zu]", path, i);
		if (!json_is_object(p) || !json_is_string(json_object_get(p, "kind")) ||
		    !json_is_object(json_object_get(p, "locator")) || !json_is_string(json_object_get(p, "pin")))
			rc = tether_error_set(TETHER_ECONFIG, "%s: must have a string kind and pin and a locator table",
			                      where);
		if (!rc)
			rc = tt_key_check_in(json_object_get(p, "key"), where);
		if (!rc)
			rc = tt_pin_id_check(json_string_value(json_object_get(p, "pin")), where);
		free(where);
	}
	if (rc)
		tether_error_set_hint("the journal is tether's own record (ops lists it); move the file aside if it "
		                      "was not written by tether");
	return rc;
}

/* The entry in file `name` of `dir`, checked: *out NULL (and 0) for a
 * torn write of our own, whose atomic rename never happened. */
static int load_entry(const char *dir, const char *name, json_t **out)
{
	char *path = tt_path_join(dir, name);
	json_t *entry = json_load_file(path, 0, NULL);
	int rc = 0;
	*out = NULL;
	if (json_is_object(entry) && !(rc = entry_check(entry, path)))
		*out = json_incref(entry);
	json_decref(entry);
	free(path);
	return rc;
}

/* Append the entries of one directory to *entries, each with "id" (its file
 * name). An open entry whose closed copy exists is a close that died
 * before removing it: left out, the closed copy counts. */
static int read_entries(const char *dir, int open, json_t *entries)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		if (!is_entry_name(e->d_name))
			continue;
		if (open) {
			char *closed = tt_strdupf("%s/" CLOSED_DIR "/%s", dir, e->d_name);
			int twin = tt_exists(closed);
			free(closed);
			if (twin)
				continue;
		}
		json_t *entry = NULL;
		rc = load_entry(dir, e->d_name, &entry);
		if (rc || !entry)
			continue;
		json_object_set_new(entry, "id", json_stringn(e->d_name, strlen(e->d_name) - 5));
		json_array_append_new(entries, entry);
	}
	closedir(d);
	return rc;
}

static void sort_by_id(json_t *entries)
{
	tt_json_array_sort(entries, by_id);
}

static int list_in(const char *dir, int with_closed, json_t **out)
{
	json_t *entries = json_array();
	int rc = read_entries(dir, 1, entries);
	if (!rc && with_closed) {
		char *closed = tt_path_join(dir, CLOSED_DIR);
		rc = read_entries(closed, 0, entries);
		free(closed);
	}
	if (rc) {
		json_decref(entries);
		*out = NULL;
		return rc;
	}
	sort_by_id(entries);
	*out = entries;
	return 0;
}

static int list(struct tether_repo *repo, int with_closed, json_t **entries)
{
	char *dir = NULL;
	int rc = journal_dir(repo, &dir);
	*entries = NULL;
	if (!rc)
		rc = list_in(dir, with_closed, entries);
	free(dir);
	return rc;
}

int tt_journal_list(struct tether_repo *repo, json_t **entries)
{
	return list(repo, 1, entries);
}

int tt_journal_open_entries(struct tether_repo *repo, json_t **entries)
{
	return list(repo, 0, entries);
}

static int is_incomplete(const json_t *e)
{
	return is_incomplete_entry(e);
}

/* An entry of `op` (a commit's entry: one with no op, as the first ones
 * were, counts as a commit's). A commit finishes only a commit's entry: a
 * dead promote's, merge's, restore's or drop's is finished by re-running
 * that command. */
static int is_op(const json_t *e, const char *op)
{
	const char *have = json_string_value(json_object_get(e, "op"));
	return strcmp(have ? have : "commit", op) == 0;
}

/* Was the entry's process alive when asked (this one included)? */
static int writer_alive(const json_t *e)
{
	const char *id = json_string_value(json_object_get(e, "id"));
	const char *dash = id ? strrchr(id, '-') : NULL;
	long pid = dash ? atol(dash + 1) : 0;
	return pid > 0 && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0);
}

/* Bring one open entry where it belongs: a closed one (written by an
 * earlier tether, which closed entries in place) into closed/, and a dead
 * process's INCOMPLETE one closed as finished by `commit`. */
static int tidy_open_entry(const char *dir, json_t *e, const char *commit)
{
	const char *id = json_string_value(json_object_get(e, "id"));
	char *name = tt_strdupf("%s.json", id);
	int rc = 0;
	json_t *entry = json_deep_copy(e);
	json_object_del(entry, "id");
	if (!is_incomplete(e)) {
		rc = close_entry(dir, name, entry);
	} else if (is_op(e, "commit")) {
		/* Only a dead process's entry: a live one may still be working. */
		if (!writer_alive(e)) {
			json_object_set_new(entry, "finished_by", commit && *commit ? json_string(commit) : json_null());
			json_object_set_new(entry, "status", json_string("COMPLETE"));
			json_object_set_new(entry, "commit", commit && *commit ? json_string(commit) : json_null());
			rc = close_entry(dir, name, entry);
		}
	}
	json_decref(entry);
	free(name);
	return rc;
}

/* Open copies of entries that are closed already: a close that died before
 * removing them. */
static int remove_stale_open_copies(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (!is_entry_name(e->d_name))
			continue;
		char *closed = tt_strdupf("%s/" CLOSED_DIR "/%s", dir, e->d_name);
		if (tt_exists(closed)) {
			char *open = tt_path_join(dir, e->d_name);
			rc = tt_remove_if_exists(open);
			free(open);
		}
		free(closed);
	}
	closedir(d);
	return rc;
}

int tt_journal_close_finished(struct tether_repo *repo, const char *commit)
{
	char *dir;
	int rc = journal_dir(repo, &dir);
	if (rc)
		return rc;
	rc = remove_stale_open_copies(dir);
	json_t *entries = NULL;
	/* A malformed entry is gc's and ops's to report: a commit that has
	 * landed is not failed for it, it only leaves that entry open. */
	if (!rc && list_in(dir, 0, &entries) != 0)
		tether_error_clear();
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e) {
		if (rc)
			break;
		rc = tidy_open_entry(dir, e, commit);
	}
	free(dir);
	json_decref(entries);
	return rc;
}

int tt_journal_note(struct tt_journal *j, const char *field, json_t *value)
{
	if (!j->entry) {
		json_decref(value);
		return 0;
	}
	json_object_set_new(j->entry, field, value);
	char *path = tt_path_join(j->dir, j->name);
	int rc = write_entry(path, j->entry);
	free(path);
	return rc;
}

int tt_journal_dead_entries(struct tether_repo *repo, const char *op, json_t **out)
{
	json_t *entries = NULL;
	*out = json_array();
	int rc = tt_journal_open_entries(repo, &entries);
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e)
		if (is_incomplete(e) && is_op(e, op) && !writer_alive(e))
			json_array_append(*out, e);
	json_decref(entries);
	return rc;
}

static int has_string(const json_t *list, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

int tt_journal_close_dead_runs(struct tether_repo *repo, const char *op, const json_t *keys, const char *target,
                               const char *by)
{
	char *dir = NULL;
	json_t *dead = NULL;
	int rc = journal_dir(repo, &dir);
	if (!rc)
		rc = tt_journal_dead_entries(repo, op, &dead);
	size_t i, k;
	json_t *e, *key;
	json_array_foreach(dead, i, e) {
		if (rc)
			break;
		const char *t = json_string_value(json_object_get(e, "target"));
		int covered = !target || (t && strcmp(t, target) == 0);
		json_array_foreach(json_object_get(e, "keys"), k, key)
			covered = covered && json_is_string(key) && has_string(keys, json_string_value(key));
		if (!covered)
			continue;
		json_t *entry = json_deep_copy(e);
		const char *id = json_string_value(json_object_get(e, "id"));
		char *name = tt_strdupf("%s.json", id);
		json_object_del(entry, "id");
		json_object_set_new(entry, "status", json_string("COMPLETE"));
		json_object_set_new(entry, "finished_by", by ? json_string(by) : json_null());
		rc = close_entry(dir, name, entry);
		free(name);
		json_decref(entry);
	}
	json_decref(dead);
	free(dir);
	return rc;
}

int tether_ops(tether_repo *repo, json_t **report)
{
	json_t *entries;
	int rc = tt_journal_list(repo, &entries);
	*report = rc ? NULL : json_pack("{s:o}", "ops", entries);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The stores the journal names, for gc                                */
/* ------------------------------------------------------------------ */

/* What gc needs of the closed entries is small (the few distinct stores
 * their pins were made in) but reading it from the entries means parsing
 * one file per commit ever made. So <journal>/closed.index summarises
 * them: {"format": 1, "entries": [names, sorted], "pins": [the first pin
 * of each distinct (kind, key, locator)]}. It is a cache of what the
 * entries say, kept beside them where a clone cannot put one: an entry
 * in closed/ that the index does not cover is read and the index
 * rewritten; an index that covers an entry no longer there, or that does
 * not parse or check as an entry does, is rebuilt from the entries. */
#define CLOSED_INDEX "closed.index"

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry names in closed/, sorted. */
static int closed_names(const char *closed, char ***out, size_t *n)
{
	DIR *d = opendir(closed);
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	*out = NULL;
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_entry_name(e->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			char **grown = realloc(v, cap * sizeof *v);
			if (!grown)
				abort();
			v = grown;
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, by_string);
	*out = v;
	return 0;
}

/* A pin's store as {kind, key?, locator}: what makes two pins' stores one. */
static json_t *store_of(const json_t *pin)
{
	return json_pack("{s:O, s:O?, s:O}", "kind", json_object_get(pin, "kind"), "key", json_object_get(pin, "key"),
	                 "locator", json_object_get(pin, "locator"));
}

/* Note in `seen` the store of each of `pins`, and append to `out` (when
 * not NULL) the first pin of each store not seen before. */
static void add_distinct(json_t *out, json_t *seen, const json_t *pins)
{
	size_t i;
	json_t *p;
	json_array_foreach(pins, i, p) {
		json_t *id = store_of(p);
		char *text = tt_cjson(id);
		if (text && !json_object_get(seen, text)) {
			json_object_set_new(seen, text, json_true());
			json_object_set(id, "pin", json_object_get(p, "pin"));
			if (out)
				json_array_append(out, id);
		}
		free(text);
		json_decref(id);
	}
}

/* The index, if it is one this code wrote and every entry it covers is
 * still in `names`: its covered names (sorted) and pins; else NULL. */
static json_t *load_index(const char *path, char **names, size_t n)
{
	/* read whole, then parsed from memory: json_load_file reads a byte at
	 * a time through stdio, a fifth of gc's work on the index */
	char *text = NULL;
	size_t len = 0;
	int unread = tt_read_file(path, &text, &len);
	json_t *index = unread ? NULL : json_loadb(text, len, 0, NULL);
	free(text);
	if (unread)
		tether_error_clear(); /* no index, or an unreadable one: rebuilt, as a bad one is */
	json_t *covered = json_object_get(index, "entries");
	int ok = json_is_object(index) && json_integer_value(json_object_get(index, "format")) == 1 &&
	         json_is_array(covered) && json_is_array(json_object_get(index, "pins"));
	size_t i, j = 0;
	json_t *name;
	json_array_foreach(covered, i, name) {
		const char *s = json_string_value(name);
		while (ok && s && j < n && strcmp(names[j], s) < 0)
			j++;
		ok = ok && s && j < n && strcmp(names[j], s) == 0 && (i == 0 || strcmp(s, json_string_value(
		                                                                          json_array_get(covered, i - 1))) > 0);
		if (!ok)
			break;
	}
	if (ok) {
		json_t *as_entry = json_pack("{s:O}", "pins", json_object_get(index, "pins"));
		ok = entry_check(as_entry, path) == 0;
		json_decref(as_entry);
		tether_error_clear(); /* a bad cache is rebuilt, not an error */
	}
	if (!ok) {
		json_decref(index);
		return NULL;
	}
	return index;
}

int tt_journal_pin_stores(struct tether_repo *repo, json_t **out)
{
	char *dir = NULL;
	int rc = journal_dir(repo, &dir);
	*out = NULL;
	if (rc)
		return rc;
	char *closed = tt_path_join(dir, CLOSED_DIR), *index_path = tt_path_join(dir, CLOSED_INDEX);
	char **names = NULL;
	size_t n = 0;
	rc = closed_names(closed, &names, &n);
	json_t *index = rc ? NULL : load_index(index_path, names, n);
	json_t *covered = index ? json_incref(json_object_get(index, "entries")) : json_array();
	json_t *pins = index ? json_incref(json_object_get(index, "pins")) : json_array();
	json_t *seen = json_object();
	add_distinct(NULL, seen, pins); /* the index's pins, distinct already: only seen */
	size_t before = json_array_size(covered), c = 0;
	/* The entries the index does not cover (both lists sorted). */
	json_t *fresh = json_array();
	for (size_t i = 0; i < n && !rc; i++) {
		const char *have = c < before ? json_string_value(json_array_get(covered, c)) : NULL;
		if (have && strcmp(have, names[i]) == 0) {
			c++;
			continue;
		}
		json_t *entry = NULL;
		rc = load_entry(closed, names[i], &entry);
		if (rc || !entry)
			continue; /* torn: not covered, read again next time */
		add_distinct(pins, seen, json_object_get(entry, "pins"));
		json_array_append_new(fresh, json_string(names[i]));
		json_decref(entry);
	}
	if (!rc && json_array_size(fresh)) {
		/* merge the two sorted name lists */
		json_t *all = json_array();
		size_t a = 0, b = 0, nb = json_array_size(fresh);
		while (a < before || b < nb) {
			const char *x = a < before ? json_string_value(json_array_get(covered, a)) : NULL;
			const char *y = b < nb ? json_string_value(json_array_get(fresh, b)) : NULL;
			if (y && (!x || strcmp(y, x) < 0)) {
				json_array_append(all, json_array_get(fresh, b++));
			} else {
				json_array_append(all, json_array_get(covered, a++));
			}
		}
		json_t *doc = json_pack("{s:i, s:o, s:O}", "format", 1, "entries", all, "pins", pins);
		char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
		/* A cache: failing to write it (a read-only repository) costs the
		 * next gc the reads again, nothing else. */
		if (text && tt_write_cache_file(index_path, text, strlen(text)) != 0)
			tether_error_clear();
		free(text);
		json_decref(doc);
	}
	/* The open entries, read every time: they are few, and change. */
	json_t *open = json_array();
	if (!rc)
		rc = read_entries(dir, 1, open);
	size_t i;
	json_t *e;
	json_array_foreach(open, i, e) add_distinct(pins, seen, json_object_get(e, "pins"));
	json_decref(open);
	json_decref(fresh);
	json_decref(seen);
	json_decref(covered);
	json_decref(index);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	free(closed);
	free(index_path);
	free(dir);
	if (rc)
		json_decref(pins);
	else
		*out = pins;
	return rc;
}
