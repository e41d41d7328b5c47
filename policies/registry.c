/*
 * registry.c — the table of policies (policies.def).
 */
#include <stddef.h>
#include <string.h>

#include "policy.h"

#define LMS_POLICY_ROW(name, sym) extern const lms_policy sym;
#include "policies.def"
#undef LMS_POLICY_ROW

static const lms_policy *const table[] = {
#define LMS_POLICY_ROW(name, sym) &sym,
#include "policies.def"
#undef LMS_POLICY_ROW
};

const lms_policy *lms_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (name && strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

const lms_policy *lms_policy_at(int i)
{
    return i >= 0 && (size_t)i < sizeof table / sizeof table[0] ? table[i] : NULL;
}
