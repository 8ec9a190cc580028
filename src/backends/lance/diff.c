/* Diff of two states from their manifests: fragments added and removed
 * (by id, and by the data files they hold: after a fork both sides number
 * new fragments from the same max_fragment_id, so an id alone does not
 * say the data is the same), deletion-file changes, and columns added and
 * removed (by field id, named by their path). */
#include "backends/lance/lance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ADDED, REMOVED, MODIFIED, NKINDS };
static const char *const change_names[NKINDS] = {"added", "removed", "modified"};

struct side {
	struct lc_manifest man;
	char *own; /* the directory this version's own files live under */
};

static uint64_t live_rows(const TetherLance__DataFragment *f)
{
	uint64_t del = f->deletion_file ? f->deletion_file->num_deleted_rows : 0;
	return f->physical_rows > del ? f->physical_rows - del : 0;
}

/* The data files of a fragment, resolved to full locations, one string. */
static char *files_of(const struct side *s, const TetherLance__DataFragment *f)
{
	size_t cap = 1;
	for (size_t i = 0; i < f->n_files; i++)
		cap += strlen(f->files[i]->path ? f->files[i]->path : "") + strlen(s->own) + 8;
	for (size_t i = 0; i < s->man.m->n_base_paths; i++)
		cap += (strlen(s->man.m->base_paths[i]->path ? s->man.m->base_paths[i]->path : "") + 8) * f->n_files;
	char *out = calloc(1, cap), *p = out;
	for (size_t i = 0; out && i < f->n_files; i++) {
		const TetherLance__DataFile *d = f->files[i];
		const char *root = s->own, *sep = "/data/";
		if (d->has_base_id) {
			root = "?";
			for (size_t b = 0; b < s->man.m->n_base_paths; b++)
				if (s->man.m->base_paths[b]->id == d->base_id) {
					root = s->man.m->base_paths[b]->path ? s->man.m->base_paths[b]->path : "";
					sep = s->man.m->base_paths[b]->is_dataset_root ? "/data/" : "/";
				}
		}
		p += sprintf(p, "%s%s%s\n", root, sep, d->path ? d->path : "");
	}
	return out;
}

/* Do two files_of lists have a line in common? */
static int shares_a_file(const char *a, const char *b)
{
	for (const char *line = a; *line;) {
		const char *end = strchr(line, '\n');
		size_t n = (size_t)(end - line);
		for (const char *p = b; *p;) {
			const char *e = strchr(p, '\n');
			if ((size_t)(e - p) == n && memcmp(p, line, n) == 0)
				return 1;
			p = e + 1;
		}
		line = end + 1;
	}
	return 0;
}

static const TetherLance__DataFragment *find_frag(const TetherLance__Manifest *m, uint64_t id)
{
	for (size_t i = 0; i < m->n_fragments; i++)
		if (m->fragments[i]->id == id)
			return m->fragments[i];
	return NULL;
}

static int same_deletion(const TetherLance__DeletionFile *a, const TetherLance__DeletionFile *b)
{
	if (!a || !b)
		return !a && !b;
	return a->read_version == b->read_version && a->id == b->id && a->file_type == b->file_type;
}

struct out {
	json_t *entries;
	json_int_t counts[NKINDS];
	size_t max;
};

static void emit(struct out *o, int change, const char *path, const char *detail)
{
	o->counts[change]++;
	if (json_array_size(o->entries) < o->max)
		json_array_append_new(o->entries, json_pack("{s:s, s:s, s:s}", "path", path, "change", change_names[change],
		                                            "detail", detail));
}

static void fragment_entry(struct out *o, int change, const TetherLance__DataFragment *f)
{
	char path[48], detail[64];
	snprintf(path, sizeof path, "fragment %llu", (unsigned long long)f->id);
	snprintf(detail, sizeof detail, "%c%llu rows", change == ADDED ? '+' : '-', (unsigned long long)live_rows(f));
	emit(o, change, path, detail);
}

static int diff_fragments(const struct side *a, const struct side *b, struct out *o)
{
	for (size_t i = 0; i < b->man.m->n_fragments; i++) {
		const TetherLance__DataFragment *fb = b->man.m->fragments[i], *fa = find_frag(a->man.m, fb->id);
		char *pa = fa ? files_of(a, fa) : NULL, *pb = files_of(b, fb);
		if (!pb || (fa && !pa)) {
			free(pa);
			free(pb);
			return lc_fail_oom();
		}
		int same_files = fa && strcmp(pa, pb) == 0;
		if (!fa || (!same_files && !shares_a_file(pa, pb))) {
			/* New, or the same id holding other data (two sides of a
			 * fork number their fragments alike). */
			if (fa)
				fragment_entry(o, REMOVED, fa);
			fragment_entry(o, ADDED, fb);
		} else if (!same_files || !same_deletion(fa->deletion_file, fb->deletion_file) ||
		           fa->physical_rows != fb->physical_rows) {
			uint64_t da = fa->deletion_file ? fa->deletion_file->num_deleted_rows : 0;
			uint64_t db = fb->deletion_file ? fb->deletion_file->num_deleted_rows : 0;
			char path[48], detail[160];
			int k = 0;
			snprintf(path, sizeof path, "fragment %llu", (unsigned long long)fb->id);
			if (!same_deletion(fa->deletion_file, fb->deletion_file))
				k += snprintf(detail + k, sizeof detail - (size_t)k, "deletions %llu -> %llu, ", (unsigned long long)da,
				              (unsigned long long)db);
			if (!same_files)
				k += snprintf(detail + k, sizeof detail - (size_t)k, "data files %zu -> %zu, ", fa->n_files,
				              fb->n_files);
			snprintf(detail + k, sizeof detail - (size_t)k, "%llu rows", (unsigned long long)live_rows(fb));
			emit(o, MODIFIED, path, detail);
		}
		free(pa);
		free(pb);
	}
	for (size_t i = 0; i < a->man.m->n_fragments; i++)
		if (!find_frag(b->man.m, a->man.m->fragments[i]->id))
			fragment_entry(o, REMOVED, a->man.m->fragments[i]);
	return 0;
}

static const TetherLance__Field *find_field(const TetherLance__Manifest *m, int32_t id)
{
	for (size_t i = 0; i < m->n_fields; i++)
		if (m->fields[i]->id == id)
			return m->fields[i];
	return NULL;
}

/* "a.b.c": the names along the parent chain. */
static void field_path(const TetherLance__Manifest *m, const TetherLance__Field *f, char *out, size_t cap)
{
	char tmp[512];
	snprintf(out, cap, "%s", f->name ? f->name : "?");
	for (int depth = 0; f->parent_id >= 0 && depth < 32; depth++) {
		if (!(f = find_field(m, f->parent_id)))
			break;
		snprintf(tmp, sizeof tmp, "%s.%s", f->name ? f->name : "?", out);
		snprintf(out, cap, "%s", tmp);
	}
}

static void diff_columns(const TetherLance__Manifest *a, const TetherLance__Manifest *b, struct out *o)
{
	char path[600], name[512];
	for (int pass = 0; pass < 2; pass++) {
		const TetherLance__Manifest *from = pass ? a : b, *other = pass ? b : a;
		for (size_t i = 0; i < from->n_fields; i++) {
			const TetherLance__Field *f = from->fields[i];
			if (find_field(other, f->id))
				continue;
			field_path(from, f, name, sizeof name);
			snprintf(path, sizeof path, "column %s", name);
			emit(o, pass ? REMOVED : ADDED, path, f->logical_type ? f->logical_type : "");
		}
	}
}

static int load(struct lc_dataset *ds, const json_t *state, struct side *s)
{
	struct lc_pos p;
	memset(s, 0, sizeof *s);
	int rc = lc_state_read(state, &p);
	if (rc == 0 && (rc = lc_read_version(ds, p.branch, p.version, &s->man)) == 0) {
		s->own = strcmp(p.branch, "main") == 0 ? strdup(ds->uri) : tt_strdupf("%s/tree/%s", ds->uri, p.branch);
		if (!s->own)
			rc = lc_fail_oom();
	}
	lc_pos_free(&p);
	return rc;
}

int lc_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	(void)listing_a, (void)len_a, (void)listing_b, (void)len_b;
	struct lc_loc loc;
	struct lc_dataset ds;
	struct side sa, sb;
	struct out o = {json_array(), {0, 0, 0}, max_entries};
	*diff = NULL;
	memset(&sa, 0, sizeof sa);
	memset(&sb, 0, sizeof sb);
	int rc = o.entries ? lc_open(ctx, locator, &loc, &ds) : lc_fail_oom();
	if (rc) {
		json_decref(o.entries);
		return rc;
	}
	if ((rc = load(&ds, a, &sa)) == 0 && (rc = load(&ds, b, &sb)) == 0 && (rc = diff_fragments(&sa, &sb, &o)) == 0)
		diff_columns(sa.man.m, sb.man.m, &o);
	for (int i = 0; i < 2; i++) {
		struct side *s = i ? &sb : &sa;
		lc_manifest_free(&s->man);
		free(s->own);
	}
	lc_close(&ds);
	if (rc) {
		json_decref(o.entries);
		return rc;
	}
	char summary[128];
	snprintf(summary, sizeof summary, "%lld added, %lld removed, %lld modified", (long long)o.counts[ADDED],
	         (long long)o.counts[REMOVED], (long long)o.counts[MODIFIED]);
	json_int_t total = o.counts[ADDED] + o.counts[REMOVED] + o.counts[MODIFIED];
	*diff = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "fragments", "summary", summary,
	                  "entries", o.entries, "totals", "added", o.counts[ADDED], "removed", o.counts[REMOVED],
	                  "modified", o.counts[MODIFIED], "renamed", (json_int_t)0, "truncated",
	                  (size_t)total > max_entries);
	return *diff ? 0 : lc_fail_oom();
}
