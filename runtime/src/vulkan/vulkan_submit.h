// Submitting work to a device's queue: command buffers from the device's
// pool, fences, barriers, submission and waiting with a timeout. Used by the
// one-shot transfers (vulkan_memory) and the recorded command lists
// (vulkan_command).
//
// The rule that keeps submissions independent: every submission ends with a
// barrier from the stages it wrote in to KILN_VULKAN_LATER_STAGES /
// KILN_VULKAN_LATER_ACCESS, so whatever runs next on the queue (or the host,
// after the fence) sees its writes, and nothing tracks what ran before.
#ifndef KILN_VULKAN_VULKAN_SUBMIT_H_
#define KILN_VULKAN_VULKAN_SUBMIT_H_

#include <stdint.h>

#include "vulkan/vulkan_device.h"

// Creates an unsignalled fence.
kiln_status_t kiln_vulkan_device_create_fence(kiln_vulkan_device_t* device, VkFence* out_fence);

// Allocates a primary command buffer from the device's pool and begins
// recording it with `usage` (e.g. VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
// 0: reusable, one submission at a time). Nothing is left allocated on failure.
kiln_status_t kiln_vulkan_device_begin_commands(kiln_vulkan_device_t* device,
                                                VkCommandBufferUsageFlags usage,
                                                VkCommandBuffer* out_command_buffer);

// Resets `fence` and submits `command_buffer` to the device's queue,
// signalling `fence` on completion.
kiln_status_t kiln_vulkan_device_submit(kiln_vulkan_device_t* device,
                                        VkCommandBuffer command_buffer, VkFence fence);
// Waits at most `timeout_ns` for `fence`. A timeout is KILN_INTERNAL
// ("vkWaitForFences failed: VK_TIMEOUT (2)", with the timeout).
kiln_status_t kiln_vulkan_device_wait(kiln_vulkan_device_t* device, VkFence fence,
                                      uint64_t timeout_ns);

// Waits (without a timeout) until the device has finished all work: after a
// failed wait, before releasing what the work may still use.
kiln_status_t kiln_vulkan_device_wait_idle(kiln_vulkan_device_t* device);

// Records one global memory barrier (the same for buffers of any kind).
void kiln_vulkan_cmd_barrier(const kiln_vulkan_device_t* device,
                             VkCommandBuffer command_buffer,
                             VkPipelineStageFlags src_stages, VkAccessFlags src_access,
                             VkPipelineStageFlags dst_stages, VkAccessFlags dst_access);

// Every stage and access that later work on the queue (or the host) may use:
// where every submission's final barrier goes.
#define KILN_VULKAN_LATER_STAGES                                          \
  (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | \
   VK_PIPELINE_STAGE_HOST_BIT)
#define KILN_VULKAN_LATER_ACCESS                                                        \
  (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | \
   VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT)

#endif  // KILN_VULKAN_VULKAN_SUBMIT_H_
