// Model load + session + executor with a real kernel library in the bundle.
#include <doctest/doctest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"
#include "runtime_test_config.h"

using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

constexpr int kN = kiln_test::kAddScaleElements;  // elements per tensor
using kiln_test::AddScaleBundle;
using kiln_test::WriteTemp;

}  // namespace

TEST_CASE("exec: load from file, run two dispatches, read the output") {
  std::string path = WriteTemp(AddScaleBundle().Build());
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(path.c_str(), &model);
  unlink(path.c_str());  // the mapping stays valid
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln::Session session;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = 4;
  status = kiln::Session::Create(model, &options, &session);
  REQUIRE_MESSAGE(status.ok(), status.message());

  std::vector<float> a(kN), out(kN, -1.0f);
  for (int i = 0; i < kN; ++i) a[i] = (float)(i % 7) - 3.0f;
  for (int round = 0; round < 2; ++round) {
    REQUIRE(session.set_input(0, a.data(), a.size() * 4).ok());
    status = session.run();
    REQUIRE_MESSAGE(status.ok(), status.message());
    REQUIRE(session.get_output(0, out.data(), out.size() * 4).ok());
    for (int i = 0; i < kN; ++i) CHECK(out[i] == (a[i] + 0.5f * (float)i) * 2.0f);
    for (int i = 0; i < kN; ++i) a[i] += 1.0f;
  }
  const void* view = NULL;
  REQUIRE(session.get_output_view(0, &view).ok());
  CHECK(((uintptr_t)view % 64) == 0);

  kiln::Status wrong_size = session.set_input(0, a.data(), 12);
  CHECK(wrong_size.code() == KILN_INVALID_ARGUMENT);
  CHECK(std::string(wrong_size.message()).find("takes 1024 bytes, got 12") != std::string::npos);
  CHECK(session.set_input(1, a.data(), 1024).code() == KILN_INVALID_ARGUMENT);
  CHECK(session.get_output(0, out.data(), 4).code() == KILN_INVALID_ARGUMENT);
}

TEST_CASE("exec: start-up timing (kiln_session_get_load_stats) on the CPU") {
  std::string path = WriteTemp(AddScaleBundle().Build());
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(path.c_str(), &model);
  unlink(path.c_str());
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln::Session session;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = 2;
  REQUIRE(kiln::Session::Create(model, &options, &session).ok());
  kiln_session_load_stats_t stats;
  memset(&stats, 0xff, sizeof(stats));
  REQUIRE(session.get_load_stats(&stats).ok());
  // Every stage a CPU session has ran (at least 1 ns); no run yet.
  CHECK(stats.bundle_map_ns > 0);
  CHECK(stats.bundle_verify_ns > 0);
  CHECK(stats.kernel_load_ns > 0);
  CHECK(stats.model_load_ns >= stats.bundle_map_ns + stats.bundle_verify_ns + stats.kernel_load_ns);
  CHECK(stats.buffer_create_ns > 0);
  CHECK(stats.record_ns > 0);
  CHECK(stats.thread_start_ns > 0);
  CHECK(stats.session_create_ns >= stats.buffer_create_ns + stats.record_ns + stats.thread_start_ns);
  CHECK(stats.first_run_ns == 0);
  CHECK(stats.load_to_first_run_ns == 0);
  // Vulkan stages stay 0.
  CHECK(stats.instance_create_ns == 0);
  CHECK(stats.device_create_ns == 0);
  CHECK(stats.pipeline_create_ns == 0);
  CHECK(stats.pipeline_count == 0);
  CHECK(stats.pipeline_cache_used == 0);
  CHECK(stats.parameter_upload_ns == 0);

  std::vector<float> a(kN, 1.0f);
  REQUIRE(session.set_input(0, a.data(), a.size() * 4).ok());
  REQUIRE(session.run().ok());
  REQUIRE(session.get_load_stats(&stats).ok());
  CHECK(stats.first_run_ns > 0);
  CHECK(stats.load_to_first_run_ns >=
        stats.model_load_ns + stats.session_create_ns + stats.first_run_ns);
  kiln_session_load_stats_t again;
  REQUIRE(session.run().ok());  // later runs change nothing
  REQUIRE(session.get_load_stats(&again).ok());
  CHECK(memcmp(&again, &stats, sizeof(stats)) == 0);

  kiln::Status null_session(kiln_session_get_load_stats(NULL, &stats));
  CHECK(null_session.code() == KILN_INVALID_ARGUMENT);
  CHECK(session.get_load_stats(NULL).code() == KILN_INVALID_ARGUMENT);
}

TEST_CASE("exec: a failing kernel is reported with dispatch and kernel name") {
  TestBundle bundle = AddScaleBundle();
  bundle.dispatches[1].kernel = 2;  // always_fail
  std::vector<uint8_t> file = bundle.Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::Create(model, nullptr, &session).ok());
  kiln::Status status = session.run();
  CHECK(status.code() == KILN_INTERNAL);
  CHECK(std::string(status.message()).find("dispatch 1 (kernel 'always_fail') failed with code 7") !=
        std::string::npos);
}

TEST_CASE("exec: kernel table mismatches are rejected at load") {
  TestBundle bundle = AddScaleBundle();
  bundle.kernels[1].ordinal = 0;  // "scale" but ordinal 0 is vector_add
  std::vector<uint8_t> file = bundle.Build();
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  CHECK(std::string(status.message()).find("kernel 1 ('scale') in library 0: name mismatch") !=
        std::string::npos);

  bundle = AddScaleBundle();
  bundle.kernels[2].ordinal = 17;
  file = bundle.Build();
  status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  CHECK(std::string(status.message()).find("ordinal 17 out of range") != std::string::npos);

  bundle = AddScaleBundle();  // library blob that is not an ELF file
  bundle.data[1024] = 'X';
  file = bundle.Build();
  status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  CHECK(std::string(status.message()).find("library 0 (x86_64-unknown-linux-gnu): elf: bad magic") !=
        std::string::npos);
}

TEST_CASE("exec: verify-only models cannot create sessions") {
  std::vector<uint8_t> file = AddScaleBundle().Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model, KILN_MODEL_LOAD_VERIFY_ONLY).ok());
  kiln::Session session;
  CHECK(kiln::Session::Create(model, nullptr, &session).code() == KILN_INVALID_ARGUMENT);
}

// Writes the add/scale bundle to $KILN_TEST_WRITE_BUNDLE (used by
// runtime_tool_test.py to exercise the kiln tool); skipped otherwise.
TEST_CASE("exec: write the sample bundle for the tool test") {
  const char* path = getenv("KILN_TEST_WRITE_BUNDLE");
  if (!path) return;
  std::vector<uint8_t> file = AddScaleBundle().Build();
  FILE* f = fopen(path, "wb");
  REQUIRE(f != NULL);
  CHECK(fwrite(file.data(), 1, file.size(), f) == file.size());
  fclose(f);
}

// Writes what tests/tools/rpc_server_test.py sends to `kiln rpc-server` and
// kilnc would never make, to the directory $KILN_TEST_WRITE_RPC_BUNDLES
// (skipped otherwise): the add/scale bundle (ok.kiln), and the same with its
// first dispatch running data/runtime_kernels.c's `crash` (a write to address
// 16: crash.kiln) or `spin_forever` (never returns: hang.kiln).
TEST_CASE("exec: write the RPC server test bundles") {
  const char* dir = getenv("KILN_TEST_WRITE_RPC_BUNDLES");
  if (!dir) return;
  auto with_first_kernel = [](const char* name, uint32_t ordinal, uint32_t push0) {
    TestBundle bundle = AddScaleBundle();
    bundle.kernels[0] = {name, 0, ordinal};
    bundle.dispatches[0].push_constants = {push0};
    return bundle.Build();
  };
  const std::pair<const char*, std::vector<uint8_t>> files[] = {
      {"ok.kiln", AddScaleBundle().Build()},
      {"crash.kiln", with_first_kernel("crash", 7, 16)},
      {"hang.kiln", with_first_kernel("spin_forever", 8, 0)},
  };
  for (const auto& file : files) {
    FILE* f = fopen((std::string(dir) + "/" + file.first).c_str(), "wb");
    REQUIRE(f != NULL);
    CHECK(fwrite(file.second.data(), 1, file.second.size(), f) == file.second.size());
    fclose(f);
  }
}
