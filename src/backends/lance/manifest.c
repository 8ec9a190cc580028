/* One manifest file: the footer, the length-prefixed Manifest message, and
 * the feature flags. Lance's layout, from the end of the file:
 *
 *   ... sections ... | u32 len | Manifest | i64 pos | i16 major | i16 minor | "LANC"
 *
 * pos is where the manifest's length prefix starts, and the message must
 * end exactly where the footer begins. */
#include "backends/lance/lance.h"

#include <stdlib.h>
#include <string.h>

#define FOOTER 16

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int lc_check_flags(const TetherLance__Manifest *m, const char *name)
{
	const uint64_t flags[2] = {m->reader_feature_flags, m->writer_feature_flags};
	for (int w = 0; w < 2; w++) {
		uint64_t unknown = flags[w] & ~(uint64_t)LC_KNOWN_FLAGS;
		if (!unknown)
			continue;
		int bit = 0;
		while (!(unknown >> bit & 1))
			bit++;
		return tether_error_set(TETHER_EREFUSED, "%s: unknown Lance %s feature flag %llu (1<<%d): written by a newer "
		                                         "Lance than tether knows", name, w ? "writer" : "reader",
		                        (unsigned long long)1 << bit, bit);
	}
	return 0;
}

/* protobuf-c takes a field number 0 (no valid message has one) when its
 * tag is written in more bytes than needed, keeps it as an unknown field,
 * and would write it back as the one byte it refuses to read: such a
 * message is refused, in every nested message, before anything trusts it. */
static int has_field_zero(const ProtobufCMessage *msg, int depth)
{
	if (!msg || depth > 32)
		return depth > 32;
	for (unsigned i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return 1;
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	for (unsigned f = 0; f < d->n_fields; f++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[f];
		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		const char *at = (const char *)msg + fd->offset;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)msg + fd->quantifier_offset);
			ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)at;
			for (size_t k = 0; k < n; k++)
				if (has_field_zero(v[k], depth + 1))
					return 1;
		} else if (has_field_zero(*(ProtobufCMessage *const *)at, depth + 1)) {
			return 1;
		}
	}
	return 0;
}

int lc_manifest_parse(const uint8_t *bytes, size_t len, const char *name, struct lc_manifest *out)
{
	memset(out, 0, sizeof *out);
	if (len < FOOTER + 4 || memcmp(bytes + len - 4, "LANC", 4) != 0)
		return tether_error_set(TETHER_EIO, "%s: not a Lance manifest (no LANC footer; truncated?)", name);
	uint64_t pos = le64(bytes + len - FOOTER);
	if (pos > len - FOOTER - 4)
		return tether_error_set(TETHER_EIO, "%s: manifest position %llu lies outside the file (%zu bytes)", name,
		                        (unsigned long long)pos, len);
	uint32_t n = le32(bytes + pos);
	if ((uint64_t)n != len - FOOTER - 4 - pos)
		return tether_error_set(TETHER_EIO, "%s: manifest length %u does not match the file (%zu bytes)", name, n,
		                        len);
	out->m = tether_lance__manifest__unpack(NULL, n, bytes + pos + 4);
	if (!out->m)
		return tether_error_set(TETHER_EIO, "%s: the manifest is not a valid protobuf message", name);
	out->version = out->m->version;
	if (has_field_zero(&out->m->base, 0))
		return tether_error_set(TETHER_EIO, "%s: the manifest is not a valid protobuf message (a field number 0)",
		                        name);
	return lc_check_flags(out->m, name);
}

void lc_manifest_free(struct lc_manifest *m)
{
	if (m->m)
		tether_lance__manifest__free_unpacked(m->m, NULL);
	free(m->bytes);
	free(m->key);
	memset(m, 0, sizeof *m);
}
