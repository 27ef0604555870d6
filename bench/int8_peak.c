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
 * stdout. Exit status 1 with a message on a bad argument.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define CHAINS 12

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

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each kernel runs `iters` iterations of CHAINS instructions (or instruction
 * groups) and returns a checksum (so the work cannot be removed).
 * ops = iters * CHAINS * macs * 2. */

#if defined(HAVE_VNNI512)
static int32_t kernel512(uint64_t iters) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  __m512i a0 = _mm512_set1_epi32(0), a1 = _mm512_set1_epi32(1), a2 = _mm512_set1_epi32(2),
          a3 = _mm512_set1_epi32(3), a4 = _mm512_set1_epi32(4), a5 = _mm512_set1_epi32(5),
          a6 = _mm512_set1_epi32(6), a7 = _mm512_set1_epi32(7), a8 = _mm512_set1_epi32(8),
          a9 = _mm512_set1_epi32(9), a10 = _mm512_set1_epi32(10), a11 = _mm512_set1_epi32(11);
  for (uint64_t i = 0; i < iters; i++) {
    a0 = _mm512_dpbusd_epi32(a0, a, b); a1 = _mm512_dpbusd_epi32(a1, a, b);
    a2 = _mm512_dpbusd_epi32(a2, a, b); a3 = _mm512_dpbusd_epi32(a3, a, b);
    a4 = _mm512_dpbusd_epi32(a4, a, b); a5 = _mm512_dpbusd_epi32(a5, a, b);
    a6 = _mm512_dpbusd_epi32(a6, a, b); a7 = _mm512_dpbusd_epi32(a7, a, b);
    a8 = _mm512_dpbusd_epi32(a8, a, b); a9 = _mm512_dpbusd_epi32(a9, a, b);
    a10 = _mm512_dpbusd_epi32(a10, a, b); a11 = _mm512_dpbusd_epi32(a11, a, b);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
  }
  __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                               _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));
  s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
  return _mm512_reduce_add_epi32(s);
}
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
static int32_t kernel256(uint64_t iters) {
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  __m256i a0 = _mm256_set1_epi32(0), a1 = _mm256_set1_epi32(1), a2 = _mm256_set1_epi32(2),
          a3 = _mm256_set1_epi32(3), a4 = _mm256_set1_epi32(4), a5 = _mm256_set1_epi32(5),
          a6 = _mm256_set1_epi32(6), a7 = _mm256_set1_epi32(7), a8 = _mm256_set1_epi32(8),
          a9 = _mm256_set1_epi32(9), a10 = _mm256_set1_epi32(10), a11 = _mm256_set1_epi32(11);
  for (uint64_t i = 0; i < iters; i++) {
    a0 = DPBUSD256(a0, a, b); a1 = DPBUSD256(a1, a, b);
    a2 = DPBUSD256(a2, a, b); a3 = DPBUSD256(a3, a, b);
    a4 = DPBUSD256(a4, a, b); a5 = DPBUSD256(a5, a, b);
    a6 = DPBUSD256(a6, a, b); a7 = DPBUSD256(a7, a, b);
    a8 = DPBUSD256(a8, a, b); a9 = DPBUSD256(a9, a, b);
    a10 = DPBUSD256(a10, a, b); a11 = DPBUSD256(a11, a, b);
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
  }
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                               _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
  s = _mm256_add_epi32(s, _mm256_add_epi32(_mm256_add_epi32(a8, a9), _mm256_add_epi32(a10, a11)));
  return hsum256(s);
}
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

typedef int32_t (*kernel_fn)(uint64_t);

struct job {
  kernel_fn fn;
  uint64_t iters;
  pthread_barrier_t* barrier;
  int32_t result;
};

static void* worker(void* arg) {
  struct job* j = (struct job*)arg;
  pthread_barrier_wait(j->barrier);
  j->result = j->fn(j->iters);
  return NULL;
}

static volatile int32_t sink;

/* Runs `fn` on `threads` threads at once; returns the wall time in seconds. */
static double run_threads(kernel_fn fn, int threads, uint64_t iters) {
  pthread_t tid[64];
  struct job jobs[64];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; t++) {
    jobs[t].fn = fn;
    jobs[t].iters = iters;
    jobs[t].barrier = &barrier;
    if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
      fprintf(stderr, "int8_peak: error: pthread_create failed\n");
      exit(1);
    }
  }
  double start = now_s();
  pthread_barrier_wait(&barrier);
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    sink += jobs[t].result;
  }
  double elapsed = now_s() - start;
  pthread_barrier_destroy(&barrier);
  return elapsed;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Best 10^9 ops/s over `repeats` runs of about `seconds` each; the median in *median.
 * macs: multiply-adds per chain per iteration. */
static double measure(kernel_fn fn, int macs, int threads, int repeats, double seconds, double* median) {
  /* Calibrate the iteration count on one thread. */
  uint64_t iters = 1u << 16;
  for (;;) {
    double t = run_threads(fn, 1, iters);
    if (t > 0.02 || iters > (1ull << 40)) {
      iters = (uint64_t)((double)iters * seconds / t) + 1;
      break;
    }
    iters *= 4;
  }
  double all[256];
  if (repeats > 256) repeats = 256;
  for (int r = 0; r < repeats; r++) {
    double t = run_threads(fn, threads, iters);
    all[r] = (double)iters * CHAINS * macs * 2.0 * threads / t / 1e9;
  }
  qsort(all, (size_t)repeats, sizeof all[0], cmp_double);
  *median = repeats % 2 ? all[repeats / 2] : 0.5 * (all[repeats / 2 - 1] + all[repeats / 2]);
  return all[repeats - 1];
}

int main(int argc, char** argv) {
  int thread_list[16], nthreads = 0, repeats = 15;
  double seconds = 0.05;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      char* s = argv[++i];
      while (*s && nthreads < 16) {
        int v = (int)strtol(s, &s, 10);
        if (v < 1 || v > 64) {
          fprintf(stderr, "int8_peak: error: bad thread count in --threads\n");
          return 1;
        }
        thread_list[nthreads++] = v;
        if (*s == ',') s++;
        else if (*s) {
          fprintf(stderr, "int8_peak: error: bad --threads list\n");
          return 1;
        }
      }
    } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = atoi(argv[++i]);
      if (repeats < 1) repeats = 1;
    } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = atof(argv[++i]);
      if (!(seconds > 0)) seconds = 0.05;
    } else {
      fprintf(stderr, "usage: int8_peak [--threads 1,2] [--repeats 15] [--seconds 0.05]\n");
      return 1;
    }
  }
  if (nthreads == 0) {
    thread_list[0] = 1;
    thread_list[1] = 2;
    nthreads = 2;
  }
  for (int i = 0; i < nthreads; i++) {
    int t = thread_list[i];
    double wide = 0, narrow = 0, wide_med = 0, narrow_med = 0;
    const char* isa = "scalar";
    int macs = 4;
#if defined(HAVE_VNNI512)
    wide = measure(kernel512, 64, t, repeats, seconds, &wide_med);
    narrow = measure(kernel256, 32, t, repeats, seconds, &narrow_med);
    isa = "avx512vnni";
    macs = 64;
#elif defined(HAVE_VNNI256)
    narrow = measure(kernel256, 32, t, repeats, seconds, &narrow_med);
    wide = narrow;
    wide_med = narrow_med;
    isa = "avxvnni";
    macs = 32;
#elif defined(__AVX2__)
    narrow = measure(kernel_avx2, 32, t, repeats, seconds, &narrow_med);
    wide = narrow;
    wide_med = narrow_med;
    isa = "avx2";
    macs = 32;
#else
    wide = narrow = measure(kernel_scalar, 4, t, repeats, seconds, &wide_med);
    narrow_med = wide_med;
#endif
    (void)kernel_scalar;
#if defined(__AVX2__)
    (void)kernel_avx2;
#endif
    double peak = wide > narrow ? wide : narrow;
    double median = wide > narrow ? wide_med : narrow_med;
    printf("int8_peak threads=%d gops=%.2f median_gops=%.2f gops_wide=%.2f gops_256=%.2f isa=%s macs=%d "
           "chains=%d repeats=%d\n",
           t, peak, median, wide, narrow, isa, macs, CHAINS, repeats);
  }
  return 0;
}
