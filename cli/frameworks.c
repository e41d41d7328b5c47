/*
 * frameworks.c — what `lmshim run` sets for the common frameworks, whose
 * allocators take device memory in ways the LMS rule cannot help with
 * (README.md "Frameworks", docs/ARCHITECTURE.md "Allocators that
 * suballocate"):
 *   TensorFlow's BFC allocator takes nearly the whole budget in its first
 *     region unless it may grow:        TF_FORCE_GPU_ALLOW_GROWTH=true
 *   JAX preallocates 75% of the device: XLA_PYTHON_CLIENT_PREALLOCATE=false
 *   PyTorch's expandable segments map cuMemCreate memory, which cannot
 *     leave the device:                 PYTORCH_CUDA_ALLOC_CONF without
 *                                       expandable_segments:True
 * A variable the user set to a value is kept as it is (an empty one is
 * set), except that the one key expandable_segments:True is taken out of a
 * PyTorch allocator setting (the rest kept). One line on stderr says what
 * was set.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* What was done, for the one line (text appended, truncated if long). */
typedef struct said {
    char set[512];        /* "VAR=value VAR=value" */
    char removed[256];    /* variables expandable_segments:True was taken from */
} said;

/* Appends " text" (or "text" to an empty buffer) to buf. */
static void append(char *buf, size_t len, const char *text)
{
    size_t n = strlen(buf);
    if (n + 1 < len)
        snprintf(buf + n, len - n, "%s%s", n ? " " : "", text);
}

/* Sets var=value unless the user set var to something; notes it in s. An
 * empty value counts as unset: TensorFlow and JAX then take their default
 * (the whole arena at start), which is what this is here to change. */
static int set_default(const char *var, const char *value, said *s)
{
    const char *now = getenv(var);
    if (now && *now)
        return 0;
    if (setenv(var, value, 1) != 0)
        return -1;
    char item[160];
    snprintf(item, sizeof item, "%s=%s", var, value);
    append(s->set, sizeof s->set, item);
    return 0;
}

/* True when one "key:value" entry of a PyTorch allocator setting turns
 * expandable segments on (spaces around key and value allowed). */
static bool expandable_on(const char *entry, size_t n)
{
    static const char key[] = "expandable_segments";
    while (n && (*entry == ' ' || *entry == '\t'))
        entry++, n--;
    if (n < sizeof key - 1 || strncmp(entry, key, sizeof key - 1) != 0)
        return false;
    entry += sizeof key - 1, n -= sizeof key - 1;
    while (n && (*entry == ' ' || *entry == '\t'))
        entry++, n--;
    if (!n || *entry != ':')
        return false;
    entry++, n--;
    while (n && (*entry == ' ' || *entry == '\t'))
        entry++, n--;
    while (n && (entry[n - 1] == ' ' || entry[n - 1] == '\t'))
        n--;
    return (n == 4 && strncasecmp(entry, "true", 4) == 0) || (n == 1 && *entry == '1');
}

/* Takes expandable_segments:True out of the comma-separated setting in
 * var, keeping every other entry in order; unsets var if nothing is left.
 * Returns 1 when something was taken out, 0 when not, -1 out of memory. */
static int drop_expandable(const char *var)
{
    const char *v = getenv(var);
    if (!v)
        return 0;
    size_t len = strlen(v);
    char *out = malloc(len + 1);
    if (!out)
        return -1;
    size_t o = 0;
    bool dropped = false;
    for (const char *p = v;;) {
        size_t n = strcspn(p, ",");
        if (expandable_on(p, n)) {
            dropped = true;
        } else if (n) {
            if (o)
                out[o++] = ',';
            memcpy(out + o, p, n);
            o += n;
        }
        if (!p[n])
            break;
        p += n + 1;
    }
    out[o] = 0;
    int r = !dropped ? 0 : (o ? setenv(var, out, 1) : unsetenv(var)) == 0 ? 1 : -1;
    free(out);
    return r;
}

int lms_cli_frameworks_env(FILE *say)
{
    said s = {{0}, {0}};
    static const char *const torch_vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < sizeof torch_vars / sizeof torch_vars[0]; i++) {
        int r = drop_expandable(torch_vars[i]);
        if (r < 0)
            return -1;
        if (r > 0)
            append(s.removed, sizeof s.removed, torch_vars[i]);
    }
    /* PyTorch reads either name; set the older one only when neither is set. */
    if (!getenv("PYTORCH_ALLOC_CONF") && !s.removed[0] &&
        set_default("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False", &s) != 0)
        return -1;
    if (set_default("TF_FORCE_GPU_ALLOW_GROWTH", "true", &s) != 0 ||
        set_default("XLA_PYTHON_CLIENT_PREALLOCATE", "false", &s) != 0)
        return -1;
    if (!s.set[0] && !s.removed[0])
        return 0;
    fprintf(say, "lmshim run: for the frameworks' allocators: %s%s%s%s%s%s\n", s.set[0] ? "set " : "", s.set,
            s.set[0] && s.removed[0] ? "; " : "", s.removed[0] ? "took expandable_segments:True out of " : "",
            s.removed, s.removed[0] ? " (that memory cannot leave the device)" : "");
    return 0;
}
