// The device options of the commands that run a model (run, bench, profile,
// inspect --profile-run):
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

void AddDeviceOptions(kiln_cli::OptionTable* table) {
  static const char* const kValidationValues[] = {"1", "on", "sync", "0", "off", nullptr};
  using kiln_cli::Arity;
  table->push_back({kOptDevice, "--device", Arity::kValue, "auto|cpu|vulkan",
                    "where the session runs (default auto: what the bundle was compiled for)"});
  table->push_back({kOptVulkanDevice, "--vulkan-device", Arity::kValue, "N",
                    "Vulkan physical device N (default: the first discrete GPU, else\n"
                    "integrated, virtual, CPU)"});
  table->push_back({kOptValidation, "--validation", Arity::kOptionalValue, "sync",
                    "the Vulkan validation layer (=sync: with its synchronization\n"
                    "checks; also 1, on, 0, off); any message it reports fails the\n"
                    "command. Default: $KILN_VULKAN_VALIDATION (1, sync or 0)",
                    kValidationValues});
}

int ParseDeviceOption(int id, const char* value, DeviceOptions* out) {
  switch (id) {
    case kOptDevice:
      if (!strcmp(value, "auto")) out->device = KILN_DEVICE_AUTO;
      else if (!strcmp(value, "cpu")) out->device = KILN_DEVICE_CPU;
      else if (!strcmp(value, "vulkan")) out->device = KILN_DEVICE_VULKAN;
      else return UsageError("--device needs auto, cpu or vulkan (got '%s')", value);
      return kContinue;
    case kOptVulkanDevice: {
      uint64_t index = 0;
      if (!ParseCount(value, 1u << 20, &index)) return UsageError("--vulkan-device needs a device index");
      out->vulkan_device = (uint32_t)index + 1;
      return kContinue;
    }
    case kOptValidation:
      if (!ParseValidation(value ? value : "1", &out->validation)) {
        return UsageError("--validation takes no value or one of 1, on, sync, 0, off (got '%s')", value);
      }
      return kContinue;
  }
  return UsageError("internal: option %d is not a device option", id);
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
