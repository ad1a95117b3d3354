"""One check document in every family (kernel/magic/check.h, tests/schemas/check.schema.json): a student's
kernel that gets exactly one value wrong fails its %%kernel quick check on the CPU runner (no GPU), and the
check names that value the same way whatever the family: `wrong.count`, `wrong.first.at` with the family's
coordinates by name, `got` and `want`, `first_wrong` in words, `tolerance`. A grader's %assert reads those
names; an old family's spelling is told the new one; the next cell works. Needs NVRTC and g++ (the CPU
runner): without NVRTC the tests skip."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import cell, compiled, load_schema

CPU = {"CUDALAB_BACKEND": "cpu"}

# family -> (kernel body, the coordinates of its one wrong value, got - want); the name is the cell's
WRONG_ONCE = {
    "vecadd": ("""__global__ void NAME(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = i == 5 ? A[i] + B[i] + 1.0f : A[i] + B[i];
}""", {"index": 5}, 1.0),
    "coalesce": ("""__global__ void NAME(const float *in, float *out, unsigned long long n, unsigned long long stride) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = i == 7 ? in[i] + 1.0f : in[i];
}""", {"index": 7}, 1.0),
    "matmul": ("""__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0;
        for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
        C[row * N + col] = row == 1 && col == 2 ? s + 1.0f : s;
    }
}""", {"row": 1, "col": 2}, None),
    "stencil": ("""__global__ void NAME(const float *in, float *out, const float *w, int n, int R) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0;
        for (int j = -R; j <= R; j++) if (i + j >= 0 && i + j < n) s += w[j + R] * in[i + j];
        out[i] = i == 9 ? s + 1.0f : s;
    }
}""", {"index": 9}, None),
    "reduce": ("""__global__ void NAME(const float *input, float *partial, int n) {
    if (threadIdx.x == 0) {
        long long start = 2LL * blockDim.x * blockIdx.x;
        float s = 0;
        for (long long i = start; i < start + 2LL * blockDim.x && i < n; i++) s += input[i];
        partial[blockIdx.x] = blockIdx.x == 0 ? s + 1000.0f : s;
    }
}""", {"partial": 0}, 1000.0),
    "histo": ("""__global__ void NAME(const unsigned char *data, long long n, unsigned int *histo) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned char c = data[i] | 0x20;
        if (c >= 'a' && c <= 'z') atomicAdd(&histo[(c - 'a') / 4], 1u);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&histo[0], 1u);
}""", {"bin": "a-d", "index": 0}, 1),
    "grid": ("""__global__ void NAME(const float *Pin, float *Pout, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < height && col < width)
        Pout[row * width + col] = row == 1 && col == 2 ? 2 * Pin[row * width + col] + 1.0f : 2 * Pin[row * width + col];
}""", {"row": 1, "col": 2}, 1.0),
}


def check_schema() -> dict:
    """check.schema.json as the families' schemas see it (its own $defs under check_doc)."""
    schema = load_schema("vecadd")
    return {"$defs": schema["$defs"], "$ref": "#/$defs/check_doc"}


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


@pytest.mark.parametrize("family", sorted(WRONG_ONCE))
def test_one_wrong_value_reads_the_same_in_every_family(kc, family):
    body, at, diff = WRONG_ONCE[family]
    name = f"wrong_{family}"
    c, text, doc = compiled(kc, f"%%kernel --for {family} --name {name}\n" + body.replace("NAME", name))
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    check = doc["check"]
    jsonschema.validate(check, check_schema())
    assert check["passed"] is False and check["wrong"]["count"] == 1, check
    first = check["wrong"]["first"]
    assert first["at"] == at, check
    if diff is not None:
        assert first["got"] - first["want"] == pytest.approx(diff, rel=1e-3), check
    assert isinstance(check["tolerance"], (int, float)) and check["first_wrong"], check
    where = next(iter(at))
    c, text, _ = cell(kc, f"%assert kernel.check.wrong.first.at.{where} == {at[where]!r}\n"
                          f"%assert kernel.check.wrong.count == 1")
    assert c["status"] == "ok", c


def test_an_old_spelling_names_the_new_one_and_the_next_cell_works(kc):
    name = "wrong_vecadd_old"
    compiled(kc, f"%%kernel --for vecadd --name {name}\n" + WRONG_ONCE["vecadd"][0].replace("NAME", name))
    c, text, _ = cell(kc, "%assert kernel.check.first_bad.index == 5")
    assert c["ename"] == "LookupError" and "did you mean check.wrong.first?" in c["evalue"], c
    assert "check.wrong.first.at.index" in c["evalue"], c
    c, text, _ = cell(kc, "%assert kernel.check.mismatches == 1")
    assert c["ename"] == "LookupError" and "did you mean check.wrong.count?" in c["evalue"], c
    c, text, _ = cell(kc, "%assert kernel.check.wrong.first.at.index == 5")
    assert c["status"] == "ok", c
