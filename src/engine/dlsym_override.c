/*
 * dlsym_override.c — the exported dlsym of an interposer (see the header).
 *
 * glibc's dlsym finds "the caller" from its return address, so a wrapper
 * that calls it would make RTLD_NEXT relative to the wrapper. On x86-64 the
 * exported entry is therefore a small trampoline: it asks route() what to
 * do, then either returns route()'s answer or jumps (not calls) to the real
 * dlsym with the original arguments and return address. Elsewhere a plain C
 * wrapper is used, with the RTLD_NEXT caveat.
 */
#include "dlsym_override.h"

#include <dlfcn.h>
#include <stddef.h>

#include "elf_symbol.h"

/* What the trampoline does with one lookup. */
typedef struct route_result {
    void *value;     /* the answer, when jump is NULL */
    void *jump;      /* else: the real dlsym to jump to */
} route_result;

/* Decides one lookup made through the dlsym of `version`. Hidden: only the
 * trampolines call it. */
__attribute__((visibility("hidden"))) route_result lms_dlsym_route(void *handle, const char *name,
                                                                   const char *version);
LMS_UNINSTRUMENTED route_result lms_dlsym_route(void *handle, const char *name,
                                                 const char *version)
{
    static lms_dlsym_fn real_234, real_225;
    lms_dlsym_fn *slot = version[8] == '3' ? &real_234 : &real_225;   /* "GLIBC_2.34" */
    lms_dlsym_fn real = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!real) {
        real = lms_real_dlsym(version);
        if (!real)
            return (route_result){NULL, NULL};   /* cannot happen with glibc; never jump to NULL */
        __atomic_store_n(slot, real, __ATOMIC_RELEASE);
    }
    void *answer;
    if (handle != RTLD_NEXT && lms_dlsym_filter(handle, name, real, &answer))
        return (route_result){answer, NULL};
    return (route_result){NULL, (void *)real};
}

__attribute__((used)) static const char v234[] = "GLIBC_2.34";
__attribute__((used)) static const char v225[] = "GLIBC_2.2.5";

#if defined(__x86_64__)
/* route_result comes back in rax (value) and rdx (jump). The stack is kept
 * 16-byte aligned at the call: entry rsp is 8 mod 16, three pushes make it 0. */
#define TRAMPOLINE(sym, ver)                                                        \
    __asm__(".text\n"                                                               \
            ".globl " #sym "\n"                                                     \
            ".type " #sym ", @function\n" #sym ":\n"                                \
            "  push %rdi\n"                                                         \
            "  push %rsi\n"                                                         \
            "  push %rbx\n"                                                         \
            "  lea " #ver "(%rip), %rdx\n"                                          \
            "  call lms_dlsym_route\n"                                              \
            "  pop %rbx\n"                                                          \
            "  pop %rsi\n"                                                          \
            "  pop %rdi\n"                                                          \
            "  test %rdx, %rdx\n"                                                   \
            "  jz 1f\n"                                                             \
            "  jmp *%rdx\n"                                                         \
            "1: ret\n"                                                              \
            ".size " #sym ", .-" #sym "\n");
TRAMPOLINE(lms_dlsym_234, v234)
TRAMPOLINE(lms_dlsym_225, v225)
#else
void *lms_dlsym_234(void *handle, const char *name);
void *lms_dlsym_225(void *handle, const char *name);
void *lms_dlsym_234(void *handle, const char *name)
{
    route_result r = lms_dlsym_route(handle, name, v234);
    return r.jump ? ((lms_dlsym_fn)r.jump)(handle, name) : r.value;
}
void *lms_dlsym_225(void *handle, const char *name)
{
    route_result r = lms_dlsym_route(handle, name, v225);
    return r.jump ? ((lms_dlsym_fn)r.jump)(handle, name) : r.value;
}
#endif

__asm__(".symver lms_dlsym_234, dlsym@@GLIBC_2.34");
__asm__(".symver lms_dlsym_225, dlsym@GLIBC_2.2.5");
