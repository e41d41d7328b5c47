/*
 * trace_writer_test.c — the trace's JSON writer (common/jsonw.c) against
 * its reader (offline/json.c), and the trace schema against its docs:
 *   escape_roundtrip  random byte strings (quotes, backslashes, control
 *                     characters, invalid UTF-8) written as values and
 *                     member names, parsed and read back: the same bytes;
 *                     the text is always valid UTF-8
 *   never_cut         random elements into buffers of every small size:
 *                     the text always parses; what is left out is whole
 *   schema_in_docs    every line type, record and field of
 *                     trace_schema.def is in docs/TRACE.md (argv[2])
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "json.h"
#include "jsonw.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A random byte (never NUL: C strings), often one that needs care. */
static char nasty_byte(void)
{
    static const char special[] = "\"\\/\b\f\n\r\t\x01\x1f\x7f\x80\xbf\xc0\xc1\xc2\xe0\xed\xf0\xf4\xf5\xff";
    uint32_t r = next_rand() % 8;
    if (r < 3)
        return special[next_rand() % (sizeof special - 1)];
    if (r < 5) {
        static const char *const valid[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\x9f\xbf"};
        return valid[next_rand() % 4][0];   /* a lead byte alone: usually invalid */
    }
    char c;
    do
        c = (char)(next_rand() & 0xff);
    while (c == 0);
    return c;
}

/* Fills s with n random bytes, sometimes whole valid UTF-8 sequences. */
static void random_string(char *s, size_t n)
{
    static const char *const valid[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\x9f\xbf",
                                        "\xc2\x80", "\xef\xbf\xbf"};
    size_t i = 0;
    while (i < n) {
        if (next_rand() % 5 == 0) {
            const char *v = valid[next_rand() % 6];
            size_t k = strlen(v);
            if (i + k > n)
                break;
            memcpy(s + i, v, k);
            i += k;
        } else {
            s[i++] = nasty_byte();
        }
    }
    s[i] = 0;
}

/* True when s[0..n) is valid UTF-8 (RFC 3629). */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!k || i + k > n)
            return 0;
        for (size_t m = 1; m < k; m++)
            if ((s[i + m] & 0xc0) != 0x80)
                return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) || (c == 0xf0 && s[i + 1] < 0x90) ||
            (c == 0xf4 && s[i + 1] > 0x8f))
            return 0;
        i += k;
    }
    return 1;
}

static void escape_roundtrip(void)
{
    static lms_json_node nodes[64];
    for (int round = 0; round < 200000; round++) {
        char key[40], value[200], buf[2048], back[400], backkey[100];
        random_string(key, next_rand() % 12 + 1);
        random_string(value, next_rand() % 120);
        lms_jw w;
        lms_jw_init(&w, buf, sizeof buf);
        lms_jw_begin(&w, NULL, '{');
        lms_jw_str(&w, key, value);
        lms_jw_str(&w, "k", value);
        size_t len = lms_jw_finish(&w);
        CHECK(!w.full);
        CHECK(valid_utf8((const unsigned char *)buf, len));
        lms_json j = {.nodes = nodes, .cap = 64};
        if (!lms_json_parse(&j, buf, len)) {
            fprintf(stderr, "round %d: %s at %zu in %s\n", round, j.error, j.error_at, buf);
            CHECK(0);
        }
        CHECK(j.nodes[0].count == 2);
        CHECK(lms_json_string(&j, 0, "k", back, sizeof back));
        CHECK(strcmp(back, value) == 0);
        int first = j.nodes[0].first_child;
        size_t kl = lms_json_unescape(j.nodes[first].key, j.nodes[first].key_len, backkey, sizeof backkey);
        CHECK(kl == strlen(key) && memcmp(backkey, key, kl) == 0);
        CHECK(lms_json_node_string(&j, first, back, sizeof back) && strcmp(back, value) == 0);
    }
}

static void never_cut(void)
{
    static lms_json_node nodes[512];
    for (int round = 0; round < 100000; round++) {
        char buf[300], s[60];
        size_t cap = next_rand() % 200 + 1;
        lms_jw w;
        lms_jw_init(&w, buf, cap);
        int opened = lms_jw_begin(&w, NULL, next_rand() % 2 ? '[' : '{');
        int in_object[LMS_JW_DEPTH + 1] = {buf[0] == '{'};
        int written = 0, full_seen = 0;
        for (int e = 0; e < 20 && opened; e++) {
            const char *key = in_object[w.depth - 1] ? "key" : NULL;
            size_t before = w.len;
            bool was_full = w.full;
            w.full = false;
            switch (next_rand() % 6) {
            case 0: random_string(s, next_rand() % 40); lms_jw_str(&w, key, s); break;
            case 1: lms_jw_u64(&w, key, next_rand()); break;
            case 2: lms_jw_hex(&w, key, (uint64_t)next_rand() << 20); break;
            case 3: lms_jw_bool(&w, key, next_rand() % 2); break;
            case 4: {
                char b = next_rand() % 2 ? '[' : '{';
                if (w.depth < LMS_JW_DEPTH && lms_jw_begin(&w, key, b))
                    in_object[w.depth - 1] = b == '{';
                break;
            }
            default: if (w.depth > 1) lms_jw_end(&w); break;
            }
            if (w.full) {
                CHECK(w.len == before);   /* left out whole */
                full_seen = 1;
            } else {
                written++;
            }
            w.full = w.full || was_full;
        }
        size_t len = lms_jw_finish(&w);
        CHECK(len < cap || cap == 0);
        CHECK(buf[len] == 0);
        if (!opened)
            continue;
        lms_json j = {.nodes = nodes, .cap = 512};
        if (!lms_json_parse(&j, buf, len)) {
            fprintf(stderr, "cap %zu: %s at %zu in %s\n", cap, j.error, j.error_at, buf);
            CHECK(0);
        }
        (void)written;
        (void)full_seen;
    }
}

/* The row of docs/TRACE.md that documents `name`: "| `name` | ...". */
static const char *row_of(const char *doc, const char *name, size_t *len)
{
    char head[80];
    snprintf(head, sizeof head, "\n| `%s` |", name);
    const char *r = strstr(doc, head);
    if (!r)
        return NULL;
    r++;
    const char *end = strchr(r, '\n');
    *len = end ? (size_t)(end - r) : strlen(r);
    return r;
}

static const char *doc_path;

static void schema_in_docs(void)
{
    FILE *f = fopen(doc_path, "r");
    CHECK(f);
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    int missing = 0;
    const char *row = NULL;
    size_t row_len = 0;
#define LMS_EVENT(ev) row = row_of(doc, #ev, &row_len); \
    if (!row) { fprintf(stderr, "docs/TRACE.md has no row for line type `%s`\n", #ev); missing++; }
#define LMS_RECORD(rec) row = row_of(doc, #rec, &row_len); \
    if (!row) { fprintf(stderr, "docs/TRACE.md has no row for record `%s`\n", #rec); missing++; }
#define LMS_FIELD(owner, name, type, text)                                                   \
    if (row) {                                                                               \
        char want[80];                                                                       \
        snprintf(want, sizeof want, "`%s`", #name);                                          \
        char *copy = strndup(row, row_len);                                                  \
        if (!copy || !strstr(copy, want)) {                                                  \
            fprintf(stderr, "docs/TRACE.md: `%s` does not name its field %s\n", #owner, want); \
            missing++;                                                                       \
        }                                                                                    \
        free(copy);                                                                          \
    }
#define LMS_END(owner)
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END
    CHECK(missing == 0);
}

int main(int argc, char **argv)
{
    doc_path = argc > 2 ? argv[2] : "docs/TRACE.md";
    static const test_case cases[] = {
        {"escape_roundtrip", escape_roundtrip}, {"never_cut", never_cut}, {"schema_in_docs", schema_in_docs}};
    return run_case(cases, sizeof cases / sizeof cases[0], argc, argv);
}
