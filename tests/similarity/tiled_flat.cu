// An independently written tiled multiply: flat 1D tiles, a phase loop that
// steps by the tile, fused multiply-adds, 64-bit offsets.
#define T 16
__global__ void mm_flat(const float *a, const float *b, float *c, int M, int N, int K)
{
    __shared__ float sa[T * T];
    __shared__ float sb[T * T];
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    const int li = threadIdx.y * T + threadIdx.x;
    float acc = 0.0f;
    for (int base = 0; base < K; base += T) {
        int ac = base + threadIdx.x;
        int br = base + threadIdx.y;
        sa[li] = (r < M && ac < K) ? a[(size_t)r * K + ac] : 0.0f;
        sb[li] = (br < K && q < N) ? b[(size_t)br * N + q] : 0.0f;
        __syncthreads();
        for (int e = 0; e < T; ++e)
            acc = fmaf(sa[threadIdx.y * T + e], sb[e * T + threadIdx.x], acc);
        __syncthreads();
    }
    if (r < M && q < N)
        c[(size_t)r * N + q] = acc;
}
