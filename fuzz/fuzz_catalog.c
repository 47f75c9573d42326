/* fuzz_catalog.c: libFuzzer entry for the placer-catalog/1 reader (and, through embedded
 * "cluster" objects, the placer-cluster/1 reader). Built by tools/fuzz.sh. Every input must
 * load or be refused with a message; a crash, a sanitizer report or a leak is a bug. */
#include "placer/catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_err err = {""};
    pl_catalog *c = pl_catalog_load_buffer((const char *)data, size, "fuzz.json", &err);
    if (c) {
        double *x = malloc(((size_t)c->n + 1) * PL_N_FEATURES * sizeof *x);
        pl_catalog_features(c, x); /* touch every configuration's features */
        free(x);
        pl_catalog_free(c);
    } else if (!err.msg[0]) {
        fprintf(stderr, "refused without a message\n");
        __builtin_trap();
    }
    return 0;
}
