/* test_device.c — %device against a fake H100-like backend and the real CPU
 * backend, the occupancy model's device read from each (with the shared
 * memory a launch finds reserved per block), and backend_select's fallbacks
 * (each in a forked child, since the choice is cached once per process).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cudalab/host.h"
#include "magic/magic.h"
#include "exec/backend_load.h"
#include "magic/occupancy_model.h"
#include "cudalab/simt.h"

#include "magic_sink.h"

extern const magic_spec magic_device;

/* ---- a fake backend: device 0 is an H100 SXM, device 1 knows little ---- */

static int fake_fail_dev = -1;      /* device_props fails for this index */

static int fake_count(int *count, char *err)
{
    *count = 2;
    return 0;
}

/* Device 0, as the CUDA runtime reports an H100 SXM. */
static const cl_device_props fake_h100 = {
    .name = "NVIDIA H100 80GB HBM3", .pci_bus_id = "0000:18:00.0",
    .cc_major = 9, .cc_minor = 0, .sm_count = 132, .cores_per_sm = 128,
    .clock_khz = 1980000, .mem_clock_khz = 2619000, .mem_bus_width_bits = 5120,
    .total_mem = 85029158912ull, .free_mem = 84397195264ull, .l2_bytes = 52428800,
    .smem_per_block = 49152, .smem_per_block_optin = 232448, .smem_per_sm = 233472,
    .regs_per_block = 65536, .regs_per_sm = 65536,
    .max_threads_per_block = 1024, .max_threads_per_sm = 2048, .max_blocks_per_sm = 32, .warp_size = 32,
    .max_block = { 1024, 1024, 64 }, .max_grid = { 2147483647, 65535, 65535 },
    .async_engines = 3, .ecc = 1,
};

/* Device 1: an architecture newer than the cores table, with no memory clock reported. */
static const cl_device_props fake_unknown = {
    .name = "Future GPU", .cc_major = 13, .sm_count = 10, .clock_khz = 1000000, .mem_bus_width_bits = 256,
    .total_mem = 1ull << 30, .warp_size = 32, .max_threads_per_sm = 1536,
};

static int fake_props(int dev, cl_device_props *out, char *err)
{
    if (dev == fake_fail_dev) {
        snprintf(err, CL_ERR_LEN, "an illegal memory access was encountered");
        return -1;
    }
    *out = dev == 0 ? fake_h100 : fake_unknown;
    out->index = dev;
    return 0;
}

static int fake_versions(int dev, cl_versions *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->driver = 13000;
    out->runtime = 12080;
    if (dev == 0)
        snprintf(out->arch, sizeof out->arch, "sm_90 SASS");
    return 0;
}

static const cl_backend fake_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI,
    .device_count = fake_count, .device_props = fake_props, .versions = fake_versions,
};

/* Runs %device with the given params (a JSON text) and returns run()'s status. */
static int run_device(const cl_backend *be, const char *note, const char *params_json,
                      sink *c, magic_ctx *ctx)
{
    sink_start(c, ctx, be);
    ctx->dev.note = note;
    json_t *params = json_loads(params_json, 0, NULL);
    assert_non_null(params);
    int rc = magic_device.run(ctx, params, NULL);
    json_decref(params);
    assert_int_equal(c->stderr_writes, 0);
    return rc;
}

static long long int_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return json_integer_value(v);
}

static const char *str_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        fail_msg("%s is not a string", key);
    return json_string_value(v);
}

static void assert_null_field(const json_t *o, const char *key)
{
    if (!json_is_null(json_object_get(o, key)))
        fail_msg("%s should be null", key);
}

/* cmocka 1.1's assert_float_equal works in float, too coarse for 66908.16. */
static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want))
        fail_msg("%.9f is not %.9f", got, want);
}

static void assert_dims(const json_t *o, const char *key, long long x, long long y, long long z)
{
    const json_t *a = json_object_get(o, key);
    assert_true(json_is_array(a));
    assert_int_equal(json_array_size(a), 3);
    assert_int_equal(json_integer_value(json_array_get(a, 0)), x);
    assert_int_equal(json_integer_value(json_array_get(a, 1)), y);
    assert_int_equal(json_integer_value(json_array_get(a, 2)), z);
}

/* The view's blocks of one type, in order. */
static const json_t *view_block(const json_t *view, const char *type, size_t nth)
{
    size_t i, seen = 0;
    const json_t *b;
    json_array_foreach(json_object_get(view, "blocks"), i, b) {
        if (strcmp(json_string_value(json_object_get(b, "type")), type) == 0 && seen++ == nth)
            return b;
    }
    return NULL;
}

static size_t view_count(const json_t *view, const char *type)
{
    size_t n = 0;
    while (view_block(view, type, n))
        n++;
    return n;
}

/* The value cell of a property row of a two-column table. */
static const char *table_value(const json_t *table, const char *property)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(table, "rows"), i, r) {
        if (strcmp(json_string_value(json_array_get(r, 0)), property) == 0)
            return json_string_value(json_array_get(r, 1));
    }
    return NULL;
}

static bool has_note(const json_t *view, const char *text)
{
    const json_t *b;
    for (size_t n = 0; (b = view_block(view, "note", n)); n++)
        if (strstr(json_string_value(json_object_get(b, "text")), text))
            return true;
    return false;
}

/* ---- the spec ---- */

static void test_spec(void **state)
{
    assert_string_equal(magic_device.name, "device");
    assert_int_equal(magic_device.mode, MAGIC_LINE);
    assert_int_equal(magic_device.where, MAGIC_WORKER);
    const flag_spec *f = magic_device.flags;
    assert_string_equal(f[0].name, "index");
    assert_int_equal(f[0].type, FLAG_INT);
    assert_null(f[0].def);
    assert_int_equal(f[0].imin, 0);
    assert_int_equal(f[0].imax, 63);
    assert_string_equal(f[1].name, "brief");
    assert_int_equal(f[1].type, FLAG_BOOL);
    assert_null(f[2].name);
}

/* ---- the fake GPU ---- */

static void test_h100_document(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(&fake_backend, "CUDA device 0: NVIDIA H100 80GB HBM3",
                                "{\"index\": null, \"brief\": false}", &c, &ctx), 0);
    assert_int_equal(c.results, 1);
    const json_t *doc = c.doc;
    assert_string_equal(str_field(doc, "magic"), "device");
    assert_string_equal(str_field(doc, "backend"), "cuda");
    assert_string_equal(str_field(doc, "backend_note"), "CUDA device 0: NVIDIA H100 80GB HBM3");
    assert_string_equal(str_field(doc, "driver_version"), "13.0");
    assert_string_equal(str_field(doc, "runtime_version"), "12.8");
    assert_int_equal(int_field(doc, "count"), 2);
    const json_t *devs = json_object_get(doc, "devices");
    assert_int_equal(json_array_size(devs), 2);

    const json_t *d = json_array_get(devs, 0);
    assert_int_equal(int_field(d, "index"), 0);
    assert_string_equal(str_field(d, "name"), "NVIDIA H100 80GB HBM3");
    assert_string_equal(str_field(d, "cc"), "9.0");
    assert_string_equal(str_field(d, "arch"), "sm_90 SASS");
    assert_int_equal(int_field(d, "sms"), 132);
    assert_int_equal(int_field(d, "cores_per_sm"), 128);
    assert_int_equal(int_field(d, "cuda_cores"), 16896);
    assert_int_equal(int_field(d, "clock_mhz"), 1980);
    assert_int_equal(int_field(d, "mem_clock_mhz"), 2619);
    assert_int_equal(int_field(d, "mem_bus_width_bits"), 5120);
    assert_int_equal(int_field(d, "mem_total_bytes"), 85029158912ll);
    assert_int_equal(int_field(d, "mem_free_bytes"), 84397195264ll);
    assert_int_equal(int_field(d, "l2_bytes"), 52428800);
    assert_int_equal(int_field(d, "smem_per_block_bytes"), 49152);
    assert_int_equal(int_field(d, "smem_per_block_optin_bytes"), 232448);
    assert_int_equal(int_field(d, "smem_per_sm_bytes"), 233472);
    assert_int_equal(int_field(d, "regs_per_block"), 65536);
    assert_int_equal(int_field(d, "regs_per_sm"), 65536);
    assert_int_equal(int_field(d, "max_threads_per_block"), 1024);
    assert_int_equal(int_field(d, "max_threads_per_sm"), 2048);
    assert_int_equal(int_field(d, "max_blocks_per_sm"), 32);
    assert_int_equal(int_field(d, "warp_size"), 32);
    assert_int_equal(int_field(d, "max_warps_per_sm"), 64);
    assert_int_equal(int_field(d, "async_engines"), 3);
    assert_true(json_is_true(json_object_get(d, "ecc")));
    assert_string_equal(str_field(d, "pci_bus_id"), "0000:18:00.0");
    assert_dims(d, "max_block_dims", 1024, 1024, 64);
    assert_dims(d, "max_grid_dims", 2147483647, 65535, 65535);
    /* 2 × 132 SMs × 128 cores × 1980 MHz; 2 × 2619 MHz × 5120 bit / 8. */
    assert_true(json_is_real(json_object_get(d, "peak_fp32_gflops")));
    assert_near(json_real_value(json_object_get(d, "peak_fp32_gflops")), 66908.16);
    assert_near(json_real_value(json_object_get(d, "peak_bandwidth_gbs")), 3352.32);
    sink_free(&c, &ctx);
}

static void test_unknowns_are_null(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(&fake_backend, NULL, "{\"index\": 1, \"brief\": false}", &c, &ctx), 0);
    assert_null_field(c.doc, "backend_note");
    assert_int_equal(int_field(c.doc, "count"), 2);
    const json_t *devs = json_object_get(c.doc, "devices");
    assert_int_equal(json_array_size(devs), 1);
    const json_t *d = json_array_get(devs, 0);
    assert_int_equal(int_field(d, "index"), 1);
    assert_string_equal(str_field(d, "cc"), "13.0");
    assert_int_equal(int_field(d, "sms"), 10);
    assert_int_equal(int_field(d, "max_warps_per_sm"), 48);
    static const char *const nulls[] = {
        "arch", "cores_per_sm", "cuda_cores", "mem_clock_mhz", "l2_bytes", "mem_free_bytes",
        "smem_per_block_bytes", "regs_per_sm", "max_blocks_per_sm", "max_block_dims",
        "max_grid_dims", "pci_bus_id", "peak_fp32_gflops", "peak_bandwidth_gbs",
    };
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        assert_null_field(d, nulls[i]);
    /* On a GPU, zero copy engines and ECC off are facts, not unknowns. */
    assert_int_equal(int_field(d, "async_engines"), 0);
    assert_true(json_is_false(json_object_get(d, "ecc")));
    sink_free(&c, &ctx);
}

static void test_h100_view(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(&fake_backend, "CUDA device 0: NVIDIA H100 80GB HBM3",
                                "{\"index\": null, \"brief\": false}", &c, &ctx), 0);
    assert_string_equal(str_field(c.view, "title"), "CUDA devices (2)");
    assert_int_equal(view_count(c.view, "note"), 0);
    assert_int_equal(view_count(c.view, "table"), 2);
    const json_t *t = view_block(c.view, "table", 0);
    assert_string_equal(str_field(t, "title"), "Device 0: NVIDIA H100 80GB HBM3");
    assert_string_equal(table_value(t, "compute capability"), "9.0 (Hopper)");
    assert_string_equal(table_value(t, "SM clock"), "1980 MHz");
    assert_string_equal(table_value(t, "global memory"), "79.2 GiB (78.6 GiB free)");
    assert_string_equal(table_value(t, "L2 cache"), "50 MiB");
    assert_string_equal(table_value(t, "shared memory per block"), "48 KiB (227 KiB opt-in)");
    assert_string_equal(table_value(t, "max block"), "1024 × 1024 × 64");
    assert_string_equal(table_value(t, "max grid"), "2147483647 × 65535 × 65535");
    assert_string_equal(table_value(t, "peak FP32"), "66908 GFLOP/s (2 × 16896 cores × 1980 MHz)");
    assert_string_equal(table_value(t, "peak bandwidth"), "3352 GB/s (2 × 2619 MHz × 5120 bit / 8)");
    /* Unknown values leave their rows out rather than show zeros. */
    const json_t *t1 = view_block(c.view, "table", 1);
    assert_null(table_value(t1, "peak FP32"));
    assert_null(table_value(t1, "memory clock"));
    assert_string_equal(table_value(t1, "global memory"), "1 GiB");
    sink_free(&c, &ctx);
}

static void test_brief_view(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(&fake_backend, NULL, "{\"index\": null, \"brief\": true}", &c, &ctx), 0);
    assert_int_equal(view_count(c.view, "table"), 1);
    const json_t *t = view_block(c.view, "table", 0);
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 2);
    const json_t *r = json_array_get(json_object_get(t, "rows"), 0);
    assert_string_equal(json_string_value(json_array_get(r, 1)), "NVIDIA H100 80GB HBM3");
    assert_string_equal(json_string_value(json_array_get(r, 2)), "9.0");
    assert_int_equal(json_integer_value(json_array_get(r, 3)), 132);
    assert_string_equal(json_string_value(json_array_get(r, 4)), "79.2 GiB");
    /* The document does not depend on how it is shown. */
    assert_int_equal(json_array_size(json_object_get(c.doc, "devices")), 2);
    assert_non_null(json_object_get(json_array_get(json_object_get(c.doc, "devices"), 0), "l2_bytes"));
    sink_free(&c, &ctx);
}

static void test_index_beyond_count(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(&fake_backend, NULL, "{\"index\": 3, \"brief\": false}", &c, &ctx), -1);
    assert_int_equal(c.results, 0);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_string_equal(ctx.error.evalue, "--index 3: only 2 devices (0..1)");
    sink_free(&c, &ctx);
}

static void test_props_failure(void **state)
{
    sink c;
    magic_ctx ctx;
    fake_fail_dev = 1;
    int rc = run_device(&fake_backend, NULL, "{\"index\": null, \"brief\": false}", &c, &ctx);
    fake_fail_dev = -1;
    assert_int_equal(rc, -1);
    assert_int_equal(c.results, 0);
    assert_string_equal(ctx.error.ename, "CudaError");
    assert_non_null(strstr(ctx.error.evalue, "an illegal memory access was encountered"));
    sink_free(&c, &ctx);
}

static void test_no_backend(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(NULL, NULL, "{\"index\": null, \"brief\": false}", &c, &ctx), -1);
    assert_string_equal(ctx.error.ename, "RuntimeError");
    sink_free(&c, &ctx);
}

/* ---- the real CPU backend ---- */

#define DRIVER_NOTE "no CUDA device: CUDA driver version is insufficient for CUDA runtime version"

static void test_cpu_backend(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(cl_cpu_backend(), DRIVER_NOTE, "{\"index\": null, \"brief\": false}",
                                &c, &ctx), 0);
    const json_t *doc = c.doc;
    assert_string_equal(str_field(doc, "backend"), "cpu");
    assert_string_equal(str_field(doc, "backend_note"), DRIVER_NOTE);
    assert_null_field(doc, "driver_version");
    assert_null_field(doc, "runtime_version");
    assert_int_equal(int_field(doc, "count"), 1);
    const json_t *d = json_array_get(json_object_get(doc, "devices"), 0);
    assert_non_null(d);
    assert_true(strlen(str_field(d, "name")) > 0);
    assert_true(strncmp(str_field(d, "arch"), "host CPU (", 10) == 0);
    assert_null_field(d, "cc");
    assert_true(int_field(d, "sms") >= 1);
    cl_cpu_fp32_rate rate;          /* the host's FP32 lanes per logical CPU, as its peak counts them */
    cl_cpu_fp32_rate_read(&rate);
    assert_int_equal(int_field(d, "cores_per_sm"), rate.lanes_per_cpu);
    /* the CPU device model (cudalab/cpu_model.h): the execution model the analogues run */
    assert_int_equal(int_field(d, "warp_size"), 32);
    assert_int_equal(int_field(d, "max_threads_per_block"), 1024);
    assert_int_equal(int_field(d, "max_threads_per_sm"), 2048);
    assert_int_equal(int_field(d, "max_warps_per_sm"), 64);
    assert_int_equal(int_field(d, "smem_per_block_bytes"), 49152);
    assert_int_equal(int_field(d, "smem_per_block_optin_bytes"), 227 * 1024);
    assert_int_equal(int_field(d, "smem_per_sm_bytes"), 228 * 1024);
    assert_int_equal(int_field(d, "regs_per_sm"), 65536);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(d, "max_block_dims"), 2)), 64);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(d, "max_grid_dims"), 1)), 65535);
    assert_true(int_field(d, "mem_total_bytes") > 0);
    static const char *const nulls[] = {
        "mem_clock_mhz", "mem_bus_width_bits", "l2_bytes", "ecc", "async_engines", "pci_bus_id",
        "peak_bandwidth_gbs",
    };
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        assert_null_field(d, nulls[i]);

    assert_string_equal(str_field(c.view, "title"), "No CUDA device — CPU backend");
    assert_true(has_note(c.view, DRIVER_NOTE));
    assert_true(has_note(c.view, "every magic runs its CPU analogue"));
    assert_true(has_note(c.view, "one sm_90 (H100) SM per logical CPU"));
    const json_t *t = view_block(c.view, "table", 0);
    assert_non_null(table_value(t, "logical CPUs"));
    assert_null(table_value(t, "SMs"));
    assert_string_equal(table_value(t, "warp size"), "32");
    assert_string_equal(table_value(t, "threads per block"), "1024");
    if (table_value(t, "peak FP32")) {  /* a host whose clock Linux tells: how its peak is counted */
        char how[200];
        cl_cpu_fp32_rate_text(&rate, how, sizeof how);
        assert_non_null(strstr(table_value(t, "peak FP32"), "logical CPUs"));
        assert_non_null(strstr(table_value(t, "peak FP32"), how));
    }
    sink_free(&c, &ctx);
}

/* One CPU device model: the CPU backend's device, the occupancy model's
 * default SM and the CPU runner's limits are the same numbers. */
static void test_cpu_model_is_one_device(void **state)
{
    cl_device_props p;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_cpu_backend()->device_props(0, &p, err), 0);
    cl_occ_device o;
    cl_occ_device_default(&o);
    assert_int_equal(p.warp_size, o.warp);
    assert_int_equal(p.max_threads_per_block, o.max_threads_block);
    assert_int_equal(p.max_threads_per_sm, o.max_threads_sm);
    assert_int_equal(p.max_blocks_per_sm, o.max_blocks_sm);
    assert_int_equal(p.regs_per_sm, o.regs_sm);
    assert_int_equal(p.regs_per_block, o.regs_block);
    assert_int_equal(p.smem_per_sm, o.smem_sm);
    assert_int_equal(p.smem_per_block_optin, o.smem_block);
    assert_int_equal(p.max_threads_per_block, CL_SIMT_MAX_BLOCK_THREADS);
    assert_int_equal(p.max_block[2], CL_SIMT_MAX_BLOCK_Z);
    assert_int_equal(p.smem_per_block_optin, CL_SIMT_MAX_SMEM);
    /* the occupancy model on the CPU backend reads that device, one SM per logical CPU */
    cl_occ_device b;
    const char *source = cl_occ_device_of(cl_cpu_backend(), 0, &b);
    assert_non_null(strstr(source, "one per logical CPU"));
    assert_int_equal(b.sms, p.sm_count);
    assert_int_equal(b.max_threads_sm, o.max_threads_sm);
    assert_int_equal(b.warp, p.warp_size);
}

/* A Turing GPU: the driver reserves no shared memory per block before sm_80. */
static int turing_props(int dev, cl_device_props *out, char *err)
{
    fake_props(0, out, err);
    out->cc_major = 7;
    out->cc_minor = 5;
    out->max_threads_per_sm = 1024;
    return 0;
}

static const cl_backend turing_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI,
    .device_count = fake_count, .device_props = turing_props, .versions = fake_versions,
};

/* A launch that ran (a sweep's --launch) meets the driver's reserve per block; the lecture's
 * exercises (%occupancy, cl_occ_device_of) leave it out. */
static void test_launched_device_reserves_smem(void **state)
{
    cl_occ_device d;
    assert_non_null(strstr(cl_occ_device_launched(&fake_backend, 0, &d), "an SM of this GPU"));
    assert_int_equal(d.smem_reserved, 1024);
    assert_int_equal(d.max_threads_sm, 2048);
    cl_occ_device_launched(&turing_backend, 0, &d);
    assert_int_equal(d.smem_reserved, 0);
    assert_int_equal(d.max_threads_sm, 1024);
    cl_occ_device_launched(cl_cpu_backend(), 0, &d);
    assert_int_equal(d.smem_reserved, CL_CPU_MODEL_SMEM_RESERVED);
    cl_occ_device_of(&fake_backend, 0, &d);
    assert_int_equal(d.smem_reserved, 0);
}

static void test_cpu_index_error(void **state)
{
    sink c;
    magic_ctx ctx;
    assert_int_equal(run_device(cl_cpu_backend(), NULL, "{\"index\": 1, \"brief\": false}", &c, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_string_equal(ctx.error.evalue, "--index 1: only 1 device (0..0)");
    sink_free(&c, &ctx);
}

static void test_cpu_props_bad_index(void **state)
{
    cl_device_props p;
    char err[CL_ERR_LEN] = "";
    assert_int_equal(cl_cpu_backend()->device_props(1, &p, err), -1);
    assert_true(strlen(err) > 0);
    assert_int_equal(cl_cpu_backend()->abi, CL_BACKEND_ABI);
}

/* ---- backend_select, one fresh process per case ---- */

/* Runs backend_select in a child with one environment variable set and
 * checks the backend's name and that the note starts with want. */
static void select_in_child(const char *var, const char *value, const char *want_name,
                            const char *want_note)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("CUDALAB_BACKEND");
        unsetenv("CUDALAB_CUDA_LIB");
        setenv(var, value, 1);
        char note[512], again[512];
        const cl_backend *b = backend_select(note, sizeof note);
        /* Cached: a changed environment does not change the choice. */
        setenv("CUDALAB_BACKEND", "cuda", 1);
        const cl_backend *b2 = backend_select(again, sizeof again);
        int ok = b && b == b2 && strcmp(note, again) == 0 && strcmp(b->name, want_name) == 0 &&
                 strncmp(note, want_note, strlen(want_note)) == 0;
        if (!ok)
            fprintf(stderr, "backend_select: %s=%s gave %s, \"%s\"\n", var, value,
                    b ? b->name : "NULL", note);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_select_forced_cpu(void **state)
{
    select_in_child("CUDALAB_BACKEND", "cpu", "cpu", "CPU backend forced by CUDALAB_BACKEND=cpu");
}

static void test_select_missing_library(void **state)
{
    select_in_child("CUDALAB_CUDA_LIB", "/nonexistent/libcudalab_cuda.so", "cpu",
                    "cannot load libcudalab_cuda.so: ");
}

static void test_select_library_without_symbol(void **state)
{
    select_in_child("CUDALAB_CUDA_LIB", "libm.so.6", "cpu",
                    "cannot load libcudalab_cuda.so: libm.so.6 has no cl_cuda_backend");
}

static void test_select_truncates_note(void **state)
{
    char note[8];
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CUDALAB_BACKEND", "cpu", 1);
        const cl_backend *b = backend_select(note, sizeof note);
        _exit(b && strcmp(note, "CPU bac") == 0 && backend_select(NULL, 0) == b ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_h100_document),
        cmocka_unit_test(test_unknowns_are_null),
        cmocka_unit_test(test_h100_view),
        cmocka_unit_test(test_brief_view),
        cmocka_unit_test(test_index_beyond_count),
        cmocka_unit_test(test_props_failure),
        cmocka_unit_test(test_no_backend),
        cmocka_unit_test(test_cpu_backend),
        cmocka_unit_test(test_cpu_index_error),
        cmocka_unit_test(test_cpu_props_bad_index),
        cmocka_unit_test(test_cpu_model_is_one_device),
        cmocka_unit_test(test_launched_device_reserves_smem),
        cmocka_unit_test(test_select_forced_cpu),
        cmocka_unit_test(test_select_missing_library),
        cmocka_unit_test(test_select_library_without_symbol),
        cmocka_unit_test(test_select_truncates_note),
    };
    return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
