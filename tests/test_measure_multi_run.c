/* test_measure_multi_run.c: issue 32's acceptance for `placer multi --run` (docs/multi.md,
 * "Fidelity of --run"): on one small set, resnet50 beside inception_v3 on this machine's two cores
 * (examples/clusters/local-cpu-percore.json), each model's predicted completion is within 15 %
 * of the median measured over three rounds of ten requests.
 *
 * It times real runs, so it means something only while nothing else runs: tools/run_tests.sh
 * starts every test_measure_* binary alone, after all the other test binaries have ended. It
 * prices with this machine's calibration as a user's first use measures it (docs/calibrate.md,
 * "Calibrated by default"; about 15 s), not with the defaults the other tests use: measured
 * now, in a cache folder of its own, so that no entry measured while other tests ran is used;
 * the inflated models are the suite's (a link to them). Moirai is left out of the algorithms only
 * for its 10 s search per round. The bench (`make bench`, bench/multi_run.py) measures the issue's
 * three sets, gcn_cora's at the edge of 15 %; this set was taken for its margin: beside rnnlm,
 * transformer and nmt_seq2seq measured 5-50 % slower than predicted at some hours
 * (docs/multi.md, "A set not in the bench"), resnet50 and inception_v3 within 2 %. */
#include "testutil.h"

#include "placer/common.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { ROUNDS = 3 };
#define TOLERANCE 0.15

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *const names[] = {"resnet50", "inception_v3"};

/* One attempt: ROUNDS runs of the set; in each, each model's prediction (the answer's row) over
 * its measured completion. The prediction is not asserted to be the same in every run: Talos's
 * refinement is bounded in time (2 s), so on a loaded machine it may stop at another plan (it
 * did once, 0.1 % apart). Prints the median run's figures; true when the median ratio is within
 * TOLERANCE of 1 for every model. */
static bool attempt(int k)
{
    const char *cmd = "multi models/resnet50.onnx models/inception_v3.onnx --cluster "
                      "examples/clusters/local-cpu-percore.json --algos talos,aswm,tsam,heft "
                      "--run --repeat 10 --json 2>/dev/null";
    double pred[2][ROUNDS], meas[2][ROUNDS], ratio[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        json_t *doc = tu_run_json(cmd);
        json_t *ans = json_object_get(doc, "answer");
        json_t *row = json_array_get(json_object_get(doc, "algorithms"),
                                     (size_t)json_integer_value(json_object_get(ans, "index")));
        json_t *done = json_object_get(json_object_get(doc, "measured"), "completion_s");
        for (int m = 0; m < 2; m++) {
            json_t *tm = tu_find(row, "models", "name", names[m]);
            assert_non_null(tm);
            pred[m][r] = tu_num(tm, "completion_s");
            meas[m][r] = tu_num(done, names[m]);
            assert_true(pred[m][r] > 0 && meas[m][r] > 0);
            ratio[m][r] = pred[m][r] / meas[m][r];
        }
        json_decref(doc);
    }
    bool ok = true;
    for (int m = 0; m < 2; m++) {
        qsort(ratio[m], ROUNDS, sizeof ratio[m][0], by_value);
        qsort(pred[m], ROUNDS, sizeof pred[m][0], by_value);
        qsort(meas[m], ROUNDS, sizeof meas[m][0], by_value);
        double err = ratio[m][ROUNDS / 2] - 1;
        printf("  attempt %d, %s: predicted %.2f-%.2f ms, measured %.2f ms (rounds %.2f-%.2f), "
               "error %+.1f %% (the median round's)\n",
               k, names[m], pred[m][0] * 1e3, pred[m][ROUNDS - 1] * 1e3, meas[m][ROUNDS / 2] * 1e3,
               meas[m][0] * 1e3, meas[m][ROUNDS - 1] * 1e3, 100 * err);
        ok = ok && fabs(err) <= TOLERANCE;
    }
    return ok;
}

/* A cache folder of the test's own (its calibration), linked to the suite's inflated models
 * (the calibration's six are 1.2 GB); removed by teardown, also when the test fails. */
static char cache[256];

static int setup(void **state)
{
    (void)state;
    char inflated[4096], link[512];
    const char *suite = getenv("PLACER_CACHE");
    pl_err err = {""};
    snprintf(inflated, sizeof inflated, "%s/inflated", suite ? suite : "build/ort-cache");
    if (pl_mkdir_p(inflated, &err) < 0 || tu_mkdtemp(cache, sizeof cache, "measure") < 0) return -1;
    snprintf(link, sizeof link, "%s/inflated", cache);
    char *abs = realpath(inflated, NULL);
    int rc = abs && symlink(abs, link) == 0 ? 0 : -1;
    free(abs);
    setenv("PLACER_CACHE", cache, 1);
    unsetenv("PLACER_CALIBRATION"); /* the runner turns it off for the other tests */
    unsetenv("PLACER_CALIBRATION_MODELS");
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    return cache[0] ? tu_rmtree(cache) : 0;
}

/* The calibration measured afresh: the next `placer multi --run` measures it again. */
static void recalibrate(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/calibration", cache);
    tu_rmtree(dir);
}

/* Within the stated error in one of two attempts: something else on the machine (a disk
 * flushing a gigabyte, another guest) can slow every round of one attempt by 10-40 %, or the
 * calibration the attempt priced with (once, in CI on the Xeon, right after the other tests:
 * resnet50 predicted 58.3 ms against 49-50 measured in both attempts), and the test is about
 * the prediction, not about the minute. So the second attempt measures the calibration again.
 * An error of the model misses both. */
static void test_within_stated_error(void **state)
{
    (void)state;
    tu_require_ort();
    if (attempt(1)) return;
    recalibrate();
    assert_true(attempt(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_within_stated_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
