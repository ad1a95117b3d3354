/* family.h — the contract every timed family declares once, on both sides of
 * the backend ABI: its variants.
 *
 * A family's header (matmul.h, reduce.h, histo.h, stencil.h, coalesce.h) has
 * one X-macro, CL_<FAMILY>_VARIANTS(X), with one row per variant:
 *
 *     X(id, "name", impl, "launch shape in words", "what it teaches", flags, block)
 *
 * and everything else is derived from it: the enum of ids (CL_VARIANT_ID), the
 * table both backends and the front-end read (CL_VARIANT_ROW), the --variant
 * choices, %help's variant table (and with it the schemas' lists of variants,
 * which the tests read from `%help FAMILY`), completion, and the list of
 * variants in an error.
 *
 * impl is the stem of the symbols that implement the variant: a backend whose
 * family dispatches through a table of one implementation per variant
 * (matmul: mm_gpu_<impl> in cuda/, cpu_mm_<impl> in cpu/; reduce: rd_gpu_,
 * cpu_rd_; histo: hg_gpu_, cpu_hg_; stencil: st_gpu_, cpu_st_) generates its table
 * and its declarations from the rows, as weak references (CL_VARIANT_WEAK_),
 * so a variant a backend lacks is NULL there and needs no entry. block is the
 * threads per block the variant runs with where --block is not given (0: the
 * family's default). Adding a variant = its row, its kernel in cuda/, its CPU
 * analogue in cpu/.
 *
 * Flags say which flags a variant honours, where it runs and what it is, so
 * that the framework (kernel/magic/families.c) can select and describe variants
 * without knowing the family. Bits from CL_V_FAMILY up are the family's own.
 */
#ifndef CUDALAB_FAMILY_H
#define CUDALAB_FAMILY_H

#ifdef __cplusplus
extern "C" {
#endif

/* cl_variant.flags */
#define CL_V_TILE    0x1u   /* honours --tile: TILE_WIDTH is a compile-time parameter, swept */
#define CL_V_BLOCK   0x2u   /* honours --block: threads per block */
#define CL_V_HOST    0x4u   /* the lecture's host loop: the CPU backend runs it whatever the
                               backend (it is the baseline, not an analogue) */
#define CL_V_LIBRARY 0x8u   /* a library call (cuBLAS, CUB); the CPU backend stands in with its reference */
#define CL_V_RUNTIME 0x10u  /* its code arrives at run time (a student's %%kernel): not in a backend's
                               table, registered with the framework (family_register) */
#define CL_V_BROKEN  0x20u  /* broken on purpose, for the debugging lecture (with CL_V_RUNTIME: shipped as
                               source, kernel/student/broken.c): left out of `all`; a wrong result is its
                               expected answer, reported without failing the cell */
#define CL_V_FAMILY  0x100u /* first bit a family may use for its own facts */

typedef struct cl_variant {
    const char *name;       /* what --variant says; NULL nowhere: tables have a known length */
    const char *launch;     /* the launch shape on a GPU, in words */
    const char *teaches;    /* what the variant shows, one sentence */
    unsigned flags;         /* CL_V_* */
} cl_variant;

/* Expanders for a family's X-macro. */
#define CL_VARIANT_ID(id, name, impl, launch, teaches, flags, block) id,
#define CL_VARIANT_ROW(id, name, impl, launch, teaches, flags, block) {name, launch, teaches, flags},
#define CL_VARIANT_NAME(id, name, impl, launch, teaches, flags, block) name,
#define CL_VARIANT_BLOCK(id, name, impl, launch, teaches, flags, block) block,

/* A backend's implementation of a row, declared weak: a variant this backend lacks is a NULL address
 * there (as CL_BACKEND_WEAK_ does for families), resolved when the backend is linked (hidden: nothing
 * loaded later can stand in). The backend's table lists &prefix##impl for every row in row order,
 * which is enum order, so it is indexed by id. */
#define CL_VARIANT_WEAK_(type, prefix, impl) \
    extern const type prefix##impl __attribute__((weak, visibility("hidden")));

#ifdef __cplusplus
}
#endif
#endif
