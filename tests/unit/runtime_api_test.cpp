// The C API's contract (kiln.h): versions, the model accessors against what
// the test bundle builder put in, versioned structs (struct_size: older,
// newer and bogus sizes), the two-call pipeline cache and index checks; and
// that the header is usable from C (runtime_c_api.c).
#include <doctest/doctest.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

using kiln_test::TestBundle;
namespace fb = kiln::fb;

extern "C" int kiln_test_c_api(const void* bundle, size_t size, char* message, size_t message_size);

namespace {

using kiln_test::Message;
using kiln_test::Contains;

// A model over `file` (kept alive by the caller), loaded verify-only so no
// kernel library has to be real.
kiln::Model Load(const std::vector<uint8_t>& file) {
  kiln::Model model;
  kiln::Status status =
      kiln::Model::LoadMemory(file.data(), file.size(), &model, KILN_MODEL_LOAD_VERIFY_ONLY);
  REQUIRE_MESSAGE(status.ok(), status.message());
  return model;
}

// The add/scale bundle with a node attribute, a producer and more than one
// push constant: every accessor has something to report.
TestBundle RichBundle() {
  TestBundle b = kiln_test::AddScaleBundle();
  b.nodes[0].attributes = {{"alpha", "1.5"}, {"mode", "\"sum\""}};
  return b;
}

// The tensor the builder described, as an accessor must report it.
void CheckTensor(const TestBundle& b, const std::vector<uint8_t>& file, uint32_t index,
                 const kiln_tensor_info_t& info) {
  const kiln_test::TestTensor& t = b.tensors[index];
  CHECK(info.index == index);
  CHECK(std::string(info.name) == t.name);
  CHECK((int)info.dtype == (int)t.dtype);
  REQUIRE(info.rank == t.shape.size());
  for (uint32_t d = 0; d < info.rank; ++d) CHECK(info.shape[d] == t.shape[d]);
  CHECK((int)info.storage == (int)t.storage);
  CHECK(info.offset == t.offset);
  size_t elements = 1;
  for (int64_t dim : t.shape) elements *= (size_t)dim;
  CHECK(info.byte_size == elements * 4);  // float32 tensors
  if (t.storage == fb::Storage::Constant) {
    // The constant's bytes (in the model's copy of `file`, which is not
    // 64-byte aligned; runtime_verify_test checks aligned memory is used in place).
    REQUIRE(info.data != nullptr);
    REQUIRE(file.size() >= info.byte_size);
    CHECK(memcmp(info.data, b.data.data() + t.offset, info.byte_size) == 0);
  } else {
    CHECK(info.data == nullptr);
  }
}

}  // namespace

TEST_CASE("api: version and ABI number") {
  CHECK(std::string(kiln_version()) == KILN_VERSION_STRING);
  CHECK(kiln_abi_version() == (uint32_t)KILN_ABI_VERSION);
  unsigned major = 0, minor = 0, patch = 0;
  CHECK(sscanf(kiln_version(), "%u.%u.%u", &major, &minor, &patch) == 3);
}

TEST_CASE("api: the model's header facts, tensors and nodes match the bundle") {
  TestBundle b = RichBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  kiln_model_info_t info;
  REQUIRE(model.get_info(&info).ok());
  CHECK(info.version_major == b.version_major);
  CHECK(info.version_minor == b.version_minor);
  CHECK(info.min_runtime_minor == b.min_runtime_minor);
  CHECK(info.device == KILN_DEVICE_CPU);
  CHECK(info.arena_bytes == b.arena_bytes);
  CHECK(info.data_segment_size == b.data.size());
  CHECK(info.data_segment_offset % 64 == 0);
  CHECK(info.data_segment_offset + info.data_segment_size == file.size());
  kiln_test::HashFields fields = kiln_test::FindHashFields(file);
  uint64_t hash = 0;
  memcpy(&hash, file.data() + fields.hash, 8);
  CHECK(info.content_hash == hash);
  CHECK(info.tensor_count == b.tensors.size());
  CHECK(info.node_count == b.nodes.size());
  CHECK(info.library_count == b.libraries.size());
  CHECK(info.kernel_count == b.kernels.size());
  CHECK(info.dispatch_count == b.dispatches.size());
  uint32_t constants = 0;
  uint64_t constant_bytes = 0;
  for (const kiln_test::TestTensor& t : b.tensors) {
    if (t.storage != fb::Storage::Constant) continue;
    ++constants;
    constant_bytes += 4 * (uint64_t)t.shape[1];
  }
  CHECK(info.constant_count == constants);
  CHECK(info.constant_bytes == constant_bytes);

  for (uint32_t i = 0; i < info.tensor_count; ++i) {
    kiln_tensor_info_t tensor;
    REQUIRE(model.get_tensor_info(i, &tensor).ok());
    CheckTensor(b, file, i, tensor);
  }
  // Inputs and outputs are their tensors.
  kiln_tensor_info_t io;
  REQUIRE(model.get_input_info(0, &io).ok());
  CheckTensor(b, file, b.inputs[0], io);
  REQUIRE(model.get_output_info(0, &io).ok());
  CheckTensor(b, file, b.outputs[0], io);

  for (uint32_t n = 0; n < info.node_count; ++n) {
    const kiln_test::TestNode& expected = b.nodes[n];
    kiln_node_info_t node;
    REQUIRE(model.get_node_info(n, &node).ok());
    CHECK(std::string(node.name) == expected.name);
    CHECK(std::string(node.op_type) == expected.op_type);
    CHECK(std::vector<uint32_t>(node.inputs, node.inputs + node.input_count) == expected.inputs);
    CHECK(std::vector<uint32_t>(node.outputs, node.outputs + node.output_count) == expected.outputs);
    REQUIRE(node.attribute_count == expected.attributes.size());
    for (uint32_t a = 0; a < node.attribute_count; ++a) {
      kiln_attribute_info_t attribute;
      REQUIRE(model.get_attribute_info(n, a, &attribute).ok());
      CHECK(std::string(attribute.name) == expected.attributes[a].first);
      CHECK(attribute.kind == KILN_ATTRIBUTE_TEXT);
      CHECK(std::string(attribute.value) == expected.attributes[a].second);
    }
  }
}

TEST_CASE("api: libraries, kernels, dispatches and bindings match the bundle") {
  TestBundle b = RichBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  kiln_library_info_t library;
  REQUIRE(model.get_library_info(0, &library).ok());
  CHECK(library.format == KILN_LIBRARY_FORMAT_ELF);
  CHECK(library.offset == b.libraries[0].offset);
  CHECK(library.size == b.libraries[0].size);
  CHECK(memcmp(library.data, b.data.data() + library.offset, library.size) == 0);  // the ELF blob
  CHECK(std::string(library.target_triple).find("linux") != std::string::npos);  // the builder's triple
  CHECK(library.vulkan_features == 0);
  for (uint32_t k = 0; k < b.kernels.size(); ++k) {
    kiln_kernel_info_t kernel;
    REQUIRE(model.get_kernel_info(k, &kernel).ok());
    CHECK(std::string(kernel.name) == b.kernels[k].name);
    CHECK(kernel.library == b.kernels[k].library);
    CHECK(kernel.ordinal == b.kernels[k].ordinal);
    CHECK(kernel.format == KILN_LIBRARY_FORMAT_ELF);
    CHECK(std::string(kernel.entry_point) == "");
    CHECK(kernel.spirv_size == 0);
  }
  for (uint32_t d = 0; d < b.dispatches.size(); ++d) {
    const kiln_test::TestDispatch& expected = b.dispatches[d];
    kiln_dispatch_info_t dispatch;
    REQUIRE(model.get_dispatch_info(d, &dispatch).ok());
    CHECK(dispatch.kernel == expected.kernel);
    CHECK(dispatch.device == KILN_DEVICE_CPU);
    CHECK(std::vector<uint32_t>(dispatch.workgroup_count, dispatch.workgroup_count + 3) ==
          expected.workgroup_count);
    CHECK(std::vector<uint32_t>(dispatch.push_constants, dispatch.push_constants + dispatch.push_constant_count) ==
          expected.push_constants);
    CHECK(std::vector<uint32_t>(dispatch.source_nodes, dispatch.source_nodes + dispatch.source_node_count) ==
          expected.source_nodes);
    CHECK(dispatch.host_download_count == 0);
    CHECK(dispatch.host_upload_count == 0);
    REQUIRE(dispatch.binding_count == expected.bindings.size());
    for (uint32_t x = 0; x < dispatch.binding_count; ++x) {
      kiln_binding_info_t binding;
      REQUIRE(model.get_binding_info(d, x, &binding).ok());
      CHECK(binding.tensor == expected.bindings[x].first);
      CHECK((int)binding.access == (int)expected.bindings[x].second);
    }
  }
}

TEST_CASE("api: SPIR-V kernels and host dispatches of a heterogeneous bundle") {
  TestBundle b = kiln_test::HeterogeneousBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  kiln_model_info_t info;
  REQUIRE(model.get_info(&info).ok());
  CHECK(info.device == KILN_DEVICE_VULKAN);
  kiln_library_info_t library;
  REQUIRE(model.get_library_info(0, &library).ok());
  CHECK(library.format == KILN_LIBRARY_FORMAT_SPIRV);
  CHECK(library.vulkan_features == b.vulkan_features[0]);
  kiln_kernel_info_t kernel;
  REQUIRE(model.get_kernel_info(0, &kernel).ok());
  const kiln_test::TestSpirv& module = b.spirv[0];
  CHECK(kernel.format == KILN_LIBRARY_FORMAT_SPIRV);
  CHECK(std::string(kernel.entry_point) == module.entry_point);
  CHECK(kernel.spirv_offset == module.offset);
  CHECK(kernel.spirv_size == module.size);
  CHECK(std::vector<uint32_t>(kernel.workgroup_size, kernel.workgroup_size + 3) == module.workgroup_size);
  CHECK(kernel.binding_count == module.binding_count);
  CHECK(kernel.push_constant_size == module.push_constant_size);
  REQUIRE(model.get_kernel_info(1, &kernel).ok());
  CHECK(kernel.format == KILN_LIBRARY_FORMAT_ELF);
  kiln_dispatch_info_t dispatch;
  REQUIRE(model.get_dispatch_info(0, &dispatch).ok());
  CHECK(dispatch.device == KILN_DEVICE_VULKAN);
  REQUIRE(model.get_dispatch_info(1, &dispatch).ok());
  CHECK(dispatch.device == KILN_DEVICE_HOST);
  CHECK(std::vector<uint32_t>(dispatch.host_downloads, dispatch.host_downloads + dispatch.host_download_count) ==
        b.dispatches[1].host_downloads);
  CHECK(std::vector<uint32_t>(dispatch.host_uploads, dispatch.host_uploads + dispatch.host_upload_count) ==
        b.dispatches[1].host_uploads);
}

TEST_CASE("api: every index and pointer is checked") {
  TestBundle b = RichBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  const kiln_model_t* m = model.get();
  kiln_tensor_info_t tensor;
  kiln_tensor_info_init(&tensor);
  kiln_status_t status = kiln_model_get_tensor_info(m, b.tensors.size(), &tensor);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Contains(Message(status), "tensor index 4 out of range (4 tensors)"));
  kiln_node_info_t node;
  kiln_node_info_init(&node);
  CHECK(Contains(Message(kiln_model_get_node_info(m, 2, &node)), "node index 2 out of range"));
  kiln_attribute_info_t attribute;
  kiln_attribute_info_init(&attribute);
  CHECK(Contains(Message(kiln_model_get_attribute_info(m, 0, 2, &attribute)), "attribute index 2 out of range (2 attributes)"));
  CHECK(Contains(Message(kiln_model_get_attribute_info(m, 1, 0, &attribute)), "attribute index 0 out of range (0 attributes)"));
  CHECK(Contains(Message(kiln_model_get_attribute_info(m, 9, 0, &attribute)), "node index 9 out of range"));
  kiln_library_info_t library;
  kiln_library_info_init(&library);
  CHECK(Contains(Message(kiln_model_get_library_info(m, 1, &library)), "library index 1 out of range"));
  kiln_kernel_info_t kernel;
  kiln_kernel_info_init(&kernel);
  CHECK(Contains(Message(kiln_model_get_kernel_info(m, 3, &kernel)), "kernel index 3 out of range (3 kernels)"));
  kiln_dispatch_info_t dispatch;
  kiln_dispatch_info_init(&dispatch);
  CHECK(Contains(Message(kiln_model_get_dispatch_info(m, SIZE_MAX, &dispatch)), "dispatch index"));
  kiln_binding_info_t binding;
  kiln_binding_info_init(&binding);
  CHECK(Contains(Message(kiln_model_get_binding_info(m, 1, 2, &binding)), "binding index 2 out of range (2 bindings)"));
  CHECK(Contains(Message(kiln_model_get_input_info(m, 1, &tensor)), "input index 1 out of range (1 inputs)"));
  CHECK(Contains(Message(kiln_model_get_output_info(m, 1, &tensor)), "output index 1 out of range"));
  CHECK(Contains(Message(kiln_model_get_tensor_info(NULL, 0, &tensor)), "NULL model"));
  CHECK(Contains(Message(kiln_model_get_tensor_info(m, 0, NULL)), "NULL out_info"));
  CHECK(Contains(Message(kiln_model_get_info(NULL, NULL)), "NULL model"));
  CHECK(kiln_model_input_count(NULL) == 0);
  // Failed calls write nothing.
  CHECK(tensor.name == nullptr);
  CHECK(binding.tensor == 0);
}

TEST_CASE("api: struct_size: an older, smaller info struct gets only its fields") {
  TestBundle b = RichBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  // The first version of kiln_tensor_info_t ends at byte_size; what follows
  // belongs to the caller (sentinel bytes must stay untouched).
  unsigned char buffer[sizeof(kiln_tensor_info_t) + 16];
  memset(buffer, 0xA5, sizeof(buffer));
  size_t old_size = KILN_TENSOR_INFO_MIN_SIZE;
  memcpy(buffer, &old_size, sizeof(old_size));
  REQUIRE(kiln_model_get_tensor_info(model.get(), 1, (kiln_tensor_info_t*)buffer) == NULL);
  kiln_tensor_info_t old_info;
  memcpy(&old_info, buffer, old_size);
  CHECK(old_info.struct_size == old_size);  // the caller's value stays
  CHECK(std::string(old_info.name) == b.tensors[1].name);
  CHECK(old_info.byte_size == 4u * kiln_test::kAddScaleElements);
  for (size_t i = old_size; i < sizeof(buffer); ++i) CHECK_MESSAGE(buffer[i] == 0xA5, "byte " << i);

  // A newer, larger struct: its unknown tail is not written either.
  memset(buffer, 0xA5, sizeof(buffer));
  size_t new_size = sizeof(buffer);
  memcpy(buffer, &new_size, sizeof(new_size));
  REQUIRE(kiln_model_get_tensor_info(model.get(), 1, (kiln_tensor_info_t*)buffer) == NULL);
  kiln_tensor_info_t full;
  memcpy(&full, buffer, sizeof(full));
  CHECK(full.storage == KILN_STORAGE_CONSTANT);
  CHECK(full.offset == b.tensors[1].offset);
  for (size_t i = sizeof(kiln_tensor_info_t); i < sizeof(buffer); ++i) CHECK(buffer[i] == 0xA5);
}

TEST_CASE("api: struct_size: a bogus size is refused and nothing is written") {
  TestBundle b = RichBundle();
  std::vector<uint8_t> file = b.Build();
  kiln::Model model = Load(file);
  kiln_tensor_info_t tensor;
  memset(&tensor, 0, sizeof(tensor));  // struct_size 0: not initialized
  kiln_status_t status = kiln_model_get_tensor_info(model.get(), 0, &tensor);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Contains(Message(status), "kiln_tensor_info_t.struct_size is 0"));
  CHECK(tensor.name == nullptr);
  tensor.struct_size = KILN_TENSOR_INFO_MIN_SIZE - 1;
  CHECK(kiln_status_code(status = kiln_model_get_input_info(model.get(), 0, &tensor)) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  info.struct_size = KILN_MODEL_INFO_MIN_SIZE - 4;  // below its first published size
  CHECK(Contains(Message(kiln_model_get_info(model.get(), &info)), "kiln_model_info_t.struct_size"));
  // A caller compiled before the signature fields gets the fields it knows,
  // and nothing past them is written.
  memset(&info, 0xAB, sizeof(info));
  info.struct_size = KILN_MODEL_INFO_MIN_SIZE;
  CHECK(kiln_model_get_info(model.get(), &info) == NULL);
  CHECK(info.struct_size == KILN_MODEL_INFO_MIN_SIZE);
  CHECK(info.tensor_count == b.tensors.size());
  CHECK(info.dispatch_count == b.dispatches.size());
  uint32_t signature_bytes = 0;  // read as bytes: 0xABABABAB is no kiln_signature_t
  memcpy(&signature_bytes, &info.signature, sizeof(signature_bytes));
  CHECK(signature_bytes == 0xABABABABu);
  CHECK(info.signer_public_key[31] == 0xAB);
  kiln_session_load_stats_t stats;
  kiln_session_load_stats_init(&stats);
  stats.struct_size = 8;
  std::vector<uint8_t> empty = kiln_test::MinimalBundle().Build();
  kiln_model_t* empty_model = NULL;
  REQUIRE(kiln_model_load_memory(empty.data(), empty.size(), &empty_model) == NULL);
  kiln_session_t* session = NULL;
  REQUIRE(kiln_session_create(empty_model, NULL, &session) == NULL);  // NULL options: all defaults
  CHECK(Contains(Message(kiln_session_get_load_stats(session, &stats)), "kiln_session_load_stats_t.struct_size is 8"));
  kiln_session_free(session);
  kiln_model_free(empty_model);
}

TEST_CASE("api: struct_size: older options leave the later fields at their defaults") {
  std::vector<uint8_t> file = kiln_test::MinimalBundle().Build();
  kiln_model_t* model = NULL;
  REQUIRE(kiln_model_load_memory(file.data(), file.size(), &model) == NULL);
  // A caller built when the options ended at thread_init_user_data: the
  // bytes after it are not the library's to read (0xFF would be device
  // kind 0xFFFFFFFF, refused, if they were read).
  kiln_session_options_t options;
  memset(&options, 0xFF, sizeof(options));
  options.struct_size = KILN_SESSION_OPTIONS_MIN_SIZE;
  options.thread_count = 2;
  options.thread_init = NULL;
  options.thread_init_user_data = NULL;
  kiln_session_t* session = NULL;
  kiln_status_t status = kiln_session_create(model, &options, &session);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(std::string(kiln_session_device_name(session)) == "cpu");
  kiln_session_free(session);
  // The same bytes as a current struct: device 0xFFFFFFFF is read and refused.
  options.struct_size = sizeof(options);
  CHECK(Contains(Message(kiln_session_create(model, &options, &session)), "unknown device kind 4294967295"));
  // Sizes below the first version are refused with a clear message.
  options.struct_size = 4;
  status = kiln_session_create(model, &options, &session);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Contains(Message(status), "session: kiln_session_options_t.struct_size is 4, below the struct's first version"));
  kiln_model_free(model);
}

TEST_CASE("api: the header works from C") {
  std::vector<uint8_t> file = RichBundle().Build();
  char message[256] = "";
  CHECK_MESSAGE(kiln_test_c_api(file.data(), file.size(), message, sizeof(message)) == 0, message);
}
