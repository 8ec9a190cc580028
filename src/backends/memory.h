/* The in-process reference backend's store, for tests: systems with
 * branches, tags and snapshots of a JSON payload. */
#ifndef TETHER_BACKENDS_MEMORY_H
#define TETHER_BACKENDS_MEMORY_H

#include <jansson.h>

/* Create a system with branch "main" at an empty root snapshot. */
int tt_memory_create(const char *system);
/* Set payload[key] = value on `branch` as a new snapshot (value NULL
 * deletes the key; a value is stolen, as json_object_set_new does). The
 * new snapshot id is copied to id_out if non-NULL. */
int tt_memory_write(const char *system, const char *branch, const char *key, json_t *value,
                    char id_out[32]);
/* The payload at a ref (branch or tag) as a new reference, or NULL. */
json_t *tt_memory_read(const char *system, const char *ref);
/* Test knobs. Damage a snapshot: its refs stay, but reading it fails, so
 * verify holds and verify_deep does not (ENOTFOUND when there is none).
 * Mark a system busy with writers (why non-NULL, copied) or quiescent
 * again (NULL): what check_quiescence reports. */
int tt_memory_damage(const char *system, const char *snapshot_id);
int tt_memory_set_busy(const char *system, const char *why);
/* Drop every system. */
void tt_memory_reset(void);

#endif
