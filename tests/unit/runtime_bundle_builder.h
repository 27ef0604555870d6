// Test helper: builds Kiln bundles (valid or deliberately broken) with the
// FlatBuffers builder, lays out the data segment and records the content hash.
#ifndef KILN_TESTS_RUNTIME_BUNDLE_BUILDER_H_
#define KILN_TESTS_RUNTIME_BUNDLE_BUILDER_H_

#include <stdint.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bundle_generated.h"
#include "kiln/kiln.h"
#include "kiln_bundle_version.h"

namespace kiln_test {

constexpr uint64_t kAuto = ~0ull;  // "compute this field" marker

struct TestTensor {
  std::string name;                                    // empty: no name
  kiln::fb::DType dtype = kiln::fb::DType::Float32;    // element type
  std::vector<int64_t> shape;                          // dimensions
  kiln::fb::Storage storage = kiln::fb::Storage::Arena;
  uint64_t offset = 0;                                 // arena or data segment offset
  uint64_t byte_size = kAuto;                          // kAuto: from dtype and shape (and string_bytes)
  std::vector<int32_t> dynamic_dims = {};              // run-time dimensions (minor 5); absent when empty
  std::vector<int64_t> min_shape = {};                 // least dimensions (minor 5); absent when empty
  uint64_t string_bytes = 0;                           // String tensors (minor 9): the bytes area's capacity
};

struct TestNode {
  std::string name, op_type;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<uint32_t> inputs, outputs;
};

struct TestLibrary {
  kiln::fb::LibraryFormat format = kiln::fb::LibraryFormat::ElfSharedObject;
  uint64_t offset = 0, size = 0;  // in the data segment
  uint64_t kernel_hash = 0;       // StaticLinked: the registered library it needs
  std::string static_symbol;      // StaticLinked: empty: absent
};

// Kernel.spirv (SpirV libraries).
struct TestSpirv {
  uint64_t offset = 0, size = 0;  // in the library's blob
  std::string entry_point;        // empty: absent
  std::vector<uint32_t> workgroup_size = {1, 1, 1};
  uint32_t binding_count = 0, push_constant_size = 0;
};

struct TestKernel {
  std::string name;
  uint32_t library = 0, ordinal = 0;
};

struct TestDispatch {
  uint32_t kernel = 0;
  std::vector<uint32_t> workgroup_count = {1, 1, 1};
  std::vector<std::pair<uint32_t, kiln::fb::Access>> bindings;
  std::vector<uint32_t> push_constants;
  std::vector<uint32_t> source_nodes;
  std::vector<uint32_t> host_downloads, host_uploads;  // absent when empty
  std::vector<int32_t> workgroup_count_exprs = {};      // run-time counts (minor 5); absent when empty
  std::vector<uint32_t> push_constant_symbols = {};     // push constants from symbols (minor 5); absent when empty
};

// Bundle.symbols entry (minor 5).
struct TestSymbol {
  std::string name;  // empty: no name
  int64_t min = 1, max = 1;
  uint32_t input = 0, dim = 0;
  int32_t source_dispatch = -1;  // a data symbol (minor 6): its source dispatch and tensor
  uint32_t source_tensor = 0;
};

// Bundle.shape_constraints entry (minor 5).
struct TestConstraint {
  uint32_t expr = 0;
  std::string message;  // empty: no message
};

// Bundle.composites entry (minor 8): a sequence or optional input or output.
struct TestComposite {
  std::string name;  // empty: no name
  kiln::fb::CompositeKind kind = kiln::fb::CompositeKind::Sequence;
  bool output = false;
  std::vector<uint32_t> elements;
  int32_t presence = -1;
  bool sequence = false;
};

struct TestBundle {
  uint16_t version_major = KILN_BUNDLE_VERSION_MAJOR;
  uint16_t version_minor = KILN_BUNDLE_VERSION_MINOR;
  uint16_t min_runtime_minor = 0;
  std::vector<TestTensor> tensors;
  std::vector<uint32_t> inputs, outputs;
  std::vector<TestNode> nodes;
  uint64_t arena_bytes = 0;
  std::vector<TestLibrary> libraries;
  std::vector<TestKernel> kernels;
  std::map<uint32_t, uint32_t> vulkan_features;  // library index -> kiln::fb::VulkanFeature bits
  std::map<uint32_t, TestSpirv> spirv;           // kernel index -> its Kernel.spirv
  std::vector<TestDispatch> dispatches;
  std::vector<uint8_t> data;                  // the data segment's contents
  uint64_t data_segment_offset = kAuto;       // kAuto: first 64-aligned byte after the FlatBuffer
  uint64_t data_segment_size = kAuto;         // kAuto: data.size()
  bool write_hash = true;                     // false: omit content_hash
  // Run-time dimensions (minor 5): each list is absent when empty.
  std::vector<TestSymbol> symbols;
  std::vector<std::vector<kiln::fb::ShapeInstr>> shape_exprs;  // each one's code (written even when empty)
  std::vector<TestConstraint> shape_constraints;
  std::vector<TestComposite> composites;  // (minor 8) absent when empty

  // Serializes the bundle file.
  std::vector<uint8_t> Build() const;
};

// Fills the data segment: constants[i] = step * i (count of them) from offset
// 0, then `library` at `library_offset`, described as the bundle's only library.
void SetConstantsAndLibrary(TestBundle* b, int count, float step, kiln::fb::LibraryFormat format,
                            uint64_t library_offset, const std::vector<uint8_t>& library);

// A small valid bundle without kernels: x (input) and y (output) in the arena,
// w a constant; one Add node.
TestBundle MinimalBundle();

// out = (a + b) * 2 with the test kernels (RUNTIME_TEST_KERNELS_SO): a
// (input), t and out/final in the arena, b[i] = 0.5 * i a constant;
// dispatch 0 adds a and b into t (node "add"), dispatch 1 scales t into
// out/final (node "mul"), each kAddScaleElements / kAddScalePerGroup workgroups.
constexpr int kAddScaleElements = 256;     // elements per tensor
constexpr uint32_t kAddScalePerGroup = 64;  // elements per workgroup
TestBundle AddScaleBundle();

// MinimalBundle() on Vulkan: y at 256 in the arena; one SpirV library with a
// (fake) 64-byte module for kernel 0, dispatched with 3 bindings and 2 push
// constants.
TestBundle SpirvBundle();
// SpirvBundle() plus a host kernel (an ELF library at 320) dispatched after
// the device one: it reads y and writes x, downloading both, uploading x.
TestBundle HeterogeneousBundle();

// The smallest SPIR-V module the verifier accepts (64 bytes): the header, a
// GLCompute entry point "main" and its LocalSize (x, y, z).
std::vector<uint8_t> MinimalSpirvModule(uint32_t x, uint32_t y, uint32_t z);

// File offsets of the fields the content hash depends on (0 if absent).
struct HashFields {
  size_t hash = 0, data_segment_offset = 0, data_segment_size = 0;
};
HashFields FindHashFields(const std::vector<uint8_t>& file);
// Recomputes and stores content_hash the way the runtime checks it (used to
// fuzz the checks that come after the hash).
void RehashBundle(std::vector<uint8_t>* file, const HashFields& fields);

std::vector<uint8_t> ReadFile(const char* path);
// Writes `bytes` to a new file under /tmp and returns its path (the caller unlinks it).
std::string WriteTemp(const std::vector<uint8_t>& bytes);
// Model load options with `flags` (KILN_MODEL_LOAD_*), the limits at their defaults.
kiln_model_load_options_t LoadOptions(uint32_t flags);

// Builds and loads `b`: "" on success, else the error message (its code
// checked against `expected_code`).
std::string LoadError(const TestBundle& b, kiln_status_code_t expected_code = KILN_INVALID_BUNDLE);
// A status's message; frees the status ("OK" for NULL).
std::string Message(kiln_status_t status);
// Whether `text` contains `words` (if not, says so in the test's log).
bool Contains(const std::string& text, const char* words);

}  // namespace kiln_test

#endif  // KILN_TESTS_RUNTIME_BUNDLE_BUILDER_H_
