// Buffers, memory types and staging transfers; see vulkan_memory.h.
#include "vulkan/vulkan_memory.h"

#include <stdint.h>
#include <string.h>

#include "base/checked_math.h"

kiln_status_t kiln_vulkan_memory_type_select(const VkPhysicalDeviceMemoryProperties* memory,
                                             uint32_t type_bits, VkMemoryPropertyFlags required,
                                             VkMemoryPropertyFlags preferred,
                                             uint32_t* out_type_index) {
  const VkMemoryPropertyFlags wanted[2] = {required | preferred, required};
  for (uint32_t pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < memory->memoryTypeCount && i < VK_MAX_MEMORY_TYPES; ++i) {
      if ((type_bits & (1u << i)) &&
          (memory->memoryTypes[i].propertyFlags & wanted[pass]) == wanted[pass]) {
        *out_type_index = i;
        return NULL;
      }
    }
  }
  return kiln_make_status(KILN_UNSUPPORTED,
                          "vulkan: no memory type with properties 0x%x among types 0x%x",
                          (unsigned)required, (unsigned)type_bits);
}

// Creates the VkBuffer, allocates and binds its memory, maps staging buffers.
static kiln_status_t kiln_vulkan_buffer_init(kiln_vulkan_device_t* device,
                                             kiln_vulkan_buffer_t* buffer) {
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  const int staging = buffer->kind == KILN_VULKAN_BUFFER_STAGING;
  VkBufferCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = buffer->size;
  info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
               (staging ? 0 : VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_VULKAN_RETURN_IF_FAILED("vkCreateBuffer",
                               fn->vkCreateBuffer(device->device, &info, NULL, &buffer->buffer));
  VkMemoryRequirements requirements;
  fn->vkGetBufferMemoryRequirements(device->device, buffer->buffer, &requirements);
  VkMemoryAllocateInfo allocate;
  memset(&allocate, 0, sizeof(allocate));
  allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocate.allocationSize = requirements.size;
  KILN_RETURN_IF_ERROR(kiln_vulkan_memory_type_select(
      &device->memory, requirements.memoryTypeBits,
      staging ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
      staging ? VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0,
      &allocate.memoryTypeIndex));
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkAllocateMemory",
      fn->vkAllocateMemory(device->device, &allocate, NULL, &buffer->memory));
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkBindBufferMemory",
      fn->vkBindBufferMemory(device->device, buffer->buffer, buffer->memory, 0));
  if (!staging) return NULL;
  buffer->coherent = (device->memory.memoryTypes[allocate.memoryTypeIndex].propertyFlags &
                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  void* mapped = NULL;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkMapMemory",
      fn->vkMapMemory(device->device, buffer->memory, 0, VK_WHOLE_SIZE, 0, &mapped));
  buffer->mapped = (uint8_t*)mapped;
  return NULL;
}

kiln_status_t kiln_vulkan_buffer_create(kiln_vulkan_device_t* device,
                                        kiln_vulkan_buffer_kind_t kind, uint64_t size,
                                        kiln_vulkan_buffer_t* out_buffer) {
  memset(out_buffer, 0, sizeof(*out_buffer));
  const char* what = kind == KILN_VULKAN_BUFFER_STAGING ? "staging" : "device";
  if (kind != KILN_VULKAN_BUFFER_DEVICE && kind != KILN_VULKAN_BUFFER_STAGING) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: unknown buffer kind %d", (int)kind);
  }
  if (size == 0 || (kind == KILN_VULKAN_BUFFER_STAGING && size > SIZE_MAX)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: cannot make a %s buffer of %llu bytes",
                            what, (unsigned long long)size);
  }
  out_buffer->size = size;
  out_buffer->kind = kind;
  kiln_status_t status = kiln_vulkan_buffer_init(device, out_buffer);
  if (status) {
    kiln_vulkan_buffer_release(device, out_buffer);
    return kiln_status_annotate(status, "vulkan: creating a %s buffer of %llu bytes", what,
                                (unsigned long long)size);
  }
  return NULL;
}

void kiln_vulkan_buffer_release(kiln_vulkan_device_t* device, kiln_vulkan_buffer_t* buffer) {
  if (!buffer || device->wedged) return;  // a wedged device may still use it: leaked
  // Unmapping is implicit in vkFreeMemory.
  if (buffer->buffer != VK_NULL_HANDLE) {
    device->fn.vkDestroyBuffer(device->device, buffer->buffer, NULL);
  }
  if (buffer->memory != VK_NULL_HANDLE) {
    device->fn.vkFreeMemory(device->device, buffer->memory, NULL);
  }
  memset(buffer, 0, sizeof(*buffer));
}

// Copies `size` bytes from `source` to `target` in a one-shot command buffer
// (ending with the barrier every submission ends with) and waits for it.
// Sets *out_pending when the wait failed (a timeout, a lost device): the
// copy may still be running, so neither buffer may be destroyed before
// kiln_vulkan_device_wait_idle.
static kiln_status_t kiln_vulkan_copy_now(kiln_vulkan_device_t* device, VkBuffer source,
                                          uint64_t source_offset, VkBuffer target,
                                          uint64_t target_offset, uint64_t size,
                                          int* out_pending) {
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(kiln_vulkan_device_begin_commands(
      device, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &command_buffer));
  VkBufferCopy region = {source_offset, target_offset, size};
  fn->vkCmdCopyBuffer(command_buffer, source, target, 1, &region);
  kiln_vulkan_cmd_barrier(device, command_buffer, VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_ACCESS_TRANSFER_WRITE_BIT, KILN_VULKAN_LATER_STAGES,
                          KILN_VULKAN_LATER_ACCESS);
  kiln_status_t status =
      kiln_vulkan_result_status(fn->vkEndCommandBuffer(command_buffer), "vkEndCommandBuffer");
  if (!status) status = kiln_vulkan_device_submit(device, command_buffer, device->transfer_fence);
  if (!status) {
    status = kiln_vulkan_device_wait(device, device->transfer_fence, device->transfer_timeout_ns);
    // Maybe still running: the command buffer is left to the pool, and the
    // device is marked wedged so that freeing it does not wait forever.
    *out_pending = status != NULL;
    if (status) {
      kiln_vulkan_device_mark_wedged(device);
      return status;
    }
  }
  fn->vkFreeCommandBuffers(device->device, device->command_pool, 1, &command_buffer);
  return status;
}

// Flushes (upload) or invalidates (download) a non-coherent staging buffer.
static kiln_status_t kiln_vulkan_staging_sync(kiln_vulkan_device_t* device,
                                              const kiln_vulkan_buffer_t* staging, int upload) {
  if (staging->coherent) return NULL;
  VkMappedMemoryRange range;
  memset(&range, 0, sizeof(range));
  range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
  range.memory = staging->memory;
  range.size = VK_WHOLE_SIZE;
  if (upload) {
    return kiln_vulkan_result_status(
        device->fn.vkFlushMappedMemoryRanges(device->device, 1, &range),
        "vkFlushMappedMemoryRanges");
  }
  return kiln_vulkan_result_status(
      device->fn.vkInvalidateMappedMemoryRanges(device->device, 1, &range),
      "vkInvalidateMappedMemoryRanges");
}

// Moves `size` bytes between `host` and [offset, offset + size) of `buffer`,
// chunk by chunk through `staging`.
static kiln_status_t kiln_vulkan_transfer(kiln_vulkan_device_t* device,
                                          kiln_vulkan_buffer_t* staging,
                                          const kiln_vulkan_buffer_t* buffer, uint64_t offset,
                                          uint8_t* host, uint64_t size, int upload) {
  const char* what = upload ? "upload" : "download";
  if (!device || !buffer || buffer->buffer == VK_NULL_HANDLE || (size && !host)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: %s: NULL device, buffer or data",
                            what);
  }
  if (!kiln_range_within(offset, size, buffer->size) || size > SIZE_MAX) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: %s: range [%llu, +%llu) exceeds the buffer's %llu bytes",
                            what, (unsigned long long)offset, (unsigned long long)size,
                            (unsigned long long)buffer->size);
  }
  if (size == 0) return NULL;
  kiln_vulkan_buffer_t temporary;
  memset(&temporary, 0, sizeof(temporary));
  if (!staging) {
    KILN_RETURN_IF_ERROR(
        kiln_vulkan_buffer_create(device, KILN_VULKAN_BUFFER_STAGING, size, &temporary));
    staging = &temporary;
  } else if (staging->kind != KILN_VULKAN_BUFFER_STAGING || !staging->mapped) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: %s: not a staging buffer", what);
  }
  kiln_status_t status = NULL;
  int pending = 0;
  for (uint64_t done = 0; !status && done < size;) {
    uint64_t chunk = size - done < staging->size ? size - done : staging->size;
    if (upload) {
      memcpy(staging->mapped, host + done, (size_t)chunk);
      status = kiln_vulkan_staging_sync(device, staging, upload);
      if (!status) {
        status = kiln_vulkan_copy_now(device, staging->buffer, 0, buffer->buffer,
                                      offset + done, chunk, &pending);
      }
    } else {
      status = kiln_vulkan_copy_now(device, buffer->buffer, offset + done, staging->buffer, 0,
                                    chunk, &pending);
      if (!status) status = kiln_vulkan_staging_sync(device, staging, upload);
      if (!status) memcpy(host + done, staging->mapped, (size_t)chunk);
    }
    done += chunk;
  }
  // A copy that may still be running keeps its temporary buffer (leaked:
  // the device is not usable after that anyway).
  if (!pending) kiln_vulkan_buffer_release(device, &temporary);
  return kiln_status_annotate(status, "vulkan: %s of %llu bytes at offset %llu", what,
                              (unsigned long long)size, (unsigned long long)offset);
}

kiln_status_t kiln_vulkan_buffer_upload(kiln_vulkan_device_t* device,
                                        kiln_vulkan_buffer_t* staging,
                                        const kiln_vulkan_buffer_t* target, uint64_t offset,
                                        const void* data, uint64_t size) {
  return kiln_vulkan_transfer(device, staging, target, offset, (uint8_t*)data, size, 1);
}

kiln_status_t kiln_vulkan_buffer_download(kiln_vulkan_device_t* device,
                                          kiln_vulkan_buffer_t* staging,
                                          const kiln_vulkan_buffer_t* source, uint64_t offset,
                                          void* data, uint64_t size) {
  return kiln_vulkan_transfer(device, staging, source, offset, (uint8_t*)data, size, 0);
}
