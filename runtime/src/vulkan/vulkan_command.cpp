// Recorded command lists; see vulkan_command.h.
#include "vulkan/vulkan_command.h"

#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/checked_math.h"

// Checks one binding of dispatch `index` against its buffer and the limits.
static kiln_status_t kiln_vulkan_check_binding(const kiln_vulkan_device_t* device,
                                               uint32_t index, uint32_t slot,
                                               const kiln_vulkan_binding_t* binding) {
  const VkPhysicalDeviceLimits* limits = device->limits;
  const kiln_vulkan_buffer_t* buffer = binding->buffer;
  if (!buffer || buffer->buffer == VK_NULL_HANDLE || buffer->kind != KILN_VULKAN_BUFFER_DEVICE) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: dispatch %u: binding %u: not a device buffer", index, slot);
  }
  if (binding->range == 0 || binding->range > limits->maxStorageBufferRange ||
      !kiln_range_within(binding->offset, binding->range, buffer->size)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: dispatch %u: binding %u: range [%llu, +%llu) is empty, "
                            "exceeds the buffer's %llu bytes or the device's %u",
                            index, slot, (unsigned long long)binding->offset,
                            (unsigned long long)binding->range,
                            (unsigned long long)buffer->size, limits->maxStorageBufferRange);
  }
  if (!kiln_is_aligned(binding->offset, limits->minStorageBufferOffsetAlignment)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: dispatch %u: binding %u: offset %llu is not a multiple of "
                            "%llu",
                            index, slot, (unsigned long long)binding->offset,
                            (unsigned long long)limits->minStorageBufferOffsetAlignment);
  }
  return NULL;
}

// Checks dispatch `index` against its pipeline and the limits.
static kiln_status_t kiln_vulkan_check_dispatch(const kiln_vulkan_device_t* device,
                                                uint32_t index,
                                                const kiln_vulkan_dispatch_t* dispatch) {
  const kiln_vulkan_pipeline_t* pipeline = dispatch->pipeline;
  if (!pipeline || pipeline->pipeline == VK_NULL_HANDLE) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: dispatch %u: no pipeline", index);
  }
  if (dispatch->binding_count != pipeline->binding_count ||
      (dispatch->binding_count && !dispatch->bindings)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: dispatch %u: %u bindings, the pipeline has %u", index,
                            dispatch->binding_count, pipeline->binding_count);
  }
  if ((uint64_t)dispatch->push_constant_count * 4 != pipeline->push_constant_size ||
      (dispatch->push_constant_count && !dispatch->push_constants)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: dispatch %u: %u push-constant words, the pipeline takes "
                            "%u bytes",
                            index, dispatch->push_constant_count, pipeline->push_constant_size);
  }
  for (uint32_t d = 0; d < 3; ++d) {
    const uint32_t count = dispatch->workgroup_count[d];
    if (count == 0 || count > device->limits->maxComputeWorkGroupCount[d]) {
      return kiln_make_status(KILN_INVALID_ARGUMENT,
                              "vulkan: dispatch %u: workgroup count %u in dimension %u, the "
                              "device allows 1 to %u",
                              index, count, d, device->limits->maxComputeWorkGroupCount[d]);
    }
  }
  for (uint32_t b = 0; b < dispatch->binding_count; ++b) {
    KILN_RETURN_IF_ERROR(kiln_vulkan_check_binding(device, index, b, &dispatch->bindings[b]));
  }
  return NULL;
}

// A buffer range used by a dispatch recorded since the last barrier.
typedef struct kiln_vulkan_access_t {
  VkBuffer buffer;  // the buffer
  uint64_t begin;   // first byte
  uint64_t end;     // one past the last byte (no overflow: checked against the size)
  int writable;     // written by that dispatch
} kiln_vulkan_access_t;

// Scratch space for recording, sized by the dispatches' total binding count.
typedef struct kiln_vulkan_record_scratch_t {
  VkDescriptorSetLayout* layouts;  // one per set, for vkAllocateDescriptorSets
  VkDescriptorSet* sets;           // one per dispatch with bindings, in order
  VkDescriptorBufferInfo* infos;   // every binding of every dispatch, in order
  VkWriteDescriptorSet* writes;    // one per set
  kiln_vulkan_access_t* accesses;  // the ranges used since the last barrier
  uint32_t set_count;              // dispatches with bindings
  uint32_t binding_total;          // bindings of all dispatches
} kiln_vulkan_record_scratch_t;

static void kiln_vulkan_scratch_free(kiln_vulkan_record_scratch_t* scratch) {
  free(scratch->layouts);
  free(scratch->sets);
  free(scratch->infos);
  free(scratch->writes);
  free(scratch->accesses);
}

// Does dispatch `dispatch` conflict with a range used since the last barrier?
static bool kiln_vulkan_depends(const kiln_vulkan_access_t* accesses, uint32_t access_count,
                                const kiln_vulkan_dispatch_t* dispatch) {
  for (uint32_t b = 0; b < dispatch->binding_count; ++b) {
    const kiln_vulkan_binding_t* binding = &dispatch->bindings[b];
    const uint64_t end = binding->offset + binding->range;
    for (uint32_t a = 0; a < access_count; ++a) {
      const kiln_vulkan_access_t* access = &accesses[a];
      if (access->buffer == binding->buffer->buffer && access->begin < end &&
          binding->offset < access->end && (access->writable || binding->writable)) {
        return true;
      }
    }
  }
  return false;
}

// Allocates the descriptor pool and sets, and writes every binding.
static kiln_status_t kiln_vulkan_write_sets(kiln_vulkan_command_list_t* list,
                                            const kiln_vulkan_dispatch_t* dispatches,
                                            uint32_t count,
                                            kiln_vulkan_record_scratch_t* scratch) {
  kiln_vulkan_device_t* device = list->device;
  if (scratch->set_count == 0) return NULL;
  VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, scratch->binding_total};
  VkDescriptorPoolCreateInfo pool_info;
  memset(&pool_info, 0, sizeof(pool_info));
  pool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pool_info.maxSets = scratch->set_count;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreateDescriptorPool",
      device->fn.vkCreateDescriptorPool(device->device, &pool_info, NULL,
                                        &list->descriptor_pool));
  uint32_t set = 0, info = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const kiln_vulkan_dispatch_t* dispatch = &dispatches[i];
    if (dispatch->binding_count == 0) continue;
    scratch->layouts[set] = dispatch->pipeline->set_layout;
    VkWriteDescriptorSet* write = &scratch->writes[set++];
    write->sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    write->dstBinding = 0;  // consecutive bindings 0..binding_count-1
    write->descriptorCount = dispatch->binding_count;
    write->descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write->pBufferInfo = &scratch->infos[info];
    for (uint32_t b = 0; b < dispatch->binding_count; ++b, ++info) {
      scratch->infos[info].buffer = dispatch->bindings[b].buffer->buffer;
      scratch->infos[info].offset = dispatch->bindings[b].offset;
      scratch->infos[info].range = dispatch->bindings[b].range;
    }
  }
  VkDescriptorSetAllocateInfo allocate;
  memset(&allocate, 0, sizeof(allocate));
  allocate.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  allocate.descriptorPool = list->descriptor_pool;
  allocate.descriptorSetCount = scratch->set_count;
  allocate.pSetLayouts = scratch->layouts;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkAllocateDescriptorSets",
      device->fn.vkAllocateDescriptorSets(device->device, &allocate, scratch->sets));
  for (uint32_t s = 0; s < scratch->set_count; ++s) scratch->writes[s].dstSet = scratch->sets[s];
  device->fn.vkUpdateDescriptorSets(device->device, scratch->set_count, scratch->writes, 0, NULL);
  return NULL;
}

// Records the dispatches, the barriers between dependent ones and the final
// barrier.
static void kiln_vulkan_record(kiln_vulkan_command_list_t* list,
                               const kiln_vulkan_dispatch_t* dispatches, uint32_t count,
                               const kiln_vulkan_command_list_options_t* options,
                               kiln_vulkan_record_scratch_t* scratch) {
  const kiln_vulkan_device_t* device = list->device;
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  VkCommandBuffer command_buffer = list->command_buffer;
  VkPipeline bound = VK_NULL_HANDLE;
  uint32_t access_count = 0, set = 0;
  if (list->timestamps) {
    fn->vkCmdResetQueryPool(command_buffer, list->timestamps, 0, count + 1);
    fn->vkCmdWriteTimestamp(command_buffer, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, list->timestamps, 0);
  }
  for (uint32_t i = 0; i < count; ++i) {
    const kiln_vulkan_dispatch_t* dispatch = &dispatches[i];
    const kiln_vulkan_pipeline_t* pipeline = dispatch->pipeline;
    if (kiln_vulkan_depends(scratch->accesses, access_count, dispatch)) {
      access_count = 0;
      if (!options->debug_no_barriers) {
        kiln_vulkan_cmd_barrier(device, command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        ++list->barrier_count;
      }
    }
    for (uint32_t b = 0; b < dispatch->binding_count; ++b) {
      const kiln_vulkan_binding_t* binding = &dispatch->bindings[b];
      kiln_vulkan_access_t* access = &scratch->accesses[access_count++];
      access->buffer = binding->buffer->buffer;
      access->begin = binding->offset;
      access->end = binding->offset + binding->range;
      access->writable = binding->writable;
    }
    if (pipeline->pipeline != bound) {
      fn->vkCmdBindPipeline(command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
      bound = pipeline->pipeline;
    }
    if (dispatch->binding_count) {
      fn->vkCmdBindDescriptorSets(command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  pipeline->layout, 0, 1, &scratch->sets[set++], 0, NULL);
    }
    if (pipeline->push_constant_size) {
      fn->vkCmdPushConstants(command_buffer, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             pipeline->push_constant_size, dispatch->push_constants);
    }
    fn->vkCmdDispatch(command_buffer, dispatch->workgroup_count[0],
                      dispatch->workgroup_count[1], dispatch->workgroup_count[2]);
    if (list->timestamps) {
      fn->vkCmdWriteTimestamp(command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, list->timestamps, i + 1);
    }
  }
  kiln_vulkan_cmd_barrier(device, command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                          VK_ACCESS_SHADER_WRITE_BIT, KILN_VULKAN_LATER_STAGES,
                          KILN_VULKAN_LATER_ACCESS);
}

// Creates the list's Vulkan objects and records it.
static kiln_status_t kiln_vulkan_command_list_init(
    kiln_vulkan_command_list_t* list, const kiln_vulkan_dispatch_t* dispatches, uint32_t count,
    const kiln_vulkan_command_list_options_t* options, kiln_vulkan_record_scratch_t* scratch) {
  kiln_vulkan_device_t* device = list->device;
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  uint64_t binding_total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_vulkan_check_dispatch(device, i, &dispatches[i]));
    binding_total += dispatches[i].binding_count;  // < 2^32 * 2^32: no overflow
    scratch->set_count += dispatches[i].binding_count ? 1 : 0;
  }
  if (binding_total > UINT32_MAX) {
    return kiln_make_status(KILN_UNSUPPORTED, "vulkan: %llu bindings in all (at most %u)",
                            (unsigned long long)binding_total, UINT32_MAX);
  }
  scratch->binding_total = (uint32_t)binding_total;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(scratch->set_count, &scratch->layouts));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(scratch->set_count, &scratch->sets));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(scratch->set_count, &scratch->writes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(scratch->binding_total, &scratch->infos));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(scratch->binding_total, &scratch->accesses));
  KILN_RETURN_IF_ERROR(kiln_vulkan_write_sets(list, dispatches, count, scratch));

  KILN_RETURN_IF_ERROR(kiln_vulkan_device_create_fence(device, &list->fence));
  if (options->timestamps) {
    if (device->physical->timestamp_valid_bits == 0) {
      return kiln_make_status(KILN_UNSUPPORTED, "vulkan: the device's compute queue has no timestamps");
    }
    VkQueryPoolCreateInfo info;
    memset(&info, 0, sizeof(info));
    info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = count + 1;
    KILN_RETURN_IF_ERROR(kiln_calloc_array(info.queryCount, &list->ticks));
    KILN_VULKAN_RETURN_IF_FAILED("vkCreateQueryPool",
                                 fn->vkCreateQueryPool(device->device, &info, NULL, &list->timestamps));
  }
  // Reusable (no ONE_TIME_SUBMIT), one submission at a time.
  KILN_RETURN_IF_ERROR(kiln_vulkan_device_begin_commands(device, 0, &list->command_buffer));
  kiln_vulkan_record(list, dispatches, count, options, scratch);
  return kiln_vulkan_result_status(fn->vkEndCommandBuffer(list->command_buffer),
                                   "vkEndCommandBuffer");
}

kiln_status_t kiln_vulkan_command_list_create(kiln_vulkan_device_t* device,
                                              const kiln_vulkan_dispatch_t* dispatches,
                                              uint32_t count,
                                              const kiln_vulkan_command_list_options_t* options,
                                              kiln_vulkan_command_list_t** out_list) {
  kiln_vulkan_command_list_options_t defaults;
  memset(&defaults, 0, sizeof(defaults));
  if (!options) options = &defaults;
  if (!device || !out_list || (count && !dispatches)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: command list: NULL device, dispatches or out_list");
  }
  kiln_vulkan_command_list_t* list = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &list));
  list->device = device;
  list->dispatch_count = count;
  kiln_vulkan_record_scratch_t scratch;
  memset(&scratch, 0, sizeof(scratch));
  kiln_status_t status = kiln_vulkan_command_list_init(list, dispatches, count, options, &scratch);
  kiln_vulkan_scratch_free(&scratch);
  if (status) {
    kiln_vulkan_command_list_free(list);
    return kiln_status_annotate(status, "vulkan: recording %u dispatches", count);
  }
  *out_list = list;
  return NULL;
}

void kiln_vulkan_command_list_free(kiln_vulkan_command_list_t* list) {
  if (!list) return;
  kiln_vulkan_device_t* device = list->device;
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  free(list->ticks);  // host memory: never in the device's use
  if (list->pending) {
    kiln_status_t status = kiln_vulkan_device_wait(device, list->fence, device->transfer_timeout_ns);
    if (status) {
      kiln_status_free(status);
      kiln_vulkan_device_mark_wedged(device);
      free(list);
      return;
    }
  }
  if (list->command_buffer != VK_NULL_HANDLE) {
    fn->vkFreeCommandBuffers(device->device, device->command_pool, 1, &list->command_buffer);
  }
  if (list->fence != VK_NULL_HANDLE) fn->vkDestroyFence(device->device, list->fence, NULL);
  if (list->timestamps != VK_NULL_HANDLE) fn->vkDestroyQueryPool(device->device, list->timestamps, NULL);
  if (list->descriptor_pool != VK_NULL_HANDLE) {
    fn->vkDestroyDescriptorPool(device->device, list->descriptor_pool, NULL);
  }
  free(list);
}

kiln_status_t kiln_vulkan_command_list_submit(kiln_vulkan_command_list_t* list) {
  if (!list) return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: NULL command list");
  if (list->pending) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: the command list's previous submission was not waited for");
  }
  KILN_RETURN_IF_ERROR(
      kiln_vulkan_device_submit(list->device, list->command_buffer, list->fence));
  list->pending = 1;
  return NULL;
}

kiln_status_t kiln_vulkan_command_list_wait(kiln_vulkan_command_list_t* list,
                                            uint64_t timeout_ns) {
  if (!list) return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: NULL command list");
  if (!list->pending) return NULL;
  KILN_RETURN_IF_ERROR(kiln_vulkan_device_wait(list->device, list->fence, timeout_ns));
  list->pending = 0;
  return NULL;
}

kiln_status_t kiln_vulkan_command_list_timestamps(const kiln_vulkan_command_list_t* list,
                                                  uint64_t* out_nanoseconds) {
  if (!list || !list->timestamps || list->pending) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: no timestamps (not profiled, or still running)");
  }
  const kiln_vulkan_device_t* device = list->device;
  uint32_t count = list->dispatch_count + 1;
  uint64_t* ticks = list->ticks;
  VkResult result = device->fn.vkGetQueryPoolResults(device->device, list->timestamps, 0, count,
                                                     count * sizeof(uint64_t), ticks, sizeof(uint64_t),
                                                     VK_QUERY_RESULT_64_BIT);
  if (result != VK_SUCCESS) return kiln_vulkan_result_status(result, "vkGetQueryPoolResults");
  uint32_t bits = device->physical->timestamp_valid_bits;
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  double period = device->limits->timestampPeriod;  // nanoseconds per tick
  for (uint32_t i = 0; i + 1 < count; ++i) {
    uint64_t delta = (ticks[i + 1] - ticks[i]) & mask;  // a counter may wrap
    uint64_t ns = (uint64_t)((double)delta * period);
    out_nanoseconds[i] = ns ? ns : 1;
  }
  return NULL;
}
