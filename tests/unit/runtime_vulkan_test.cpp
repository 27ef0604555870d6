// The Vulkan layer (runtime/src/vulkan). The pure checks (VkResult statuses,
// SPIR-V framing, memory-type selection, no libvulkan) run everywhere; the
// rest run the shaders of data/vulkan_*.comp (compiled at build time) on
// Mesa's lavapipe, the CPU Vulkan device, with VK_LAYER_KHRONOS_validation
// and its synchronization checks on: every warning or error it reports fails
// the test. Without libvulkan, the layer, lavapipe or glslangValidator those
// tests print why and skip.
#include <doctest/doctest.h>

#include <chrono>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <array>
#include <string>
#include <vector>

#include "runtime_bundle_builder.h"
#include "runtime_test_config.h"
#include "runtime_vulkan_util.h"
#include "vulkan/vulkan_command.h"

namespace {

using kiln_test::Message;

constexpr uint32_t kVectorN = 1000;  // elements per vector (not a multiple of the workgroup size)
constexpr uint64_t kVectorBytes = kVectorN * 4;
constexpr uint64_t kStride = 4096;  // vectors start at multiples of this in the arena
constexpr uint64_t kTimeoutNs = 10ull * 1000 * 1000 * 1000;

// The SPIR-V words of a compiled test shader (empty when glslang was missing).
std::vector<uint32_t> ReadSpirv(const char* path) {
  std::vector<uint32_t> words;
  if (!path[0]) return words;
  std::vector<uint8_t> bytes = kiln_test::ReadFile(path);
  REQUIRE(bytes.size() % 4 == 0);
  words.resize(bytes.size() / 4);
  memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

// Warnings and errors from the validation layer.
struct Messages {
  int count = 0;
  std::string first;
};

void CountMessage(void* user_data, kiln_vulkan_message_severity_t severity, const char* text) {
  Messages* messages = static_cast<Messages*>(user_data);
  if (messages->count++ == 0) messages->first = text;
  fprintf(stderr, "vulkan %s: %s\n", severity == KILN_VULKAN_MESSAGE_ERROR ? "error" : "warning",
          text);
}

// An instance with validation on lavapipe, the two test shaders and their
// pipelines. Open() returns false (with `skip`) when something is missing.
struct Lavapipe {
  Messages messages;
  kiln_vulkan_instance_t* instance = nullptr;
  kiln_vulkan_device_t* device = nullptr;
  std::vector<uint32_t> add_spirv = ReadSpirv(RUNTIME_TEST_VULKAN_VECTOR_ADD_SPV);
  std::vector<uint32_t> square_spirv = ReadSpirv(RUNTIME_TEST_VULKAN_SQUARE_SPV);
  std::string skip;

  bool Open() {
    if (add_spirv.empty() || square_spirv.empty()) {
      skip = "the test shaders were not compiled (no glslangValidator)";
      return false;
    }
    kiln_vulkan_instance_options_t options = {};
    options.validation = KILN_VULKAN_VALIDATION_SYNCHRONIZATION;
    options.message_callback = CountMessage;
    options.message_user_data = &messages;
    kiln_status_t status = kiln_vulkan_instance_create(&options, &instance);
    if (status) {
      REQUIRE(kiln_status_code(status) == KILN_UNSUPPORTED);
      skip = Message(status);
      return false;
    }
    kiln_vulkan_device_options_t device_options = {};
    if (!FindLavapipe(&device_options.physical_device_index)) {
      skip = "no lavapipe (llvmpipe) device among " +
             std::to_string(kiln_vulkan_instance_device_count(instance)) + " devices";
      return false;
    }
    status = kiln_vulkan_device_create(instance, &device_options, &device);
    REQUIRE_MESSAGE(status == NULL, Message(status));
    return true;
  }

  bool FindLavapipe(uint32_t* out_index) { return kiln_test::FindLavapipe(instance, out_index); }

  // c = a + scale * b: 3 bindings, {n, scale}, the stated workgroup size.
  kiln_vulkan_pipeline_options_t AddOptions() const {
    kiln_vulkan_pipeline_options_t options = Options(add_spirv, 3, 8);
    options.workgroup_size[0] = 64;
    options.workgroup_size[1] = 1;
    options.workgroup_size[2] = 1;
    return options;
  }

  // y = x * x: 2 bindings, {n}, the shader's workgroup size.
  kiln_vulkan_pipeline_options_t SquareOptions() const { return Options(square_spirv, 2, 4); }

  static kiln_vulkan_pipeline_options_t Options(const std::vector<uint32_t>& spirv,
                                                uint32_t bindings, uint32_t push_bytes) {
    kiln_vulkan_pipeline_options_t options = {};
    options.spirv = spirv.data();
    options.spirv_size = spirv.size() * 4;
    options.binding_count = bindings;
    options.push_constant_size = push_bytes;
    return options;
  }

  // Frees everything; afterwards `messages` holds all that was reported.
  void Close() {
    kiln_vulkan_device_free(device);
    device = nullptr;
    kiln_vulkan_instance_free(instance);
    instance = nullptr;
  }
  ~Lavapipe() { Close(); }
};

#define OPEN_OR_SKIP(lavapipe)                          \
  if (!(lavapipe).Open()) {                             \
    kiln_test::SkipOrFail((lavapipe).skip);             \
    return;                                             \
  }

// Closes and fails the test if the validation layer reported anything.
#define CHECK_NO_VALIDATION_MESSAGES(lavapipe)                                    \
  do {                                                                            \
    (lavapipe).Close();                                                           \
    CHECK_MESSAGE((lavapipe).messages.count == 0, (lavapipe).messages.first);     \
  } while (0)

kiln_vulkan_binding_t Binding(const kiln_vulkan_buffer_t* buffer, uint64_t slot, int writable) {
  return kiln_vulkan_binding_t{buffer, slot * kStride, kVectorBytes, writable};
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, 4);
  return bits;
}

std::vector<float> Iota(float start, float step) {
  std::vector<float> values(kVectorN);
  for (uint32_t i = 0; i < kVectorN; ++i) values[i] = start + step * (float)i;
  return values;
}

}  // namespace

TEST_CASE("vulkan: VkResult statuses name the call and the result") {
  kiln_status_t status =
      kiln_vulkan_result_status(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory");
  CHECK(kiln_status_code(status) == KILN_OUT_OF_MEMORY);
  CHECK(Message(status) == "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)");
  status = kiln_vulkan_result_status(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  CHECK(kiln_status_code(status) == KILN_INTERNAL);
  CHECK(Message(status) == "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST (-4)");
  status = kiln_vulkan_result_status(VK_ERROR_INCOMPATIBLE_DRIVER, "vkCreateInstance");
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  kiln_status_free(status);
  status = kiln_vulkan_result_status((VkResult)-12345, "vkX");
  CHECK(Message(status) == "vkX failed: VK_RESULT_UNKNOWN (-12345)");
  CHECK(kiln_vulkan_result_status(VK_SUCCESS, "vkX") == NULL);
}

TEST_CASE("vulkan: SPIR-V framing is checked before Vulkan sees it") {
  std::vector<uint32_t> add = ReadSpirv(RUNTIME_TEST_VULKAN_VECTOR_ADD_SPV);
  if (add.empty()) {
    MESSAGE("skipped: the test shaders were not compiled (no glslangValidator)");
    return;
  }
  kiln_spirv_info_t info;
  REQUIRE(kiln_spirv_inspect(add.data(), add.size() * 4, NULL, &info) == NULL);
  CHECK(info.word_count == add.size());
  CHECK(info.workgroup_size[0] == 64);
  CHECK(info.workgroup_size[1] == 1);
  CHECK(info.workgroup_size[2] == 1);
  auto inspect = [&](const std::vector<uint32_t>& words, size_t size, const char* entry) {
    kiln_status_t status = kiln_spirv_inspect(words.data(), size, entry, &info);
    CHECK(kiln_status_code(status) == KILN_INVALID_BUNDLE);
    return Message(status);
  };
  CHECK(inspect(add, add.size() * 4 - 2, NULL).find("not a multiple of 4") != std::string::npos);
  CHECK(inspect(add, 16, NULL).find("not a multiple of 4 of at least 20") != std::string::npos);
  CHECK(inspect(add, add.size() * 4, "other") == "spirv: no GLCompute entry point 'other'");
  std::vector<uint32_t> bad = add;
  bad[0] = 0x12345678;
  CHECK(inspect(bad, bad.size() * 4, NULL) ==
        "spirv: magic number 0x12345678, expected 0x07230203");
  bad[0] = __builtin_bswap32(KILN_SPIRV_MAGIC);
  CHECK(inspect(bad, bad.size() * 4, NULL).find("other byte order") != std::string::npos);
  bad = add;
  bad[5] = (0xFFFFu << 16) | (bad[5] & 0xFFFFu);  // first instruction runs past the end
  CHECK(inspect(bad, bad.size() * 4, NULL).find("has word count 65535") != std::string::npos);
  bad[5] = bad[5] & 0xFFFFu;  // word count 0
  CHECK(inspect(bad, bad.size() * 4, NULL).find("has word count 0") != std::string::npos);
  // The square shader states its size only with LocalSize; the add shader
  // also with the WorkgroupSize built-in (glslang's gl_WorkGroupSize), which
  // must resolve to constants.
  std::vector<uint32_t> square = ReadSpirv(RUNTIME_TEST_VULKAN_SQUARE_SPV);
  REQUIRE(kiln_spirv_inspect(square.data(), square.size() * 4, "main", &info) == NULL);
  CHECK(info.workgroup_size[0] == 32);
  CHECK(info.workgroup_size[1] == 2);
  CHECK(info.workgroup_size[2] == 1);
  bad = add;
  bool retargeted = false;
  for (size_t at = 5; at < bad.size(); at += bad[at] >> 16) {
    if ((bad[at] & 0xFFFFu) == 71 && bad[at + 2] == 11 && bad[at + 3] == 25) {
      bad[at + 1] = 0xFFFFFFF0u;  // OpDecorate BuiltIn WorkgroupSize of an id never defined
      retargeted = true;
    }
  }
  CHECK(retargeted);
  CHECK(inspect(bad, bad.size() * 4, NULL).find("WorkgroupSize built-in is not a composite") !=
        std::string::npos);
  std::vector<uint32_t> shifted(add.size() + 1);
  memcpy((uint8_t*)shifted.data() + 2, add.data(), add.size() * 4 - 2);
  kiln_status_t status = kiln_spirv_inspect((const uint8_t*)shifted.data() + 2,
                                                   add.size() * 4, NULL, &info);
  CHECK(Message(status) == "spirv: code is NULL or not 4-byte aligned");
}

TEST_CASE("vulkan: memory type selection") {
  VkPhysicalDeviceMemoryProperties memory = {};
  memory.memoryTypeCount = 3;
  memory.memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  memory.memoryTypes[1].propertyFlags =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  memory.memoryTypes[2].propertyFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  uint32_t index = 99;
  const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  const VkMemoryPropertyFlags coherent_cached =
      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  REQUIRE(kiln_vulkan_memory_type_select(&memory, 0x7, visible, coherent_cached, &index) == NULL);
  CHECK(index == 2);  // has the preferred flags
  REQUIRE(kiln_vulkan_memory_type_select(&memory, 0x3, visible, coherent_cached, &index) == NULL);
  CHECK(index == 1);  // type 2 not allowed: the required flags are enough
  REQUIRE(kiln_vulkan_memory_type_select(&memory, 0x7, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0,
                                         &index) == NULL);
  CHECK(index == 0);
  kiln_status_t status = kiln_vulkan_memory_type_select(
      &memory, 0x6, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &index);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  CHECK(Message(status) == "vulkan: no memory type with properties 0x1 among types 0x6");
}

TEST_CASE("vulkan: without libvulkan, creating an instance is a status") {
  kiln_vulkan_instance_options_t options = {};
  options.library_name = "libkiln-test-no-such-vulkan.so.1";
  kiln_vulkan_instance_t* instance = nullptr;
  kiln_status_t status = kiln_vulkan_instance_create(&options, &instance);
  CHECK(instance == nullptr);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  CHECK(Message(status).find("vulkan: creating the instance: vulkan: cannot load "
                             "libkiln-test-no-such-vulkan.so.1 (") == 0);
  CHECK(kiln_vulkan_instance_device_count(NULL) == 0);
  CHECK(kiln_status_code(status = kiln_vulkan_device_create(NULL, NULL, NULL)) ==
        KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
}

TEST_CASE("vulkan: devices are listed and chosen by index") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  const uint32_t count = kiln_vulkan_instance_device_count(lavapipe.instance);
  CHECK(count >= 1);
  const VkPhysicalDeviceProperties* properties = nullptr;
  kiln_status_t status =
      kiln_vulkan_instance_device_properties(lavapipe.instance, count, &properties);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  CHECK(Message(status).find("out of range") != std::string::npos);
  kiln_vulkan_device_options_t options = {};
  options.physical_device_index = count;
  kiln_vulkan_device_t* device = nullptr;
  CHECK(kiln_status_code(status = kiln_vulkan_device_create(lavapipe.instance, &options,
                                                            &device)) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  MESSAGE("running on '" << lavapipe.device->physical->properties.deviceName << "'");
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

// The test's buffers: an arena of 6 vectors at multiples of kStride, and a
// small staging buffer (the transfers go through it in chunks).
struct Buffers {
  kiln_vulkan_device_t* device;
  kiln_vulkan_buffer_t arena = {};
  kiln_vulkan_buffer_t staging = {};
  explicit Buffers(kiln_vulkan_device_t* device_in) : device(device_in) {
    kiln_status_t status =
        kiln_vulkan_buffer_create(device, KILN_VULKAN_BUFFER_DEVICE, 6 * kStride, &arena);
    REQUIRE_MESSAGE(status == NULL, Message(status));
    status = kiln_vulkan_buffer_create(device, KILN_VULKAN_BUFFER_STAGING, 1536, &staging);
    REQUIRE_MESSAGE(status == NULL, Message(status));
  }
  ~Buffers() {
    kiln_vulkan_buffer_release(device, &staging);
    kiln_vulkan_buffer_release(device, &arena);
  }
  void Upload(uint64_t slot, const std::vector<float>& values) {
    kiln_status_t status = kiln_vulkan_buffer_upload(device, &staging, &arena, slot * kStride,
                                                     values.data(), kVectorBytes);
    REQUIRE_MESSAGE(status == NULL, Message(status));
  }
  std::vector<float> Download(uint64_t slot) {
    std::vector<float> values(kVectorN);
    kiln_status_t status = kiln_vulkan_buffer_download(device, &staging, &arena, slot * kStride,
                                                       values.data(), kVectorBytes);
    REQUIRE_MESSAGE(status == NULL, Message(status));
    return values;
  }
};

// The add dispatch's bindings: a (slot 0), b (slot 1) -> c (slot 2).
std::array<kiln_vulkan_binding_t, 3> AddBindings(const kiln_vulkan_buffer_t* arena) {
  return {Binding(arena, 0, 0), Binding(arena, 1, 0), Binding(arena, 2, 1)};
}

// Uploads a and b, runs c = a + scale * b with `add` once, downloads c and
// checks it.
void RunAdd(kiln_vulkan_device_t* device, const kiln_vulkan_pipeline_t* add, float scale) {
  Buffers buffers(device);
  std::vector<float> a = Iota(1.0f, 1.0f), b = Iota(-3.0f, 0.5f);
  buffers.Upload(0, a);
  buffers.Upload(1, b);
  std::array<kiln_vulkan_binding_t, 3> bindings = AddBindings(&buffers.arena);
  const uint32_t push[2] = {kVectorN, FloatBits(scale)};
  kiln_vulkan_dispatch_t dispatch = {add, bindings.data(), 3, push, 2, {(kVectorN + 63) / 64, 1, 1}};
  kiln_vulkan_command_list_t* list = nullptr;
  kiln_status_t status = kiln_vulkan_command_list_create(device, &dispatch, 1, NULL, &list);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(list->barrier_count == 0);
  REQUIRE(kiln_vulkan_command_list_submit(list) == NULL);
  status = kiln_vulkan_command_list_submit(list);  // not waited for yet
  CHECK(Message(status).find("was not waited for") != std::string::npos);
  REQUIRE(kiln_vulkan_command_list_wait(list, kTimeoutNs) == NULL);
  CHECK(kiln_vulkan_command_list_wait(list, kTimeoutNs) == NULL);  // nothing pending
  std::vector<float> c = buffers.Download(2);
  for (uint32_t i = 0; i < kVectorN; ++i) REQUIRE(c[i] == a[i] + scale * b[i]);
  kiln_vulkan_command_list_free(list);
}

TEST_CASE("vulkan: upload, a vector add with push constants, download") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  kiln_vulkan_device_t* device = lavapipe.device;
  kiln_vulkan_pipeline_t add = {};
  kiln_vulkan_pipeline_options_t add_options = lavapipe.AddOptions();
  kiln_status_t status = kiln_vulkan_pipeline_create(device, &add_options, &add);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  RunAdd(device, &add, 2.0f);
  kiln_vulkan_pipeline_release(device, &add);
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

// add (a, b -> c), square (a -> e), square (c -> d): the third depends on the
// first, the second on neither.
struct Chain {
  kiln_vulkan_binding_t add_bindings[3];
  kiln_vulkan_binding_t square_a_bindings[2];
  kiln_vulkan_binding_t square_c_bindings[2];
  uint32_t add_push[2] = {kVectorN, FloatBits(0.5f)};
  uint32_t square_push[1] = {kVectorN};
  kiln_vulkan_dispatch_t dispatches[3];
  Chain(const kiln_vulkan_buffer_t* arena, const kiln_vulkan_pipeline_t* add,
        const kiln_vulkan_pipeline_t* square)
      : add_bindings{Binding(arena, 0, 0), Binding(arena, 1, 0), Binding(arena, 2, 1)},
        square_a_bindings{Binding(arena, 0, 0), Binding(arena, 4, 1)},
        square_c_bindings{Binding(arena, 2, 0), Binding(arena, 3, 1)},
        dispatches{{add, add_bindings, 3, add_push, 2, {(kVectorN + 63) / 64, 1, 1}},
                   {square, square_a_bindings, 2, square_push, 1, {(kVectorN + 63) / 64, 1, 1}},
                   {square, square_c_bindings, 2, square_push, 1, {(kVectorN + 63) / 64, 1, 1}}} {}
};

// Records the chain (with or without barriers) and replays it `runs` times
// with new inputs each time, checking every output.
void RunChain(Lavapipe& lavapipe, uint32_t debug_no_barriers, int runs) {
  kiln_vulkan_device_t* device = lavapipe.device;
  Buffers buffers(device);
  kiln_vulkan_pipeline_t add = {}, square = {};
  kiln_vulkan_pipeline_options_t add_options = lavapipe.AddOptions();
  kiln_vulkan_pipeline_options_t square_options = lavapipe.SquareOptions();
  REQUIRE(kiln_vulkan_pipeline_create(device, &add_options, &add) == NULL);
  REQUIRE(kiln_vulkan_pipeline_create(device, &square_options, &square) == NULL);
  CHECK(square.workgroup_size[0] == 32);
  CHECK(square.workgroup_size[1] == 2);
  Chain chain(&buffers.arena, &add, &square);
  kiln_vulkan_command_list_options_t options = {};
  options.debug_no_barriers = debug_no_barriers;
  kiln_vulkan_command_list_t* list = nullptr;
  kiln_status_t status =
      kiln_vulkan_command_list_create(device, chain.dispatches, 3, &options, &list);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  CHECK(list->dispatch_count == 3);
  CHECK(list->barrier_count == (debug_no_barriers ? 0u : 1u));
  for (int run = 0; run < runs; ++run) {
    std::vector<float> a = Iota((float)run, 0.25f), b = Iota(2.0f, (float)-run);
    buffers.Upload(0, a);
    buffers.Upload(1, b);
    REQUIRE(kiln_vulkan_command_list_submit(list) == NULL);
    REQUIRE(kiln_vulkan_command_list_wait(list, kTimeoutNs) == NULL);
    std::vector<float> c = buffers.Download(2), d = buffers.Download(3), e = buffers.Download(4);
    for (uint32_t i = 0; i < kVectorN; ++i) {
      REQUIRE(c[i] == a[i] + 0.5f * b[i]);
      REQUIRE(d[i] == c[i] * c[i]);
      REQUIRE(e[i] == a[i] * a[i]);
    }
  }
  kiln_vulkan_command_list_free(list);
  kiln_vulkan_pipeline_release(device, &square);
  kiln_vulkan_pipeline_release(device, &add);
}

TEST_CASE("vulkan: a recorded dispatch chain replays, with a barrier where it depends") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  RunChain(lavapipe, 0, 5);
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

TEST_CASE("vulkan: synchronization validation catches a missing barrier") {
  // Shows the validation in the other tests would notice a missing barrier:
  // the same chain recorded without them is reported (lavapipe may still
  // compute the right values, as it runs dispatches one after the other).
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  RunChain(lavapipe, 1, 1);
  lavapipe.Close();
  CHECK(lavapipe.messages.count > 0);
  CHECK(lavapipe.messages.first.find("SYNC-HAZARD-READ") != std::string::npos);
}

TEST_CASE("vulkan: freeing after a submission that never finishes does not hang") {
  // A list marked pending whose fence nothing will signal stands for a
  // shader that never ends (a real GPU's watchdog may take seconds to act).
  // Freeing waits at most the transfer timeout, leaks the list's objects and
  // marks the device wedged: nothing more is submitted, and the buffers,
  // the device and the instance are leaked instead of destroyed while they
  // may be in use (which the validation layer would report).
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  kiln_vulkan_buffer_t buffer = {};
  kiln_status_t status = kiln_vulkan_buffer_create(lavapipe.device, KILN_VULKAN_BUFFER_DEVICE, 256, &buffer);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  kiln_vulkan_command_list_t* list = nullptr;
  status = kiln_vulkan_command_list_create(lavapipe.device, nullptr, 0, nullptr, &list);
  REQUIRE_MESSAGE(status == NULL, Message(status));
  list->pending = 1;  // as if submitted
  lavapipe.device->transfer_timeout_ns = 20 * 1000 * 1000;
  auto t0 = std::chrono::steady_clock::now();
  kiln_vulkan_command_list_free(list);
  CHECK(lavapipe.device->wedged == 1);
  CHECK(lavapipe.instance->wedged == 1);
  float data[4] = {1, 2, 3, 4};
  status = kiln_vulkan_buffer_upload(lavapipe.device, nullptr, &buffer, 0, data, sizeof(data));
  CHECK(Message(status).find("the device is wedged") != std::string::npos);  // Message frees it
  kiln_vulkan_buffer_release(lavapipe.device, &buffer);  // leaked
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s < 5.0);
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

TEST_CASE("vulkan: pipeline cache round trip") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  kiln_vulkan_device_t* device = lavapipe.device;
  {
    VkPipelineCache cache = VK_NULL_HANDLE;
    int used = -1;
    REQUIRE(kiln_vulkan_pipeline_cache_create(device, NULL, 0, &cache, &used) == NULL);
    CHECK(used == 0);
    kiln_vulkan_pipeline_options_t options = lavapipe.AddOptions();
    options.cache = cache;
    kiln_vulkan_pipeline_t first = {};
    REQUIRE(kiln_vulkan_pipeline_create(device, &options, &first) == NULL);
    size_t blob_size = 0;  // two calls: the size, then the bytes
    REQUIRE(kiln_vulkan_pipeline_cache_get_data(device, cache, NULL, 0, &blob_size) == NULL);
    CHECK(blob_size >= 16 + VK_UUID_SIZE);  // lavapipe's holds just the header
    std::vector<uint8_t> saved(blob_size);
    kiln_status_t small = kiln_vulkan_pipeline_cache_get_data(device, cache, saved.data(), 8, &blob_size);
    CHECK(kiln_status_code(small) == KILN_INVALID_ARGUMENT);
    CHECK(std::string(kiln_status_message(small)).find("too small") != std::string::npos);
    kiln_status_free(small);
    size_t written = 0;
    REQUIRE(kiln_vulkan_pipeline_cache_get_data(device, cache, saved.data(), saved.size(), &written) == NULL);
    CHECK(written == blob_size);
    kiln_vulkan_pipeline_cache_destroy(device, cache);

    // A second pipeline from a cache seeded with the saved blob runs.
    VkPipelineCache restored = VK_NULL_HANDLE;
    REQUIRE(kiln_vulkan_pipeline_cache_create(device, saved.data(), saved.size(), &restored,
                                              &used) == NULL);
    CHECK(used == 1);
    options.cache = restored;
    kiln_vulkan_pipeline_t second = {};
    REQUIRE(kiln_vulkan_pipeline_create(device, &options, &second) == NULL);
    RunAdd(device, &second, -1.0f);
    kiln_vulkan_pipeline_cache_destroy(device, restored);

    // A blob from another device or driver (here: another UUID), or a
    // truncated one, is ignored: the cache starts empty.
    saved[16] ^= 0xFF;
    REQUIRE(kiln_vulkan_pipeline_cache_create(device, saved.data(), saved.size(), &restored,
                                              &used) == NULL);
    CHECK(used == 0);
    kiln_vulkan_pipeline_cache_destroy(device, restored);
    REQUIRE(kiln_vulkan_pipeline_cache_create(device, saved.data(), 20, &restored, &used) ==
            NULL);
    CHECK(used == 0);
    kiln_vulkan_pipeline_cache_destroy(device, restored);
    kiln_vulkan_pipeline_release(device, &second);
    kiln_vulkan_pipeline_release(device, &first);
  }
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

TEST_CASE("vulkan: bad SPIR-V and interfaces are rejected by pipeline creation") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  kiln_vulkan_device_t* device = lavapipe.device;
  auto create = [&](const kiln_vulkan_pipeline_options_t& options, kiln_status_code_t code) {
    kiln_vulkan_pipeline_t pipeline = {};
    kiln_status_t status = kiln_vulkan_pipeline_create(device, &options, &pipeline);
    CHECK(kiln_status_code(status) == code);
    CHECK(pipeline.pipeline == VK_NULL_HANDLE);
    return Message(status);
  };
  kiln_vulkan_pipeline_options_t options = lavapipe.AddOptions();
  std::vector<uint32_t> bad = lavapipe.add_spirv;
  bad[0] = 0xDEADBEEF;
  options.spirv = bad.data();
  CHECK(create(options, KILN_INVALID_BUNDLE) ==
        "vulkan: pipeline: spirv: magic number 0xdeadbeef, expected 0x07230203");
  options = lavapipe.AddOptions();
  options.spirv_size -= 1;
  CHECK(create(options, KILN_INVALID_BUNDLE).find("is not a multiple of 4") != std::string::npos);
  options = lavapipe.AddOptions();
  options.workgroup_size[0] = 128;
  CHECK(create(options, KILN_INVALID_BUNDLE).find("(64, 1, 1) is not the stated (128, 1, 1)") !=
        std::string::npos);
  options = lavapipe.AddOptions();
  options.push_constant_size = 6;
  CHECK(create(options, KILN_UNSUPPORTED).find("6 bytes of push constants") != std::string::npos);
  options.push_constant_size = device->limits->maxPushConstantsSize + 4;
  create(options, KILN_UNSUPPORTED);
  options = lavapipe.AddOptions();
  options.binding_count = 0xFFFFFFFFu;
  CHECK(create(options, KILN_UNSUPPORTED).find("storage buffers, the device allows") !=
        std::string::npos);
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}

TEST_CASE("vulkan: dispatch bindings, counts and transfers are checked") {
  Lavapipe lavapipe;
  OPEN_OR_SKIP(lavapipe);
  kiln_vulkan_device_t* device = lavapipe.device;
  {
    Buffers buffers(device);
    kiln_vulkan_pipeline_t add = {};
    kiln_vulkan_pipeline_options_t add_options = lavapipe.AddOptions();
    REQUIRE(kiln_vulkan_pipeline_create(device, &add_options, &add) == NULL);
    std::array<kiln_vulkan_binding_t, 3> bindings = AddBindings(&buffers.arena);
    const uint32_t push[2] = {kVectorN, 0};
    kiln_vulkan_dispatch_t good = {&add, bindings.data(), 3, push, 2, {16, 1, 1}};
    auto record = [&](const kiln_vulkan_dispatch_t& dispatch) {
      kiln_vulkan_command_list_t* list = nullptr;
      kiln_vulkan_dispatch_t both[2] = {good, dispatch};
      kiln_status_t status = kiln_vulkan_command_list_create(device, both, 2, NULL, &list);
      CHECK(list == nullptr);
      CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
      return Message(status);
    };
    kiln_vulkan_dispatch_t dispatch = good;
    kiln_vulkan_binding_t moved[3] = {bindings[0], bindings[1], bindings[2]};
    dispatch.bindings = moved;
    moved[2].offset = 5 * kStride + 256;  // 4000 bytes from there pass the end
    CHECK(record(dispatch) ==
          "vulkan: recording 2 dispatches: vulkan: dispatch 1: binding 2: range [20736, +4000) "
          "is empty, exceeds the buffer's 24576 bytes or the device's " +
              std::to_string(device->limits->maxStorageBufferRange));
    moved[2].offset = UINT64_MAX - 255;  // offset + range overflows
    CHECK(record(dispatch).find("binding 2: range [18446744073709551360, +4000)") !=
          std::string::npos);
    moved[2].offset = 0;
    moved[2].range = 0;
    CHECK(record(dispatch).find("binding 2: range [0, +0) is empty") != std::string::npos);
    if (device->limits->minStorageBufferOffsetAlignment > 1) {
      moved[2].range = 4;
      moved[2].offset = 2;
      CHECK(record(dispatch).find("offset 2 is not a multiple of") != std::string::npos);
    }
    moved[2] = bindings[2];
    moved[2].buffer = &buffers.staging;
    CHECK(record(dispatch).find("binding 2: not a device buffer") != std::string::npos);
    dispatch = good;
    dispatch.workgroup_count[1] = 0;
    CHECK(record(dispatch).find("workgroup count 0 in dimension 1") != std::string::npos);
    dispatch.workgroup_count[1] = device->limits->maxComputeWorkGroupCount[1] + 1;
    CHECK(record(dispatch).find("the device allows 1 to") != std::string::npos);
    dispatch = good;
    dispatch.binding_count = 2;
    CHECK(record(dispatch).find("dispatch 1: 2 bindings, the pipeline has 3") != std::string::npos);
    dispatch = good;
    dispatch.push_constant_count = 1;
    CHECK(record(dispatch).find("1 push-constant words, the pipeline takes 8 bytes") !=
          std::string::npos);

    // Transfers: ranges inside the buffer, chunked through a small staging buffer.
    std::vector<float> values(kVectorN, 1.0f);
    kiln_status_t status = kiln_vulkan_buffer_upload(device, &buffers.staging, &buffers.arena,
                                                     6 * kStride - 8, values.data(), 16);
    CHECK(Message(status) ==
          "vulkan: upload: range [24568, +16) exceeds the buffer's 24576 bytes");
    status =
        kiln_vulkan_buffer_download(device, NULL, &buffers.arena, UINT64_MAX, values.data(), 2);
    CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
    kiln_status_free(status);
    status =
        kiln_vulkan_buffer_upload(device, &buffers.arena, &buffers.arena, 0, values.data(), 16);
    CHECK(Message(status) == "vulkan: upload: not a staging buffer");
    std::vector<float> pattern = Iota(-7.0f, 0.125f);
    buffers.Upload(5, pattern);  // 4000 bytes through a 1536-byte staging buffer
    std::vector<float> back(kVectorN);
    status = kiln_vulkan_buffer_download(device, NULL, &buffers.arena, 5 * kStride, back.data(),
                                         kVectorBytes);  // a temporary staging buffer
    REQUIRE_MESSAGE(status == NULL, Message(status));
    CHECK(back == pattern);
    kiln_vulkan_buffer_t empty = {};
    status = kiln_vulkan_buffer_create(device, KILN_VULKAN_BUFFER_DEVICE, 0, &empty);
    CHECK(Message(status) == "vulkan: cannot make a device buffer of 0 bytes");
    kiln_vulkan_pipeline_release(device, &add);
  }
  CHECK_NO_VALIDATION_MESSAGES(lavapipe);
}
