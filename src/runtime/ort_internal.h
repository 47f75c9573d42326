/* ort_internal.h: the worker process under the onnxruntime client (proc.c), shared by ort.c. */
#ifndef PLACER_ORT_INTERNAL_H
#define PLACER_ORT_INTERNAL_H

#include "placer/runtime.h"

#include <sys/types.h>

#define ORT_TAIL 768 /* bytes of the worker's stderr kept for error messages */

typedef struct ort_proc {
    pid_t pid;      /* -1 when not running; also its process group */
    int in, out, e; /* its stdin (we write), stdout and stderr (we read) */
    char *buf;      /* stdout bytes not yet returned as lines */
    size_t len, cap;
    char tail[ORT_TAIL]; /* the last bytes of its stderr */
    size_t tail_len;
} ort_proc;

typedef enum { ORT_LINE_OK = 0, ORT_LINE_EOF = -2, ORT_LINE_TIMEOUT = -3 } ort_line_rc;

/* Starts `node script modules` in its own process group, killed if placer dies. */
int ort_proc_spawn(ort_proc *p, const char *node, const char *script, const char *modules,
                   pl_err *err);
/* The same for any command (argv[0] looked up on PATH); `what` names it in errors, and `hint`
 * follows "cannot execute ARGV0" on its stderr when it cannot be executed. */
int ort_proc_spawn_argv(ort_proc *p, char *const argv[], const char *what, const char *hint,
                        pl_err *err);
/* Sends one line (a newline is added). -1 when the worker is gone. */
int ort_proc_send(ort_proc *p, const char *line);
/* The next stdout line (malloc'd, without its newline) within timeout_s, or EOF/TIMEOUT. */
ort_line_rc ort_proc_line(ort_proc *p, double timeout_s, char **line);
/* Kills the process group unless it exits by itself within grace_s, reaps it, closes the
 * pipes, and describes how it ended ("exited with status 3", "was killed by signal 9"). */
void ort_proc_end(ort_proc *p, double grace_s, char *how, size_t n);
/* The stderr tail, flattened to one line, into out. */
const char *ort_proc_tail(const ort_proc *p, char *out, size_t n);

#endif
