// Concurrency stress on a real compiled model, through the public C++ API.
//
//   kiln_concurrency_stress MODEL.kiln INPUT.bin THREADS RUNS
//
// 1. THREADS threads share the model, each with its own session (2 pool
//    threads each), and run it RUNS times with the same input: every output
//    must be bit-identical to a reference run made first.
// 2. THREADS threads share ONE session and call run / set_input / get_output
//    on it RUNS times each: every call either succeeds or is refused as "in
//    use by another thread" (KILN_INVALID_ARGUMENT); nothing hangs or
//    crashes, and the session still computes the reference afterwards.
// Prints counts; exit 0 on success, 1 on a mismatch or an unexpected status.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

std::vector<uint8_t> ReadAll(const char* path) {
  std::vector<uint8_t> data;
  FILE* f = fopen(path, "rb");
  if (!f) return data;
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) data.insert(data.end(), buffer, buffer + n);
  fclose(f);
  return data;
}

kiln_session_options_t Options(uint32_t threads) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = threads;
  return options;
}

// Runs once with `input` and returns output 0's bytes (empty on failure).
std::vector<uint8_t> RunOnce(kiln::Session& session, const std::vector<uint8_t>& input, size_t out_bytes) {
  std::vector<uint8_t> out(out_bytes);
  if (!session.set_input(0, input.data(), input.size()).ok() || !session.run().ok() ||
      !session.get_output(0, out.data(), out.size()).ok())
    out.clear();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: kiln_concurrency_stress MODEL.kiln INPUT.bin THREADS RUNS\n");
    return 2;
  }
  const int threads = atoi(argv[3]), runs = atoi(argv[4]);
  std::vector<uint8_t> input = ReadAll(argv[2]);
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(argv[1], &model);
  if (!status.ok()) {
    fprintf(stderr, "load: %s\n", status.message());
    return 1;
  }
  kiln_tensor_info_t out_info;
  kiln_tensor_info_init(&out_info);
  if (!model.get_output_info(0, &out_info).ok()) return 1;
  kiln::Session reference_session;
  kiln_session_options_t one = Options(1);
  if (!kiln::Session::Create(model, &one, &reference_session).ok()) return 1;
  const std::vector<uint8_t> reference = RunOnce(reference_session, input, out_info.byte_size);
  if (reference.empty()) {
    fprintf(stderr, "the reference run failed\n");
    return 1;
  }

  // 1. Own sessions.
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      kiln::Session session;
      kiln_session_options_t options = Options(2);
      if (!kiln::Session::Create(model, &options, &session).ok()) {
        failures++;
        return;
      }
      for (int r = 0; r < runs; ++r) {
        std::vector<uint8_t> out = RunOnce(session, input, out_info.byte_size);
        if (out.empty()) failures++;
        else if (out != reference) mismatches++;
      }
    });
  }
  for (auto& t : pool) t.join();
  printf("own sessions: %d threads x %d runs: %d mismatches, %d failures\n", threads, runs, mismatches.load(),
         failures.load());

  // 2. One shared session.
  kiln::Session shared;
  kiln_session_options_t two = Options(2);
  if (!kiln::Session::Create(model, &two, &shared).ok()) return 1;
  std::atomic<int> ok{0}, refused{0}, unexpected{0};
  pool.clear();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<uint8_t> out(out_info.byte_size);
      for (int r = 0; r < runs; ++r) {
        kiln::Status calls[3] = {shared.set_input(0, input.data(), input.size()), shared.run(),
                                 shared.get_output(0, out.data(), out.size())};
        for (auto& s : calls) {
          if (s.ok()) ok++;
          else if (s.code() == KILN_INVALID_ARGUMENT && strstr(s.message(), "in use by another thread")) refused++;
          else unexpected++;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::vector<uint8_t> after = RunOnce(shared, input, out_info.byte_size);
  printf("shared session: %d threads x %d x 3 calls: %d succeeded, %d refused as in use, %d unexpected; "
         "afterwards %s\n",
         threads, runs, ok.load(), refused.load(), unexpected.load(), after == reference ? "correct" : "WRONG");
  bool pass = mismatches == 0 && failures == 0 && unexpected == 0 && after == reference && ok > 0;
  printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
