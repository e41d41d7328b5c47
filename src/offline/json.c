/*
 * json.c — the JSON reader (see json.h): recursive descent over the line,
 * with explicit bounds on depth and on the node array.
 */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef struct parser {
    lms_json *j;
    const char *s;
    size_t len, at;
} parser;

static bool fail(parser *p, const char *why)
{
    snprintf(p->j->error, sizeof p->j->error, "%s", why);
    p->j->error_at = p->at;
    return false;
}

static void skip_space(parser *p)
{
    while (p->at < p->len && (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\r' ||
                              p->s[p->at] == '\n'))
        p->at++;
}

/* Takes a new node; -1 when the array is full. */
static int new_node(parser *p, lms_json_type type)
{
    if (p->j->n >= p->j->cap)
        return -1;
    int i = p->j->n++;
    p->j->nodes[i] = (lms_json_node){.type = type, .first_child = -1, .next = -1};
    return i;
}

/* A string starting at the opening quote: its raw content. */
static bool parse_string(parser *p, const char **out, size_t *out_len)
{
    p->at++;   /* the quote */
    size_t start = p->at;
    while (p->at < p->len && p->s[p->at] != '"') {
        unsigned char c = (unsigned char)p->s[p->at];
        if (c < 0x20)
            return fail(p, "control character in a string");
        if (c == '\\') {
            if (++p->at >= p->len)
                break;
            char e = p->s[p->at];
            if (e == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (p->at + k >= p->len || !strchr("0123456789abcdefABCDEF", p->s[p->at + k]) ||
                        !p->s[p->at + k])
                        return fail(p, "bad \\u escape");
                p->at += 4;
            } else if (!strchr("\"\\/bfnrt", e) || !e) {
                return fail(p, "bad escape");
            }
        }
        p->at++;
    }
    if (p->at >= p->len)
        return fail(p, "unterminated string");
    *out = p->s + start;
    *out_len = p->at - start;
    p->at++;
    return true;
}

static bool parse_value(parser *p, int *out, int depth);

/* An array or object starting at its bracket. */
static bool parse_container(parser *p, int node, bool object, int depth)
{
    p->at++;
    skip_space(p);
    char close = object ? '}' : ']';
    int last = -1;
    if (p->at < p->len && p->s[p->at] == close) {
        p->at++;
        return true;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        skip_space(p);
        if (object) {
            if (p->at >= p->len || p->s[p->at] != '"')
                return fail(p, "expected a member name");
            if (!parse_string(p, &key, &key_len))
                return false;
            skip_space(p);
            if (p->at >= p->len || p->s[p->at] != ':')
                return fail(p, "expected ':'");
            p->at++;
        }
        int child;
        if (!parse_value(p, &child, depth + 1))
            return false;
        p->j->nodes[child].key = key;
        p->j->nodes[child].key_len = key_len;
        if (last < 0)
            p->j->nodes[node].first_child = child;
        else
            p->j->nodes[last].next = child;
        last = child;
        p->j->nodes[node].count++;
        skip_space(p);
        if (p->at >= p->len)
            return fail(p, object ? "unterminated object" : "unterminated array");
        if (p->s[p->at] == ',') {
            p->at++;
            continue;
        }
        if (p->s[p->at] == close) {
            p->at++;
            return true;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* A number in JSON's grammar. */
static bool parse_number(parser *p, double *out)
{
    size_t i = p->at;
    if (i < p->len && p->s[i] == '-')
        i++;
    if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
        return fail(p, "bad number");
    if (p->s[i] == '0')
        i++;
    else
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    if (i < p->len && p->s[i] == '.') {
        i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
            return fail(p, "bad fraction");
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
            return fail(p, "bad exponent");
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    char buf[64];
    size_t n = i - p->at;
    if (n >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, p->s + p->at, n);
    buf[n] = 0;
    *out = strtod(buf, NULL);
    p->at = i;
    return true;
}

/* Matches a literal word. */
static bool word(parser *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->at < n || memcmp(p->s + p->at, w, n) != 0)
        return false;
    p->at += n;
    return true;
}

static bool parse_value(parser *p, int *out, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(p, "nested too deep");
    skip_space(p);
    if (p->at >= p->len)
        return fail(p, "unexpected end");
    char c = p->s[p->at];
    int node;
    if (c == '{' || c == '[') {
        node = new_node(p, c == '{' ? LMS_JSON_OBJECT : LMS_JSON_ARRAY);
        if (node < 0)
            return fail(p, "too many values");
        *out = node;
        return parse_container(p, node, c == '{', depth);
    }
    if (c == '"') {
        node = new_node(p, LMS_JSON_STRING);
        if (node < 0)
            return fail(p, "too many values");
        *out = node;
        return parse_string(p, &p->j->nodes[node].str, &p->j->nodes[node].str_len);
    }
    if (c == 't' || c == 'f' || c == 'n') {
        bool t = word(p, "true"), f = !t && word(p, "false"), z = !t && !f && word(p, "null");
        if (!t && !f && !z)
            return fail(p, "unknown word");
        node = new_node(p, z ? LMS_JSON_NULL : LMS_JSON_BOOL);
        if (node < 0)
            return fail(p, "too many values");
        p->j->nodes[node].num = t;
        *out = node;
        return true;
    }
    node = new_node(p, LMS_JSON_NUMBER);
    if (node < 0)
        return fail(p, "too many values");
    *out = node;
    return parse_number(p, &p->j->nodes[node].num);
}

bool lms_json_parse(lms_json *j, const char *text, size_t len)
{
    parser p = {.j = j, .s = text, .len = len};
    j->n = 0;
    j->error[0] = 0;
    int root;
    if (!parse_value(&p, &root, 0))
        return false;
    skip_space(&p);
    if (p.at != len)
        return fail(&p, "text after the value");
    return true;
}

int lms_json_get(const lms_json *j, int obj, const char *key)
{
    if (obj < 0 || obj >= j->n || j->nodes[obj].type != LMS_JSON_OBJECT)
        return -1;
    size_t n = strlen(key);
    for (int c = j->nodes[obj].first_child; c >= 0; c = j->nodes[c].next)
        if (j->nodes[c].key_len == n && memcmp(j->nodes[c].key, key, n) == 0)
            return c;
    return -1;
}

bool lms_json_number(const lms_json *j, int obj, const char *key, double *out)
{
    int c = lms_json_get(j, obj, key);
    if (c < 0 || (j->nodes[c].type != LMS_JSON_NUMBER && j->nodes[c].type != LMS_JSON_BOOL))
        return false;
    *out = j->nodes[c].num;
    return true;
}

/* The value of hex digit c (the parser has checked it is one). */
static unsigned hexval(char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
}

/* Appends code point cp as UTF-8. */
static void put_utf8(char *out, size_t cap, size_t *at, unsigned cp)
{
    unsigned char b[4];
    size_t k;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    for (size_t i = 0; i < k; i++, (*at)++)
        if (*at < cap)
            out[*at] = (char)b[i];
}

size_t lms_json_unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 >= n) {
            if (at < cap)
                out[at] = c;
            at++;
            continue;
        }
        char e = s[++i];
        unsigned cp = 0;
        if (e == 'u' && i + 4 < n) {
            for (int k = 1; k <= 4; k++)
                cp = cp << 4 | hexval(s[i + k]);
            i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < n && s[i + 1] == '\\' && s[i + 2] == 'u') {
                unsigned lo = 0;
                for (int k = 3; k <= 6; k++)
                    lo = lo << 4 | hexval(s[i + k]);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
            }
            if (cp >= 0x80 && cp <= 0xff) {   /* a byte that was not UTF-8 (jsonw.h) */
                if (at < cap)
                    out[at] = (char)cp;
                at++;
            } else {
                put_utf8(out, cap, &at, cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
            }
            continue;
        }
        char d = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        if (at < cap)
            out[at] = d;
        at++;
    }
    return at;
}

bool lms_json_node_string(const lms_json *j, int node, char *out, size_t len)
{
    if (node < 0 || node >= j->n || j->nodes[node].type != LMS_JSON_STRING || len == 0)
        return false;
    size_t n = lms_json_unescape(j->nodes[node].str, j->nodes[node].str_len, out, len - 1);
    out[n < len - 1 ? n : len - 1] = 0;
    return true;
}

bool lms_json_string(const lms_json *j, int obj, const char *key, char *out, size_t len)
{
    return lms_json_node_string(j, lms_json_get(j, obj, key), out, len);
}

bool lms_json_int(const lms_json *j, int obj, const char *key, double lo, double hi, long long *out)
{
    double v;
    if (!lms_json_number(j, obj, key, &v) || !(v >= lo && v <= hi) || v != (double)(long long)v)
        return false;
    *out = (long long)v;
    return true;
}
