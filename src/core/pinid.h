/* Pin ids: <dataset8>.<hash16>, a content address of kind, identity and
 * the content keys of a state, so identical states share one pin. */
#ifndef TETHER_CORE_PINID_H
#define TETHER_CORE_PINID_H

#include <tether/backend.h>

#define TT_PIN_ID_LEN (8 + 1 + 16)

/* The state without the backend's volatile (address) keys. New reference. */
json_t *tt_content_state(const struct tether_backend *b, const json_t *state);
/* Do two states hold the same content? */
int tt_same_content(const struct tether_backend *b, const json_t *a, const json_t *b_state);
/* The pin id, from the sha256 of canonical JSON
 * {"identity": ..., "kind": ..., "state": <content state>}. */
int tt_pin_id(const char *dataset_id, const char *kind, const json_t *identity,
              const json_t *content_state, char out[TT_PIN_ID_LEN + 1]);

#endif
