/* test_profile_ep.c: `placer profile --ep cuda` (docs/runtime.md, "Profiling on a GPU").
 *
 * This machine has no GPU, so what is tested everywhere is every refusal, each on a made-up
 * machine: the driver's /proc tree ($PLACER_NVIDIA_PROC) and nvidia-smi ($PLACER_NVIDIA_SMI)
 * faked, so a test gives the same answer with or without a GPU; and onnxruntime itself faked
 * (a worker script, $PLACER_ORT_WORKER) to check that nodes run on the CPU never make a GPU
 * profile. The one test of a real GPU profile runs only where a GPU and onnxruntime-node's
 * CUDA libraries are, and says why it is skipped elsewhere. */
#include "testutil.h"

#include "placer/runtime.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RNNLM "models/rnnlm.onnx"
#define CUDA_LIB                                                                                   \
    "build/npm/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/"                               \
    "libonnxruntime_providers_cuda.so"

static char dir[64], out[128];

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* A driver /proc tree under dir/proc naming one GPU `model` (NULL: no GPU, an empty tree), and
 * no nvidia-smi: the probe sees exactly this machine. */
static void fake_machine(const char *model)
{
    char path[256], text[256];
    snprintf(path, sizeof path, "%s/proc/gpus/0000:00:1e.0", dir);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s/proc && mkdir -p %s", dir, path);
    assert_int_equal(system(cmd), 0);
    if (model) {
        snprintf(text, sizeof text, "Model: \t\t %s\nIRQ:   \t\t 48\nBus Type: \t PCIe\n", model);
        strcat(path, "/information");
        write_file(path, text, 0644);
    } else {
        snprintf(cmd, sizeof cmd, "rm -rf %s/proc/gpus/*", dir);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(path, sizeof path, "%s/proc", dir);
    setenv("PLACER_NVIDIA_PROC", path, 1);
    snprintf(path, sizeof path, "%s/no-nvidia-smi", dir);
    setenv("PLACER_NVIDIA_SMI", path, 1);
}

/* `placer ARGS` must exit 2 saying `needle` (and `also`, when not NULL), and leave no -o file. */
static void expect_refusal(const char *args, const char *needle, const char *also)
{
    char *said;
    unlink(out);
    int rc = tu_run(args, &said);
    if (rc != 2) fail_msg("placer %s: exit %d, expected 2:\n%s", args, rc, said);
    assert_contains(said, needle);
    if (also) assert_contains(said, also);
    if (access(out, F_OK) == 0) fail_msg("placer %s left %s behind", args, out);
    free(said);
}

static void test_ep_value(void **state)
{
    (void)state;
    expect_refusal("profile " RNNLM " --ep tpu", "placer profile: --ep wants cpu or cuda", NULL);
    expect_refusal("profile " RNNLM " --ep", "placer profile: --ep wants cpu or cuda", NULL);
}

static void test_no_gpu(void **state)
{
    (void)state;
    fake_machine(NULL);
    char args[256], msg[400];
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda -o %s", out);
    snprintf(msg, sizeof msg,
             "placer profile: --ep cuda: no NVIDIA GPU on this machine (no GPU in %s/proc/gpus, "
             "no %s/no-nvidia-smi)",
             dir, dir);
    expect_refusal(args, msg, NULL);
    /* no /proc tree at all, as on a machine without the driver */
    char proc[128];
    snprintf(proc, sizeof proc, "%s/nothing", dir);
    setenv("PLACER_NVIDIA_PROC", proc, 1);
    snprintf(msg, sizeof msg, "no NVIDIA GPU on this machine (no %s/nothing/gpus, no %s/", dir,
             dir);
    expect_refusal(args, msg, NULL);
}

/* Where onnxruntime-node has its CUDA libraries the sessions below would start: this test is
 * of the machine without them. */
static bool cuda_libs_absent(void)
{
    if (access(CUDA_LIB, F_OK) != 0) return true;
    fprintf(stderr,
            "skipped: onnxruntime-node's CUDA provider is installed (%s): the refusal "
            "of a machine without it cannot be seen here\n",
            CUDA_LIB);
    return false;
}

/* A V100 the probe finds, and onnxruntime-node without its CUDA libraries: the model is
 * resolved, and onnxruntime's failure to make a CUDA session is the refusal. */
static void test_fake_v100(void **state)
{
    (void)state;
    tu_require_ort();
    if (!cuda_libs_absent()) skip();
    fake_machine("Tesla V100-SXM2-16GB");
    char args[256];
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda -o %s", out);
    expect_refusal(args,
                   "placer profile: --ep cuda (Tesla V100-SXM2-16GB, device model "
                   "V100-SXM2-16GB): onnxruntime worker: profile: onnxruntime could not create a "
                   "session with its CUDA execution provider",
                   "--onnxruntime-node-install=cuda12");
    char *said; /* onnxruntime's own log line comes along, without its colours */
    assert_int_equal(tu_run(args, &said), 2);
    assert_contains(said,
                    "no libonnxruntime_providers_shared.so, libonnxruntime_providers_cuda.so");
    if (strchr(said, '\033')) fail_msg("a terminal escape in the message: %s", said);
    free(said);
}

/* nvidia-smi's name when the /proc tree has none, through the process helper. */
static void test_fake_smi(void **state)
{
    (void)state;
    tu_require_ort();
    if (!cuda_libs_absent()) skip();
    fake_machine(NULL);
    char smi[128], args[256];
    snprintf(smi, sizeof smi, "%s/nvidia-smi", dir);
    write_file(smi, "#!/bin/sh\necho 'NVIDIA GeForce RTX 2080 Ti'\n", 0755);
    setenv("PLACER_NVIDIA_SMI", smi, 1);
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda -o %s", out);
    expect_refusal(args, "--ep cuda (NVIDIA GeForce RTX 2080 Ti, device model RTX-2080-Ti)",
                   "could not create a session with its CUDA execution provider");
    /* an nvidia-smi that fails says so */
    write_file(smi, "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n", 0755);
    expect_refusal(args, "no NVIDIA GPU on this machine (no GPU in", "exited with status 9");
}

static void test_unknown_gpu(void **state)
{
    (void)state;
    fake_machine("NVIDIA GeForce GTX 1070");
    char args[256];
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda -o %s", out);
    expect_refusal(args,
                   "placer profile: --ep cuda: the GPU 'NVIDIA GeForce GTX 1070' is not in "
                   "placer's GPU table (did you mean \"GTX-1080\"",
                   "--device-model NAME says which row it is");
    /* --device-model names the row; one that is not a GPU row is refused as well */
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda --device-model T4x -o %s", out);
    expect_refusal(args, "--device-model: 'T4x' is not a GPU of placer's table", "\"T4\"");
    if (!cuda_libs_absent()) return;
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda --device-model Tesla-T4 -o %s", out);
    expect_refusal(args, "--ep cuda (NVIDIA GeForce GTX 1070, device model T4)",
                   "could not create a session");
}

/* Which GPU: two of different models need --device-model; a --cluster must hold the GPU. */
static void test_which_gpu(void **state)
{
    (void)state;
    fake_machine("Tesla V100-SXM2-16GB");
    char path[256], args[256];
    snprintf(path, sizeof path, "%s/proc/gpus/0000:00:1f.0", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    strcat(path, "/information");
    write_file(path, "Model: \t\t Tesla T4\n", 0644);
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda -o %s", out);
    expect_refusal(args,
                   "placer profile: --ep cuda: this machine has GPUs of different models ('Tesla "
                   "V100-SXM2-16GB', 'Tesla T4') and onnxruntime profiles CUDA device 0",
                   "--device-model NAME says which it is");
    fake_machine("Tesla V100-SXM2-16GB");
    snprintf(args, sizeof args,
             "profile " RNNLM " --ep cuda --cluster examples/clusters/local-cpu-percore.json -o %s",
             out);
    expect_refusal(
        args,
        "placer profile: --cluster examples/clusters/local-cpu-percore.json: no device of "
        "model V100-SXM2-16GB, the GPU profiled ('Tesla V100-SXM2-16GB')",
        NULL);
}

/* A fake onnxruntime (PLACER_ORT_WORKER) whose profile says each node's provider: `nodes` is
 * the JSON list it answers with. It refuses a profile request that does not ask for CUDA. */
static void fake_worker(const char *nodes)
{
    char js[128], text[2048];
    snprintf(js, sizeof js, "%s/worker.js", dir);
    snprintf(
        text, sizeof text,
        "const say = (o) => console.log(JSON.stringify(o));\n"
        "say({ok: true, ready: true});\n"
        "require('readline').createInterface({input: process.stdin}).on('line', (l) => {\n"
        "  const m = JSON.parse(l);\n"
        "  if (m.op === 'quit') { say({ok: true, id: m.id}); process.exit(0); }\n"
        "  if (m.ep !== 'cuda') return say({ok: false, id: m.id, error: 'asked for ' + m.ep});\n"
        "  say({ok: true, id: m.id, runs: 1, run_s: [0.01], nodes: %s});\n"
        "});\n",
        nodes);
    write_file(js, text, 0644);
    setenv("PLACER_ORT_WORKER", js, 1);
}

static const char *node(const char *name, int idx, const char *type, const char *provider)
{
    static char buf[4][200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 200,
             "{name: '%s', node_index: %d, op_type: '%s', nested: false, mean_s: 0.002, "
             "count: 1, provider: '%s'}",
             name, idx, type, provider);
    return b;
}

/* A V100 and the fake onnxruntime, whose profile of rnnlm has its decoder's MatMul and Add on
 * the providers named; args gets the command. */
static void fake_profile(const char *matmul_ep, const char *add_ep, char *args, size_t n)
{
    fake_machine("Tesla V100-SXM2-16GB");
    char nodes[600];
    snprintf(nodes, sizeof nodes, "[%s, %s]", node("/decoder/MatMul", 47, "MatMul", matmul_ep),
             node("/decoder/Add", 48, "Add", add_ep));
    fake_worker(nodes);
    unlink(out);
    snprintf(args, n, "profile " RNNLM " --ep cuda -o %s --json", out);
}

/* onnxruntime ran every node on the CPU (a silent fallback): no GPU profile. */
static void test_all_on_cpu(void **state)
{
    (void)state;
    char args[256];
    fake_profile("CPUExecutionProvider", "CPUExecutionProvider", args, sizeof args);
    expect_refusal(args,
                   "onnxruntime ran none of the 2 timed nodes on the GPU (2 on "
                   "CPUExecutionProvider): it fell back to the CPU",
                   NULL);
    unsetenv("PLACER_ORT_WORKER");
}

/* Some nodes on the GPU, one on the CPU: the profile has the GPU's only, for the V100. */
static void test_partly_on_cpu(void **state)
{
    (void)state;
    char args[256];
    fake_profile("CUDAExecutionProvider", "CPUExecutionProvider", args, sizeof args);
    json_t *r = tu_run_json(args);
    assert_string_equal(json_string_value(json_object_get(r, "device_model")), "V100-SXM2-16GB");
    assert_int_equal(json_integer_value(json_object_get(r, "timed")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "off_gpu")), 1);
    json_decref(r);
    json_error_t je;
    json_t *p = json_load_file(out, 0, &je);
    if (!p) fail_msg("%s: %s", out, je.text);
    assert_string_equal(json_string_value(json_object_get(p, "device_model")), "V100-SXM2-16GB");
    char *text = json_dumps(p, 0);
    assert_contains(text, "/decoder/MatMul");
    if (strstr(text, "/decoder/Add"))
        fail_msg("the node run on the CPU is in the profile: %s", text);
    free(text);
    json_decref(p);
    unsetenv("PLACER_ORT_WORKER");
}

/* The real thing, only where there is a GPU and onnxruntime-node's CUDA build. */
static void test_real_gpu(void **state)
{
    (void)state;
    unsetenv("PLACER_NVIDIA_PROC"), unsetenv("PLACER_NVIDIA_SMI");
    char names[4][PL_GPU_NAME];
    pl_err err = {""};
    if (pl_nvidia_gpus(names, 4, &err) == 0) {
        fprintf(stderr, "skipped: %s (a profile on a GPU needs an NVIDIA GPU)\n", err.msg);
        skip();
    }
    if (cuda_libs_absent()) {
        fprintf(stderr,
                "skipped: GPU '%s' found, but onnxruntime-node's CUDA provider is not "
                "installed (%s; docs/runtime.md, \"Profiling on a GPU\")\n",
                names[0], CUDA_LIB);
        skip();
    }
    char args[256];
    snprintf(args, sizeof args, "profile " RNNLM " --ep cuda --repeat 3 -o %s --json", out);
    json_t *r = tu_run_json(args);
    const char *model = json_string_value(json_object_get(r, "device_model"));
    const pl_gpu_spec *s = pl_gpu_spec_find(model);
    assert_true(s && s->kind == PL_DEV_GPU);
    assert_true(json_integer_value(json_object_get(r, "timed")) > 0);
    json_decref(r);
}

static int setup(void **state)
{
    (void)state;
    if (tu_mkdtemp(dir, sizeof dir, "placer-test-profile-ep") < 0) return -1;
    snprintf(out, sizeof out, "%s/p.json", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(dir);
}

int main(void)
{
    setenv("PLACER_CALIBRATION", "off", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ep_value),    cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_fake_v100),   cmocka_unit_test(test_fake_smi),
        cmocka_unit_test(test_unknown_gpu), cmocka_unit_test(test_which_gpu),
        cmocka_unit_test(test_all_on_cpu),  cmocka_unit_test(test_partly_on_cpu),
        cmocka_unit_test(test_real_gpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
