// Buffers and transfers.
//
// Strategy: kernels only touch device-local buffers (a model's parameters,
// uploaded once, and its arena, one buffer bound at offsets). The host
// reaches them only through host-visible staging buffers, which stay mapped:
// an upload copies into the staging buffer and records a copy to the device
// buffer in a one-shot command buffer; a download does the reverse. Each
// buffer has its own VkDeviceMemory allocation (a model needs a handful).
//
// Every submission ends with a barrier to KILN_VULKAN_LATER_STAGES, so
// uploads, command lists and downloads can follow each other in any order.
#ifndef KILN_VULKAN_VULKAN_MEMORY_H_
#define KILN_VULKAN_VULKAN_MEMORY_H_

#include <stdint.h>

#include "vulkan/vulkan_device.h"
#include "vulkan/vulkan_submit.h"

// What a buffer is for.
typedef enum kiln_vulkan_buffer_kind_t {
  KILN_VULKAN_BUFFER_DEVICE = 0,   // device-local storage buffer (transfer source/target)
  KILN_VULKAN_BUFFER_STAGING = 1,  // host-visible, mapped, transfer source/target only
} kiln_vulkan_buffer_kind_t;

typedef struct kiln_vulkan_buffer_t {
  VkBuffer buffer;              // VK_NULL_HANDLE when not created
  VkDeviceMemory memory;        // its own allocation
  uint64_t size;                // bytes usable (as asked for; the allocation may be larger)
  kiln_vulkan_buffer_kind_t kind;  // what it was created as
  uint8_t* mapped;              // staging buffers: the mapping of [0, size); else NULL
  int coherent;                 // staging buffers: nonzero when no flush/invalidate is needed
} kiln_vulkan_buffer_t;

// Picks a memory type allowed by `type_bits` that has every `required`
// flag, preferring one that also has every `preferred` flag; the lowest
// index wins among equals (Vulkan orders types by performance).
// KILN_UNSUPPORTED when none has the required flags.
kiln_status_t kiln_vulkan_memory_type_select(const VkPhysicalDeviceMemoryProperties* memory,
                                             uint32_t type_bits, VkMemoryPropertyFlags required,
                                             VkMemoryPropertyFlags preferred,
                                             uint32_t* out_type_index);

// Creates a buffer of `size` bytes (>= 1) with its memory (and, for staging,
// its mapping). Device-local memory is required for KILN_VULKAN_BUFFER_DEVICE;
// staging prefers coherent, cached memory.
kiln_status_t kiln_vulkan_buffer_create(kiln_vulkan_device_t* device,
                                        kiln_vulkan_buffer_kind_t kind, uint64_t size,
                                        kiln_vulkan_buffer_t* out_buffer);
// Destroys the buffer and frees its memory; safe on a zeroed struct. The
// device must not be using it.
void kiln_vulkan_buffer_release(kiln_vulkan_device_t* device, kiln_vulkan_buffer_t* buffer);

// Copies `size` bytes from `data` into [offset, offset + size) of device
// buffer `target` through `staging` (a staging buffer, used in chunks of its
// size; NULL: a temporary one of `size` bytes), waiting for each chunk.
kiln_status_t kiln_vulkan_buffer_upload(kiln_vulkan_device_t* device,
                                        kiln_vulkan_buffer_t* staging,
                                        const kiln_vulkan_buffer_t* target, uint64_t offset,
                                        const void* data, uint64_t size);
// Copies [offset, offset + size) of device buffer `source` into `data`
// through `staging`, like kiln_vulkan_buffer_upload.
kiln_status_t kiln_vulkan_buffer_download(kiln_vulkan_device_t* device,
                                          kiln_vulkan_buffer_t* staging,
                                          const kiln_vulkan_buffer_t* source, uint64_t offset,
                                          void* data, uint64_t size);

#endif  // KILN_VULKAN_VULKAN_MEMORY_H_
