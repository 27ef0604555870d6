// SPIR-V checks, compute pipelines and the pipeline cache; see vulkan_pipeline.h.
#include "vulkan/vulkan_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/checked_math.h"

// The few SPIR-V enumerants the checks need (from the SPIR-V specification).
enum {
  kSpirvHeaderWords = 5,            // magic, version, generator, bound, schema
  kSpirvOpEntryPoint = 15,          // model, function id, name, interface ids
  kSpirvOpExecutionMode = 16,       // entry point id, mode, literals
  kSpirvOpConstant = 43,            // type, id, value
  kSpirvOpConstantComposite = 44,   // type, id, constituent ids
  kSpirvOpSpecConstant = 50,        // type, id, default value (used: nothing is specialized)
  kSpirvOpSpecConstantComposite = 51,  // type, id, constituent ids
  kSpirvOpDecorate = 71,            // target id, decoration, literals
  kSpirvModelGLCompute = 5,         // ExecutionModel of compute shaders
  kSpirvModeLocalSize = 17,         // ExecutionMode with x, y, z literals
  kSpirvDecorationBuiltIn = 11,     // Decoration with a BuiltIn literal
  kSpirvBuiltInWorkgroupSize = 25,  // BuiltIn that overrides LocalSize
};

// What the first walk over a module found.
typedef struct kiln_spirv_scan_t {
  bool has_entry;                 // the GLCompute entry point was found
  uint32_t entry_id;              // its function id
  bool has_local_size;            // OpExecutionMode LocalSize of the entry point was found
  uint32_t local_size[3];         // its literals
  bool has_builtin_size;          // some id is decorated BuiltIn WorkgroupSize
  uint32_t builtin_size_id;       // that id (a constant composite)
  bool has_builtin_parts;         // the composite was found
  uint32_t builtin_part_ids[3];   // its x, y, z constants
} kiln_spirv_scan_t;

// Does the string literal in `words` (`count` words) equal `name`?
static bool kiln_spirv_literal_equals(const uint32_t* words, uint32_t count, const char* name) {
  const char* text = (const char*)words;
  size_t bytes = (size_t)count * 4;
  return memchr(text, '\0', bytes) != NULL && strcmp(text, name) == 0;
}

// Notes what one instruction tells about the entry point and its size.
static void kiln_spirv_scan_instruction(uint32_t opcode, const uint32_t* operands,
                                        uint32_t operand_count, const char* entry_point,
                                        kiln_spirv_scan_t* scan) {
  if (opcode == kSpirvOpEntryPoint && operand_count >= 3 && !scan->has_entry &&
      operands[0] == kSpirvModelGLCompute &&
      kiln_spirv_literal_equals(operands + 2, operand_count - 2, entry_point)) {
    scan->has_entry = true;
    scan->entry_id = operands[1];
  } else if (opcode == kSpirvOpExecutionMode && operand_count >= 5 && scan->has_entry &&
             operands[0] == scan->entry_id && operands[1] == kSpirvModeLocalSize) {
    memcpy(scan->local_size, operands + 2, sizeof(scan->local_size));
    scan->has_local_size = true;
  } else if (opcode == kSpirvOpDecorate && operand_count >= 3 &&
             operands[1] == kSpirvDecorationBuiltIn &&
             operands[2] == kSpirvBuiltInWorkgroupSize) {
    scan->has_builtin_size = true;
    scan->builtin_size_id = operands[0];
  } else if ((opcode == kSpirvOpConstantComposite || opcode == kSpirvOpSpecConstantComposite) &&
             operand_count == 5 && scan->has_builtin_size &&
             operands[1] == scan->builtin_size_id) {
    memcpy(scan->builtin_part_ids, operands + 2, sizeof(scan->builtin_part_ids));
    scan->has_builtin_parts = true;
  }
}

// Resolves the WorkgroupSize built-in's three constants into `size`.
static kiln_status_t kiln_spirv_builtin_size(const uint32_t* words, uint32_t count,
                                             const kiln_spirv_scan_t* scan, uint32_t size[3]) {
  uint32_t resolved = 0;  // bit d: size[d] found
  for (uint32_t at = kSpirvHeaderWords; scan->has_builtin_parts && at < count;) {
    const uint32_t length = words[at] >> 16, opcode = words[at] & 0xFFFFu;  // framing checked
    if ((opcode == kSpirvOpConstant || opcode == kSpirvOpSpecConstant) && length == 4) {
      for (int d = 0; d < 3; ++d) {
        if (words[at + 2] == scan->builtin_part_ids[d]) {
          size[d] = words[at + 3];
          resolved |= 1u << d;
        }
      }
    }
    at += length;
  }
  if (resolved != 7) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: the WorkgroupSize built-in is not a composite of three "
                            "32-bit constants");
  }
  return NULL;
}

kiln_status_t kiln_vulkan_spirv_inspect(const void* code, size_t size,
                                        const char* entry_point,
                                        kiln_vulkan_spirv_info_t* out_info) {
  memset(out_info, 0, sizeof(*out_info));
  if (!entry_point) entry_point = "main";
  if (!code || ((uintptr_t)code % 4) != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: code is NULL or not 4-byte aligned");
  }
  if (size % 4 != 0 || size < kSpirvHeaderWords * 4 || size / 4 > UINT32_MAX) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: size %zu bytes is not a multiple of 4 of at least %d",
                            size, kSpirvHeaderWords * 4);
  }
  const uint32_t* words = (const uint32_t*)code;
  const uint32_t count = (uint32_t)(size / 4);
  if (words[0] != KILN_SPIRV_MAGIC) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: magic number 0x%08x, expected 0x%08x%s",
                            words[0], KILN_SPIRV_MAGIC,
                            words[0] == __builtin_bswap32(KILN_SPIRV_MAGIC)
                                ? " (the module is in the other byte order)"
                                : "");
  }
  kiln_spirv_scan_t scan;
  memset(&scan, 0, sizeof(scan));
  for (uint32_t at = kSpirvHeaderWords; at < count;) {
    const uint32_t length = words[at] >> 16, opcode = words[at] & 0xFFFFu;
    if (length == 0 || length > count - at) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "spirv: instruction at word %u (opcode %u) has word count %u, "
                              "%u words are left",
                              at, opcode, length, count - at);
    }
    kiln_spirv_scan_instruction(opcode, words + at + 1, length - 1, entry_point, &scan);
    at += length;
  }
  if (!scan.has_entry) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: no GLCompute entry point '%.64s'",
                            entry_point);
  }
  if (scan.has_builtin_size) {
    // The built-in, when present, is the workgroup size (glslang emits it).
    KILN_RETURN_IF_ERROR(kiln_spirv_builtin_size(words, count, &scan, out_info->workgroup_size));
  } else if (scan.has_local_size) {
    memcpy(out_info->workgroup_size, scan.local_size, sizeof(scan.local_size));
  } else {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: entry point '%.64s' has no OpExecutionMode LocalSize",
                            entry_point);
  }
  out_info->word_count = count;
  return NULL;
}

// Checks the interface and the workgroup size against the device's limits
// and the options.
static kiln_status_t kiln_vulkan_pipeline_check(const kiln_vulkan_device_t* device,
                                                const kiln_vulkan_pipeline_options_t* options,
                                                const uint32_t size[3]) {
  const VkPhysicalDeviceLimits* limits = device->limits;
  uint32_t max_bindings = limits->maxPerStageDescriptorStorageBuffers;
  if (limits->maxDescriptorSetStorageBuffers < max_bindings) {
    max_bindings = limits->maxDescriptorSetStorageBuffers;
  }
  if (options->binding_count > max_bindings) {
    return kiln_make_status(KILN_UNSUPPORTED, "%u storage buffers, the device allows %u",
                            options->binding_count, max_bindings);
  }
  if (options->push_constant_size % 4 != 0 ||
      options->push_constant_size > limits->maxPushConstantsSize) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "%u bytes of push constants (a multiple of 4, at most %u)",
                            options->push_constant_size, limits->maxPushConstantsSize);
  }
  const uint32_t* expected = options->workgroup_size;
  const bool check_expected = expected[0] || expected[1] || expected[2];
  uint64_t invocations = 1;
  for (int d = 0; d < 3; ++d) {
    if (check_expected && expected[d] != size[d]) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "the shader's workgroup size (%u, %u, %u) is not the stated "
                              "(%u, %u, %u)",
                              size[0], size[1], size[2], expected[0], expected[1], expected[2]);
    }
    if (size[d] == 0 || size[d] > limits->maxComputeWorkGroupSize[d]) {
      return kiln_make_status(KILN_UNSUPPORTED,
                              "workgroup size %u in dimension %d, the device allows 1 to %u",
                              size[d], d, limits->maxComputeWorkGroupSize[d]);
    }
    invocations *= size[d];  // both factors < 2^32: no overflow
    if (invocations > limits->maxComputeWorkGroupInvocations) {
      return kiln_make_status(KILN_UNSUPPORTED,
                              "workgroup size (%u, %u, %u) exceeds the device's %u invocations",
                              size[0], size[1], size[2], limits->maxComputeWorkGroupInvocations);
    }
  }
  return NULL;
}

// Creates the set layout, the pipeline layout and the pipeline.
static kiln_status_t kiln_vulkan_pipeline_init(kiln_vulkan_device_t* device,
                                               const kiln_vulkan_pipeline_options_t* options,
                                               const char* entry_point,
                                               kiln_vulkan_pipeline_t* pipeline) {
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  VkDescriptorSetLayoutBinding* bindings = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(options->binding_count, &bindings));
  for (uint32_t i = 0; i < options->binding_count; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info;
  memset(&set_info, 0, sizeof(set_info));
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = options->binding_count;
  set_info.pBindings = bindings;
  VkResult result =
      fn->vkCreateDescriptorSetLayout(device->device, &set_info, NULL, &pipeline->set_layout);
  free(bindings);
  KILN_VULKAN_RETURN_IF_FAILED("vkCreateDescriptorSetLayout", result);

  VkPushConstantRange push_range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, options->push_constant_size};
  VkPipelineLayoutCreateInfo layout_info;
  memset(&layout_info, 0, sizeof(layout_info));
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &pipeline->set_layout;
  layout_info.pushConstantRangeCount = options->push_constant_size ? 1 : 0;
  layout_info.pPushConstantRanges = &push_range;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreatePipelineLayout",
      fn->vkCreatePipelineLayout(device->device, &layout_info, NULL, &pipeline->layout));

  VkShaderModuleCreateInfo module_info;
  memset(&module_info, 0, sizeof(module_info));
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = options->spirv_size;
  module_info.pCode = (const uint32_t*)options->spirv;
  VkShaderModule module = VK_NULL_HANDLE;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreateShaderModule",
      fn->vkCreateShaderModule(device->device, &module_info, NULL, &module));
  VkComputePipelineCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = entry_point;
  info.layout = pipeline->layout;
  result = fn->vkCreateComputePipelines(device->device, options->cache, 1, &info, NULL,
                                        &pipeline->pipeline);
  fn->vkDestroyShaderModule(device->device, module, NULL);
  return kiln_vulkan_result_status(result, "vkCreateComputePipelines");
}

kiln_status_t kiln_vulkan_pipeline_create(kiln_vulkan_device_t* device,
                                          const kiln_vulkan_pipeline_options_t* options,
                                          kiln_vulkan_pipeline_t* out_pipeline) {
  memset(out_pipeline, 0, sizeof(*out_pipeline));
  if (!device || !options) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: pipeline: NULL device or options");
  }
  const char* entry_point = options->entry_point ? options->entry_point : "main";
  kiln_vulkan_spirv_info_t info;
  kiln_status_t status =
      kiln_vulkan_spirv_inspect(options->spirv, options->spirv_size, entry_point, &info);
  if (!status) status = kiln_vulkan_pipeline_check(device, options, info.workgroup_size);
  if (!status) {
    out_pipeline->binding_count = options->binding_count;
    out_pipeline->push_constant_size = options->push_constant_size;
    memcpy(out_pipeline->workgroup_size, info.workgroup_size, sizeof(info.workgroup_size));
    status = kiln_vulkan_pipeline_init(device, options, entry_point, out_pipeline);
  }
  if (status) {
    kiln_vulkan_pipeline_release(device, out_pipeline);
    return kiln_status_annotate(status, "vulkan: pipeline");
  }
  return NULL;
}

void kiln_vulkan_pipeline_release(kiln_vulkan_device_t* device,
                                  kiln_vulkan_pipeline_t* pipeline) {
  if (!pipeline) return;
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  if (pipeline->pipeline) fn->vkDestroyPipeline(device->device, pipeline->pipeline, NULL);
  if (pipeline->layout) fn->vkDestroyPipelineLayout(device->device, pipeline->layout, NULL);
  if (pipeline->set_layout) {
    fn->vkDestroyDescriptorSetLayout(device->device, pipeline->set_layout, NULL);
  }
  memset(pipeline, 0, sizeof(*pipeline));
}

// Reads a little-endian u32 (the pipeline cache header's byte order).
static uint32_t kiln_vulkan_read_le32(const uint8_t* bytes) {
  return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
         (uint32_t)bytes[3] << 24;
}

// Is `data` a cache made by this device and driver (VkPipelineCacheHeaderVersionOne)?
static bool kiln_vulkan_cache_matches(const kiln_vulkan_device_t* device, const uint8_t* data,
                                      size_t size) {
  const size_t header_size = 16 + VK_UUID_SIZE;
  if (!data || size < header_size) return false;
  const VkPhysicalDeviceProperties* properties = &device->physical->properties;
  uint32_t stated_size = kiln_vulkan_read_le32(data);
  return stated_size >= header_size && stated_size <= size &&
         kiln_vulkan_read_le32(data + 4) == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         kiln_vulkan_read_le32(data + 8) == properties->vendorID &&
         kiln_vulkan_read_le32(data + 12) == properties->deviceID &&
         memcmp(data + 16, properties->pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

kiln_status_t kiln_vulkan_pipeline_cache_create(kiln_vulkan_device_t* device, const void* data,
                                                size_t size, VkPipelineCache* out_cache,
                                                int* out_data_used) {
  const bool use = kiln_vulkan_cache_matches(device, (const uint8_t*)data, size);
  VkPipelineCacheCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  info.initialDataSize = use ? size : 0;
  info.pInitialData = use ? data : NULL;
  *out_cache = VK_NULL_HANDLE;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreatePipelineCache",
      device->fn.vkCreatePipelineCache(device->device, &info, NULL, out_cache));
  if (out_data_used) *out_data_used = use;
  return NULL;
}

kiln_status_t kiln_vulkan_pipeline_cache_serialize(kiln_vulkan_device_t* device,
                                                   VkPipelineCache cache, void** out_data,
                                                   size_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  size_t size = 0;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkGetPipelineCacheData",
      device->fn.vkGetPipelineCacheData(device->device, cache, &size, NULL));
  void* data = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc(size, 1, &data));
  kiln_status_t status = kiln_vulkan_result_status(
      device->fn.vkGetPipelineCacheData(device->device, cache, &size, data),
      "vkGetPipelineCacheData");
  if (status) {
    free(data);
    return status;
  }
  *out_data = data;
  *out_size = size;
  return NULL;
}

void kiln_vulkan_pipeline_cache_destroy(kiln_vulkan_device_t* device, VkPipelineCache cache) {
  if (cache != VK_NULL_HANDLE) device->fn.vkDestroyPipelineCache(device->device, cache, NULL);
}
