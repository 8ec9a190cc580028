/* A small, checked XML reader for the answers of object stores and their
 * credential services (S3 and STS, Azure Blob): a whole document parsed
 * into a tree of elements. Namespaces are ignored (an element is found by
 * its local name, the part after any prefix); attributes are kept; text
 * is decoded (the five predefined entities, decimal and hex character
 * references, CDATA sections); comments, processing instructions and the
 * XML declaration are skipped. A DOCTYPE is refused (no entity expansion,
 * so no "billion laughs"). Depth is capped at 64, the document at 64 MiB.
 * Malformed input is refused with "NAME:LINE:COL: message"; so is a NUL
 * byte. Bytes are not checked as UTF-8: they pass through as they are (a
 * caller compares names and keys as bytes). Fuzzed (tests/fuzz/fuzz_xml.c). */
#ifndef TETHER_FORMAT_XML_H
#define TETHER_FORMAT_XML_H

#include <stddef.h>

struct tt_xml_doc;
struct tt_xml_node;

/* Parse; NULL on error, with "NAME:LINE:COL: message" in err (NAME is
 * name, e.g. "ListObjectsV2 answer from http://127.0.0.1:8333/b"). */
struct tt_xml_doc *tt_xml_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen);
void tt_xml_free(struct tt_xml_doc *doc);

/* The root element. */
const struct tt_xml_node *tt_xml_root(const struct tt_xml_doc *doc);
/* The element's local name ("Contents" for <s3:Contents>). */
const char *tt_xml_name(const struct tt_xml_node *n);
/* The first child element named name (local name; NULL: any), or NULL. */
const struct tt_xml_node *tt_xml_child(const struct tt_xml_node *n, const char *name);
/* The next sibling element after n named name (NULL: any), or NULL. */
const struct tt_xml_node *tt_xml_next(const struct tt_xml_node *n, const char *name);
/* The element's text: its character data, decoded, concatenated ("" when
 * none; child elements' text is not included). */
const char *tt_xml_text(const struct tt_xml_node *n);
/* The text of the first child named name, or NULL when there is none. */
const char *tt_xml_child_text(const struct tt_xml_node *n, const char *name);
/* An attribute's decoded value (local name), or NULL. */
const char *tt_xml_attr(const struct tt_xml_node *n, const char *name);

#endif
