// Shared by the Vulkan tests: finding Mesa's lavapipe among the devices.
#ifndef KILN_TESTS_RUNTIME_VULKAN_UTIL_H_
#define KILN_TESTS_RUNTIME_VULKAN_UTIL_H_

#include <doctest/doctest.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "vulkan/vulkan_device.h"

namespace kiln_test {

// A Vulkan test that cannot run says why and passes, except where the build
// knows lavapipe and the validation layer are installed
// (KILN_TEST_REQUIRE_VULKAN, set by tests/meson.build): then it fails, so a
// regression in instance creation cannot turn the suite green unseen.
inline void SkipOrFail(const std::string& why) {
  if (getenv("KILN_TEST_REQUIRE_VULKAN")) FAIL("Vulkan tests must run here but: " << why);
  MESSAGE("skipped: " << why);
}

// The index of lavapipe (the CPU device, "llvmpipe") in the instance's list.
inline bool FindLavapipe(const kiln_vulkan_instance_t* instance, uint32_t* out_index) {
  for (uint32_t i = 0; i < kiln_vulkan_instance_device_count(instance); ++i) {
    const VkPhysicalDeviceProperties* properties = nullptr;
    if (kiln_vulkan_instance_device_properties(instance, i, &properties)) return false;
    if (properties->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU || strstr(properties->deviceName, "llvmpipe")) {
      *out_index = i;
      return true;
    }
  }
  return false;
}

}  // namespace kiln_test

#endif  // KILN_TESTS_RUNTIME_VULKAN_UTIL_H_
