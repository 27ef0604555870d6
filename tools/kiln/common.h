// Shared helpers of the kiln tool's subcommands: errors and usage, the
// command line (cli_options.h tables), the model and session the commands
// open, their inputs.
#ifndef KILN_TOOLS_KILN_COMMON_H_
#define KILN_TOOLS_KILN_COMMON_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli_options.h"
#include "kiln/kiln.hpp"
#include "npy.h"

namespace kiln_tool {

// Exit statuses.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // a runtime or file error: "kiln: error: ..."
constexpr int kExitUsage = 2;  // bad command line
// Not an exit status: ParseCommandArgs' "go on with the command".
constexpr int kContinue = -1;

// A subcommand's --help: "usage: kiln NAME SYNOPSIS", the description, the options.
struct CommandHelp {
  const char* name;         // "run"
  const char* synopsis;     // "MODEL.kiln --input NAME=FILE.npy ... [options]"
  const char* description;  // a paragraph, lines ending in '\n'
};
extern const CommandHelp kRunHelp, kInspectHelp, kBenchHelp, kProfileHelp, kRpcServerHelp;

// The command whose usage a UsageError names (main sets it; nullptr: none).
void SetCurrentCommand(const CommandHelp* command);

// Prints "kiln: error: <message>" to stderr and returns kExitError.
int Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints "kiln: [COMMAND: ]<message>" and the command's usage line to stderr
// and returns kExitUsage.
int UsageError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Fail() with the status's message.
int FailStatus(const kiln::Status& status);

// Parses a non-negative integer option value; false if malformed.
bool ParseCount(const char* text, uint64_t max, uint64_t* out);

// "float32[1,3,224,224]"
std::string DescribeTensor(const kiln_tensor_info_t& info);

double NowMs();
uint64_t NowNs();  // CLOCK_MONOTONIC, the clock libkiln's timings use
double Median(std::vector<double> values);

// Option ids of every subcommand's table (cli_options.h Option::id).
enum OptionId {
  kOptHelp,
  // Shared by run, bench, profile and inspect --profile-run (args.cpp).
  kOptThreads, kOptIterations, kOptInput, kOptMaxArena, kOptTrustedKey,
  kOptDevice, kOptVulkanDevice, kOptValidation,  // device.cpp
  // run
  kOptOutputDir, kOptTop,
  // bench
  kOptWarmup, kOptProfile, kOptStartup, kOptRpc, kOptRpcToken, kOptRpcTimeout,
  // profile
  kOptOutput, kOptLayers,
  // inspect
  kOptJson, kOptDot, kOptSvg, kOptProfileTrace, kOptProfileRun,
};

// --device, --vulkan-device, --validation (device.cpp).
struct DeviceOptions {
  uint32_t device = 0;         // kiln_device_kind_t
  uint32_t vulkan_device = 0;  // 0: automatic; i + 1: device i
  uint32_t validation = 0;     // kiln_vulkan_validate_t (default: $KILN_VULKAN_VALIDATION)
  DeviceOptions();
  void Apply(kiln_session_options_t* options) const;
};
// Appends the device options to `table`.
void AddDeviceOptions(kiln_cli::OptionTable* table);
// Takes a device option's value: kContinue, or kExitUsage after a usage error.
int ParseDeviceOption(int id, const char* value, DeviceOptions* out);
// kExitOk, or Fail() when the validation layer reported anything.
int CheckValidationMessages();
// Prints "device=NAME" for sessions that do not run on the CPU.
void PrintDevice(const kiln::Session& session);

// The command line of the commands that run a model (args.cpp): the model,
// --threads, --iterations, --input NAME=FILE.npy, --max-arena and the device options.
struct CommandArgs {
  const char* model_path = nullptr;                         // the positional MODEL.kiln
  uint64_t threads = 1;                                     // --threads N
  uint64_t iterations = 1;                                  // --iterations N (the command's default before parsing)
  std::vector<std::pair<std::string, std::string>> inputs;  // --input NAME=FILE.npy, in order
  uint64_t max_arena_bytes = 0;                             // --max-arena BYTES (0: the runtime's default)
  std::vector<uint8_t> trusted_keys;                        // --trusted-key HEX: 32 bytes each (repeatable)
  DeviceOptions device;                                     // --device, --vulkan-device, --validation
  bool session_options_given = false;                       // any of the above but the model and --trusted-key
};
// Appends the Ed25519 public key in `value` (64 hex digits) to *keys:
// kContinue, or kExitUsage after a usage error.
int ParseTrustedKey(const char* value, std::vector<uint8_t>* keys);
// The shared options' table; `iterations_help` describes --iterations.
kiln_cli::OptionTable SessionOptionTable(const char* iterations_help);
// One command's own option (from its table): kContinue when taken,
// kExitUsage after printing a usage error.
using CommandOption = std::function<int(const kiln_cli::Option& option, const char* value)>;
// Parses argv against `own` (the command's options) followed by the shared
// ones and --help. kContinue: go on; kExitOk after printing --help to
// stdout; kExitUsage after a usage error (unknown option, missing MODEL.kiln, ...).
int ParseCommandArgs(const CommandHelp& command, const kiln_cli::OptionTable& own,
                     const char* iterations_help, int argc, char** argv,
                     const CommandOption& handle, CommandArgs* out);
// Prints the command's --help (usage, description, `table`) to stdout.
void PrintCommandHelp(const CommandHelp& command, const kiln_cli::OptionTable& table);
// The model load options args describe (--trusted-key) with `flags`.
void LoadOptions(const CommandArgs& args, uint32_t flags, kiln_model_load_options_t* out);
// Loads args.model_path. kExitOk, or Fail() with the status.
int OpenModel(const CommandArgs& args, kiln::Model* model);
// "none", or "ed25519 by KEYHEX (verified against a trusted key)" / "(not
// checked: no --trusted-key)": how the bundle is signed.
std::string DescribeSignature(const kiln_model_info_t& info);
// The session options args describe (threads, device).
void SessionOptions(const CommandArgs& args, kiln_session_options_t* out);
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
// Every input's bytes: from its --input file, or pseudo-random (a fixed
// seed: floats in [-1, 1), integers in [0, 10), strings of one digit).
// `given` as ReadInputs'.
int PrepareInputs(const kiln::Model& model, const CommandArgs& args,
                  std::vector<NpyArray>* inputs, std::vector<bool>* given);
// Copies `inputs` into the session (before every run: the memory plan may
// reuse their space).
kiln::Status SetInputs(kiln::Session* session, const std::vector<NpyArray>& inputs);

int CmdRun(int argc, char** argv);
int CmdInspect(int argc, char** argv);
int CmdBench(int argc, char** argv);
int CmdProfile(int argc, char** argv);
int CmdRpcServer(int argc, char** argv);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_COMMON_H_
