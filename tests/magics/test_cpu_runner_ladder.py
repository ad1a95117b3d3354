"""The GPU code of the %matmul ladder, checked without a GPU: the kernels of cuda/matmul_*.cu (the very
text between their show-source markers) become %%kernel cells, one template instance each, and run on
the CPU runner, which checks every shared and global access of every thread for races and bounds and
checks C, at sizes whose rows are 16-byte aligned (the float4 paths) and sizes whose are not (the
scalar paths), with partial tiles and 1×1×1. async's cp.async copies are replaced by the copies they
make, synchronously: the test covers its swizzled layout, its stages and its slices, not the asm.
The tensor-core kernels (WMMA) have no CPU form. Needs NVRTC (the gate) and g++, as the CPU runner's
tests (test_cpu_runner_matmul.py) do: without NVRTC they skip, saying so."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import builtin_variants, cell, compiled

ROOT = Path(__file__).resolve().parents[2]
CPU = {"CUDALAB_BACKEND": "cpu"}

# float4 and friends are CUDA's built-ins under NVRTC; the CPU runner's prelude has none
SHIM = """#ifndef __CUDACC_RTC__
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
static inline float4 make_float4(float x, float y, float z, float w) { float4 v = {x, y, z, w}; return v; }
#endif
"""
# cp.async, as what it does: the same copies, made at once
SYNC_COPIES = """__device__ __forceinline__ void mm_cp_async4(float *dst, const float *__restrict__ M, int rows, int cols,
                                             int row, int col, bool vec)
{
    for (int e = 0; e < 4; e++)
        dst[e] = row < rows && col + e < cols ? M[(size_t)row * cols + col + e] : 0.0f;
}
__device__ __forceinline__ void mm_cp_async1(float *dst, const float *__restrict__ M, int rows, int cols,
                                             int row, int col)
{
    *dst = row < rows && col < cols ? M[(size_t)row * cols + col] : 0.0f;
}
__device__ __forceinline__ void mm_cp_async16_in(float *dst, const float *src)
{
    for (int e = 0; e < 4; e++)
        dst[e] = src[e];
}
__device__ __forceinline__ void mm_cp_async_commit() {}
template <int N> __device__ __forceinline__ void mm_cp_async_wait() {}
"""


def regions(path: str, variant: str) -> list[str]:
    text = (ROOT / path).read_text()
    return [m.group(2) for m in re.finditer(r"/\* show-source: matmul (\S+) \*/\n(.*?)/\* show-source: end \*/",
                                            text, re.S) if variant in m.group(1).split(",")]


def device_helpers(variant: str) -> str:
    """The helpers of matmul_device.h that variant shows, but the cp.async ones (SYNC_COPIES stands in)."""
    return "".join(r for r in regions("cuda/matmul_device.h", variant) if "cp.async" not in r)


def instance(source: str, template: str, constants: str, name: str) -> str:
    """source with the kernel's template head (template line, launch bounds and name) replaced by
    constants and a plain __global__ function called name."""
    assert template in source, template
    return source.replace(template, f"{constants}\n__global__ void {name}(")


def kernels() -> dict[str, tuple[str, int, int, int]]:
    """name: (the cell's code after its %%kernel line, block tile (rows, columns), threads, dynamic shared
    memory), for each rung the kernel under test has (a row of matmul.h, with its kernel file)."""
    rungs = set(builtin_variants("matmul"))
    helpers = "".join(regions("cuda/matmul_device.h", "fast"))
    out = {}
    for v, (bm, bk, tm, tn) in {"reg1d": (64, 8, 8, 1), "reg2d": (128, 8, 8, 8)}.items():
        if v not in rungs:
            continue
        head = ("template <int BM, int BN, int BK, int TM>\n__global__ void __launch_bounds__(BM * BN / TM)\n"
                "mm_reg1d_kernel(" if v == "reg1d" else
                "template <int BM, int BN, int BK, int TM, int TN>\n__global__ void __launch_bounds__(BM * BN / "
                "(TM * TN))\nmm_reg2d_kernel(")
        src = "".join(regions("cuda/matmul_regblock.cu", v))
        out[v] = (instance(src, head, f"constexpr int BM = {bm}, BN = {bm}, BK = {bk}, TM = {tm}, TN = {tn};",
                           "my" + v), (bm, bm), bm * bm // (tm * tn), 0)
    if "vec4" in rungs:
        src = "".join(regions("cuda/matmul_regblock.cu", "vec4"))
        out["vec4"] = (helpers + instance(src, "template <int BM, int BN, int BK>\n__global__ void __launch_bounds__"
                                          "(BM * BN / 64)\nmm_vec4_kernel(", "constexpr int BM = 128, BN = 128, BK = 8;",
                                          "myvec4"), (128, 128), 256, 0)
    if "warptile" in rungs:
        src = "".join(regions("cuda/matmul_warptile.cu", "warptile"))
        src = instance(src, "template <int BM, int BN, int BK, int WM, int WN>\n__global__ void __launch_bounds__"
                       "(mm_warptile_shape<BM, BN, BK, WM, WN>::THREADS, 2)\nmm_warptile_kernel(",
                       "constexpr int BM = 128, BN = 128, BK = 16, WM = 32, WN = 64;", "mywarptile")
        out["warptile"] = (helpers + src.replace("mm_warptile_shape<BM, BN, BK, WM, WN> S;",
                                                 "mm_warptile_shape<128, 128, 16, 32, 64> S;"), (128, 128), 256, 0)
    if "swizzle" in rungs:
        fast = "".join(regions("cuda/matmul_fast.cu", "fast"))
        shape = fast[:fast.index("template <int BM, int BN, int BK>\n__global__")]
        src = instance("".join(regions("cuda/matmul_fast.cu", "swizzle")),
                       "template <int BM, int BN, int BK>\n__global__ void __launch_bounds__(mm_fast_shape<BM, BN, BK>"
                       "::THREADS, mm_fast_shape<BM, BN, BK>::MIN_BLOCKS)\nmm_swizzle_kernel(",
                       "constexpr int BM = 128, BN = 128, BK = 8;", "myswizzle")
        out["swizzle"] = (helpers + shape + src.replace("mm_fast_shape<BM, BN, BK> S;",
                                                        "mm_fast_shape<128, 128, 8> S;"), (128, 128), 256, 0)
    if rungs & {"async", "async64"}:
        common, kernel = regions("cuda/matmul_async.cu", "async")
        kernel = kernel[kernel.index("/* STAGES slices"):]
    for v, (bm, wm, wn) in {"async": (128, 32, 64), "async64": (64, 32, 32)}.items():
        if v not in rungs:
            continue
        src = instance(kernel, "template <class S, int STAGES>\n__global__ void __launch_bounds__(S::THREADS, "
                       "S::MIN_BLOCKS)\nmm_async_kernel(",
                       f"typedef mm_async_shape<{bm}, {bm}, 16, {wm}, {wn}> S;\nconstexpr int STAGES = 4;", "my" + v)
        out[v] = (device_helpers("async") + common + SYNC_COPIES + src, (bm, bm),
                  32 * (bm // wm) * (bm // wn), 4 * 16 * 2 * bm * 4)
    if "wide" in rungs:
        # wide: 128×256 tiles, its EDGES instance (the sizes below are partial tiles but one)
        src = instance("".join(regions("cuda/matmul_wide.cu", "wide")),
                       "template <bool EDGES>\n__global__ void __launch_bounds__(MMWD_THREADS, 1)\nmm_wide_kernel(",
                       "constexpr bool EDGES = true;", "mywide")
        # its helpers: async's (matmul_wide.cu says `like async`)
        out["wide"] = (device_helpers("async") + SYNC_COPIES + src, (128, 256), 256, 2 * 32 * (132 + 256) * 4)
    return out


KERNELS = kernels()


@pytest.fixture
def kernel(start_kernel):
    """On the CPU backend, even where a GPU is."""
    return start_kernel(env=CPU)


@pytest.mark.parametrize("variant", sorted(KERNELS))
def test_ladder_kernel_on_the_cpu_runner(kernel, variant):
    _, kc = kernel
    code, (tile_m, tile_n), threads, smem = KERNELS[variant]
    grid = f"{-(-33 // tile_n)}x{-(-67 // tile_m)}"     # the quick check's 67×33×129
    head = f"%%kernel --for matmul --name my{variant} --grid {grid} --block {threads}" + (f" --smem {smem}" if smem else "")
    c, text, doc = compiled(kc, f"{head}\n{SHIM}{code}")
    assert c["status"] == "ok", text
    assert "no race" in text, text
    for m, n, k in [(128, 256, 64), (130, 132, 36), (200, 70, 50), (1, 1, 1)]:
        c, text, doc = cell(kc, f"%matmul --m {m} --n {n} --k {k} --variant my{variant} --grid "
                                f"{-(-n // tile_n)}x{-(-m // tile_m)} --block {threads} --reps 1 --warmup 0")
        assert c["status"] == "ok", (m, n, k, text)
        run = doc["runs"][0]
        assert run["variant"] == f"my{variant}" and run["backend"] == "cpu"
        assert run["check"]["passed"] is True, (m, n, k, run["check"])
