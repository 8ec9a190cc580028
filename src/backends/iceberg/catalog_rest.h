/* The REST catalog (catalog.h, type "rest"): the Iceberg REST catalog
 * protocol over the HTTP client (src/store/http). */
#ifndef TETHER_ICEBERG_CATALOG_REST_H
#define TETHER_ICEBERG_CATALOG_REST_H

#include "backends/iceberg/catalog.h"

#include <jansson.h>

/* Open the catalog `name` (messages name it) from its committed properties
 * (props: only type, warehouse, name) and its entry of .tether/secrets.toml
 * (secrets: uri, token, credential, ...; rest_endpoint.h lists them).
 * Contacts nothing yet: the first load or commit asks GET /v1/config.
 * One thread at a time per catalog (the iceberg backend's store session
 * hands it out under a lock); its HTTP client and token are thread-safe,
 * the config it learns is not.
 * TETHER_ECONFIG on a bad property, naming the catalog and the key. */
int ib_catalog_rest_open(const json_t *props, const json_t *secrets, const char *name, struct ib_catalog **out);

#endif
