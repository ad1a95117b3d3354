/* test_histo.c — the histogram family on the CPU backend: the generator and
 * bin mapping, every variant's CPU analogue against the reference at odd
 * sizes, blocks and grids, the textbook's example counted by hand, and %histo
 * itself (documents, views, usage errors, size refusals, failed checks) with
 * the real CPU backend and fake ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/histo.h"
#include "lang/lang.h"
#include "magic/magic.h"
#include "magics/histo_internal.h"

#include "magic_sink.h"

extern const cl_histo_ops cl_cpu_histo_ops;

/* ---- generator and bins ---- */

static void generator_is_deterministic_and_shaped(void **state)
{
    int seen[256] = {0};
    uint64_t skew = 0, n = 1 << 16;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t u = cl_histo_byte(7, CL_HISTO_UNIFORM, i);
        assert_int_equal(u, cl_histo_byte(7, CL_HISTO_UNIFORM, i));
        seen[u] = 1;
        uint8_t t = cl_histo_byte(7, CL_HISTO_TEXT, i);
        assert_true(t == ' ' || (t >= 'a' && t <= 'z'));
        skew += cl_histo_byte(7, CL_HISTO_SKEWED, i) == CL_HISTO_SKEW_BYTE;
    }
    for (int b = 0; b < 256; b++)
        assert_true(seen[b]);
    assert_true(skew > n * 88 / 100 && skew < n * 92 / 100);
    /* seeds differ; words hold bytes little-endian */
    assert_true(cl_histo_word(1, CL_HISTO_UNIFORM, 0) != cl_histo_word(2, CL_HISTO_UNIFORM, 0));
    uint32_t w = cl_histo_word(3, CL_HISTO_TEXT, 5);
    for (int k = 0; k < 4; k++)
        assert_int_equal(cl_histo_byte(3, CL_HISTO_TEXT, 20 + (uint64_t)k), (w >> (8 * k)) & 0xFF);
}

static void text_has_english_frequencies(void **state)
{
    uint64_t c[256] = {0}, n = 1 << 18;
    for (uint64_t i = 0; i < n; i++)
        c[cl_histo_byte(11, CL_HISTO_TEXT, i)]++;
    assert_true(c['e'] > c['t'] && c['t'] > c['a'] && c['a'] > c['z']);
    assert_true(c[' '] > n / 6 && c[' '] < n / 5);
    assert_true(c['z'] > 0 && c['q'] > 0);
}

static void fill_matches_generator(void **state)
{
    uint64_t n = 3 * (1 << 20) + 3;
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    cl_histo_fill(buf, n, 5, CL_HISTO_SKEWED);
    for (uint64_t i = 0; i < n; i += 997)
        assert_int_equal(buf[i], cl_histo_byte(5, CL_HISTO_SKEWED, i));
    assert_int_equal(buf[n - 1], cl_histo_byte(5, CL_HISTO_SKEWED, n - 1));
    free(buf);
}

static void bins_and_labels(void **state)
{
    assert_int_equal(cl_histo_bin('a', CL_HISTO_LETTERS, 4), 0);
    assert_int_equal(cl_histo_bin('D', CL_HISTO_LETTERS, 4), 0);
    assert_int_equal(cl_histo_bin('e', CL_HISTO_LETTERS, 4), 1);
    assert_int_equal(cl_histo_bin('Z', CL_HISTO_LETTERS, 4), 6);
    assert_int_equal(cl_histo_bin('z', CL_HISTO_LETTERS, 1), 25);
    assert_int_equal(cl_histo_bin('q', CL_HISTO_LETTERS, 26), 0);
    const char *others = " @[`{0\x7f\xc1\xe1\xfa";
    for (const char *p = others; *p; p++)
        assert_int_equal(cl_histo_bin((uint8_t)*p, CL_HISTO_LETTERS, 4), -1);
    assert_int_equal(cl_histo_bin(0xfa, CL_HISTO_BYTES, 4), 0xfa);
    assert_int_equal(cl_histo_nbins(CL_HISTO_LETTERS, 4), 7);
    assert_int_equal(cl_histo_nbins(CL_HISTO_LETTERS, 5), 6);
    assert_int_equal(cl_histo_nbins(CL_HISTO_LETTERS, 26), 1);
    assert_int_equal(cl_histo_nbins(CL_HISTO_BYTES, 4), 256);

    char l[16];
    histo_bin_label(CL_HISTO_LETTERS, 4, 6, l, sizeof l);
    assert_string_equal(l, "y-z");
    histo_bin_label(CL_HISTO_LETTERS, 5, 5, l, sizeof l);
    assert_string_equal(l, "z");
    histo_bin_label(CL_HISTO_LETTERS, 1, 2, l, sizeof l);
    assert_string_equal(l, "c");
    histo_bin_label(CL_HISTO_BYTES, 1, 'A', l, sizeof l);
    assert_string_equal(l, "0x41 'A'");
    histo_bin_label(CL_HISTO_BYTES, 1, 10, l, sizeof l);
    assert_string_equal(l, "0x0a");
}

/* ---- the textbook's example, counted by hand ----
 * "programming massively parallel processors", 4 letters per bin:
 *   a-d: a a a c      + (m)a(ssively)... counted letter by letter below
 * p r o g r a m m i n g   m a s s i v e l y   p a r a l l e l   p r o c e s s o r s
 * a-d: a(programming) a(massively) a a(parallel) c(processors)          = 5
 * e-h: g g(programming) e(massively) e(parallel) e(processors)          = 5
 * i-l: i(programming) i l(massively) l l l(parallel)                    = 6
 * m-p: p o m m n(programming) m(massively) p(parallel) p o o(processors) = 10
 * q-t: r r(programming) s s(massively) r(parallel) r s s r s(processors) = 10
 * u-x: v(massively) = 1;  y-z: y(massively) = 1                          */
static const uint64_t textbook[7] = {5, 5, 6, 10, 10, 1, 1};
static const char *const textbook_text = "programming massively parallel processors";

static cl_histo_args args_for(int variant, uint64_t n, int dist, int mode, int width)
{
    cl_histo_args a;
    memset(&a, 0, sizeof a);
    a.variant = variant;
    a.n = n;
    a.seed = 42;
    a.dist = dist;
    a.mode = mode;
    a.width = width;
    a.block = 64;
    a.reps = 1;
    return a;
}

static void textbook_reference(void **state)
{
    cl_histo_args a = args_for(CL_HISTO_V_cpu, strlen(textbook_text), 0, CL_HISTO_LETTERS, 4);
    a.text = (const uint8_t *)textbook_text;
    uint64_t c[CL_HISTO_MAX_BINS];
    char err[CL_ERR_LEN];
    assert_int_equal(cl_histo_reference(&a, c, err), 0);
    for (int b = 0; b < 7; b++)
        assert_int_equal(c[b], textbook[b]);
    for (int v = 0; v < CL_HISTO_NVARIANTS; v++) {
        cl_histo_result r;
        a.variant = v;
        assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
        assert_int_equal(r.nbins, 7);
        for (int b = 0; b < 7; b++)
            assert_int_equal(r.counts[b], textbook[b]);
    }
}

/* ---- every analogue against the reference ---- */

static void expect_reference(const cl_histo_args *a)
{
    uint64_t want[CL_HISTO_MAX_BINS];
    char err[CL_ERR_LEN] = "";
    static cl_histo_result r;
    assert_int_equal(cl_histo_reference(a, want, err), 0);
    if (cl_cpu_histo_ops.run(a, &r, err) != 0)
        fail_msg("variant %d: %s", a->variant, err);
    assert_int_equal(r.nbins, cl_histo_nbins(a->mode, a->width));
    for (int b = 0; b < r.nbins; b++)
        if (r.counts[b] != want[b])
            fail_msg("variant %d n %llu dist %d mode %d width %d block %d grid %d: bin %d has %llu, "
                     "want %llu", a->variant, (unsigned long long)a->n, a->dist, a->mode, a->width,
                     a->block, a->grid, b, (unsigned long long)r.counts[b],
                     (unsigned long long)want[b]);
    assert_int_equal(r.times.reps, a->reps);
    assert_true(r.times.ms[0] >= 0);
    assert_true(r.impl[0] != '\0');
}

static void analogues_match_reference(void **state)
{
    static const uint64_t sizes[] = {1, 15, 16, 17, 4099, 100003};
    static const int modes[][2] = {{CL_HISTO_BYTES, 1}, {CL_HISTO_LETTERS, 1},
                                   {CL_HISTO_LETTERS, 4}, {CL_HISTO_LETTERS, 26}};
    for (int v = 0; v < CL_HISTO_NVARIANTS; v++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int d = CL_HISTO_UNIFORM; d <= CL_HISTO_SKEWED; d++)
                for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
                    cl_histo_args a = args_for(v, sizes[s], d, modes[m][0], modes[m][1]);
                    expect_reference(&a);
                }
}

static void analogues_blocks_and_grids(void **state)
{
    static const int blocks[] = {32, 96, 256, 1024};
    static const int grids[] = {0, 1, 3, 5000};
    for (int v = 0; v < CL_HISTO_NVARIANTS; v++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
                cl_histo_args a = args_for(v, 65537, CL_HISTO_SKEWED, CL_HISTO_BYTES, 1);
                a.block = blocks[b];
                a.grid = grids[g];
                expect_reference(&a);
            }
}

static void analogue_launch_and_reps(void **state)
{
    cl_histo_args a = args_for(CL_HISTO_V_fast, 5000, CL_HISTO_UNIFORM, CL_HISTO_BYTES, 1);
    a.block = 128;
    a.grid = 3;
    a.reps = 4;
    a.warmup = 2;
    cl_histo_result r;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
    assert_int_equal(r.launch.grid[0], 3);
    assert_int_equal(r.launch.block[0], 128);
    assert_int_equal(r.launch.smem_bytes, 256 * 32 * 4);
    assert_int_equal(r.times.reps, 4);
    assert_non_null(strstr(r.impl, "CPU analogue"));
    a.variant = CL_HISTO_V_cpu;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
    assert_int_equal(r.launch.grid[0], 1);
    assert_int_equal(r.launch.block[0], 1);
    a.variant = CL_HISTO_V_cub;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
    assert_non_null(strstr(r.impl, "reference"));
    /* --reps auto (0) runs until settled; bad runs are refused, not run */
    a.reps = CL_REPS_AUTO;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
    assert_true(r.times.reps >= CL_REPS_AUTO_MIN);
    a.reps = -1;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), -1);
    a.reps = 1;
    a.variant = CL_HISTO_NVARIANTS;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), -1);
    assert_non_null(strstr(err, "unknown"));
    /* every variant has a row, in enum order; the CPU backend says how its analogue runs */
    assert_string_equal(cl_histo_variants[CL_HISTO_V_privatized].name, "privatized");
    a.variant = CL_HISTO_V_warp;
    assert_int_equal(cl_cpu_histo_ops.run(&a, &r, err), 0);
    assert_non_null(strstr(r.config, "CPU analogue"));
}

/* ---- %histo itself ---- */

static const char *run_str(const json_t *run, const char *key)
{
    const char *s = json_string_value(json_object_get(run, key));
    if (!s)
        fail_msg("%s is not a string", key);
    return s;
}

static long long run_int(const json_t *run, const char *key)
{
    const json_t *v = json_object_get(run, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return json_integer_value(v);
}

static const json_t *view_table(const json_t *view, size_t nth)
{
    size_t i, seen = 0;
    const json_t *b;
    json_array_foreach(json_object_get(view, "blocks"), i, b)
        if (strcmp(json_string_value(json_object_get(b, "type")), "table") == 0 && seen++ == nth)
            return b;
    return NULL;
}

static void expect_error(const char *cell, const cl_backend *be, const char *ename, const char *needle)
{
    sink c;
    magic_ctx ctx;
    if (run_quiet(cell, be, &c, &ctx) == 0)
        fail_msg("%s should fail", cell);
    if (strcmp(ctx.error.ename, ename) != 0 || !strstr(ctx.error.evalue, needle))
        fail_msg("%s: got %s: %s; want %s with '%s'", cell, ctx.error.ename, ctx.error.evalue, ename, needle);
    assert_null(c.doc);
    sink_free(&c, &ctx);
}

static void magic_textbook(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%histo --text \"programming massively parallel processors\" "
                              "--bin-width 4 --variant cpu,fast --reps 2 --warmup 0",
                              cl_cpu_backend(), &c, &ctx), 0);
    static const char *const labels[] = {"a-d", "e-h", "i-l", "m-p", "q-t", "u-x", "y-z"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *run = run_at(&c, i), *bins = json_object_get(run, "bins");
        assert_true(json_is_object(bins));
        assert_int_equal(json_object_size(bins), 7);
        for (int b = 0; b < 7; b++)
            assert_int_equal(json_integer_value(json_object_get(bins, labels[b])), textbook[b]);
        assert_string_equal(run_str(run, "input"), "text");
        assert_true(json_is_null(json_object_get(run, "dist")));
        assert_int_equal(run_int(run, "size"), 41);
        assert_true(json_is_true(json_object_get(json_object_get(run, "check"), "passed")));
        assert_true(json_is_number(json_object_get(run, "h2d_ms")));
    }
    const json_t *params = json_object_get(c.doc, "params");
    assert_string_equal(json_string_value(json_object_get(params, "bins")), "letters");
    assert_int_equal(json_integer_value(json_object_get(params, "size")), 41);
    /* the bins table comes first, with a bar per bin */
    const json_t *t = view_table(c.view, 0);
    assert_non_null(t);
    assert_non_null(strstr(json_string_value(json_object_get(t, "title")), "Bins of the first run (cpu)"));
    const json_t *rows = json_object_get(t, "rows");
    assert_int_equal(json_array_size(rows), 7);
    assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 3), 0)), "m-p");
    assert_int_equal(json_integer_value(json_array_get(json_array_get(rows, 3), 1)), 10);
    assert_non_null(strstr(json_string_value(json_array_get(json_array_get(rows, 3), 3)), "█"));
    assert_non_null(view_table(c.view, 1));
    sink_free(&c, &ctx);
}

static void magic_every_variant_sweep(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%histo --variant all --size 1000,4097 --dist uniform,text,skewed "
                              "--reps 1 --warmup 0", cl_cpu_backend(), &c, &ctx), 0);
    size_t n = json_array_size(json_object_get(c.doc, "runs"));
    assert_int_equal(n, 2 * 3 * CL_HISTO_NVARIANTS);
    for (size_t i = 0; i < n; i++) {
        const json_t *run = run_at(&c, i), *check = json_object_get(run, "check");
        assert_true(json_is_true(json_object_get(check, "passed")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(check, "wrong"), "count")), 0);
        assert_string_equal(run_str(run, "backend"), "cpu");
        assert_string_equal(run_str(run, "bin_mode"), "bytes");
        assert_true(json_is_null(json_object_get(run, "bin_width")));
        assert_int_equal(json_array_size(json_object_get(run, "bins")), 256);
        assert_true(json_number_value(json_object_get(run, "gbs")) > 0);
        const json_t *pct = json_object_get(run, "pct_of_bandwidth");
        assert_true(json_is_null(pct) || json_number_value(pct) > 0);
        assert_true(json_is_object(json_object_get(run, "launch")));
        assert_true(json_is_object(json_object_get(run, "time_ms")));
        assert_true(json_is_null(json_object_get(run, "h2d_ms")));
    }
    assert_string_equal(run_str(run_at(&c, 0), "variant"), "cpu");
    assert_string_equal(run_str(run_at(&c, CL_HISTO_NVARIANTS - 1), "variant"), "cub");
    sink_free(&c, &ctx);
}

/* Sizes and inputs vary slowest whatever order the flags are typed in. */
static void magic_sweep_order(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%histo --variant fast,cpu --size 100,200 --reps 1 --warmup 0",
                              cl_cpu_backend(), &c, &ctx), 0);
    static const char *const want_v[] = {"fast", "cpu", "fast", "cpu"};
    static const long long want_n[] = {100, 100, 200, 200};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(run_str(run_at(&c, i), "variant"), want_v[i]);
        assert_int_equal(run_int(run_at(&c, i), "size"), want_n[i]);
    }
    sink_free(&c, &ctx);
}

static void magic_byte_bins_view(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%histo --variant privatized --size 100000 --reps 1", cl_cpu_backend(),
                              &c, &ctx), 0);
    const json_t *t = view_table(c.view, 0);
    assert_non_null(strstr(json_string_value(json_object_get(t, "title")), "the 16 largest of 256"));
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 16);
    sink_free(&c, &ctx);
    /* text bytes: 27 values, all shown, space among them */
    assert_int_equal(run_quiet("%histo --variant warp --size 100000 --dist text --reps 1",
                              cl_cpu_backend(), &c, &ctx), 0);
    t = view_table(c.view, 0);
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 27);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(run_at(&c, 0), "bins"), 'A')), 0);
    sink_free(&c, &ctx);
}

static void magic_cell_body_and_no_check(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%%histo --bin-width 1 --variant interleaved --no-check --reps 1\n"
                              "Hello, World", cl_cpu_backend(), &c, &ctx), 0);
    const json_t *run = run_at(&c, 0), *bins = json_object_get(run, "bins");
    assert_int_equal(json_object_size(bins), 26);
    assert_int_equal(json_integer_value(json_object_get(bins, "l")), 3);
    assert_int_equal(json_integer_value(json_object_get(bins, "o")), 2);
    assert_int_equal(json_integer_value(json_object_get(bins, "h")), 1);
    assert_int_equal(json_integer_value(json_object_get(bins, "z")), 0);
    assert_true(json_is_null(json_object_get(json_object_get(run, "check"), "passed")));
    sink_free(&c, &ctx);
    /* the body's bytes as bins: 12 bytes, ',' and ' ' among them */
    assert_int_equal(run_quiet("%%histo --bins bytes --variant fast --reps 1\nHello, World",
                              cl_cpu_backend(), &c, &ctx), 0);
    bins = json_object_get(run_at(&c, 0), "bins");
    assert_int_equal(json_integer_value(json_array_get(bins, ',')), 1);
    assert_int_equal(json_integer_value(json_array_get(bins, 'l')), 3);
    sink_free(&c, &ctx);
}

static void magic_usage_errors(void **state)
{
    const cl_backend *cpu = cl_cpu_backend();
    expect_error("%histo --text abc --size 100", cpu, "UsageError", "--size");
    expect_error("%histo --text abc --dist skewed", cpu, "UsageError", "--dist");
    expect_error("%histo --text \"\"", cpu, "UsageError", "empty");
    expect_error("%%histo --text abc\nxyz", cpu, "UsageError", "not both");
    expect_error("%%histo\n", cpu, "UsageError", "empty");
    expect_error("%histo --block 100 --size 64", cpu, "UsageError", "multiple of the warp size 32 (e.g. 96 or 128)");
    expect_error("%histo --block 256,33 --size 64", cpu, "UsageError", "--block 33");
}

static void magic_parse_errors(void **state)
{
    static const char *const cells[][2] = {
        {"%histo --variant fats", "did you mean 'fast'"},
        {"%histo --variant privatised", "did you mean 'privatized'"},
        {"%histo --bins words", "allowed: bytes, letters"},
        {"%histo --bin-width 27", "between 1 and 26"},
        {"%histo --block 2048", "between 1 and 1024"},
        {"%histo --reps 0", "between 1 and 1000"},
        {"%histo --dist normal", "uniform, text, skewed"},
        {"%histo --size 0", "between 1 and"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        command *cmds = NULL;
        parse_error perr;
        if (cell_parse(test_lab(), cells[i][0], &cmds, &perr) != -1)
            fail_msg("%s should not parse", cells[i][0]);
        if (!strstr(perr.error.evalue, cells[i][1]))
            fail_msg("%s: '%s' lacks '%s'", cells[i][0], perr.error.evalue, cells[i][1]);
    }
}

/* ---- fake backends ---- */

static int fake_count(int *count, char *err)
{
    *count = 1;
    return 0;
}

static int fake_props(int dev, cl_device_props *p, char *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU");
    p->sm_count = 4;
    p->total_mem = p->free_mem = 100ull << 30;
    return 0;
}

static int fake_versions(int dev, cl_versions *v, char *err)
{
    memset(v, 0, sizeof *v);
    snprintf(v->arch, sizeof v->arch, "sm_90 SASS");
    return 0;
}

static uint64_t fake_overhead(void)
{
    return 100u << 20;
}

/* The CPU analogue, then one count off: a kernel with a race. */
static int broken_run(const cl_histo_args *a, cl_histo_result *r, char *err)
{
    int rc = cl_cpu_histo_ops.run(a, r, err);
    r->counts[3]++;
    return rc;
}

static int failing_run(const cl_histo_args *a, cl_histo_result *r, char *err)
{
    snprintf(err, CL_ERR_LEN, "kernel launch: an illegal memory access was encountered");
    return -1;
}

static const cl_histo_ops broken_ops = {.run = broken_run, .overhead = fake_overhead};
static const cl_histo_ops failing_ops = {.run = failing_run, .overhead = fake_overhead};

static cl_backend fake_backend(const cl_histo_ops *ops)
{
    cl_backend b = {.name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count,
                    .device_props = fake_props, .versions = fake_versions, .histo = ops};
    return b;
}

static void magic_absurd_sizes(void **state)
{
    expect_error("%histo --size 2^50", cl_cpu_backend(), "MemoryError", "of host memory");
    cl_backend b = fake_backend(&cl_cpu_histo_ops);
    b.histo = &cl_cpu_histo_ops;
    expect_error("%histo --size 2^40", &b, "MemoryError", "needs 1.0 TiB of device memory");
    expect_error("%histo --size 2^40", &b, "MemoryError", "100.0 GiB free (the largest power of two "
                 "that fits: --size 2^36)");
    expect_error("%histo --size 2^31", &b, "ValueError", "at most 2^31-1 = 2147483647 bytes");
    expect_error("%histo --size 1000,2^33", &b, "ValueError", "--size 2^33");
}

static void magic_missing_family(void **state)
{
    cl_backend b = fake_backend(NULL);
    expect_error("%histo --size 100", &b, "RuntimeError", "backend was built without %histo (rebuild with cuda/histo");
    magic_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    extern const magic_spec magic_histo;
    assert_int_equal(magic_histo.run(&ctx, NULL, NULL), -1);
    assert_non_null(strstr(ctx.error.evalue, "device worker"));
}

static void magic_failed_check(void **state)
{
    cl_backend b = fake_backend(&broken_ops);
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%histo --variant fast,cub --size 5000 --reps 1", &b, &c, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CheckError");
    assert_non_null(c.doc);                 /* the table is still shown */
    const json_t *check = json_object_get(run_at(&c, 0), "check");
    assert_true(json_is_false(json_object_get(check, "passed")));
    const json_t *wrong = json_object_get(check, "wrong"), *first = json_object_get(wrong, "first");
    assert_int_equal(json_integer_value(json_object_get(wrong, "count")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "at"), "bin")), "0x03");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(first, "at"), "index")), 3);
    assert_int_equal(json_integer_value(json_object_get(first, "got")),
                     json_integer_value(json_object_get(first, "want")) + 1);
    assert_true(json_is_null(json_object_get(run_at(&c, 0), "pct_of_bandwidth")));
    sink_free(&c, &ctx);
    /* the cpu variant runs on the CPU backend whatever the backend: it passes */
    assert_int_equal(run_quiet("%histo --variant cpu --size 5000 --reps 1", &b, &c, &ctx), 0);
    assert_string_equal(run_str(run_at(&c, 0), "backend"), "cpu");
    sink_free(&c, &ctx);
}

static void magic_backend_error(void **state)
{
    cl_backend b = fake_backend(&failing_ops);
    expect_error("%histo --variant warp --size 100", &b, "CudaError",
                 "--variant warp: kernel launch: an illegal memory access");
}

static void magic_help(void **state)
{
    const magic_spec *m = magic_find("histo");
    assert_non_null(m);
    char *help = magic_help_text(NULL, m);
    assert_non_null(help);
    static const char *const needles[] = {"sectioned", "coalesced", "privatized", "aggregation",
                                          "bank", "HistogramEven", "--bin-width", "skewed",
                                          "%histo --text \"programming massively parallel processors\""};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        if (!strstr(help, needles[i]))
            fail_msg("help lacks %s", needles[i]);
    free(help);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generator_is_deterministic_and_shaped),
        cmocka_unit_test(text_has_english_frequencies),
        cmocka_unit_test(fill_matches_generator),
        cmocka_unit_test(bins_and_labels),
        cmocka_unit_test(textbook_reference),
        cmocka_unit_test(analogues_match_reference),
        cmocka_unit_test(analogues_blocks_and_grids),
        cmocka_unit_test(analogue_launch_and_reps),
        cmocka_unit_test(magic_textbook),
        cmocka_unit_test(magic_every_variant_sweep),
        cmocka_unit_test(magic_sweep_order),
        cmocka_unit_test(magic_byte_bins_view),
        cmocka_unit_test(magic_cell_body_and_no_check),
        cmocka_unit_test(magic_usage_errors),
        cmocka_unit_test(magic_parse_errors),
        cmocka_unit_test(magic_absurd_sizes),
        cmocka_unit_test(magic_missing_family),
        cmocka_unit_test(magic_failed_check),
        cmocka_unit_test(magic_backend_error),
        cmocka_unit_test(magic_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
