/*
 * units.c — parsing and printing byte sizes (see units.h).
 */
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

bool lms_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= 0))
        return false;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 0x1p10; end++; break;
    case 'm': case 'M': mult = 0x1p20; end++; break;
    case 'g': case 'G': mult = 0x1p30; end++; break;
    case 't': case 'T': mult = 0x1p40; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return false;
    double bytes = v * mult;
    if (bytes >= 0x1p64)
        return false;
    *out = (uint64_t)bytes;
    return true;
}

void lms_format_size(char *buf, size_t len, uint64_t b)
{
    static const char units[] = "KMGT";
    if (b < 1024) {
        snprintf(buf, len, "%llu", (unsigned long long)b);
        return;
    }
    int u = -1;
    double v = (double)b;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    if (v == (double)(uint64_t)v)
        snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
    else
        snprintf(buf, len, "%.2f%c", v, units[u]);
}

/* The device charge of an allocation of `size` bytes (see units.h). */
uint64_t lms_charge_of(uint64_t size)
{
    uint64_t g = size < (2ull << 20) ? 512 : 2ull << 20;
    return (size + g - 1) / g * g;
}
