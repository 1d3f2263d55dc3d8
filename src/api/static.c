/* Static files of the web site. The request path is already normalised (no "..", no encoded '/'); the
 * file is resolved with realpath() and must still lie under the root, so a symlink cannot escape it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"

const char *api_content_type(const char *path)
{
    static const struct { const char *ext, *type; } types[] = {
        {"html", "text/html; charset=utf-8"},   {"htm", "text/html; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},     {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"}, {"json", "application/json"},
        {"wasm", "application/wasm"},           {"svg", "image/svg+xml"},
        {"png", "image/png"},                   {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},                 {"gif", "image/gif"},
        {"webp", "image/webp"},                 {"ico", "image/x-icon"},
        {"txt", "text/plain; charset=utf-8"},   {"md", "text/markdown; charset=utf-8"},
        {"csv", "text/csv; charset=utf-8"},     {"map", "application/json"},
        {"woff2", "font/woff2"},                {"woff", "font/woff"},
        {"webmanifest", "application/manifest+json"}, {"xml", "application/xml"},
        {"pdf", "application/pdf"},             {"license", "text/plain; charset=utf-8"},
    };
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    if (dot && dot[1])
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (!strcasecmp(dot + 1, types[i].ext)) return types[i].type;
    return "application/octet-stream";
}

/* realpath(candidate) must be root itself or below it. */
static int under_root(const char *root, const char *resolved)
{
    size_t n = strlen(root);
    if (strncmp(resolved, root, n)) return 0;
    return resolved[n] == '\0' || resolved[n] == '/' || (n == 1 && root[0] == '/');
}

static unsigned open_resolved(const char *root, const char *candidate, api_static_file *f, int *is_dir)
{
    char resolved[PATH_MAX];
    *is_dir = 0;
    if (!realpath(candidate, resolved)) return 404;
    if (!under_root(root, resolved)) return 404;
    int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 404;
    struct stat st;
    if (fstat(fd, &st)) { close(fd); return 404; }
    if (S_ISDIR(st.st_mode)) { close(fd); *is_dir = 1; return 404; }
    if (!S_ISREG(st.st_mode)) { close(fd); return 404; }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    f->content_type = api_content_type(resolved);
    snprintf(f->etag, sizeof f->etag, "\"%llx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec);
    return 0;
}

unsigned api_static_open(const char *root, const char *norm_path, api_static_file *f)
{
    f->fd = -1;
    char candidate[PATH_MAX];
    /* dotfiles (.git, .env) are never served */
    if (strstr(norm_path, "/.")) return 404;
    int n = snprintf(candidate, sizeof candidate, "%s%s", root, norm_path);
    if (n < 0 || (size_t)n >= sizeof candidate) return 404;
    int is_dir;
    unsigned st = open_resolved(root, candidate, f, &is_dir);
    if (st && is_dir) {
        n = snprintf(candidate, sizeof candidate, "%s%s%sindex.html", root, norm_path,
                     norm_path[strlen(norm_path) - 1] == '/' ? "" : "/");
        if (n < 0 || (size_t)n >= sizeof candidate) return 404;
        st = open_resolved(root, candidate, f, &is_dir);
    }
    return st;
}
