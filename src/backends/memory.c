/* The `memory` backend: the executable specification of the backend
 * protocol, Forkable with every flag, living in one process-global store.
 * Engine unit tests and the conformance suite drive it; the CLI lists it,
 * but a store that ends with the process holds nothing between commands. */
#include <tether/backend.h>

#include "backends/memory.h"
#include "util/fsutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *mem_store; /* {system: {branches, tags, snapshots, next}} */
static unsigned long mem_next_id = 1;

static json_t *store_locked(void)
{
	if (!mem_store)
		mem_store = json_object();
	return mem_store;
}

static json_t *system_locked(const char *name)
{
	return json_object_get(store_locked(), name);
}

static void new_snapshot_id(char out[32])
{
	snprintf(out, 32, "snap%08lu", mem_next_id++);
}

static int create_locked(const char *system)
{
	if (system_locked(system))
		return tether_error_set(TETHER_EREFUSED, "memory system '%s' already exists", system);
	char id[32];
	new_snapshot_id(id);
	json_object_set_new(store_locked(), system,
	                    json_pack("{s:{s:s}, s:{}, s:{s:{s:n, s:{}, s:s}}}", "branches", "main", id, "tags",
	                              "snapshots", id, "parent", "payload", "message", "root"));
	return 0;
}

int tt_memory_create(const char *system)
{
	pthread_mutex_lock(&mem_lock);
	int rc = create_locked(system);
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

void tt_memory_reset(void)
{
	pthread_mutex_lock(&mem_lock);
	json_decref(mem_store);
	mem_store = NULL;
	pthread_mutex_unlock(&mem_lock);
}

static const char *ref_target(json_t *sys, const char *ref)
{
	const char *id = json_string_value(json_object_get(json_object_get(sys, "branches"), ref));
	if (!id)
		id = json_string_value(json_object_get(json_object_get(sys, "tags"), ref));
	if (!id && json_object_get(json_object_get(sys, "snapshots"), ref))
		id = ref;
	return id;
}

int tt_memory_write(const char *system, const char *branch, const char *key, json_t *value, char id_out[32])
{
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(system);
	const char *head = sys ? json_string_value(json_object_get(json_object_get(sys, "branches"), branch)) : NULL;
	int rc = 0;
	if (!head) {
		json_decref(value);
		rc = tether_error_set(TETHER_ENOTFOUND, "memory://%s has no branch '%s'", system, branch);
	} else {
		json_t *snaps = json_object_get(sys, "snapshots");
		json_t *payload = json_deep_copy(json_object_get(json_object_get(snaps, head), "payload"));
		if (value)
			json_object_set_new(payload, key, value);
		else
			json_object_del(payload, key);
		char id[32];
		new_snapshot_id(id);
		json_object_set_new(snaps, id, json_pack("{s:s, s:o, s:s}", "parent", head, "payload", payload,
		                                         "message", key));
		json_object_set_new(json_object_get(sys, "branches"), branch, json_string(id));
		if (id_out)
			memcpy(id_out, id, 32);
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

json_t *tt_memory_read(const char *system, const char *ref)
{
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(system), *out = NULL;
	const char *id = sys ? ref_target(sys, ref) : NULL;
	if (id)
		out = json_deep_copy(json_object_get(json_object_get(json_object_get(sys, "snapshots"), id), "payload"));
	pthread_mutex_unlock(&mem_lock);
	return out;
}

int tt_memory_damage(const char *system, const char *snapshot_id)
{
	pthread_mutex_lock(&mem_lock);
	json_t *snap = json_object_get(json_object_get(system_locked(system), "snapshots"), snapshot_id);
	if (snap)
		json_object_set_new(snap, "damaged", json_true());
	pthread_mutex_unlock(&mem_lock);
	return snap ? 0 : tether_error_set(TETHER_ENOTFOUND, "memory://%s has no snapshot %s", system, snapshot_id);
}

int tt_memory_set_busy(const char *system, const char *why)
{
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(system);
	if (sys && why)
		json_object_set_new(sys, "busy", json_string(why));
	else if (sys)
		json_object_del(sys, "busy");
	pthread_mutex_unlock(&mem_lock);
	return sys ? 0 : tether_error_set(TETHER_ENOTFOUND, "memory system '%s' does not exist", system);
}

static const char *loc_system(const json_t *locator)
{
	return json_string_value(json_object_get(locator, "system"));
}

static const char *loc_branch(const json_t *locator)
{
	const char *b = json_string_value(json_object_get(locator, "branch"));
	return b ? b : "main";
}

static int mem_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                            const char *cwd, json_t **locator)
{
	(void)ctx;
	(void)cwd;
	const char *name = uri && strncmp(uri, "memory://", 9) == 0 ? uri + 9 : uri;
	if (!name || !*name)
		return tether_error_set(TETHER_EUSAGE, "kind memory needs a system name: memory://NAME");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (strcmp(k, "branch") != 0 && strcmp(k, "create") != 0)
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind memory", k);
	}
	json_t *given = json_object_get(options, "branch");
	const char *branch = json_string_value(given);
	if (given && (!branch || !*branch))
		return tether_error_set(TETHER_EUSAGE, "--branch for kind memory takes a non-empty branch name");
	*locator = json_pack("{s:s, s:s}", "system", name, "branch", branch ? branch : "main");
	return 0;
}

static int mem_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	if (!loc_system(locator))
		return tether_error_set(TETHER_ECONFIG, "memory locator has no system");
	/* The branch is where the state is read, not which system holds it:
	 * one state on two branches is one pin. */
	*identity = json_pack("{s:s}", "system", loc_system(locator));
	return 0;
}

static int mem_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                           struct tether_fingerprint *out)
{
	(void)ctx;
	(void)policy;
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	const char *head = sys ? json_string_value(json_object_get(json_object_get(sys, "branches"), loc_branch(locator))) : NULL;
	int rc = head ? 0 : tether_error_set(TETHER_ENOTFOUND, "memory://%s has no branch '%s'", loc_system(locator), loc_branch(locator));
	if (head)
		out->state = json_pack("{s:s}", "snapshot_id", head);
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

static int mem_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
                   json_t **pin_ref, int *created)
{
	(void)ctx;
	*created = 0;
	const char *snap = json_string_value(json_object_get(state, "snapshot_id"));
	char *tag = tt_strdupf("tether.%s", pin_id);
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	json_t *tags = json_object_get(sys, "tags");
	const char *existing = json_string_value(json_object_get(tags, tag));
	int rc = 0;
	if (!sys || !snap || !json_object_get(json_object_get(sys, "snapshots"), snap))
		rc = tether_error_set(TETHER_ENOTFOUND, "memory://%s does not hold snapshot %s", loc_system(locator), snap ? snap : "?");
	else if (existing && strcmp(existing, snap) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "tag %s already names another snapshot", tag);
	else if (!existing) {
		json_object_set_new(tags, tag, json_string(snap));
		*created = 1;
	}
	pthread_mutex_unlock(&mem_lock);
	if (!rc)
		*pin_ref = json_pack("{s:s, s:s}", "tag", tag, "pin", pin_id);
	free(tag);
	return rc;
}

static int mem_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	(void)ctx;
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	json_object_del(json_object_get(sys, "tags"), json_string_value(json_object_get(pin_ref, "tag")));
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

static int mem_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	(void)ctx;
	*pin_refs = json_array();
	pthread_mutex_lock(&mem_lock);
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(system_locked(loc_system(locator)), "tags"), k, v) {
		if (strncmp(k, "tether.", 7) == 0)
			json_array_append_new(*pin_refs, json_pack("{s:s, s:s}", "tag", k, "pin", k + 7));
	}
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

static int mem_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                      const json_t *pin_ref, int *ok, char **detail)
{
	(void)ctx;
	const char *snap = json_string_value(json_object_get(state, "snapshot_id"));
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *at = tag ? json_string_value(json_object_get(json_object_get(sys, "tags"), tag)) : NULL;
	int held = snap && json_object_get(json_object_get(sys, "snapshots"), snap);
	*ok = held && (!pin_ref || (at && strcmp(at, snap) == 0));
	*detail = *ok ? NULL : !held ? tt_strdupf("snapshot %s is gone", snap ? snap : "?")
	                             : tt_strdupf("tag %s is %s", tag ? tag : "?", at ? "moved" : "missing");
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* verify, then the snapshot itself read: a damaged one (tt_memory_damage)
 * fails though its tag is in place. */
static int mem_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                           const json_t *pin_ref, int *ok, char **detail)
{
	int rc = mem_verify(ctx, locator, state, pin_ref, ok, detail);
	if (rc || !*ok)
		return rc;
	const char *snap = json_string_value(json_object_get(state, "snapshot_id"));
	pthread_mutex_lock(&mem_lock);
	json_t *s = json_object_get(json_object_get(system_locked(loc_system(locator)), "snapshots"), snap);
	if (!json_is_object(json_object_get(s, "payload")) || json_is_true(json_object_get(s, "damaged"))) {
		*ok = 0;
		*detail = tt_strdupf("snapshot %s cannot be read: its payload is damaged", snap);
	}
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* NEEDS_QUIESCENCE, for real: busy while tt_memory_set_busy says so. */
static int mem_check_quiescence(const struct tether_bctx *ctx, const json_t *locator, int *busy, char **why)
{
	(void)ctx;
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	const char *w = json_string_value(json_object_get(sys, "busy"));
	*busy = w != NULL;
	*why = w ? strdup(w) : NULL;
	pthread_mutex_unlock(&mem_lock);
	return sys ? 0 : tether_error_set(TETHER_ENOTFOUND, "memory system '%s' does not exist", loc_system(locator));
}

static int mem_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                    const char *branch, const json_t *expect, json_t **working_ref)
{
	(void)ctx;
	(void)pin_ref;
	const char *snap = json_string_value(json_object_get(state, "snapshot_id"));
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	json_t *branches = json_object_get(sys, "branches");
	const char *current = json_string_value(json_object_get(branches, branch));
	const char *want = json_string_value(json_object_get(expect, "snapshot_id"));
	int rc = 0;
	if (!sys || !snap || !json_object_get(json_object_get(sys, "snapshots"), snap))
		rc = tether_error_set(TETHER_ENOTFOUND, "cannot fork: snapshot %s is gone", snap ? snap : "?");
	else if (expect && ((want == NULL) != (current == NULL) || (want && strcmp(want, current) != 0)))
		rc = tether_error_set(TETHER_EREFUSED, "branch %s moved: expected %s, found %s", branch,
		                      want ? want : "absent", current ? current : "absent");
	else
		json_object_set_new(branches, branch, json_string(snap));
	pthread_mutex_unlock(&mem_lock);
	if (!rc)
		*working_ref = json_pack("{s:s}", "branch", branch);
	return rc;
}

static int mem_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	(void)ctx;
	pthread_mutex_lock(&mem_lock);
	json_object_del(json_object_get(system_locked(loc_system(locator)), "branches"),
	                json_string_value(json_object_get(working_ref, "branch")));
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* Conditional: the branch goes only while it is at expect's snapshot,
 * checked and deleted under the store's one lock. */
static int mem_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                                     const json_t *expect)
{
	(void)ctx;
	const char *branch = json_string_value(json_object_get(working_ref, "branch"));
	const char *want = json_string_value(json_object_get(expect, "snapshot_id"));
	int rc = 0;
	pthread_mutex_lock(&mem_lock);
	json_t *branches = json_object_get(system_locked(loc_system(locator)), "branches");
	const char *current = branch ? json_string_value(json_object_get(branches, branch)) : NULL;
	if (current && (!want || strcmp(want, current) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "branch %s moved: expected %s, found %s; not deleted", branch,
		                      want ? want : "?", current);
	else if (current)
		json_object_del(branches, branch);
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

/* Walk the descendant's parents, at most one step per snapshot. */
static int mem_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                        const json_t *descendant, int *answer)
{
	(void)ctx;
	const char *want = json_string_value(json_object_get(ancestor, "snapshot_id"));
	const char *at = json_string_value(json_object_get(descendant, "snapshot_id"));
	int rc = 0;
	*answer = 0;
	pthread_mutex_lock(&mem_lock);
	json_t *snaps = json_object_get(system_locked(loc_system(locator)), "snapshots");
	if (!want || !json_object_get(snaps, want) || !at || !json_object_get(snaps, at))
		rc = tether_error_set(TETHER_ENOTFOUND, "memory system '%s' holds no snapshot %s", loc_system(locator),
		                      want && json_object_get(snaps, want) ? (at ? at : "?") : (want ? want : "?"));
	for (size_t steps = 0; !rc && at && steps <= json_object_size(snaps); steps++) {
		if (strcmp(at, want) == 0) {
			*answer = 1;
			break;
		}
		at = json_string_value(json_object_get(json_object_get(snaps, at), "parent"));
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

static int mem_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	char *prefix = tt_strdupf("tether.ws.%.8s.", ctx->dataset_id);
	size_t n = strlen(prefix);
	const char *k;
	json_t *v;
	*refs = json_array();
	pthread_mutex_lock(&mem_lock);
	json_object_foreach(json_object_get(system_locked(loc_system(locator)), "branches"), k, v) {
		if (strncmp(k, prefix, n) == 0)
			json_array_append_new(*refs, json_pack("{s:s, s:{s:s}, s:{s:O}}", "branch", k, "ref", "branch", k,
			                                       "head", "snapshot_id", v));
	}
	pthread_mutex_unlock(&mem_lock);
	free(prefix);
	return 0;
}

static int mem_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                    const json_t *working_ref, int read_only, json_t **handle)
{
	(void)ctx;
	const char *ref = read_only ? json_string_value(json_object_get(pin_ref, "tag"))
	                            : json_string_value(json_object_get(working_ref, "branch"));
	if (!ref)
		ref = read_only ? json_string_value(json_object_get(state, "snapshot_id")) : loc_branch(locator);
	char *uri = tt_strdupf("memory://%s", loc_system(locator));
	*handle = json_pack("{s:s, s:s, s:s, s:O?, s:b}", "kind", "memory", "uri", uri, "ref", ref ? ref : "",
	                    "snapshot_id", json_object_get(state, "snapshot_id"), "read_only", read_only);
	free(uri);
	return 0;
}

static int mem_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
                    const char *la, size_t na, const char *lb, size_t nb, size_t max_entries, json_t **diff)
{
	(void)ctx;
	(void)la;
	(void)na;
	(void)lb;
	(void)nb;
	json_t *pa = tt_memory_read(loc_system(locator), json_string_value(json_object_get(a, "snapshot_id")));
	json_t *pb = tt_memory_read(loc_system(locator), json_string_value(json_object_get(b, "snapshot_id")));
	if (!pa || !pb) {
		json_decref(pa);
		json_decref(pb);
		return tether_error_set(TETHER_ENOTFOUND, "memory://%s no longer holds both snapshots", loc_system(locator));
	}
	json_t *entries = json_array();
	json_int_t counts[3] = {0, 0, 0};
	const char *k;
	json_t *v;
	json_object_foreach(pa, k, v) {
		json_t *w = json_object_get(pb, k);
		int c = !w ? 1 : !json_equal(v, w) ? 2 : -1;
		if (c < 0)
			continue;
		counts[c]++;
		if (json_array_size(entries) < max_entries)
			json_array_append_new(entries, json_pack("{s:s, s:s, s:i, s:i}", "path", k, "change",
			                                         c == 1 ? "removed" : "modified", "size", 0, "size_delta", 0));
	}
	json_object_foreach(pb, k, v) {
		if (json_object_get(pa, k))
			continue;
		counts[0]++;
		if (json_array_size(entries) < max_entries)
			json_array_append_new(entries, json_pack("{s:s, s:s, s:i, s:i}", "path", k, "change", "added",
			                                         "size", 0, "size_delta", 0));
	}
	char summary[128];
	snprintf(summary, sizeof summary, "%" JSON_INTEGER_FORMAT " added, %" JSON_INTEGER_FORMAT
	         " removed, %" JSON_INTEGER_FORMAT " modified", counts[0], counts[1], counts[2]);
	*diff = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:i}, s:b}", "unit", "keys", "summary", summary,
	                  "entries", entries, "totals", "added", counts[0], "removed", counts[1], "modified",
	                  counts[2], "size_delta", 0, "truncated",
	                  (size_t)(counts[0] + counts[1] + counts[2]) > json_array_size(entries));
	json_decref(pa);
	json_decref(pb);
	return 0;
}

static int mem_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	(void)ctx;
	*entries = json_array();
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	json_t *snaps = json_object_get(sys, "snapshots");
	const char *id = json_string_value(json_object_get(json_object_get(sys, "branches"), loc_branch(locator)));
	for (int n = 0; id && (max_count <= 0 || n < max_count); n++) {
		json_t *s = json_object_get(snaps, id);
		json_array_append_new(*entries, json_pack("{s:s, s:O}", "id", id, "message", json_object_get(s, "message")));
		id = json_string_value(json_object_get(s, "parent"));
	}
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

static int mem_create_store(const struct tether_bctx *ctx, const json_t *locator)
{
	(void)ctx;
	return tt_memory_create(loc_system(locator));
}

static int mem_delete_store(const struct tether_bctx *ctx, const json_t *locator)
{
	(void)ctx;
	pthread_mutex_lock(&mem_lock);
	json_t *sys = system_locked(loc_system(locator));
	int rc = 0;
	if (!sys)
		rc = tether_error_set(TETHER_ENOTFOUND, "memory://%s does not exist", loc_system(locator));
	else if (json_object_size(json_object_get(sys, "tags")) || json_object_size(json_object_get(sys, "branches")) > 1 ||
	         json_object_size(json_object_get(sys, "snapshots")) > 1)
		rc = tether_error_set(TETHER_EREFUSED, "memory://%s holds data or refs: not deleted", loc_system(locator));
	else
		json_object_del(store_locked(), loc_system(locator));
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

static const char *const mem_volatile[] = {NULL};

/* {snapshot_id}: what mem_fingerprint writes, and nothing else. */
static int mem_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	*bad = "snapshot_id";
	const char *id = json_string_value(json_object_get(state, "snapshot_id"));
	if (!id || !*id)
		return tether_error_set(TETHER_ECONFIG, "snapshot_id must be a non-empty string");
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "snapshot_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a memory state (snapshot_id)", k);
	}
	return 0;
}

/* --branch NAME (also --option branch=NAME): the branch the object follows. */
static const struct tether_add_option mem_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the memory system's branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{0},
};

const struct tether_backend tt_backend_memory = {
	TETHER_BACKEND_INIT,
	.kind = "memory",
	.maturity = "stable",
	.summary = "in-process reference backend (tests only: its store ends with the process)",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_CHEAP_FINGERPRINT | TETHER_CAP_ATOMIC_REF | TETHER_CAP_CONDITIONAL_REF | TETHER_CAP_DIFF |
	        TETHER_CAP_HISTORY | TETHER_CAP_CREATE | TETHER_CAP_NEEDS_QUIESCENCE,
	.volatile_keys = mem_volatile,
	.make_locator = mem_make_locator,
	.identity = mem_identity,
	.fingerprint = mem_fingerprint,
	.pin = mem_pin,
	.unpin = mem_unpin,
	.list_pins = mem_list_pins,
	.verify = mem_verify,
	.fork = mem_fork,
	.delete_working_ref = mem_delete_working_ref,
	.open = mem_open,
	.diff = mem_diff,
	.history = mem_history,
	.create_store = mem_create_store,
	.delete_store = mem_delete_store,
	.list_working_refs = mem_list_working_refs,
	.check_state = mem_check_state,
	.add_options = mem_add_options,
	.verify_deep = mem_verify_deep,
	.check_quiescence = mem_check_quiescence,
	.descends = mem_descends,
	.delete_working_ref_if = mem_delete_working_ref_if,
};
