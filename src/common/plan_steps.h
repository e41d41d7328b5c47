/*
 * plan_steps.h — what the planner (plan.c), its timed steps (trials.c)
 * and its timed ways with nothing to act on (blindways.c) share; not for
 * other callers.
 */
#ifndef LMS_PLAN_STEPS_H
#define LMS_PLAN_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

#define TRIAL_MIN 16     /* launches: shorter periods are not steps (timed steps, once_a_step) */

/* Puts the planner in mode m (plan.c): the victim order follows. */
void lms_plan_set_mode(lms_plan *p, int m);

/* The step's length the planner works with, in launches (plan.c): the
 * one the policy confirmed (*confirmed), else its period (0: none). */
uint64_t lms_plan_step_length(const lms_plan *p, bool *confirmed);

/* At each launch: runs the timed steps' stages at their points (trials.c). */
void lms_plan_trial_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq);

/* A trial of reading in place is about to read in place chunks whose
 * prices say that costs `dear` ns more than fetching them (plan.c,
 * trial_dear_ns): stops the trial now where a point would find it behind
 * for that alone (trials.c). */
void lms_plan_trial_dear(lms_plan *p, const lms_plan_ops *ops, void *ctx, double dear);

/* At each launch (`blind`: decided with nothing to act on; `bytes`: the
 * managed bytes its chunks charge, `missing` of them not on the device):
 * times the ways of the chunks that no price decides and chooses one
 * (blindways.c, p->blind.way). */
void lms_plan_blind_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, bool blind, uint64_t bytes,
                           uint64_t missing);

/* A missing chunk of a launch with nothing to act on was decided (plan.c,
 * blind_choice): `against` LMS_BWAY_FETCH when its price fetched it where
 * the way read in place, LMS_BWAY_INPLACE for the other way round, else
 * LMS_BWAY_RULES (blindways.c counts how often prices went against the
 * way, to judge them against it). */
void lms_plan_blind_decided(lms_plan *p, int against);

/* Whether one way is being judged for every chunk (blindways.c): its
 * windows are under way. */
bool lms_plan_blind_judging(const lms_plan_blind *b);

#endif
