/* Inside the AWS credential chain (creds.h): a source of credentials. */
#ifndef TETHER_STORE_S3_CREDS_IMPL_H
#define TETHER_STORE_S3_CREDS_IMPL_H

#include "store/s3/creds.h"

#include <stddef.h>

/* Less than this many seconds left: fetch again (creds.h). */
#define TT_AWS_REFRESH_BEFORE 300

enum tt_aws_source_kind {
	TT_AWS_STATIC, /* keys as given: options, environment, a profile */
};

struct tt_aws_source {
	enum tt_aws_source_kind kind;
	char *name;                 /* what creds.source says: "environment", "profile dev", ... */
	struct tt_aws_creds cached; /* the last credentials fetched (or the static ones) */
};

/* Parse an ISO 8601 UTC time ("2026-12-07T18:00:00Z", fractions and a
 * "+00:00" offset allowed) as unix seconds; -1 when it is not one. */
int64_t tt_aws_parse_time(const char *s);

/* Copy a's strings into *out (zeroed first). */
int tt_aws_creds_copy(const struct tt_aws_creds *a, struct tt_aws_creds *out);

#endif
