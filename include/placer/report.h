/* report.h: what every verb prints: aligned text tables by default; JSON is built by each
 * verb with jansson and written by pl_json_print().
 *
 * Semantics, exactly: pl_table_print prints the header and every row added so far; each column
 * is as wide as its widest cell (a cell is cut in the middle past 60 characters), left-aligned
 * unless marked '>'. Ownership: pl_table_new's table is the caller's, freed by pl_table_free
 * (NULL is fine); cells are copied when added. pl_json_print takes the value it prints (it
 * drops the caller's reference). Nothing here fails: allocation failure ends placer
 * (pl_malloc). */
#ifndef PLACER_REPORT_H
#define PLACER_REPORT_H

#include <stdio.h>
#include "placer/common.h"

typedef struct pl_table pl_table;

/* `spec` names the columns, separated by '|'; a leading '>' right-aligns a column (numbers):
 * "type|>count|>GFLOPs". */
pl_table *pl_table_new(const char *spec);
/* Adds a row; `fmt` has one printf conversion per column, separated by '|'. A cell longer than
 * 60 characters is shortened in the middle. */
void pl_table_row(pl_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pl_table_print(const pl_table *t, FILE *f);
void pl_table_free(pl_table *t);

/* Prints a JSON value (a jansson json_t *) indented, followed by a newline, and frees it. */
void pl_json_print(void *json, FILE *f);

#endif
