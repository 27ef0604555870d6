// Multi-threaded execution (the worker pool) and per-dispatch profiling.
// Uses the workgroup_ids / reverse_plus_one / fail_at kernels of
// data/runtime_kernels.c, which record which workgroups ran, how often and
// on which worker.
#include <doctest/doctest.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <set>
#include <string>
#include <vector>

#include "exec/thread_pool.h"
#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"
#include "runtime_test_config.h"

using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

// Output indices of ThreadsBundle.
enum { kIds = 0, kCounts = 1, kWorkers = 2, kReversed = 3, kFailOut = 4 };
constexpr uint32_t kNoFailure = 0xFFFFFFFFu;

// Three dispatches over the same workgroup grid {x, y, z}, one uint32 per workgroup:
//   0: workgroup_ids     -> ids, counts (+= 1 per run), workers
//   1: reverse_plus_one  ids -> reversed (reads other workgroups' results)
//   2: fail_at           control (the input) -> fail_out; fails where the
//                        linear index == control[0]
// `second_kernel` replaces dispatch 1's kernel (2 = always_fail).
TestBundle ThreadsBundle(uint32_t x, uint32_t y, uint32_t z, uint32_t second_kernel = 4) {
  std::vector<uint8_t> library = kiln_test::ReadFile(RUNTIME_TEST_KERNELS_SO);
  REQUIRE(!library.empty());
  const int64_t total = (int64_t)x * y * z;
  const uint64_t stride = ((uint64_t)total * 4 + 63) / 64 * 64;
  TestBundle bundle;
  bundle.tensors = {
      {"ids", fb::DType::Int32, {total}, fb::Storage::Arena, 0},
      {"counts", fb::DType::Int32, {total}, fb::Storage::Arena, stride},
      {"workers", fb::DType::Int32, {total}, fb::Storage::Arena, 2 * stride},
      {"reversed", fb::DType::Int32, {total}, fb::Storage::Arena, 3 * stride},
      {"control", fb::DType::Int32, {1}, fb::Storage::Arena, 4 * stride},
      {"fail_out", fb::DType::Int32, {total}, fb::Storage::Arena, 4 * stride + 64},
  };
  bundle.inputs = {4};
  bundle.outputs = {0, 1, 2, 3, 5};
  bundle.nodes = {{"record", "Record", {}, {}, {0, 1, 2}},
                  {"reverse", "Reverse", {}, {0}, {3}},
                  {"maybe_fail", "MaybeFail", {}, {4}, {5}}};
  bundle.arena_bytes = 5 * stride + 64;
  bundle.data = library;
  bundle.libraries = {{fb::LibraryFormat::ElfSharedObject, 0, library.size()}};
  bundle.kernels = {{"vector_add", 0, 0}, {"scale", 0, 1},           {"always_fail", 0, 2},
                    {"workgroup_ids", 0, 3}, {"reverse_plus_one", 0, 4}, {"fail_at", 0, 5}};
  std::vector<uint32_t> grid = {x, y, z};
  bundle.dispatches = {
      {3, grid, {{0, fb::Access::Write}, {1, fb::Access::ReadWrite}, {2, fb::Access::Write}}, {}, {0}},
      {second_kernel, grid, {{0, fb::Access::Read}, {3, fb::Access::Write}}, {}, {1}},
      {5, grid, {{4, fb::Access::Read}, {5, fb::Access::Write}}, {}, {2}},
  };
  return bundle;
}

kiln_session_options_t Options(uint32_t threads) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = threads;
  return options;
}

std::vector<uint32_t> Output(kiln::Session* session, size_t index, size_t count) {
  std::vector<uint32_t> values(count);
  kiln::Status status = session->get_output(index, values.data(), count * 4);
  REQUIRE_MESSAGE(status.ok(), status.message());
  return values;
}

// Threads of this process, from /proc/self/status.
int ProcessThreads() {
  FILE* f = fopen("/proc/self/status", "r");
  REQUIRE(f != NULL);
  char line[256];
  int threads = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "Threads:", 8) == 0) threads = atoi(line + 8);
  }
  fclose(f);
  return threads;
}

// Outputs of `runs` runs of ThreadsBundle(grid) with `threads` threads.
struct RunResult {
  std::vector<uint32_t> ids, counts, workers, reversed, fail_out;
};

RunResult RunGrid(const std::vector<uint8_t>& file, size_t total, uint32_t threads, int runs) {
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln::Session session;
  kiln_session_options_t options = Options(threads);
  status = kiln::Session::Create(model, &options, &session);
  REQUIRE_MESSAGE(status.ok(), status.message());
  uint32_t control = kNoFailure;
  for (int run = 0; run < runs; ++run) {
    REQUIRE(session.set_input(0, &control, 4).ok());
    status = session.run();
    REQUIRE_MESSAGE(status.ok(), status.message());
  }
  RunResult result;
  result.ids = Output(&session, kIds, total);
  result.counts = Output(&session, kCounts, total);
  result.workers = Output(&session, kWorkers, total);
  result.reversed = Output(&session, kReversed, total);
  result.fail_out = Output(&session, kFailOut, total);
  return result;
}

}  // namespace

TEST_CASE("threads: results match the serial executor for every grid and thread count") {
  const std::vector<std::vector<uint32_t>> grids = {
      {1, 1, 1},  {2, 1, 1}, {1, 2, 1},  {1, 1, 2},   {7, 1, 1},    {1, 7, 1},
      {1, 1, 7},  {1000, 1, 1}, {1, 1000, 1}, {1, 1, 1000}, {10, 10, 10}, {8, 5, 25}, {3, 1, 7}};
  for (const auto& grid : grids) {
    const size_t total = (size_t)grid[0] * grid[1] * grid[2];
    std::vector<uint8_t> file = ThreadsBundle(grid[0], grid[1], grid[2]).Build();
    RunResult serial = RunGrid(file, total, 1, 2);
    for (size_t i = 0; i < total; ++i) {  // the serial results are right
      uint32_t x = (uint32_t)(i % grid[0]), y = (uint32_t)(i / grid[0] % grid[1]);
      uint32_t z = (uint32_t)(i / grid[0] / grid[1]);
      REQUIRE(serial.ids[i] == ((x + 1) | (y + 1) << 10 | (z + 1) << 20));
      REQUIRE(serial.counts[i] == 2);
      REQUIRE(serial.workers[i] == 0);
      REQUIRE(serial.reversed[i] == serial.ids[total - 1 - i] + 1);
      REQUIRE(serial.fail_out[i] == 1);
    }
    for (uint32_t threads : {2u, 3u, 8u}) {
      CAPTURE(grid[0]);
      CAPTURE(grid[1]);
      CAPTURE(grid[2]);
      CAPTURE(threads);
      RunResult parallel = RunGrid(file, total, threads, 2);
      CHECK(parallel.ids == serial.ids);
      CHECK(parallel.counts == serial.counts);  // every workgroup exactly once per run
      CHECK(parallel.reversed == serial.reversed);
      CHECK(parallel.fail_out == serial.fail_out);
      // Static partition: worker w runs [total * w / N, total * (w + 1) / N);
      // a single workgroup runs on the calling thread.
      for (size_t i = 0; i < total; ++i) {
        uint32_t expected = 0;
        if (total > 1) {
          while ((uint64_t)total * (expected + 1) / threads <= i) ++expected;
        }
        REQUIRE(parallel.workers[i] == expected);
      }
    }
  }
}

TEST_CASE("threads: 2000 consecutive runs with 2 threads (and 300 with 8) do not hang") {
  const size_t total = 42;
  std::vector<uint8_t> file = ThreadsBundle(7, 3, 2).Build();
  RunResult two = RunGrid(file, total, 2, 2000);
  for (size_t i = 0; i < total; ++i) {
    REQUIRE(two.counts[i] == 2000);
    REQUIRE(two.reversed[i] == two.ids[total - 1 - i] + 1);
  }
  RunResult eight = RunGrid(file, total, 8, 300);
  for (size_t i = 0; i < total; ++i) REQUIRE(eight.counts[i] == 300);
}

TEST_CASE("threads: a kernel error in one workgroup under 4 threads is a clean status") {
  std::vector<uint8_t> file = ThreadsBundle(1000, 1, 1).Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  kiln::Session session;
  kiln_session_options_t options = Options(4);
  REQUIRE(kiln::Session::Create(model, &options, &session).ok());
  for (int round = 0; round < 3; ++round) {
    uint32_t control = 613;  // in worker 2's range [500, 750)
    REQUIRE(session.set_input(0, &control, 4).ok());
    kiln::Status status = session.run();
    CHECK(status.code() == KILN_INTERNAL);
    CHECK_MESSAGE(std::string(status.message()).find(
                      "dispatch 2 (kernel 'fail_at') failed with code 9 at workgroup "
                      "(613, 0, 0) on worker 2") != std::string::npos,
                  status.message());
    // The session stays usable.
    control = kNoFailure;
    REQUIRE(session.set_input(0, &control, 4).ok());
    status = session.run();
    CHECK_MESSAGE(status.ok(), status.message());
  }

}

TEST_CASE("threads: every workgroup failing at once gives one error") {
  std::vector<uint8_t> file = ThreadsBundle(10, 10, 10, /*second_kernel=*/2).Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  kiln::Session session;
  kiln_session_options_t options = Options(4);
  REQUIRE(kiln::Session::Create(model, &options, &session).ok());
  kiln::Status status = session.run();
  CHECK(status.code() == KILN_INTERNAL);
  CHECK_MESSAGE(std::string(status.message()).find(
                    "run: dispatch 1 (kernel 'always_fail') failed with code 7") == 0,
                status.message());
}

namespace {

// What the thread_init hook saw.
struct InitRecord {
  pthread_t main_thread;          // the thread creating the session
  uint32_t calls = 0;             // number of calls (atomic)
  uint32_t indices[16] = {0};     // worker index of each call
  bool on_other_thread[16] = {};  // whether each call ran off the main thread
};

void RecordInit(uint32_t worker_index, void* user_data) {
  InitRecord* record = (InitRecord*)user_data;
  uint32_t slot = __atomic_fetch_add(&record->calls, 1, __ATOMIC_SEQ_CST);
  if (slot < 16) {
    record->indices[slot] = worker_index;
    record->on_other_thread[slot] = !pthread_equal(pthread_self(), record->main_thread);
  }
}

}  // namespace

TEST_CASE("threads: thread_init runs once per pool thread with distinct indices") {
  std::vector<uint8_t> file = ThreadsBundle(7, 1, 1).Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  const int baseline = ProcessThreads();
  {
    InitRecord record;
    record.main_thread = pthread_self();
    kiln_session_options_t options = Options(5);
    options.thread_init = RecordInit;
    options.thread_init_user_data = &record;
    kiln::Session session;
    REQUIRE(kiln::Session::Create(model, &options, &session).ok());
    // Every hook has returned by the time create returns.
    REQUIRE(__atomic_load_n(&record.calls, __ATOMIC_SEQ_CST) == 4);
    std::set<uint32_t> indices(record.indices, record.indices + 4);
    CHECK(indices == std::set<uint32_t>{1, 2, 3, 4});
    for (int i = 0; i < 4; ++i) CHECK(record.on_other_thread[i]);
    CHECK(ProcessThreads() == baseline + 4);
    uint32_t control = kNoFailure;
    REQUIRE(session.set_input(0, &control, 4).ok());
    REQUIRE(session.run().ok());
    CHECK(record.calls == 4);  // not per run
  }
  CHECK(ProcessThreads() == baseline);  // kiln_session_free joined them

  // One thread: no pool, no hook, no threads; zero means one.
  for (uint32_t threads : {0u, 1u}) {
    InitRecord record;
    kiln_session_options_t options = Options(threads);
    options.thread_init = RecordInit;
    options.thread_init_user_data = &record;
    kiln::Session session;
    REQUIRE(kiln::Session::Create(model, &options, &session).ok());
    CHECK(ProcessThreads() == baseline);
    CHECK(record.calls == 0);
  }

  kiln::Session session;
  kiln_session_options_t options = Options(KILN_SESSION_MAX_THREADS + 1);
  kiln::Status status = kiln::Session::Create(model, &options, &session);
  CHECK(status.code() == KILN_INVALID_ARGUMENT);
  CHECK(std::string(status.message()).find("thread_count 1025 exceeds 1024") != std::string::npos);
}

TEST_CASE("threads: a failed thread creation tears the partial pool down") {
  const int baseline = ProcessThreads();
  InitRecord record;
  record.main_thread = pthread_self();
  kiln_thread_pool_options_t options;
  memset(&options, 0, sizeof(options));
  options.thread_count = 6;
  options.thread_init = RecordInit;
  options.thread_init_user_data = &record;
  options.debug_fail_create_at = 3;  // workers 1 and 2 start, 3 "fails"
  kiln_thread_pool_t* pool = NULL;
  kiln_status_t status = kiln_thread_pool_create(&options, &pool);
  CHECK(kiln_status_code(status) == KILN_OUT_OF_MEMORY);
  CHECK_MESSAGE(std::string(kiln_status_message(status))
                        .find("thread pool: creating worker thread 3 of 5 failed") == 0,
                kiln_status_message(status));
  kiln_status_free(status);
  CHECK(pool == NULL);
  CHECK(ProcessThreads() == baseline);  // joined
  CHECK(record.calls == 2);

  options.debug_fail_create_at = 1;  // nothing starts
  status = kiln_thread_pool_create(&options, &pool);
  CHECK(kiln_status_code(status) == KILN_OUT_OF_MEMORY);
  kiln_status_free(status);
  CHECK(ProcessThreads() == baseline);
}

namespace {

// Counts task calls per worker.
struct PoolCounts {
  uint32_t calls[8];  // calls seen by each worker
};

void CountTask(void* context, uint32_t worker_index) {
  ((PoolCounts*)context)->calls[worker_index] += 1;  // one writer per slot
}

}  // namespace

TEST_CASE("threads: the pool runs every task on every worker, with a barrier") {
  kiln_thread_pool_options_t options;
  memset(&options, 0, sizeof(options));
  options.thread_count = 3;
  kiln_thread_pool_t* pool = NULL;
  kiln_status_t status = kiln_thread_pool_create(&options, &pool);
  REQUIRE_MESSAGE(status == NULL, kiln_status_message(status));
  CHECK(kiln_thread_pool_size(pool) == 3);
  PoolCounts counts = {};
  for (uint32_t i = 1; i <= 20000; ++i) {
    kiln_thread_pool_run(pool, CountTask, &counts);
    if (counts.calls[0] != i || counts.calls[1] != i || counts.calls[2] != i) {
      FAIL("worker counts out of step at task " << i);
    }
  }
  kiln_thread_pool_free(pool);
  options.thread_count = 1;  // a pool needs at least two workers
  CHECK(kiln_status_code(status = kiln_thread_pool_create(&options, &pool)) ==
        KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
}

TEST_CASE("profiling: per-dispatch times when enabled, an error otherwise") {
  std::vector<uint8_t> file = ThreadsBundle(100, 1, 1).Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  for (uint32_t threads : {1u, 2u}) {
    CAPTURE(threads);
    kiln::Session session;
    kiln_session_options_t options = Options(threads);
    REQUIRE(kiln::Session::Create(model, &options, &session).ok());
    CHECK(session.dispatch_count() == 3);
    uint64_t nanoseconds = 0;
    CHECK(session.get_dispatch_profile(0, &nanoseconds).code() == KILN_INVALID_ARGUMENT);  // no run yet
    uint32_t control = kNoFailure;
    REQUIRE(session.set_input(0, &control, 4).ok());
    REQUIRE(session.set_profiling(true).ok());
    REQUIRE(session.run().ok());
    for (size_t d = 0; d < 3; ++d) {
      nanoseconds = 0;
      REQUIRE(session.get_dispatch_profile(d, &nanoseconds).ok());
      CHECK(nanoseconds > 0);
      CHECK(nanoseconds < 10ull * 1000 * 1000 * 1000);
    }
    kiln::Status status = session.get_dispatch_profile(3, &nanoseconds);
    CHECK(status.code() == KILN_INVALID_ARGUMENT);
    CHECK(std::string(status.message()).find("dispatch 3 out of range (3 dispatches)") !=
          std::string::npos);

    // A failing run: dispatches it did not reach read 0.
    control = 5;
    REQUIRE(session.set_input(0, &control, 4).ok());
    CHECK(session.run().code() == KILN_INTERNAL);
    REQUIRE(session.get_dispatch_profile(1, &nanoseconds).ok());
    CHECK(nanoseconds > 0);
    REQUIRE(session.get_dispatch_profile(2, &nanoseconds).ok());
    CHECK(nanoseconds > 0);  // dispatch 2 is the one that failed: it ran

    REQUIRE(session.set_profiling(false).ok());
    control = kNoFailure;
    REQUIRE(session.set_input(0, &control, 4).ok());
    REQUIRE(session.run().ok());
    status = session.get_dispatch_profile(0, &nanoseconds);
    CHECK(status.code() == KILN_INVALID_ARGUMENT);
    CHECK(std::string(status.message()).find("not profiled") != std::string::npos);
  }
  CHECK(kiln_session_dispatch_count(NULL) == 0);
  kiln::Status null_session(kiln_session_set_profiling(NULL, 1));
  CHECK(null_session.code() == KILN_INVALID_ARGUMENT);
}

TEST_CASE("profiling: dispatches after a failing one read 0") {
  std::vector<uint8_t> file = ThreadsBundle(4, 1, 1, /*second_kernel=*/2).Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  for (uint32_t threads : {1u, 3u}) {
    kiln::Session session;
    kiln_session_options_t options = Options(threads);
    REQUIRE(kiln::Session::Create(model, &options, &session).ok());
    REQUIRE(session.set_profiling(true).ok());
    CHECK(session.run().code() == KILN_INTERNAL);
    uint64_t times[3] = {0, 0, 0};
    for (size_t d = 0; d < 3; ++d) REQUIRE(session.get_dispatch_profile(d, &times[d]).ok());
    CHECK(times[0] > 0);
    CHECK(times[1] > 0);
    CHECK(times[2] == 0);
  }
}
