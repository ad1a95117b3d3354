/* cudalab_simt.h — the CUDA execution model for the CPU runner: included by
 * the host C++ compiler before a student's kernel (kernel/student/host_build.c
 * writes the translation unit), it gives CUDA C's vocabulary a meaning on the
 * CPU: the built-in index variables, barriers, warp operations, atomics, the
 * vector types and the math functions a course uses. What NVRTC accepts is
 * what reaches here (NVRTC compiles the cell first), so this is the device
 * side of CUDA, not its host API.
 *
 * The runtime behind it is cpu/simt/runtime/. Barriers and warp operations
 * carry their cell line: a default argument __builtin_LINE() is the line of
 * the call (under the cell's #line). __shared__ declarations are rewritten
 * before compiling (kernel/student/shared_rewrite.c) into calls to
 * __cudalab_shared, so each array is placed, checked and named apart.
 *
 * The student's code follows this file and may #define any word (the lecture
 * writes `#define TILE_WIDTH 16`; a student writes `#define F 16` or
 * `#define a 1`). So nothing here expands, inside the student's code, to a
 * name of ours: CUDA's functions are functions, not macros, and the macros
 * left (assert, clock, the fast math intrinsics, the qualifiers) expand to
 * keywords, compiler builtins, CUDA's own names or themselves. Every other
 * name this file declares is reserved (__cudalab_…), and its helper macros
 * are #undef-ed at its end. (A -D on the %%kernel line comes before this
 * file, as nvcc's -D comes before CUDA's headers: it is the student's
 * business.)
 */
#ifndef __cudalab_simt_prelude_h
#define __cudalab_simt_prelude_h

#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 900
#define CUDALAB_CPU_RUNNER 1

/* no <stdint.h>: NVRTC has none, and a kernel may typedef uint64_t itself, as ours do */
#include <math.h>
#include <stddef.h>
#include <string.h>

extern "C" {
int printf(const char *, ...);
void *malloc(size_t);
void free(void *);
void __cudalab_syncthreads(int line);
int __cudalab_syncthreads_count(int pred, int line);
int __cudalab_syncthreads_and(int pred, int line);
int __cudalab_syncthreads_or(int pred, int line);
unsigned long long __cudalab_warp(int op, unsigned mask, unsigned long long value, int arg, int width, int line);
unsigned __cudalab_activemask(void);
void *__cudalab_shared(int id, unsigned elem, unsigned align, const char *name, int line, int ndims, ...);
void *__cudalab_dyn_shared(unsigned elem, unsigned align, const char *name, int line);
void __cudalab_shared_bind(int id, void *placed);
void __cudalab_trap(int line) __attribute__((noreturn));
void __cudalab_assert_fail(const char *expr, int line) __attribute__((noreturn));
long long __cudalab_clock(void);
}

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __constant__ static
#define __forceinline__ inline __attribute__((__always_inline__))
#define __noinline__ __attribute__((__noinline__))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((__aligned__(n)))
#define __grid_constant__
#define __managed__
/* A __shared__ the rewrite did not reach (made by a macro): say so at compile time, at the cell's line. */
#define __shared__ _Pragma("GCC error \"the CPU runner needs each __shared__ declaration written out in the kernel, not made by a macro\"")

/* ---- vector types ---- */
#define __cudalab_vec2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    static inline N##2 make_##N##2(T x, T y) { N##2 v = { x, y }; return v; }
#define __cudalab_vec3(T, N) struct N##3 { T x, y, z; }; \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 v = { x, y, z }; return v; }
#define __cudalab_vec4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 v = { x, y, z, w }; return v; }
#define __cudalab_vecs(T, N, A2, A4) __cudalab_vec2(T, N, A2) __cudalab_vec3(T, N) __cudalab_vec4(T, N, A4)
__cudalab_vecs(float, float, 8, 16)
__cudalab_vecs(int, int, 8, 16)
__cudalab_vecs(unsigned int, uint, 8, 16)
__cudalab_vecs(double, double, 16, 16)
__cudalab_vecs(char, char, 2, 4)
__cudalab_vecs(unsigned char, uchar, 2, 4)
__cudalab_vecs(short, short, 4, 8)
__cudalab_vecs(unsigned short, ushort, 4, 8)
__cudalab_vecs(long long, longlong, 16, 16)
__cudalab_vecs(unsigned long long, ulonglong, 16, 16)

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{ x, y, z }; }
};

/* The running thread's indices (the runtime sets them at every switch). */
extern "C" const uint3 threadIdx, blockIdx;
extern "C" const dim3 blockDim, gridDim;
#define warpSize 32

/* ---- __shared__: what kernel/student/shared_rewrite.c writes ----
 * At function scope a declaration becomes a reference to
 * "NAME"_cudalab_shared(ID, sizeof, alignof, LINE, NDIMS, DIMS...), the
 * runtime's placement of the array for the running block: the suffix of a
 * user-defined literal is part of the literal's token, where no macro of the
 * student's reaches it. At file scope NAME is #defined to
 * __cudalab_shared_slot_ID, a reference the runtime's slot holds; the entry
 * calls __cudalab_place_file_shared(0) before the kernel, which the rewrite
 * overloads (int) to bind each slot to this block's placement, and which is
 * this empty one when the source has no file-scope __shared__. */
struct __cudalab_shared_site {
    const char *__cudalab_name;
    void *operator()(int __cudalab_id, unsigned __cudalab_elem, unsigned __cudalab_align, int __cudalab_line,
                     int __cudalab_ndims, unsigned __cudalab_d0 = 0, unsigned __cudalab_d1 = 0,
                     unsigned __cudalab_d2 = 0, unsigned __cudalab_d3 = 0) const
    {
        return __cudalab_shared(__cudalab_id, __cudalab_elem, __cudalab_align, __cudalab_name, __cudalab_line,
                                __cudalab_ndims, __cudalab_d0, __cudalab_d1, __cudalab_d2, __cudalab_d3);
    }
};
struct __cudalab_dyn_shared_site {
    const char *__cudalab_name;
    void *operator()(unsigned __cudalab_elem, unsigned __cudalab_align, int __cudalab_line) const
    {
        return __cudalab_dyn_shared(__cudalab_elem, __cudalab_align, __cudalab_name, __cudalab_line);
    }
};
static inline __cudalab_shared_site operator""_cudalab_shared(const char *__cudalab_name, size_t)
{
    return { __cudalab_name };
}
static inline __cudalab_dyn_shared_site operator""_cudalab_dyn_shared(const char *__cudalab_name, size_t)
{
    return { __cudalab_name };
}
static inline void __cudalab_place_file_shared(...) {}

/* ---- barriers and warps: functions, whose last argument defaults to the line of the call ---- */
#define __cudalab_here int __cudalab_line = __builtin_LINE()
static __forceinline__ void __syncthreads(__cudalab_here) { __cudalab_syncthreads(__cudalab_line); }
static __forceinline__ int __syncthreads_count(int __cudalab_p, __cudalab_here)
{
    return __cudalab_syncthreads_count(__cudalab_p != 0, __cudalab_line);
}
static __forceinline__ int __syncthreads_and(int __cudalab_p, __cudalab_here)
{
    return __cudalab_syncthreads_and(__cudalab_p != 0, __cudalab_line);
}
static __forceinline__ int __syncthreads_or(int __cudalab_p, __cudalab_here)
{
    return __cudalab_syncthreads_or(__cudalab_p != 0, __cudalab_line);
}
static __forceinline__ void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static __forceinline__ void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static __forceinline__ void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static __forceinline__ void __nanosleep(unsigned) {}
__attribute__((__noreturn__)) static __forceinline__ void __trap(__cudalab_here) { __cudalab_trap(__cudalab_line); }
__attribute__((__noreturn__)) static __forceinline__ void __brkpt(__cudalab_here) { __cudalab_trap(__cudalab_line); }
/* assert(e): a function named assert, which the macro (needed for #e) calls by
 * its own name, the one name a macro never expands again */
#undef assert
static __forceinline__ void assert(bool __cudalab_ok, const char *__cudalab_expr, __cudalab_here)
{
    if (!__cudalab_ok)
        __cudalab_assert_fail(__cudalab_expr, __cudalab_line);
}
#define assert(e) assert((e), #e)
static __forceinline__ long long clock64(void) { return __cudalab_clock(); }
#define clock() ((long)clock64())       /* a macro: <time.h>'s clock() is declared already */
static __forceinline__ unsigned __activemask(void) { return __cudalab_activemask(); }

/* the runtime's warp operations (sched.c has the same list) */
enum { __cudalab_w_sync, __cudalab_w_shfl, __cudalab_w_shfl_up, __cudalab_w_shfl_down, __cudalab_w_shfl_xor,
       __cudalab_w_ballot, __cudalab_w_any, __cudalab_w_all, __cudalab_w_reduce_add };

template <class __cudalab_T>
static __forceinline__ __cudalab_T __cudalab_shfl(int __cudalab_op, unsigned __cudalab_mask, __cudalab_T __cudalab_v,
                                                  int __cudalab_arg, int __cudalab_width, int __cudalab_line)
{
    static_assert(sizeof(__cudalab_T) <= 8, "a warp shuffle moves at most 8 bytes");
    unsigned long long __cudalab_bits = 0;
    memcpy(&__cudalab_bits, &__cudalab_v, sizeof __cudalab_v);
    __cudalab_bits = __cudalab_warp(__cudalab_op, __cudalab_mask, __cudalab_bits, __cudalab_arg, __cudalab_width,
                                    __cudalab_line);
    __cudalab_T __cudalab_r;
    memcpy(&__cudalab_r, &__cudalab_bits, sizeof __cudalab_r);
    return __cudalab_r;
}
#define __cudalab_shfl_op(NAME, OP)                                                                                \
    template <class __cudalab_T>                                                                                   \
    static __forceinline__ __cudalab_T NAME(unsigned __cudalab_mask, __cudalab_T __cudalab_v, int __cudalab_arg,   \
                                            int __cudalab_width = 32, __cudalab_here)                              \
    {                                                                                                              \
        return __cudalab_shfl(OP, __cudalab_mask, __cudalab_v, __cudalab_arg, __cudalab_width, __cudalab_line);    \
    }
__cudalab_shfl_op(__shfl_sync, __cudalab_w_shfl)
__cudalab_shfl_op(__shfl_up_sync, __cudalab_w_shfl_up)
__cudalab_shfl_op(__shfl_down_sync, __cudalab_w_shfl_down)
__cudalab_shfl_op(__shfl_xor_sync, __cudalab_w_shfl_xor)
static __forceinline__ void __syncwarp(unsigned = 0xffffffffu, __cudalab_here)
{
    (void)__cudalab_warp(__cudalab_w_sync, 0xffffffffu, 0, 0, 32, __cudalab_line);
}
static __forceinline__ unsigned __ballot_sync(unsigned __cudalab_mask, int __cudalab_p, __cudalab_here)
{
    return (unsigned)__cudalab_warp(__cudalab_w_ballot, __cudalab_mask, __cudalab_p != 0, 0, 32, __cudalab_line);
}
static __forceinline__ int __any_sync(unsigned __cudalab_mask, int __cudalab_p, __cudalab_here)
{
    return (int)__cudalab_warp(__cudalab_w_any, __cudalab_mask, __cudalab_p != 0, 0, 32, __cudalab_line);
}
static __forceinline__ int __all_sync(unsigned __cudalab_mask, int __cudalab_p, __cudalab_here)
{
    return (int)__cudalab_warp(__cudalab_w_all, __cudalab_mask, __cudalab_p != 0, 0, 32, __cudalab_line);
}
static __forceinline__ unsigned __reduce_add_sync(unsigned __cudalab_mask, unsigned __cudalab_v, __cudalab_here)
{
    return (unsigned)__cudalab_warp(__cudalab_w_reduce_add, __cudalab_mask, __cudalab_v, 0, 32, __cudalab_line);
}

/* ---- atomics: the compiler's __atomic builtins, which the runtime checks and does ---- */
#define __cudalab_atomic_int(T)                                                                                    \
    static __forceinline__ T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }           \
    static __forceinline__ T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }           \
    static __forceinline__ T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }         \
    static __forceinline__ T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }           \
    static __forceinline__ T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }             \
    static __forceinline__ T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }           \
    static __forceinline__ T atomicCAS(T *p, T c, T v)                                                             \
    {                                                                                                              \
        __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                          \
        return c;                                                                                                  \
    }                                                                                                              \
    static __forceinline__ T atomicMin(T *p, T v)                                                                  \
    {                                                                                                              \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                              \
        while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))     \
            ;                                                                                                      \
        return old;                                                                                                \
    }                                                                                                              \
    static __forceinline__ T atomicMax(T *p, T v)                                                                  \
    {                                                                                                              \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                              \
        while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))     \
            ;                                                                                                      \
        return old;                                                                                                \
    }
__cudalab_atomic_int(int)
__cudalab_atomic_int(unsigned int)
__cudalab_atomic_int(unsigned long long)
__cudalab_atomic_int(long long)

static __forceinline__ unsigned atomicInc(unsigned *p, unsigned lim)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= lim ? 0 : old + 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return old;
}

static __forceinline__ unsigned atomicDec(unsigned *p, unsigned lim)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old == 0 || old > lim ? lim : old - 1, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
    return old;
}

/* floating point: a compare-and-swap loop on the bits */
#define __cudalab_atomic_fp(T, U, OP, NAME)                                                                        \
    static __forceinline__ T NAME(T *p, T v)                                                                       \
    {                                                                                                              \
        U *q = (U *)p;                                                                                             \
        U old = __atomic_load_n(q, __ATOMIC_RELAXED), next;                                                        \
        T o, n;                                                                                                    \
        do {                                                                                                       \
            memcpy(&o, &old, sizeof o);                                                                            \
            n = OP;                                                                                                \
            memcpy(&next, &n, sizeof next);                                                                        \
        } while (!__atomic_compare_exchange_n(q, &old, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));          \
        return o;                                                                                                  \
    }
__cudalab_atomic_fp(float, unsigned int, o + v, atomicAdd)
__cudalab_atomic_fp(double, unsigned long long, o + v, atomicAdd)
__cudalab_atomic_fp(float, unsigned int, v, atomicExch)
__cudalab_atomic_fp(float, unsigned int, (v < o ? v : o), atomicMin)
__cudalab_atomic_fp(float, unsigned int, (v > o ? v : o), atomicMax)
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd

/* ---- math and intrinsics ---- */
#define __cudalab_minmax(T)                                                                                        \
    static inline T min(T a, T b) { return a < b ? a : b; }                                                        \
    static inline T max(T a, T b) { return a > b ? a : b; }
__cudalab_minmax(int)
__cudalab_minmax(unsigned int)
__cudalab_minmax(long long)
__cudalab_minmax(unsigned long long)
__cudalab_minmax(long)
__cudalab_minmax(unsigned long)
__cudalab_minmax(float)
__cudalab_minmax(double)
static inline unsigned int min(int a, unsigned int b) { return min((unsigned)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned)b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned)a, b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned)b); }

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
/* glibc declares __expf and friends itself: macros, not functions, and to
 * the compiler's builtins, which no #define of the student's reaches */
#define __expf(x) __builtin_expf(x)
#define __exp10f(x) __builtin_powf(10.0f, (x))
#define __logf(x) __builtin_logf(x)
#define __log2f(x) __builtin_log2f(x)
#define __log10f(x) __builtin_log10f(x)
#define __sinf(x) __builtin_sinf(x)
#define __cosf(x) __builtin_cosf(x)
#define __tanf(x) __builtin_tanf(x)
#define __powf(x, y) __builtin_powf((x), (y))
#define __sincosf(x, s, c) (*(s) = __builtin_sinf(x), *(c) = __builtin_cosf(x), (void)0)
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
static inline float __uint_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline double __longlong_as_double(long long i) { double x; memcpy(&x, &i, 8); return x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int __sad(int a, int b, unsigned c) { return (a > b ? a - b : b - a) + (int)c; }
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __ldca(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
template <class T> static inline void __stcg(T *p, T v) { *p = v; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }

#undef __cudalab_vec2
#undef __cudalab_vec3
#undef __cudalab_vec4
#undef __cudalab_vecs
#undef __cudalab_atomic_int
#undef __cudalab_atomic_fp
#undef __cudalab_minmax
#undef __cudalab_shfl_op
#undef __cudalab_here

#endif
