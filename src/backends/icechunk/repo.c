/* The `repo` file of an Icechunk spec-2 repository, read into a model that
 * keeps every field, and written back from it.
 *
 * Reading is strict where Icechunk's verifier is strict (required fields,
 * indices inside the snapshot list): such a file is corrupt and no command
 * can use it. Reading is lenient about what tether merely does not know: a
 * table with more slots than tether's schema has, an update type past the
 * last one tether has a name for, a spec version above 2, vectors out of
 * their required order. Those are recorded in `unwritable`, and every
 * write refuses with that reason: rewriting a file whose fields tether
 * cannot carry over would silently drop them. */
#include "backends/icechunk/ic.h"

#include "format/flatbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slots per table, as Icechunk 2.x's schema (repo.fbs) has them. */
enum { REPO_SLOTS = 13, REF_SLOTS = 2, SNAPINFO_SLOTS = 6, STATUS_SLOTS = 3, META_SLOTS = 2,
       UPDATE_SLOTS = 4 };

enum repo_slot { R_SPEC, R_TAGS, R_BRANCHES, R_DELETED, R_SNAPSHOTS, R_STATUS, R_METADATA,
                 R_UPDATES, R_BEFORE, R_CONFIG, R_ENABLED, R_DISABLED, R_EXTRA };

/* The fields of each update type's union member, in slot order. */
enum member_field { F_END, F_NAME, F_PREV, F_NEXT, F_FROM_VERSION, F_TO_VERSION, F_FLAG_ID,
                    F_FLAG_VALUE, F_FLAG_SET, F_STATUS };

static const unsigned char member_fields[IC_UP_LAST + 1][4] = {
	[IC_UP_REPO_MIGRATED] = {F_FROM_VERSION, F_TO_VERSION},
	[IC_UP_TAG_CREATED] = {F_NAME},
	[IC_UP_TAG_DELETED] = {F_NAME, F_PREV},
	[IC_UP_BRANCH_CREATED] = {F_NAME},
	[IC_UP_BRANCH_DELETED] = {F_NAME, F_PREV},
	[IC_UP_BRANCH_RESET] = {F_NAME, F_PREV},
	[IC_UP_NEW_COMMIT] = {F_NAME, F_NEXT},
	[IC_UP_COMMIT_AMENDED] = {F_NAME, F_PREV, F_NEXT},
	[IC_UP_NEW_DETACHED_SNAPSHOT] = {F_NEXT},
	[IC_UP_FEATURE_FLAG_CHANGED] = {F_FLAG_ID, F_FLAG_VALUE, F_FLAG_SET},
	[IC_UP_REPO_STATUS_CHANGED] = {F_STATUS},
};

static unsigned member_slots(unsigned type)
{
	unsigned n = 0;
	while (n < 4 && member_fields[type][n] != F_END)
		n++;
	return n;
}

/* ------------------------------------------------------------------ */
/* Memory the model owns                                               */
/* ------------------------------------------------------------------ */

struct ic_chunk {
	struct ic_chunk *next;
	max_align_t data[];
};

void *ic_repo_alloc(struct ic_repo *r, size_t n)
{
	/* Zeroed: a model's absent fields read as empty. */
	struct ic_chunk *c = calloc(1, sizeof *c + (n ? n : 1));
	if (!c)
		return NULL;
	c->next = r->mem;
	r->mem = c;
	return c->data;
}

struct ic_str ic_repo_strdup(struct ic_repo *r, const char *s)
{
	size_t n = strlen(s);
	char *p = ic_repo_alloc(r, n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return (struct ic_str){p, p ? (uint32_t)n : 0};
}

void ic_repo_free(struct ic_repo *r)
{
	if (!r)
		return;
	for (struct ic_chunk *c = r->mem, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(r->payload);
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

struct parse {
	struct ic_repo *r;
	const char *what;
	uint32_t tables; /* counted so far */
};

static int corrupt(const struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int corrupt(const struct parse *p, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tether_error_set(TETHER_EIO, "%s is not a valid Icechunk repo file: %s", p->what, msg);
}

/* A reason tether must not rewrite the file; the first one found is kept. */
static void unwritable(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unwritable(struct parse *p, const char *fmt, ...)
{
	if (p->r->unwritable[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->r->unwritable, sizeof p->r->unwritable, fmt, ap);
	va_end(ap);
}

static void check_slots(struct parse *p, const struct fb_table *t, unsigned known, const char *table)
{
	unsigned used = fb_used_slots(t);
	if (used > known)
		unwritable(p, "its %s table has a field tether does not know (slot %u; tether knows %u): "
		           "it was written by a newer Icechunk", table, used - 1, known);
}

/* Icechunk's own reader verifies a repo file with at most five million
 * tables; more is a file no Icechunk reads, and the model's arrays stay
 * bounded by it whatever the lengths in the file say. */
#define MAX_TABLES 5000000u

static void *alloc_n(struct parse *p, size_t n, size_t size)
{
	return ic_repo_alloc(p->r, n * size);
}

static int count_tables(struct parse *p, uint32_t n, const char *what)
{
	if (n > MAX_TABLES - p->tables)
		return corrupt(p, "more than %u tables (at %s): more than Icechunk reads", MAX_TABLES, what);
	p->tables += n;
	return 0;
}

static int need(struct parse *p, int present, const char *field)
{
	return present ? 0 : corrupt(p, "required field %s is missing", field);
}

static int read_str(const struct fb_table *t, unsigned slot, struct ic_str *out, int *present)
{
	const char *s = NULL;
	uint32_t n = 0;
	int rc = fb_string(t, slot, &s, &n);
	out->p = s;
	out->n = n;
	if (present)
		*present = s != NULL;
	return rc;
}

static int read_required_str(struct parse *p, const struct fb_table *t, unsigned slot, struct ic_str *out,
                             const char *field)
{
	int present = 0;
	int rc = read_str(t, slot, out, &present);
	return rc ? rc : need(p, present, field);
}

static int read_id(struct parse *p, const struct fb_table *t, unsigned slot, struct ic_id *out,
                   const char *field)
{
	const uint8_t *bytes = NULL;
	int rc = fb_struct(t, slot, IC_ID_BYTES, 1, &bytes);
	if (rc)
		return rc;
	if ((rc = need(p, bytes != NULL, field)))
		return rc;
	memcpy(out->b, bytes, IC_ID_BYTES);
	return 0;
}

static int read_bytes(const struct fb_table *t, unsigned slot, struct ic_bytes *out, int *present)
{
	struct fb_vec v;
	int rc = fb_vector(t, slot, 1, 1, &v, present);
	if (rc)
		return rc;
	out->p = v.n ? fb_vec_elem(&v, 0) : NULL;
	out->n = v.n;
	return 0;
}

static int read_metas(struct parse *p, const struct fb_table *t, unsigned slot, struct ic_metas *out)
{
	struct fb_vec v;
	int rc = fb_vector(t, slot, 4, 4, &v, &out->present);
	if (rc || !v.n || (rc = count_tables(p, v.n, "metadata")))
		return rc;
	if (!(out->v = alloc_n(p, v.n, sizeof *out->v)))
		return ic_fail_oom();
	out->n = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		struct fb_table item;
		int present = 0;
		if ((rc = fb_vec_table(&v, i, &item)))
			return rc;
		check_slots(p, &item, META_SLOTS, "MetadataItem");
		if ((rc = read_required_str(p, &item, 0, &out->v[i].name, "MetadataItem.name")) ||
		    (rc = read_bytes(&item, 1, &out->v[i].value, &present)) ||
		    (rc = need(p, present, "MetadataItem.value")))
			return rc;
	}
	return 0;
}

static int read_refs(struct parse *p, const struct fb_table *root, unsigned slot, const char *field,
                     struct ic_ref **out, uint32_t *n)
{
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, slot, 4, 4, &v, &present);
	if (rc || (rc = need(p, present, field)) || (rc = count_tables(p, v.n, field)))
		return rc;
	*n = v.n;
	if (!v.n)
		return 0;
	if (!(*out = alloc_n(p, v.n, sizeof **out)))
		return ic_fail_oom();
	for (uint32_t i = 0; i < v.n; i++) {
		struct fb_table t;
		if ((rc = fb_vec_table(&v, i, &t)))
			return rc;
		check_slots(p, &t, REF_SLOTS, "Ref");
		if ((rc = read_required_str(p, &t, 0, &(*out)[i].name, "Ref.name")) ||
		    (rc = fb_u32(&t, 1, 0, &(*out)[i].snap)))
			return rc;
		if (i > 0 && ic_str_cmp((*out)[i - 1].name, (*out)[i].name) >= 0)
			unwritable(p, "its %s are not in the sorted order Icechunk requires", field);
	}
	return 0;
}

static int read_status(struct parse *p, const struct fb_table *t, struct ic_status *out)
{
	int rc;
	check_slots(p, t, STATUS_SLOTS, "RepoStatus");
	if ((rc = fb_u8(t, 0, 0, &out->availability)) || (rc = fb_u64(t, 1, 0, &out->set_at)) ||
	    (rc = read_str(t, 2, &out->reason, &out->has_reason)))
		return rc;
	return 0;
}

static int read_snapshots(struct parse *p, const struct fb_table *root)
{
	struct ic_repo *r = p->r;
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, R_SNAPSHOTS, 4, 4, &v, &present);
	if (rc || (rc = need(p, present, "Repo.snapshots")) || (rc = count_tables(p, v.n, "Repo.snapshots")))
		return rc;
	r->nsnaps = v.n;
	if (!v.n)
		return 0;
	if (!(r->snaps = alloc_n(p, v.n, sizeof *r->snaps)))
		return ic_fail_oom();
	for (uint32_t i = 0; i < v.n; i++) {
		struct ic_snap *s = &r->snaps[i];
		struct fb_table t;
		struct fb_vec pruned;
		if ((rc = fb_vec_table(&v, i, &t)))
			return rc;
		check_slots(p, &t, SNAPINFO_SLOTS, "SnapshotInfo");
		if ((rc = read_id(p, &t, 0, &s->id, "SnapshotInfo.id")) || (rc = fb_i32(&t, 1, 0, &s->parent)) ||
		    (rc = fb_u64(&t, 2, 0, &s->flushed_at)) ||
		    (rc = read_required_str(p, &t, 3, &s->message, "SnapshotInfo.message")) ||
		    (rc = read_metas(p, &t, 4, &s->meta)) ||
		    (rc = fb_vector(&t, 5, IC_ID_BYTES, 1, &pruned, &s->pruned_present)))
			return rc;
		if (s->parent < -1 || (s->parent >= 0 && (uint32_t)s->parent >= v.n))
			return corrupt(p, "snapshot %u names parent %d of %u", i, s->parent, v.n);
		if (pruned.n) {
			if (!(s->pruned = alloc_n(p, pruned.n, sizeof *s->pruned)))
				return ic_fail_oom();
			for (uint32_t k = 0; k < pruned.n; k++)
				memcpy(s->pruned[k].b, fb_vec_elem(&pruned, k), IC_ID_BYTES);
			s->npruned = pruned.n;
		}
		if (i > 0 && memcmp(r->snaps[i - 1].id.b, s->id.b, IC_ID_BYTES) >= 0)
			unwritable(p, "its snapshots are not in the sorted order Icechunk requires");
	}
	return 0;
}

static int read_member(struct parse *p, const struct fb_table *m, struct ic_update *u)
{
	int rc = 0;
	for (unsigned slot = 0; slot < 4 && member_fields[u->type][slot] != F_END && !rc; slot++) {
		switch (member_fields[u->type][slot]) {
		case F_NAME:
			rc = read_required_str(p, m, slot, &u->name, "Update name");
			break;
		case F_PREV:
			rc = read_id(p, m, slot, &u->prev, "Update previous_snap_id");
			break;
		case F_NEXT:
			rc = read_id(p, m, slot, &u->next, "Update new_snap_id");
			break;
		case F_FROM_VERSION:
			rc = fb_u8(m, slot, 0, &u->from_version);
			break;
		case F_TO_VERSION:
			rc = fb_u8(m, slot, 0, &u->to_version);
			break;
		case F_FLAG_ID:
			rc = fb_u16(m, slot, 0, &u->flag_id);
			break;
		case F_FLAG_VALUE:
			rc = fb_u8(m, slot, 0, &u->flag_value);
			break;
		case F_FLAG_SET:
			rc = fb_u8(m, slot, 0, &u->flag_set);
			break;
		case F_STATUS: {
			struct fb_table st;
			rc = fb_table(m, slot, &st, &u->has_status);
			if (!rc && u->has_status)
				rc = read_status(p, &st, &u->status);
			break;
		}
		}
	}
	return rc;
}

static int read_updates(struct parse *p, const struct fb_table *root)
{
	struct ic_repo *r = p->r;
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, R_UPDATES, 4, 4, &v, &present);
	if (rc || (rc = need(p, present, "Repo.latest_updates")) ||
	    (rc = count_tables(p, v.n, "Repo.latest_updates")))
		return rc;
	if (!v.n)
		return corrupt(p, "its ops log is empty");
	if (!(r->updates = alloc_n(p, v.n, sizeof *r->updates)))
		return ic_fail_oom();
	r->nupdates = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		struct ic_update *u = &r->updates[i];
		struct fb_table t, m;
		int has_member = 0;
		memset(u, 0, sizeof *u);
		if ((rc = fb_vec_table(&v, i, &t)))
			return rc;
		check_slots(p, &t, UPDATE_SLOTS, "Update");
		if ((rc = fb_u8(&t, 0, 0, &u->type)) || (rc = fb_table(&t, 1, &m, &has_member)) ||
		    (rc = fb_u64(&t, 2, 0, &u->at)) || (rc = read_str(&t, 3, &u->backup, &u->has_backup)))
			return rc;
		if ((rc = need(p, has_member, "Update.update_type")))
			return rc;
		if (u->type == 0 || u->type > IC_UP_LAST) {
			unwritable(p, "its ops log has an update of type %u, which tether does not know: "
			           "it was written by a newer Icechunk", u->type);
			continue;
		}
		check_slots(p, &m, member_slots(u->type), "update");
		if ((rc = read_member(p, &m, u)))
			return rc;
	}
	return 0;
}

static int read_u16s(struct parse *p, const struct fb_table *root, unsigned slot, struct ic_u16s *out,
                     const char *field)
{
	struct fb_vec v;
	int rc = fb_vector(root, slot, 2, 2, &v, &out->present);
	if (rc || !v.n)
		return rc;
	if (!(out->v = alloc_n(p, v.n, sizeof *out->v)))
		return ic_fail_oom();
	out->n = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		out->v[i] = fb_le16(fb_vec_elem(&v, i));
		if (i > 0 && out->v[i - 1] >= out->v[i])
			unwritable(p, "its %s are not sorted", field);
	}
	return 0;
}

static int read_deleted(struct parse *p, const struct fb_table *root)
{
	struct ic_repo *r = p->r;
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, R_DELETED, 4, 4, &v, &present);
	if (rc || (rc = need(p, present, "Repo.deleted_tags")) || !v.n)
		return rc;
	if (!(r->deleted_tags = alloc_n(p, v.n, sizeof *r->deleted_tags)))
		return ic_fail_oom();
	r->ndeleted = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		const char *s;
		uint32_t n;
		if ((rc = fb_vec_string(&v, i, &s, &n)))
			return rc;
		r->deleted_tags[i] = (struct ic_str){s, n};
		if (i > 0 && ic_str_cmp(r->deleted_tags[i - 1], r->deleted_tags[i]) >= 0)
			unwritable(p, "its deleted tags are not in the sorted order Icechunk requires");
	}
	return 0;
}

static int check_indices(struct parse *p)
{
	const struct ic_repo *r = p->r;
	for (uint32_t i = 0; i < r->ntags; i++)
		if (r->tags[i].snap >= r->nsnaps)
			return corrupt(p, "tag %.*s names snapshot %u of %u", (int)r->tags[i].name.n, r->tags[i].name.p,
			               r->tags[i].snap, r->nsnaps);
	for (uint32_t i = 0; i < r->nbranches; i++)
		if (r->branches[i].snap >= r->nsnaps)
			return corrupt(p, "branch %.*s names snapshot %u of %u", (int)r->branches[i].name.n,
			               r->branches[i].name.p, r->branches[i].snap, r->nsnaps);
	return 0;
}

static int parse_root(struct parse *p)
{
	struct ic_repo *r = p->r;
	struct fb_table root, status;
	int present = 0, rc = fb_root(r->payload, r->payload_len, &root);
	if (rc)
		return rc;
	check_slots(p, &root, REPO_SLOTS, "Repo");
	if ((rc = fb_u8(&root, R_SPEC, 0, &r->spec_version)))
		return rc;
	if (r->spec_version < 1)
		return corrupt(p, "its spec version is %u", r->spec_version);
	if (r->spec_version > 2)
		unwritable(p, "its spec version is %u; tether writes spec 2 and below: upgrade tether",
		           r->spec_version);
	if ((rc = read_refs(p, &root, R_TAGS, "Repo.tags", &r->tags, &r->ntags)) ||
	    (rc = read_refs(p, &root, R_BRANCHES, "Repo.branches", &r->branches, &r->nbranches)) ||
	    (rc = read_deleted(p, &root)) || (rc = read_snapshots(p, &root)) ||
	    (rc = fb_table(&root, R_STATUS, &status, &present)) || (rc = need(p, present, "Repo.status")) ||
	    (rc = read_status(p, &status, &r->status)) || (rc = read_metas(p, &root, R_METADATA, &r->meta)) ||
	    (rc = read_updates(p, &root)) || (rc = read_str(&root, R_BEFORE, &r->before, &r->has_before)) ||
	    (rc = read_bytes(&root, R_CONFIG, &r->config, &r->has_config)) ||
	    (rc = read_u16s(p, &root, R_ENABLED, &r->enabled_flags, "enabled feature flags")) ||
	    (rc = read_u16s(p, &root, R_DISABLED, &r->disabled_flags, "disabled feature flags")) ||
	    (rc = read_bytes(&root, R_EXTRA, &r->extra, &r->has_extra)))
		return rc;
	return check_indices(p);
}

int ic_repo_parse(uint8_t *payload, size_t len, const char *what, struct ic_repo *out)
{
	memset(out, 0, sizeof *out);
	out->payload = payload;
	out->payload_len = len;
	struct parse p = {out, what, 0};
	int rc = parse_root(&p);
	if (rc) {
		if (rc == TETHER_EIO && !strstr(tether_error_last(), what))
			tether_error_set(rc, "%s: %s", what, tether_error_last());
		ic_repo_free(out);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

static fb_ref str_ref(struct fbb *b, struct ic_str s)
{
	return fbb_string(b, s.p ? s.p : "", s.n);
}

static fb_ref refs_vector(struct fbb *b, const struct ic_ref *refs, uint32_t n, fb_ref *scratch)
{
	for (uint32_t i = 0; i < n; i++) {
		fb_ref name = str_ref(b, refs[i].name);
		fbb_table_start(b);
		fbb_add_ref(b, 0, name);
		fbb_add_u32(b, 1, refs[i].snap);
		scratch[i] = fbb_table_end(b);
	}
	return fbb_vector_refs(b, scratch, n);
}

static fb_ref metas_vector(struct fbb *b, const struct ic_metas *m, fb_ref *scratch)
{
	for (uint32_t i = 0; i < m->n; i++) {
		fb_ref name = str_ref(b, m->v[i].name);
		fb_ref value = fbb_bytes(b, m->v[i].value.p, m->v[i].value.n);
		fbb_table_start(b);
		fbb_add_ref(b, 0, name);
		fbb_add_ref(b, 1, value);
		scratch[i] = fbb_table_end(b);
	}
	return fbb_vector_refs(b, scratch, m->n);
}

static fb_ref status_table(struct fbb *b, const struct ic_status *s)
{
	fb_ref reason = s->has_reason ? str_ref(b, s->reason) : 0;
	fbb_table_start(b);
	fbb_add_u8(b, 0, s->availability);
	fbb_add_u64(b, 1, s->set_at);
	if (reason)
		fbb_add_ref(b, 2, reason);
	return fbb_table_end(b);
}

static fb_ref snapshot_table(struct fbb *b, const struct ic_snap *s, fb_ref *scratch)
{
	fb_ref message = str_ref(b, s->message);
	fb_ref meta = s->meta.present ? metas_vector(b, &s->meta, scratch) : 0;
	fb_ref pruned = s->pruned_present ? fbb_vector(b, s->pruned, s->npruned, IC_ID_BYTES, 1) : 0;
	fbb_table_start(b);
	fbb_add_struct(b, 0, s->id.b, IC_ID_BYTES, 1);
	fbb_add_i32(b, 1, s->parent);
	fbb_add_u64(b, 2, s->flushed_at);
	fbb_add_ref(b, 3, message);
	if (meta)
		fbb_add_ref(b, 4, meta);
	if (pruned)
		fbb_add_ref(b, 5, pruned);
	return fbb_table_end(b);
}

static fb_ref member_table(struct fbb *b, const struct ic_update *u)
{
	fb_ref name = 0, status = 0;
	for (unsigned slot = 0; slot < 4; slot++) {
		if (member_fields[u->type][slot] == F_NAME)
			name = str_ref(b, u->name);
		if (member_fields[u->type][slot] == F_STATUS && u->has_status)
			status = status_table(b, &u->status);
	}
	fbb_table_start(b);
	for (unsigned slot = 0; slot < 4 && member_fields[u->type][slot] != F_END; slot++) {
		switch (member_fields[u->type][slot]) {
		case F_NAME:
			fbb_add_ref(b, slot, name);
			break;
		case F_PREV:
			fbb_add_struct(b, slot, u->prev.b, IC_ID_BYTES, 1);
			break;
		case F_NEXT:
			fbb_add_struct(b, slot, u->next.b, IC_ID_BYTES, 1);
			break;
		case F_FROM_VERSION:
			fbb_add_u8(b, slot, u->from_version);
			break;
		case F_TO_VERSION:
			fbb_add_u8(b, slot, u->to_version);
			break;
		case F_FLAG_ID:
			fbb_add_u16(b, slot, u->flag_id);
			break;
		case F_FLAG_VALUE:
			fbb_add_u8(b, slot, u->flag_value);
			break;
		case F_FLAG_SET:
			fbb_add_u8(b, slot, u->flag_set);
			break;
		case F_STATUS:
			if (status)
				fbb_add_ref(b, slot, status);
			break;
		}
	}
	return fbb_table_end(b);
}

static fb_ref update_table(struct fbb *b, const struct ic_update *u)
{
	fb_ref member = member_table(b, u);
	fb_ref backup = u->has_backup ? str_ref(b, u->backup) : 0;
	fbb_table_start(b);
	fbb_add_u8(b, 0, u->type);
	fbb_add_ref(b, 1, member);
	fbb_add_u64(b, 2, u->at);
	if (backup)
		fbb_add_ref(b, 3, backup);
	return fbb_table_end(b);
}

/* The model holds flags in host order; the file, little-endian. A
 * writable model's flags are sorted and distinct u16s: 65,536 at most. */
static fb_ref u16_vector(struct fbb *b, const struct ic_u16s *v, uint8_t *le)
{
	for (uint32_t i = 0; i < v->n; i++) {
		le[2 * i] = (uint8_t)v->v[i];
		le[2 * i + 1] = (uint8_t)(v->v[i] >> 8);
	}
	return fbb_vector(b, le, v->n, 2, 2);
}

static uint32_t max_count(const struct ic_repo *r)
{
	uint32_t m = r->ntags > r->nbranches ? r->ntags : r->nbranches;
	if (r->ndeleted > m)
		m = r->ndeleted;
	if (r->nsnaps > m)
		m = r->nsnaps;
	if (r->nupdates > m)
		m = r->nupdates;
	if (r->meta.n > m)
		m = r->meta.n;
	/* The feature flags' little-endian bytes borrow the inner scratch. */
	if (r->enabled_flags.n > m)
		m = r->enabled_flags.n;
	if (r->disabled_flags.n > m)
		m = r->disabled_flags.n;
	for (uint32_t i = 0; i < r->nsnaps; i++)
		if (r->snaps[i].meta.n > m)
			m = r->snaps[i].meta.n;
	return m;
}

int ic_repo_serialize(const struct ic_repo *r, uint8_t **out, size_t *len)
{
	if (r->unwritable[0])
		return tether_error_set(TETHER_EREFUSED, "tether will not rewrite this repository: %s", r->unwritable);
	/* Two scratch arrays: a vector's element refs, and (while a snapshot
	 * is built inside the snapshots vector) its metadata's. */
	uint32_t m = max_count(r);
	fb_ref *scratch = malloc((size_t)(m ? m : 1) * sizeof *scratch);
	fb_ref *inner = malloc((size_t)(m ? m : 1) * sizeof *inner);
	if (!scratch || !inner) {
		free(scratch);
		free(inner);
		return ic_fail_oom();
	}
	struct fbb b;
	fbb_init(&b);
	/* About the size it was read at: no doublings of a large buffer. */
	fbb_expect(&b, r->payload_len + 4096);
	fb_ref tags = refs_vector(&b, r->tags, r->ntags, scratch);
	fb_ref branches = refs_vector(&b, r->branches, r->nbranches, scratch);
	for (uint32_t i = 0; i < r->ndeleted; i++)
		scratch[i] = str_ref(&b, r->deleted_tags[i]);
	fb_ref deleted = fbb_vector_refs(&b, scratch, r->ndeleted);
	for (uint32_t i = 0; i < r->nsnaps; i++)
		scratch[i] = snapshot_table(&b, &r->snaps[i], inner);
	fb_ref snaps = fbb_vector_refs(&b, scratch, r->nsnaps);
	fb_ref status = status_table(&b, &r->status);
	fb_ref meta = r->meta.present ? metas_vector(&b, &r->meta, scratch) : 0;
	for (uint32_t i = 0; i < r->nupdates; i++)
		scratch[i] = update_table(&b, &r->updates[i]);
	fb_ref updates = fbb_vector_refs(&b, scratch, r->nupdates);
	fb_ref before = r->has_before ? str_ref(&b, r->before) : 0;
	fb_ref config = r->has_config ? fbb_bytes(&b, r->config.p, r->config.n) : 0;
	fb_ref enabled = r->enabled_flags.present ? u16_vector(&b, &r->enabled_flags, (uint8_t *)inner) : 0;
	fb_ref disabled = r->disabled_flags.present ? u16_vector(&b, &r->disabled_flags, (uint8_t *)inner) : 0;
	fb_ref extra = r->has_extra ? fbb_bytes(&b, r->extra.p, r->extra.n) : 0;
	fbb_table_start(&b);
	fbb_add_u8(&b, R_SPEC, r->spec_version);
	fbb_add_ref(&b, R_TAGS, tags);
	fbb_add_ref(&b, R_BRANCHES, branches);
	fbb_add_ref(&b, R_DELETED, deleted);
	fbb_add_ref(&b, R_SNAPSHOTS, snaps);
	fbb_add_ref(&b, R_STATUS, status);
	if (meta)
		fbb_add_ref(&b, R_METADATA, meta);
	fbb_add_ref(&b, R_UPDATES, updates);
	if (before)
		fbb_add_ref(&b, R_BEFORE, before);
	if (config)
		fbb_add_ref(&b, R_CONFIG, config);
	if (enabled)
		fbb_add_ref(&b, R_ENABLED, enabled);
	if (disabled)
		fbb_add_ref(&b, R_DISABLED, disabled);
	if (extra)
		fbb_add_ref(&b, R_EXTRA, extra);
	fb_ref root = fbb_table_end(&b);
	int rc = fbb_finish(&b, root, "Ichk", out, len);
	fbb_free(&b);
	free(scratch);
	free(inner);
	return rc;
}
