/* Measured int8 multiply-add peak of this machine, per thread count.
 *
 *   cc -O2 -march=native -pthread bench/int8_peak.c -o int8_peak
 *   ./int8_peak [--threads 1,2] [--repeats 15] [--seconds 0.05]
 *
 * Each thread runs a loop of 12 independent chains of int8 dot products
 * accumulating into int32 (acc_i += dot4(a_u8, b_s8) per 32-bit lane), on the
 * best int8 instruction the compiler targets:
 *   avx512vnni  vpdpbusd zmm: 64 u8 x s8 multiply-adds per instruction
 *               (the 256-bit form, vpdpbusd ymm, is measured too);
 *   avxvnni     vpdpbusd ymm (AVX-VNNI, VEX-encoded): 32 per instruction;
 *   avx2        vpmaddubsw + vpmaddwd + vpaddd ymm: 32 per three instructions
 *               (u8 x s8 pairs summed to s16 with saturation, then to s32);
 *   scalar      plain C (a reference for machines without any of these).
 * 12 chains cover the latency of vpdpbusd (4-5 cycles) times its pipes (2).
 * The accumulators wrap around (vector integer adds do; the values do not
 * matter, only the work does).
 *
 * One op is one multiply or one add (as the bench counts FLOPs): one zmm
 * vpdpbusd is 64 multiply-adds = 128 ops. When a 512-bit and a 256-bit loop
 * are both measured the peak is the larger (some cores run 512-bit integer
 * dot products at half rate, or clock down for them).
 *
 * Output, one line per thread count (gops: the best of --repeats runs in
 * 10^9 ops/s; median_gops: their median, which shows how noisy the machine is):
 *   int8_peak threads=N gops=X median_gops=M gops_wide=W gops_256=Y isa=avx512vnni macs=64 chains=12 repeats=R
 * (macs: multiply-adds per instruction of the widest loop) and nothing else on
 * stdout. Exit status 1 with a message on a bad argument. The command line,
 * threads and timing: bench/peak_harness.h (shared with bench/fma_peak.c).
 */
#define _GNU_SOURCE
#define PEAK_NAME "int8_peak"
#define PEAK_RESULT int32_t
#define PEAK_RATE "gops"
#define PEAK_WIDTH "macs"
#include "peak_harness.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define HAVE_VNNI512 1
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define HAVE_VNNI256 1
#define DPBUSD256(acc, a, b) _mm256_dpbusd_epi32(acc, a, b)
#elif defined(__AVXVNNI__)
#define HAVE_VNNI256 1
#define DPBUSD256(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#endif

/* Each kernel runs `iters` iterations of CHAINS instructions (or instruction
 * groups) and returns a checksum (so the work cannot be removed).
 * ops = iters * CHAINS * macs * 2. The VNNI kernels: acc += dot4(u8 3, s8 -2)
 * per 32-bit lane; chain j starts at j. */
#if defined(HAVE_VNNI512)
PEAK_KERNEL(kernel512, int32_t, __m512i, _mm512_set1_epi8(3), _mm512_set1_epi8(-2), _mm512_set1_epi32,
            _mm512_dpbusd_epi32, _mm512_add_epi32, _mm512_setzero_si512(), "v", _mm512_reduce_add_epi32)
#endif

#if defined(__AVX2__)
static int32_t hsum256(__m256i s) {
  int32_t out[8];
  _mm256_storeu_si256((__m256i*)out, s);
  uint32_t t = 0;
  for (int j = 0; j < 8; j++) t += (uint32_t)out[j];
  return (int32_t)t;
}
#endif

#if defined(HAVE_VNNI256)
PEAK_KERNEL(kernel256, int32_t, __m256i, _mm256_set1_epi8(3), _mm256_set1_epi8(-2), _mm256_set1_epi32, DPBUSD256,
            _mm256_add_epi32, _mm256_setzero_si256(), "x", hsum256)
#endif

#if defined(__AVX2__)
/* Without VNNI: u8 x s8 -> s16 pairs (vpmaddubsw), s16 x 1 -> s32 pairs
 * (vpmaddwd), accumulate (vpaddd): 32 multiply-adds per group of three.
 * The 12 groups of an iteration multiply 12 different operand pairs (3 x 4;
 * the x are made opaque every iteration, so no product can be hoisted or
 * shared) into 6 accumulators (only the vpaddd depend on each other; 16 ymm
 * registers suffice without spills). */
static int32_t kernel_avx2(uint64_t iters) {
  const __m256i b0 = _mm256_set1_epi8(-2), b1 = _mm256_set1_epi8(5), b2 = _mm256_set1_epi8(-7),
                b3 = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
  __m256i x0 = _mm256_set1_epi8(3), x1 = _mm256_set1_epi8(4), x2 = _mm256_set1_epi8(6);
  __m256i a0 = _mm256_set1_epi32(0), a1 = _mm256_set1_epi32(1), a2 = _mm256_set1_epi32(2),
          a3 = _mm256_set1_epi32(3), a4 = _mm256_set1_epi32(4), a5 = _mm256_set1_epi32(5);
#define MADD(acc, x, b) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, b), ones))
  for (uint64_t i = 0; i < iters; i++) {
    __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2));
    MADD(a0, x0, b0); MADD(a1, x0, b1); MADD(a2, x0, b2); MADD(a3, x0, b3);
    MADD(a4, x1, b0); MADD(a5, x1, b1); MADD(a0, x1, b2); MADD(a1, x1, b3);
    MADD(a2, x2, b0); MADD(a3, x2, b1); MADD(a4, x2, b2); MADD(a5, x2, b3);
  }
#undef MADD
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
  s = _mm256_add_epi32(s, _mm256_add_epi32(a4, a5));
  return hsum256(s);
}
#endif

/* One "instruction" = 4 multiply-adds of u8 x s8 into an int32, per chain. */
static int32_t kernel_scalar(uint64_t iters) {
  volatile uint8_t va = 3;
  volatile int8_t vb = -2;
  uint8_t a = va;
  int8_t b = vb;
  uint32_t acc[CHAINS];
  for (int j = 0; j < CHAINS; j++) acc[j] = (uint32_t)j;
  for (uint64_t i = 0; i < iters; i++) {
    for (int j = 0; j < CHAINS; j++)
      acc[j] += (uint32_t)(a * b) + (uint32_t)(a * b) + (uint32_t)(a * b) + (uint32_t)(a * b);
    __asm__ volatile("" : "+r"(a));
  }
  uint32_t s = 0;
  for (int j = 0; j < CHAINS; j++) s += acc[j];
  return (int32_t)s;
}

int main(int argc, char** argv) {
  static const struct peak_isa isa =
#if defined(HAVE_VNNI512)
      {"avx512vnni", kernel512, 64, kernel256, 32};
#elif defined(HAVE_VNNI256)
      {"avxvnni", kernel256, 32, NULL, 0};
#elif defined(__AVX2__)
      {"avx2", kernel_avx2, 32, NULL, 0};
#else
      {"scalar", kernel_scalar, 4, NULL, 0};
#endif
  (void)kernel_scalar;
#if defined(__AVX2__)
  (void)kernel_avx2;
#endif
  return peak_main(argc, argv, &isa);
}
