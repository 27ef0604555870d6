// Opening libvulkan at run time and the tables of Vulkan entry points.
//
// libkiln never links libvulkan: kiln_vulkan_loader_open dlopens
// "libvulkan.so.1" (then "libvulkan.so"; MoltenVK on Apple systems: the
// names runtime/meson.build writes to kiln_vulkan_libraries.h), takes
// vkGetInstanceProcAddr with dlsym and resolves every other entry point
// through it (global ones with a NULL instance, instance ones once the
// instance exists) or through vkGetDeviceProcAddr (device ones, per
// VkDevice). Where no Vulkan loader is installed, opening fails with a
// KILN_UNSUPPORTED status and nothing else happens: the CPU runtime does not
// depend on any of this.
//
// Every VkResult that is not VK_SUCCESS becomes a status naming the call and
// the result: "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)".
#ifndef KILN_VULKAN_VULKAN_LOADER_H_
#define KILN_VULKAN_VULKAN_LOADER_H_

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "base/status.h"

// Entry points resolved with vkGetInstanceProcAddr(NULL, name).
#define KILN_VULKAN_GLOBAL_FUNCTIONS(X)                                      \
  X(vkCreateInstance)                       /* makes the instance */         \
  X(vkEnumerateInstanceLayerProperties)     /* finds the validation layer */ \
  X(vkEnumerateInstanceExtensionProperties) /* finds VK_EXT_debug_utils */

// Entry points resolved with vkGetInstanceProcAddr(instance, name).
#define KILN_VULKAN_INSTANCE_FUNCTIONS(X)                                     \
  X(vkDestroyInstance)                        /* kiln_vulkan_instance_free */ \
  X(vkEnumeratePhysicalDevices)               /* lists the devices */         \
  X(vkGetPhysicalDeviceProperties)            /* name, type, limits */        \
  X(vkGetPhysicalDeviceQueueFamilyProperties) /* finds a compute queue */     \
  X(vkGetPhysicalDeviceMemoryProperties)      /* memory types for buffers */  \
  X(vkGetPhysicalDeviceFeatures)              /* optional shader features */  \
  X(vkCreateDevice)                           /* the logical device */        \
  X(vkGetDeviceProcAddr)                      /* resolves the device entry points */

// Entry points resolved with vkGetDeviceProcAddr(device, name).
#define KILN_VULKAN_DEVICE_FUNCTIONS(X)                                            \
  X(vkDestroyDevice)                   /* kiln_vulkan_device_free */               \
  X(vkDeviceWaitIdle)                  /* before destroying anything in flight */  \
  X(vkGetDeviceQueue)                  /* the compute queue */                     \
  X(vkQueueSubmit)                     /* one-shot transfers and command lists */  \
  X(vkCreateFence)                     /* completion of a submission */            \
  X(vkDestroyFence)                    /* frees a fence */                         \
  X(vkResetFences)                     /* before each submission */                \
  X(vkWaitForFences)                   /* with a timeout */                        \
  X(vkCreateBuffer)                    /* device-local and staging buffers */      \
  X(vkDestroyBuffer)                   /* frees a buffer */                        \
  X(vkGetBufferMemoryRequirements)     /* size, alignment, allowed memory types */ \
  X(vkAllocateMemory)                  /* one allocation per buffer */             \
  X(vkFreeMemory)                      /* frees a buffer's memory */               \
  X(vkBindBufferMemory)                /* attaches the memory to its buffer */     \
  X(vkMapMemory)                       /* staging buffers stay mapped */           \
  X(vkFlushMappedMemoryRanges)         /* non-coherent staging, host -> device */  \
  X(vkInvalidateMappedMemoryRanges)    /* non-coherent staging, device -> host */  \
  X(vkCreateCommandPool)               /* the device's one pool */                 \
  X(vkDestroyCommandPool)              /* frees the pool and its buffers */        \
  X(vkAllocateCommandBuffers)          /* one-shot and recorded */                 \
  X(vkFreeCommandBuffers)              /* after a one-shot transfer */             \
  X(vkBeginCommandBuffer)              /* starts recording */                      \
  X(vkEndCommandBuffer)                /* ends recording */                        \
  X(vkCmdCopyBuffer)                   /* staging transfers */                     \
  X(vkCmdPipelineBarrier)              /* between dependent work */                \
  X(vkCmdBindPipeline)                 /* per dispatch, when it changes */         \
  X(vkCmdBindDescriptorSets)           /* per dispatch with bindings */            \
  X(vkCmdPushConstants)                /* per dispatch with push constants */      \
  X(vkCmdDispatch)                     /* the workgroup counts */                  \
  X(vkCreateShaderModule)              /* from SPIR-V words */                     \
  X(vkDestroyShaderModule)             /* once the pipeline exists */              \
  X(vkCreateDescriptorSetLayout)       /* N storage buffers */                     \
  X(vkDestroyDescriptorSetLayout)      /* frees a set layout */                    \
  X(vkCreatePipelineLayout)            /* set layout + push-constant range */      \
  X(vkDestroyPipelineLayout)           /* frees a pipeline layout */               \
  X(vkCreateComputePipelines)          /* one pipeline per kernel */               \
  X(vkDestroyPipeline)                 /* frees a pipeline */                      \
  X(vkCreatePipelineCache)             /* from an application blob */              \
  X(vkDestroyPipelineCache)            /* frees a pipeline cache */                \
  X(vkGetPipelineCacheData)            /* serializes it back */                    \
  X(vkCreateDescriptorPool)            /* one per command list */                  \
  X(vkDestroyDescriptorPool)           /* frees its sets too */                    \
  X(vkAllocateDescriptorSets)          /* one per dispatch */                      \
  X(vkUpdateDescriptorSets)            /* buffer + offset + range per binding */   \
  X(vkCreateQueryPool)                 /* timestamps of a profiled command list */ \
  X(vkDestroyQueryPool)                /* frees them */                            \
  X(vkCmdResetQueryPool)               /* at the start of the list */              \
  X(vkCmdWriteTimestamp)               /* after each dispatch */                   \
  X(vkGetQueryPoolResults)             /* read after the run */

#define KILN_VULKAN_DECLARE_FUNCTION(name) PFN_##name name;

// libvulkan and the entry points that do not need a VkDevice.
typedef struct kiln_vulkan_loader_t {
  void* library;                                             // dlopen handle (NULL: not open)
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;           // from dlsym; resolves the rest
  KILN_VULKAN_GLOBAL_FUNCTIONS(KILN_VULKAN_DECLARE_FUNCTION)   // usable once open
  KILN_VULKAN_INSTANCE_FUNCTIONS(KILN_VULKAN_DECLARE_FUNCTION) // usable after load_instance
} kiln_vulkan_loader_t;

// The entry points of one VkDevice.
typedef struct kiln_vulkan_device_functions_t {
  KILN_VULKAN_DEVICE_FUNCTIONS(KILN_VULKAN_DECLARE_FUNCTION)  // every one non-NULL once loaded
} kiln_vulkan_device_functions_t;

// Opens libvulkan and resolves the global entry points. `library_name`
// replaces the default names when not NULL (tests point it at a library that
// does not exist to exercise the no-Vulkan path). A missing library or entry
// point is KILN_UNSUPPORTED. On failure nothing stays open.
kiln_status_t kiln_vulkan_loader_open(const char* library_name,
                                      kiln_vulkan_loader_t* out_loader);

// Resolves the instance entry points for `instance`.
kiln_status_t kiln_vulkan_loader_load_instance(kiln_vulkan_loader_t* loader,
                                               VkInstance instance);

// Resolves the device entry points of `device` (created from the instance
// whose entry points `loader` holds): all of them, or none (the table is
// zeroed on failure).
kiln_status_t kiln_vulkan_loader_load_device(const kiln_vulkan_loader_t* loader,
                                             VkDevice device,
                                             kiln_vulkan_device_functions_t* out_functions);

// dlcloses the library; safe on a zeroed loader.
void kiln_vulkan_loader_close(kiln_vulkan_loader_t* loader);

// "VK_ERROR_DEVICE_LOST", ...; "VK_RESULT_UNKNOWN" for codes it does not know.
const char* kiln_vulkan_result_name(VkResult result);

// NULL for VK_SUCCESS; otherwise a status "<call> failed: <name> (<value>)"
// whose code follows the result: out-of-memory results (host, device, pool,
// fragmentation) are KILN_OUT_OF_MEMORY, missing layers/extensions/features
// and incompatible drivers KILN_UNSUPPORTED, VK_ERROR_INVALID_SHADER_NV
// KILN_INVALID_BUNDLE, anything else (VK_ERROR_DEVICE_LOST, VK_TIMEOUT, ...)
// KILN_INTERNAL.
kiln_status_t kiln_vulkan_result_status(VkResult result, const char* call);

// Returns early with the status for `result` of Vulkan call `call` (a string).
#define KILN_VULKAN_RETURN_IF_FAILED(call, result) \
  KILN_RETURN_IF_ERROR(kiln_vulkan_result_status((result), (call)))

#endif  // KILN_VULKAN_VULKAN_LOADER_H_
