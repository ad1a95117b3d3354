/* broken.c — the variants broken on purpose (broken.h): each family's table.
 *
 * A row's name is its kernel's (a C identifier, as a student's kernel name
 * is); its "teaches" says the bug and when it shows, for %help and the note
 * under the result. A "// BUG: ..." comment, one line, marks the bug for
 * --show-source; the %%kernel cell of --as-kernel, the student's exercise,
 * leaves it out. A kernel's parameters are its family contract's
 * (CL_<FAMILY>_STUDENT_PARAMS), the names its body uses.
 */
#include "student/broken.h"

#include "cudalab/histo.h"
#include "cudalab/matmul.h"
#include "cudalab/vecadd.h"

#define BROKEN_FLAGS (CL_V_RUNTIME | CL_V_BROKEN)

const family_broken broken_matmul[] = {
    {{"missing_sync", "TILE x TILE blocks, 2 shared tiles, one __syncthreads() per phase",
      "the tiled kernel without its second __syncthreads(): a warp that finishes a phase overwrites the "
      "tiles while other warps of its block still read them. A race: the result is wrong only when the "
      "warps drift apart, which an H100 often does not do at these sizes",
      BROKEN_FLAGS | CL_V_TILE | CL_V_BLOCK},
     "#ifndef TILE\n"
     "#define TILE 16\n"
     "#endif\n"
     "__global__ void missing_sync(" CL_MATMUL_STUDENT_PARAMS ")\n"
     "{\n"
     "    __shared__ float As[TILE][TILE];\n"
     "    __shared__ float Bs[TILE][TILE];\n"
     "    int tx = threadIdx.x, ty = threadIdx.y;\n"
     "    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;\n"
     "    float sum = 0.0f;\n"
     "    for (int ph = 0; ph < (K + TILE - 1) / TILE; ph++) {\n"
     "        As[ty][tx] = row < M && ph * TILE + tx < K ? A[row * K + ph * TILE + tx] : 0.0f;\n"
     "        Bs[ty][tx] = ph * TILE + ty < K && col < N ? B[(ph * TILE + ty) * N + col] : 0.0f;\n"
     "        __syncthreads();\n"
     "        for (int i = 0; i < TILE; i++)\n"
     "            sum += As[ty][i] * Bs[i][tx];\n"
     "        // BUG: no __syncthreads() here: the next phase overwrites As and Bs while other warps read them\n"
     "    }\n"
     "    if (row < M && col < N)\n"
     "        C[row * N + col] = sum;\n"
     "}\n",
     (const char *const[]){"check", NULL}},
    {{NULL, NULL, NULL, 0}, NULL, NULL},
};

const family_broken broken_histo[] = {
    {{"lost_update", "grid-stride threads, 1 shared histogram per block, ++ on its bins",
      "the privatized histogram counting into its shared bins with ++ instead of atomicAdd: a read, an "
      "add and a write, so two threads that count into one bin at once both read the old count and one "
      "update is lost. It counts the lecture's letter bins, as students' histogram kernels do",
      BROKEN_FLAGS | CL_V_BLOCK},
     "__global__ void lost_update(" CL_HISTO_STUDENT_PARAMS ")\n"
     "{\n"
     "    __shared__ unsigned int bins[7];\n"
     "    if (threadIdx.x < 7)\n"
     "        bins[threadIdx.x] = 0;\n"
     "    __syncthreads();\n"
     "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
     "         i += (long long)gridDim.x * blockDim.x) {\n"
     "        int c = data[i] | 0x20;\n"
     "        if (c >= 'a' && c <= 'z')\n"
     "            bins[(c - 'a') / 4]++;  // BUG: not atomic (the fix: atomicAdd(&bins[(c - 'a') / 4], 1u))\n"
     "    }\n"
     "    __syncthreads();\n"
     "    if (threadIdx.x < 7)\n"
     "        atomicAdd(&histo[threadIdx.x], bins[threadIdx.x]);\n"
     "}\n",
     (const char *const[]){"check", "bins", NULL}},
    {{NULL, NULL, NULL, 0}, NULL, NULL},
};

const family_broken broken_vecadd[] = {
    {{"off_by_one", "one thread per element, bound i <= n",
      "the bound check written i <= n: thread n reads A[n] and B[n] and writes C[n], one past the end of "
      "each array. It exists only when n is not a multiple of the block, so the bug shows at some sizes "
      "(--size 1000003) and hides at others (--size 1048576)",
      BROKEN_FLAGS | CL_V_BLOCK},
     "__global__ void off_by_one(" CL_VECADD_STUDENT_PARAMS ")\n"
     "{\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i <= n)  // BUG: one past the end (the fix: i < n)\n"
     "        C[i] = A[i] + B[i];\n"
     "}\n",
     (const char *const[]){NULL}},
    {{NULL, NULL, NULL, 0}, NULL, NULL},
};
