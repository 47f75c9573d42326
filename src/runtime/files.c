/* files.c: where placer's own files are (the onnxruntime worker, onnxruntime-node, catalogues,
 * example clusters) and where its cache goes, never relative to the working directory
 * (docs/runtime.md, "Files"): placer must work the same from any folder.
 *
 * An installed placer is PREFIX/bin/placer, so its files are found from the executable
 * (/proc/self/exe): PREFIX/lib/placer/ and PREFIX/share/placer/. A placer run from its build
 * tree (build/placer, the test and bench binaries) has no such folders next to it; its files
 * are those of the source tree it was built from, whose absolute path the Makefile compiles in
 * (PL_SRCDIR). The install layout is tried first, so an installed copy never reads the source
 * tree it was built from. */
#include "placer/runtime.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PL_SRCDIR
#define PL_SRCDIR "." /* builds outside the Makefile (fuzz targets): the working directory */
#endif

/* The install prefix guessed from the executable: the parent of its folder ("" if unknown). */
static const char *exe_prefix(void)
{
    static char prefix[PATH_MAX];
    if (prefix[0]) return prefix;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return "";
    exe[n] = 0;
    for (int up = 0; up < 2; up++) { /* PREFIX/bin/placer -> PREFIX */
        char *slash = strrchr(exe, '/');
        if (!slash) return "";
        *slash = 0;
    }
    snprintf(prefix, sizeof prefix, "%s", exe[0] ? exe : "/");
    return prefix;
}

/* path = a/b when it exists; false (path untouched beyond n) when not. */
static bool exists_at(const char *a, const char *b, char *path, size_t n)
{
    int w = snprintf(path, n, "%s/%s", a, b);
    return w > 0 && (size_t)w < n && access(path, F_OK) == 0;
}

int pl_own_file(const char *installed, const char *in_tree, char *out, size_t n, pl_err *err)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (exists_at(exe_prefix(), installed, a, sizeof a)) return snprintf(out, n, "%s", a), 0;
    if (exists_at(PL_SRCDIR, in_tree, b, sizeof b)) return snprintf(out, n, "%s", b), 0;
    return pl_err_set(
        err,
        "cannot find placer's %s: neither %s (installed) nor %s (the source "
        "tree it was built from) exists (`make deps` in the source tree, or `make install`)",
        in_tree, a, b);
}

int pl_cache_dir(const char *sub, char *out, size_t n, pl_err *err)
{
    const char *env = getenv("PLACER_CACHE"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int w;
    if (env && *env)
        w = snprintf(out, n, "%s/%s", env, sub);
    else if (xdg && *xdg == '/') /* the XDG spec: a relative value is to be ignored */
        w = snprintf(out, n, "%s/placer/%s", xdg, sub);
    else if (home && *home)
        w = snprintf(out, n, "%s/.cache/placer/%s", home, sub);
    else
        return pl_err_set(err, "no cache folder: set PLACER_CACHE (or XDG_CACHE_HOME or HOME)");
    if (w < 0 || (size_t)w >= n) return pl_err_set(err, "the cache folder's path is too long");
    return 0;
}
