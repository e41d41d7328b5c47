/*
 * elf_symbol.h — look up a versioned symbol of a loaded library from its ELF
 * tables, calling nothing in libc or the dynamic linker (elf_symbol.c).
 */
#ifndef LMS_ELF_SYMBOL_H
#define LMS_ELF_SYMBOL_H

#include <stdbool.h>
#include <stdint.h>

/* Code that may run inside a sanitizer runtime's start-up, before its
 * shadow memory exists, must not be instrumented. */
#define LMS_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

/* The address of `name` with version `version` (NULL: any version) in the
 * loaded object whose file name is `library` (e.g. "libc.so.6"), or NULL.
 * Safe to call at any time, from any thread, before any initialisation. */
LMS_UNINSTRUMENTED void *lms_elf_symbol(const char *library, const char *name, const char *version);

typedef void *(*lms_dlsym_fn)(void *handle, const char *name);

/* glibc's dlsym of a version ("GLIBC_2.34" or "GLIBC_2.2.5"), found in the
 * ELF tables of libc.so.6 (glibc >= 2.34) or libdl.so.2 (older; any
 * version there), else through dlvsym(RTLD_NEXT); NULL only if none. */
LMS_UNINSTRUMENTED lms_dlsym_fn lms_real_dlsym(const char *version);

#endif
