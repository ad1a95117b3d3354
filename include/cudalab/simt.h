/* simt.h — the CPU runner of the CUDA execution model: what the CPU backend
 * (cpu/simt/launch.c, the parent) and the runner process (cpu/simt/runtime/,
 * linked with a student's kernel into an executable of its own) share.
 *
 * The parent lays out one memory file (the arena): this header's
 * cl_simt_launch, then each buffer of the launch between gaps. The runner
 * maps it, runs the grid (blocks dealt to a few sandboxed processes, each
 * block's threads as fibers on one host thread), checks every load and store
 * of the student's code against the buffers, shared memory and the other
 * threads, and writes what it found into the header's report (and, for the
 * launch --counters adds, what it counted). Expected
 * results never enter the arena: the parent checks the output after the
 * runner has exited, so nothing the student's code does can forge a pass.
 *
 * Plain C types and fixed-size arrays only: both sides read it, and the runner
 * trusts nothing but offsets it checks against the arena's size.
 */
#ifndef CUDALAB_SIMT_H
#define CUDALAB_SIMT_H

#include <stdint.h>

#include "cudalab/cpu_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CL_SIMT_MAGIC 0x434c73696d74ull     /* "CLsimt" */
#define CL_SIMT_VERSION 4
#define CL_SIMT_MAX_BUFFERS 6
#define CL_SIMT_MAX_ARGS 12
#define CL_SIMT_NAME_LEN 24
#define CL_SIMT_TEXT_LEN 160

/* The limits of the CPU runner, stated in its refusals: its own (grid and
 * arena), and those of the device the CPU backend presents (cpu_model.h). */
#define CL_SIMT_MAX_THREADS (1ull << 24)        /* threads in a grid */
#define CL_SIMT_MAX_ARENA (1ull << 30)          /* bytes of buffers */
#define CL_SIMT_MAX_OBJECT (64 << 20)           /* bytes of a compiled kernel the runner loads */
#define CL_SIMT_MAX_BLOCK_THREADS CL_CPU_MODEL_MAX_THREADS_PER_BLOCK
#define CL_SIMT_MAX_BLOCK_Z CL_CPU_MODEL_MAX_BLOCK_Z
#define CL_SIMT_STATIC_SMEM CL_CPU_MODEL_SMEM_PER_BLOCK        /* static __shared__ per block */
#define CL_SIMT_MAX_SMEM CL_CPU_MODEL_SMEM_PER_BLOCK_OPTIN     /* static + dynamic per block */
/* Timed launches of a student's kernel, whatever --reps asks: each is a fresh
 * process running every access through the checks. */
#define CL_SIMT_MAX_REPS 3

/* Buffer flags. */
enum {
    CL_SIMT_IN = 1,             /* the kernel reads it (a write is reported) */
    CL_SIMT_OUT = 2,            /* the kernel writes it */
    CL_SIMT_ONE_WRITER = 4,     /* each element is written by one thread (C of a matmul) */
};

typedef struct cl_simt_buffer {
    char name[CL_SIMT_NAME_LEN];    /* as the family names it: "C", "bins" */
    uint64_t offset;                /* from the arena's start, page aligned */
    uint64_t bytes;
    uint32_t elem_bytes;            /* 4 for float and int */
    uint32_t flags;
    int64_t rows, cols;             /* elements as rows × cols in messages; rows 0: one index */
} cl_simt_buffer;

/* One kernel argument, in the contract's order. */
enum { CL_SIMT_ARG_BUFFER, CL_SIMT_ARG_I32, CL_SIMT_ARG_U64, CL_SIMT_ARG_F32 };
typedef struct cl_simt_arg {
    uint32_t kind;
    uint32_t buffer;                /* CL_SIMT_ARG_BUFFER: the buffer's index */
    union { int32_t i32; uint64_t u64; float f32; } v;
} cl_simt_arg;

/* What the runner can find, in the order a report lists them. */
#define CL_SIMT_FINDINGS(X)                                                                 \
    X(CL_SIMT_CRASH, "crash")                                                               \
    X(CL_SIMT_TRAP, "trap")                                                                 \
    X(CL_SIMT_ASSERT, "assert")                                                             \
    X(CL_SIMT_TIMEOUT, "timeout")                                                           \
    X(CL_SIMT_SYSCALL, "syscall")                                                           \
    X(CL_SIMT_OOB_GLOBAL, "out-of-bounds")                                                  \
    X(CL_SIMT_WILD, "wild-pointer")                                                         \
    X(CL_SIMT_WRITE_INPUT, "write-to-input")                                                \
    X(CL_SIMT_OOB_SHARED, "shared-out-of-bounds")                                           \
    X(CL_SIMT_DIVERGENT_BARRIER, "divergent-barrier")                                       \
    X(CL_SIMT_DEADLOCK, "deadlock")                                                         \
    X(CL_SIMT_RACE_SHARED, "shared-race")                                                   \
    X(CL_SIMT_RACE_GLOBAL, "global-race")                                                   \
    X(CL_SIMT_DOUBLE_WRITE, "double-write")                                                 \
    X(CL_SIMT_UNINIT_SHARED, "uninitialized-shared")

#define CL_SIMT_ID_(id, name) id,
enum cl_simt_kind { CL_SIMT_FINDINGS(CL_SIMT_ID_) CL_SIMT_NKINDS };

/* How an access touched memory. */
enum { CL_SIMT_READ = 1, CL_SIMT_WRITE = 2, CL_SIMT_ATOMIC = 4 };

/* A thread at a place in the student's code (pc: an address in the runner,
 * in the student's loaded object or the runtime, mapped to a cell line by the
 * parent through the object's code sections; 0 when unknown). */
typedef struct cl_simt_where {
    uint32_t block[3], thread[3];
    uint64_t pc;
    uint32_t access;                /* CL_SIMT_READ / WRITE / ATOMIC */
    uint32_t line;                  /* a line known without the pc (assert), else 0 */
} cl_simt_where;

/* The first finding of one kind (the one with the smallest key, so that the
 * report does not depend on how blocks were dealt to processes) and how many. */
typedef struct cl_simt_finding {
    uint64_t count;
    uint64_t key;                   /* block's linear index << 32 | detail; smallest wins */
    cl_simt_where at;               /* the access found wrong */
    cl_simt_where other;            /* the earlier access it conflicts with (races, double writes) */
    int32_t buffer;                 /* the global buffer, or -1 */
    int32_t pad_;
    int64_t elem;                   /* element index in the buffer or shared array (may be outside it) */
    int64_t value, expected;        /* counts (a barrier reached by value of expected threads) */
    char what[CL_SIMT_TEXT_LEN];    /* a shared array's name and shape, an assert's text, a signal */
} cl_simt_finding;

/* --counters on the CPU runner. What a counted launch (cl_simt_launch.count) did, summed over
 * the runner's processes: warp-wide requests as cpu/simt/runtime/count.c groups lanes' accesses
 * into them, and the distinct sectors of global memory read and written. The CPU backend turns
 * them into --counters' names (cpu/simt/counters.c); CL_SIMT_COUNTS_MODEL is the model in words,
 * for whoever reads the counts (the run's document and the view's note). */
#define CL_SIMT_SECTOR_BYTES 32     /* the unit global memory moves in (an L1/L2 sector) */
#define CL_SIMT_COUNTS_MODEL                                                                        \
    "counted on the CPU runner, not measured: the k-th access a lane makes at an instruction joins " \
    "its warp's k-th request there (until the warp's lanes meet at a barrier or warp operation); "  \
    "sectors/load: distinct 32-byte sectors per warp-wide global load; bank conflicts: per shared " \
    "load or store, the most distinct 4-byte words one of 32 banks holds, less the wavefronts the " \
    "words need at least (same word: a broadcast); warp eff: active lanes per warp-wide memory "    \
    "request (memory instructions only); DRAM: each 32-byte sector read or written once per launch " \
    "(an L2 as large as the data); no cache hit rates, occupancy or FLOPs"

typedef struct cl_simt_counts {
    uint64_t requests;              /* warp-wide memory requests: global, shared, atomic */
    uint64_t active_lanes;          /* lanes that took part in them */
    uint64_t global_loads;          /* warp-wide global loads (not atomics) */
    uint64_t global_load_sectors;   /* distinct 32-byte sectors they touched, each load's own */
    uint64_t shared_requests;       /* warp-wide shared loads and stores (not atomics) */
    uint64_t bank_conflicts;        /* their extra wavefronts (warp_bank_conflicts) */
    uint64_t read_sectors;          /* distinct sectors of the buffers read in the launch */
    uint64_t written_sectors;       /* and written (an atomic does both) */
    uint64_t uncounted;             /* accesses past the request table's bound: left out */
} cl_simt_counts;

/* What a counted launch saw for the lesson checks (kernel/magic/lesson.c): where each global
 * access went (by buffer, by instruction), how the block's threads diverged between barriers, and
 * how much of its shared memory they read. Summed (or maxed) over the runner's processes. */
#define CL_SIMT_MAX_SITES 32        /* global load and atomic instructions kept (the first ones flushed) */
#define CL_SIMT_MAX_STEPS 64        /* divergent steps counted per block (more: this many) */
typedef struct cl_simt_site {
    uint64_t pc;                    /* the instruction (0: a free slot) */
    int32_t buffer;                 /* the buffer its requests' first lanes reach (-1: none of them) */
    uint32_t atomic;                /* 1: an atomic operation's, 0: a load's */
    uint64_t requests, sectors;     /* warp-wide requests there, and their sectors */
} cl_simt_site;
typedef struct cl_simt_lesson {
    uint64_t loads[CL_SIMT_MAX_BUFFERS];    /* elements of each buffer the lanes loaded (not atomics):
                                               a float4 is 4, a memcpy of a row its length */
    uint64_t stores[CL_SIMT_MAX_BUFFERS];   /* and stored */
    uint64_t atomics[CL_SIMT_MAX_BUFFERS];  /* and updated atomically */
    cl_simt_site sites[CL_SIMT_MAX_SITES];
    uint64_t sites_left_out;                /* loads of instructions past the table */
    /* blocks by their divergent steps: steps ending at a __syncthreads() in which a warp made a
     * request with some but not all of the lanes live at the step's start */
    uint64_t divergent_blocks[CL_SIMT_MAX_STEPS + 1];
    uint64_t worst_block;                   /* the first block (linear) with the most of them */
    uint32_t worst_steps;
    uint32_t worst_line;                    /* the barrier ending its last divergent step */
    uint64_t worst_pc;                      /* that step's first request that left lanes idle */
    uint64_t shared_read_bytes;             /* the most distinct bytes of shared memory one block read */
    uint64_t lost_updates;                  /* plain stores (global or shared) that a lane of the same
                                               request overwrote at once: the updates a warp loses */
    uint64_t lost_pc;                       /* an instruction that lost some */
} cl_simt_lesson;

typedef struct cl_simt_report {
    volatile uint32_t lock;         /* a spin lock between the runner's processes */
    uint32_t done;                  /* the runner finished the grid (1); its time is the parent's to take */
    cl_simt_finding findings[CL_SIMT_NKINDS];
    cl_simt_counts counts;          /* a counted launch's (count = 1) */
    cl_simt_lesson lesson;          /* and what the lesson checks read */
} cl_simt_report;

typedef struct cl_simt_launch {
    uint64_t magic;
    uint32_t version;
    uint32_t procs;                 /* host processes to deal blocks to */
    uint64_t arena_bytes;           /* the whole memory file */
    uint32_t grid[3], block[3];
    uint64_t dyn_smem;              /* bytes of extern __shared__ per block */
    double limit_ms;                /* the runner stops itself past this (the parent kills at 2×) */
    uint64_t mem_limit;             /* bytes of address space per process */
    uint32_t count;                 /* 1: also count the launch's requests (--counters; slower) */
    uint32_t nbuffers, nargs;
    cl_simt_buffer buffers[CL_SIMT_MAX_BUFFERS];
    cl_simt_arg args[CL_SIMT_MAX_ARGS];
    volatile uint64_t next_block;   /* the next block to run (the processes take them in turn) */
    cl_simt_report report;
} cl_simt_launch;

/* A counted launch's lesson as the CPU backend keeps it for the worker (cpu/simt/counters.c;
 * kernel/magic/lesson.c reads it): the report's lesson, the cell line of each of its instructions,
 * and the launch's buffers (their names and shapes say its sizes). */
typedef struct cl_simt_lesson_taken {
    cl_simt_lesson lesson;
    uint32_t grid[3], block[3];     /* the counted launch's */
    int site_line[CL_SIMT_MAX_SITES];
    int worst_line, lost_line;      /* the cell lines of lesson.worst_pc and lesson.lost_pc (0: unknown) */
    uint32_t nbuffers;
    cl_simt_buffer buffers[CL_SIMT_MAX_BUFFERS];    /* names and shapes: the launch's sizes */
} cl_simt_lesson_taken;

/* On (1) around the lesson checks' run (kernel/student/lesson.c), with --counters: a student run's
 * one launch is the counted one, untimed (its time is not a timing), and its lesson is kept even
 * when the runner found something in it (a race's lost updates), beside the run's error. */
void cl_cpu_lesson_mode(int on);
/* The lesson of the current run's counted launch (the CPU backend under --counters): 0, or -1
 * when it made none that ran to its end (findings or not). */
int cl_cpu_lesson_taken(cl_simt_lesson_taken *out);

#ifdef __cplusplus
}
#endif
#endif
