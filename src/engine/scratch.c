/*
 * scratch.c — a thread's scratch memory (see scratch.h): one block per
 * thread and per use, grown on demand and kept. One pthread key serves every
 * use; its value is the thread's table of blocks, so the destructor frees
 * them all at thread exit. The table itself is thread-local (initial-exec:
 * no allocation and no lock on the way to it).
 */
#include "scratch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* One use's block in a thread. */
typedef struct block {
    void *p;                  /* malloc'd, owned by this table; NULL: none yet */
    size_t size;              /* bytes of p */
} block;

static __thread block own[LMS_SCRATCH_USES] __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static bool have_key;         /* key was made (the program may have taken every key) */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Thread exit: t is the exiting thread's table; every block goes (a later
 * call in another destructor makes a new one, and sets the key again). */
static void free_blocks(void *t)
{
    block *b = t;
    for (int i = 0; i < LMS_SCRATCH_USES; i++) {
        free(b[i].p);
        b[i] = (block){0};
    }
}
static void make_key(void) { have_key = pthread_key_create(&key, free_blocks) == 0; }

bool lms_scratch_no_key(void)
{
    pthread_once(&key_once, make_key);
    return !have_key;
}

void *lms_scratch_get(lms_scratch_use use, size_t bytes, size_t *size)
{
    block *b = &own[use];
    if (!b->p || b->size < bytes) {
        pthread_once(&key_once, make_key);
        if (!have_key)
            return NULL;
        size_t want = b->p && b->size * 2 > bytes ? b->size * 2 : bytes;
        void *p = malloc(want);
        if (!p)
            return NULL;
        /* The key's value must be set (again after an earlier thread-exit
         * pass) for the destructor to run; the table is never NULL. */
        if (pthread_setspecific(key, own) != 0) {
            free(p);
            return NULL;
        }
        free(b->p);
        *b = (block){.p = p, .size = want};
    }
    if (size)
        *size = b->size;
    return b->p;
}
