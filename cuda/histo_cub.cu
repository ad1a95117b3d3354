/* histo_cub.cu — the %histo library reference: cub::DeviceHistogram::
 * HistogramEven over the same bins as the hand-written kernels.
 *
 * Byte bins are CUB's own case (uint8 samples, 257 even levels over
 * [0, 256)). Letter bins are not an even binning of byte values (either case,
 * gaps between), so a transform iterator maps each byte to its letter bin, or
 * to one past the last bin, which CUB leaves uncounted, and CUB bins that.
 */
#include <cub/device/device_histogram.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <stdio.h>

#include "histo_cuda.h"

namespace {

struct letter_bin {
    int width, nbins;
    __host__ __device__ int operator()(unsigned char c) const
    {
        int b = cl_histo_bin(c, CL_HISTO_LETTERS, width);
        return b < 0 ? nbins : b;
    }
};

}  // namespace

/* show-source: histo cub */
cudaError_t histo_cub(void *temp, size_t *temp_bytes, const uint8_t *in, uint64_t n, int mode,
                      int width, unsigned *hist, cudaStream_t s)
{
    int samples = (int)n;           /* the caller keeps n <= CL_HISTO_MAX_SIZE */
    if (mode == CL_HISTO_BYTES)
        return cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, in, hist, 257, 0, 256,
                                                   samples, s);
    int nbins = cl_histo_nbins(mode, width);
    letter_bin f = {width, nbins};
    thrust::transform_iterator<letter_bin, const unsigned char *> it(in, f);
    return cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, it, hist, nbins + 1, 0, nbins,
                                               samples, s);
}
/* show-source: end */

void histo_cub_version(char *buf, size_t len)
{
    snprintf(buf, len, "CCCL %d.%d.%d", CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
}
