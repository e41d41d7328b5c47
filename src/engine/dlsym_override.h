/*
 * dlsym_override.h — an exported dlsym (both glibc versions) that lets one
 * filter function answer lookups, and otherwise behaves exactly like glibc's:
 * a lookup it does not answer jumps to the real dlsym with the caller's own
 * return address, so RTLD_NEXT still means "next after the caller".
 */
#ifndef LMS_DLSYM_OVERRIDE_H
#define LMS_DLSYM_OVERRIDE_H

#include <stdbool.h>

#include "elf_symbol.h"   /* lms_dlsym_fn, lms_real_dlsym */

/* Provided by the library that links dlsym_override.c. Called for every
 * dlsym lookup except RTLD_NEXT ones; `real` is glibc's dlsym of the same
 * version (never NULL). Returns true and sets *answer to answer the lookup
 * itself; false lets glibc answer. Must not call dlsym through the PLT. */
bool lms_dlsym_filter(void *handle, const char *name, lms_dlsym_fn real, void **answer);

#endif
