/* files.c: the files the verbs use when none is named (the local CPU cluster, the cache),
 * found from the executable or the user's cache folder, never from the working directory
 * (pl_own_file, pl_cache_dir; docs/runtime.md, "Files"). */
#include "cli.h"
#include "placer/runtime.h"

#include <stdio.h>

const char *cli_local_cluster(const char *verb, char *buf, size_t n)
{
    pl_err err = {""};
    if (pl_own_file("share/placer/clusters/local-cpu.json", "examples/clusters/local-cpu.json", buf,
                    n, &err) == 0)
        return buf;
    cli_error(verb, "no --cluster given, and %s", err.msg);
    return NULL;
}

const char *cli_own_dir(const char *installed, const char *in_tree, char *buf, size_t n)
{
    if (pl_own_file(installed, in_tree, buf, n, NULL) == 0) return buf;
    snprintf(buf, n, "%s", in_tree);
    return buf;
}

const char *cli_cache_dir(const char *verb, char *buf, size_t n)
{
    pl_err err = {""};
    if (pl_cache_dir("inflated", buf, n, &err) == 0) return buf;
    cli_error(verb, "no --cache given, and %s", err.msg);
    return NULL;
}
