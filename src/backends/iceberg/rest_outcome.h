/* A REST commit whose answer was lost (a 5xx from a gateway, a cut
 * connection) may or may not have been applied. Sending it again blindly
 * could apply it twice or, worse, report a refusal for a change that went
 * in; so catalog_rest.c loads the table again and asks these functions
 * what that metadata says. They understand the requirements and updates
 * tether sends (assert-ref-snapshot-id, assert-table-uuid;
 * set-snapshot-ref, remove-snapshot-ref); for anything else the outcome
 * stays unknown and the commit is not repeated. */
#ifndef TETHER_ICEBERG_REST_OUTCOME_H
#define TETHER_ICEBERG_REST_OUTCOME_H

#include <jansson.h>

enum ib_rest_outcome {
	IB_REST_APPLIED,     /* every update is visible: the commit went in */
	IB_REST_RESEND,      /* nothing applied and every requirement still holds */
	IB_REST_MOVED,       /* not applied, and a requirement no longer holds */
	IB_REST_UNKNOWN,     /* an update or requirement these checks cannot judge */
};

enum ib_rest_outcome ib_rest_commit_outcome(const json_t *metadata, const json_t *requirements,
                                            const json_t *updates);

/* The snapshot id the table's ref points at (refs, or current-snapshot-id
 * for "main" in metadata without refs); 0 with *id set, or -1: no such ref. */
int ib_rest_ref_snapshot(const json_t *metadata, const char *ref, long long *id);

/* The ref a commit is about, for messages: the first
 * assert-ref-snapshot-id's, else the first set/remove-snapshot-ref's name,
 * else NULL. Valid while the arrays live. */
const char *ib_rest_commit_ref(const json_t *requirements, const json_t *updates);

#endif
