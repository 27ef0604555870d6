// The device options of `kiln run` and `kiln bench`:
//   --device auto|cpu|vulkan   where the session runs (default: the bundle's)
//   --vulkan-device N          Vulkan physical device N (default: the best kind)
//   --validation[=sync]        VK_LAYER_KHRONOS_validation (and its synchronization
//                              checks); also KILN_VULKAN_VALIDATION=1|sync in the
//                              environment. Every message it reports is printed
//                              and makes the command fail (exit 1).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

namespace kiln_tool {

namespace {

int g_validation_messages = 0;

void PrintVulkanMessage(void*, int severity, const char* message) {
  ++g_validation_messages;
  fprintf(stderr, "kiln: vulkan validation %s: %s\n", severity == 2 ? "error" : "warning", message);
}

bool ParseValidation(const char* text, uint32_t* out) {
  if (!strcmp(text, "1") || !strcmp(text, "on")) *out = KILN_VULKAN_VALIDATE_ON;
  else if (!strcmp(text, "sync")) *out = KILN_VULKAN_VALIDATE_SYNCHRONIZATION;
  else if (!strcmp(text, "0") || !strcmp(text, "off") || !*text) *out = KILN_VULKAN_VALIDATE_OFF;
  else return false;
  return true;
}

}  // namespace

DeviceOptions::DeviceOptions() {
  const char* env = getenv("KILN_VULKAN_VALIDATION");
  if (env && !ParseValidation(env, &validation)) {
    fprintf(stderr, "kiln: ignoring KILN_VULKAN_VALIDATION='%s' (use 1, sync or 0)\n", env);
  }
}

int ParseDeviceOption(int argc, char** argv, int* i, DeviceOptions* out) {
  const char* arg = argv[*i];
  const char* next = *i + 1 < argc ? argv[*i + 1] : nullptr;
  if (!strcmp(arg, "--device")) {
    if (!next) return UsageError("--device needs auto, cpu or vulkan");
    if (!strcmp(next, "auto")) out->device = KILN_DEVICE_AUTO;
    else if (!strcmp(next, "cpu")) out->device = KILN_DEVICE_CPU;
    else if (!strcmp(next, "vulkan")) out->device = KILN_DEVICE_VULKAN;
    else return UsageError("--device needs auto, cpu or vulkan (got '%s')", next);
    ++*i;
    return 1;
  }
  if (!strcmp(arg, "--vulkan-device")) {
    uint64_t index = 0;
    if (!ParseCount(next, 1u << 20, &index)) return UsageError("--vulkan-device needs a device index");
    out->vulkan_device = (uint32_t)index + 1;
    ++*i;
    return 1;
  }
  if (!strcmp(arg, "--validation") || !strncmp(arg, "--validation=", 13)) {
    if (!ParseValidation(arg[12] == '=' ? arg + 13 : "1", &out->validation)) {
      return UsageError("--validation takes no value or =sync");
    }
    return 1;
  }
  return 0;
}

void DeviceOptions::Apply(kiln_session_options_t* options) const {
  options->device = device;
  options->vulkan_device = vulkan_device;
  options->vulkan_validation = validation;
  if (validation) options->vulkan_message = PrintVulkanMessage;
}

int CheckValidationMessages() {
  if (g_validation_messages == 0) return kExitOk;
  return Fail("the Vulkan validation layer reported %d message(s) (see above)", g_validation_messages);
}

void PrintDevice(const kiln::Session& session) {
  const char* name = session.device_name();
  if (strcmp(name, "cpu") != 0) printf("device=%s\n", name);
}

}  // namespace kiln_tool
