/*
 * jsonw.c — the JSON writer (see jsonw.h). Each element is written in
 * place and taken back whole when it would pass the limit: the bytes kept
 * for closing every open container, the caller's reserve and the NUL.
 */
#include "jsonw.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if s[0] starts none
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k;
    unsigned char lo = 0x80, hi = 0xbf;   /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        k = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return k;
}

size_t lms_json_escape(const char *s, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t at = 0;
#define PUT(ch)                \
    do {                       \
        if (at < cap)          \
            out[at] = (ch);    \
        at++;                  \
    } while (0)
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            PUT((char)c);
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = utf8_len(u + i, n - i);
            for (size_t m = 0; m < k; m++)
                PUT((char)u[i + m]);
            if (k) {
                i += k;
                continue;
            }
        }
        PUT('\\');
        switch (c) {
        case '"': PUT('"'); break;
        case '\\': PUT('\\'); break;
        case '\n': PUT('n'); break;
        case '\t': PUT('t'); break;
        case '\r': PUT('r'); break;
        case '\b': PUT('b'); break;
        case '\f': PUT('f'); break;
        default:   /* other controls, and bytes that are not UTF-8 */
            PUT('u');
            PUT('0');
            PUT('0');
            PUT(hex[c >> 4]);
            PUT(hex[c & 15]);
        }
        i++;
    }
#undef PUT
    return at;
}

void lms_jw_init(lms_jw *w, char *buf, size_t cap)
{
    memset(w, 0, sizeof *w);
    w->buf = buf;
    w->cap = cap;
    if (cap)
        buf[0] = 0;
}

/* The highest length an element may reach. */
static size_t limit(const lms_jw *w)
{
    size_t keep = (size_t)w->depth + 1 + w->reserve;
    return w->cap > keep ? w->cap - keep : 0;
}

/* Appends n bytes if they fit under the limit. */
static bool put(lms_jw *w, const char *s, size_t n)
{
    if (w->len + n > limit(w))
        return false;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    return true;
}

/* The comma and the member name before an element; false if they do not fit. */
static bool lead(lms_jw *w, const char *key)
{
    if (w->depth > 0 && w->has_items[w->depth - 1] && !put(w, ",", 1))
        return false;
    if (!key)
        return true;
    size_t kl = strlen(key);
    if (!put(w, "\"", 1))
        return false;
    size_t room = limit(w) - w->len;
    size_t need = lms_json_escape(key, kl, w->buf + w->len, room);
    if (need >= room)   /* also keeps the ':' in */
        return false;
    w->len += need;
    return put(w, "\":", 2);
}

/* Ends an element begun at `start`: kept if it fit, else taken back. */
static void done(lms_jw *w, size_t start, bool ok)
{
    if (!ok) {
        w->len = start;
        w->full = true;
        return;
    }
    if (w->depth > 0)
        w->has_items[w->depth - 1] = true;
}

void lms_jw_strn(lms_jw *w, const char *key, const char *s, size_t n)
{
    size_t start = w->len;
    bool ok = lead(w, key) && put(w, "\"", 1);
    if (ok) {
        size_t room = limit(w) - w->len;
        size_t need = lms_json_escape(s, n, w->buf + w->len, room);
        ok = need < room;
        if (ok) {
            w->len += need;
            ok = put(w, "\"", 1);
        }
    }
    done(w, start, ok);
}

void lms_jw_str(lms_jw *w, const char *key, const char *s)
{
    lms_jw_strn(w, key, s ? s : "", s ? strlen(s) : 0);
}

/* A number or word given as text. */
static void scalar(lms_jw *w, const char *key, const char *text)
{
    size_t start = w->len;
    done(w, start, lead(w, key) && put(w, text, strlen(text)));
}

void lms_jw_u64(lms_jw *w, const char *key, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    scalar(w, key, t);
}

void lms_jw_i64(lms_jw *w, const char *key, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    scalar(w, key, t);
}

void lms_jw_hex(lms_jw *w, const char *key, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "\"0x%llx\"", (unsigned long long)v);
    scalar(w, key, t);
}

void lms_jw_bool(lms_jw *w, const char *key, bool v)
{
    scalar(w, key, v ? "true" : "false");
}

bool lms_jw_begin(lms_jw *w, const char *key, char bracket)
{
    size_t start = w->len;
    char b[1] = {bracket == '[' ? '[' : '{'};
    /* the new level's closing bracket must fit too */
    bool ok = w->depth < LMS_JW_DEPTH && lead(w, key) && w->len + 2 <= limit(w) && put(w, b, 1);
    if (!ok) {
        done(w, start, false);
        return false;
    }
    if (w->depth > 0)
        w->has_items[w->depth - 1] = true;
    w->closer[w->depth] = bracket == '[' ? ']' : '}';
    w->has_items[w->depth++] = false;
    return true;
}

void lms_jw_end(lms_jw *w)
{
    if (w->depth == 0)
        return;
    /* Closing brackets live in the room limit() keeps: always there. */
    w->depth--;
    w->buf[w->len++] = w->closer[w->depth];
}

lms_jw_mark lms_jw_here(const lms_jw *w)
{
    return (lms_jw_mark){w->len, w->depth, w->depth > 0 ? w->has_items[w->depth - 1] : false};
}

void lms_jw_rewind(lms_jw *w, lms_jw_mark m)
{
    w->len = m.len;
    w->depth = m.depth;
    if (m.depth > 0)
        w->has_items[m.depth - 1] = m.has_items;
}

size_t lms_jw_finish(lms_jw *w)
{
    while (w->depth > 0)
        lms_jw_end(w);
    if (w->cap)
        w->buf[w->len < w->cap ? w->len : w->cap - 1] = 0;
    return w->len;
}
