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
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
#include <math.h>

#define CHAINS 12

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each kernel runs `iters` iterations of CHAINS FMAs and returns a checksum
 * (so the work cannot be removed). FLOPs = iters * CHAINS * lanes * 2. */

#if defined(__AVX512F__)
static float kernel512(uint64_t iters) {
  __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-3f);
  __m512 a0 = _mm512_set1_ps(0.10f), a1 = _mm512_set1_ps(0.11f), a2 = _mm512_set1_ps(0.12f),
         a3 = _mm512_set1_ps(0.13f), a4 = _mm512_set1_ps(0.14f), a5 = _mm512_set1_ps(0.15f),
         a6 = _mm512_set1_ps(0.16f), a7 = _mm512_set1_ps(0.17f), a8 = _mm512_set1_ps(0.18f),
         a9 = _mm512_set1_ps(0.19f), a10 = _mm512_set1_ps(0.20f), a11 = _mm512_set1_ps(0.21f);
  for (uint64_t i = 0; i < iters; i++) {
    a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c);
    a2 = _mm512_fmadd_ps(a2, m, c); a3 = _mm512_fmadd_ps(a3, m, c);
    a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c);
    a8 = _mm512_fmadd_ps(a8, m, c); a9 = _mm512_fmadd_ps(a9, m, c);
    a10 = _mm512_fmadd_ps(a10, m, c); a11 = _mm512_fmadd_ps(a11, m, c);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return _mm512_reduce_add_ps(s);
}
#endif

#if defined(__AVX__) && defined(__FMA__)
static float kernel256(uint64_t iters) {
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-3f);
  __m256 a0 = _mm256_set1_ps(0.10f), a1 = _mm256_set1_ps(0.11f), a2 = _mm256_set1_ps(0.12f),
         a3 = _mm256_set1_ps(0.13f), a4 = _mm256_set1_ps(0.14f), a5 = _mm256_set1_ps(0.15f),
         a6 = _mm256_set1_ps(0.16f), a7 = _mm256_set1_ps(0.17f), a8 = _mm256_set1_ps(0.18f),
         a9 = _mm256_set1_ps(0.19f), a10 = _mm256_set1_ps(0.20f), a11 = _mm256_set1_ps(0.21f);
  for (uint64_t i = 0; i < iters; i++) {
    a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c); a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c); a9 = _mm256_fmadd_ps(a9, m, c);
    a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
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

typedef float (*kernel_fn)(uint64_t);

struct job {
  kernel_fn fn;
  uint64_t iters;
  pthread_barrier_t* barrier;
  float result;
};

static void* worker(void* arg) {
  struct job* j = (struct job*)arg;
  pthread_barrier_wait(j->barrier);
  j->result = j->fn(j->iters);
  return NULL;
}

static volatile float sink;

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
      fprintf(stderr, "fma_peak: error: pthread_create failed\n");
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

/* Best GFLOP/s over `repeats` runs of about `seconds` each; the median in *median. */
static double measure(kernel_fn fn, int lanes, int threads, int repeats, double seconds, double* median) {
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
    all[r] = (double)iters * CHAINS * lanes * 2.0 * threads / t / 1e9;
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
          fprintf(stderr, "fma_peak: error: bad thread count in --threads\n");
          return 1;
        }
        thread_list[nthreads++] = v;
        if (*s == ',') s++;
        else if (*s) {
          fprintf(stderr, "fma_peak: error: bad --threads list\n");
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
      fprintf(stderr, "usage: fma_peak [--threads 1,2] [--repeats 15] [--seconds 0.05]\n");
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
    int lanes = 1;
#if defined(__AVX512F__)
    wide = measure(kernel512, 16, t, repeats, seconds, &wide_med);
    narrow = measure(kernel256, 8, t, repeats, seconds, &narrow_med);
    isa = "avx512";
    lanes = 16;
#elif defined(__AVX__) && defined(__FMA__)
    narrow = measure(kernel256, 8, t, repeats, seconds, &narrow_med);
    wide = narrow;
    wide_med = narrow_med;
    isa = "avx2";
    lanes = 8;
#else
    wide = narrow = measure(kernel_scalar, 1, t, repeats, seconds, &wide_med);
    narrow_med = wide_med;
#endif
    (void)kernel_scalar;
    double peak = wide > narrow ? wide : narrow;
    double median = wide > narrow ? wide_med : narrow_med;
    printf("fma_peak threads=%d gflops=%.2f median_gflops=%.2f gflops_wide=%.2f gflops_256=%.2f isa=%s lanes=%d "
           "chains=%d repeats=%d\n",
           t, peak, median, wide, narrow, isa, lanes, CHAINS, repeats);
  }
  return 0;
}
