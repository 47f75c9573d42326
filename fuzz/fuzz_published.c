/* fuzz_published.c: libFuzzer entry for the placer-gpu-published/1 reader (the published GPU
 * timings the cost model is fitted to). Built by tools/fuzz.sh. Every input must load or be
 * refused with a message; a crash, a sanitizer report or a leak is a bug. */
#include "placer/calib.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_err err = {""};
    pl_published p;
    if (pl_published_load_buffer((const char *)data, size, "fuzz.json", &p, &err) == 0) {
        double s = 0; /* touch every figure the fit reads */
        for (int i = 0; i < p.n; i++)
            s += p.fig[i].s * p.fig[i].batch + p.fig[i].src;
        pl_published_free(&p);
        if (s < 0) __builtin_trap();
    } else if (!err.msg[0]) {
        fprintf(stderr, "refused without a message\n");
        __builtin_trap();
    }
    return 0;
}
