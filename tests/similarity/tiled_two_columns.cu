// An independently written tiled multiply: each thread computes two elements
// of C, TS columns apart, so a block of TS×TS threads covers a TS×2TS tile of C
// (the blocks the launch adds past the last column find nothing to do); A's
// tile is padded against bank conflicts.
#define TS 16
__global__ void two_per_thread(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float a_tile[TS][TS + 1];
    __shared__ float b_tile[TS][2 * TS];
    int ty = threadIdx.y, tx = threadIdx.x;
    int i = blockIdx.y * TS + ty;
    int j0 = blockIdx.x * 2 * TS + tx;
    int j1 = j0 + TS;
    float s0 = 0.0f, s1 = 0.0f;
    for (int kk = 0; kk < k; kk += TS) {
        a_tile[ty][tx] = (i < m && kk + tx < k) ? A[i * k + kk + tx] : 0.0f;
        bool in_k = kk + ty < k;
        b_tile[ty][tx] = (in_k && j0 < n) ? B[(kk + ty) * n + j0] : 0.0f;
        b_tile[ty][tx + TS] = (in_k && j1 < n) ? B[(kk + ty) * n + j1] : 0.0f;
        __syncthreads();
#pragma unroll 4
        for (int p = 0; p < TS; p++) {
            float av = a_tile[ty][p];
            s0 += av * b_tile[p][tx];
            s1 += av * b_tile[p][tx + TS];
        }
        __syncthreads();
    }
    if (i < m) {
        if (j0 < n)
            C[i * n + j0] = s0;
        if (j1 < n)
            C[i * n + j1] = s1;
    }
}
