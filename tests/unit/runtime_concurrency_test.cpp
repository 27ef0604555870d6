// One session, two threads: a session serves one thread at a time, and a
// call that finds it busy in another thread's call is refused at once with
// KILN_INVALID_ARGUMENT instead of racing (silently wrong outputs) or
// waiting in the thread pool forever (issue 18, finding 5). The
// wait_for_flag kernel keeps a run inside the session until the test flips
// a constant in its own copy of the bundle, so the overlap is certain.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"
#include "runtime_test_config.h"

namespace {

namespace fb = kiln::fb;
using namespace kiln_test;

// flag (a constant uint32 at data offset 0) -> wait_for_flag -> out.
TestBundle WaitBundle(const std::vector<uint8_t>& library) {
  TestBundle b;
  b.tensors = {{"flag", fb::DType::Int32, {1}, fb::Storage::Constant, 0},
               {"out", fb::DType::Int32, {1}, fb::Storage::Arena, 0}};
  b.outputs = {1};
  b.nodes = {{"wait", "Wait", {}, {0}, {1}}};
  b.arena_bytes = 64;
  b.data.assign(64, 0);
  b.data.insert(b.data.end(), library.begin(), library.end());
  b.libraries = {{fb::LibraryFormat::ElfSharedObject, 64, library.size()}};
  b.kernels = {{"wait_for_flag", 0, 6}};
  b.dispatches = {{0, {1, 1, 1}, {{0, fb::Access::Read}, {1, fb::Access::Write}}, {}, {0}}};
  return b;
}

TEST_CASE("session: a second thread's call while a run is inside is refused at once; the run completes") {
  std::vector<uint8_t> file = WaitBundle(ReadFile(RUNTIME_TEST_KERNELS_SO)).Build();
  // The model uses 64-byte aligned caller memory in place: the flag the
  // kernel polls is this buffer's first data-segment word.
  uint8_t* bytes = (uint8_t*)aligned_alloc(64, (file.size() + 63) / 64 * 64);
  REQUIRE(bytes);
  memcpy(bytes, file.data(), file.size());
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(bytes, file.size(), &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  REQUIRE(kiln::Status(kiln_model_get_info(model.get(), &info)).ok());
  uint32_t* flag = (uint32_t*)(bytes + info.data_segment_offset);
  kiln::Session session;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  REQUIRE(kiln::Session::Create(model, &options, &session).ok());

  // Two threads run at once: the first inside waits for the flag, the other
  // must come back refused while it waits.
  std::atomic<int> refused{0}, succeeded{0};
  std::string message;
  auto call = [&] {
    kiln::Status s = session.run();
    if (s.ok()) {
      succeeded++;
    } else if (s.code() == KILN_INVALID_ARGUMENT) {
      message = s.message();
      refused++;
    }
  };
  std::thread a(call), b(call);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (refused.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  CHECK(refused.load() == 1);
  // Other calls on the busy session are refused the same way.
  uint32_t out = 0;
  CHECK(session.get_output(0, &out, 4).code() == KILN_INVALID_ARGUMENT);
  CHECK(session.set_profiling(true).code() == KILN_INVALID_ARGUMENT);
  __atomic_store_n(flag, 7u, __ATOMIC_RELEASE);
  a.join();
  b.join();
  CHECK(succeeded.load() == 1);
  CHECK(refused.load() == 1);
  CHECK(message.find("in use by another thread") != std::string::npos);
  // Free again: later calls work and see the run's result.
  REQUIRE(session.get_output(0, &out, 4).ok());
  CHECK(out == 7u);
  REQUIRE(session.run().ok());
  session = kiln::Session();
  model = kiln::Model();
  free(bytes);
}

}  // namespace
