/* The protocol gate (PROTOCOL.md, "Protocol Evolution", "Table Features"):
 * a reader must implement every reader feature a table lists. tether
 * reads only the log, for versions, ids and history, so it accepts the
 * features that change how data files are read but not how the log is,
 * and refuses the rest by name: catalogManaged (the catalog, not the
 * listing, says which commits are real) and anything it does not know. */
#include "backends/delta/delta.h"

#include <string.h>

/* Reader features whose meaning lies in the data files (column mapping,
 * deletion vectors, types) or in VACUUM, not in the log's structure; and
 * v2Checkpoint, whose UUID-named checkpoints and sidecars log.c and
 * checkpoint.c read. */
static const char *const known_reader_features[] = {
	"columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "variantType",
	"v2Checkpoint",  "vacuumProtocolCheck", NULL,
};

int dl_protocol_check(const json_t *protocol, const char *uri)
{
	const json_t *rv = json_object_get(protocol, "minReaderVersion");
	if (!json_is_integer(rv))
		return tether_error_set(TETHER_EIO, "%s: the protocol action has no minReaderVersion", uri);
	json_int_t reader = json_integer_value(rv);
	if (reader < 1 || reader > 3)
		return tether_error_set(TETHER_EREFUSED, "%s: Delta reader version %lld is not one tether reads (1 to 3)", uri,
		                        (long long)reader);
	if (reader < 3)
		return 0;
	const json_t *features = json_object_get(protocol, "readerFeatures");
	if (!json_is_array(features))
		return tether_error_set(TETHER_EIO, "%s: reader version 3 without readerFeatures", uri);
	size_t i;
	json_t *f;
	json_array_foreach(features, i, f) {
		const char *name = json_string_value(f);
		if (!name)
			return tether_error_set(TETHER_EIO, "%s: readerFeatures holds a non-string", uri);
		if (strcmp(name, "catalogManaged") == 0 || strcmp(name, "catalogOwned-preview") == 0)
			return tether_error_set(TETHER_EREFUSED, "%s: reader feature %s: the table's catalog, not its "
			                                         "_delta_log listing, says which commits exist, and tether "
			                                         "reads no catalog",
			                        uri, name);
		size_t k = 0;
		while (known_reader_features[k] && strcmp(known_reader_features[k], name) != 0)
			k++;
		if (!known_reader_features[k])
			return tether_error_set(TETHER_EREFUSED, "%s: reader feature %s is not one tether knows how to "
			                                         "read the log of",
			                        uri, name);
	}
	return 0;
}
