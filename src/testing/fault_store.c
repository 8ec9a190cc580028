/* The fault-injecting store (include/tether/testing.h): scheme fault+file,
 * the local store underneath, and on the N-th call of the chosen
 * operations a failure, a delay, or a tear (the operation is carried out
 * and then reported lost, as when an object store's connection drops
 * after the write landed; the caller cannot tell which happened). The
 * conformance suite drives it to check that a backend surfaces a store's
 * failure as an error and leaves nothing half-written. */
#include <tether/store.h>
#include <tether/testing.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	OP_GET = 1 << 0,
	OP_HEAD = 1 << 1,
	OP_PUT = 1 << 2,
	OP_COPY = 1 << 3,
	OP_DELETE = 1 << 4,
	OP_LIST = 1 << 5,
	OP_READ = OP_GET | OP_HEAD | OP_LIST,
	OP_WRITE = OP_PUT | OP_COPY | OP_DELETE,
};

enum action { ACT_NONE, ACT_FAIL, ACT_TRANSIENT, ACT_AUTH, ACT_TEAR, ACT_DELAY };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	unsigned ops;
	unsigned long n;    /* the call that faults (1 = the first) */
	int onward;         /* and every one after it */
	enum action action;
	long delay_ms;
	unsigned long calls; /* matching calls since the fault was set */
	unsigned long fired;
} fault;

static const struct {
	const char *name;
	unsigned bits;
} op_names[] = {
	{"get", OP_GET}, {"head", OP_HEAD}, {"put", OP_PUT}, {"copy", OP_COPY}, {"delete", OP_DELETE},
	{"list", OP_LIST}, {"read", OP_READ}, {"write", OP_WRITE}, {"any", OP_READ | OP_WRITE},
};

static int parse_ops(const char *s, size_t n, unsigned *ops)
{
	*ops = 0;
	while (n > 0) {
		const char *comma = memchr(s, ',', n);
		size_t len = comma ? (size_t)(comma - s) : n;
		size_t i = 0;
		while (i < sizeof op_names / sizeof op_names[0] &&
		       (strlen(op_names[i].name) != len || strncmp(op_names[i].name, s, len) != 0))
			i++;
		if (i == sizeof op_names / sizeof op_names[0])
			return -1;
		*ops |= op_names[i].bits;
		s += len + (comma ? 1 : 0);
		n -= len + (comma ? 1 : 0);
	}
	return *ops ? 0 : -1;
}

int tether_fault_store_set(const char *spec)
{
	unsigned ops = 0;
	unsigned long n = 0;
	int onward = 0;
	enum action action = ACT_NONE;
	long ms = 0;
	if (spec && *spec) {
		const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char *end = NULL;
		if (!c1 || !c2 || parse_ops(spec, (size_t)(c1 - spec), &ops) != 0)
			goto bad;
		errno = 0;
		n = strtoul(c1 + 1, &end, 10);
		if (errno || n == 0 || (end != c2 && !(end[0] == '+' && end + 1 == c2)))
			goto bad;
		onward = end[0] == '+';
		const char *a = c2 + 1;
		if (strcmp(a, "fail") == 0)
			action = ACT_FAIL;
		else if (strcmp(a, "transient") == 0)
			action = ACT_TRANSIENT;
		else if (strcmp(a, "auth") == 0)
			action = ACT_AUTH;
		else if (strcmp(a, "tear") == 0)
			action = ACT_TEAR;
		else if (strncmp(a, "delay=", 6) == 0) {
			ms = strtol(a + 6, &end, 10);
			if (a[6] < '0' || a[6] > '9' || *end || ms > 60000)
				goto bad;
			action = ACT_DELAY;
		} else
			goto bad;
	}
	pthread_mutex_lock(&lock);
	fault.ops = ops;
	fault.n = n;
	fault.onward = onward;
	fault.action = action;
	fault.delay_ms = ms;
	fault.calls = fault.fired = 0;
	pthread_mutex_unlock(&lock);
	return 0;
bad:
	return tether_error_set(TETHER_EUSAGE,
	                        "fault spec '%s': want OPS:N[+]:ACTION, OPS get,head,put,copy,delete,list,read,"
	                        "write or any, ACTION fail, transient, auth, tear or delay=MS",
	                        spec);
}

unsigned long tether_fault_store_fired(void)
{
	pthread_mutex_lock(&lock);
	unsigned long n = fault.fired;
	pthread_mutex_unlock(&lock);
	return n;
}

/* What this call of op does: ACT_NONE, or the fault. */
static enum action next_action(unsigned op, long *ms)
{
	pthread_mutex_lock(&lock);
	enum action a = ACT_NONE;
	if (fault.action != ACT_NONE && (fault.ops & op)) {
		unsigned long call = ++fault.calls;
		if (call == fault.n || (fault.onward && call > fault.n)) {
			a = fault.action;
			*ms = fault.delay_ms;
			fault.fired++;
		}
	}
	pthread_mutex_unlock(&lock);
	return a;
}

static int injected(enum action a, const char *what, const char *key)
{
	switch (a) {
	case ACT_TRANSIENT:
		return tether_error_set(TETHER_ETRANSIENT, "fault store: %s %s: connection reset (injected)", what, key);
	case ACT_AUTH:
		return tether_error_set(TETHER_EAUTH, "fault store: %s %s: access denied (injected)", what, key);
	case ACT_TEAR:
		return tether_error_set(TETHER_ETRANSIENT, "fault store: %s %s: the reply was lost (injected; the "
		                        "operation took effect)", what, key);
	default:
		return tether_error_set(TETHER_EIO, "fault store: %s %s: input/output error (injected)", what, key);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Before the operation: a failure to return instead (non-zero), or 0 to go
 * on, with *tear set when the result is to be reported lost. */
static int before(unsigned op, const char *what, const char *key, int *tear)
{
	long ms = 0;
	enum action a = next_action(op, &ms);
	*tear = a == ACT_TEAR;
	if (a == ACT_DELAY)
		sleep_ms(ms);
	if (a == ACT_NONE || a == ACT_DELAY || a == ACT_TEAR)
		return 0;
	return injected(a, what, key);
}

static int after(int rc, int tear, const char *what, const char *key)
{
	return rc == 0 && tear ? injected(ACT_TEAR, what, key) : rc;
}

#define PREFIX "fault+"

static int fs_open(const char *uri, const json_t *options, void **impl)
{
	if (strncmp(uri, PREFIX, strlen(PREFIX)) != 0)
		return tether_error_set(TETHER_EUSAGE, "%s is not a fault+ URI", uri);
	tether_store *inner = NULL;
	int rc = tether_store_open(uri + strlen(PREFIX), options, &inner);
	if (rc == 0)
		*impl = inner;
	return rc;
}

static void fs_close(void *impl)
{
	tether_store_close(impl);
}

static int fs_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
                  struct tether_store_version *version)
{
	int tear, rc = before(OP_GET, "get", key, &tear);
	if (!rc)
		rc = after(tether_store_get_range(impl, key, offset, length, data, len, version), tear, "get", key);
	return rc;
}

static int fs_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	int tear, rc = before(OP_HEAD, "head", key, &tear);
	if (!rc)
		rc = after(tether_store_head(impl, key, exists, version, size), tear, "head", key);
	return rc;
}

static int fs_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
                  const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	int tear, rc = before(OP_PUT, "put", key, &tear);
	if (!rc)
		rc = after(tether_store_put(impl, key, data, len, mode, expect, new_version), tear, "put", key);
	return rc;
}

static int fs_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match)
{
	int tear, rc = before(OP_COPY, "copy to", to, &tear);
	if (!rc)
		rc = after(tether_store_copy(impl, from, to, if_match), tear, "copy to", to);
	return rc;
}

static int fs_del(void *impl, const char *key)
{
	int tear, rc = before(OP_DELETE, "delete", key, &tear);
	if (!rc)
		rc = after(tether_store_delete(impl, key), tear, "delete", key);
	return rc;
}

struct relay {
	tether_store_key_fn emit;
	void *ud;
};

/* One page of the inner store's listing, through its own iterator. */
static int fs_list(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                   tether_store_key_fn emit, void *ud, int *more)
{
	int tear, rc = before(OP_LIST, "list", *prefix ? prefix : "/", &tear);
	tether_store_iter *it = NULL;
	if (!rc)
		rc = tether_store_list(impl, prefix, start_after, max_keys, &it);
	size_t n = 0;
	const char *key = NULL;
	while (rc == 0 && n < max_keys && (rc = tether_store_next(it, &key)) == 0 && key) {
		rc = emit(ud, key);
		n++;
	}
	if (rc == 0 && n == max_keys)
		rc = tether_store_next(it, &key);
	*more = rc == 0 && n == max_keys && key != NULL;
	tether_store_iter_free(it);
	return after(rc, tear, "list", *prefix ? prefix : "/");
}

static int fs_root_exists(void *impl, int *exists)
{
	return tether_store_root_exists(impl, exists);
}

static int fs_make_root(void *impl)
{
	return tether_store_make_root(impl);
}

static int fs_remove_root(void *impl)
{
	return tether_store_remove_root(impl);
}

static const struct tether_store_ops fault_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "fault+file",
	.flags = 0,
	.open = fs_open,
	.close = fs_close,
	.get = fs_get,
	.head = fs_head,
	.put = fs_put,
	.copy = fs_copy,
	.del = fs_del,
	.list = fs_list,
	.root_exists = fs_root_exists,
	.make_root = fs_make_root,
	.remove_root = fs_remove_root,
};

int tether_fault_store_register(void)
{
	if (tether_store_find(fault_ops.scheme) == &fault_ops)
		return 0;
	tether_error_clear();
	int rc = tether_store_register(&fault_ops);
	if (rc == 0)
		rc = tether_fault_store_set(getenv("TETHER_STORE_FAULT"));
	return rc;
}
