// Command buffers, fences, barriers and submission; see vulkan_submit.h.
#include "vulkan/vulkan_submit.h"

#include <string.h>

kiln_status_t kiln_vulkan_device_create_fence(kiln_vulkan_device_t* device, VkFence* out_fence) {
  VkFenceCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  return kiln_vulkan_result_status(device->fn.vkCreateFence(device->device, &info, NULL, out_fence),
                                   "vkCreateFence");
}

kiln_status_t kiln_vulkan_device_begin_commands(kiln_vulkan_device_t* device,
                                                VkCommandBufferUsageFlags usage,
                                                VkCommandBuffer* out_command_buffer) {
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  VkCommandBufferAllocateInfo allocate;
  memset(&allocate, 0, sizeof(allocate));
  allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocate.commandPool = device->command_pool;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkAllocateCommandBuffers",
      fn->vkAllocateCommandBuffers(device->device, &allocate, &command_buffer));
  VkCommandBufferBeginInfo begin;
  memset(&begin, 0, sizeof(begin));
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = usage;
  kiln_status_t status = kiln_vulkan_result_status(
      fn->vkBeginCommandBuffer(command_buffer, &begin), "vkBeginCommandBuffer");
  if (status) {
    fn->vkFreeCommandBuffers(device->device, device->command_pool, 1, &command_buffer);
    return status;
  }
  *out_command_buffer = command_buffer;
  return NULL;
}

kiln_status_t kiln_vulkan_device_submit(kiln_vulkan_device_t* device,
                                        VkCommandBuffer command_buffer, VkFence fence) {
  if (device->wedged) {
    return kiln_make_status(KILN_INTERNAL,
                            "vulkan: the device is wedged: an earlier submission did not finish in time");
  }
  KILN_VULKAN_RETURN_IF_FAILED("vkResetFences",
                               device->fn.vkResetFences(device->device, 1, &fence));
  VkSubmitInfo submit;
  memset(&submit, 0, sizeof(submit));
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &command_buffer;
  return kiln_vulkan_result_status(device->fn.vkQueueSubmit(device->queue, 1, &submit, fence),
                                   "vkQueueSubmit");
}

kiln_status_t kiln_vulkan_device_wait(kiln_vulkan_device_t* device, VkFence fence,
                                      uint64_t timeout_ns) {
  VkResult result = device->fn.vkWaitForFences(device->device, 1, &fence, VK_TRUE, timeout_ns);
  if (result == VK_TIMEOUT) {
    return kiln_make_status(KILN_INTERNAL,
                            "vkWaitForFences failed: VK_TIMEOUT (%d): not done after %llu ms",
                            (int)result, (unsigned long long)(timeout_ns / 1000000));
  }
  return kiln_vulkan_result_status(result, "vkWaitForFences");
}

kiln_status_t kiln_vulkan_device_wait_idle(kiln_vulkan_device_t* device) {
  return kiln_vulkan_result_status(device->fn.vkDeviceWaitIdle(device->device),
                                   "vkDeviceWaitIdle");
}

void kiln_vulkan_cmd_barrier(const kiln_vulkan_device_t* device,
                             VkCommandBuffer command_buffer,
                             VkPipelineStageFlags src_stages, VkAccessFlags src_access,
                             VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
  VkMemoryBarrier barrier;
  memset(&barrier, 0, sizeof(barrier));
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = src_access;
  barrier.dstAccessMask = dst_access;
  device->fn.vkCmdPipelineBarrier(command_buffer, src_stages, dst_stages, 0, 1, &barrier, 0,
                                  NULL, 0, NULL);
}
