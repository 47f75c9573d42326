/* fuzz_readers.c: libFuzzer entry for the ONNX and task-graph readers. Built twice by
 * tools/fuzz.sh, with READER=onnx or READER=json. Every input must load or be refused with a
 * message: a crash, a sanitizer report or a leak is a bug, and the input becomes a test in
 * tests/data/crashers/. */
#include "placer/graph.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_err err = {""};
#if READER_JSON
    pl_graph *g = pl_taskgraph_load_buffer((const char *)data, size, "fuzz.json", NULL, &err);
#else
    pl_graph *g = pl_onnx_load_buffer(data, size, "fuzz.onnx", NULL, &err);
#endif
    if (g) {
        pl_graph_summary s;
        pl_graph_summarize(g, &s); /* touch every derived field */
        pl_graph_summary_free(&s);
        pl_graph_free(g);
    } else if (!err.msg[0]) {
        fprintf(stderr, "refused without a message\n");
        __builtin_trap();
    }
    return 0;
}
