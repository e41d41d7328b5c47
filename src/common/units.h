/*
 * units.h — byte sizes as people write them ("4G", "512M", "1.5G"), shared
 * by the engine and the simulator (units.c).
 */
#ifndef LMS_UNITS_H
#define LMS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a size: a non-negative number with an optional K/M/G/T suffix
 * (powers of 1024), optionally followed by "iB" or "B"; plain numbers are
 * bytes. False on anything else, on overflow, or on an empty string. */
bool lms_parse_size(const char *text, uint64_t *bytes);

/* Writes bytes as "1.50G", "345M", "512" into buf (at least 16 bytes). */
void lms_format_size(char *buf, size_t len, uint64_t bytes);

#endif
