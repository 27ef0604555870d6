// Vulkan instance, device list and logical device; see vulkan_device.h.
#include "vulkan/vulkan_device.h"

#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "vulkan/vulkan_submit.h"

static const char kiln_vulkan_validation_layer[] = "VK_LAYER_KHRONOS_validation";

#define KILN_VULKAN_DEFAULT_TRANSFER_TIMEOUT_NS (60ull * 1000 * 1000 * 1000)

// Enumerates with the two-call idiom (`enumerate(&count, NULL)`, then into an
// array) and sets *out_found when an entry's `name_field` equals `name`.
template <typename T, typename Enumerate>
static kiln_status_t kiln_vulkan_enumerate_find(Enumerate enumerate, const char* call,
                                                char (T::*name_field)[VK_MAX_EXTENSION_NAME_SIZE],
                                                const char* name, int* out_found) {
  *out_found = 0;
  uint32_t count = 0;
  KILN_VULKAN_RETURN_IF_FAILED(call, enumerate(&count, (T*)NULL));
  T* entries = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &entries));
  kiln_status_t status = kiln_vulkan_result_status(enumerate(&count, entries), call);
  for (uint32_t i = 0; !status && i < count && !*out_found; ++i) {
    *out_found = strncmp(entries[i].*name_field, name, VK_MAX_EXTENSION_NAME_SIZE) == 0;
  }
  free(entries);
  return status;
}

// Sets *out_found when instance extension `name` is offered by the loader or
// the implicit layers, or by `layer` when not NULL.
static kiln_status_t kiln_vulkan_find_extension(const kiln_vulkan_loader_t* loader,
                                                const char* layer, const char* name,
                                                int* out_found) {
  PFN_vkEnumerateInstanceExtensionProperties enumerate =
      loader->vkEnumerateInstanceExtensionProperties;
  auto global = [&](uint32_t* count, VkExtensionProperties* out) {
    return enumerate(NULL, count, out);
  };
  KILN_RETURN_IF_ERROR(kiln_vulkan_enumerate_find(
      global, "vkEnumerateInstanceExtensionProperties", &VkExtensionProperties::extensionName,
      name, out_found));
  if (*out_found || !layer) return NULL;
  auto of_layer = [&](uint32_t* count, VkExtensionProperties* out) {
    return enumerate(layer, count, out);
  };
  return kiln_vulkan_enumerate_find(of_layer, "vkEnumerateInstanceExtensionProperties",
                                    &VkExtensionProperties::extensionName, name, out_found);
}

// Forwards warnings and errors to the instance's message callback.
static VKAPI_ATTR VkBool32 VKAPI_CALL kiln_vulkan_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user_data) {
  (void)types;
  const kiln_vulkan_instance_t* instance = (const kiln_vulkan_instance_t*)user_data;
  instance->message_callback(instance->message_user_data,
                             severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                                 ? KILN_VULKAN_MESSAGE_ERROR
                                 : KILN_VULKAN_MESSAGE_WARNING,
                             data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;  // never abort the call
}

// The layers and extensions the options ask for, and the structures chained
// into VkInstanceCreateInfo.pNext.
typedef struct kiln_vulkan_instance_request_t {
  const char* layers[1];                          // the validation layer, if asked for
  uint32_t layer_count;                           // entries used in `layers`
  const char* extensions[2];                      // debug utils, validation features
  uint32_t extension_count;                       // entries used in `extensions`
  VkValidationFeatureEnableEXT enables[1];        // synchronization validation
  VkValidationFeaturesEXT features;               // chained for synchronization validation
  VkDebugUtilsMessengerCreateInfoEXT messenger;   // chained when there is a callback
  const void* next;                               // head of the pNext chain
} kiln_vulkan_instance_request_t;

// Fills `request` from the options, checking that each layer and extension exists.
static kiln_status_t kiln_vulkan_instance_request(kiln_vulkan_instance_t* instance,
                                                  const kiln_vulkan_instance_options_t* options,
                                                  kiln_vulkan_instance_request_t* request) {
  const kiln_vulkan_loader_t* loader = &instance->loader;
  const char* layer = NULL;
  int found = 0;
  if (options->validation != KILN_VULKAN_VALIDATION_NONE) {
    auto enumerate = [&](uint32_t* count, VkLayerProperties* out) {
      return loader->vkEnumerateInstanceLayerProperties(count, out);
    };
    KILN_RETURN_IF_ERROR(kiln_vulkan_enumerate_find(enumerate, "vkEnumerateInstanceLayerProperties",
                                                    &VkLayerProperties::layerName,
                                                    kiln_vulkan_validation_layer, &found));
    if (!found) {
      return kiln_make_status(KILN_UNSUPPORTED, "vulkan: validation layer %s is not installed",
                              kiln_vulkan_validation_layer);
    }
    layer = kiln_vulkan_validation_layer;
    request->layers[request->layer_count++] = layer;
  }
  if (options->validation == KILN_VULKAN_VALIDATION_SYNCHRONIZATION) {
    const char* name = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
    KILN_RETURN_IF_ERROR(kiln_vulkan_find_extension(loader, layer, name, &found));
    if (!found) return kiln_make_status(KILN_UNSUPPORTED, "vulkan: %s is not available", name);
    request->extensions[request->extension_count++] = name;
    request->enables[0] = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    request->features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
    request->features.pNext = request->next;
    request->features.enabledValidationFeatureCount = 1;
    request->features.pEnabledValidationFeatures = request->enables;
    request->next = &request->features;
  }
  if (options->message_callback) {
    const char* name = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    KILN_RETURN_IF_ERROR(kiln_vulkan_find_extension(loader, layer, name, &found));
    if (!found) return kiln_make_status(KILN_UNSUPPORTED, "vulkan: %s is not available", name);
    request->extensions[request->extension_count++] = name;
    VkDebugUtilsMessengerCreateInfoEXT* messenger = &request->messenger;
    messenger->sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    messenger->pNext = request->next;
    messenger->messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger->messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger->pfnUserCallback = kiln_vulkan_debug_message;
    messenger->pUserData = instance;
    request->next = messenger;  // also reports messages of vkCreate/DestroyInstance
  }
  return NULL;
}

// Creates the VkInstance, loads its entry points and the messenger.
static kiln_status_t kiln_vulkan_instance_init(kiln_vulkan_instance_t* instance,
                                               const kiln_vulkan_instance_options_t* options) {
  kiln_vulkan_instance_request_t request;
  memset(&request, 0, sizeof(request));
  KILN_RETURN_IF_ERROR(kiln_vulkan_instance_request(instance, options, &request));
  VkApplicationInfo application;
  memset(&application, 0, sizeof(application));
  application.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  application.pApplicationName = "kiln";
  application.pEngineName = "kiln";
  application.apiVersion = VK_API_VERSION_1_0;
  VkInstanceCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pNext = request.next;
  info.pApplicationInfo = &application;
  info.enabledLayerCount = request.layer_count;
  info.ppEnabledLayerNames = request.layers;
  info.enabledExtensionCount = request.extension_count;
  info.ppEnabledExtensionNames = request.extensions;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreateInstance", instance->loader.vkCreateInstance(&info, NULL, &instance->instance));
  KILN_RETURN_IF_ERROR(kiln_vulkan_loader_load_instance(&instance->loader, instance->instance));
  if (!options->message_callback) return NULL;
  PFN_vkVoidFunction create = instance->loader.vkGetInstanceProcAddr(
      instance->instance, "vkCreateDebugUtilsMessengerEXT");
  PFN_vkVoidFunction destroy = instance->loader.vkGetInstanceProcAddr(
      instance->instance, "vkDestroyDebugUtilsMessengerEXT");
  if (!create || !destroy) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "vulkan: entry point vkCreateDebugUtilsMessengerEXT not found");
  }
  PFN_vkCreateDebugUtilsMessengerEXT create_messenger;
  memcpy(&create_messenger, &create, sizeof(create));
  memcpy(&instance->destroy_messenger, &destroy, sizeof(destroy));
  request.messenger.pNext = NULL;
  return kiln_vulkan_result_status(
      create_messenger(instance->instance, &request.messenger, NULL, &instance->messenger),
      "vkCreateDebugUtilsMessengerEXT");
}

// Sets *out_family to the first queue family of `device` with compute, or
// UINT32_MAX.
static kiln_status_t kiln_vulkan_compute_family(const kiln_vulkan_loader_t* loader,
                                                VkPhysicalDevice device, uint32_t* out_family,
                                                uint32_t* out_timestamp_bits) {
  *out_family = UINT32_MAX;
  *out_timestamp_bits = 0;
  uint32_t count = 0;
  loader->vkGetPhysicalDeviceQueueFamilyProperties(device, &count, NULL);
  VkQueueFamilyProperties* families = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &families));
  loader->vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families);
  for (uint32_t i = 0; i < count && *out_family == UINT32_MAX; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) {
      *out_family = i;
      *out_timestamp_bits = families[i].timestampValidBits;
    }
  }
  free(families);
  return NULL;
}

// Fills instance->devices with the physical devices that have a compute queue.
static kiln_status_t kiln_vulkan_instance_list_devices(kiln_vulkan_instance_t* instance) {
  const kiln_vulkan_loader_t* loader = &instance->loader;
  uint32_t count = 0;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkEnumeratePhysicalDevices",
      loader->vkEnumeratePhysicalDevices(instance->instance, &count, NULL));
  VkPhysicalDevice* handles = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &handles));
  kiln_status_t status = kiln_vulkan_result_status(
      loader->vkEnumeratePhysicalDevices(instance->instance, &count, handles),
      "vkEnumeratePhysicalDevices");
  if (!status) status = kiln_calloc_array(count, &instance->devices);
  for (uint32_t i = 0; !status && i < count; ++i) {
    uint32_t family = UINT32_MAX, timestamp_bits = 0;
    status = kiln_vulkan_compute_family(loader, handles[i], &family, &timestamp_bits);
    if (status || family == UINT32_MAX) continue;
    kiln_vulkan_physical_device_t* device = &instance->devices[instance->device_count++];
    device->handle = handles[i];
    device->queue_family_index = family;
    device->timestamp_valid_bits = timestamp_bits;
    loader->vkGetPhysicalDeviceProperties(handles[i], &device->properties);
  }
  free(handles);
  return status;
}

kiln_status_t kiln_vulkan_instance_create(const kiln_vulkan_instance_options_t* options,
                                          kiln_vulkan_instance_t** out_instance) {
  kiln_vulkan_instance_options_t defaults;
  memset(&defaults, 0, sizeof(defaults));
  if (!options) options = &defaults;
  if (!out_instance) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: NULL out_instance");
  }
  if ((uint32_t)options->validation > KILN_VULKAN_VALIDATION_SYNCHRONIZATION) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: unknown validation level %u",
                            (uint32_t)options->validation);
  }
  kiln_vulkan_instance_t* instance = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &instance));
  instance->message_callback = options->message_callback;
  instance->message_user_data = options->message_user_data;
  kiln_status_t status = kiln_vulkan_loader_open(options->library_name, &instance->loader);
  if (!status) status = kiln_vulkan_instance_init(instance, options);
  if (!status) status = kiln_vulkan_instance_list_devices(instance);
  if (status) {
    kiln_vulkan_instance_free(instance);
    return kiln_status_annotate(status, "vulkan: creating the instance");
  }
  *out_instance = instance;
  return NULL;
}

void kiln_vulkan_instance_free(kiln_vulkan_instance_t* instance) {
  if (!instance) return;
  if (instance->wedged) {
    // A device of it may still run work: keep the instance, its messenger
    // and libvulkan (the process exit reclaims them).
    free(instance->devices);
    free(instance);
    return;
  }
  if (instance->messenger != VK_NULL_HANDLE) {
    instance->destroy_messenger(instance->instance, instance->messenger, NULL);
  }
  if (instance->instance != VK_NULL_HANDLE && instance->loader.vkDestroyInstance) {
    instance->loader.vkDestroyInstance(instance->instance, NULL);
  }
  kiln_vulkan_loader_close(&instance->loader);
  free(instance->devices);
  free(instance);
}

uint32_t kiln_vulkan_instance_device_count(const kiln_vulkan_instance_t* instance) {
  return instance ? instance->device_count : 0;
}

// Checks that `index` names one of the instance's devices.
static kiln_status_t kiln_vulkan_check_device_index(const kiln_vulkan_instance_t* instance,
                                                    uint32_t index) {
  if (!instance) return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: NULL instance");
  if (instance->device_count == 0) {
    return kiln_make_status(KILN_UNSUPPORTED, "vulkan: no device with a compute queue");
  }
  if (index >= instance->device_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "vulkan: device index %u out of range (%u devices with a compute "
                            "queue)",
                            index, instance->device_count);
  }
  return NULL;
}

kiln_status_t kiln_vulkan_instance_device_properties(
    const kiln_vulkan_instance_t* instance, uint32_t index,
    const VkPhysicalDeviceProperties** out_properties) {
  KILN_RETURN_IF_ERROR(kiln_vulkan_check_device_index(instance, index));
  *out_properties = &instance->devices[index].properties;
  return NULL;
}

// The optional features `wanted` (KILN_VULKAN_FEATURE_* bits), or
// KILN_UNSUPPORTED naming the first one the device lacks.
static kiln_status_t kiln_vulkan_device_features(const kiln_vulkan_device_t* device, uint32_t wanted,
                                                 VkPhysicalDeviceFeatures* out_features) {
  VkPhysicalDeviceFeatures supported;
  memset(&supported, 0, sizeof(supported));
  device->instance->loader.vkGetPhysicalDeviceFeatures(device->physical->handle, &supported);
  memset(out_features, 0, sizeof(*out_features));
  if (wanted & ~(KILN_VULKAN_FEATURE_INT64 | KILN_VULKAN_FEATURE_FLOAT64)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: unknown feature bits 0x%x", wanted);
  }
  if ((wanted & KILN_VULKAN_FEATURE_INT64) && !supported.shaderInt64) {
    return kiln_make_status(KILN_UNSUPPORTED, "vulkan: the device lacks shaderInt64 (int64 tensors)");
  }
  if ((wanted & KILN_VULKAN_FEATURE_FLOAT64) && !supported.shaderFloat64) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "vulkan: the device lacks shaderFloat64 (float64 tensors)");
  }
  // Bundle shaders are untrusted: with robust buffer access an index past a
  // binding reads zero / writes nowhere instead of touching other memory
  // (on a CPU device such as lavapipe, the process's own heap). Every
  // Vulkan 1.0 device supports it.
  out_features->robustBufferAccess = supported.robustBufferAccess;
  out_features->shaderInt64 = (wanted & KILN_VULKAN_FEATURE_INT64) ? VK_TRUE : VK_FALSE;
  out_features->shaderFloat64 = (wanted & KILN_VULKAN_FEATURE_FLOAT64) ? VK_TRUE : VK_FALSE;
  return NULL;
}

// Creates the VkDevice, its queue, command pool and transfer fence.
static kiln_status_t kiln_vulkan_device_init(kiln_vulkan_device_t* device, uint32_t features) {
  const kiln_vulkan_loader_t* loader = &device->instance->loader;
  VkPhysicalDeviceFeatures enabled;
  KILN_RETURN_IF_ERROR(kiln_vulkan_device_features(device, features, &enabled));
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info;
  memset(&queue_info, 0, sizeof(queue_info));
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = device->physical->queue_family_index;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo info;
  memset(&info, 0, sizeof(info));
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.pEnabledFeatures = &enabled;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreateDevice",
      loader->vkCreateDevice(device->physical->handle, &info, NULL, &device->device));
  KILN_RETURN_IF_ERROR(kiln_vulkan_loader_load_device(loader, device->device, &device->fn));
  device->fn.vkGetDeviceQueue(device->device, queue_info.queueFamilyIndex, 0, &device->queue);
  VkCommandPoolCreateInfo pool_info;
  memset(&pool_info, 0, sizeof(pool_info));
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.queueFamilyIndex = queue_info.queueFamilyIndex;
  KILN_VULKAN_RETURN_IF_FAILED(
      "vkCreateCommandPool",
      device->fn.vkCreateCommandPool(device->device, &pool_info, NULL, &device->command_pool));
  return kiln_vulkan_device_create_fence(device, &device->transfer_fence);
}

kiln_status_t kiln_vulkan_device_create(kiln_vulkan_instance_t* instance,
                                        const kiln_vulkan_device_options_t* options,
                                        kiln_vulkan_device_t** out_device) {
  kiln_vulkan_device_options_t defaults;
  memset(&defaults, 0, sizeof(defaults));
  if (!options) options = &defaults;
  if (!out_device) return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: NULL out_device");
  KILN_RETURN_IF_ERROR(kiln_vulkan_check_device_index(instance, options->physical_device_index));
  kiln_vulkan_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &device));
  device->instance = instance;
  device->physical = &instance->devices[options->physical_device_index];
  device->limits = &device->physical->properties.limits;
  device->transfer_timeout_ns = options->transfer_timeout_ns
                                    ? options->transfer_timeout_ns
                                    : KILN_VULKAN_DEFAULT_TRANSFER_TIMEOUT_NS;
  instance->loader.vkGetPhysicalDeviceMemoryProperties(device->physical->handle,
                                                       &device->memory);
  kiln_status_t status = kiln_vulkan_device_init(device, options->features);
  if (status) {
    kiln_vulkan_device_free(device);
    return kiln_status_annotate(status, "vulkan: creating a device on '%.256s'",
                                instance->devices[options->physical_device_index]
                                    .properties.deviceName);
  }
  *out_device = device;
  return NULL;
}

void kiln_vulkan_device_mark_wedged(kiln_vulkan_device_t* device) {
  device->wedged = 1;
  device->instance->wedged = 1;
}

void kiln_vulkan_device_free(kiln_vulkan_device_t* device) {
  if (!device) return;
  const kiln_vulkan_device_functions_t* fn = &device->fn;
  if (device->wedged) {
    // Destroying objects the device may still use is undefined, and waiting
    // for it may never end: leak the device (the process exit or the
    // driver's watchdog reclaims it).
    free(device);
    return;
  }
  if (device->device != VK_NULL_HANDLE && fn->vkDestroyDevice) {
    if (device->command_pool != VK_NULL_HANDLE) {  // every entry point was loaded
      fn->vkDeviceWaitIdle(device->device);
      if (device->transfer_fence != VK_NULL_HANDLE) {
        fn->vkDestroyFence(device->device, device->transfer_fence, NULL);
      }
      fn->vkDestroyCommandPool(device->device, device->command_pool, NULL);
    }
    fn->vkDestroyDevice(device->device, NULL);
  } else if (device->device != VK_NULL_HANDLE) {
    // Loading the device entry points failed: find vkDestroyDevice alone.
    PFN_vkVoidFunction destroy = device->instance->loader.vkGetDeviceProcAddr(
        device->device, "vkDestroyDevice");
    PFN_vkDestroyDevice destroy_device = NULL;
    memcpy(&destroy_device, &destroy, sizeof(destroy));
    if (destroy_device) destroy_device(device->device, NULL);
  }
  free(device);
}
