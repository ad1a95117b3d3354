// An independently written tiled multiply: the tiles in dynamic shared memory
// (launch with --smem 2*16*16*4), the tile's side from blockDim, a while loop
// over the phases, B's tile kept transposed, loads guarded by if/else.
__global__ void tiled_dyn(const float *A, const float *B, float *C, int m, int n, int k)
{
    extern __shared__ float tiles[];
    const int w = blockDim.x;
    float *tileA = tiles;
    float *tileB = tiles + w * w;
    int x = threadIdx.x;
    int y = threadIdx.y;
    int outRow = blockIdx.y * w + y;
    int outCol = blockIdx.x * w + x;
    float total = 0;
    int phase = 0;
    while (phase * w < k) {
        int aCol = phase * w + x;
        int bRow = phase * w + y;
        if (outRow < m && aCol < k)
            tileA[y * w + x] = A[outRow * k + aCol];
        else
            tileA[y * w + x] = 0;
        if (bRow < k && outCol < n)
            tileB[x * w + y] = B[bRow * n + outCol];
        else
            tileB[x * w + y] = 0;
        __syncthreads();
        for (int j = 0; j < w; j++)
            total += tileA[y * w + j] * tileB[x * w + j];
        __syncthreads();
        phase++;
    }
    if (outRow < m && outCol < n)
        C[outRow * n + outCol] = total;
}
