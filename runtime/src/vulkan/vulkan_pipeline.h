// Compute pipelines from SPIR-V, and the pipeline cache.
//
// A kernel is one SPIR-V module with a GLCompute entry point whose
// workgroup size is fixed in the module (OpExecutionMode LocalSize or the
// WorkgroupSize built-in; no specialization constants are passed). Its
// interface is fixed by convention: `binding_count` storage buffers at set 0,
// bindings 0..binding_count-1, and `push_constant_size` bytes of push
// constants at offset 0.
//
// The module comes from an untrusted bundle, so before Vulkan sees it the
// size (a multiple of 4, at least the 5-word header), the magic number, every
// instruction's word count, the entry point, the workgroup size (within the
// device's limits and equal to the one the bundle states) and the interface
// sizes (within the device's limits) are checked. The rest of the code is not
// validated: like a CPU kernel's machine code, it is trusted to stay inside
// what it binds.
#ifndef KILN_VULKAN_VULKAN_PIPELINE_H_
#define KILN_VULKAN_VULKAN_PIPELINE_H_

#include <stddef.h>
#include <stdint.h>

#include "bundle/spirv_inspect.h"
#include "vulkan/vulkan_device.h"

// Zero means the default for every field.
typedef struct kiln_vulkan_pipeline_options_t {
  const void* spirv;               // the SPIR-V module (4-byte aligned)
  size_t spirv_size;               // its size in bytes
  const char* entry_point;         // GLCompute entry point (NULL: "main")
  uint32_t binding_count;          // storage buffers at set 0, bindings 0..binding_count-1
  uint32_t push_constant_size;     // bytes of push constants (a multiple of 4; 0: none)
  uint32_t workgroup_size[3];      // expected workgroup size (all 0: whatever the shader says)
  VkPipelineCache cache;           // optional (kiln_vulkan_pipeline_cache_create)
} kiln_vulkan_pipeline_options_t;

typedef struct kiln_vulkan_pipeline_t {
  VkDescriptorSetLayout set_layout;  // the storage buffers (set 0)
  VkPipelineLayout layout;           // set_layout + the push-constant range
  VkPipeline pipeline;               // the compute pipeline
  uint32_t binding_count;            // from the options
  uint32_t push_constant_size;       // from the options
  uint32_t workgroup_size[3];        // the shader's workgroup size
} kiln_vulkan_pipeline_t;

// Checks the module and the interface and creates the pipeline.
kiln_status_t kiln_vulkan_pipeline_create(kiln_vulkan_device_t* device,
                                          const kiln_vulkan_pipeline_options_t* options,
                                          kiln_vulkan_pipeline_t* out_pipeline);
// Destroys the pipeline; safe on a zeroed struct.
void kiln_vulkan_pipeline_release(kiln_vulkan_device_t* device, kiln_vulkan_pipeline_t* pipeline);

// Creates a pipeline cache, seeded with `data` (`size` bytes, e.g. a file
// the application saved from kiln_vulkan_pipeline_cache_get_data) when its
// header says it was made by this device and driver (pipelineCacheUUID);
// otherwise, or for NULL data, the cache starts empty. *out_data_used (may
// be NULL) tells which.
kiln_status_t kiln_vulkan_pipeline_cache_create(kiln_vulkan_device_t* device, const void* data,
                                                size_t size, VkPipelineCache* out_cache,
                                                int* out_data_used);
// The cache's contents, to save and pass to a later
// kiln_vulkan_pipeline_cache_create. Two calls: with NULL `data` *out_size is
// the bytes needed; then with a buffer of `capacity` >= that many, the bytes
// written (KILN_INVALID_ARGUMENT when `capacity` is too small).
kiln_status_t kiln_vulkan_pipeline_cache_get_data(kiln_vulkan_device_t* device,
                                                  VkPipelineCache cache, void* data,
                                                  size_t capacity, size_t* out_size);
// Destroys the cache (pipelines made with it stay valid). VK_NULL_HANDLE is ignored.
void kiln_vulkan_pipeline_cache_destroy(kiln_vulkan_device_t* device, VkPipelineCache cache);

#endif  // KILN_VULKAN_VULKAN_PIPELINE_H_
