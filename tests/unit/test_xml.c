/* The XML reader (src/format/xml.c): real answers of S3 and Azure, and
 * hostile documents, each refused with NAME:LINE:COL and why. */
#include "check.h"

#include "format/xml.h"

static struct tt_xml_doc *parse(const char *s, char *err, size_t n)
{
	return tt_xml_parse(s, strlen(s), "answer", err, n);
}

static void test_list_answer(void)
{
	const char *s =
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	    "<Name>b</Name><Prefix></Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
	    "<Contents><Key>a &amp; b/&lt;c&gt;</Key><ETag>&quot;9b2c&quot;</ETag><Size>12</Size></Contents>"
	    "<!-- a comment --><Contents><Key><![CDATA[x<y>&z]]></Key><Size>0</Size></Contents>"
	    "<NextContinuationToken>1/a+b=</NextContinuationToken></ListBucketResult>\n";
	char err[256];
	struct tt_xml_doc *d = parse(s, err, sizeof err);
	CHECK(d != NULL);
	if (!d) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	const struct tt_xml_node *r = tt_xml_root(d);
	CHECK_STR(tt_xml_name(r), "ListBucketResult");
	CHECK_STR(tt_xml_attr(r, "xmlns"), "http://s3.amazonaws.com/doc/2006-03-01/");
	CHECK_STR(tt_xml_child_text(r, "Prefix"), "");
	CHECK(tt_xml_child_text(r, "Delimiter") == NULL);
	CHECK_STR(tt_xml_child_text(r, "IsTruncated"), "true");
	const struct tt_xml_node *c = tt_xml_child(r, "Contents");
	CHECK_STR(tt_xml_child_text(c, "Key"), "a & b/<c>");
	CHECK_STR(tt_xml_child_text(c, "ETag"), "\"9b2c\"");
	c = tt_xml_next(c, "Contents");
	CHECK_STR(tt_xml_child_text(c, "Key"), "x<y>&z");
	CHECK(tt_xml_next(c, "Contents") == NULL);
	CHECK_STR(tt_xml_name(tt_xml_next(c, NULL)), "NextContinuationToken");
	CHECK_STR(tt_xml_name(tt_xml_child(r, NULL)), "Name");
	CHECK_STR(tt_xml_text(r), "");
	tt_xml_free(d);
}

static void test_namespaces_and_refs(void)
{
	const char *s = "\xEF\xBB\xBF<s:Error xmlns:s=\"urn:x\" s:kind='a&apos;b'>\r\n"
	                "  <s:Code>Slow&#68;own</s:Code><Message>&#xE9;&#233;&#x1F600; ok</Message>"
	                "<Empty/><Spaced  a = \"1\" ></Spaced ><?pi stuff?></s:Error>";
	char err[256];
	struct tt_xml_doc *d = parse(s, err, sizeof err);
	CHECK(d != NULL);
	if (!d) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	const struct tt_xml_node *r = tt_xml_root(d);
	CHECK_STR(tt_xml_name(r), "Error");
	CHECK_STR(tt_xml_attr(r, "kind"), "a'b");
	CHECK_STR(tt_xml_child_text(r, "Code"), "SlowDown");
	CHECK_STR(tt_xml_child_text(r, "Message"), "\xC3\xA9\xC3\xA9\xF0\x9F\x98\x80 ok");
	CHECK_STR(tt_xml_child_text(r, "Empty"), "");
	CHECK_STR(tt_xml_attr(tt_xml_child(r, "Spaced"), "a"), "1");
	CHECK(tt_xml_attr(r, "missing") == NULL);
	/* The root's own text: the whitespace between its children. */
	CHECK(strspn(tt_xml_text(r), " \r\n") == strlen(tt_xml_text(r)));
	tt_xml_free(d);

	/* Bytes that are not UTF-8 pass through (xml.h says so). */
	d = parse("<K>\xFF\xFE</K>", err, sizeof err);
	CHECK(d && strcmp(tt_xml_text(tt_xml_root(d)), "\xFF\xFE") == 0);
	tt_xml_free(d);
}

/* Refused, with "answer:LINE:COL: " and `why` in the message. */
static void refused(const char *s, size_t len, const char *where, const char *why)
{
	char err[256];
	struct tt_xml_doc *d = tt_xml_parse(s, len, "answer", err, sizeof err);
	CHECK(d == NULL);
	tt_xml_free(d);
	char want[64];
	snprintf(want, sizeof want, "answer:%s: ", where);
	int ok = strncmp(err, want, strlen(want)) == 0 && strstr(err, why) != NULL;
	if (!ok)
		fprintf(stderr, "  input %.40s: got '%s', want '%s...%s'\n", s, err, want, why);
	CHECK(ok);
}

#define REFUSED(s, where, why) refused(s, strlen(s), where, why)

static void test_refusals(void)
{
	REFUSED("", "1:1", "no root element");
	REFUSED("  \n ", "2:2", "no root element");
	REFUSED("<a>", "1:1", "<a> is never closed");
	REFUSED("<a><b></a>", "1:7", "</a> closes <b>");
	REFUSED("<a>\n<b></bb></a>", "2:4", "</bb> closes <b>");
	REFUSED("<a></a><b/>", "1:8", "content after the root element");
	REFUSED("<a/>junk", "1:5", "content after the root element");
	REFUSED("text", "1:1", "no root element");
	REFUSED("<!DOCTYPE lol [<!ENTITY lol \"lol\">]><a>&lol;</a>", "1:1", "DOCTYPE is refused");
	REFUSED("<a><!DOCTYPE x></a>", "1:4", "unexpected '<!'");
	REFUSED("<a>&lol;</a>", "1:4", "bad entity");
	REFUSED("<a>&#0;</a>", "1:4", "bad entity");
	REFUSED("<a>&#xD800;</a>", "1:4", "bad entity");
	REFUSED("<a>&#x110000;</a>", "1:4", "bad entity");
	REFUSED("<a>&#;</a>", "1:4", "bad entity");
	REFUSED("<a>&#x;</a>", "1:4", "bad entity");
	REFUSED("<a>AT&T</a>", "1:6", "starts no entity");
	REFUSED("<a x=\"1\" x='2'/>", "1:10", "given twice");
	REFUSED("<a x=1/>", "1:6", "quoted value");
	REFUSED("<a x=\"1/>", "1:4", "unterminated value");
	REFUSED("<a x=\"<\"/>", "1:7", "'<' in an attribute");
	REFUSED("<a x/>", "1:5", "expected '='");
	REFUSED("<a x=\"1\"y=\"2\"/>", "1:9", "expected whitespace");
	REFUSED("<1a/>", "1:2", "expected element name");
	REFUSED("<a><!-- open</a>", "1:4", "unterminated comment");
	REFUSED("<a><![CDATA[open</a>", "1:13", "unterminated CDATA");
	REFUSED("<?xml version=\"1.0\"", "1:1", "unterminated processing instruction");
	REFUSED("<a/ >", "1:4", "expected '>' after '/'");
	REFUSED("<a></a", "1:7", "expected '>' to end </a");
	REFUSED("<a", "1:3", "unclosed start tag <a");
	REFUSED("<é>", "1:1", "<é> is never closed");
	refused("<a>x\0y</a>", 10, "1:5", "NUL byte");

	/* Depth: 64 levels are fine, 65 are not. */
	char deep[1024];
	size_t o = 0;
	for (int i = 0; i < 64; i++)
		o += (size_t)snprintf(deep + o, sizeof deep - o, "<e>");
	for (int i = 0; i < 64; i++)
		o += (size_t)snprintf(deep + o, sizeof deep - o, "</e>");
	char err[256];
	struct tt_xml_doc *d = parse(deep, err, sizeof err);
	CHECK(d != NULL);
	tt_xml_free(d);
	o = 0;
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(deep + o, sizeof deep - o, "<e>");
	REFUSED(deep, "1:193", "nested deeper than 64");

	/* A short error buffer is cut, never overrun; a NULL one is fine. */
	char tiny[8];
	CHECK(tt_xml_parse("<a>", 3, "answer", tiny, sizeof tiny) == NULL && strlen(tiny) == 7);
	CHECK(tt_xml_parse("<a>", 3, "answer", NULL, 0) == NULL);
}

int main(void)
{
	test_list_answer();
	test_namespaces_and_refs();
	test_refusals();
	CHECK_DONE();
}
