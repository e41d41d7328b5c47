/*
 * engine.h — bringing the engine up once per process (engine.c): options,
 * log, the real driver, the exit summary, and fork handling.
 */
#ifndef LMS_ENGINE_H
#define LMS_ENGINE_H

#include <stdbool.h>

/* Sets the engine up. Returns true when lmshim is active: the driver was
 * found and LMS_DISABLE is not set. Called once (again in a fork child). */
bool lms_engine_init(void);

/* Whether lmshim is active (valid after lms_engine_init). */
extern bool lms_active;

/* fork handlers for the engine's locks; the child's state stays a copy.
 * Each acts once per fork, however often it was registered. */
void lms_engine_fork_prepare(void);
void lms_engine_fork_parent(void);
void lms_engine_fork_child(void);

/* Registers the fork handlers (pthread_atfork). Prepare handlers run in
 * the reverse order of registration, so lmshim's must come after the
 * driver's: a fork must take lmshim's locks before the driver's, which
 * lmshim's holders may be waiting for. Called at lmshim's start, and again
 * by lms_engine_driver_started. Takes glibc's fork lock: never call it
 * with a lock of lmshim's held. */
void lms_engine_fork_register(void);

/* The driver's cuInit succeeded (it has registered its own fork handlers
 * by then): lmshim's are registered once more, after them. */
void lms_engine_driver_started(void);

#endif
