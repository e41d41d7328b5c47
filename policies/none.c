/*
 * none.c — placement only: managed chunks stay where the LMS rule put them
 * (on the host) and the GPU reads them over the link. Nothing is fetched,
 * so nothing is evicted.
 */
#include <stddef.h>

#include "policy.h"

const lms_policy lms_policy_none = {
    .name = "none",
    .doc = "placement only: the GPU reads managed chunks over the link",
    .on_demand = false,
};
