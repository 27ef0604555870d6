// Shared helpers of the kiln tool's subcommands.
#ifndef KILN_TOOLS_KILN_COMMON_H_
#define KILN_TOOLS_KILN_COMMON_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln_tool {

// Exit statuses.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // a runtime or file error: "kiln: error: ..."
constexpr int kExitUsage = 2;  // bad command line

// Prints "kiln: error: <message>" to stderr and returns kExitError.
int Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints "kiln: <message>" and a usage hint to stderr and returns kExitUsage.
int UsageError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Fail() with the status's message.
int FailStatus(const kiln::Status& status);

// Parses a non-negative integer option value; false if malformed.
bool ParseCount(const char* text, uint64_t max, uint64_t* out);

// "float32[1,3,224,224]"
std::string DescribeTensor(const kiln_tensor_info_t& info);

double NowMs();
double Median(std::vector<double> values);

// --device, --vulkan-device, --validation of run and bench (device.cpp).
struct DeviceOptions {
  uint32_t device = 0;         // kiln_device_kind_t
  uint32_t vulkan_device = 0;  // 0: automatic; i + 1: device i
  uint32_t validation = 0;     // kiln_vulkan_validate_t (default: $KILN_VULKAN_VALIDATION)
  DeviceOptions();
  void Apply(kiln_session_options_t* options) const;
};
// Consumes argv[*i] (and its value) when it is a device option: returns 1;
// 0 when it is not one; kExitUsage after printing a usage error.
int ParseDeviceOption(int argc, char** argv, int* i, DeviceOptions* out);
// kExitOk, or Fail() when the validation layer reported anything.
int CheckValidationMessages();
// Prints "device=NAME" for sessions that do not run on the CPU.
void PrintDevice(const kiln::Session& session);

int CmdRun(int argc, char** argv);
int CmdInspect(int argc, char** argv);
int CmdBench(int argc, char** argv);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_COMMON_H_
