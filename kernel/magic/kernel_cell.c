/* kernel_cell.c — --as-kernel: a lecture variant's code (show_source_text,
 * the very text nvcc compiles) made into a %%kernel cell a student can run and
 * edit, in the student signature of its family.
 *
 * The taught code is kept as it is; only its kernel's declaration changes:
 *   - its name becomes my<variant>, `static` goes;
 *   - its parameter list becomes the family's student signature, with the
 *     names the body already uses (so nothing in the body changes);
 *   - a template line before it goes, its parameters bound right before the
 *     kernel (a TILE becomes `#ifndef TILE / #define TILE 16 / #endif`);
 * plus what NVRTC lacks (<stdint.h>'s types, CL_HD) and what the harness
 * cannot pass in the signature (the histogram's bins, the reduction's
 * operation, the strided copy's row count). Regions with a part (2D kernels,
 * __constant__ weights, the contiguous copy beside the strided one) are left
 * out. Only the lecture variants have a form here; for the others the
 * answer is why not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/show_source.h"

typedef struct kernel_form {
    const char *family, *variant;
    const char *entry;              /* the taught kernel that becomes the student's */
    const char *params;             /* the student signature, named as the taught body names them */
    const char *prelude;            /* lines before the taught code, or NULL */
    const char *bind;               /* lines right before the kernel (template parameters), or NULL */
    const char *flags;              /* %%kernel flags beyond --for and --name, or NULL */
} kernel_form;

#define MATMUL_PARAMS "const float *A, const float *B, float *C, int m, int n, int k"
#define REDUCE_PRELUDE                                                                               \
    "// the operation cudalab's kernels take as a template parameter (rop in\n"                     \
    "// cuda/reduce_device.h), here a float sum\n"                                                  \
    "struct sum_float {\n"                                                                           \
    "    typedef float in_t;\n"                                                                      \
    "    typedef float acc_t;\n"                                                                     \
    "    static __device__ float identity() { return 0.0f; }\n"                                    \
    "    static __device__ float apply(float a, float b) { return a + b; }\n"                      \
    "};\n"
#define HISTO_PARAMS "const uint8_t *in, long long n, unsigned *hist"
#define HISTO_PRELUDE                                                                                \
    "// the bins: HISTO_MODE 1 counts letters a-z in bins of HISTO_WIDTH letters, as a\n"         \
    "// student's %histo kernel does (0 would count bytes, 256 bins)\n"                            \
    "#ifndef HISTO_MODE\n#define HISTO_MODE 1\n#endif\n#ifndef HISTO_WIDTH\n#define HISTO_WIDTH 4\n#endif\n"
#define HISTO_BIND "constexpr int mode = HISTO_MODE, width = HISTO_WIDTH;\n"
#define STENCIL_PARAMS "const float *__restrict__ in, float *__restrict__ out, const float *c_weights, int n, int R"
/* The strided copy's template index type bound to 64 bits, and m, which ours is passed, made from n and s. */
#define COALESCE_BIND                                                                                \
    "// I: the index type (cudalab's copy uses 32 bits where the view fits in 2^32)\n"             \
    "typedef unsigned long long I;\n"                                                               \
    "// m: the rows of the n/s view (cudalab's copy is passed it)\n"                               \
    "#define m ((n + s - 1) / s)\n"

static const kernel_form forms[] = {
    {"matmul", "naive", "mm_naive_kernel", MATMUL_PARAMS, NULL, NULL, NULL},
    {"matmul", "tiled", "mm_tiled_kernel", MATMUL_PARAMS, "#ifndef TILE\n#define TILE 16\n#endif\n", NULL, NULL},
    {"vecadd", "add", "vecadd_add",
     "const float *__restrict__ x, const float *__restrict__ y, float *__restrict__ z, int n", NULL, NULL, NULL},
    {"reduce", "divergent", "reduce_tree_kernel", "const float *in, float *out, int n", REDUCE_PRELUDE,
     "typedef sum_float Op;\nconstexpr int TREE = TREE_DIVERGENT;\n", "--smem 4096"},
    {"reduce", "convergent", "reduce_tree_kernel", "const float *in, float *out, int n", REDUCE_PRELUDE,
     "typedef sum_float Op;\nconstexpr int TREE = TREE_CONVERGENT;\n", "--smem 4096"},
    {"histo", "sectioned", "histo_sectioned", HISTO_PARAMS, HISTO_PRELUDE, HISTO_BIND, NULL},
    {"histo", "interleaved", "histo_interleaved", HISTO_PARAMS, HISTO_PRELUDE, HISTO_BIND, NULL},
    {"histo", "privatized", "histo_privatized", HISTO_PARAMS, HISTO_PRELUDE,
     HISTO_BIND "#define nbins cl_histo_nbins(mode, width)\n", "--smem 1024"},
    {"stencil", "naive", "stencil1d_naive", STENCIL_PARAMS, NULL, NULL, NULL},
    {"stencil", "tiled", "stencil1d_tiled", STENCIL_PARAMS, NULL, NULL, NULL},
    {"coalesce", "stride", "coalesce_copy_strided",
     "const float *__restrict__ in, float *__restrict__ out, unsigned long long n, unsigned long long s", NULL,
     COALESCE_BIND, NULL},
};

/* What NVRTC does not have and the taught code uses. */
static const struct { const char *word, *line; } missing[] = {
    {"uint8_t", "typedef unsigned char uint8_t;\n"},
    {"uint32_t", "typedef unsigned int uint32_t;\n"},
    {"uint64_t", "typedef unsigned long long uint64_t;\n"},
    {"CL_HD", "#define CL_HD __device__ __forceinline__\n"},
};

static const kernel_form *form_of(const char *family, const char *variant)
{
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (strcmp(forms[i].family, family) == 0 && strcmp(forms[i].variant, variant) == 0)
            return &forms[i];
    return NULL;
}

/* The variant's regions without a part, as one text. New string or NULL. */
static char *cell_code(const char *family, const char *variant)
{
    size_t n;
    const show_region *r = show_source_regions(&n);
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].family, family) == 0 && strcmp(r[i].variant, variant) == 0 && !*r[i].part) {
            fprintf(f, "%s%s", any ? "\n" : "", r[i].text);
            any = 1;
        }
    if (fclose(f) != 0 || !any) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The first whole-word `name(` in s, or NULL. */
static const char *find_call(const char *s, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(s, name); p; p = strstr(p + 1, name))
        if ((p == s || !ident_char(p[-1])) && p[n] == '(')
            return p;
    return NULL;
}

static const char *line_start(const char *base, const char *p)
{
    while (p > base && p[-1] != '\n')
        p--;
    return p;
}

/* Writes code with its kernel's declaration rewritten (see the top); -1 when
 * the kernel is not where the form says. */
static int write_kernel(FILE *f, const kernel_form *k, const char *code, const char *name)
{
    const char *at = find_call(code, k->entry), *global = NULL;
    for (const char *p = code; at && (p = strstr(p, "__global__")) && p < at; p++)
        global = p;                 /* the last __global__ before the name: its declaration */
    if (!at || !global)
        return -1;
    const char *decl = line_start(code, global), *cut = decl;
    const char *prev = decl > code ? line_start(code, decl - 1) : NULL;
    if (prev && strncmp(prev, "template <", 10) == 0)
        cut = prev;                 /* the template line goes: its parameters are bound */
    const char *open = at + strlen(k->entry), *close = open;
    for (int depth = 0; *close; close++) {
        depth += *close == '(' ? 1 : *close == ')' ? -1 : 0;
        if (depth == 0)
            break;
    }
    if (*close != ')')
        return -1;
    fwrite(code, 1, (size_t)(cut - code), f);
    if (k->bind)
        fputs(k->bind, f);
    /* the declaration up to the name, without `static` */
    for (const char *p = decl; p < at;) {
        if (strncmp(p, "static ", 7) == 0 && (p == decl || !ident_char(p[-1]))) {
            p += 7;
            continue;
        }
        fputc(*p++, f);
    }
    fprintf(f, "%s(%s)", name, k->params);
    fputs(close + 1, f);
    return 0;
}

char *show_source_kernel_cell(const char *family, const char *variant, char *why, size_t len)
{
    const kernel_form *k = form_of(family, variant);
    if (!k) {
        snprintf(why, len, "%s has no student-signature form (only the lecture's kernels have one: "
                 "matmul naive and tiled, vecadd add, reduce divergent and convergent, histo "
                 "sectioned, interleaved and privatized, stencil naive and tiled, coalesce stride)", variant);
        return NULL;
    }
    char *code = cell_code(family, variant);
    const char *file = NULL;
    char *shown = show_source_text(family, variant, &file);
    free(shown);
    if (!code) {
        snprintf(why, len, "no source of %s is recorded in this build", variant);
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof name, "my%s", variant);
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) {
        free(code);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    fprintf(f, "%%%%kernel --for %s --name %s%s%s\n", family, name, k->flags ? " " : "", k->flags ? k->flags : "");
    fprintf(f, "// cudalab's %s kernel (%s) in the student signature of %%%s\n", variant, file, family);
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (strstr(code, missing[i].word))
            fputs(missing[i].line, f);
    if (k->prelude)
        fputs(k->prelude, f);
    fputc('\n', f);
    int rc = write_kernel(f, k, code, name);
    free(code);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        snprintf(why, len, "the kernel %s of %s is not where its form says", k->entry, variant);
        return NULL;
    }
    return buf;
}
