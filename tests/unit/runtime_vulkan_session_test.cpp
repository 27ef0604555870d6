// Vulkan sessions through the public API (kiln.h): a bundle holding the
// vector-add test shader (data/vulkan_vector_add.comp) runs on lavapipe with
// the validation layer and its synchronization checks; every message fails
// the test. Skips like runtime_vulkan_test.cpp when something is missing.
#include <doctest/doctest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"
#include "runtime_test_config.h"
#include "runtime_vulkan_util.h"

namespace fb = kiln::fb;

namespace {

using kiln_test::Message;

constexpr uint32_t kElements = 40;  // fewer than the shader's 64 invocations
constexpr float kScale = 0.5f;

void CountMessage(void* user_data, int, const char* text) {
  MESSAGE("vulkan: " << text);
  ++*static_cast<int*>(user_data);
}

// c = a + 0.5 * b: a is the input (arena 0), b a constant, c the output
// (arena 256); one dispatch of the vector-add shader with {n, scale}. With
// `strings`, also a string input s [3] (32 bytes of strings, arena 512), a
// string output t sharing its slot (t is s after a run) and a string output
// e [2] at 768 that nothing writes (docs/bundle.md#string-tensors).
std::vector<uint8_t> AddBundle(const std::vector<uint8_t>& spirv, bool strings = false) {
  kiln_test::TestBundle b;
  int64_t n = kElements;
  b.tensors = {{"a", fb::DType::Float32, {n}, fb::Storage::Arena, 0},
               {"b", fb::DType::Float32, {n}, fb::Storage::Constant, 0},
               {"c", fb::DType::Float32, {n}, fb::Storage::Arena, 256}};
  b.inputs = {0};
  b.outputs = {2};
  b.arena_bytes = 512;
  kiln_test::SetConstantsAndLibrary(&b, kElements, 100.0f, fb::LibraryFormat::SpirV, 256, spirv);
  b.kernels = {{"vector_add", 0, 0}};
  b.spirv[0].size = spirv.size();
  b.spirv[0].workgroup_size = {64, 1, 1};
  b.spirv[0].binding_count = 3;
  b.spirv[0].push_constant_size = 8;
  uint32_t scale_bits;
  memcpy(&scale_bits, &kScale, 4);
  kiln_test::TestDispatch dispatch;
  dispatch.bindings = {{0, fb::Access::Read}, {1, fb::Access::Read}, {2, fb::Access::Write}};
  dispatch.push_constants = {kElements, scale_bits};
  b.dispatches = {dispatch};
  if (strings) {
    b.tensors.push_back({"s", fb::DType::String, {3}, fb::Storage::Arena, 512});
    b.tensors.push_back({"t", fb::DType::String, {3}, fb::Storage::Arena, 512});
    b.tensors.push_back({"e", fb::DType::String, {2}, fb::Storage::Arena, 768});
    b.tensors[3].string_bytes = b.tensors[4].string_bytes = 32;
    b.tensors[5].string_bytes = 8;
    b.inputs = {0, 3};
    b.outputs = {2, 4, 5};
    b.arena_bytes = 1024;
  }
  return b.Build();
}

kiln_session_options_t Defaults() {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  return options;
}

// The session's pipeline cache, read in two calls (size, then bytes).
std::vector<uint8_t> PipelineCache(kiln_session_t* session) {
  size_t size = 0;
  kiln_status_t status = kiln_session_get_vulkan_pipeline_cache(session, NULL, 0, &size);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  std::vector<uint8_t> cache(size);
  size_t written = 0;
  status = kiln_session_get_vulkan_pipeline_cache(session, cache.data(), cache.size(), &written);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(written == size);
  return cache;
}

// A loaded Vulkan bundle and the options that put its session on lavapipe.
struct VulkanModel {
  std::vector<uint8_t> file;  // the bundle; outlives `model`
  kiln_model_t* model = nullptr;
  kiln_session_options_t options = Defaults();
  int messages = 0;
  std::string skip;

  bool Open(bool strings = false) {
    std::vector<uint8_t> spirv = kiln_test::ReadFile(RUNTIME_TEST_VULKAN_VECTOR_ADD_SPV);
    if (spirv.empty()) {
      skip = "the test shader was not compiled (no glslangValidator)";
      return false;
    }
    kiln_vulkan_instance_t* instance = nullptr;
    kiln_status_t status = kiln_vulkan_instance_create(nullptr, &instance);
    if (status) {
      REQUIRE_MESSAGE(kiln_status_code(status) == KILN_UNSUPPORTED, Message(status));  // else a real error
      skip = Message(status);
      return false;
    }
    uint32_t index = 0;
    bool found = kiln_test::FindLavapipe(instance, &index);
    kiln_vulkan_instance_free(instance);
    if (!found) {
      skip = "no lavapipe device";
      return false;
    }
    file = AddBundle(spirv, strings);
    status = kiln_model_load_memory(file.data(), file.size(), &model);  // used in place when aligned
    REQUIRE_MESSAGE(status == NULL, Message(status));
    options.vulkan_device = index + 1;
    options.vulkan_validation = KILN_VULKAN_VALIDATE_SYNCHRONIZATION;
    options.vulkan_message = CountMessage;
    options.vulkan_message_user_data = &messages;
    return true;
  }
  // A session of the model with `with` (default: `options`); must succeed.
  kiln_session_t* CreateSession(const kiln_session_options_t* with = nullptr) {
    kiln_session_t* session = nullptr;
    kiln_status_t status = kiln_session_create(model, with ? with : &options, &session);
    REQUIRE_MESSAGE(status == NULL, Message(status));
    return session;
  }
  ~VulkanModel() { kiln_model_free(model); }
};

#define OPEN_OR_SKIP(m)                     \
  if (!(m).Open()) {                        \
    kiln_test::SkipOrFail((m).skip);        \
    return;                                 \
  }

// Runs once with input a = start + i and checks c = a + 0.5 * b.
void RunAndCheck(kiln_session_t* session, float start) {
  std::vector<float> a(kElements), c(kElements, -1.0f);
  for (uint32_t i = 0; i < kElements; ++i) a[i] = start + (float)i;
  kiln_status_t status = kiln_session_set_input(session, 0, a.data(), a.size() * 4);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  status = kiln_session_run(session);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  status = kiln_session_get_output(session, 0, c.data(), c.size() * 4);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  for (uint32_t i = 0; i < kElements; ++i) CHECK(c[i] == a[i] + kScale * 100.0f * (float)i);
  const void* view = nullptr;
  status = kiln_session_get_output_view(session, 0, &view);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(memcmp(view, c.data(), c.size() * 4) == 0);
}

}  // namespace

TEST_CASE("vulkan session: a SPIR-V bundle runs and replays through kiln.h") {
  VulkanModel m;
  OPEN_OR_SKIP(m);
  kiln_session_t* session = m.CreateSession();
  CHECK(std::string(kiln_session_device_name(session)).find("llvmpipe") != std::string::npos);
  CHECK(kiln_session_dispatch_count(session) == 1);
  RunAndCheck(session, 1.0f);
  RunAndCheck(session, -7.0f);  // the recorded list replays with new inputs
  uint64_t ns = 0;
  kiln_status_t status = kiln_session_get_dispatch_profile(session, 0, &ns);
  CHECK(Message(status).find("was not profiled") != std::string::npos);  // not yet (Message frees it)
  // Profiled runs: the dispatch's time from the device's timestamps (the
  // list recorded again with them), results unchanged.
  REQUIRE(kiln_session_set_profiling(session, 1) == NULL);
  RunAndCheck(session, 3.0f);
  status = kiln_session_get_dispatch_profile(session, 0, &ns);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(ns >= 1);
  CHECK(ns < 10ull * 1000 * 1000 * 1000);
  REQUIRE(kiln_session_set_profiling(session, 0) == NULL);
  RunAndCheck(session, 5.0f);  // the plain list again
  status = kiln_session_get_dispatch_profile(session, 0, &ns);
  CHECK(Message(status).find("was not profiled") != std::string::npos);
  kiln_session_free(session);
  CHECK(m.messages == 0);
}

TEST_CASE("vulkan session: start-up timing (kiln_session_get_load_stats)") {
  VulkanModel m;
  OPEN_OR_SKIP(m);
  kiln_session_t* session = m.CreateSession();
  kiln_session_load_stats_t stats;
  kiln_session_load_stats_init(&stats);
  REQUIRE(kiln_session_get_load_stats(session, &stats) == NULL);
  CHECK(stats.bundle_verify_ns > 0);
  CHECK(stats.kernel_load_ns == 0);  // SPIR-V becomes pipelines per session
  CHECK(stats.instance_create_ns > 0);
  CHECK(stats.device_create_ns > 0);
  CHECK(stats.pipeline_create_ns > 0);
  CHECK(stats.pipeline_count == 1);
  CHECK(stats.pipeline_cache_used == 0);
  CHECK(stats.buffer_create_ns > 0);
  CHECK(stats.parameter_upload_ns > 0);
  CHECK(stats.record_ns > 0);
  CHECK(stats.thread_start_ns == 0);
  CHECK(stats.session_create_ns >= stats.instance_create_ns + stats.device_create_ns +
                                       stats.pipeline_create_ns + stats.buffer_create_ns +
                                       stats.parameter_upload_ns + stats.record_ns);
  CHECK(stats.first_run_ns == 0);
  CHECK(stats.load_to_first_run_ns == 0);
  RunAndCheck(session, 2.0f);
  REQUIRE(kiln_session_get_load_stats(session, &stats) == NULL);
  CHECK(stats.first_run_ns > 0);
  CHECK(stats.load_to_first_run_ns >= stats.session_create_ns + stats.first_run_ns);
  CHECK(stats.load_to_first_run_ns >= stats.pipeline_create_ns);

  // A session seeded with this one's pipeline cache reports it as used.
  std::vector<uint8_t> blob = PipelineCache(session);
  kiln_session_free(session);
  kiln_session_options_t options = m.options;
  options.vulkan_pipeline_cache = blob.data();
  options.vulkan_pipeline_cache_size = blob.size();
  session = m.CreateSession(&options);
  REQUIRE(kiln_session_get_load_stats(session, &stats) == NULL);
  CHECK(stats.pipeline_cache_used == 1);
  CHECK(stats.pipeline_create_ns > 0);
  kiln_session_free(session);
  CHECK(m.messages == 0);
}

TEST_CASE("vulkan session: string inputs and outputs go through the device arena") {
  VulkanModel m;
  if (!m.Open(true)) {
    kiln_test::SkipOrFail(m.skip);
    return;
  }
  kiln::Session session(m.CreateSession());
  // A session of its own writes strings into a device arena that a new
  // session may get again (device memory is not zeroed).
  REQUIRE(session.set_input_strings(1, {"old", "strings", "here"}).ok());
  REQUIRE(session.run().ok());
  session = kiln::Session(m.CreateSession());
  // Before any run: empty strings (the session zeroed their offsets).
  std::vector<std::string> strings;
  REQUIRE(session.get_output_strings(1, &strings).ok());
  CHECK(strings == std::vector<std::string>{"", "", ""});
  REQUIRE(session.get_output_strings(2, &strings).ok());
  CHECK(strings == std::vector<std::string>{"", ""});
  const std::vector<std::string> want = {"vulkan", "", "\xe2\x82\xac uro"};
  for (int run = 0; run < 2; ++run) {  // the run reuses s's slot (t): set it each time
    REQUIRE(session.set_input_strings(1, want).ok());
    RunAndCheck(session.get(), 1.0f + (float)run);
    kiln_tensor_info_t info;
    REQUIRE(session.get_output_info(1, &info).ok());
    CHECK(info.byte_size == 4 * 4 + 6 + 7);
    std::vector<uint8_t> table(info.byte_size);
    REQUIRE(session.get_output(1, table.data(), table.size()).ok());
    std::vector<uint8_t> expected;
    REQUIRE(kiln::PackStrings(want, &expected));
    CHECK(table == expected);
    REQUIRE(session.get_output_strings(1, &strings).ok());
    CHECK(strings == want);
  }
  kiln::Status status = session.set_input_strings(1, {"x", "y"});  // two strings for [3]
  CHECK(status.code() == KILN_INVALID_ARGUMENT);
  session = kiln::Session();
  CHECK(m.messages == 0);
}

// Writes the vector-add Vulkan bundle to $KILN_TEST_WRITE_VULKAN_BUNDLE (for
// runtime_tool_test.py's `kiln bench --device vulkan --startup`); writes
// nothing where the test would skip (no compiled shader or no lavapipe).
TEST_CASE("vulkan session: write the sample bundle for the tool test") {
  const char* path = getenv("KILN_TEST_WRITE_VULKAN_BUNDLE");
  if (!path) return;
  VulkanModel m;
  OPEN_OR_SKIP(m);
  FILE* f = fopen(path, "wb");
  REQUIRE(f != NULL);
  CHECK(fwrite(m.file.data(), 1, m.file.size(), f) == m.file.size());
  fclose(f);
}

TEST_CASE("vulkan session: device kinds, device index and the pipeline cache") {
  VulkanModel m;
  OPEN_OR_SKIP(m);
  kiln_session_t* session = nullptr;
  kiln_session_options_t options = m.options;
  options.device = KILN_DEVICE_CPU;
  kiln_status_t status = kiln_session_create(m.model, &options, &session);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Message(status).find("compiled for Vulkan and cannot run on the CPU") != std::string::npos);

  options = m.options;
  options.vulkan_device = 1000;
  status = kiln_session_create(m.model, &options, &session);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Message(status).find("vulkan_device 1000") != std::string::npos);

  // The cache from one session seeds the next.
  options = m.options;
  options.device = KILN_DEVICE_VULKAN;
  status = kiln_session_create(m.model, &options, &session);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  std::vector<uint8_t> blob = PipelineCache(session);
  CHECK(blob.size() >= 32);  // at least the header
  size_t size = 0;
  status = kiln_session_get_vulkan_pipeline_cache(session, blob.data(), blob.size() - 1, &size);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);  // a buffer one byte short
  CHECK(Message(status).find("too small") != std::string::npos);
  kiln_session_free(session);
  options.vulkan_pipeline_cache = blob.data();
  options.vulkan_pipeline_cache_size = blob.size();
  status = kiln_session_create(m.model, &options, &session);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  RunAndCheck(session, 3.0f);
  kiln_session_free(session);
  CHECK(m.messages == 0);

  // A bundle without kernels runs anywhere (here: on the CPU).
  std::vector<uint8_t> empty_file = kiln_test::MinimalBundle().Build();
  kiln_model_t* empty_model = nullptr;
  REQUIRE(kiln_model_load_memory(empty_file.data(), empty_file.size(), &empty_model) == NULL);
  status = kiln_session_create(empty_model, &options, &session);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(std::string(kiln_session_device_name(session)) == "cpu");
  kiln_session_free(session);
  kiln_model_free(empty_model);

  // A CPU bundle cannot run on Vulkan, and a CPU session has no pipeline cache.
  kiln_test::TestBundle cpu = kiln_test::MinimalBundle();
  kiln_test::SetConstantsAndLibrary(&cpu, 4, 1.0f, fb::LibraryFormat::ElfSharedObject, 64,
                                    kiln_test::ReadFile(RUNTIME_TEST_KERNELS_SO));
  cpu.kernels = {{"vector_add", 0, 0}};
  std::vector<uint8_t> cpu_file = cpu.Build();
  kiln_model_t* cpu_model = nullptr;
  status = kiln_model_load_memory(cpu_file.data(), cpu_file.size(), &cpu_model);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  status = kiln_session_create(cpu_model, &options, &session);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Message(status).find("compiled for the CPU and cannot run on Vulkan") != std::string::npos);
  REQUIRE(kiln_session_create(cpu_model, NULL, &session) == NULL);
  CHECK(std::string(kiln_session_device_name(session)) == "cpu");
  status = kiln_session_get_vulkan_pipeline_cache(session, NULL, 0, &size);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  kiln_session_free(session);
  kiln_model_free(cpu_model);
}
