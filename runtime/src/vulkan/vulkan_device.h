// The Vulkan instance (with the optional validation layer and a debug-utils
// message callback), the physical devices that have a compute queue, and the
// logical device with its compute queue, command pool and transfer fence.
//
// Sequence: kiln_vulkan_instance_create opens libvulkan, creates a Vulkan 1.0
// instance and lists the physical devices that have a queue family with
// VK_QUEUE_COMPUTE_BIT, in the loader's order. The application lists them
// (kiln_vulkan_instance_device_count / _device_properties) and picks one by
// index: kiln_vulkan_device_create makes a VkDevice with one queue of that
// family, no extensions and only the optional features asked for.
//
// Threads: an instance and a device are used by one thread at a time (the
// queue and the command pool are externally synchronized objects).
#ifndef KILN_VULKAN_VULKAN_DEVICE_H_
#define KILN_VULKAN_VULKAN_DEVICE_H_

#include <stdint.h>

#include "vulkan/vulkan_loader.h"

// How severe a message from the validation layer (or the loader) is.
typedef enum kiln_vulkan_message_severity_t {
  KILN_VULKAN_MESSAGE_WARNING = 1,  // VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
  KILN_VULKAN_MESSAGE_ERROR = 2,    // VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
} kiln_vulkan_message_severity_t;

// Receives every warning and error message (info and verbose ones are not
// requested). Called on whatever thread made the Vulkan call.
typedef void (*kiln_vulkan_message_fn_t)(void* user_data,
                                         kiln_vulkan_message_severity_t severity,
                                         const char* message);

// Validation levels for kiln_vulkan_instance_options_t.validation.
typedef enum kiln_vulkan_validation_t {
  KILN_VULKAN_VALIDATION_NONE = 0,           // no layer (production)
  KILN_VULKAN_VALIDATION_STANDARD = 1,       // VK_LAYER_KHRONOS_validation
  KILN_VULKAN_VALIDATION_SYNCHRONIZATION = 2 // the layer plus its synchronization checks
} kiln_vulkan_validation_t;

// Zero means the default for every field.
typedef struct kiln_vulkan_instance_options_t {
  kiln_vulkan_validation_t validation;        // a missing layer is KILN_UNSUPPORTED
  kiln_vulkan_message_fn_t message_callback;  // optional; needs VK_EXT_debug_utils
  void* message_user_data;                    // passed to `message_callback`
  const char* library_name;                   // tests only: dlopen this instead of libvulkan
} kiln_vulkan_instance_options_t;

// A physical device with a compute queue.
typedef struct kiln_vulkan_physical_device_t {
  VkPhysicalDevice handle;                // owned by the instance
  uint32_t queue_family_index;            // the first family with VK_QUEUE_COMPUTE_BIT
  uint32_t timestamp_valid_bits;          // of that family's timestamps (0: none)
  VkPhysicalDeviceProperties properties;  // name, type, limits
} kiln_vulkan_physical_device_t;

typedef struct kiln_vulkan_instance_t {
  kiln_vulkan_loader_t loader;                 // libvulkan and the instance entry points
  VkInstance instance;                         // VK_NULL_HANDLE until created
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;  // set with `messenger`
  VkDebugUtilsMessengerEXT messenger;          // VK_NULL_HANDLE without a message callback
  kiln_vulkan_message_fn_t message_callback;   // from the options
  void* message_user_data;                     // from the options
  kiln_vulkan_physical_device_t* devices;      // the devices with a compute queue
  uint32_t device_count;                       // entries in `devices` (may be 0)
  int wedged;                                  // nonzero: a device of it is wedged; freeing leaks the
                                               // VkInstance and keeps libvulkan loaded
} kiln_vulkan_instance_t;

// Creates the instance and lists the devices. No libvulkan, no Vulkan driver
// (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER), no physical device at
// all (vkEnumeratePhysicalDevices: VK_ERROR_INITIALIZATION_FAILED), a
// missing validation layer or a missing VK_EXT_debug_utils (when a callback
// is given) are KILN_UNSUPPORTED. Devices without a compute queue are left
// out of the list, which may end up empty (then kiln_vulkan_device_create
// says so).
kiln_status_t kiln_vulkan_instance_create(const kiln_vulkan_instance_options_t* options,
                                          kiln_vulkan_instance_t** out_instance);
// Destroys the instance and closes libvulkan. Devices must be freed first.
// NULL is ignored.
void kiln_vulkan_instance_free(kiln_vulkan_instance_t* instance);

// The number of physical devices with a compute queue.
uint32_t kiln_vulkan_instance_device_count(const kiln_vulkan_instance_t* instance);
// The properties (deviceName, deviceType, limits, ...) of device `index`;
// the pointer lives as long as the instance.
kiln_status_t kiln_vulkan_instance_device_properties(
    const kiln_vulkan_instance_t* instance, uint32_t index,
    const VkPhysicalDeviceProperties** out_properties);

// Optional device features a device is created with (kiln_vulkan_device_options_t.features;
// the values of the bundle's kiln.fb.VulkanFeature).
#define KILN_VULKAN_FEATURE_INT64 1u    // VkPhysicalDeviceFeatures.shaderInt64
#define KILN_VULKAN_FEATURE_FLOAT64 2u  // VkPhysicalDeviceFeatures.shaderFloat64

// Zero means the default for every field.
typedef struct kiln_vulkan_device_options_t {
  uint32_t physical_device_index;  // index in the instance's device list
  uint64_t transfer_timeout_ns;    // longest wait for one upload/download (0: 60 s)
  uint32_t features;               // KILN_VULKAN_FEATURE_* bits to enable (missing: KILN_UNSUPPORTED)
} kiln_vulkan_device_options_t;

typedef struct kiln_vulkan_device_t {
  kiln_vulkan_instance_t* instance;                 // must outlive the device
  const kiln_vulkan_physical_device_t* physical;    // the chosen device (inside `instance`)
  const VkPhysicalDeviceLimits* limits;             // &physical->properties.limits
  VkPhysicalDeviceMemoryProperties memory;          // its memory types and heaps
  VkDevice device;                                  // VK_NULL_HANDLE until created
  kiln_vulkan_device_functions_t fn;                // the device entry points
  VkQueue queue;                                    // queue 0 of the compute family
  VkCommandPool command_pool;                       // one-shot transfers and command lists
  VkFence transfer_fence;                           // signalled by each one-shot transfer
  uint64_t transfer_timeout_ns;                     // from the options (default applied)
  int wedged;                                       // nonzero: submitted work never finished (a wait
                                                    // timed out); nothing more is submitted, and
                                                    // objects are leaked instead of destroyed
} kiln_vulkan_device_t;

// Creates the logical device on physical device options->physical_device_index
// (NULL options: device 0).
kiln_status_t kiln_vulkan_device_create(kiln_vulkan_instance_t* instance,
                                        const kiln_vulkan_device_options_t* options,
                                        kiln_vulkan_device_t** out_device);
// Marks the device (and its instance) wedged after a wait for submitted
// work timed out: the work may still run, so from now on nothing is
// submitted (KILN_INTERNAL), and buffers, pipelines, the device and the
// instance are leaked rather than destroyed (undefined while in use) or
// waited for (maybe forever).
void kiln_vulkan_device_mark_wedged(kiln_vulkan_device_t* device);
// Waits for the device to go idle and destroys it; a wedged device (work
// that did not finish in time may still run) is left to the driver instead,
// so that freeing never hangs. NULL is ignored.
void kiln_vulkan_device_free(kiln_vulkan_device_t* device);

#endif  // KILN_VULKAN_VULKAN_DEVICE_H_
