// Shared helpers of the kiln tool's subcommands.
#ifndef KILN_TOOLS_KILN_COMMON_H_
#define KILN_TOOLS_KILN_COMMON_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.hpp"
#include "npy.h"

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

// The command line `kiln run` and `kiln bench` share (args.cpp): the model,
// --threads, --iterations, --input NAME=FILE.npy and the device options.
struct CommandArgs {
  const char* model_path = nullptr;                         // the positional MODEL.kiln
  uint64_t threads = 1;                                     // --threads N
  uint64_t iterations = 1;                                  // --iterations N (the command's default before parsing)
  std::vector<std::pair<std::string, std::string>> inputs;  // --input NAME=FILE.npy, in order
  DeviceOptions device;                                     // --device, --vulkan-device, --validation
};
// One command's own options: called with argv[*i] not being a shared one;
// returns 1 when it took it (moving *i past a value), 0 when it is not one
// of its options, kExitUsage after printing a usage error.
using CommandOption = std::function<int(int argc, char** argv, int* i)>;
// Parses argv for `command` ("run", "bench"): kExitOk, or kExitUsage after
// printing a usage error (unknown option, missing MODEL.kiln, ...).
int ParseCommandArgs(const char* command, int argc, char** argv, const CommandOption& own,
                     CommandArgs* out);
// Loads args.model_path. kExitOk, or Fail() with the status.
int OpenModel(const CommandArgs& args, kiln::Model* model);
// Creates the model's session with the threads and device options
// (`out_options`: the options used); prints "device=NAME" for sessions not
// on the CPU. kExitOk, or Fail() with the status.
int OpenSession(const CommandArgs& args, const kiln::Model& model,
                kiln_session_options_t* out_options, kiln::Session* session);
// Reads each --input file into the model input of that name, checking its
// dtype and shape: (*arrays)[i] for input i, (*given)[i] whether an --input
// named it. kExitOk, or Fail() naming the problem.
int ReadInputs(const kiln::Model& model, const CommandArgs& args, std::vector<NpyArray>* arrays,
               std::vector<bool>* given);

int CmdRun(int argc, char** argv);
int CmdInspect(int argc, char** argv);
int CmdBench(int argc, char** argv);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_COMMON_H_
