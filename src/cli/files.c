#include "cli/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eco/model.h"
#include "eco/store.h"

const char *eco_path_split(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

bool eco_file_writable(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { snprintf(why, cap, "%s is a folder, not a file to write", path); return false; }
    char dir[PATH_MAX];
    eco_path_split(path, dir, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) { snprintf(why, cap, "cannot write %s: no folder %s", path, dir); return false; }
    if (access(dir, W_OK | X_OK) != 0) { snprintf(why, cap, "cannot write %s: %s: %s", path, dir, strerror(errno)); return false; }
    if (stat(path, &st) == 0 && access(path, W_OK) != 0) { snprintf(why, cap, "cannot write %s: %s", path, strerror(errno)); return false; }
    return true;
}

/* The file a path names once written: its folder resolved, then its name. */
static bool resolved_path(const char *path, char *out, size_t cap)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = eco_path_split(path, dir, sizeof dir);
    if (!realpath(dir, real)) return false;
    return snprintf(out, cap, "%s/%s", real, base) < (int)cap;
}

bool eco_same_output(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if ((ea && !S_ISREG(sa.st_mode)) || (eb && !S_ISREG(sb.st_mode))) return false; /* /dev/stdout and /dev/stderr */
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return resolved_path(a, ra, sizeof ra) && resolved_path(b, rb, sizeof rb) ? !strcmp(ra, rb) : !strcmp(a, b);
}

static bool write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w, len -= (size_t)w;
    }
    return true;
}

bool eco_write_atomically(const char *cmd, const char *path, const char *data, size_t len)
{
    struct stat st;
    char target[PATH_MAX];
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) { /* a device or pipe is written, never replaced */
        int fd = open(path, O_WRONLY);
        bool ok = fd >= 0 && write_all(fd, data, len);
        int err = errno;
        if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
        if (!ok) fprintf(stderr, "%s: cannot write %s: %s\n", cmd, path, strerror(err));
        return ok;
    }
    /* a symlink's target is replaced, not the link */
    if (!(exists && realpath(path, target))) snprintf(target, sizeof target, "%s", path);
    char dir[PATH_MAX], tmp[PATH_MAX + 64];
    const char *base = eco_path_split(target, dir, sizeof dir);
    if (snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, base) >= (int)sizeof tmp) {
        fprintf(stderr, "%s: cannot write %s: path too long\n", cmd, path);
        return false;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) { fprintf(stderr, "%s: cannot write %s: %s\n", cmd, path, strerror(errno)); return false; }
    mode_t um = umask(0);
    umask(um);
    bool ok = fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~um) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) ok = false, err = errno;
    if (ok && rename(tmp, target) != 0) ok = false, err = errno;
    if (!ok) {
        fprintf(stderr, "%s: cannot write %s: %s\n", cmd, path, strerror(err));
        unlink(tmp);
        return false;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY); /* the rename itself, on disk */
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    return true;
}


static int by_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

eco_err eco_checkpoint_sha256(const char *path, bool quiet, char out[65])
{
    struct stat st;
    if (stat(path, &st) != 0) return eco_fail(ECO_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return eco_sha256_file_hex(path, out);
    DIR *d = opendir(path);
    if (!d) return eco_fail(ECO_EIO, "%s: %s", path, strerror(errno));
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    eco_err e = names ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
    for (struct dirent *ent; !e && (ent = readdir(d));) {
        if (!eco_checkpoint_file_name(ent->d_name)) continue;
        if (n == cap) {
            char **grown = realloc(names, 2 * cap * sizeof *names);
            if (!grown) { e = eco_fail(ECO_ENOMEM, "out of memory"); break; }
            names = grown, cap *= 2;
        }
        if (!(names[n] = strdup(ent->d_name))) e = eco_fail(ECO_ENOMEM, "out of memory");
        else n++;
    }
    closedir(d);
    char *manifest = NULL;
    size_t at = 0, mcap = n * (64 + 2 + 256 + 1) + 1;
    if (!e && !(manifest = malloc(mcap))) e = eco_fail(ECO_ENOMEM, "out of memory");
    if (!e) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n && !e; i++) {
        char file[PATH_MAX + 300], hex[65];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (!quiet) fprintf(stderr, "[hash] %s\n", file);
        if (!(e = eco_sha256_file_hex(file, hex))) at += (size_t)snprintf(manifest + at, mcap - at, "%s  %s\n", hex, names[i]);
    }
    if (!e) eco_sha256_hex(manifest ? manifest : "", at, out);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(manifest);
    return e;
}

void eco_checkpoint_name(const char *weights_path, const char *name_or_path, char *out, size_t cap)
{
    char dir[PATH_MAX];
    if (name_or_path && *name_or_path) {
        const char *first = strchr(name_or_path, '/');
        bool hub_id = !strchr("/.~", name_or_path[0]) && (!first || !strchr(first + 1, '/'));
        if (hub_id) { snprintf(out, cap, "%.255s", name_or_path); return; }
        snprintf(dir, sizeof dir, "%s", name_or_path);
    } else if (!realpath(weights_path, dir)) {
        snprintf(dir, sizeof dir, "%s", weights_path);
    } else {
        struct stat st;
        char parent[PATH_MAX];
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) { eco_path_split(dir, parent, sizeof parent); snprintf(dir, sizeof dir, "%s", parent); }
    }
    for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--) dir[len - 1] = '\0';
    const char *slash = strrchr(dir, '/');
    snprintf(out, cap, "%.255s", slash && slash[1] ? slash + 1 : dir);
}
