/* gpu.c: this machine's NVIDIA GPUs as the driver names them, found without starting
 * onnxruntime (`placer profile --ep cuda`, docs/runtime.md, "Profiling on a GPU"), and the
 * row of placer's GPU table each name is.
 *
 * The driver's /proc files come first: reading them starts no program and needs none
 * installed (a container given the GPU has them without nvidia-smi). nvidia-smi, through the
 * process helper, is the second way; a machine without it is simply one way short, not an
 * error. Both places can be pointed elsewhere ($PLACER_NVIDIA_PROC, $PLACER_NVIDIA_SMI), so
 * that the refusals can be tested the same on every machine, with or without a GPU. */
#include "placer/runtime.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#define SMI_DEADLINE_S 10.0 /* nvidia-smi answers in well under a second on a healthy driver */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    size_t k = strspn(s, " \t");
    memmove(s, s + k, n - k + 1);
}

/* The "Model:" line of one GPU's information file into name; false when it has none. */
static bool read_model(const char *path, char *name, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (!strncmp(line, "Model:", 6)) {
            snprintf(name, n, "%.*s", (int)(n - 1), line + 6);
            trim(name);
            found = *name != 0;
        }
    fclose(f);
    return found;
}

/* DIR/gpus/<bus id>/information, in bus order (the order nvidia-smi lists them in). */
static int from_proc(char (*names)[PL_GPU_NAME], int max, char *why, size_t n_why)
{
    const char *env = getenv("PLACER_NVIDIA_PROC");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gpus", env && *env ? env : "/proc/driver/nvidia");
    struct dirent **ents;
    int n_ents = scandir(dir, &ents, NULL, alphasort), found = 0;
    if (n_ents < 0) return snprintf(why, n_why, "no %s", dir), 0;
    for (int i = 0; i < n_ents; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s/information", dir, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.' && found < max &&
            read_model(path, names[found], sizeof names[found]))
            found++;
        free(ents[i]);
    }
    free(ents);
    if (!found) snprintf(why, n_why, "no GPU in %s", dir);
    return found;
}

/* The lines of `nvidia-smi --query-gpu=name --format=csv,noheader`, one GPU each. */
static int from_smi(char (*names)[PL_GPU_NAME], int max, char *why, size_t n_why)
{
    const char *env = getenv("PLACER_NVIDIA_SMI");
    char smi[4096];
    snprintf(smi, sizeof smi, "%s", env && *env ? env : "nvidia-smi");
    char *argv[] = {smi, "--query-gpu=name", "--format=csv,noheader", NULL};
    pl_proc p;
    pl_err err = {""};
    if (pl_proc_start(&p, argv, NULL, "nvidia-smi", "\n", &err) < 0)
        return snprintf(why, n_why, "%s", err.msg), 0;
    int found = 0;
    char *line = NULL, how[160], tail[PL_PROC_TAIL];
    pl_proc_rc rc;
    while ((rc = pl_proc_line(&p, SMI_DEADLINE_S, &line)) == PL_PROC_LINE) {
        if (found < max) snprintf(names[found], sizeof names[found], "%s", line);
        if (found < max) trim(names[found]), found += *names[found] != 0;
        free(line);
    }
    bool late = rc == PL_PROC_TIMEOUT; /* a hung driver: no second wait for the exit */
    int status = pl_proc_end(&p, late, late ? 0.2 : SMI_DEADLINE_S, how, sizeof how);
    pl_proc_tail(&p, tail, sizeof tail);
    bool ok = rc == PL_PROC_EOF && status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status);
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(why, n_why, "no %.300s", smi); /* the exec failed: not installed */
    else if (!ok)
        snprintf(why, n_why, "%.300s %s%s%.300s", smi,
                 late ? "did not answer in time and was killed" : how, *tail ? ": " : "", tail);
    else if (!found)
        snprintf(why, n_why, "%.300s lists none", smi);
    return ok ? found : 0;
}

int pl_nvidia_gpus(char (*names)[PL_GPU_NAME], int max, pl_err *err)
{
    char proc_why[4200] = "", smi_why[1200] = "";
    int n = from_proc(names, max, proc_why, sizeof proc_why);
    if (!n) n = from_smi(names, max, smi_why, sizeof smi_why);
    if (!n) pl_err_set(err, "%s, %s", proc_why, smi_why);
    return n;
}

/* The driver's name without the vendor's words around the model ("NVIDIA GeForce RTX 2080
 * Ti" -> "RTX 2080 Ti"), which placer's table leaves out. */
static void strip_vendor(const char *name, char *out, size_t n)
{
    static const char *const words[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "};
    for (bool again = true; again;) {
        again = false;
        for (size_t k = 0; k < sizeof words / sizeof *words; k++)
            if (!strncasecmp(name, words[k], strlen(words[k])))
                name += strlen(words[k]), again = true;
    }
    snprintf(out, n, "%s", name);
    trim(out);
}

const pl_gpu_spec *pl_gpu_spec_of_driver_name(const char *name, char *stripped, size_t n)
{
    strip_vendor(name, stripped, n);
    const pl_gpu_spec *s = pl_gpu_spec_find(stripped); /* it ignores ' ', '-' and '_' */
    return s && s->kind == PL_DEV_GPU ? s : NULL;
}
