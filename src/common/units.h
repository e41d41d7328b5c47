/*
 * units.h — byte sizes as people write them ("4G", "512M", "1.5G"), shared
 * by the engine and the simulator (units.c).
 */
#ifndef LMS_UNITS_H
#define LMS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a size: decimal digits, optionally with a fraction, then an
 * optional K/M/G/T suffix (powers of 1024), optionally followed by "iB" or
 * "B"; plain numbers are bytes. A fraction needs a suffix ("1.5G"; the
 * bytes are rounded down), "1.5" alone is refused. False on anything else:
 * signs, white space, hex, exponents, overflow, an empty string. */
bool lms_parse_size(const char *text, uint64_t *bytes);

/* Parses "digits[.digits]" and nothing else (no sign, space, exponent, hex,
 * inf or nan), the form of fractions in options. */
bool lms_parse_decimal(const char *text, double *value);

/* Writes bytes as "1.50G", "345M", "512" into buf (at least 16 bytes). */
void lms_format_size(char *buf, size_t len, uint64_t bytes);

/* Bytes a device allocation of `size` occupies: 512 B granules below 2 MiB,
 * 2 MiB pages from there on (what CUDA drivers round to). One rule for the
 * live engine's accounting and the offline replay (also declared in
 * engine/account.h). */
uint64_t lms_charge_of(uint64_t size);

#endif
