/* histo_view.c — how %histo shows its bins: labels, the "bins" member of a
 * run, and a table of the first run's bins (label, count, a bar) that goes
 * into the view above the runs table.
 *
 * The sweep machinery builds the view; this file sees each result on its way
 * out by standing in for the ctx's output for the length of the sweep, adds
 * the bins table, and passes it on unchanged otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/histo.h"
#include "render/render.h"
#include "magics/histo_internal.h"

#define BAR_WIDTH 30
#define BYTES_ALL_MAX 32            /* show every non-zero byte bin up to this many */
#define BYTES_TOP 16                /* else the largest ones */

void histo_bin_label(int mode, int width, int bin, char *buf, size_t len)
{
    if (mode == CL_HISTO_BYTES) {
        if (bin > 0x20 && bin < 0x7f)
            snprintf(buf, len, "0x%02x '%c'", bin, bin);
        else if (bin == 0x20)
            snprintf(buf, len, "0x20 ' '");
        else
            snprintf(buf, len, "0x%02x", bin & 0xff);
        return;
    }
    int first = bin * width, last = first + width - 1 > 25 ? 25 : first + width - 1;
    if (first == last)
        snprintf(buf, len, "%c", 'a' + first);
    else
        snprintf(buf, len, "%c-%c", 'a' + first, 'a' + last);
}

json_t *histo_bins_json(int mode, int width, const uint64_t *counts, int nbins)
{
    if (mode == CL_HISTO_BYTES) {
        json_t *a = json_array();
        for (int b = 0; b < nbins; b++)
            json_array_append_new(a, json_integer((json_int_t)counts[b]));
        return a;
    }
    json_t *o = json_object();
    for (int b = 0; b < nbins; b++) {
        char label[16];
        histo_bin_label(mode, width, b, label, sizeof label);
        json_object_set_new(o, label, json_integer((json_int_t)counts[b]));
    }
    return o;
}

/* ---- the bins table ---- */

static void bar(uint64_t count, uint64_t max, char *buf, size_t len)
{
    static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    size_t used = 0;
    buf[0] = '\0';
    if (!max || !count)
        return;
    uint64_t units = (count * BAR_WIDTH * 8 + max / 2) / max;
    if (units == 0)
        units = 1;
    for (uint64_t i = 0; i < units / 8 && used + 4 < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "█");
    if (used + 4 < len)
        snprintf(buf + used, len - used, "%s", eighths[units % 8]);
}

/* Bins of a run in display order: letters all; bytes the non-zero ones, or the
 * largest when there are many. Returns how many of order[] to show. */
static int bins_to_show(int mode, const uint64_t *c, int nbins, int *order, int *nonzero)
{
    int n = 0;
    *nonzero = 0;
    for (int b = 0; b < nbins; b++)
        if (c[b])
            (*nonzero)++;
    if (mode != CL_HISTO_BYTES || *nonzero <= BYTES_ALL_MAX) {
        for (int b = 0; b < nbins; b++)
            if (mode != CL_HISTO_BYTES || c[b])
                order[n++] = b;
        return n;
    }
    bool taken[CL_HISTO_MAX_BINS] = {false};
    for (; n < BYTES_TOP; n++) {
        int best = -1;
        for (int b = 0; b < nbins; b++)
            if (!taken[b] && (best < 0 || c[b] > c[best]))
                best = b;
        taken[best] = true;
        order[n] = best;
    }
    return n;
}

/* counts[] back from a run's "bins" (array or object in bin order). */
static int run_counts(const json_t *bins, uint64_t *c)
{
    int n = 0;
    if (json_is_array(bins)) {
        size_t i;
        json_t *v;
        json_array_foreach(bins, i, v)
            if (n < CL_HISTO_MAX_BINS)
                c[n++] = (uint64_t)json_integer_value(v);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)bins, k, v)
            if (n < CL_HISTO_MAX_BINS)
                c[n++] = (uint64_t)json_integer_value(v);
    }
    return n;
}

/* The table for runs[0], inserted before the first table of the view. */
static void add_bins_table(json_t *view, const json_t *doc)
{
    const json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    const json_t *bins = json_object_get(run, "bins");
    json_t *blocks = json_object_get(view, "blocks");
    if (!run || !bins || !json_is_array(blocks))
        return;
    int mode = json_is_array(bins) ? CL_HISTO_BYTES : CL_HISTO_LETTERS;
    int width = (int)json_integer_value(json_object_get(run, "bin_width"));
    uint64_t c[CL_HISTO_MAX_BINS] = {0}, max = 0, total = 0;
    int nbins = run_counts(bins, c), order[CL_HISTO_MAX_BINS], nonzero;
    for (int b = 0; b < nbins; b++) {
        max = c[b] > max ? c[b] : max;
        total += c[b];
    }
    int show = bins_to_show(mode, c, nbins, order, &nonzero);

    char title[160];
    const char *variant = json_string_value(json_object_get(run, "variant"));
    if (mode == CL_HISTO_BYTES && show < nonzero)
        snprintf(title, sizeof title, "Bins of the first run (%s): the %d largest of %d non-zero",
                 variant ? variant : "?", show, nonzero);
    else
        snprintf(title, sizeof title, "Bins of the first run (%s)", variant ? variant : "?");
    json_t *t = view_add_table(view, title, json_pack("[s,s,s,s]", "bin", "count", "%", ""));
    for (int i = 0; i < show; i++) {
        char label[16], b[BAR_WIDTH * 3 + 8];
        histo_bin_label(mode, width > 0 ? width : 1, order[i], label, sizeof label);
        bar(c[order[i]], max, b, sizeof b);
        double pct = total ? 100.0 * (double)c[order[i]] / (double)total : 0.0;
        view_table_row(t, json_pack("[s,I,f,s]", label, (json_int_t)c[order[i]], pct, b));
    }
    /* view_add_table appended it: move it before the runs table */
    size_t last = json_array_size(blocks) - 1;
    for (size_t i = 0; i < last; i++) {
        const char *type = json_string_value(json_object_get(json_array_get(blocks, i), "type"));
        if (type && strcmp(type, "table") == 0) {
            json_t *mine = json_incref(json_array_get(blocks, last));
            json_array_remove(blocks, last);
            json_array_insert_new(blocks, i, mine);
            break;
        }
    }
}

/* ---- standing in for the ctx's output ---- */

typedef struct histo_out {
    const magic_out *out;
    void *impl;
} histo_out;

static void histo_stream(void *impl, const char *name, const char *text)
{
    histo_out *h = impl;
    h->out->stream(h->impl, name, text);
}

/* Only results with a document: progress views have none, nor does the chart. */
static void histo_result(void *impl, json_t *doc, json_t *view, const char *display_id,
                         enum result_mode mode)
{
    histo_out *h = impl;
    if (doc && view)
        add_bins_table(view, doc);
    h->out->result(h->impl, doc, view, display_id, mode);
}

static const magic_out histo_out_table = {histo_stream, histo_result};

int histo_sweep_run(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user)
{
    histo_out h = {ctx->sink.out, ctx->sink.impl};
    magic_ctx inner = *ctx;
    inner.sink.out = &histo_out_table;
    inner.sink.impl = &h;
    int rc = sweep_run(&inner, s, params, user);
    memcpy(ctx->error.ename, inner.error.ename, sizeof ctx->error.ename);
    memcpy(ctx->error.evalue, inner.error.evalue, sizeof ctx->error.evalue);
    ctx->traceback = inner.traceback;
    return rc;
}
