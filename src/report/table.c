/* table.c: plain-text tables. Cells are stored as strings so widths are known before
 * printing; tables are small (one row per op type, device or algorithm). */
#include "placer/report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#define MAX_COLS 32
#define MAX_CELL 60

struct pl_table {
    int ncols;
    char *head[MAX_COLS];
    bool right[MAX_COLS];
    int width[MAX_COLS];
    char **cells; /* nrows × ncols */
    int nrows, cap;
};

static char *shorten(const char *s)
{
    size_t n = strlen(s);
    if (n <= MAX_CELL) return pl_strdup(s);
    char *d = pl_malloc(MAX_CELL + 1);
    size_t keep = (MAX_CELL - 3) / 2;
    memcpy(d, s, keep);
    memcpy(d + keep, "...", 3);
    memcpy(d + keep + 3, s + n - (MAX_CELL - 3 - keep), MAX_CELL - 3 - keep);
    d[MAX_CELL] = 0;
    return d;
}

/* Splits `s` at '|' into at most MAX_COLS malloc'd strings. */
static int split_bars(const char *s, char **out)
{
    int n = 0;
    for (const char *p = s;; n++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (n < MAX_COLS) out[n] = pl_strndup(p, len);
        if (!bar) return n + 1 < MAX_COLS ? n + 1 : MAX_COLS;
        p = bar + 1;
    }
}

pl_table *pl_table_new(const char *spec)
{
    pl_table *t = pl_calloc(1, sizeof *t);
    t->ncols = split_bars(spec, t->head);
    for (int c = 0; c < t->ncols; c++) {
        if (t->head[c][0] == '>') {
            t->right[c] = true;
            memmove(t->head[c], t->head[c] + 1, strlen(t->head[c]));
        }
        t->width[c] = (int)strlen(t->head[c]);
    }
    return t;
}

void pl_table_row(pl_table *t, const char *fmt, ...)
{
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *parts[MAX_COLS] = {0};
    int n = split_bars(line, parts);
    pl_grow((void **)&t->cells, &t->cap, (t->nrows + 1) * t->ncols, sizeof *t->cells);
    for (int c = 0; c < t->ncols; c++) {
        char *cell = shorten(c < n ? parts[c] : "");
        t->cells[t->nrows * t->ncols + c] = cell;
        if ((int)strlen(cell) > t->width[c]) t->width[c] = (int)strlen(cell);
    }
    for (int c = 0; c < n && c < MAX_COLS; c++)
        free(parts[c]);
    t->nrows++;
}

static void print_row(const pl_table *t, char *const *cells, FILE *f)
{
    for (int c = 0; c < t->ncols; c++) {
        const char *sep = c + 1 < t->ncols ? "  " : "";
        if (t->right[c])
            fprintf(f, "%*s%s", t->width[c], cells[c], sep);
        else if (c + 1 < t->ncols)
            fprintf(f, "%-*s%s", t->width[c], cells[c], sep);
        else
            fprintf(f, "%s", cells[c]);
    }
    fputc('\n', f);
}

void pl_table_print(const pl_table *t, FILE *f)
{
    print_row(t, t->head, f);
    for (int c = 0; c < t->ncols; c++) {
        for (int k = 0; k < t->width[c]; k++)
            fputc('-', f);
        if (c + 1 < t->ncols) fputs("  ", f);
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++)
        print_row(t, t->cells + r * t->ncols, f);
}

void pl_table_free(pl_table *t)
{
    if (!t) return;
    for (int c = 0; c < t->ncols; c++)
        free(t->head[c]);
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void pl_json_print(void *json, FILE *f)
{
    json_dumpf((json_t *)json, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref((json_t *)json);
}
