/* load.c: pl_graph_load, which picks the reader by content rather than by file name: a JSON
 * task graph is an object, and an ONNX protobuf never starts with '{' (that byte would open
 * a group, a wire type ModelProto does not use). */
#include "placer/graph.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The first byte that is not white space; EOF when there is none. */
static int first_byte(FILE *f)
{
    int ch;
    do
        ch = getc(f);
    while (ch != EOF && isspace(ch));
    return ch;
}

pl_graph *pl_graph_load(const char *path, const pl_load_opts *opts, pl_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        pl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    int ch = first_byte(f), bad = ferror(f) ? errno : 0;
    fclose(f);
    if (bad) {
        pl_err_read(err, path, bad);
        return NULL;
    }
    if (ch == EOF) {
        pl_err_set(err, "%s: empty file", path);
        return NULL;
    }
    if (ch == '{') return pl_taskgraph_load(path, opts, err);
    return pl_onnx_load(path, opts, err);
}
