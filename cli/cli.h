/* cli.h: what the verbs share. Each verb is one file, cli/VERB.c, with one entry point. Exit
 * status: 0 success, 2 bad input or usage (the message says which file and where). */
#ifndef PLACER_CLI_H
#define PLACER_CLI_H

#include "placer/graph.h"

#define CLI_EXIT_BAD_INPUT 2

int cli_inspect(int argc, char **argv);

/* Prints "placer VERB: MESSAGE" to stderr and returns CLI_EXIT_BAD_INPUT. */
int cli_fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the graph's stored warnings to stderr ("warning: ..."), and how many were not shown. */
void cli_print_warnings(const pl_graph *g);
/* True when argv[*i] is `name` with a value (`--name V` or `--name=V`); advances *i. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

#endif
