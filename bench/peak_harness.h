/* The harness shared by bench/fma_peak.c and bench/int8_peak.c: the command
 * line, the thread runner and the timed, calibrated measurement. Each program
 * supplies its kernels (run `iters` iterations, return a checksum so the work
 * cannot be removed; PEAK_KERNEL writes the vector ones) and calls
 * peak_main() with the ones the compiler's target has (struct peak_isa).
 *
 * Before including it, define
 *   PEAK_NAME    the program's name, for messages and its lines ("fma_peak");
 *   PEAK_RESULT  the kernels' checksum type (float, int32_t);
 *   PEAK_RATE    the name of the rate in its lines ("gflops", "gops");
 *   PEAK_WIDTH   the name of the widest loop's multiply-adds per instruction
 *                in its lines ("lanes", "macs").
 * C99 with POSIX threads; everything here is static.
 */
#ifndef KILN_BENCH_PEAK_HARNESS_H
#define KILN_BENCH_PEAK_HARNESS_H

#if !defined(PEAK_NAME) || !defined(PEAK_RESULT) || !defined(PEAK_RATE) || !defined(PEAK_WIDTH)
#error "define PEAK_NAME, PEAK_RESULT, PEAK_RATE and PEAK_WIDTH before including peak_harness.h"
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Independent accumulator chains per kernel loop iteration: they cover the
 * latency (4-5 cycles) times the pipes (2) of a vector FMA or vpdpbusd on
 * current x86 cores, so the loops are throughput-bound. */
#define CHAINS 12

/* PEAK_KERNEL(name, T, V, X, Y, INIT, OP, ADD, ZERO, REG, FINISH) defines the
 * kernel `static T name(uint64_t iters)`: CHAINS accumulators a0 ... a11 of
 * vector type V (variables, so that they stay in registers), a_j = INIT(j);
 * `iters` iterations of a_j = OP(a_j, x, y) for every chain, with x = X and
 * y = Y loop-invariant; half of the chains made opaque to the compiler every
 * iteration (REG: the asm constraint of their register class, "v" or "x") so
 * that it cannot fold the loop; returns FINISH(the sum of the chains by ADD,
 * from ZERO), the checksum. X, Y and ZERO are expressions, the others names
 * of functions or function-like macros. */
#define PEAK_KERNEL(name, T, V, X, Y, INIT, OP, ADD, ZERO, REG, FINISH)                                       \
  static T name(uint64_t iters) {                                                                            \
    const V x = X, y = Y;                                                                                    \
    V a0 = INIT(0), a1 = INIT(1), a2 = INIT(2), a3 = INIT(3), a4 = INIT(4), a5 = INIT(5), a6 = INIT(6),      \
      a7 = INIT(7), a8 = INIT(8), a9 = INIT(9), a10 = INIT(10), a11 = INIT(11);                              \
    for (uint64_t i = 0; i < iters; i++) {                                                                   \
      a0 = OP(a0, x, y); a1 = OP(a1, x, y); a2 = OP(a2, x, y); a3 = OP(a3, x, y);                            \
      a4 = OP(a4, x, y); a5 = OP(a5, x, y); a6 = OP(a6, x, y); a7 = OP(a7, x, y);                            \
      a8 = OP(a8, x, y); a9 = OP(a9, x, y); a10 = OP(a10, x, y); a11 = OP(a11, x, y);                        \
      __asm__ volatile("" : "+" REG(a0), "+" REG(a1), "+" REG(a2), "+" REG(a3), "+" REG(a4), "+" REG(a5));   \
    }                                                                                                        \
    V s = ADD(ADD(ADD(ADD(ZERO, a0), ADD(a1, a2)), ADD(ADD(a3, a4), ADD(a5, a6))),                           \
              ADD(ADD(ADD(a7, a8), ADD(a9, a10)), a11));                                                     \
    return FINISH(s);                                                                                        \
  }

#define PEAK_MAX_THREADS 64
#define PEAK_MAX_THREAD_COUNTS 16

typedef PEAK_RESULT (*kernel_fn)(uint64_t);

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

struct job {
  kernel_fn fn;
  uint64_t iters;
  pthread_barrier_t* barrier;
  PEAK_RESULT result;
};

static void* worker(void* arg) {
  struct job* j = (struct job*)arg;
  pthread_barrier_wait(j->barrier);
  j->result = j->fn(j->iters);
  return NULL;
}

static volatile PEAK_RESULT sink;

/* Runs `fn` on `threads` threads at once; returns the wall time in seconds. */
static double run_threads(kernel_fn fn, int threads, uint64_t iters) {
  pthread_t tid[PEAK_MAX_THREADS];
  struct job jobs[PEAK_MAX_THREADS];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; t++) {
    jobs[t].fn = fn;
    jobs[t].iters = iters;
    jobs[t].barrier = &barrier;
    if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
      fprintf(stderr, PEAK_NAME ": error: pthread_create failed\n");
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

/* Best rate in 10^9 ops/s over `repeats` runs of about `seconds` each on
 * `threads` threads; their median in *median. ops_per_iter: the ops (one
 * multiply or add each) one thread does per iteration of `fn`. */
static double measure(kernel_fn fn, double ops_per_iter, int threads, int repeats, double seconds,
                      double* median) {
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
    all[r] = (double)iters * ops_per_iter * threads / t / 1e9;
  }
  qsort(all, (size_t)repeats, sizeof all[0], cmp_double);
  *median = repeats % 2 ? all[repeats / 2] : 0.5 * (all[repeats / 2 - 1] + all[repeats / 2]);
  return all[repeats - 1];
}

struct peak_options {
  int threads[PEAK_MAX_THREAD_COUNTS]; /* the thread counts to measure, in order */
  int nthreads;
  int repeats;
  double seconds;
};

struct peak_result {
  double peak;   /* the larger of wide and narrow */
  double median; /* the median of the runs of that loop */
  double wide, narrow;
};

/* Measures the widest loop `wide` (wide_macs multiply-adds per chain per
 * iteration: the lanes of an FMA, the u8 x s8 products of a vpdpbusd) and,
 * unless `narrow` is NULL, a 256-bit loop too (some cores run 512-bit vector
 * instructions at half rate, or clock down for them); the peak is the faster.
 * Without `narrow`, narrow = wide in the result. */
static struct peak_result measure_pair(kernel_fn wide, int wide_macs, kernel_fn narrow, int narrow_macs, int threads,
                                       const struct peak_options* o) {
  struct peak_result r;
  double wide_med = 0, narrow_med = 0;
  r.wide = measure(wide, CHAINS * 2.0 * wide_macs, threads, o->repeats, o->seconds, &wide_med);
  r.narrow = r.wide;
  narrow_med = wide_med;
  if (narrow) r.narrow = measure(narrow, CHAINS * 2.0 * narrow_macs, threads, o->repeats, o->seconds, &narrow_med);
  r.peak = r.wide > r.narrow ? r.wide : r.narrow;
  r.median = r.wide > r.narrow ? wide_med : narrow_med;
  return r;
}


/* Parses [--threads 1,2] [--repeats 15] [--seconds 0.05] (defaults: 1,2; 15;
 * 0.05). Returns 0, or 1 after printing a message to stderr. */
static int parse_options(int argc, char** argv, struct peak_options* o) {
  o->nthreads = 0;
  o->repeats = 15;
  o->seconds = 0.05;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      char* s = argv[++i];
      while (*s && o->nthreads < PEAK_MAX_THREAD_COUNTS) {
        int v = (int)strtol(s, &s, 10);
        if (v < 1 || v > PEAK_MAX_THREADS) {
          fprintf(stderr, PEAK_NAME ": error: bad thread count in --threads\n");
          return 1;
        }
        o->threads[o->nthreads++] = v;
        if (*s == ',') s++;
        else if (*s) {
          fprintf(stderr, PEAK_NAME ": error: bad --threads list\n");
          return 1;
        }
      }
    } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
      o->repeats = atoi(argv[++i]);
      if (o->repeats < 1) o->repeats = 1;
    } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      o->seconds = atof(argv[++i]);
      if (!(o->seconds > 0)) o->seconds = 0.05;
    } else {
      fprintf(stderr, "usage: " PEAK_NAME " [--threads 1,2] [--repeats 15] [--seconds 0.05]\n");
      return 1;
    }
  }
  if (o->nthreads == 0) {
    o->threads[0] = 1;
    o->threads[1] = 2;
    o->nthreads = 2;
  }
  return 0;
}

/* What a program measures on this target: the name of its instruction set,
 * the widest loop and its multiply-adds per chain per iteration, and a
 * 256-bit loop with its own, or NULL and 0. */
struct peak_isa {
  const char* name;
  kernel_fn wide;
  int wide_macs;
  kernel_fn narrow;
  int narrow_macs;
};

/* The program's main: parses the command line and, for each thread count of
 * it, in order, measures and prints one line
 *   PEAK_NAME threads=N RATE=X median_RATE=M RATE_wide=W RATE_256=Y isa=I WIDTH=L chains=12 repeats=R
 * (RATE: the best of R runs in 10^9 ops/s; median_RATE: their median;
 * RATE_wide, RATE_256: the best of the widest and of the 256-bit loop). */
static int peak_main(int argc, char** argv, const struct peak_isa* isa) {
  struct peak_options o;
  if (parse_options(argc, argv, &o) != 0) return 1;
  for (int i = 0; i < o.nthreads; i++) {
    int t = o.threads[i];
    struct peak_result r = measure_pair(isa->wide, isa->wide_macs, isa->narrow, isa->narrow_macs, t, &o);
    printf(PEAK_NAME " threads=%d " PEAK_RATE "=%.2f median_" PEAK_RATE "=%.2f " PEAK_RATE "_wide=%.2f " PEAK_RATE
           "_256=%.2f isa=%s " PEAK_WIDTH "=%d chains=%d repeats=%d\n",
           t, r.peak, r.median, r.wide, r.narrow, isa->name, isa->wide_macs, CHAINS, o.repeats);
  }
  return 0;
}

#endif /* KILN_BENCH_PEAK_HARNESS_H */
