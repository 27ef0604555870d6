/* Measured float32 FMA peak of this machine, per thread count.
 *
 *   cc -O2 -march=native -pthread bench/fma_peak.c -o fma_peak
 *   ./fma_peak [--threads 1,2] [--repeats 15] [--seconds 0.05]
 *
 * Each thread runs a loop of 12 independent chains of vector FMAs
 * (acc_i = acc_i * m + c, one vfmadd per chain per iteration) on the widest
 * vector unit the compiler targets (AVX-512, else AVX2/FMA, else scalar
 * fmaf). 12 chains cover the FMA latency (4-5 cycles) times the number of FMA
 * pipes (2) on current x86 cores, so the loop is throughput-bound. m < 1 and
 * c > 0 keep every accumulator at a fixed point near c / (1 - m): no overflow,
 * no denormals. When AVX-512 is available the 256-bit loop is measured too,
 * and the peak is the larger of the two (some cores run 512-bit FMAs at half
 * rate, or clock down for them).
 *
 * Output, one line per thread count (gflops: the best of --repeats runs;
 * median_gflops: their median, which shows how noisy the machine is):
 *   fma_peak threads=N gflops=X median_gflops=M gflops_wide=W gflops_256=Y isa=avx512 lanes=16 chains=12 repeats=R
 * and nothing else on stdout. Exit status 1 with a message on a bad argument.
 * The command line, threads and timing: bench/peak_harness.h (shared with
 * bench/int8_peak.c).
 */
#define _GNU_SOURCE
#define PEAK_NAME "fma_peak"
#define PEAK_RESULT float
#define PEAK_RATE "gflops"
#define PEAK_WIDTH "lanes"
#include "peak_harness.h"

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
#include <math.h>

/* Each kernel runs `iters` iterations of CHAINS FMAs and returns a checksum
 * (so the work cannot be removed). FLOPs = iters * CHAINS * lanes * 2.
 * acc = acc * m + c with m = 0.999999, c = 0.001; chain j starts at
 * (10 + j) / 100 (0.10 ... 0.21). */
#define INIT512(j) _mm512_set1_ps((float)(10 + (j)) / 100.0f)
#define INIT256(j) _mm256_set1_ps((float)(10 + (j)) / 100.0f)

#if defined(__AVX512F__)
PEAK_KERNEL(kernel512, float, __m512, _mm512_set1_ps(0.999999f), _mm512_set1_ps(1e-3f), INIT512, _mm512_fmadd_ps,
            _mm512_add_ps, _mm512_setzero_ps(), "v", _mm512_reduce_add_ps)
#endif

#if defined(__AVX__) && defined(__FMA__)
static float hsum256(__m256 s) {
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

PEAK_KERNEL(kernel256, float, __m256, _mm256_set1_ps(0.999999f), _mm256_set1_ps(1e-3f), INIT256, _mm256_fmadd_ps,
            _mm256_add_ps, _mm256_setzero_ps(), "x", hsum256)
#endif

static float kernel_scalar(uint64_t iters) {
  float a[CHAINS];
  for (int j = 0; j < CHAINS; j++) a[j] = 0.1f + 0.01f * (float)j;
  for (uint64_t i = 0; i < iters; i++)
    for (int j = 0; j < CHAINS; j++) a[j] = fmaf(a[j], 0.999999f, 1e-3f);
  float s = 0;
  for (int j = 0; j < CHAINS; j++) s += a[j];
  return s;
}

int main(int argc, char** argv) {
  static const struct peak_isa isa =
#if defined(__AVX512F__)
      {"avx512", kernel512, 16, kernel256, 8};
#elif defined(__AVX__) && defined(__FMA__)
      {"avx2", kernel256, 8, NULL, 0};
#else
      {"scalar", kernel_scalar, 1, NULL, 0};
#endif
  (void)kernel_scalar;
  return peak_main(argc, argv, &isa);
}
