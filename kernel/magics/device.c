/* device.c — the %device magic: what the hardware is, in the lectures' terms.
 *
 * The document carries raw numbers in fixed units (bytes, MHz, GB/s = 1e9 B/s,
 * GFLOP/s), with null for whatever the backend could not tell; notebooks and
 * autograders read it. The view carries the same numbers in human units and
 * shows how the two peaks are derived, since students compute them by hand.
 * With no usable GPU it describes the CPU backend that runs instead and why.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/cpu_model.h"
#include "cudalab/host.h"
#include "magic/magic.h"
#include "render/render.h"

#define MAX_DEVICES 64

static const flag_spec device_flags[] = {
    {.name = "index", .type = FLAG_INT, .def = NULL, .imin = 0, .imax = MAX_DEVICES - 1,
     .help = "show only device N (default: every device)"},
    {.name = "brief", .type = FLAG_BOOL, .def = "false",
     .help = "one line per device: name, compute capability, SMs, memory"},
    {.name = NULL},
};

/* ---- derived numbers ---- */


static int khz_to_mhz(int khz)
{
    return (khz + 500) / 1000;
}

static const char *family_name(int major, int minor)
{
    switch (major) {
    case 3:  return "Kepler";
    case 5:  return "Maxwell";
    case 6:  return "Pascal";
    case 7:  return minor >= 5 ? "Turing" : "Volta";
    case 8:  return minor == 9 ? "Ada Lovelace" : "Ampere";
    case 9:  return "Hopper";
    case 10: case 11: case 12: return "Blackwell";
    default: return NULL;
    }
}

/* ---- the document ---- */

/* Zero is "unknown" in the backend ABI, and null in the document. */
static json_t *known(long long v)
{
    return v > 0 ? json_integer(v) : json_null();
}

static json_t *known_real(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

/* jansson refuses text that is not UTF-8; null beats a missing key. */
static json_t *known_str(const char *s)
{
    json_t *v = s && s[0] ? json_string(s) : NULL;
    return v ? v : json_null();
}

static json_t *dims_json(const int d[3])
{
    if (d[0] <= 0 && d[1] <= 0 && d[2] <= 0)
        return json_null();
    return json_pack("[o,o,o]", known(d[0]), known(d[1]), known(d[2]));
}

/* "13.0" from CUDA's 1000*major + 10*minor encoding; null when unknown. */
static json_t *version_json(int v)
{
    if (v <= 0)
        return json_null();
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d", v / 1000, v % 1000 / 10);
    return json_string(buf);
}

static json_t *cc_json(const cl_device_props *p)
{
    if (p->cc_major <= 0)
        return json_null();
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d", p->cc_major, p->cc_minor);
    return json_string(buf);
}

/* is_gpu: ECC off and zero copy engines are facts on a GPU, unknowns on the CPU. */
static json_t *device_doc(const cl_device_props *p, const cl_versions *v, bool is_gpu)
{
    json_t *d = json_object();
    json_object_set_new(d, "index", json_integer(p->index));
    json_object_set_new(d, "name", known_str(p->name));
    json_object_set_new(d, "cc", cc_json(p));
    json_object_set_new(d, "arch", known_str(v->arch));
    json_object_set_new(d, "sms", known(p->sm_count));
    json_object_set_new(d, "cores_per_sm", known(p->cores_per_sm));
    json_object_set_new(d, "cuda_cores", known((long long)p->sm_count * p->cores_per_sm));
    json_object_set_new(d, "clock_mhz", known(khz_to_mhz(p->clock_khz)));
    json_object_set_new(d, "mem_clock_mhz", known(khz_to_mhz(p->mem_clock_khz)));
    json_object_set_new(d, "mem_bus_width_bits", known(p->mem_bus_width_bits));
    json_object_set_new(d, "mem_total_bytes", known((long long)p->total_mem));
    json_object_set_new(d, "mem_free_bytes", known((long long)p->free_mem));
    json_object_set_new(d, "l2_bytes", known(p->l2_bytes));
    json_object_set_new(d, "smem_per_block_bytes", known((long long)p->smem_per_block));
    json_object_set_new(d, "smem_per_block_optin_bytes", known((long long)p->smem_per_block_optin));
    json_object_set_new(d, "smem_per_sm_bytes", known((long long)p->smem_per_sm));
    json_object_set_new(d, "regs_per_block", known(p->regs_per_block));
    json_object_set_new(d, "regs_per_sm", known(p->regs_per_sm));
    json_object_set_new(d, "max_threads_per_block", known(p->max_threads_per_block));
    json_object_set_new(d, "max_threads_per_sm", known(p->max_threads_per_sm));
    json_object_set_new(d, "max_blocks_per_sm", known(p->max_blocks_per_sm));
    json_object_set_new(d, "warp_size", known(p->warp_size));
    json_object_set_new(d, "max_block_dims", dims_json(p->max_block));
    json_object_set_new(d, "max_grid_dims", dims_json(p->max_grid));
    json_object_set_new(d, "max_warps_per_sm",
                        known(p->warp_size > 0 ? p->max_threads_per_sm / p->warp_size : 0));
    json_object_set_new(d, "async_engines", is_gpu ? json_integer(p->async_engines) : json_null());
    json_object_set_new(d, "ecc", is_gpu ? json_boolean(p->ecc) : json_null());
    json_object_set_new(d, "pci_bus_id", known_str(p->pci_bus_id));
    json_object_set_new(d, "peak_fp32_gflops", known_real(magic_peak_fp32_gflops(p)));
    json_object_set_new(d, "peak_bandwidth_gbs", known_real(magic_peak_bandwidth_gbs(p)));
    return d;
}

/* ---- the view ---- */

/* "79.2 GiB", "48 KiB": binary units, one decimal unless exact. */
static void fmt_bytes(uint64_t b, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    uint64_t scale = 1;
    while (u < 4 && b >= scale * 1024) {
        scale *= 1024;
        u++;
    }
    if (b % scale == 0)
        snprintf(buf, len, "%" PRIu64 " %s", b / scale, units[u]);
    else
        snprintf(buf, len, "%.1f %s", (double)b / (double)scale, units[u]);
}

/* Rates: whole numbers from 100 up, one decimal below (a CPU's few GFLOP/s). */
static void fmt_rate(double v, const char *unit, char *buf, size_t len)
{
    snprintf(buf, len, v >= 100 ? "%.0f %s" : "%.1f %s", v, unit);
}

static void row(json_t *table, const char *property, const char *value)
{
    view_table_row(table, json_pack("[s,s]", property, value));
}

static void rowf(json_t *table, const char *property, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rowf(json_t *table, const char *property, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *value = json_vsprintf(fmt, ap);
    va_end(ap);
    view_table_row(table, json_pack("[s,o]", property, value ? value : json_string("")));
}

static void memory_rows(json_t *t, const cl_device_props *p)
{
    char a[32], b[32];
    if (p->total_mem) {
        fmt_bytes(p->total_mem, a, sizeof a);
        fmt_bytes(p->free_mem, b, sizeof b);
        rowf(t, "global memory", p->free_mem ? "%s (%s free)" : "%s", a, b);
    }
    if (p->mem_clock_khz)
        rowf(t, "memory clock", "%d MHz", khz_to_mhz(p->mem_clock_khz));
    if (p->mem_bus_width_bits)
        rowf(t, "memory bus", "%d bit", p->mem_bus_width_bits);
    if (p->l2_bytes) {
        fmt_bytes((uint64_t)p->l2_bytes, a, sizeof a);
        row(t, "L2 cache", a);
    }
    if (p->smem_per_block) {
        fmt_bytes(p->smem_per_block, a, sizeof a);
        fmt_bytes(p->smem_per_block_optin, b, sizeof b);
        rowf(t, "shared memory per block",
             p->smem_per_block_optin > p->smem_per_block ? "%s (%s opt-in)" : "%s", a, b);
    }
    if (p->smem_per_sm) {
        fmt_bytes(p->smem_per_sm, a, sizeof a);
        row(t, "shared memory per SM", a);
    }
}

static void limit_rows(json_t *t, const cl_device_props *p)
{
    if (p->regs_per_block)
        rowf(t, "registers per block", "%d", p->regs_per_block);
    if (p->regs_per_sm)
        rowf(t, "registers per SM", "%d", p->regs_per_sm);
    if (p->warp_size)
        rowf(t, "warp size", "%d", p->warp_size);
    if (p->max_threads_per_block)
        rowf(t, "threads per block", "%d", p->max_threads_per_block);
    if (p->max_threads_per_sm && p->warp_size)
        rowf(t, "threads per SM", "%d (%d warps)", p->max_threads_per_sm,
             p->max_threads_per_sm / p->warp_size);
    if (p->max_blocks_per_sm)
        rowf(t, "blocks per SM", "%d", p->max_blocks_per_sm);
    if (p->max_block[0])
        rowf(t, "max block", "%d × %d × %d", p->max_block[0], p->max_block[1], p->max_block[2]);
    if (p->max_grid[0])
        rowf(t, "max grid", "%d × %d × %d", p->max_grid[0], p->max_grid[1], p->max_grid[2]);
}

static void peak_rows(json_t *t, const cl_device_props *p, bool is_gpu)
{
    char v[64];
    double flops = magic_peak_fp32_gflops(p), bw = magic_peak_bandwidth_gbs(p);
    if (flops > 0 && is_gpu) {
        fmt_rate(flops, "GFLOP/s", v, sizeof v);
        rowf(t, "peak FP32", "%s (2 × %lld cores × %d MHz)", v, (long long)p->sm_count * p->cores_per_sm,
             khz_to_mhz(p->clock_khz));
    } else if (flops > 0) {         /* the host: its lanes as the CPU backend counts them (host.h) */
        cl_cpu_fp32_rate rate;
        char how[200];
        cl_cpu_fp32_rate_read(&rate);
        cl_cpu_fp32_rate_text(&rate, how, sizeof how);
        fmt_rate(flops, "GFLOP/s", v, sizeof v);
        rowf(t, "peak FP32", "%s (2 (multiply + add) × %d logical CPUs × %d MHz × %s)", v, p->sm_count,
             khz_to_mhz(p->clock_khz), how);
    }
    if (bw > 0) {
        fmt_rate(bw, "GB/s", v, sizeof v);
        rowf(t, "peak bandwidth", "%s (2 × %d MHz × %d bit / 8)", v,
             khz_to_mhz(p->mem_clock_khz), p->mem_bus_width_bits);
    }
}

static void device_table(json_t *view, const cl_device_props *p, const cl_versions *v, bool is_gpu)
{
    char title[300];
    snprintf(title, sizeof title, "%s %d: %s", is_gpu ? "Device" : "Host", p->index, p->name);
    json_t *t = view_add_table(view, title, json_pack("[s,s]", "property", "value"));

    const char *family = family_name(p->cc_major, p->cc_minor);
    if (p->cc_major > 0)
        rowf(t, "compute capability", family ? "%d.%d (%s)" : "%d.%d", p->cc_major, p->cc_minor,
             family);
    if (v->arch[0])
        row(t, "code", v->arch);
    if (p->pci_bus_id[0])
        row(t, "PCI bus", p->pci_bus_id);
    if (p->sm_count)
        rowf(t, is_gpu ? "SMs" : "logical CPUs", "%d", p->sm_count);
    if (is_gpu && p->cores_per_sm)
        rowf(t, "FP32 cores", "%lld (%d per SM)", (long long)p->sm_count * p->cores_per_sm,
             p->cores_per_sm);
    if (p->clock_khz)
        rowf(t, is_gpu ? "SM clock" : "clock", "%d MHz", khz_to_mhz(p->clock_khz));
    memory_rows(t, p);
    limit_rows(t, p);
    if (is_gpu) {
        rowf(t, "async copy engines", "%d", p->async_engines);
        row(t, "ECC", p->ecc ? "on" : "off");
    }
    peak_rows(t, p, is_gpu);
}

static void brief_row(json_t *table, const cl_device_props *p)
{
    char cc[16] = "", mem[32] = "";
    if (p->cc_major > 0)
        snprintf(cc, sizeof cc, "%d.%d", p->cc_major, p->cc_minor);
    if (p->total_mem)
        fmt_bytes(p->total_mem, mem, sizeof mem);
    view_table_row(table, json_pack("[i,s,o,i,o]", p->index, p->name,
                                    cc[0] ? json_string(cc) : json_null(), p->sm_count,
                                    mem[0] ? json_string(mem) : json_null()));
}

static json_t *view_start(const magic_ctx *ctx, int count, bool is_gpu)
{
    char title[64];
    if (is_gpu)
        snprintf(title, sizeof title, "CUDA devices (%d)", count);
    else
        snprintf(title, sizeof title, "No CUDA device — CPU backend");
    json_t *view = view_new(title);
    if (!is_gpu) {
        if (ctx->dev.note && ctx->dev.note[0])
            view_add_note(view, ctx->dev.note);
        view_add_note(view, "every magic runs its CPU analogue: host threads stand in for "
                            "CUDA threads; results are still checked");
        view_add_note(view, "the device below is the CPU device model every magic uses without a GPU: "
                            "one " CL_CPU_MODEL_SM_NAME " per logical CPU, with the host's clock and memory");
    }
    return view;
}

/* How the host's kernels share each GPU now (magic_ctx.sharing), as a table. */
static void sharing_table(json_t *view, const json_t *sharing)
{
    json_t *t = view_add_table(view, "Sharing the GPUs with the host's other kernels (admission)",
                               json_pack("[s,s,s,s,s]", "device", "CUDA contexts held", "waiting for a context",
                                         "waiting for a timed turn", "this kernel"));
    size_t i;
    json_t *g;
    json_array_foreach(sharing, i, g) {
        char held[48];
        snprintf(held, sizeof held, "%d of %d", (int)json_integer_value(json_object_get(g, "held")),
                 (int)json_integer_value(json_object_get(g, "contexts")));
        view_table_row(t, json_pack("[O,s,O,O,s]", json_object_get(g, "device"), held,
                                    json_object_get(g, "waiting_for_context"), json_object_get(g, "waiting_for_turn"),
                                    json_is_true(json_object_get(g, "this_kernel")) ? "holds one" : "—"));
    }
}

/* ---- run ---- */

/* %device only asks: it never waits for a slot (magic_spec.needs_device), and a
 * device not in use by this kernel shows what can be known without its context. */
static bool device_needs_none(const json_t *params)
{
    (void)params;
    return false;
}

static int device_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const cl_backend *be = ctx->backend;
    if (!be)
        return magic_error(ctx, "RuntimeError", "%%device runs in the device worker: no backend here");
    bool is_gpu = strcmp(be->name, "cpu") != 0;

    char err[CL_ERR_LEN] = "";
    int count = 0;
    if (be->device_count(&count, err) != 0)
        return magic_error(ctx, magic_backend_ename(be), "%s", err);

    const json_t *jindex = json_object_get(params, "index");
    bool one = json_is_integer(jindex);
    int first = one ? (int)json_integer_value(jindex) : 0;
    if (one && (first < 0 || first >= count))
        return magic_error(ctx, "UsageError", "--index %d: only %d device%s (0..%d)", first, count,
                           count == 1 ? "" : "s", count - 1);
    int last = one ? first : count - 1;
    bool brief = json_is_true(json_object_get(params, "brief"));

    json_t *devices = json_array();
    json_t *view = view_start(ctx, count, is_gpu);
    json_t *brief_table = brief ? view_add_table(view, NULL,
        json_pack("[s,s,s,s,s]", "device", "name", "cc", is_gpu ? "SMs" : "CPUs", "memory")) : NULL;
    cl_versions ver;
    memset(&ver, 0, sizeof ver);
    for (int i = first; i <= last; i++) {
        cl_device_props p;
        if (be->device_props(i, &p, err) != 0 || be->versions(i, &ver, err) != 0) {
            json_decref(devices);
            json_decref(view);
            return magic_error(ctx, magic_backend_ename(be), "device %d: %s", i, err);
        }
        p.index = i;
        json_array_append_new(devices, device_doc(&p, &ver, is_gpu));
        if (brief)
            brief_row(brief_table, &p);
        else
            device_table(view, &p, &ver, is_gpu);
    }

    /* The versions of the last device queried: driver and runtime are per process. */
    json_t *doc = json_object();
    json_object_set_new(doc, "magic", json_string("device"));
    json_object_set_new(doc, "backend", json_string(be->name));
    json_object_set_new(doc, "backend_note", known_str(ctx->dev.note));
    json_object_set_new(doc, "driver_version", version_json(ver.driver));
    json_object_set_new(doc, "runtime_version", version_json(ver.runtime));
    json_object_set_new(doc, "count", json_integer(count));
    json_object_set_new(doc, "devices", devices);
    json_t *sharing = ctx->share.sharing ? ctx->share.sharing() : NULL;
    if (sharing)
        sharing_table(view, sharing);
    json_object_set_new(doc, "sharing", sharing ? sharing : json_null());
    magic_result(ctx, doc, view);
    return 0;
}

static const char *const device_examples[] = {
    "%device",
    "%device --brief",
    "%device --index 0",
    NULL,
};

const magic_spec magic_device = {
    .name = "device",
    .summary = "Show every CUDA device's properties, or the CPU backend that runs instead",
    .description =
        "Shows each CUDA device as the lectures use it: compute capability, SMs and FP32 "
        "cores, clocks, memory size and bus, L2 and shared memory, register and thread "
        "limits, and which code runs on it (the SASS built for it, or PTX the driver "
        "JIT-compiled).\n\n"
        "It also derives the two peaks a roofline needs: FP32 GFLOP/s = 2 x cores x SM "
        "clock (one FMA per core per cycle) and bandwidth GB/s = 2 x memory clock x bus "
        "width / 8 (DDR).\n\n"
        "With no usable GPU it shows the CPU backend that runs every magic instead, and why "
        "CUDA could not be used. The result document uses bytes, MHz, GB/s and GFLOP/s, "
        "with null for what the backend cannot tell.",
    .flags = device_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = device_run,
    .needs_device = device_needs_none,
    .examples = device_examples,
};
