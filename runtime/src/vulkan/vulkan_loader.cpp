// libvulkan through dlopen, entry-point tables and VkResult statuses; see
// vulkan_loader.h.
#include "vulkan/vulkan_loader.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

// An entry point to resolve: its name and where its pointer goes.
typedef struct kiln_vulkan_entry_t {
  const char* name;  // e.g. "vkCreateInstance"
  size_t offset;     // offset of its PFN_ field in the table it is loaded into
} kiln_vulkan_entry_t;

#define KILN_VULKAN_LOADER_ENTRY(name) {#name, offsetof(kiln_vulkan_loader_t, name)},
#define KILN_VULKAN_DEVICE_ENTRY(name) {#name, offsetof(kiln_vulkan_device_functions_t, name)},

static const kiln_vulkan_entry_t kiln_vulkan_global_entries[] = {
    KILN_VULKAN_GLOBAL_FUNCTIONS(KILN_VULKAN_LOADER_ENTRY)};
static const kiln_vulkan_entry_t kiln_vulkan_instance_entries[] = {
    KILN_VULKAN_INSTANCE_FUNCTIONS(KILN_VULKAN_LOADER_ENTRY)};
static const kiln_vulkan_entry_t kiln_vulkan_device_entries[] = {
    KILN_VULKAN_DEVICE_FUNCTIONS(KILN_VULKAN_DEVICE_ENTRY)};

#define KILN_VULKAN_COUNT(array) (sizeof(array) / sizeof((array)[0]))

// Resolves `count` entries into `table`: through vkGetDeviceProcAddr when
// `get_device` is set, else through vkGetInstanceProcAddr(instance, ...).
static kiln_status_t kiln_vulkan_resolve(const kiln_vulkan_entry_t* entries, size_t count,
                                         PFN_vkGetInstanceProcAddr get_instance,
                                         VkInstance instance,
                                         PFN_vkGetDeviceProcAddr get_device, VkDevice device,
                                         void* table) {
  for (size_t i = 0; i < count; ++i) {
    PFN_vkVoidFunction function = get_device ? get_device(device, entries[i].name)
                                             : get_instance(instance, entries[i].name);
    if (!function) {
      return kiln_make_status(KILN_UNSUPPORTED, "vulkan: entry point %s not found",
                              entries[i].name);
    }
    memcpy((char*)table + entries[i].offset, &function, sizeof(function));
  }
  return NULL;
}

kiln_status_t kiln_vulkan_loader_open(const char* library_name,
                                      kiln_vulkan_loader_t* out_loader) {
  memset(out_loader, 0, sizeof(*out_loader));
  const char* names[2] = {"libvulkan.so.1", "libvulkan.so"};
  size_t name_count = 2;
  if (library_name) {
    names[0] = library_name;
    name_count = 1;
  }
  for (size_t i = 0; i < name_count && !out_loader->library; ++i) {
    out_loader->library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (!out_loader->library) {
    const char* error = dlerror();
    return kiln_make_status(KILN_UNSUPPORTED, "vulkan: cannot load %s (%s)",
                            library_name ? library_name : "libvulkan.so.1 or libvulkan.so",
                            error ? error : "dlopen failed");
  }
  void* symbol = dlsym(out_loader->library, "vkGetInstanceProcAddr");
  kiln_status_t status = NULL;
  if (!symbol) {
    status = kiln_make_status(KILN_UNSUPPORTED,
                              "vulkan: %s has no vkGetInstanceProcAddr",
                              library_name ? library_name : "libvulkan");
  } else {
    memcpy(&out_loader->vkGetInstanceProcAddr, &symbol, sizeof(symbol));
    status = kiln_vulkan_resolve(kiln_vulkan_global_entries,
                                 KILN_VULKAN_COUNT(kiln_vulkan_global_entries),
                                 out_loader->vkGetInstanceProcAddr, VK_NULL_HANDLE, NULL,
                                 VK_NULL_HANDLE, out_loader);
  }
  if (status) kiln_vulkan_loader_close(out_loader);
  return status;
}

kiln_status_t kiln_vulkan_loader_load_instance(kiln_vulkan_loader_t* loader,
                                               VkInstance instance) {
  return kiln_vulkan_resolve(kiln_vulkan_instance_entries,
                             KILN_VULKAN_COUNT(kiln_vulkan_instance_entries),
                             loader->vkGetInstanceProcAddr, instance, NULL, VK_NULL_HANDLE,
                             loader);
}

kiln_status_t kiln_vulkan_loader_load_device(const kiln_vulkan_loader_t* loader,
                                             VkDevice device,
                                             kiln_vulkan_device_functions_t* out_functions) {
  kiln_status_t status = kiln_vulkan_resolve(
      kiln_vulkan_device_entries, KILN_VULKAN_COUNT(kiln_vulkan_device_entries), NULL,
      VK_NULL_HANDLE, loader->vkGetDeviceProcAddr, device, out_functions);
  if (status) memset(out_functions, 0, sizeof(*out_functions));  // all or nothing
  return status;
}

void kiln_vulkan_loader_close(kiln_vulkan_loader_t* loader) {
  if (!loader) return;
  if (loader->library) dlclose(loader->library);
  memset(loader, 0, sizeof(*loader));
}

// The VkResult values kiln_vulkan_result_name knows.
#define KILN_VULKAN_RESULTS(X)                                                         \
  X(VK_SUCCESS) X(VK_NOT_READY) X(VK_TIMEOUT) X(VK_EVENT_SET) X(VK_EVENT_RESET)        \
  X(VK_INCOMPLETE) X(VK_ERROR_OUT_OF_HOST_MEMORY) X(VK_ERROR_OUT_OF_DEVICE_MEMORY)     \
  X(VK_ERROR_INITIALIZATION_FAILED) X(VK_ERROR_DEVICE_LOST) X(VK_ERROR_MEMORY_MAP_FAILED) \
  X(VK_ERROR_LAYER_NOT_PRESENT) X(VK_ERROR_EXTENSION_NOT_PRESENT)                      \
  X(VK_ERROR_FEATURE_NOT_PRESENT) X(VK_ERROR_INCOMPATIBLE_DRIVER)                      \
  X(VK_ERROR_TOO_MANY_OBJECTS) X(VK_ERROR_FORMAT_NOT_SUPPORTED)                        \
  X(VK_ERROR_FRAGMENTED_POOL) X(VK_ERROR_UNKNOWN) X(VK_ERROR_OUT_OF_POOL_MEMORY)       \
  X(VK_ERROR_INVALID_EXTERNAL_HANDLE) X(VK_ERROR_FRAGMENTATION)                        \
  X(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) X(VK_PIPELINE_COMPILE_REQUIRED)           \
  X(VK_ERROR_INVALID_SHADER_NV)

const char* kiln_vulkan_result_name(VkResult result) {
#define KILN_VULKAN_RESULT_CASE(name) \
  case name:                          \
    return #name;
  switch (result) {
    KILN_VULKAN_RESULTS(KILN_VULKAN_RESULT_CASE)
    default:
      return "VK_RESULT_UNKNOWN";
  }
#undef KILN_VULKAN_RESULT_CASE
}

kiln_status_t kiln_vulkan_result_status(VkResult result, const char* call) {
  if (result == VK_SUCCESS) return NULL;
  kiln_status_code_t code = KILN_INTERNAL;
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      code = KILN_OUT_OF_MEMORY;
      break;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      code = KILN_UNSUPPORTED;
      break;
    case VK_ERROR_INVALID_SHADER_NV:
      code = KILN_INVALID_BUNDLE;
      break;
    default:
      break;
  }
  return kiln_make_status(code, "%s failed: %s (%d)", call, kiln_vulkan_result_name(result),
                          (int)result);
}
