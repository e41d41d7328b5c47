/*
 * addrmap.c — the address map (see addrmap.h).
 */
#include "addrmap.h"

#include <stdlib.h>
#include <string.h>

void lms_addrmap_init(lms_addrmap *m, size_t vsize)
{
    *m = (lms_addrmap){.vsize = vsize};
}

void lms_addrmap_free(lms_addrmap *m)
{
    free(m->keys);
    free(m->values);
    lms_addrmap_init(m, m->vsize);
}

/* The slot of key, or the empty slot where it would go. */
static size_t find(const lms_addrmap *m, uint64_t key)
{
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 17) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* Doubles the table (or makes the first one). */
static bool grow(lms_addrmap *m)
{
    lms_addrmap n = {.vsize = m->vsize, .cap = m->cap ? m->cap * 2 : 1024};
    n.keys = calloc(n.cap, sizeof *n.keys);
    n.values = malloc(n.cap * n.vsize);
    if (!n.keys || !n.values) {
        free(n.keys);
        free(n.values);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = find(&n, m->keys[i]);
            n.keys[j] = m->keys[i];
            memcpy(n.values + j * n.vsize, m->values + i * m->vsize, m->vsize);
            n.n++;
        }
    free(m->keys);
    free(m->values);
    *m = n;
    return true;
}

bool lms_addrmap_put(lms_addrmap *m, uint64_t key, const void *value)
{
    if (!key || ((m->n + 1) * 2 > m->cap && !grow(m)))
        return false;
    size_t i = find(m, key);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    memcpy(m->values + i * m->vsize, value, m->vsize);
    return true;
}

bool lms_addrmap_take(lms_addrmap *m, uint64_t key, void *out)
{
    if (!m->cap || !key)
        return false;
    size_t i = find(m, key);
    if (!m->keys[i])
        return false;
    if (out)
        memcpy(out, m->values + i * m->vsize, m->vsize);
    m->keys[i] = 0;
    m->n--;
    /* Backward shift: re-place the entries after it until an empty slot. */
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        uint64_t k = m->keys[j];
        m->keys[j] = 0;
        size_t to = find(m, k);
        m->keys[to] = k;
        if (to != j)
            memcpy(m->values + to * m->vsize, m->values + j * m->vsize, m->vsize);
    }
    return true;
}

void *lms_addrmap_get(const lms_addrmap *m, uint64_t key)
{
    if (!m->cap || !key)
        return NULL;
    size_t i = find(m, key);
    return m->keys[i] ? m->values + i * m->vsize : NULL;
}

void *lms_addrmap_slot(const lms_addrmap *m, size_t i)
{
    return i < m->cap && m->keys[i] ? m->values + i * m->vsize : NULL;
}
