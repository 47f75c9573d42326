/* fuzz_platform.c: libFuzzer entry for the placer-platform/1 reader (and, through its embedded
 * "vcpu" cluster, the placer-cluster/1 reader). Built by tools/fuzz.sh. Every input must load
 * or be refused with a message; a crash, a sanitizer report or a leak is a bug. */
#include "placer/serverless.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_err err = {""};
    pl_platform *p = pl_platform_load_buffer((const char *)data, size, "fuzz.json", &err);
    if (p) {
        /* touch the figures every plan reads */
        double mb = pl_platform_round_mb(p, p->mem_min_mb);
        if (mb >= 0) (void)pl_platform_usd(p, mb, 0.0123);
        (void)pl_platform_vcpus(p, p->mem_max_mb);
        pl_platform_free(p);
    } else if (!err.msg[0]) {
        fprintf(stderr, "refused without a message\n");
        __builtin_trap();
    }
    return 0;
}
