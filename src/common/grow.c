/*
 * grow.c — room in a growable array (see grow.h).
 */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

bool lms_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return false;
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem)
        return false;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return false;
    *arr = n;
    *cap = ncap;
    return true;
}
