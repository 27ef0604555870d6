// The session backend interface (exec/backend.h): the CPU backend driven
// through its table alone, the session API reaching it, and the Vulkan
// backend's table (complete with the Vulkan layer; creation only, and
// failing, without it).
#include <doctest/doctest.h>
#include <string.h>

#include <string>
#include <vector>

#include "exec/backend.h"
#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

namespace {

using kiln_test::Message;

constexpr int kBackendElements = kiln_test::kAddScaleElements;

// Which of the table's functions are set, in declaration order.
std::vector<bool> Present(const kiln_backend_t& b) {
  return {b.create != nullptr, b.free != nullptr, b.write_input != nullptr, b.read_output != nullptr,
          b.get_output_view != nullptr, b.run != nullptr, b.set_profiling != nullptr,
          b.dispatch_profile != nullptr, b.device_name != nullptr, b.get_pipeline_cache != nullptr};
}

}  // namespace

TEST_CASE("backend: the CPU table runs the add/scale bundle without the session layer") {
  const kiln_backend_t& cpu = kiln_cpu_backend;
  // Every function but the pipeline cache, which the CPU does not have.
  CHECK(Present(cpu) == std::vector<bool>{true, true, true, true, true, true, true, true, true, false});

  std::vector<uint8_t> file = kiln_test::AddScaleBundle().Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  const kiln_model_t* m = model.get();
  for (uint32_t threads : {1u, 3u}) {
    kiln_session_options_t options;
    kiln_session_options_init(&options);
    options.thread_count = threads;
    kiln_session_load_stats_t stats;
    kiln_session_load_stats_init(&stats);
    kiln_backend_state_t* state = nullptr;
    kiln_status_t status = cpu.create(m, &options, &stats, &state);
    REQUIRE_MESSAGE(status == NULL, Message(status));
    CHECK(stats.buffer_create_ns > 0);  // the backend's own stages
    CHECK(stats.record_ns > 0);
    CHECK((stats.thread_start_ns > 0) == (threads > 1));
    CHECK(std::string(cpu.device_name(state)) == "cpu");

    std::vector<float> a(kBackendElements), out(kBackendElements, -1.0f);
    for (int i = 0; i < kBackendElements; ++i) a[i] = (float)i;
    REQUIRE(cpu.write_input(state, &m->inputs[0], a.data(), a.size() * 4) == NULL);
    CHECK(cpu.dispatch_profile(state) == nullptr);  // no run yet
    REQUIRE(cpu.set_profiling(state, 1) == NULL);
    REQUIRE(cpu.run(state, nullptr) == NULL);  // no data symbols: no shapes needed
    const uint64_t* times = cpu.dispatch_profile(state);
    REQUIRE(times != nullptr);
    CHECK(times[0] >= 1);
    CHECK(times[1] >= 1);
    REQUIRE(cpu.read_output(state, &m->outputs[0], out.data()) == NULL);
    for (int i = 0; i < kBackendElements; ++i) CHECK(out[i] == (a[i] + 0.5f * (float)i) * 2.0f);
    const void* view = nullptr;
    REQUIRE(cpu.get_output_view(state, 0, m->outputs[0].byte_size, &view) == NULL);
    CHECK(memcmp(view, out.data(), out.size() * 4) == 0);
    REQUIRE(cpu.set_profiling(state, 0) == NULL);
    REQUIRE(cpu.run(state, nullptr) == NULL);  // no data symbols: no shapes needed
    CHECK(cpu.dispatch_profile(state) == nullptr);  // the last run was not profiled
    cpu.free(state);
  }
}

TEST_CASE("backend: sessions reach the CPU backend; capabilities it lacks are refused") {
  std::vector<uint8_t> file = kiln_test::AddScaleBundle().Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::Create(model, nullptr, &session).ok());
  CHECK(std::string(session.device_name()) == "cpu");
  CHECK(session.dispatch_count() == 2);
  size_t size = 0;
  kiln::Status status = session.get_vulkan_pipeline_cache(nullptr, 0, &size);
  CHECK(status.code() == KILN_INVALID_ARGUMENT);
  CHECK(std::string(status.message()) == "pipeline_cache: not a Vulkan session");
  uint64_t ns = 0;
  status = session.get_dispatch_profile(0, &ns);  // the backend reports no profile yet
  CHECK(std::string(status.message()).find("was not profiled") != std::string::npos);
  REQUIRE(session.set_profiling(true).ok());
  std::vector<float> a(kBackendElements, 1.0f);
  REQUIRE(session.set_input(0, a.data(), a.size() * 4).ok());
  REQUIRE(session.run().ok());
  REQUIRE(session.get_dispatch_profile(1, &ns).ok());
  CHECK(ns >= 1);
  status = session.get_dispatch_profile(2, &ns);
  CHECK(std::string(status.message()).find("dispatch 2 out of range (2 dispatches)") != std::string::npos);
}

TEST_CASE("backend: the Vulkan table") {
  const kiln_backend_t& vulkan = kiln_vulkan_backend;
  if (!vulkan.run) {
    // Built without the Vulkan headers: only `create`, which refuses.
    CHECK(Present(vulkan) == std::vector<bool>{true, false, false, false, false, false, false, false, false, false});
    std::vector<uint8_t> file = kiln_test::MinimalBundle().Build();
    kiln::Model model;
    REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
    kiln_session_options_t options;
    kiln_session_options_init(&options);
    kiln_session_load_stats_t stats;
    kiln_session_load_stats_init(&stats);
    kiln_backend_state_t* state = nullptr;
    kiln_status_t status = vulkan.create(model.get(), &options, &stats, &state);
    CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
    CHECK(Message(status).find("built without Vulkan support") != std::string::npos);
    return;
  }
  CHECK(Present(vulkan) == std::vector<bool>(10, true));
}
