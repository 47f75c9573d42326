/* html.h: `placer report`: one self-contained HTML page of charts drawn from the JSON answers
 * of placer's verbs (docs/report.md).
 *
 * Semantics, exactly: each document is one section of the page, in the order given, with its
 * headline figures as a table and its charts as inline SVG written here (no script, no style
 * sheet, font or image fetched: the page reads the same opened from disk offline and
 * printed). Every chart has its axes with units, a legend, and each drawn number in an SVG
 * <title> (shown on hover) and in data attributes: data-p, the JSON path of the object the
 * mark draws in its document ("$.algorithms[2]"), data-k0, data-k1, ..., the paths of the
 * values under it ("makespan_s"), and data-v0, data-v1, ..., the values, each the shortest
 * text that reads back as the same double, so that a test reads back from the browser's DOM
 * exactly the numbers of the JSON. A field a chart needs that is absent leaves that chart out,
 * with a line saying which field; a document is never half drawn silently.
 *
 * The formats drawn (pl_html_formats): placer-place/1, placer-simulate/1, placer-compare/1,
 * placer-deploy/1, placer-serverless/1, placer-multi/1, placer-train/1, placer-run/1,
 * placer-optimize/1, placer-cost-params/1 (calibrate), placer-inspect/1, placer-profile/1,
 * placer-split/2 (split's manifest) and placer-prior/1 (learn-prior's FILE.json). Any other
 * document, another version of one of them
 * ("placer-deploy/2") and a root that is not an object are refused by pl_html_check.
 *
 * Ownership and failure: the documents are only read. pl_html_save writes through pl_out: the
 * page at `path` is whole or as it was (no partial HTML), and on failure err says why. */
#ifndef PLACER_HTML_H
#define PLACER_HTML_H

#include <stdio.h>

#include "placer/json.h"

/* The formats drawn, NULL-terminated. */
extern const char *const pl_html_formats[];

/* 0 when root (a document's root cursor: its file names the document in messages) is an
 * object whose "format" is one of pl_html_formats; else -1 with "FILE: $.format: WHY". */
int pl_html_check(const pl_json *root, pl_err *err);
/* The page of docs[0..n) (each checked by pl_html_check first: the first refusal fails the
 * whole page) to the stream f; title heads it. -1 with err set on a refused document. */
int pl_html_write(FILE *f, const pl_json *docs, int n, const char *title, pl_err *err);
/* pl_html_write to path, whole or not at all. */
int pl_html_save(const char *path, const pl_json *docs, int n, const char *title, pl_err *err);

#endif
