// Bundle verification: a valid bundle loads; every hostile variant is
// rejected with a message naming the problem; no input crashes the loader.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "runtime_bundle_builder.h"

using kiln_test::MinimalBundle;
using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

using kiln_test::Contains;

// Loads `file` (verify-only when asked) and returns "" on success, else the
// error message; also checks the code when `expected_code` is not KILN_OK.
std::string LoadError(const std::vector<uint8_t>& file, uint32_t flags = 0,
                      kiln_status_code_t expected_code = KILN_OK) {
  kiln_model_t* model = NULL;
  kiln_model_load_options_t options = kiln_test::LoadOptions(flags);
  kiln_status_t status = kiln_model_load_memory_ex(file.data(), file.size(), &options, &model);
  if (!status) {
    kiln_model_free(model);
    return "";
  }
  if (expected_code != KILN_OK) CHECK(kiln_status_code(status) == expected_code);
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

// A bundle with one (fake) library, kernel and dispatch; verify-only loads it.
TestBundle DispatchBundle() {
  TestBundle b = MinimalBundle();
  b.data.resize(128 + 64, 0xCC);  // library blob at 128 (never mapped when verify-only)
  b.libraries = {{fb::LibraryFormat::ElfSharedObject, 128, 64}};
  b.kernels = {{"vector_add", 0, 0}};
  b.dispatches = {{0, {1, 1, 1}, {{0, fb::Access::Read}, {2, fb::Access::Read}, {1, fb::Access::Write}}, {4}, {0}}};
  return b;
}

}  // namespace

TEST_CASE("verify: a minimal valid bundle loads, aligned or not") {
  std::vector<uint8_t> file = MinimalBundle().Build();
  CHECK(LoadError(file) == "");
  // 64-byte aligned memory is used in place.
  void* aligned = aligned_alloc(64, (file.size() + 63) / 64 * 64);
  memcpy(aligned, file.data(), file.size());
  kiln_model_t* model = NULL;
  REQUIRE(kiln_model_load_memory(aligned, file.size(), &model) == NULL);
  CHECK(kiln_model_input_count(model) == 1);
  CHECK(kiln_model_output_count(model) == 1);
  kiln_tensor_info_t info;
  kiln_tensor_info_init(&info);
  REQUIRE(kiln_model_get_input_info(model, 0, &info) == NULL);
  CHECK(std::string(info.name) == "x");
  CHECK(info.rank == 1);
  CHECK(info.shape[0] == 4);
  CHECK(info.byte_size == 16);
  size_t index = 9;
  CHECK(kiln_model_find_output(model, "y", &index) == NULL);
  CHECK(index == 0);
  kiln_status_t missing = kiln_model_find_input(model, "nope", &index);
  CHECK(kiln_status_code(missing) == KILN_NOT_FOUND);
  kiln_status_free(missing);
  // The constant is read in place, inside the caller's (aligned) memory.
  REQUIRE(kiln_model_get_tensor_info(model, 2, &info) == NULL);
  CHECK(info.storage == KILN_STORAGE_CONSTANT);
  CHECK((const uint8_t*)info.data >= (const uint8_t*)aligned);
  CHECK((const uint8_t*)info.data + info.byte_size <= (const uint8_t*)aligned + file.size());
  CHECK(((const float*)info.data)[3] == 4.0f);
  kiln_model_info_t model_info;
  kiln_model_info_init(&model_info);
  REQUIRE(kiln_model_get_info(model, &model_info) == NULL);
  CHECK(model_info.tensor_count == 3);
  kiln_model_free(model);
  free(aligned);
  CHECK(LoadError(DispatchBundle().Build(), KILN_MODEL_LOAD_VERIFY_ONLY) == "");
}

TEST_CASE("verify: wrong identifier") {
  std::vector<uint8_t> file = MinimalBundle().Build();
  memcpy(file.data() + 8, "KILM", 4);
  CHECK(Contains(LoadError(file, 0, KILN_INVALID_BUNDLE), "wrong file identifier 'KILM'"));
}

TEST_CASE("verify: truncated at every length") {
  std::vector<uint8_t> file = MinimalBundle().Build();
  for (size_t length = 0; length < file.size(); ++length) {
    std::vector<uint8_t> truncated(file.begin(), file.begin() + length);
    if (truncated.empty()) truncated.reserve(1);
    kiln_model_t* model = NULL;
    kiln_status_t status = kiln_model_load_memory(truncated.empty() ? file.data() : truncated.data(),
                                                  length, &model);
    CHECK_MESSAGE(status != NULL, "length " << length);
    kiln_status_free(status);
  }
}

TEST_CASE("verify: every single-byte flip is rejected or harmless") {
  std::vector<uint8_t> file = MinimalBundle().Build();
  kiln_test::HashFields fields = kiln_test::FindHashFields(file);
  static const uint8_t kFlips[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF};
  size_t rejected = 0, loaded_after_rehash = 0;
  for (size_t pos = 0; pos < file.size(); ++pos) {
    for (uint8_t flip : kFlips) {
      std::vector<uint8_t> bad = file;
      bad[pos] ^= flip;
      // As is: the content hash (or an earlier check) rejects every flip.
      std::string error = LoadError(bad);
      CHECK_MESSAGE(error != "", "flip at " << pos);
      rejected += error != "";
      // With the hash recomputed, the flip reaches the checks behind it:
      // it must load or fail cleanly, and a loaded model must run.
      kiln_test::RehashBundle(&bad, fields);
      kiln_model_t* model = NULL;
      kiln_status_t status = kiln_model_load_memory(bad.data(), bad.size(), &model);
      if (status) {
        CHECK(strlen(kiln_status_message(status)) > 0);
        kiln_status_free(status);
        continue;
      }
      ++loaded_after_rehash;
      kiln_session_t* session = NULL;
      kiln_status_t session_status = kiln_session_create(model, NULL, &session);
      if (!session_status) {
        CHECK(kiln_session_run(session) == NULL);
        kiln_session_free(session);
      }
      kiln_status_free(session_status);
      kiln_model_free(model);
    }
  }
  MESSAGE("flips rejected as-is: " << rejected << ", loaded after rehash: " << loaded_after_rehash);
}

TEST_CASE("verify: content hash missing or wrong") {
  TestBundle b = MinimalBundle();
  b.write_hash = false;
  CHECK(Contains(LoadError(b.Build()), "no content_hash"));
  std::vector<uint8_t> file = MinimalBundle().Build();
  file.back() ^= 1;  // a constant's byte
  CHECK(Contains(LoadError(file), "content_hash mismatch"));
}

TEST_CASE("verify: tensor ranges and sizes") {
  TestBundle b = MinimalBundle();
  b.tensors[1].offset = 128;  // 16 bytes at 128 > arena 128
  CHECK(Contains(LoadError(b.Build()), "tensor 1 ('y'): arena range [128, +16) exceeds arena_bytes 128"));

  b = MinimalBundle();
  b.tensors[2].offset = 64;  // data segment is 64 bytes
  CHECK(Contains(LoadError(b.Build()), "tensor 2 ('w'): constant range [64, +16) is outside the data segment"));

  b = MinimalBundle();
  b.tensors[0].byte_size = 20;
  CHECK(Contains(LoadError(b.Build()), "tensor 0 ('x'): byte_size 20 does not match"));

  b = MinimalBundle();
  b.tensors[0].shape = {1ll << 40, 1ll << 40};
  b.tensors[0].byte_size = 16;
  CHECK(Contains(LoadError(b.Build()), "shape size overflows"));

  b = MinimalBundle();
  b.tensors[0].shape = {-1, 4};
  b.tensors[0].byte_size = 16;
  CHECK(Contains(LoadError(b.Build()), "dimension 0 is negative"));

  b = MinimalBundle();
  b.tensors[0].offset = 32;
  CHECK(Contains(LoadError(b.Build()), "offset 32 is not a multiple of 64"));

  b = MinimalBundle();
  b.tensors[0].name = "";
  CHECK(Contains(LoadError(b.Build()), "tensor 0 has no name"));

  b = MinimalBundle();
  b.tensors[0].offset = ~0ull - 63;  // offset + size overflows
  CHECK(Contains(LoadError(b.Build()), "exceeds arena_bytes"));

  b = MinimalBundle();
  b.inputs = {7};
  CHECK(Contains(LoadError(b.Build()), "input 0: tensor index 7 out of range"));

  b = MinimalBundle();
  b.outputs = {2};
  CHECK(Contains(LoadError(b.Build()), "output 0: tensor 2 ('w') must have Arena or Dynamic storage"));

  b = MinimalBundle();
  b.nodes[0].outputs = {3};
  CHECK(Contains(LoadError(b.Build()), "node 0: output 0: tensor index 3 out of range"));
}

TEST_CASE("verify: dispatches") {
  TestBundle b = DispatchBundle();
  b.dispatches[0].bindings[1].first = 99;
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY),
                 "dispatch 0: binding 1: tensor index 99 out of range"));

  b = DispatchBundle();
  b.dispatches[0].bindings[1].second = fb::Access::Write;  // tensor 2 is a constant
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY),
                 "binding 1: write access to constant tensor 2 ('w')"));

  b = DispatchBundle();
  b.dispatches[0].workgroup_count = {4, 1};
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY),
                 "workgroup_count must have exactly 3 entries (x, y, z), has 2"));

  b = DispatchBundle();
  b.dispatches[0].workgroup_count = {4, 0, 1};
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "workgroup_count[1] is 0"));

  b = DispatchBundle();
  b.dispatches[0].kernel = 1;
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "kernel index 1 out of range"));

  b = DispatchBundle();
  b.dispatches[0].push_constants.assign(65, 0);
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "65 push constants"));

  b = DispatchBundle();
  b.dispatches[0].source_nodes = {5};
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "source_nodes[0] = 5 out of range"));

  b = DispatchBundle();
  b.kernels[0].library = 3;
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "library index 3 out of range"));

  b = DispatchBundle();
  b.kernels[0].name = "";
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "kernel 0 has no name"));
}

TEST_CASE("verify: libraries and the data segment") {
  TestBundle b = DispatchBundle();
  b.libraries[0].offset = 192;  // segment is 192 bytes
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY),
                 "library 0: blob [192, +64) is outside the data segment"));

  b = DispatchBundle();
  b.libraries[0].offset = 100;
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY), "library 0: offset 100 is not a multiple of 64"));

  b = DispatchBundle();
  b.libraries[0].format = fb::LibraryFormat::SpirV;  // more in runtime_verify_spirv_test.cpp
  CHECK(Contains(LoadError(b.Build(), KILN_MODEL_LOAD_VERIFY_ONLY),
                 "kernel 0 ('vector_add'): no SPIR-V module (spirv)"));

  b = MinimalBundle();
  b.data_segment_size = 1 << 20;
  CHECK(Contains(LoadError(b.Build()), "extends beyond the file size"));

  b = MinimalBundle();
  b.data_segment_offset = ~0ull - 63;
  CHECK(Contains(LoadError(b.Build()), "extends beyond the file size"));

  b = MinimalBundle();
  b.data_segment_offset = 65;
  CHECK(Contains(LoadError(b.Build()), "not a multiple of 64"));

  b = MinimalBundle();
  b.data_segment_offset = 0;
  CHECK(Contains(LoadError(b.Build()), "overlaps the FlatBuffer"));
}

TEST_CASE("verify: versions") {
  TestBundle b = MinimalBundle();
  b.version_major = KILN_BUNDLE_VERSION_MAJOR + 1;
  CHECK(Contains(LoadError(b.Build(), 0, KILN_UNSUPPORTED), "format version"));
  b = MinimalBundle();
  b.min_runtime_minor = KILN_BUNDLE_VERSION_MINOR + 1;
  CHECK(Contains(LoadError(b.Build(), 0, KILN_UNSUPPORTED), "needs runtime version"));
  b = MinimalBundle();
  b.version_minor = KILN_BUNDLE_VERSION_MINOR + 5;  // newer minor, not required: fine
  CHECK(LoadError(b.Build()) == "");
}

// The narrow types of format 0.10 (decision 62): a bundle holding one must
// say it needs runtime minor 10, so that a 0.9 runtime refuses it as too new
// (min_runtime_minor above its own minor: KILN_UNSUPPORTED) rather than
// misreading it; this runtime reads them, one byte an element.
TEST_CASE("verify: narrow dtypes need min_runtime_minor 10") {
  CHECK(KILN_BUNDLE_VERSION_MINOR >= 10);
  for (int code = (int)fb::DType::Float8E4M3FN; code <= (int)fb::DType::Int2; code++) {
    CAPTURE(code);
    TestBundle b = MinimalBundle();
    b.tensors[0].dtype = (fb::DType)code;  // x: 4 elements, 4 bytes
    b.min_runtime_minor = 9;
    std::string error = LoadError(b.Build(), 0, KILN_INVALID_BUNDLE);
    std::string want = "tensor 0 ('x'): dtype " + std::string(kiln_dtype_name((kiln_dtype_t)code)) +
                       " needs min_runtime_minor >= 10, the bundle says 9";
    CHECK(Contains(error, want.c_str()));
    b.min_runtime_minor = 10;
    CHECK(LoadError(b.Build()) == "");
    b.tensors[0].byte_size = 8;  // never packed, never wider: one byte an element
    CHECK(Contains(LoadError(b.Build()), "byte_size 8 does not match dtype and shape (4)"));
  }
  // A runtime of an older minor refuses a bundle that needs a newer one.
  TestBundle b = MinimalBundle();
  b.tensors[0].dtype = fb::DType::Int4;
  b.min_runtime_minor = KILN_BUNDLE_VERSION_MINOR + 1;
  std::string newer = "needs runtime version >= 0." + std::to_string(KILN_BUNDLE_VERSION_MINOR + 1);
  CHECK(Contains(LoadError(b.Build(), 0, KILN_UNSUPPORTED), newer.c_str()));
  b.min_runtime_minor = 10;
  b.tensors[0].dtype = (fb::DType)24;  // past the last dtype
  CHECK(Contains(LoadError(b.Build()), "unknown dtype 24"));
}

TEST_CASE("verify: not a bundle") {
  std::vector<uint8_t> text(200, 'A');
  CHECK(LoadError(text) != "");
  std::vector<uint8_t> zeros(4096, 0);
  CHECK(LoadError(zeros) != "");
  std::vector<uint8_t> file = MinimalBundle().Build();
  uint32_t huge = 0xFFFFFFFFu;
  memcpy(file.data(), &huge, 4);
  CHECK(Contains(LoadError(file), "size prefix"));
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_model_load_file("/nonexistent/model.kiln", &model);
  CHECK(kiln_status_code(status) == KILN_NOT_FOUND);
  kiln_status_free(status);
  status = kiln_model_load_file("/", &model);
  CHECK(kiln_status_code(status) == KILN_IO_ERROR);
  kiln_status_free(status);
}

// A bundle whose inputs are a sequence of two tensors and whose outputs are
// an optional tensor (its value y0 and its bool y.present).
TestBundle CompositeBundle() {
  TestBundle b = MinimalBundle();
  b.tensors = {
      {"x[0]", fb::DType::Float32, {4}, fb::Storage::Arena, 0},
      {"x[1]", fb::DType::Float32, {4}, fb::Storage::Arena, 64},
      {"y.value", fb::DType::Float32, {4}, fb::Storage::Arena, 128},
      {"y.present", fb::DType::Bool, {}, fb::Storage::Arena, 192},
      {"w", fb::DType::Float32, {4}, fb::Storage::Constant, 0},
  };
  b.inputs = {0, 1};
  b.outputs = {2, 3};
  b.nodes = {};
  b.arena_bytes = 256;
  b.composites = {{"x", fb::CompositeKind::Sequence, false, {0, 1}, -1, false},
                  {"y", fb::CompositeKind::Optional, true, {0}, 1, false}};
  return b;
}

TEST_CASE("verify: sequence and optional inputs and outputs (composites)") {
  kiln_model_t* model = NULL;
  std::vector<uint8_t> file = CompositeBundle().Build();
  REQUIRE(kiln_model_load_memory(file.data(), file.size(), &model) == NULL);
  REQUIRE(kiln_model_composite_count(model) == 2);
  kiln_composite_info_t info;
  kiln_composite_info_init(&info);
  REQUIRE(kiln_model_get_composite_info(model, 0, &info) == NULL);
  CHECK(std::string(info.name) == "x");
  CHECK(info.kind == KILN_COMPOSITE_SEQUENCE);
  CHECK(info.is_output == 0);
  REQUIRE(info.element_count == 2);
  CHECK(info.elements[0] == 0);
  CHECK(info.elements[1] == 1);
  CHECK(info.presence == -1);
  REQUIRE(kiln_model_get_composite_info(model, 1, &info) == NULL);
  CHECK(std::string(info.name) == "y");
  CHECK(info.kind == KILN_COMPOSITE_OPTIONAL);
  CHECK(info.is_output == 1);
  CHECK(info.element_count == 1);
  CHECK(info.presence == 1);
  CHECK(info.holds_sequence == 0);
  kiln_status_t status = kiln_model_get_composite_info(model, 2, &info);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  status = kiln_model_get_composite_info(model, 0, NULL);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  kiln_model_free(model);
  CHECK(kiln_model_composite_count(NULL) == 0);
  // Bundles before minor 8 have none.
  file = MinimalBundle().Build();
  REQUIRE(kiln_model_load_memory(file.data(), file.size(), &model) == NULL);
  CHECK(kiln_model_composite_count(model) == 0);
  kiln_model_free(model);
}

TEST_CASE("verify: bad composites are rejected") {
  struct Case {
    const char* what;
    void (*breaks)(TestBundle*);
    const char* message;
  };
  const Case cases[] = {
      {"no name", [](TestBundle* b) { b->composites[0].name.clear(); }, "has no name"},
      {"unknown kind", [](TestBundle* b) { b->composites[0].kind = (fb::CompositeKind)7; }, "unknown kind"},
      {"element out of range", [](TestBundle* b) { b->composites[0].elements[1] = 2; }, "out of range"},
      {"element twice", [](TestBundle* b) { b->composites[0].elements[1] = 0; }, "an element twice"},
      {"element of two composites",
       [](TestBundle* b) { b->composites.push_back({"z", fb::CompositeKind::Sequence, false, {1}, -1, false}); },
       "an element twice"},
      {"optional without presence", [](TestBundle* b) { b->composites[1].presence = -1; }, "bad presence"},
      {"sequence with presence", [](TestBundle* b) { b->composites[0].presence = 0; }, "bad presence"},
      {"presence out of range", [](TestBundle* b) { b->composites[1].presence = 2; }, "bad presence"},
      {"presence no bool", [](TestBundle* b) { b->tensors[3].dtype = fb::DType::UInt8; }, "no bool scalar"},
      {"presence not a scalar", [](TestBundle* b) { b->tensors[3].shape = {1}; }, "no bool scalar"},
      {"presence is its element", [](TestBundle* b) { b->composites[1].elements = {1}; }, "an element twice"},
      {"presence is another's element",
       [](TestBundle* b) { b->composites.push_back({"z", fb::CompositeKind::Sequence, true, {1}, -1, false}); },
       "an element twice"},
      {"optional tensor of two", [](TestBundle* b) { b->composites[1].elements = {0, 0}; }, "has 2 elements"},
  };
  for (const Case& c : cases) {
    std::string what = c.what;
    CAPTURE(what);
    TestBundle b = CompositeBundle();
    c.breaks(&b);
    std::string error = LoadError(b.Build(), 0, KILN_INVALID_BUNDLE);
    CHECK(Contains(error, c.message));
  }
}
