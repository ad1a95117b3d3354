"""The lesson checks (check.lesson.<name> {value, expected, passed, line, why}) of students' kernels on
the CPU backend, read as a student's self-check reads them: %assert on the %%kernel cell's result
(kernel[name=X]) and on the family magic's (matmul[variant=X]). For every family that has them, the
lesson's kernel passes and the one it teaches against fails, naming its line; kernels that try to
look like the lesson's (a volatile __shared__ decoy, loads through pointer aliases) are measured by
what they do. The kernels are tests/lesson_kernels.py's; tests/gpu/test_lesson_checks_gpu.py runs the
same on a GPU. Skipped with the reason where NVRTC is missing."""
from __future__ import annotations

import jsonschema
import pytest

import lesson_kernels as K
from conftest import execute, failed, load_schema, quiet_ok

CPU = {"CUDALAB_BACKEND": "cpu"}
RESULT = "application/vnd.cudalab.result+json"


def result(msgs: list[dict]) -> dict:
    for m in reversed(msgs):
        if m["msg_type"] in ("execute_result", "display_data") and RESULT in m["content"].get("data", {}):
            return m["content"]["data"][RESULT]
    raise AssertionError("no result document")


@pytest.fixture
def kc(start_kernel):
    _, client, *_ = start_kernel(env=CPU)
    reply, _ = execute(client, "%%kernel --for vecadd --name probe\n"
                               "__global__ void probe(const float *A, const float *B, float *C, int n) {}\n")
    if reply["content"]["status"] != "ok" and "NVRTC" in reply["content"].get("evalue", ""):
        pytest.skip(f"no NVRTC here: {reply['content']['evalue']}")
    return client


def valid(check: dict) -> dict:
    """check, validated against tests/schemas/check.schema.json (as the families' schemas hold it)."""
    schema = load_schema("matmul")
    jsonschema.validate(check, {"$defs": schema["$defs"], "$ref": "#/$defs/check_doc"})
    return check


def define(kc, cell: str) -> dict:
    """The %%kernel cell's check (its quick check passed)."""
    return valid(result(quiet_ok(kc, cell, timeout=120))["check"])


def assert_ok(kc, *asserts: str) -> None:
    quiet_ok(kc, "\n".join(f"%assert {a}" for a in asserts))


def assert_fails(kc, expression: str) -> None:
    c, _ = failed(kc, f"%assert {expression}")
    assert c["ename"] == "AssertionError", c


def test_matmul_tiled_against_naive(kc):
    tiled, naive = define(kc, K.matmul_tiled()), define(kc, K.matmul_naive())
    assert set(tiled["lesson"]) == {"global_loads_per_fma", "load_sectors_per_request", "shared_bytes_used"}
    # 67×33×129 with 16×16 tiles: A is loaded once per column of blocks (3), B once per row of them (5)
    want = 3 / 33 + 5 / 67
    loads = tiled["lesson"]["global_loads_per_fma"]
    assert loads["expected"] == pytest.approx(want) and loads["value"] == pytest.approx(want)
    assert loads["passed"] and loads["why"] is None
    assert naive["lesson"]["global_loads_per_fma"]["value"] == pytest.approx(2.0)
    assert naive["lesson"]["global_loads_per_fma"]["line"] == 8      # sum += A[...] * B[...]
    assert tiled["lesson"]["shared_bytes_used"]["value"] == 2 * 16 * 16 * 4
    assert_ok(kc, "kernel[name=mytiled].check.lesson.global_loads_per_fma.passed",
              "kernel[name=mytiled].check.lesson.shared_bytes_used.passed",
              "kernel[name=mytiled].check.lesson.load_sectors_per_request.passed",
              "not kernel[name=mynaive].check.lesson.global_loads_per_fma.passed",
              "not kernel[name=mynaive].check.lesson.shared_bytes_used.passed")
    # the family's runs of the kernels carry the same lesson, at any size (measured at the quick check's)
    quiet_ok(kc, "%matmul --size 48 --variant mytiled,mynaive --reps 1", timeout=120)
    assert_ok(kc, "matmul[variant=mytiled].check.lesson.global_loads_per_fma.passed",
              "matmul[variant=mynaive].check.lesson.global_loads_per_fma.value == 2")
    assert_fails(kc, "matmul[variant=mynaive].check.lesson.global_loads_per_fma.passed")


def test_matmul_uncoalesced_tile_load_names_its_line(kc):
    lesson = define(kc, K.matmul_uncoalesced())["lesson"]
    sectors = lesson["load_sectors_per_request"]
    assert not sectors["passed"] and sectors["value"] > 8 and sectors["line"] == K.UNCOALESCED_LINE
    assert sectors["why"].startswith(f"line {K.UNCOALESCED_LINE} reads B ")
    assert lesson["global_loads_per_fma"]["passed"] and lesson["shared_bytes_used"]["passed"]   # tiled all the same
    assert_ok(kc, f"kernel[name=mycolumns].check.lesson.load_sectors_per_request.line == {K.UNCOALESCED_LINE}")


def test_matmul_decoys_are_measured_by_what_they_do(kc):
    """A naive product with a volatile __shared__ float read by every thread (ptxas: static_smem 4),
    one whose loads go through pointers that are not A and B, and one that copies A's row with
    memcpy: none is tiled."""
    decoy = define(kc, K.matmul_decoy())["lesson"]
    assert decoy["shared_bytes_used"]["value"] == 4 and not decoy["shared_bytes_used"]["passed"]
    assert not decoy["global_loads_per_fma"]["passed"]
    alias = define(kc, K.matmul_alias())["lesson"]
    assert alias["global_loads_per_fma"]["value"] == pytest.approx(2.0)
    assert not alias["global_loads_per_fma"]["passed"]
    copied = define(kc, K.matmul_memcpy())["lesson"]          # a memcpy of 16 floats is 16 loads
    assert copied["global_loads_per_fma"]["value"] == pytest.approx(2.0)
    assert not copied["global_loads_per_fma"]["passed"]


def test_histo_privatised_against_global_atomics(kc):
    private, interleaved = define(kc, K.histo_private()), define(kc, K.histo_global())
    atomics = private["lesson"]["global_atomics_per_byte"]
    assert atomics["passed"] and atomics["value"] == pytest.approx(atomics["expected"])
    worse = interleaved["lesson"]["global_atomics_per_byte"]
    assert not worse["passed"] and worse["value"] > 100 * worse["expected"] and worse["line"] == 6
    assert private["lesson"]["lost_updates"] == {"value": 0, "expected": 0, "passed": True, "line": None,
                                                 "why": None}
    assert_ok(kc, "kernel[name=myprivate].check.lesson.global_atomics_per_byte.passed",
              "not kernel[name=myinterleaved].check.lesson.global_atomics_per_byte.passed")


def test_histo_lost_update_fails_and_counts_what_a_warp_loses(kc):
    c, msgs = failed(kc, K.histo_racy())
    assert c["ename"] == "KernelError" and "data race on global memory" in c["evalue"]
    check = valid(result(msgs)["check"])
    assert check["tools"]["cpu-runner"]["status"] == "failed"
    lost = check["lesson"]["lost_updates"]
    assert not lost["passed"] and lost["value"] > 0 and lost["line"] == 6
    assert lost["why"].startswith("line 6 loses ") and "atomicAdd" in lost["why"]
    assert_ok(kc, "kernel[name=myracy].check.lesson.lost_updates.value > 0")


def test_reduce_divergent_against_convergent(kc):
    convergent, divergent = define(kc, K.reduce_convergent()), define(kc, K.reduce_divergent())
    assert convergent["lesson"]["divergent_steps"]["value"] == 5 and convergent["lesson"]["divergent_steps"]["passed"]
    steps = divergent["lesson"]["divergent_steps"]
    assert steps["value"] == 8 and not steps["passed"]          # log2(256): every stride leaves lanes idle
    assert steps["line"] == K.DIVERGENT_ADD_LINE and steps["why"].startswith(f"line {K.DIVERGENT_ADD_LINE} ")
    assert_ok(kc, "kernel[name=myconvergent].check.lesson.divergent_steps.passed",
              "kernel[name=mydivergent].check.lesson.divergent_steps.value > 5")


@pytest.mark.parametrize("tiled, naive, halo", [
    (K.stencil_tiled, K.stencil_naive, 1 + 2 * 5 / 256),        # --radius 5, blocks of 256
    (K.stencil_tiled_2d, K.stencil_naive_2d, (16 + 4) ** 2 / 16 ** 2),      # gauss5: r = 2, 16×16 tiles
])
def test_stencil_tiled_against_naive(kc, tiled, naive, halo):
    good, bad = define(kc, tiled())["lesson"], define(kc, naive())["lesson"]
    loads = good["global_loads_per_output"]
    assert loads["passed"] and loads["value"] <= loads["expected"] * 1.0001
    assert loads["expected"] == pytest.approx(halo, rel=0.05)       # clipped at the array's edges
    worse = bad["global_loads_per_output"]
    assert not worse["passed"] and worse["value"] > 5 * worse["expected"] and worse["line"]
    assert worse["why"].startswith(f"line {worse['line']} reads in ")


def test_coalesced_against_strided_copy(kc):
    good, bad = define(kc, K.copy_coalesced())["lesson"], define(kc, K.copy_strided())["lesson"]
    assert good["load_sectors_per_request"]["passed"] and good["load_sectors_per_request"]["value"] <= 4
    sectors = bad["load_sectors_per_request"]
    assert not sectors["passed"] and sectors["value"] > 20 and sectors["line"] == K.STRIDED_LINE
    assert_ok(kc, "not kernel[name=mystrided].check.lesson.load_sectors_per_request.passed")


def test_no_cpu_check_leaves_the_lesson_out(kc):
    check = define(kc, K.matmul_naive().replace("--name mynaive", "--name mynaive --no-cpu-check"))
    assert "lesson" not in check
    quiet_ok(kc, "%matmul --size 48 --variant mynaive --reps 1", timeout=120)
    c, _ = failed(kc, "%assert matmul[variant=mynaive].check.lesson.global_loads_per_fma.passed")
    assert c["ename"] == "LookupError", c


def test_families_without_lessons_have_none(kc):
    from kernels import vecadd
    check = define(kc, "%%kernel --for vecadd --name myadd\n" + vecadd("myadd"))
    assert "lesson" not in check and check["passed"]


def test_a_short_memcpy_is_checked_and_counted(kc):
    """A memcpy of a bounded length is a call the runner checks, not loads the compiler inlined past
    the checks: past the end of A it is found, as any load."""
    c, _ = failed(kc, """%%kernel --for vecadd --name shortcopy
__global__ void shortcopy(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x[4];
    int len = n - i < 4 ? n - i : 4;
    if (i < n) { memcpy(x, &A[i + 200000], len * sizeof(float)); C[i] = x[0] + B[i]; }
}
""")
    assert c["ename"] == "KernelError" and "read A[200000] at line 6, past the end of A" in c["evalue"], c


def test_a_define_with_spaces_and_flags_stays_one_define(kc):
    """-D's text reaches the lesson run as one quoted value: a define with spaces works, and one that
    carries flags (an attempt to run the lesson at another size) is only a define, never the run's flags."""
    define(kc, K.matmul_tiled())
    for d in ("SCALE(x)=((x) * 1)", "X=1 --m 16 --n 16 --k 16"):
        doc = result(quiet_ok(kc, f"%matmul --size 64 --variant mytiled -D '{d}' --reps 1 --warmup 0", timeout=120))
        assert valid(doc["runs"][0]["check"])["lesson"]["global_loads_per_fma"]["passed"] is True, doc["runs"][0]
