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

/* fork handlers for the engine's locks; the child's state stays a copy. */
void lms_engine_fork_prepare(void);
void lms_engine_fork_parent(void);
void lms_engine_fork_child(void);

#endif
