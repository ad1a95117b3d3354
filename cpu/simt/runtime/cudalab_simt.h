/* cudalab_simt.h — the CUDA execution model for the CPU runner: included by
 * the host C++ compiler before a student's kernel (kernel/student/host_build.c
 * writes the translation unit), it gives CUDA C's vocabulary a meaning on the
 * CPU: the built-in index variables, barriers, warp operations, atomics, the
 * vector types and the math functions a course uses. What NVRTC accepts is
 * what reaches here (NVRTC compiles the cell first), so this is the device
 * side of CUDA, not its host API.
 *
 * The runtime behind it is cpu/simt/runtime/. Barriers and warp operations
 * are macros so that each call carries its cell line (__LINE__ under the
 * cell's #line). __shared__ declarations are rewritten before compiling into
 * calls to __cudalab_shared, so each array is placed, checked and named apart.
 */
#ifndef CUDALAB_SIMT_PRELUDE_H
#define CUDALAB_SIMT_PRELUDE_H

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
void __cudalab_trap(int line) __attribute__((noreturn));
void __cudalab_assert_fail(const char *expr, int line) __attribute__((noreturn));
long long __cudalab_clock(void);
}

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __constant__ static
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define __managed__
/* A __shared__ the rewrite did not reach (made by a macro): say so at compile time, at the cell's line. */
#define __shared__ _Pragma("GCC error \"the CPU runner needs each __shared__ declaration written out in the kernel, not made by a macro\"")

/* ---- vector types ---- */
#define CL_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    static inline N##2 make_##N##2(T x, T y) { N##2 v = { x, y }; return v; }
#define CL_VEC3(T, N) struct N##3 { T x, y, z; }; \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 v = { x, y, z }; return v; }
#define CL_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 v = { x, y, z, w }; return v; }
#define CL_VECS(T, N, A2, A4) CL_VEC2(T, N, A2) CL_VEC3(T, N) CL_VEC4(T, N, A4)
CL_VECS(float, float, 8, 16)
CL_VECS(int, int, 8, 16)
CL_VECS(unsigned int, uint, 8, 16)
CL_VECS(double, double, 16, 16)
CL_VECS(char, char, 2, 4)
CL_VECS(unsigned char, uchar, 2, 4)
CL_VECS(short, short, 4, 8)
CL_VECS(unsigned short, ushort, 4, 8)
CL_VECS(long long, longlong, 16, 16)
CL_VECS(unsigned long long, ulonglong, 16, 16)

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

/* ---- barriers and warps ---- */
#define __syncthreads() __cudalab_syncthreads(__LINE__)
#define __syncthreads_count(p) __cudalab_syncthreads_count((p) != 0, __LINE__)
#define __syncthreads_and(p) __cudalab_syncthreads_and((p) != 0, __LINE__)
#define __syncthreads_or(p) __cudalab_syncthreads_or((p) != 0, __LINE__)
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_system() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __nanosleep(ns) ((void)(ns))
#define __trap() __cudalab_trap(__LINE__)
#define __brkpt() __cudalab_trap(__LINE__)
#undef assert
#define assert(e) ((e) ? (void)0 : __cudalab_assert_fail(#e, __LINE__))
#define clock() ((long)__cudalab_clock())
#define clock64() __cudalab_clock()
#define __activemask() __cudalab_activemask()

enum { CL_W_SYNC, CL_W_SHFL, CL_W_SHFL_UP, CL_W_SHFL_DOWN, CL_W_SHFL_XOR, CL_W_BALLOT, CL_W_ANY, CL_W_ALL,
       CL_W_REDUCE_ADD };

template <class T> static inline T cl_shfl(int op, int line, unsigned mask, T v, int arg, int width = 32)
{
    static_assert(sizeof(T) <= 8, "a warp shuffle moves at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = __cudalab_warp(op, mask, bits, arg, width, line);
    T r;
    memcpy(&r, &bits, sizeof r);
    return r;
}
#define __shfl_sync(m, v, l, ...) cl_shfl(CL_W_SHFL, __LINE__, (m), (v), (l), ##__VA_ARGS__)
#define __shfl_up_sync(m, v, d, ...) cl_shfl(CL_W_SHFL_UP, __LINE__, (m), (v), (d), ##__VA_ARGS__)
#define __shfl_down_sync(m, v, d, ...) cl_shfl(CL_W_SHFL_DOWN, __LINE__, (m), (v), (d), ##__VA_ARGS__)
#define __shfl_xor_sync(m, v, x, ...) cl_shfl(CL_W_SHFL_XOR, __LINE__, (m), (v), (x), ##__VA_ARGS__)
#define __syncwarp(...) ((void)__cudalab_warp(CL_W_SYNC, 0xffffffffu, 0, 0, 32, __LINE__))
#define __ballot_sync(m, p) ((unsigned)__cudalab_warp(CL_W_BALLOT, (m), (p) != 0, 0, 32, __LINE__))
#define __any_sync(m, p) ((int)__cudalab_warp(CL_W_ANY, (m), (p) != 0, 0, 32, __LINE__))
#define __all_sync(m, p) ((int)__cudalab_warp(CL_W_ALL, (m), (p) != 0, 0, 32, __LINE__))
#define __reduce_add_sync(m, v) ((unsigned)__cudalab_warp(CL_W_REDUCE_ADD, (m), (unsigned)(v), 0, 32, __LINE__))

/* ---- atomics: the compiler's __atomic builtins, which the runtime checks and does ---- */
#define CL_ATOMIC_INT(T)                                                                                   \
    static __forceinline__ T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }  \
    static __forceinline__ T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }  \
    static __forceinline__ T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); } \
    static __forceinline__ T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }  \
    static __forceinline__ T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }    \
    static __forceinline__ T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }  \
    static __forceinline__ T atomicCAS(T *p, T c, T v)                                                     \
    {                                                                                                      \
        __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                  \
        return c;                                                                                          \
    }                                                                                                      \
    static __forceinline__ T atomicMin(T *p, T v)                                                          \
    {                                                                                                      \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                      \
        while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                              \
        return old;                                                                                        \
    }                                                                                                      \
    static __forceinline__ T atomicMax(T *p, T v)                                                          \
    {                                                                                                      \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                      \
        while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                              \
        return old;                                                                                        \
    }
CL_ATOMIC_INT(int)
CL_ATOMIC_INT(unsigned int)
CL_ATOMIC_INT(unsigned long long)
CL_ATOMIC_INT(long long)

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
#define CL_ATOMIC_FP(T, U, OP, NAME)                                                                       \
    static __forceinline__ T NAME(T *p, T v)                                                               \
    {                                                                                                      \
        U *q = (U *)p;                                                                                     \
        U old = __atomic_load_n(q, __ATOMIC_RELAXED), next;                                                \
        T o, n;                                                                                            \
        do {                                                                                               \
            memcpy(&o, &old, sizeof o);                                                                    \
            n = OP;                                                                                        \
            memcpy(&next, &n, sizeof next);                                                                \
        } while (!__atomic_compare_exchange_n(q, &old, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));  \
        return o;                                                                                          \
    }
CL_ATOMIC_FP(float, unsigned int, o + v, atomicAdd)
CL_ATOMIC_FP(double, unsigned long long, o + v, atomicAdd)
CL_ATOMIC_FP(float, unsigned int, v, atomicExch)
CL_ATOMIC_FP(float, unsigned int, (v < o ? v : o), atomicMin)
CL_ATOMIC_FP(float, unsigned int, (v > o ? v : o), atomicMax)
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd

/* ---- math and intrinsics ---- */
#define CL_MINMAX(T)                                                                                       \
    static inline T min(T a, T b) { return a < b ? a : b; }                                                \
    static inline T max(T a, T b) { return a > b ? a : b; }
CL_MINMAX(int)
CL_MINMAX(unsigned int)
CL_MINMAX(long long)
CL_MINMAX(unsigned long long)
CL_MINMAX(long)
CL_MINMAX(unsigned long)
CL_MINMAX(float)
CL_MINMAX(double)
static inline unsigned int min(int a, unsigned int b) { return min((unsigned)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned)b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned)a, b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned)b); }

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
/* glibc declares __expf and friends itself: macros, not functions */
#define __expf(x) expf(x)
#define __exp10f(x) powf(10.0f, (x))
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf((x), (y))
#define __sincosf(x, s, c) (*(s) = sinf(x), *(c) = cosf(x), (void)0)
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

#endif
