// Verification of Vulkan bundles (SpirV libraries, Kernel.spirv, 256-byte
// tensor offsets): a valid one passes; every hostile field is rejected with
// a message naming it.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "runtime_bundle_builder.h"

using kiln_test::MinimalBundle;
using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

const kiln_model_load_options_t verify_only = kiln_test::LoadOptions(KILN_MODEL_LOAD_VERIFY_ONLY);

using kiln_test::Contains;

using kiln_test::HeterogeneousBundle;
using kiln_test::SpirvBundle;

// "" when `file` verifies, else the message.
std::string VerifyError(const TestBundle& b) {
  std::vector<uint8_t> file = b.Build();
  kiln_model_t* model = NULL;
  kiln_status_t status =
      kiln_model_load_memory_ex(file.data(), file.size(), &verify_only, &model);
  if (!status) {
    kiln_model_free(model);
    return "";
  }
  CHECK(kiln_status_code(status) == KILN_INVALID_BUNDLE);
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

}  // namespace

TEST_CASE("verify spirv: a heterogeneous bundle (SpirV + host ELF) verifies") {
  CHECK(VerifyError(HeterogeneousBundle()) == "");
  TestBundle b = HeterogeneousBundle();
  b.dispatches[1].host_downloads.clear();  // copies are the compiler's choice
  b.dispatches[1].host_uploads.clear();
  CHECK(VerifyError(b) == "");
}

TEST_CASE("verify spirv: host copies") {
  struct Case {
    const char* expected;
    std::function<void(TestBundle&)> mutate;
  };
  std::vector<Case> cases = {
      {"dispatch 1: host_downloads[0] = 9 must be an arena tensor the dispatch binds",
       [](TestBundle& b) { b.dispatches[1].host_downloads[0] = 9; }},  // out of range
      {"dispatch 1: host_downloads[1] = 2 must be an arena tensor",  // a constant (bound)
       [](TestBundle& b) { b.dispatches[1].host_downloads[1] = 2; }},
      {"dispatch 1: host_uploads[0] = 1 must be an arena tensor the dispatch binds with write access",
       [](TestBundle& b) { b.dispatches[1].host_uploads[0] = 1; }},  // bound read-only
      {"dispatch 1: host_uploads[0] = 2 must be",
       [](TestBundle& b) { b.dispatches[1].host_uploads[0] = 2; }},  // a constant
      {"dispatch 1: host_downloads[0] = 1 must be an arena tensor the dispatch binds",
       [](TestBundle& b) { b.dispatches[1].bindings[0].first = 2; }},  // y no longer bound
      {"dispatch 0: host_downloads/host_uploads on a SpirV kernel",
       [](TestBundle& b) { b.dispatches[0].host_downloads = {0}; }},
      {"dispatch 0: host_downloads/host_uploads on a SpirV kernel",
       [](TestBundle& b) { b.dispatches[0].host_uploads = {1}; }},
      {"dispatch 0: host_downloads/host_uploads in a bundle without SpirV libraries",
       [](TestBundle& b) {  // a CPU bundle: no copies
         b.libraries.erase(b.libraries.begin());
         b.kernels = {{"k1_host", 0, 0}};
         b.spirv.clear();
         b.vulkan_features.clear();
         b.dispatches[1].kernel = 0;
         b.dispatches.erase(b.dispatches.begin());
       }},
  };
  for (const Case& c : cases) {
    TestBundle b = HeterogeneousBundle();
    c.mutate(b);
    CHECK(Contains(VerifyError(b), c.expected));
  }
}

TEST_CASE("verify spirv: a valid Vulkan bundle verifies") {
  CHECK(VerifyError(SpirvBundle()) == "");
  TestBundle b = SpirvBundle();
  b.spirv[0].entry_point = "";  // absent: "main"
  CHECK(VerifyError(b) == "");
}

// One hostile variant of SpirvBundle() and the words its message must contain.
struct Hostile {
  const char* expected;
  std::function<void(TestBundle&)> mutate;
};

void CheckRejected(const std::vector<Hostile>& cases) {
  for (const Hostile& h : cases) {
    TestBundle b = SpirvBundle();
    h.mutate(b);
    CHECK(Contains(VerifyError(b), h.expected));
  }
}

TEST_CASE("verify spirv: libraries") {
  CheckRejected({
      {"library 0: unknown vulkan_features bits 0x10", [](TestBundle& b) { b.vulkan_features[0] = 0x10; }},
      {"kernel 0 ('k0_add'): has a SPIR-V module but its library is not SpirV",
       [](TestBundle& b) { b.libraries[0].format = fb::LibraryFormat::ElfSharedObject; }},
      {"kernel 0 ('k0_add'): no SPIR-V module (spirv)", [](TestBundle& b) { b.spirv.clear(); }},
  });
}

TEST_CASE("verify spirv: module ranges") {
  CheckRejected({
      {"SPIR-V module [2, +64) must start at a multiple of 4", [](TestBundle& b) { b.spirv[0].offset = 2; }},
      {"SPIR-V module [0, +30) must start", [](TestBundle& b) { b.spirv[0].size = 30; }},
      {"at least 20", [](TestBundle& b) { b.spirv[0].size = 16; }},  // shorter than the header
      {"SPIR-V module [4, +64) is outside its library's blob (64 bytes)",
       [](TestBundle& b) { b.spirv[0].offset = 4; }},  // one word past the blob's end
      {"is outside its library's blob", [](TestBundle& b) { b.spirv[0].offset = ~0ull - 3; }},  // overflows
  });
}

TEST_CASE("verify spirv: the module itself, at load") {
  // No device needed: a load (here verify-only) reads the module's framing,
  // entry point and workgroup size.
  CheckRejected({
      {"magic number 0x00000000", [](TestBundle& b) { b.data[256] = b.data[257] = b.data[258] = b.data[259] = 0; }},
      {"in the other byte order", [](TestBundle& b) {
         for (int i = 0; i < 2; i++) std::swap(b.data[256 + i], b.data[259 - i]);
       }},
      {"has word count 200", [](TestBundle& b) { b.data[256 + 5 * 4 + 2] = 200; }},  // OpEntryPoint runs past the end
      {"no GLCompute entry point 'kmain'", [](TestBundle& b) { b.spirv[0].entry_point = "kmain"; }},
      {"the module's workgroup size (64, 1, 1) is not the stated (32, 1, 1)",
       [](TestBundle& b) { b.spirv[0].workgroup_size = {32, 1, 1}; }},
  });
}

TEST_CASE("verify spirv: interface") {
  CheckRejected({
      {"entry point name must have 1 to 255 characters",
       [](TestBundle& b) { b.spirv[0].entry_point = std::string(300, 'm'); }},
      {"no NUL", [](TestBundle& b) { b.spirv[0].entry_point = std::string("ma\0in", 5); }},
      {"workgroup_size must have exactly 3 entries, has 2", [](TestBundle& b) { b.spirv[0].workgroup_size = {64, 1}; }},
      {"workgroup_size (64, 0, 1) must be >= 1", [](TestBundle& b) { b.spirv[0].workgroup_size = {64, 0, 1}; }},
      {"below 2^32 invocations", [](TestBundle& b) { b.spirv[0].workgroup_size = {65536, 65536, 2}; }},
      {"5000 bindings (at most 4096)", [](TestBundle& b) { b.spirv[0].binding_count = 5000; }},
      {"push_constant_size 6 must be a multiple of 4 and at most 256",
       [](TestBundle& b) { b.spirv[0].push_constant_size = 6; }},
      {"push_constant_size 260", [](TestBundle& b) { b.spirv[0].push_constant_size = 260; }},
  });
}

TEST_CASE("verify spirv: dispatches and tensor offsets") {
  CheckRejected({
      {"dispatch 0: 2 bindings and 8 push-constant bytes, but kernel 0 ('k0_add') declares 3 and 8",
       [](TestBundle& b) { b.dispatches[0].bindings.pop_back(); }},
      {"dispatch 0: 3 bindings and 4 push-constant bytes", [](TestBundle& b) { b.dispatches[0].push_constants = {4}; }},
      {"tensor 1 ('y'): offset 64 is not a multiple of 256",  // fine for the CPU, not for Vulkan
       [](TestBundle& b) { b.tensors[1].offset = 64; }},
      {"tensor 2 ('w'): offset 128 is not a multiple of 256",  // constants too
       [](TestBundle& b) {
         b.tensors[2].offset = 128;
         b.data.resize(256 + 64 + 256, 0);
       }},
  });
}

TEST_CASE("verify spirv: an empty SpirV library (every kernel on the host) needs min_runtime_minor 9") {
  TestBundle b = HeterogeneousBundle();
  b.kernels.erase(b.kernels.begin());  // only the host kernel is left
  b.spirv.clear();
  b.dispatches.erase(b.dispatches.begin());
  b.dispatches[0].kernel = 0;
  b.libraries[0].size = 0;
  b.min_runtime_minor = 9;
  CHECK(VerifyError(b) == "");
  b.min_runtime_minor = 3;
  CHECK(Contains(VerifyError(b), "library 0: empty blob"));
  b.min_runtime_minor = 9;  // an ELF library may never be empty
  b.libraries[1].size = 0;
  CHECK(Contains(VerifyError(b), "library 1: empty blob"));
}
