// Compute pipelines and the pipeline cache; see vulkan_pipeline.h.
#include "vulkan/vulkan_pipeline.h"

#include "bundle/spirv_inspect.h"

#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/checked_math.h"


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
  kiln_spirv_info_t info;
  kiln_status_t status = kiln_spirv_inspect(options->spirv, options->spirv_size, entry_point, &info);
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
  if (!pipeline || device->wedged) return;  // a wedged device may still use it: leaked
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

kiln_status_t kiln_vulkan_pipeline_cache_get_data(kiln_vulkan_device_t* device,
                                                  VkPipelineCache cache, void* data,
                                                  size_t capacity, size_t* out_size) {
  size_t size = data ? capacity : 0;  // NULL data: Vulkan reports the bytes needed
  VkResult result = device->fn.vkGetPipelineCacheData(device->device, cache, &size, data);
  if (result == VK_INCOMPLETE) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "pipeline_cache: a buffer of %zu bytes is too small (ask for the "
                            "size with NULL data first)",
                            capacity);
  }
  KILN_RETURN_IF_ERROR(kiln_vulkan_result_status(result, "vkGetPipelineCacheData"));
  *out_size = size;
  return NULL;
}

void kiln_vulkan_pipeline_cache_destroy(kiln_vulkan_device_t* device, VkPipelineCache cache) {
  if (cache != VK_NULL_HANDLE && !device->wedged) device->fn.vkDestroyPipelineCache(device->device, cache, NULL);
}
