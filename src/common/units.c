/*
 * units.c — parsing and printing byte sizes (see units.h).
 */
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads "digits[.digits]" at s (nothing else: no sign, space, exponent or
 * hex); *end is left after it. False when s does not start with a digit. */
static bool decimal_prefix(const char *s, double *out, const char **end)
{
    const char *p = s;
    double v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    if (*p == '.') {
        /* The fraction as digits over a power of ten (one rounding, no
         * locale: the program may have set one with a decimal comma). */
        uint64_t digits = 0;
        double scale = 1;
        p++;
        if (*p < '0' || *p > '9')
            return false;
        for (; *p >= '0' && *p <= '9'; p++)
            if (scale < 1e18) {
                digits = digits * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
        v += (double)digits / scale;
    }
    *out = v;
    *end = p;
    return true;
}

bool lms_parse_decimal(const char *s, double *out)
{
    const char *end;
    double v;
    if (!s || !decimal_prefix(s, &v, &end) || *end || !(v < 0x1p64))
        return false;
    *out = v;
    return true;
}

bool lms_parse_size(const char *s, uint64_t *out)
{
    const char *end;
    double v;
    if (!s || !decimal_prefix(s, &v, &end))
        return false;
    bool fraction = strchr(s, '.') && strchr(s, '.') < end;
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
    if (*end || (fraction && mult == 1))
        return false;   /* a byte count has no fraction: "1.5" is refused, "1.5G" is not */
    double bytes = v * mult;
    if (!(bytes < 0x1p64))
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
    if (size > UINT64_MAX - (g - 1))
        return UINT64_MAX;   /* no device holds it; the rounding must not wrap to 0 */
    return (size + g - 1) / g * g;
}
