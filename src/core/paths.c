#include "eco/paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool try_path(char *buf, size_t cap, const char *a, const char *b, const char *c)
{
    int n = snprintf(buf, cap, "%s%s%s", a, b, c);
    return n > 0 && (size_t)n < cap && access(buf, R_OK) == 0;
}

bool eco_find_data_file(const char *rel, const char *env, char *buf, size_t cap)
{
    const char *given = env ? getenv(env) : NULL;
    if (given && *given) {
        snprintf(buf, cap, "%s", given);
        return true;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        const char *share_rel = strncmp(rel, "data/", 5) ? rel : rel + 5;
        if (try_path(buf, cap, exe, "/../", rel) || try_path(buf, cap, exe, "/../../", rel) ||
            try_path(buf, cap, exe, "/", rel) || try_path(buf, cap, exe, "/../share/ecocompute/", share_rel))
            return true;
    }
    const char *src = getenv("ECO_SOURCE_DIR");
    if (src && *src && try_path(buf, cap, src, "/", rel)) return true;
    return try_path(buf, cap, "", "", rel);
}
