/* The local scanner: a parallel directory walk that hashes every regular
 * file not vouched for by the hash cache (see hashcache.h).
 *
 * A small pool of worker threads shares one queue of tasks of two kinds:
 * "read this directory" and "hash this batch of files of a directory read
 * earlier". Hash tasks are taken first, which keeps the number of open
 * directories low, and the largest queued first, so that a big file is not
 * left to hash on one core while the others idle at the end; directory
 * tasks are taken last-in first-out, so the walk
 * goes roughly depth first and a parent stays open only while children of
 * it wait. Everything is opened relative to the parent directory's fd
 * (openat/fstatat), so no path is resolved twice.
 *
 * Each directory becomes a node holding its entries and its subdirectory
 * nodes, each list sorted as the full paths will sort. Concatenating the
 * nodes depth first, merging each node's entries with its subdirectories,
 * then gives the entries in strcmp order of their full paths without a
 * global sort: within a directory, a subdirectory "d" is ordered as the
 * string "d/", since every path under it starts so. */
#include "core/scan.h"

#include <tether/backend.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/filehash.h"
#include "core/hashcache.h"
#include "util/hash.h"
#include "util/utf8.h"
#include "util/plural.h"

/* A hash task covers files of one directory until it holds this many bytes
 * or files: small enough to spread over the pool, big enough that the
 * queue's lock is not taken once per small file. */
#define BATCH_BYTES ((uint64_t)1 << 20)
#define BATCH_FILES 64
#define MAX_THREADS 256
#define PROGRESS_DELAY_NS 1000000000LL
#define PROGRESS_PERIOD_NS 100000000LL
#define MESSAGE_SIZE 1024
/* A file written during every read of it: its state is not recorded. */
#define UNSTABLE_MESSAGE                                                                  \
	"'%s' kept changing while it was hashed (%d reads): refusing to record a state "      \
	"it never had; retry once nothing writes to it"
/* A tree whose directories changed during every walk of it. */
#define TREE_UNSTABLE_MESSAGE                                                             \
	"'%s' kept changing while it was scanned (%d walks): files were added, removed or "   \
	"renamed in it meanwhile; refusing to record a state it never had; retry once nothing " \
	"writes to it"

/* One entry of a directory, in 80 bytes: a walk of a million files holds
 * a million of these, and nothing else per file (the name lives in its
 * directory's names arena, the full path is put together when needed). */
struct item {
	unsigned char sha256[32]; /* of the content; of the target for a link */
	struct tt_hashcache_stat st; /* st.size is the entry's size (0 for a link) */
	int64_t hashed_ns;
	uint32_t name_off;       /* the name in the node's names, NUL; a link's target follows */
	char kind;               /* enum tt_scan_kind */
	unsigned char follow;    /* a symlink read through to its target */
	unsigned char needs_hash;
	unsigned char cacheable; /* st and hashed_ns describe the content hashed */
};
_Static_assert(sizeof(struct item) == 80, "an entry of the walk is 80 bytes");

/* What adding, removing or renaming an entry of a directory moves. */
struct dir_stat {
	uint64_t dev, ino;
	int64_t mtime_ns, ctime_ns;
};

struct dir_node {
	struct dir_node *parent;
	char *relpath;     /* "" for the root */
	size_t name_off;   /* where the directory's own name starts in relpath */
	DIR *dir;
	int fd;
	atomic_int refs;   /* reading + each waiting child + each hash task */
	struct item *items;
	size_t nitems, items_cap;
	char *names;       /* the items' names (and link targets), NUL-separated */
	size_t names_len, names_cap;
	struct dir_node **subdirs;
	size_t nsubdirs, subdirs_cap;
	size_t *misses;    /* indices of the items to hash */
	size_t nmisses;
	size_t next_item, next_subdir; /* cursors of the depth-first walks at the end */
	struct dir_stat opened; /* the directory as it was when opened */
};

struct task {
	struct dir_node *node;
	size_t begin, end; /* a hash task's range of node->misses */
	uint64_t bytes;    /* a hash task's bytes to read: the queue's priority */
};

struct task_stack {
	struct task *tasks;
	size_t len, cap;
};

struct scan {
	tether_progress_fn progress_fn; /* NULL: no progress is drawn */
	void *progress_ud;
	const char *root;
	int root_has_slash;
	const struct tt_hashcache *cache;
	const char *skip_name;
	char **skip_dirs;
	size_t nskip;

	pthread_mutex_t lock;
	pthread_cond_t work_ready;
	pthread_cond_t all_done;
	struct task_stack dir_tasks, hash_tasks;
	size_t outstanding; /* queued or running tasks */
	/* Started lazily by the calling thread (worker 0): the helpers
	 * workers[1 .. nthreads), once two tasks wait at the same time, so a
	 * small tree is walked without starting a thread. */
	struct worker *workers;
	int nthreads, started, spawned;
	int err_code;
	char err_msg[MESSAGE_SIZE];

	atomic_int failed;
	atomic_uint_fast64_t files_seen;
	atomic_uint_fast64_t bytes_read;
	atomic_size_t total_items;
};

struct worker {
	struct scan *s;
	pthread_t thread;
	unsigned char *buf; /* read buffer, allocated on the first hash */
	char *path;         /* scratch relative path */
	size_t path_cap;
	struct task_stack new_dirs, new_hashes; /* produced by the running task */
	struct tt_hashcache_view view; /* the cache's records of the directory being read */
	uint64_t files_hashed, bytes_hashed, cache_hits;
	uint64_t new_records; /* files hashed that the cache can vouch for next time */
};

/* ---- errors ---- */

/* Record the first failure; later ones are consequences or noise. */
static int scan_fail(struct scan *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int scan_fail(struct scan *s, int code, const char *fmt, ...)
{
	char msg[MESSAGE_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&s->lock);
	if (!atomic_load(&s->failed)) {
		s->err_code = code;
		memcpy(s->err_msg, msg, sizeof msg);
		atomic_store(&s->failed, 1);
	}
	pthread_mutex_unlock(&s->lock);
	return -1;
}

/* The path as the user knows it, for messages. */
static void full_path(const struct scan *s, const char *rel, char *out, size_t size)
{
	/* A message may cut a long path short: the length is looked at only
	 * so that the compiler knows the cut is meant. */
	int n = rel[0] == '\0' ? snprintf(out, size, "%s", s->root)
	                       : snprintf(out, size, "%s%s%s", s->root, s->root_has_slash ? "" : "/", rel);
	if (n < 0 && size)
		out[0] = '\0';
}

/* What a stop asked mid-walk says (tether_cancel). */
static const char *cancel_message(const char *root)
{
	static _Thread_local char msg[MESSAGE_SIZE];
	snprintf(msg, sizeof msg, "cancelled (%s): scanning '%s' stopped", tt_cancel_why(), root);
	return msg;
}

static int fail_errno(struct scan *s, const char *what, const char *rel, int err)
{
	char path[MESSAGE_SIZE];
	full_path(s, rel, path, sizeof path);
	return scan_fail(s, TETHER_EIO, "%s '%s': %s", what, path, strerror(err));
}

static int fail_oom(struct scan *s)
{
	return scan_fail(s, TETHER_ERROR, "scanning '%s': out of memory", s->root);
}

static const char *special_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a fifo";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "not a regular file";
}

/* ---- small helpers ---- */

static int grow(void **array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem)
		return -1;
	void *p = realloc(*array, n * elem);
	if (!p)
		return -1;
	*array = p;
	*cap = n;
	return 0;
}

static int64_t timespec_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_ns(ts);
}

static void stat_fields(const struct stat *st, struct tt_hashcache_stat *out)
{
	out->size = (uint64_t)st->st_size;
	out->mtime_ns = timespec_ns(st->st_mtim);
	out->ctime_ns = timespec_ns(st->st_ctim);
	out->inode = (uint64_t)st->st_ino;
}

static void dir_stat_of(const struct stat *st, struct dir_stat *out)
{
	out->dev = (uint64_t)st->st_dev;
	out->ino = (uint64_t)st->st_ino;
	out->mtime_ns = timespec_ns(st->st_mtim);
	out->ctime_ns = timespec_ns(st->st_ctim);
}

/* Compare two directory names as the strings "a/" and "b/". */
static int cmp_as_dirs(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	unsigned char ca = *a ? (unsigned char)*a : '/';
	unsigned char cb = *b ? (unsigned char)*b : '/';
	return (ca > cb) - (ca < cb);
}

/* Does the entry name sort before everything under directory "dir/"? */
static int name_before_dir(const char *name, const char *dir)
{
	while (*dir && *name == *dir) {
		name++;
		dir++;
	}
	unsigned char cn = (unsigned char)*name;
	unsigned char cd = *dir ? (unsigned char)*dir : '/';
	return cn < cd;
}

static const char *item_name(const struct dir_node *node, const struct item *it)
{
	return node->names + it->name_off;
}

/* qsort has no context argument: the names being sorted, per thread. */
static _Thread_local const char *sorting_names;

static int cmp_items(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	return strcmp(sorting_names + x->name_off, sorting_names + y->name_off);
}

static int cmp_subdirs(const void *a, const void *b)
{
	const struct dir_node *x = *(struct dir_node *const *)a;
	const struct dir_node *y = *(struct dir_node *const *)b;
	return cmp_as_dirs(x->relpath + x->name_off, y->relpath + y->name_off);
}

/* ---- the task queue ---- */

static void node_release(struct dir_node *node)
{
	if (atomic_fetch_sub(&node->refs, 1) == 1 && node->dir) {
		closedir(node->dir);
		node->dir = NULL;
		node->fd = -1;
	}
}

static void task_push(struct task_stack *st, struct task t)
{
	st->tasks[st->len++] = t;
}

static int task_pop(struct task_stack *st, struct task *t)
{
	if (st->len == 0)
		return 0;
	*t = st->tasks[--st->len];
	return 1;
}

/* The hash tasks are a max-heap by bytes: the largest is taken first. */
static void heap_push(struct task_stack *st, struct task t)
{
	size_t i = st->len++;
	while (i > 0 && st->tasks[(i - 1) / 2].bytes < t.bytes) {
		st->tasks[i] = st->tasks[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	st->tasks[i] = t;
}

static int heap_pop(struct task_stack *st, struct task *t)
{
	if (st->len == 0)
		return 0;
	*t = st->tasks[0];
	struct task last = st->tasks[--st->len];
	size_t i = 0, n = st->len;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && st->tasks[c + 1].bytes > st->tasks[c].bytes)
			c++;
		if (st->tasks[c].bytes <= last.bytes)
			break;
		st->tasks[i] = st->tasks[c];
		i = c;
	}
	if (n)
		st->tasks[i] = last;
	return 1;
}

/* A task not run (the scan failed) still lets go of what it holds. */
static void task_discard(struct task t, int is_dir)
{
	if (is_dir) {
		if (t.node->parent)
			node_release(t.node->parent);
	} else {
		node_release(t.node);
	}
}

/* Move the tasks a worker produced onto the shared stacks; the caller
 * holds the lock. Returns how many were queued. */
static size_t queue_new_tasks(struct scan *s, struct worker *w)
{
	size_t added = 0;
	struct task_stack *from[2] = {&w->new_dirs, &w->new_hashes};
	struct task_stack *to[2] = {&s->dir_tasks, &s->hash_tasks};
	for (int k = 0; k < 2; k++) {
		if (grow((void **)&to[k]->tasks, &to[k]->cap, to[k]->len + from[k]->len,
		         sizeof(struct task)) != 0) {
			struct task t;
			while (task_pop(from[k], &t))
				task_discard(t, k == 0);
			if (!atomic_load(&s->failed)) {
				s->err_code = TETHER_ERROR;
				snprintf(s->err_msg, sizeof s->err_msg, "scanning '%s': out of memory",
				         s->root);
				atomic_store(&s->failed, 1);
			}
			continue;
		}
		struct task t;
		while (task_pop(from[k], &t)) {
			if (k == 0)
				task_push(to[k], t);
			else
				heap_push(to[k], t);
			added++;
		}
	}
	return added;
}

/* ---- reading a directory ---- */

static int path_reserve(struct worker *w, size_t need)
{
	return grow((void **)&w->path, &w->path_cap, need, 1);
}

/* A new item named name (and, for a link, its target after it in the
 * names arena). */
static struct item *new_item(struct dir_node *node, const char *name, const char *target)
{
	size_t nl = strlen(name) + 1, tl = target ? strlen(target) + 1 : 0;
	if (node->names_len + nl + tl > UINT32_MAX ||
	    grow((void **)&node->items, &node->items_cap, node->nitems + 1, sizeof(struct item)) != 0 ||
	    grow((void **)&node->names, &node->names_cap, node->names_len + nl + tl, 1) != 0)
		return NULL;
	struct item *it = &node->items[node->nitems];
	memset(it, 0, sizeof *it);
	it->name_off = (uint32_t)node->names_len;
	memcpy(node->names + node->names_len, name, nl);
	if (target)
		memcpy(node->names + node->names_len + nl, target, tl);
	node->names_len += nl + tl;
	return it;
}

/* A link's target, stored after its name. */
static const char *item_target(const struct dir_node *node, const struct item *it)
{
	const char *name = item_name(node, it);
	return name + strlen(name) + 1;
}

static int is_skipped_dir(const struct scan *s, const char *rel)
{
	for (size_t i = 0; i < s->nskip; i++) {
		if (strcmp(s->skip_dirs[i], rel) == 0)
			return 1;
	}
	return 0;
}

static int add_subdir(struct worker *w, struct dir_node *node, size_t rel_len, size_t name_off)
{
	struct scan *s = w->s;
	if (is_skipped_dir(s, w->path))
		return 0;
	struct dir_node *child = calloc(1, sizeof *child);
	if (!child || grow((void **)&node->subdirs, &node->subdirs_cap, node->nsubdirs + 1,
	                   sizeof *node->subdirs) != 0) {
		free(child);
		return fail_oom(s);
	}
	child->relpath = malloc(rel_len + 1);
	if (!child->relpath) {
		free(child);
		return fail_oom(s);
	}
	memcpy(child->relpath, w->path, rel_len + 1);
	child->name_off = name_off;
	child->parent = node;
	child->fd = -1;
	atomic_init(&child->refs, 1);
	node->subdirs[node->nsubdirs++] = child;
	return 0;
}

static int add_file(struct worker *w, struct dir_node *node, size_t name_off, const struct stat *st,
                    int follow)
{
	struct item *it = new_item(node, w->path + name_off, NULL);
	if (!it)
		return fail_oom(w->s);
	node->nitems++;
	it->kind = TT_SCAN_FILE;
	it->follow = (unsigned char)follow;
	stat_fields(st, &it->st);
	it->needs_hash = 1; /* until the cache vouches for it */
	return 0;
}

/* readlinkat into a malloc'd string, growing until the target fits. */
static char *read_link(int dirfd, const char *name, size_t hint, int *err)
{
	size_t cap = hint + 1 > 64 ? hint + 1 : 64;
	for (;;) {
		char *buf = malloc(cap);
		if (!buf) {
			*err = ENOMEM;
			return NULL;
		}
		ssize_t n = readlinkat(dirfd, name, buf, cap);
		if (n < 0) {
			*err = errno;
			free(buf);
			return NULL;
		}
		if ((size_t)n < cap) {
			buf[n] = '\0';
			return buf;
		}
		free(buf);
		cap *= 2;
	}
}

static int add_link(struct worker *w, struct dir_node *node, const char *name, const struct stat *lst)
{
	int err = 0;
	char *target = read_link(node->fd, name, (size_t)lst->st_size, &err);
	if (!target)
		return err == ENOMEM ? fail_oom(w->s) : fail_errno(w->s, "cannot read symlink", w->path, err);
	struct item *it = new_item(node, name, target);
	if (!it) {
		free(target);
		return fail_oom(w->s);
	}
	node->nitems++;
	it->kind = TT_SCAN_LINK;
	tt_sha256(target, strlen(target), it->sha256);
	free(target);
	return 0;
}

/* A symlink to a regular file is read through; one to a directory, or one
 * that leads nowhere, is recorded by its target and not followed (no
 * cycles, no escaping the tree); one to anything else is refused like the
 * thing itself. */
static int add_symlink(struct worker *w, struct dir_node *node, const char *name, size_t name_off,
                       const struct stat *lst)
{
	struct stat st;
	if (fstatat(node->fd, name, &st, 0) != 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
			return add_link(w, node, name, lst);
		return fail_errno(w->s, "cannot follow symlink", w->path, errno);
	}
	if (S_ISREG(st.st_mode))
		return add_file(w, node, name_off, &st, 1);
	if (S_ISDIR(st.st_mode))
		return add_link(w, node, name, lst);
	char path[MESSAGE_SIZE];
	full_path(w->s, w->path, path, sizeof path);
	return scan_fail(w->s, TETHER_EIO,
	                 "'%s' is a symlink to %s: only regular files, directories and symlinks "
	                 "can be scanned", path, special_kind(st.st_mode));
}

static int add_entry(struct worker *w, struct dir_node *node, const struct dirent *d,
                     size_t prefix_len)
{
	const char *name = d->d_name;
	if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
		return 0;
	if (!node->parent && w->s->skip_name && strcmp(name, w->s->skip_name) == 0)
		return 0;
	size_t name_len = strlen(name);
	size_t rel_len = prefix_len + name_len;
	if (path_reserve(w, rel_len + 1) != 0)
		return fail_oom(w->s);
	memcpy(w->path + prefix_len, name, name_len + 1);

	/* Directories need no stat: openat(O_DIRECTORY | O_NOFOLLOW) checks. */
	if (d->d_type == DT_DIR)
		return add_subdir(w, node, rel_len, prefix_len);
	struct stat st;
	if (fstatat(node->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return fail_errno(w->s, "cannot stat", w->path, errno);
	if (S_ISDIR(st.st_mode))
		return add_subdir(w, node, rel_len, prefix_len);
	if (S_ISREG(st.st_mode))
		return add_file(w, node, prefix_len, &st, 0);
	if (S_ISLNK(st.st_mode))
		return add_symlink(w, node, name, prefix_len, &st);
	char path[MESSAGE_SIZE];
	full_path(w->s, w->path, path, sizeof path);
	return scan_fail(w->s, TETHER_EIO,
	                 "'%s' is %s: only regular files, directories and symlinks can be scanned",
	                 path, special_kind(st.st_mode));
}

static int open_node(struct worker *w, struct dir_node *node)
{
	const char *name = node->relpath + node->name_off;
	int fd = openat(node->parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err = errno;
	/* The parent was held open only for this. */
	node_release(node->parent);
	if (fd < 0)
		return fail_errno(w->s, "cannot open directory", node->relpath, err);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		err = errno;
		close(fd);
		return fail_errno(w->s, "cannot stat directory", node->relpath, err);
	}
	dir_stat_of(&st, &node->opened);
	node->dir = fdopendir(fd);
	if (!node->dir) {
		err = errno;
		close(fd);
		return fail_errno(w->s, "cannot open directory", node->relpath, err);
	}
	node->fd = fd;
	return 0;
}

static int read_entries(struct worker *w, struct dir_node *node)
{
	size_t prefix_len = strlen(node->relpath);
	if (path_reserve(w, prefix_len + 2) != 0)
		return fail_oom(w->s);
	memcpy(w->path, node->relpath, prefix_len);
	if (prefix_len > 0)
		w->path[prefix_len++] = '/';
	for (;;) {
		errno = 0;
		struct dirent *d = readdir(node->dir);
		if (!d)
			break;
		if (add_entry(w, node, d, prefix_len) != 0)
			return -1;
		/* add_entry may grow w->path; the prefix stays in place. */
	}
	if (errno != 0)
		return fail_errno(w->s, "cannot read directory", node->relpath, errno);
	return 0;
}

/* Take from the cache the hashes of the files whose stat it still
 * matches. The directory's records come sorted by name like the items,
 * so one merge pass finds them, reading the records in file order. */
static void match_cache(struct worker *w, struct dir_node *node)
{
	size_t dir_len = strlen(node->relpath);
	size_t nrecs = tt_hashcache_read_dir(w->s->cache, node->relpath, dir_len, &w->view);
	/* A record's path is the directory, '/', the name (just the name at
	 * the root). */
	size_t name_off = dir_len ? dir_len + 1 : 0;
	size_t r = 0;
	for (size_t i = 0; i < node->nitems && r < nrecs; i++) {
		struct item *it = &node->items[i];
		if (it->kind != TT_SCAN_FILE)
			continue;
		const char *name = item_name(node, it);
		int c = 1;
		while (r < nrecs && (c = strcmp(tt_hashcache_view_path(&w->view, r) + name_off, name)) < 0)
			r++;
		if (r == nrecs || c != 0)
			continue;
		const struct tt_hashcache_rec *rec = &w->view.recs[r++];
		if (!tt_hashcache_matches(rec, &it->st))
			continue;
		memcpy(it->sha256, rec->sha256, 32);
		it->hashed_ns = rec->hashed_ns;
		it->cacheable = 1;
		it->needs_hash = 0;
		w->cache_hits++;
	}
}

/* Queue the subdirectories and the files to hash, in batches. */
static int plan_work(struct worker *w, struct dir_node *node)
{
	size_t nmisses = 0;
	for (size_t i = 0; i < node->nitems; i++)
		nmisses += node->items[i].needs_hash;
	if (nmisses) {
		node->misses = malloc(nmisses * sizeof *node->misses);
		if (!node->misses)
			return fail_oom(w->s);
		for (size_t i = 0; i < node->nitems; i++) {
			if (node->items[i].needs_hash)
				node->misses[node->nmisses++] = i;
		}
	}
	if (grow((void **)&w->new_dirs.tasks, &w->new_dirs.cap, node->nsubdirs,
	         sizeof(struct task)) != 0 ||
	    grow((void **)&w->new_hashes.tasks, &w->new_hashes.cap, nmisses, sizeof(struct task)) != 0)
		return fail_oom(w->s);

	/* Pushed last to first, so the first subdirectory is taken first. */
	for (size_t i = node->nsubdirs; i-- > 0;) {
		atomic_fetch_add(&node->refs, 1);
		task_push(&w->new_dirs, (struct task){.node = node->subdirs[i]});
	}
	size_t begin = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < nmisses; i++) {
		bytes += node->items[node->misses[i]].st.size;
		if (bytes >= BATCH_BYTES || i + 1 - begin >= BATCH_FILES || i + 1 == nmisses) {
			atomic_fetch_add(&node->refs, 1);
			task_push(&w->new_hashes,
			          (struct task){.node = node, .begin = begin, .end = i + 1, .bytes = bytes});
			begin = i + 1;
			bytes = 0;
		}
	}
	return 0;
}

/* The items stay until the end of the scan: give back the slack of the
 * array's doubling (a quarter on average, a lot over a million files). */
static void shrink_items(struct dir_node *node)
{
	if (node->nitems > 0 && node->nitems < node->items_cap) {
		struct item *items = realloc(node->items, node->nitems * sizeof *items);
		if (items) {
			node->items = items;
			node->items_cap = node->nitems;
		}
	}
	if (node->names_len > 0 && node->names_len < node->names_cap) {
		char *names = realloc(node->names, node->names_len);
		if (names) {
			node->names = names;
			node->names_cap = node->names_len;
		}
	}
}

static void run_dir_task(struct worker *w, struct dir_node *node)
{
	struct scan *s = w->s;
	if (tt_cancelled() && !atomic_load_explicit(&s->failed, memory_order_relaxed))
		scan_fail(s, TETHER_ECANCELLED, "%s", cancel_message(s->root));
	if (atomic_load_explicit(&s->failed, memory_order_relaxed)) {
		task_discard((struct task){.node = node}, 1);
		return;
	}
	if (node->parent && open_node(w, node) != 0)
		return;
	if (read_entries(w, node) == 0) {
		shrink_items(node);
		if (node->nitems > 1) {
			sorting_names = node->names;
			qsort(node->items, node->nitems, sizeof *node->items, cmp_items);
		}
		if (node->nsubdirs > 1)
			qsort(node->subdirs, node->nsubdirs, sizeof *node->subdirs, cmp_subdirs);
		if (s->cache)
			match_cache(w, node);
		atomic_fetch_add(&s->total_items, node->nitems);
		atomic_fetch_add_explicit(&s->files_seen, node->nitems, memory_order_relaxed);
		plan_work(w, node);
	}
	node_release(node);
}

static int hash_item(struct worker *w, struct dir_node *node, struct item *it)
{
	struct scan *s = w->s;
	if (!w->buf) {
		w->buf = malloc(TT_FILEHASH_BUFFER_SIZE);
		if (!w->buf)
			return fail_oom(s);
	}
	struct tt_filehash h;
	const char *name = item_name(node, it);
	int rc = tt_filehash_at(node->fd, name, it->follow, w->buf, &s->bytes_read, &h);
	if (rc != 0) {
		char rel[MESSAGE_SIZE];
		snprintf(rel, sizeof rel, "%s%s%s", node->relpath, node->relpath[0] ? "/" : "", name);
		if (rc == TT_FILEHASH_NOT_REGULAR || rc == TT_FILEHASH_UNSTABLE) {
			char path[MESSAGE_SIZE];
			full_path(s, rel, path, sizeof path);
			if (rc == TT_FILEHASH_UNSTABLE)
				return scan_fail(s, TETHER_EREFUSED, UNSTABLE_MESSAGE, path, TT_FILEHASH_ATTEMPTS);
			return scan_fail(s, TETHER_EIO, "'%s' changed during the scan: no longer a regular file",
			                 path);
		}
		if (rc == -ENOENT)
			return fail_errno(s, "file vanished during the scan:", rel, ENOENT);
		if (rc == -ECANCELED)
			return scan_fail(s, TETHER_ECANCELLED, "%s", cancel_message(s->root));
		return fail_errno(s, "cannot read", rel, rc < 0 ? -rc : EIO);
	}
	memcpy(it->sha256, h.sha256, 32);
	it->st = h.st;
	it->st.size = h.size;
	it->hashed_ns = h.hashed_ns;
	it->cacheable = 1;
	w->files_hashed++;
	w->bytes_hashed += h.size;
	if (tt_hashcache_settled(h.st.mtime_ns, h.st.ctime_ns, h.hashed_ns))
		w->new_records++;
	return 0;
}

static void run_hash_task(struct worker *w, const struct task *t)
{
	struct dir_node *node = t->node;
	for (size_t i = t->begin; i < t->end; i++) {
		if (atomic_load_explicit(&w->s->failed, memory_order_relaxed))
			break;
		if (hash_item(w, node, &node->items[node->misses[i]]) != 0)
			break;
	}
	node_release(node);
}

static void *worker_main(void *arg);

static void start_helpers(struct scan *s)
{
	for (int i = 1; i < s->nthreads; i++) {
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
			break;
		s->started++;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct scan *s = w->s;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct task t;
		int is_dir;
		if (heap_pop(&s->hash_tasks, &t))
			is_dir = 0;
		else if (task_pop(&s->dir_tasks, &t))
			is_dir = 1;
		else if (s->outstanding == 0)
			break;
		else {
			pthread_cond_wait(&s->work_ready, &s->lock);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		if (is_dir)
			run_dir_task(w, t.node);
		else
			run_hash_task(w, &t);
		pthread_mutex_lock(&s->lock);
		size_t added = queue_new_tasks(s, w);
		s->outstanding = s->outstanding + added - 1;
		if (!s->spawned && w == &s->workers[0] && s->hash_tasks.len + s->dir_tasks.len >= 2) {
			s->spawned = 1;
			pthread_mutex_unlock(&s->lock);
			start_helpers(s);
			pthread_mutex_lock(&s->lock);
		}
		if (added > 1)
			pthread_cond_broadcast(&s->work_ready);
		else if (added == 1)
			pthread_cond_signal(&s->work_ready);
		if (s->outstanding == 0) {
			pthread_cond_broadcast(&s->work_ready);
			pthread_cond_broadcast(&s->all_done);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- progress ---- */

static void report_progress(struct scan *s, int finished)
{
	struct tether_progress p = {
		.phase = "scanning",
		.done = atomic_load_explicit(&s->files_seen, memory_order_relaxed),
		.bytes = atomic_load_explicit(&s->bytes_read, memory_order_relaxed),
		.finished = finished,
	};
	s->progress_fn(s->progress_ud, &p);
}

/* Wait for the workers to run out of work; meanwhile, past the first
 * second, refresh the progress line ten times a second. */
static void wait_for_workers(struct scan *s, int show_progress)
{
	int64_t start = monotonic_ns();
	int shown = 0;
	pthread_mutex_lock(&s->lock);
	while (s->outstanding > 0) {
		if (!show_progress) {
			pthread_cond_wait(&s->all_done, &s->lock);
			continue;
		}
		int64_t wake = monotonic_ns() + PROGRESS_PERIOD_NS;
		struct timespec ts = {.tv_sec = wake / 1000000000LL, .tv_nsec = wake % 1000000000LL};
		pthread_cond_timedwait(&s->all_done, &s->lock, &ts);
		if (s->outstanding > 0 && monotonic_ns() - start >= PROGRESS_DELAY_NS) {
			pthread_mutex_unlock(&s->lock);
			report_progress(s, 0);
			shown = 1;
			pthread_mutex_lock(&s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (shown)
		report_progress(s, 1);
}

/* ---- assembling the result ---- */

static void free_node(struct dir_node *node)
{
	if (node->dir)
		closedir(node->dir);
	free(node->items);
	free(node->names);
	free(node->subdirs);
	free(node->misses);
	free(node->relpath);
	free(node);
}

/* Free a whole tree of nodes, children first, walking up by the parent
 * pointers so that no stack is needed however deep the tree. */
static void free_tree(struct dir_node *root)
{
	struct dir_node *node = root;
	while (node) {
		if (node->nsubdirs > 0) {
			node = node->subdirs[--node->nsubdirs];
			continue;
		}
		struct dir_node *parent = node == root ? NULL : node->parent;
		free_node(node);
		node = parent;
	}
}

/* Does the node's next entry sort before its next subdirectory's tree? */
static int item_comes_next(const struct dir_node *node)
{
	if (node->next_item == node->nitems)
		return 0;
	if (node->next_subdir == node->nsubdirs)
		return 1;
	const struct item *it = &node->items[node->next_item];
	const struct dir_node *sub = node->subdirs[node->next_subdir];
	return name_before_dir(item_name(node, it), sub->relpath + sub->name_off);
}

/* An item's path relative to the root, into *buf (grown as needed).
 * Returns its length, or SIZE_MAX when out of memory. */
static size_t item_path(const struct dir_node *node, const struct item *it, char **buf, size_t *cap)
{
	size_t dl = strlen(node->relpath);
	const char *name = item_name(node, it);
	size_t nl = strlen(name);
	size_t len = dl ? dl + 1 + nl : nl;
	if (grow((void **)buf, cap, len + 1, 1) != 0)
		return SIZE_MAX;
	char *o = *buf;
	if (dl) {
		memcpy(o, node->relpath, dl);
		o[dl] = '/';
		o += dl + 1;
	}
	memcpy(o, name, nl + 1);
	return len;
}

/* Visit every entry in path order (see the top of the file), freeing the
 * nodes on the way. visit returns non-zero to stop (the rest is freed). */
typedef int (*visit_fn)(void *ud, const struct dir_node *node, const struct item *it);

static int visit_in_order(struct dir_node *root, visit_fn visit, void *ud)
{
	int rc = 0;
	struct dir_node *node = root;
	while (node && !rc) {
		if (item_comes_next(node)) {
			rc = visit(ud, node, &node->items[node->next_item++]);
		} else if (node->next_subdir < node->nsubdirs) {
			node = node->subdirs[node->next_subdir++];
		} else {
			struct dir_node *parent = node == root ? NULL : node->parent;
			free_node(node);
			node = parent;
		}
	}
	if (node) {
		/* Stopped early: what has not been visited yet still needs freeing.
		 * Subdirectories already entered were freed on the way out. */
		struct dir_node *n = node;
		while (n) {
			for (size_t i = n->next_subdir; i < n->nsubdirs; i++)
				free_tree(n->subdirs[i]);
			n->nsubdirs = 0;
			struct dir_node *parent = n == root ? NULL : n->parent;
			free_node(n);
			n = parent;
		}
	}
	return rc;
}

/* For tt_scan_tree: each entry as a tt_scan_entry with its own strings. */
struct to_entries {
	struct tt_scan_entry *entries;
	size_t k;
};

static int add_entry_out(void *ud, const struct dir_node *node, const struct item *it)
{
	struct to_entries *te = ud;
	char *path = NULL;
	size_t cap = 0;
	if (item_path(node, it, &path, &cap) == SIZE_MAX)
		return -1;
	struct tt_scan_entry *e = &te->entries[te->k++];
	memset(e, 0, sizeof *e);
	e->path = path;
	e->kind = it->kind;
	e->size = it->kind == TT_SCAN_LINK ? 0 : it->st.size;
	memcpy(e->sha256, it->sha256, 32);
	if (it->kind == TT_SCAN_LINK && !(e->link_target = strdup(item_target(node, it))))
		return -1;
	return 0;
}

/* The cache is written from the nodes, before assembly: each node's items
 * are one directory's files sorted by name, the grouping the cache file
 * wants. Only files whose hash can be trusted next time are kept. */
static int cacheable_item(const struct item *it)
{
	return it->kind == TT_SCAN_FILE && it->cacheable &&
	       tt_hashcache_settled(it->st.mtime_ns, it->st.ctime_ns, it->hashed_ns);
}

struct cache_ref {
	const struct dir_node *node;
	const struct item *it;
};

static size_t collect_node(const struct dir_node *node, struct cache_ref *out, size_t n)
{
	for (size_t i = 0; i < node->nitems; i++)
		if (cacheable_item(&node->items[i]))
			out[n++] = (struct cache_ref){node, &node->items[i]};
	return n;
}

/* The cacheable items of the tree in depth-first order of directories. The
 * walk uses next_subdir as its cursor and leaves it at 0 again. */
static size_t collect_cacheable(struct dir_node *root, struct cache_ref *out)
{
	size_t n = collect_node(root, out, 0);
	struct dir_node *node = root;
	while (node) {
		if (node->next_subdir < node->nsubdirs) {
			node = node->subdirs[node->next_subdir++];
			n = collect_node(node, out, n);
		} else {
			node->next_subdir = 0;
			node = node == root ? NULL : node->parent;
		}
	}
	return n;
}

struct cache_out {
	const struct cache_ref *refs;
	char *path; /* the last item's path, valid until the next call */
	size_t cap;
};

static int cache_item(void *ctx, size_t i, struct tt_hashcache_item *item)
{
	struct cache_out *co = ctx;
	const struct item *it = co->refs[i].it;
	size_t len = item_path(co->refs[i].node, it, &co->path, &co->cap);
	if (len == SIZE_MAX)
		return 0;
	item->path = co->path;
	item->path_len = len;
	item->st = it->st;
	item->hashed_ns = it->hashed_ns;
	memcpy(item->sha256, it->sha256, 32);
	return 1;
}

/* Best effort: a cache that cannot be written costs time later, not
 * correctness now. */
static void write_cache(const char *cache_file, struct dir_node *root, size_t total_items)
{
	struct cache_ref *refs = malloc((total_items ? total_items : 1) * sizeof *refs);
	if (!refs)
		return;
	size_t n = collect_cacheable(root, refs);
	struct cache_out co = {.refs = refs};
	/* A path that cannot be built is left out of every pass alike. */
	if (grow((void **)&co.path, &co.cap, 4096, 1) == 0)
		tt_hashcache_write(cache_file, n, cache_item, &co);
	tether_error_clear();
	free(co.path);
	free(refs);
}

/* ---- setup ---- */

static void free_skip_dirs(struct scan *s)
{
	for (size_t i = 0; i < s->nskip; i++)
		free(s->skip_dirs[i]);
	free(s->skip_dirs);
}

/* Keep skip_dirs as relative paths compare: no "./" in front, no '/' at
 * the end. */
static int copy_skip_dirs(struct scan *s, const char *const *dirs)
{
	size_t n = 0;
	while (dirs && dirs[n])
		n++;
	if (n == 0)
		return 0;
	s->skip_dirs = calloc(n, sizeof *s->skip_dirs);
	if (!s->skip_dirs)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *d = dirs[i];
		while (d[0] == '.' && d[1] == '/')
			d += 2;
		size_t len = strlen(d);
		while (len > 0 && d[len - 1] == '/')
			len--;
		s->skip_dirs[i] = strndup(d, len);
		if (!s->skip_dirs[i])
			return -1;
		s->nskip = i + 1;
	}
	return 0;
}

static int scan_init(struct scan *s, const char *root, const struct tt_scan_opts *opts)
{
	memset(s, 0, sizeof *s);
	s->root = root;
	size_t len = strlen(root);
	s->root_has_slash = len > 0 && root[len - 1] == '/';
	s->skip_name = opts->skip_name;
	atomic_init(&s->failed, 0);
	atomic_init(&s->files_seen, 0);
	atomic_init(&s->bytes_read, 0);
	atomic_init(&s->total_items, 0);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work_ready, NULL);
	pthread_cond_init(&s->all_done, &attr);
	pthread_condattr_destroy(&attr);
	if (copy_skip_dirs(s, opts->skip_dirs) != 0)
		return tether_error_set(TETHER_ERROR, "scanning '%s': out of memory", root);
	return 0;
}

static void scan_destroy(struct scan *s)
{
	free_skip_dirs(s);
	free(s->dir_tasks.tasks);
	free(s->hash_tasks.tasks);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->work_ready);
	pthread_cond_destroy(&s->all_done);
}

static struct dir_node *open_root(const char *root, int *code)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			*code = tether_error_set(TETHER_ENOTFOUND, "no such directory '%s'", root);
		else
			*code = tether_error_set(TETHER_EIO, "cannot open directory '%s': %s", root,
			                         strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		*code = tether_error_set(TETHER_EIO, "cannot stat directory '%s': %s", root, strerror(errno));
		close(fd);
		return NULL;
	}
	struct dir_node *node = calloc(1, sizeof *node);
	if (node)
		dir_stat_of(&st, &node->opened);
	DIR *dir = node ? fdopendir(fd) : NULL;
	char *relpath = dir ? strdup("") : NULL;
	if (!relpath) {
		*code = tether_error_set(TETHER_EIO, "cannot open directory '%s': %s", root,
		                         strerror(errno ? errno : ENOMEM));
		if (dir)
			closedir(dir);
		else
			close(fd);
		free(node);
		return NULL;
	}
	node->dir = dir;
	node->fd = fd;
	node->relpath = relpath;
	atomic_init(&node->refs, 1);
	return node;
}

static int thread_count(const struct tt_scan_opts *opts)
{
	long n = opts->threads;
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Run the pool until the walk is done. The calling thread is worker 0 and
 * starts the others only when there is work for them (see struct scan),
 * unless it must draw the progress line: then they all start at once and
 * it waits. */
static void run_pool(struct scan *s, struct worker *workers, int nthreads, int show_progress)
{
	s->workers = workers;
	s->nthreads = nthreads;
	if (!show_progress) {
		worker_main(&workers[0]);
		for (int i = 1; i < 1 + s->started; i++)
			pthread_join(workers[i].thread, NULL);
		return;
	}
	s->spawned = 1;
	int started = 0;
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0)
			break;
		started++;
	}
	if (started == 0) {
		/* No thread to be had: walk on this one. */
		worker_main(&workers[0]);
		return;
	}
	wait_for_workers(s, show_progress);
	for (int i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
}

/* The cache is keyed by the root's real path, so "data" and "./data/"
 * share one. */
static char *cache_file_for(const char *cache_dir, const char *prefix, const char *path)
{
	char *real = realpath(path, NULL);
	const char *p = real ? real : path;
	size_t len = strlen(prefix) + strlen(p) + 1;
	char *key = malloc(len);
	char *file = NULL;
	if (key) {
		snprintf(key, len, "%s%s", prefix, p);
		file = tt_hashcache_file(cache_dir, key);
	}
	free(key);
	free(real);
	return file;
}

/* Would the cache written now differ from the one loaded? It holds the
 * records that matched plus the files hashed whose hash can be trusted
 * next time; a file hashed again because it is still too recent (racy)
 * adds nothing, so a status right after an edit or a commit rewrites no
 * cache. */
static int cache_changed(const struct worker *workers, int nthreads, size_t old_cache_count)
{
	uint64_t hits = 0, fresh = 0;
	for (int i = 0; i < nthreads; i++) {
		hits += workers[i].cache_hits;
		fresh += workers[i].new_records;
	}
	return fresh > 0 || hits != old_cache_count;
}

/* What a walk hands back: the entries (tt_scan_tree), or only the
 * listing's digest and totals, the listing itself when asked for
 * (tt_scan_tree_summary). */
struct scan_out {
	struct tt_scan_result *result;
	struct tt_scan_summary *summary;
	int want_listing;
};

static int listing_lines(struct dir_node *root, size_t n, struct tt_scan_summary *out, int keep);

/* Gather the result; writes the cache when anything in it changed. */
static int finish(struct scan *s, struct dir_node *root, struct worker *workers, int nthreads,
                  size_t old_cache_count, const char *cache_file, const struct scan_out *out)
{
	uint64_t hashed = 0, bytes = 0;
	for (int i = 0; i < nthreads; i++) {
		hashed += workers[i].files_hashed;
		bytes += workers[i].bytes_hashed;
	}
	size_t n = atomic_load(&s->total_items);
	if (cache_file && cache_changed(workers, nthreads, old_cache_count))
		write_cache(cache_file, root, n);
	if (out->summary) {
		out->summary->files_hashed = hashed;
		out->summary->bytes_hashed = bytes;
		if (listing_lines(root, n, out->summary, out->want_listing) != 0)
			return tether_error_set(TETHER_ERROR, "scanning '%s': out of memory writing the listing of %zu file%s",
			                        s->root, n, tt_plural((long long)n, "", "s"));
		return 0;
	}
	struct tt_scan_result *r = out->result;
	r->files_hashed = hashed;
	r->bytes_hashed = bytes;
	struct to_entries te = {.entries = calloc(n ? n : 1, sizeof *te.entries)};
	if (!te.entries) {
		free_tree(root);
		return tether_error_set(TETHER_ERROR, "scanning '%s': out of memory", s->root);
	}
	r->entries = te.entries;
	int rc = visit_in_order(root, add_entry_out, &te);
	r->count = te.k;
	if (rc) {
		tt_scan_result_free(r);
		return tether_error_set(TETHER_ERROR, "scanning '%s': out of memory", s->root);
	}
	for (size_t i = 0; i < n; i++)
		r->total_size += te.entries[i].size;
	return 0;
}

/* Has the directory changed since the walk opened it? Stat'ed again
 * through the root by its relative path, so a directory renamed away or
 * replaced counts too. */
static int dir_changed(int rootfd, const struct dir_node *node)
{
	struct stat st;
	int rc = node->relpath[0] ? fstatat(rootfd, node->relpath, &st, AT_SYMLINK_NOFOLLOW)
	                          : fstat(rootfd, &st);
	if (rc != 0 || !S_ISDIR(st.st_mode))
		return 1;
	struct dir_stat now;
	dir_stat_of(&st, &now);
	return now.dev != node->opened.dev || now.ino != node->opened.ino ||
	       now.mtime_ns != node->opened.mtime_ns || now.ctime_ns != node->opened.ctime_ns;
}

/* Once the walk is over: did any directory of the tree gain, lose or
 * rename an entry while it was walked? Then the entries read from
 * different directories at different times may be a tree that never was
 * (a file moved from a directory not read yet into one already read is in
 * neither). Every directory is checked (the walk uses next_subdir as its
 * cursor and leaves it at 0 again). */
static int tree_moved(const char *root, struct dir_node *root_node)
{
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return 1;
	int moved = dir_changed(rootfd, root_node);
	struct dir_node *node = root_node;
	while (node) {
		if (node->next_subdir < node->nsubdirs) {
			node = node->subdirs[node->next_subdir++];
			moved |= dir_changed(rootfd, node);
		} else {
			node->next_subdir = 0;
			node = node == root_node ? NULL : node->parent;
		}
	}
	close(rootfd);
	return moved;
}

/* One walk of the tree. *moved is set when a directory changed while it
 * was walked: then out is left empty and the caller walks again. */
static int scan_once(const char *root, const struct tt_scan_opts *opts, const struct scan_out *out,
                     int *moved)
{
	if (out->result)
		memset(out->result, 0, sizeof *out->result);
	if (out->summary)
		memset(out->summary, 0, sizeof *out->summary);
	*moved = 0;
	struct scan s;
	if (scan_init(&s, root, opts) != 0) {
		scan_destroy(&s);
		return TETHER_ERROR;
	}
	int code = 0;
	struct dir_node *root_node = open_root(root, &code);
	if (!root_node) {
		scan_destroy(&s);
		return code;
	}
	char *cache_file = opts->cache_dir ? cache_file_for(opts->cache_dir, "", root) : NULL;
	struct tt_hashcache *cache = cache_file ? tt_hashcache_load(cache_file) : NULL;
	size_t old_cache_count = tt_hashcache_count(cache);
	s.cache = cache;

	int nthreads = thread_count(opts);
	struct worker *workers = calloc((size_t)nthreads, sizeof *workers);
	int rc = 0;
	if (!workers || grow((void **)&s.dir_tasks.tasks, &s.dir_tasks.cap, 1, sizeof(struct task))) {
		free_tree(root_node);
		rc = tether_error_set(TETHER_ERROR, "scanning '%s': out of memory", root);
		goto done;
	}
	for (int i = 0; i < nthreads; i++)
		workers[i].s = &s;
	task_push(&s.dir_tasks, (struct task){.node = root_node});
	s.outstanding = 1;

	s.progress_fn = opts->progress ? opts->progress_fn : NULL;
	s.progress_ud = opts->progress_ud;
	run_pool(&s, workers, nthreads, s.progress_fn != NULL);
	/* The walk is over: the old cache has given all it can. */
	tt_hashcache_free(cache);
	cache = NULL;

	if (atomic_load(&s.failed)) {
		free_tree(root_node);
		rc = tether_error_set(s.err_code, "%s", s.err_msg);
	} else if (tree_moved(root, root_node)) {
		/* Each file's hash still holds (filehash.h): keep them for the
		 * next walk, which then reads only what changed. */
		*moved = 1;
		if (cache_file && cache_changed(workers, nthreads, old_cache_count))
			write_cache(cache_file, root_node, atomic_load(&s.total_items));
		free_tree(root_node);
	} else {
		rc = finish(&s, root_node, workers, nthreads, old_cache_count, cache_file, out);
	}
done:
	for (int i = 0; workers && i < nthreads; i++) {
		free(workers[i].buf);
		free(workers[i].path);
		free(workers[i].new_dirs.tasks);
		free(workers[i].new_hashes.tasks);
		tt_hashcache_view_free(&workers[i].view);
	}
	free(workers);
	tt_hashcache_free(cache);
	free(cache_file);
	scan_destroy(&s);
	return rc;
}

static int scan_walks(const char *root, const struct tt_scan_opts *opts, const struct scan_out *out)
{
	static const struct tt_scan_opts no_opts;
	if (!opts)
		opts = &no_opts;
	for (int walk = 1;; walk++) {
		int moved;
		int rc = scan_once(root, opts, out, &moved);
		if (rc || !moved)
			return rc;
		if (walk == TT_FILEHASH_ATTEMPTS)
			return tether_error_set(TETHER_EREFUSED, TREE_UNSTABLE_MESSAGE, root, walk);
	}
}

int tt_scan_tree(const char *root, const struct tt_scan_opts *opts, struct tt_scan_result *out)
{
	struct scan_out so = {.result = out};
	return scan_walks(root, opts, &so);
}

int tt_scan_tree_summary(const char *root, const struct tt_scan_opts *opts, int want_listing,
                         struct tt_scan_summary *out)
{
	struct scan_out so = {.summary = out, .want_listing = want_listing};
	return scan_walks(root, opts, &so);
}

void tt_scan_summary_free(struct tt_scan_summary *s)
{
	if (!s)
		return;
	free(s->listing);
	memset(s, 0, sizeof *s);
}

/* ---- one file ---- */

static int one_item_get(void *ctx, size_t i, struct tt_hashcache_item *item)
{
	(void)i;
	*item = *(const struct tt_hashcache_item *)ctx;
	return 1;
}

/* The one-file cache holds a single record, keyed by the file's path.
 * A hash that cannot be trusted next time (the file is too recent) is not
 * written: then a record left from an older state is removed, once, and
 * when there is none nothing is touched, so a status repeated right after
 * an edit costs a read of the file, not a file written and renamed. */
static void write_one_file_cache(const char *cache_file, const char *key, const struct tt_filehash *h,
                                 int had_record)
{
	int keep = tt_hashcache_settled(h->st.mtime_ns, h->st.ctime_ns, h->hashed_ns);
	if (!keep) {
		if (had_record)
			unlink(cache_file);
		return;
	}
	struct tt_hashcache_item item = {.path = key, .path_len = strlen(key), .st = h->st,
	                                 .hashed_ns = h->hashed_ns};
	memcpy(item.sha256, h->sha256, 32);
	tt_hashcache_write(cache_file, 1, one_item_get, &item);
	tether_error_clear();
}

static int hash_one_file(const char *path, struct tt_filehash *h)
{
	unsigned char *buf = malloc(TT_FILEHASH_BUFFER_SIZE);
	if (!buf)
		return tether_error_set(TETHER_ERROR, "hashing '%s': out of memory", path);
	int rc = tt_filehash_at(AT_FDCWD, path, 1, buf, NULL, h);
	free(buf);
	if (rc == TT_FILEHASH_UNSTABLE)
		return tether_error_set(TETHER_EREFUSED, UNSTABLE_MESSAGE, path, TT_FILEHASH_ATTEMPTS);
	if (rc == TT_FILEHASH_NOT_REGULAR)
		return tether_error_set(TETHER_EIO, "'%s' is not a regular file", path);
	if (rc == -ENOENT)
		return tether_error_set(TETHER_ENOTFOUND, "no such file '%s'", path);
	if (rc == -ECANCELED)
		return tether_error_set(TETHER_ECANCELLED, "%s", cancel_message(path));
	if (rc < 0)
		return tether_error_set(TETHER_EIO, "cannot read '%s': %s", path, strerror(-rc));
	return 0;
}

int tt_scan_file(const char *path, const struct tt_scan_opts *opts, uint64_t *size,
                 unsigned char sha256[32])
{
	struct stat st;
	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return tether_error_set(TETHER_ENOTFOUND, "no such file '%s'", path);
		return tether_error_set(TETHER_EIO, "cannot stat '%s': %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return tether_error_set(TETHER_EIO, "'%s' is %s", path,
		                        S_ISDIR(st.st_mode) ? "a directory" : special_kind(st.st_mode));

	/* "file:" keeps a one-file cache apart from any tree's. */
	char *cache_file = opts && opts->cache_dir ? cache_file_for(opts->cache_dir, "file:", path) : NULL;
	struct tt_hashcache *cache = cache_file ? tt_hashcache_load(cache_file) : NULL;
	const char *key = "one-file"; /* the cache's only record */
	struct tt_hashcache_stat now;
	stat_fields(&st, &now);
	const struct tt_hashcache_rec *rec = tt_hashcache_find(cache, key, strlen(key));
	if (rec && tt_hashcache_matches(rec, &now)) {
		*size = rec->size;
		memcpy(sha256, rec->sha256, 32);
		tt_hashcache_free(cache);
		free(cache_file);
		return 0;
	}
	int had_record = tt_hashcache_count(cache) > 0;
	tt_hashcache_free(cache);

	struct tt_filehash h;
	int rc = hash_one_file(path, &h);
	if (rc == 0) {
		*size = h.size;
		memcpy(sha256, h.sha256, 32);
		if (cache_file)
			write_one_file_cache(cache_file, key, &h, had_record);
	}
	free(cache_file);
	return rc;
}

void tt_scan_result_free(struct tt_scan_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->count; i++) {
		free(r->entries[i].path);
		free(r->entries[i].link_target);
	}
	free(r->entries);
	memset(r, 0, sizeof *r);
}

/* ---- the listing ---- */

/* Names are mostly plain ASCII: test eight bytes at a time for anything
 * that needs a closer look (a control byte, '"', '\\', or a byte from
 * 0x80), with the exact "some byte is below n" and "some byte is zero"
 * word tests. */
#define BYTES(b) (0x0101010101010101ULL * (b))

static inline int word_is_plain(uint64_t x)
{
	uint64_t below_space = (x - BYTES(0x20)) & ~x & BYTES(0x80);
	uint64_t q = x ^ BYTES('"'), b = x ^ BYTES('\\');
	uint64_t quote = (q - BYTES(0x01)) & ~q & BYTES(0x80);
	uint64_t backslash = (b - BYTES(0x01)) & ~b & BYTES(0x80);
	return ((below_space | quote | backslash | x) & BYTES(0x80)) == 0;
}

/* Bytes JSON strings carry as they are: printable ASCII but '"' and '\\'
 * (DEL too, as jansson leaves it). */
static inline int plain_ascii(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* One byte that is not plain ASCII: a UTF-8 sequence copied whole, or an
 * escape. Returns the input bytes consumed. */
static size_t put_special(char **out, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF"; /* jansson writes \u001F */
	char *o = *out;
	unsigned char c = s[0];
	size_t seq = c >= 0x80 ? tt_utf8_sequence(s, n) : 0;
	if (seq > 0) {
		memcpy(o, s, seq);
		*out = o + seq;
		return seq;
	}
	const char *esc = NULL;
	switch (c) {
	case '"': esc = "\\\""; break;
	case '\\': esc = "\\\\"; break;
	case '\b': esc = "\\b"; break;
	case '\f': esc = "\\f"; break;
	case '\n': esc = "\\n"; break;
	case '\r': esc = "\\r"; break;
	case '\t': esc = "\\t"; break;
	}
	if (esc) {
		memcpy(o, esc, 2);
		*out = o + 2;
		return 1;
	}
	/* A control byte is the code point it encodes, as jansson writes it;
	 * a byte that is not part of valid UTF-8 (from 0x80) is the lone
	 * surrogate U+DC00 + byte, which no valid UTF-8 name can hold, so it
	 * never spells the same string as a real character (the name "x\xff"
	 * is "x\uDCFF"; "x\u00FF" is U+00FF, the name "x\xc3\xbf"). */
	memcpy(o, c >= 0x80 ? "\\uDC" : "\\u00", 4);
	o[4] = hex[c >> 4];
	o[5] = hex[c & 15];
	*out = o + 6;
	return 1;
}

/* Escape like jansson's compact dump. Writes at most 6 bytes per input
 * byte, and may store up to 8 bytes past its output's end (the caller
 * reserves room for the worst case anyway). */
static char *put_escaped(char *o, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		uint64_t w;
		if (n - i >= 8 && (memcpy(&w, s + i, 8), word_is_plain(w))) {
			memcpy(o, &w, 8);
			o += 8;
			i += 8;
		} else if (plain_ascii(s[i])) {
			*o++ = (char)s[i++];
		} else {
			i += put_special(&o, s + i, n - i);
		}
	}
	return o;
}

static char *put_literal(char *o, const char *lit, size_t n)
{
	memcpy(o, lit, n);
	return o + n;
}
#define PUT_LITERAL(o, lit) put_literal((o), (lit), sizeof(lit) - 1)

static char *put_u64(char *o, uint64_t v)
{
	char digits[20];
	size_t n = 0;
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n > 0)
		*o++ = digits[--n];
	return o;
}

/* Two hex digits per byte from one table: fewer operations than two
 * nibble lookups, and faster than word tricks that end in byte stores. */
static char *put_hex(char *o, const unsigned char *bytes, size_t n)
{
	static const char pairs[] =
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
	for (size_t i = 0; i < n; i++)
		memcpy(o + 2 * i, pairs + 2 * bytes[i], 2);
	return o + 2 * n;
}

/* {"k":"","p":"","s":}\n around the variable parts. */
#define LINE_FRAME 21
#define LINE_DIGITS 20
/* Room put_escaped may overrun by. */
#define LINE_SLACK 8

static char *put_line(char *o, char kind, const unsigned char sha256[32], uint64_t size,
                      const char *path, size_t path_len, const char *target, size_t target_len)
{
	o = PUT_LITERAL(o, "{\"k\":\"");
	if (kind == TT_SCAN_LINK) {
		o = PUT_LITERAL(o, "symlink:");
		o = put_escaped(o, target, target_len);
	} else if (kind == TT_SCAN_TOKEN) {
		o = put_escaped(o, target, target_len);
	} else {
		o = put_hex(o, sha256, 32);
	}
	o = PUT_LITERAL(o, "\",\"p\":\"");
	o = put_escaped(o, path, path_len);
	o = PUT_LITERAL(o, "\",\"s\":");
	o = put_u64(o, kind == TT_SCAN_LINK ? 0 : size);
	return PUT_LITERAL(o, "}\n");
}

#define LISTING_PREFETCH 64
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

static size_t worst_line(size_t path_len, size_t target_len, int is_link)
{
	return LINE_FRAME + LINE_DIGITS + 2 * LINE_SLACK + 6 * path_len +
	       (is_link ? 8 + 6 * target_len : 64);
}

size_t tt_scan_line_room(size_t path_len, size_t target_len, int is_link)
{
	return worst_line(path_len, target_len, is_link);
}

char *tt_scan_put_line(char *o, char kind, const unsigned char sha256[32], uint64_t size, const char *path,
                       size_t path_len, const char *target, size_t target_len)
{
	return put_line(o, kind, sha256, size, path, path_len, target, target_len);
}

char *tt_scan_listing(const struct tt_scan_result *r, size_t *len)
{
	/* A generous first guess: pages never written are never faulted in,
	 * so over-reserving costs address space, not memory. Grown only for
	 * long or heavily escaped names. */
	size_t cap = 4096 + r->count * 192;
	char *buf = malloc(cap);
	size_t used = 0;
	for (size_t i = 0; buf && i < r->count; i++) {
		const struct tt_scan_entry *e = &r->entries[i];
		/* The names lie all over the heap: ask for them well ahead. */
		if (i + LISTING_PREFETCH < r->count)
			PREFETCH(r->entries[i + LISTING_PREFETCH].path);
		int is_link = e->kind == TT_SCAN_LINK;
		size_t path_len = strlen(e->path);
		size_t target_len = is_link ? strlen(e->link_target) : 0;
		size_t worst = worst_line(path_len, target_len, is_link);
		if (cap - used < worst + 1) {
			size_t ncap = cap * 2 > used + worst + 1 ? cap * 2 : used + worst + 1;
			char *nbuf = realloc(buf, ncap);
			if (!nbuf) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nbuf;
			cap = ncap;
		}
		used = (size_t)(put_line(buf + used, e->kind, e->sha256, e->size, e->path, path_len,
		                         e->link_target, target_len) - buf);
	}
	if (!buf) {
		tether_error_set(TETHER_ERROR, "listing: out of memory");
		return NULL;
	}
	buf[used] = '\0';
	*len = used;
	return buf;
}

/* The listing of a walk, line by line straight from its nodes: kept whole
 * when asked for (a commit stores it), else only hashed through a 64 KiB
 * buffer, so a status of a million files never holds its 100 MB. */
#define STREAM_BUFFER ((size_t)64 << 10)

struct line_sink {
	struct sha256_ctx sha;
	char *buf;
	size_t len, cap;
	int keep;
	char *path;
	size_t path_cap;
	struct tt_scan_summary *out;
};

static int sink_reserve(struct line_sink *k, size_t need)
{
	if (k->cap - k->len >= need)
		return 0;
	if (!k->keep && k->len > 0) {
		sha256_update(&k->sha, k->len, (const uint8_t *)k->buf);
		k->len = 0;
		if (k->cap >= need)
			return 0;
	}
	size_t ncap = k->cap * 2 > k->len + need ? k->cap * 2 : k->len + need;
	char *nbuf = realloc(k->buf, ncap);
	if (!nbuf)
		return -1;
	k->buf = nbuf;
	k->cap = ncap;
	return 0;
}

static int put_item_line(void *ud, const struct dir_node *node, const struct item *it)
{
	struct line_sink *k = ud;
	size_t path_len = item_path(node, it, &k->path, &k->path_cap);
	if (path_len == SIZE_MAX)
		return -1;
	int is_link = it->kind == TT_SCAN_LINK;
	const char *target = is_link ? item_target(node, it) : NULL;
	size_t target_len = is_link ? strlen(target) : 0;
	if (sink_reserve(k, worst_line(path_len, target_len, is_link) + 1) != 0)
		return -1;
	uint64_t size = is_link ? 0 : it->st.size;
	k->len = (size_t)(put_line(k->buf + k->len, it->kind, it->sha256, size, k->path, path_len, target,
	                           target_len) - k->buf);
	k->out->count++;
	k->out->total_size += size;
	return 0;
}

static int listing_lines(struct dir_node *root, size_t n, struct tt_scan_summary *out, int keep)
{
	struct line_sink k = {.keep = keep, .out = out};
	sha256_init(&k.sha);
	k.cap = keep ? 4096 + n * 128 : STREAM_BUFFER;
	k.buf = malloc(k.cap);
	int rc = k.buf ? visit_in_order(root, put_item_line, &k) : (free_tree(root), -1);
	free(k.path);
	if (rc) {
		free(k.buf);
		return rc;
	}
	unsigned char digest[32];
	sha256_update(&k.sha, k.len, (const uint8_t *)k.buf);
	sha256_digest(&k.sha, sizeof digest, digest);
	tt_hex(digest, 32, out->digest);
	if (keep) {
		k.buf[k.len] = '\0'; /* sink_reserve kept room for it */
		out->listing = k.buf;
		out->listing_len = k.len;
	} else {
		free(k.buf);
	}
	return 0;
}
