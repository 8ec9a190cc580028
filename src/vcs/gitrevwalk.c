/* See gitrevwalk.h. */
#include "util/fail.h"
#include "vcs/gitrevwalk.h"

#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Parsing a commit                                                    */
/* ------------------------------------------------------------------ */

/* "<header><40 hex>\n" at p (end bounds it): 1 when it is there. */
static int id_line(const char *p, const char *end, const char *header, unsigned char id[20])
{
	size_t h = strlen(header);
	return (size_t)(end - p) >= h + 41 && memcmp(p, header, h) == 0 && p[h + 40] == '\n' &&
	       tt_goid_from_hex(p + h, id) == 0;
}

/* The time of a signature line [p, nl) that starts with `header`, as
 * libgit2's git_signature__parse reads it: after the last '>' and one more
 * byte, optional blanks, a sign and at least one digit, within 64 bits; no
 * time at all is 0. 0, or -1 with *why. */
static int signature_time(const char *p, const char *nl, const char *header, int64_t *time, const char **why)
{
	size_t h = strlen(header);
	const char *lt = NULL, *gt = NULL;

	*time = 0;
	if ((size_t)(nl - p) <= h || memcmp(p, header, h) != 0)
		return *why = "a signature line is missing", -1;
	for (const char *c = p + h; c < nl; c++) {
		if (*c == '<')
			lt = c;
		else if (*c == '>')
			gt = c;
	}
	if (!lt || !gt || gt < lt)
		return *why = "a malformed e-mail in a signature", -1;
	if (gt + 2 >= nl)
		return 0;
	const char *c = gt + 2;
	int neg = 0, digits = 0;
	while (c < nl && (*c == ' ' || (*c >= '\t' && *c <= '\r')))
		c++;
	if (c < nl && (*c == '-' || *c == '+'))
		neg = *c++ == '-';
	for (int64_t v = 0; c < nl && *c >= '0' && *c <= '9'; c++, digits++) {
		int d = *c - '0';
		if (neg ? v < (INT64_MIN + d) / 10 : v > (INT64_MAX - d) / 10)
			return *why = "a signature's time overflows", -1;
		v = v * 10 + (neg ? -d : d);
		*time = v;
	}
	if (!digits)
		return *why = "a signature's time is not a number", -1;
	return 0;
}

int tt_gcommit_parse(const unsigned char *data, size_t len, struct tt_gcommit *c, const char **why)
{
	const char *p = (const char *)data, *end = p + len, *nl;
	unsigned char parent[20];

	memset(c, 0, sizeof *c);
	if (!id_line(p, end, "tree ", c->tree))
		return *why = "no tree line", -1;
	p += 46;
	c->parent_hex = p + 7;
	while (id_line(p, end, "parent ", parent)) {
		c->nparents++;
		p += 48;
	}
	/* Tools that write several author lines exist; libgit2 reads past
	 * them (each must still be a signature), then needs the committer. */
	for (;;) {
		if (!(nl = memchr(p, '\n', (size_t)(end - p))))
			return *why = "a header line without its newline", -1;
		if ((size_t)(nl - p) < 7 || memcmp(p, "author ", 7) != 0)
			break;
		int64_t ignored;
		if (signature_time(p, nl, "author ", &ignored, why) < 0)
			return -1;
		p = nl + 1;
	}
	return signature_time(p, nl, "committer ", &c->time, why);
}

/* ------------------------------------------------------------------ */
/* The walk                                                            */
/* ------------------------------------------------------------------ */

struct node {
	unsigned char id[20], tree[20];
	int64_t time;
	size_t first_parent, nparents; /* into walk.edges */
	unsigned parsed : 1, seen : 1, added : 1;
};

/* A list cell (libgit2's git_commit_list): node index, next cell + 1. */
struct cell {
	size_t node, next;
};

struct walk {
	const struct tt_grepo *repo;
	struct tt_godb *db;
	struct node *nodes;
	size_t nnodes, capnodes;
	size_t *slots; /* open addressing over ids: node index + 1, 0 empty */
	size_t capslots;
	size_t *edges; /* parents' node indices */
	size_t nedges, capedges;
	struct cell *cells;
	size_t ncells, capcells, free_cell; /* free_cell: a freed cell + 1 */
	size_t *pushed;                     /* tips in push order */
	size_t npushed, cappushed;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 64;
	while (cap2 < need)
		cap2 *= 2;
	void *g = realloc(*v, cap2 * size);
	if (!g)
		return tt_fail_oom();
	*v = g;
	*cap = cap2;
	return 0;
}

static size_t *slot_of(const struct walk *w, const unsigned char id[20])
{
	size_t h, mask = w->capslots - 1;
	memcpy(&h, id, sizeof h); /* an object id is already a uniform digest */
	for (size_t i = h & mask;; i = (i + 1) & mask)
		if (!w->slots[i] || memcmp(w->nodes[w->slots[i] - 1].id, id, 20) == 0)
			return &w->slots[i];
}

/* The node of `id`, made when new (libgit2's git_revwalk__commit_lookup). */
static int lookup(struct walk *w, const unsigned char id[20], size_t *out)
{
	if (2 * (w->nnodes + 1) > w->capslots) {
		size_t cap = w->capslots ? 2 * w->capslots : 256;
		size_t *slots = calloc(cap, sizeof *slots);
		if (!slots)
			return tt_fail_oom();
		free(w->slots);
		w->slots = slots;
		w->capslots = cap;
		for (size_t i = 0; i < w->nnodes; i++)
			*slot_of(w, w->nodes[i].id) = i + 1;
	}
	size_t *slot = slot_of(w, id);
	if (*slot) {
		*out = *slot - 1;
		return 0;
	}
	if (grow((void **)&w->nodes, &w->capnodes, w->nnodes + 1, sizeof *w->nodes) < 0)
		return -1;
	memset(&w->nodes[w->nnodes], 0, sizeof *w->nodes);
	memcpy(w->nodes[w->nnodes].id, id, 20);
	*slot = w->nnodes + 1;
	*out = w->nnodes++;
	return 0;
}

static int damaged(const unsigned char id[20], const char *what)
{
	char hex[41];
	tt_goid_hex(id, hex);
	return tether_error_set(TETHER_ERROR, "cannot walk the history: commit %s %s", hex, what);
}

/* Read node n's time and parents (libgit2's git_commit_list_parse). */
static int parse_node(struct walk *w, size_t n)
{
	enum tt_gobj_type type;
	unsigned char *data = NULL, id[20];
	size_t len;
	const char *why = NULL;
	struct tt_gcommit c = {0};
	int rc;

	if (w->nodes[n].parsed)
		return 0;
	memcpy(id, w->nodes[n].id, 20);
	rc = tt_godb_read(w->db, id, &type, &data, &len);
	if (rc == TETHER_ENOTFOUND)
		return damaged(id, "is not in the repository");
	if (rc < 0)
		return rc;
	if (type != TT_GOBJ_COMMIT)
		rc = damaged(id, type == TT_GOBJ_TREE || type == TT_GOBJ_BLOB || type == TT_GOBJ_TAG
		                     ? "is not a commit object"
		                     : "has an unknown type");
	else if (tt_gcommit_parse(data, len, &c, &why) < 0) {
		char what[96];
		snprintf(what, sizeof what, "is malformed: %s", why);
		rc = damaged(id, what);
	}
	for (size_t i = 0; rc == 0 && i < c.nparents; i++) {
		unsigned char pid[20];
		size_t p;
		tt_goid_from_hex(c.parent_hex + 48 * i, pid);
		if ((rc = lookup(w, pid, &p)) == 0 &&
		    (rc = grow((void **)&w->edges, &w->capedges, w->nedges + 1, sizeof *w->edges)) == 0)
			w->edges[w->nedges++] = p;
	}
	if (rc == 0) {
		struct node *node = &w->nodes[n]; /* lookup may have moved the array */
		node->time = c.time;
		memcpy(node->tree, c.tree, 20);
		node->first_parent = w->nedges - c.nparents;
		node->nparents = c.nparents;
		node->parsed = 1;
	}
	free(data);
	return rc;
}

/* A new cell for node n before *link (the list's head, or a cell's next). */
static int insert_at(struct walk *w, size_t *link, size_t n)
{
	size_t c;
	if (w->free_cell) {
		c = w->free_cell - 1;
		w->free_cell = w->cells[c].next;
	} else {
		if (grow((void **)&w->cells, &w->capcells, w->ncells + 1, sizeof *w->cells) < 0)
			return -1;
		c = w->ncells++;
	}
	w->cells[c].node = n;
	w->cells[c].next = *link;
	*link = c + 1;
	return 0;
}

/* libgit2's git_commit_list_insert_by_date: before the first commit with
 * an older time. */
static int insert_by_date(struct walk *w, size_t *head, size_t n)
{
	size_t *link = head;
	while (*link && w->nodes[w->cells[*link - 1].node].time >= w->nodes[n].time)
		link = &w->cells[*link - 1].next;
	return insert_at(w, link, n);
}

static size_t pop(struct walk *w, size_t *head)
{
	size_t c = *head - 1, n = w->cells[c].node;
	*head = w->cells[c].next;
	w->cells[c].next = w->free_cell;
	w->free_cell = c + 1;
	return n;
}

/* The commit `id` names, peeling annotated tags: 0 with *commit, 1 when it
 * names no commit (a tree, a blob, a tag of one, an object that is not
 * there: git_revwalk_push_glob skips those), 2 when libgit2 should judge
 * it (a tag this reader does not parse, one whose target is not of the
 * type it says, a chain too long), < 0 on damage. */
static int peel(struct walk *w, const unsigned char id[20], unsigned char commit[20])
{
	unsigned char at[20];
	enum tt_gobj_type said = 0; /* what the tag that led here says it tags */
	memcpy(at, id, 20);
	for (int depth = 0; depth < 64; depth++) {
		enum tt_gobj_type type;
		unsigned char *data;
		size_t len;
		int rc = tt_godb_read(w->db, at, &type, &data, &len);
		if (rc == TETHER_ENOTFOUND)
			return 1;
		if (rc < 0)
			return rc;
		if (said && type != said) {
			free(data);
			return 2;
		}
		if (type != TT_GOBJ_TAG) {
			free(data);
			if (type != TT_GOBJ_COMMIT)
				return 1;
			memcpy(commit, at, 20);
			return 0;
		}
		/* "object <hex>\ntype <name>\n" */
		const char *p = (const char *)data, *end = p + len, *nl;
		said = 0;
		if (id_line(p, end, "object ", at) && (size_t)(end - p) > 53 && memcmp(p + 48, "type ", 5) == 0 &&
		    (nl = memchr(p + 53, '\n', (size_t)(end - p - 53)))) {
			size_t n = (size_t)(nl - (p + 53));
			for (enum tt_gobj_type t = TT_GOBJ_COMMIT; t <= TT_GOBJ_TAG; t++)
				if (strlen(tt_gobj_type_name(t)) == n && memcmp(p + 53, tt_gobj_type_name(t), n) == 0)
					said = t;
		}
		free(data);
		if (!said)
			return 2;
	}
	return 2;
}

/* A tip (libgit2's git_revwalk__push_commit). */
static int push(struct walk *w, const unsigned char commit[20])
{
	size_t n;
	int rc = lookup(w, commit, &n);
	if (rc == 0 && (rc = grow((void **)&w->pushed, &w->cappushed, w->npushed + 1, sizeof *w->pushed)) == 0)
		w->pushed[w->npushed++] = n;
	return rc;
}

/* Why a tip from a ref is not pushed: that it names no commit is normal
 * (a tag of a tree); that libgit2 might judge it otherwise is not. */
struct ref_push {
	struct walk *w;
	int doubt;
};

static int push_ref(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled,
                    int symbolic)
{
	struct ref_push *rp = ud;
	unsigned char commit[20];
	int rc = peel(rp->w, id, commit);
	(void)name;
	(void)peeled; /* the object itself says what it peels to */
	(void)symbolic;
	if (rc == 0)
		return push(rp->w, commit);
	if (rc != 1)
		rp->doubt = 1; /* unreadable, or libgit2's to judge */
	return 0;
}

static int push_tips(struct walk *w)
{
	struct ref_push rp = {w, 0};
	unsigned char head[20], commit[20];
	int rc = tt_gref_each_as_libgit2(w->repo, "refs/", push_ref, &rp);

	if (rc != 0 || rp.doubt)
		return rc < 0 || rp.doubt ? 1 : rc;
	rc = tt_gref_resolve(w->repo, "HEAD", head, NULL);
	if (rc == 1)
		return 0; /* unborn: nothing (the caller checks for that, as here) */
	if (rc < 0 || peel(w, head, commit) != 0)
		return 1; /* libgit2 words what is wrong with HEAD */
	return push(w, commit);
}

static void walk_free(struct walk *w)
{
	free(w->nodes);
	free(w->slots);
	free(w->edges);
	free(w->cells);
	free(w->pushed);
}

int tt_grevwalk_all(const struct tt_grepo *r, struct tt_godb *db, unsigned char **ids, size_t *n)
{
	struct walk w = {.repo = r, .db = db};
	size_t head = 0, nout = 0, cap = 0;
	unsigned char *out = NULL;
	int rc = push_tips(&w);

	*ids = NULL;
	*n = 0;
	/* prepare_walk: the pushed tips, last push first, each parsed and put
	 * at the front unless met already; so first pushes come first. */
	for (size_t i = w.npushed; rc == 0 && i-- > 0;) {
		size_t t = w.pushed[i];
		if ((rc = parse_node(&w, t)) == 0 && !w.nodes[t].seen) {
			w.nodes[t].seen = 1;
			rc = insert_at(&w, &head, t);
		}
	}
	/* get_revision: take the first, queue its parents by date. */
	while (rc == 0 && head) {
		size_t c = pop(&w, &head);
		if (!w.nodes[c].added) {
			w.nodes[c].added = 1;
			for (size_t i = 0; rc == 0 && i < w.nodes[c].nparents; i++) {
				size_t p = w.edges[w.nodes[c].first_parent + i];
				if ((rc = parse_node(&w, p)) == 0 && !w.nodes[p].seen) {
					w.nodes[p].seen = 1;
					rc = insert_by_date(&w, &head, p);
				}
			}
		}
		if (rc == 0 && (rc = grow((void **)&out, &cap, 40 * (nout + 1), 1)) == 0) {
			memcpy(out + 40 * nout, w.nodes[c].id, 20);
			memcpy(out + 40 * nout++ + 20, w.nodes[c].tree, 20);
		}
	}
	walk_free(&w);
	if (rc != 0) {
		free(out);
		return rc;
	}
	*ids = out;
	*n = nout;
	return 0;
}
