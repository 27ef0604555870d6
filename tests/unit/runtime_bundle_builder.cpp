// Test helper; see runtime_bundle_builder.h.
#include "runtime_bundle_builder.h"

#include <doctest/doctest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"
#include "runtime_test_config.h"

namespace fb = kiln::fb;

namespace kiln_test {

static size_t ElementSize(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::Float32: case fb::DType::Int32: return 4;
    case fb::DType::Float16: case fb::DType::Int16: return 2;
    case fb::DType::Float64: case fb::DType::Int64: return 8;
    default: return 1;
  }
}

static size_t FieldOffset(const std::vector<uint8_t>& file, flatbuffers::voffset_t field) {
  const fb::Bundle* bundle = fb::GetSizePrefixedBundle(file.data());
  const uint8_t* address =
      reinterpret_cast<const flatbuffers::Table*>(bundle)->GetAddressOf(field);
  return address ? (size_t)(address - file.data()) : 0;
}

static void Store64(std::vector<uint8_t>* file, size_t offset, uint64_t value) {
  memcpy(file->data() + offset, &value, 8);
}

std::vector<uint8_t> TestBundle::Build() const {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Tensor>> tensor_offsets;
  for (const TestTensor& t : tensors) {
    uint64_t byte_size = t.byte_size;
    if (byte_size == kAuto) {
      uint64_t elements = 1;
      for (int64_t d : t.shape) elements *= (uint64_t)d;
      byte_size = t.dtype == fb::DType::String ? 4 * (elements + 1) + t.string_bytes : elements * ElementSize(t.dtype);
    }
    auto name = t.name.empty() ? 0 : fbb.CreateString(t.name);
    auto shape = fbb.CreateVector(t.shape);
    auto dynamic_dims = t.dynamic_dims.empty() ? 0 : fbb.CreateVector(t.dynamic_dims);
    auto min_shape = t.min_shape.empty() ? 0 : fbb.CreateVector(t.min_shape);
    fb::TensorBuilder tb(fbb);
    if (!t.name.empty()) tb.add_name(name);
    tb.add_dtype(t.dtype);
    tb.add_shape(shape);
    tb.add_storage(t.storage);
    tb.add_offset(t.offset);
    tb.add_byte_size(byte_size);
    if (!t.dynamic_dims.empty()) tb.add_dynamic_dims(dynamic_dims);
    if (!t.min_shape.empty()) tb.add_min_shape(min_shape);
    if (t.string_bytes) tb.add_string_bytes(t.string_bytes);
    tensor_offsets.push_back(tb.Finish());
  }
  std::vector<flatbuffers::Offset<fb::Node>> node_offsets;
  for (const TestNode& n : nodes) {
    std::vector<flatbuffers::Offset<fb::Attribute>> attributes;
    for (const auto& a : n.attributes) {
      attributes.push_back(fb::CreateAttributeDirect(fbb, a.first.c_str(), a.second.c_str()));
    }
    node_offsets.push_back(fb::CreateNodeDirect(fbb, n.name.c_str(), n.op_type.c_str(),
                                                &attributes, &n.inputs, &n.outputs));
  }
  std::vector<flatbuffers::Offset<fb::KernelLibrary>> library_offsets;
  for (size_t i = 0; i < libraries.size(); ++i) {
    const TestLibrary& l = libraries[i];
    auto features = vulkan_features.find((uint32_t)i);
    library_offsets.push_back(fb::CreateKernelLibraryDirect(
        fbb, l.format, "x86_64-unknown-linux-gnu", "generic", "", l.offset, l.size,
        static_cast<fb::VulkanFeature>(features == vulkan_features.end() ? 0 : features->second),
        l.kernel_hash, l.static_symbol.empty() ? nullptr : l.static_symbol.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::Kernel>> kernel_offsets;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const TestKernel& k = kernels[i];
    flatbuffers::Offset<fb::SpirvKernel> module = 0;
    auto found = spirv.find((uint32_t)i);
    if (found != spirv.end()) {
      const TestSpirv& s = found->second;  // the entry point may hold a NUL
      module = fb::CreateSpirvKernel(fbb, s.offset, s.size,
                                     s.entry_point.empty() ? 0 : fbb.CreateString(s.entry_point),
                                     fbb.CreateVector(s.workgroup_size), s.binding_count,
                                     s.push_constant_size);
    }
    kernel_offsets.push_back(fb::CreateKernelDirect(fbb, k.name.empty() ? nullptr : k.name.c_str(),
                                                    k.library, k.ordinal, module));
  }
  std::vector<flatbuffers::Offset<fb::Dispatch>> dispatch_offsets;
  for (const TestDispatch& d : dispatches) {
    std::vector<fb::Binding> bindings;
    for (const auto& b : d.bindings) bindings.emplace_back(b.first, b.second);
    auto optional = [](const auto& list) { return list.empty() ? nullptr : &list; };  // absent when empty
    dispatch_offsets.push_back(fb::CreateDispatchDirect(fbb, d.kernel, &d.workgroup_count,
                                                        &bindings, &d.push_constants,
                                                        &d.source_nodes, optional(d.host_downloads),
                                                        optional(d.host_uploads), optional(d.workgroup_count_exprs),
                                                        optional(d.push_constant_symbols)));
  }
  std::vector<flatbuffers::Offset<fb::Symbol>> symbol_offsets;
  for (const TestSymbol& s : symbols) {
    symbol_offsets.push_back(fb::CreateSymbolDirect(fbb, s.name.empty() ? nullptr : s.name.c_str(), s.min, s.max,
                                                    s.input, s.dim, s.source_dispatch, s.source_tensor));
  }
  std::vector<flatbuffers::Offset<fb::ShapeExpr>> expr_offsets;
  for (const auto& code : shape_exprs) expr_offsets.push_back(fb::CreateShapeExprDirect(fbb, &code));
  std::vector<flatbuffers::Offset<fb::ShapeConstraint>> constraint_offsets;
  for (const TestConstraint& c : shape_constraints) {
    constraint_offsets.push_back(
        fb::CreateShapeConstraintDirect(fbb, c.expr, c.message.empty() ? nullptr : c.message.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::Composite>> composite_offsets;
  for (const TestComposite& c : composites) {
    composite_offsets.push_back(fb::CreateCompositeDirect(fbb, c.name.empty() ? nullptr : c.name.c_str(), c.kind,
                                                          c.output, &c.elements, c.presence, c.sequence));
  }
  auto memory = fb::CreateMemoryPlan(fbb, arena_bytes, 64);
  auto root = fb::CreateBundleDirect(
      fbb, version_major, version_minor, min_runtime_minor, "kiln unit tests", &tensor_offsets,
      &inputs, &outputs, &node_offsets, memory, &library_offsets, &kernel_offsets,
      &dispatch_offsets, /*data_segment_offset=*/64, /*data_segment_size=*/1,
      /*content_hash=*/write_hash ? 1 : 0,  // placeholders, patched below
      symbols.empty() ? nullptr : &symbol_offsets, shape_exprs.empty() ? nullptr : &expr_offsets,
      shape_constraints.empty() ? nullptr : &constraint_offsets,
      composites.empty() ? nullptr : &composite_offsets);
  fb::FinishSizePrefixedBundleBuffer(fbb, root);

  std::vector<uint8_t> file(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  uint64_t offset = data_segment_offset == kAuto ? (file.size() + 63) / 64 * 64 : data_segment_offset;
  uint64_t size = data_segment_size == kAuto ? data.size() : data_segment_size;
  Store64(&file, FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_OFFSET), offset);
  Store64(&file, FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_SIZE), size);
  size_t data_start = (file.size() + 63) / 64 * 64;
  file.resize(data_start + data.size(), 0);
  if (!data.empty()) memcpy(file.data() + data_start, data.data(), data.size());
  if (write_hash) RehashBundle(&file, FindHashFields(file));
  return file;
}

HashFields FindHashFields(const std::vector<uint8_t>& file) {
  HashFields fields;
  fields.hash = FieldOffset(file, fb::Bundle::VT_CONTENT_HASH);
  fields.data_segment_offset = FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_OFFSET);
  fields.data_segment_size = FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_SIZE);
  return fields;
}

void RehashBundle(std::vector<uint8_t>* file, const HashFields& fields) {
  if (fields.hash == 0 || fields.hash + 8 > file->size() || file->size() < 4) return;
  // Hash what the runtime hashes: [0, max(4 + prefix, data segment end)).
  uint32_t prefix = 0;
  memcpy(&prefix, file->data(), 4);
  uint64_t end = (uint64_t)prefix + 4, dso = 0, dss = 0;
  if (fields.data_segment_offset && fields.data_segment_size &&
      fields.data_segment_offset + 8 <= file->size() && fields.data_segment_size + 8 <= file->size()) {
    memcpy(&dso, file->data() + fields.data_segment_offset, 8);
    memcpy(&dss, file->data() + fields.data_segment_size, 8);
    if (dso + dss >= dso && dso + dss > end) end = dso + dss;
  }
  if (end > file->size()) return;  // the runtime rejects it before hashing
  Store64(file, fields.hash, kiln_xxh64(file->data(), (size_t)end, fields.hash, 8));
}

void SetConstantsAndLibrary(TestBundle* b, int count, float step, fb::LibraryFormat format,
                            uint64_t library_offset, const std::vector<uint8_t>& library) {
  b->data.assign(library_offset + library.size(), 0);
  for (int i = 0; i < count; ++i) {
    float value = step * (float)i;
    memcpy(b->data.data() + 4 * i, &value, 4);
  }
  memcpy(b->data.data() + library_offset, library.data(), library.size());
  b->libraries = {{format, library_offset, library.size()}};
}

std::string WriteTemp(const std::vector<uint8_t>& bytes) {
  char path[] = "/tmp/kiln_runtime_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size());
  close(fd);
  return path;
}

kiln_model_load_options_t LoadOptions(uint32_t flags) {
  kiln_model_load_options_t options;
  kiln_model_load_options_init(&options);
  options.flags = flags;
  return options;
}

TestBundle MinimalBundle() {
  TestBundle b;
  b.tensors = {
      {"x", fb::DType::Float32, {4}, fb::Storage::Arena, 0},
      {"y", fb::DType::Float32, {4}, fb::Storage::Arena, 64},
      {"w", fb::DType::Float32, {4}, fb::Storage::Constant, 0},
  };
  b.inputs = {0};
  b.outputs = {1};
  b.nodes = {{"add0", "Add", {{"note", "\"test\""}}, {0, 2}, {1}}};
  b.arena_bytes = 128;
  b.data.resize(64, 0);
  float w[4] = {1, 2, 3, 4};
  memcpy(b.data.data(), w, sizeof(w));
  return b;
}

// out = (a + b) * 2: dispatch 0 adds the input a and the constant b into t,
// dispatch 1 scales t into out. Library blob at data segment offset 1024.
TestBundle AddScaleBundle() {
  std::vector<uint8_t> library = ReadFile(RUNTIME_TEST_KERNELS_SO);
  REQUIRE(!library.empty());
  TestBundle bundle;
  const int64_t n = kAddScaleElements;
  bundle.tensors = {
      {"a", fb::DType::Float32, {1, n}, fb::Storage::Arena, 0},
      {"b", fb::DType::Float32, {1, n}, fb::Storage::Constant, 0},
      {"t", fb::DType::Float32, {1, n}, fb::Storage::Arena, 1024},
      {"out/final", fb::DType::Float32, {1, n}, fb::Storage::Arena, 2048},
  };
  bundle.inputs = {0};
  bundle.outputs = {3};
  bundle.nodes = {{"add", "Add", {}, {0, 1}, {2}}, {"mul", "Mul", {}, {2}, {3}}};
  bundle.arena_bytes = 3072;
  SetConstantsAndLibrary(&bundle, kAddScaleElements, 0.5f, fb::LibraryFormat::ElfSharedObject, 1024, library);
  bundle.kernels = {{"vector_add", 0, 0}, {"scale", 0, 1}, {"always_fail", 0, 2}};
  float two = 2.0f;
  uint32_t two_bits;
  memcpy(&two_bits, &two, 4);
  bundle.dispatches = {
      {0, {kAddScaleElements / kAddScalePerGroup, 1, 1}, {{0, fb::Access::Read}, {1, fb::Access::Read}, {2, fb::Access::Write}}, {kAddScalePerGroup}, {0}},
      {1, {kAddScaleElements / kAddScalePerGroup, 1, 1}, {{2, fb::Access::Read}, {3, fb::Access::Write}}, {kAddScalePerGroup, two_bits}, {1}},
  };
  return bundle;
}

// x (input) at 0 and y (output) at 256 in the arena, w a constant; one SpirV
// library with a (fake) 64-byte module for kernel 0, dispatched with 3
// bindings and 2 push constants.
TestBundle SpirvBundle() {
  TestBundle b = MinimalBundle();
  b.tensors[1].offset = 256;
  b.arena_bytes = 512;
  b.data.resize(256 + 64, 0);
  std::vector<uint8_t> spirv = MinimalSpirvModule(64, 1, 1);
  std::copy(spirv.begin(), spirv.end(), b.data.begin() + 256);
  b.libraries = {{fb::LibraryFormat::SpirV, 256, 64}};
  b.vulkan_features[0] = (uint32_t)fb::VulkanFeature::ShaderInt64;
  b.kernels = {{"k0_add", 0, 0}};
  TestSpirv& module = b.spirv[0];
  module.offset = 0;
  module.size = 64;
  module.entry_point = "main";
  module.workgroup_size = {64, 1, 1};
  module.binding_count = 3;
  module.push_constant_size = 8;
  b.dispatches = {{0, {1, 1, 1}, {{0, fb::Access::Read}, {2, fb::Access::Read}, {1, fb::Access::Write}}, {4, 5}, {0}}};
  return b;
}

// SpirvBundle() plus a host kernel (an ELF library at 320) dispatched after
// the device one: it reads y and writes x, downloading both, uploading x.
TestBundle HeterogeneousBundle() {
  TestBundle b = SpirvBundle();
  b.data.resize(320 + 64, 0);
  b.libraries.push_back({fb::LibraryFormat::ElfSharedObject, 320, 64});
  b.kernels.push_back({"k1_host", 1, 0});
  b.dispatches.push_back({1, {1, 1, 1}, {{1, fb::Access::Read}, {0, fb::Access::Write}, {2, fb::Access::Read}},
                          {}, {0}, {1, 0}, {0}});
  return b;
}

std::vector<uint8_t> ReadFile(const char* path) {
  std::vector<uint8_t> bytes;
  FILE* f = fopen(path, "rb");
  if (!f) return bytes;
  uint8_t buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  fclose(f);
  return bytes;
}

std::vector<uint8_t> MinimalSpirvModule(uint32_t x, uint32_t y, uint32_t z) {
  const uint32_t words[16] = {
      0x07230203u, 0x00010000u, 0, 10, 0,             // magic, version 1.0, generator, bound, schema
      (5u << 16) | 15u, 5, 1, 0x6e69616du, 0,          // OpEntryPoint GLCompute %1 "main"
      (6u << 16) | 16u, 1, 17, x, y, z,                // OpExecutionMode %1 LocalSize x y z
  };
  std::vector<uint8_t> bytes(sizeof(words));
  memcpy(bytes.data(), words, sizeof(words));
  return bytes;
}

std::string Message(kiln_status_t status) {
  std::string text = kiln_status_message(status);
  kiln_status_free(status);
  return text;
}

std::string LoadError(const TestBundle& b, kiln_status_code_t expected_code) {
  std::vector<uint8_t> file = b.Build();
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_model_load_memory(file.data(), file.size(), &model);
  kiln_model_free(model);
  if (!status) return "";
  CHECK(kiln_status_code(status) == expected_code);
  return Message(status);
}

bool Contains(const std::string& text, const char* words) {
  if (text.find(words) != std::string::npos) return true;
  MESSAGE("'" << text << "' does not contain '" << words << "'");
  return false;
}

}  // namespace kiln_test
