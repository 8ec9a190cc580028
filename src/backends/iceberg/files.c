/* The table's files (metadata JSON, manifest lists) through tether's byte
 * stores: a location is split into its directory, opened as a store, and
 * the file name, a key in it. file:///p and /p are one local path;
 * s3a://b/k and s3n://b/k (Hadoop's S3 file systems, which Spark and
 * Java's HadoopFileIO write into table metadata) are s3://b/k, as
 * pyiceberg and Java's S3FileIO read them. */
#include "backends/iceberg/ib.h"

#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

int ib_split_location(const char *location, char **dir, const char **name)
{
	const char *slash = strrchr(location, '/');
	if (!slash || !slash[1] || slash == location)
		return tether_error_set(TETHER_ECONFIG, "file location \"%s\" is not a file path", location);
	*name = slash + 1;
	*dir = strndup(location, (size_t)(slash - location));
	return *dir ? 0 : ib_fail_oom();
}

int ib_open_dir(const struct tether_bctx *ctx, const char *dir, tether_store **store)
{
	/* Only store options apply here ([uris."<prefix>"] of secrets.toml):
	 * the object's own secrets are catalog properties, not the store's. */
	struct tether_bctx plain = ctx ? *ctx : (struct tether_bctx){TETHER_BCTX_INIT};
	plain.secrets = NULL;
	/* Java's Hadoop paths spell a local file "file:/p" (one slash). */
	if (strncmp(dir, "file:/", 6) == 0 && dir[6] != '/')
		dir += 5;
	char *s3 = NULL;
	if (strncmp(dir, "s3a://", 6) == 0 || strncmp(dir, "s3n://", 6) == 0) {
		if (!(s3 = tt_strdupf("s3://%s", dir + 6)))
			return ib_fail_oom();
		dir = s3; /* its [uris."s3://..."] options, its store */
	}
	json_t *options = NULL;
	int rc = ctx ? tether_bctx_store_options(&plain, dir, NULL, &options) : 0;
	if (rc == 0)
		rc = tether_store_open(dir, options, store);
	json_decref(options);
	free(s3);
	return rc;
}

int ib_file_exists(const struct tether_bctx *ctx, const char *location, int *exists)
{
	char *dir = NULL;
	const char *name = NULL;
	tether_store *store = NULL;
	*exists = 0;
	int rc = ib_split_location(location, &dir, &name);
	if (rc == 0)
		rc = ib_open_dir(ctx, dir, &store);
	if (rc == 0)
		rc = tether_store_head(store, name, exists, NULL, NULL);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 0;
	}
	tether_store_close(store);
	free(dir);
	return rc;
}
