// Resource limits (kiln_model_load_options_t, kiln_session_options_t):
// bundle size, data segment, workgroups per dispatch and arena are checked
// before anything they size is mapped, copied or allocated, and each error
// names the option to raise.
#include <doctest/doctest.h>
#include <stdint.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

namespace {

using namespace kiln_test;

kiln::Status Load(const std::vector<uint8_t>& file, const kiln_model_load_options_t& options, kiln::Model* model) {
  return kiln::Model::LoadMemory(file.data(), file.size(), options, model);
}

TEST_CASE("limits: bundle bytes, data segment and workgroups at load") {
  std::vector<uint8_t> file = AddScaleBundle().Build();
  kiln::Model model;
  kiln_model_load_options_t options = LoadOptions(0);
  REQUIRE(Load(file, options, &model).ok());  // the defaults admit it

  options.max_bundle_bytes = file.size() - 1;
  kiln::Status status = Load(file, options, &model);
  CHECK(status.code() == KILN_OUT_OF_MEMORY);
  CHECK(Contains(status.message(), "max_bundle_bytes"));
  std::string path = WriteTemp(file);
  status = kiln::Model::LoadFile(path.c_str(), options, &model);  // refused before it is mapped
  unlink(path.c_str());
  CHECK(status.code() == KILN_OUT_OF_MEMORY);

  options = LoadOptions(0);
  options.max_constant_bytes = 1024;  // the constants alone take 1024; the kernel blob follows
  status = Load(file, options, &model);
  CHECK(status.code() == KILN_OUT_OF_MEMORY);
  CHECK(Contains(status.message(), "max_constant_bytes"));

  options = LoadOptions(0);
  options.max_workgroups = kAddScaleElements / kAddScalePerGroup - 1;  // each dispatch has one more
  status = Load(file, options, &model);
  CHECK(status.code() == KILN_INVALID_BUNDLE);
  CHECK(Contains(status.message(), "max_workgroups"));
  options.max_workgroups = UINT64_MAX;  // no limit
  CHECK(Load(file, options, &model).ok());
}

TEST_CASE("limits: the arena at session creation, before it is allocated") {
  TestBundle b = MinimalBundle();  // no dispatches: a session only allocates the arena
  b.arena_bytes = (1ull << 30) + 64;
  b.tensors[1].offset = 1ull << 30;
  std::vector<uint8_t> file = b.Build();
  kiln::Model model;
  REQUIRE(Load(file, LoadOptions(0), &model).ok());
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  kiln::Session session;
  kiln::Status status = kiln::Session::Create(model, &options, &session);  // default: 1 GiB
  CHECK(status.code() == KILN_OUT_OF_MEMORY);
  CHECK(Contains(status.message(), "max_arena_bytes"));
  options.max_arena_bytes = 4096;
  CHECK(kiln::Session::Create(model, &options, &session).code() == KILN_OUT_OF_MEMORY);
  options.max_arena_bytes = UINT64_MAX;  // the pages are only reserved: fine here
  status = kiln::Session::Create(model, &options, &session);
  CHECK_MESSAGE(status.ok(), status.message());
}

}  // namespace
