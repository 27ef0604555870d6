// kilnc's command line: the options of a compilation, as one table shared by
// `kilnc MODEL.onnx -o OUT.kiln` (kilnc/main.cpp) and `kilnc tune`
// (kilnc/cmd_tune.cpp), and what each does to the compilation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli_options.h"
#include "driver/pipeline.h"

namespace kiln::kilnc {

enum OptionId {
  kOutput, kTarget, kVulkanFeatures, kVulkanSharedMemory, kKernels, kMaxArena, kInputShape, kDim, kInputValue, kSequenceLength, kStringBytes, kFreezeInput,
  kSignKey, kPrintPublicKey, kDumpAfter, kDumpGraphAfter, kDisableGraphPass, kDumpGraph, kReport, kListOperators,
  kVersion, kHelp, kTuningLog, kTuningThreads,
  // kilnc tune's own (kilnc/cmd_tune.cpp)
  kTuneLog, kTuneRpc, kTuneToken, kTuneTrials, kTuneTimeBudget, kTuneThreads, kTuneRepeats, kTuneKiln,
  kTuneList,
};


// What the options of a compilation say.
struct CommandLine {
  std::string input;              // MODEL.onnx
  std::string output;             // -o OUT.kiln
  std::string target = "host";    // --target
  std::string tuning_log;         // --tuning-log FILE (empty: none)
  int64_t tuning_threads = 0;     // --tuning-threads N: the log's measurements at N threads (0: its only count)
  kiln::CompileOptions options;   // everything else
};

// The compilation's option table; `storage` keeps the help texts built from the pass lists.
kiln_cli::OptionTable option_table(std::vector<std::string>* storage);
// A whole number in [lo, hi]; a user error naming `option` otherwise.
int64_t parse_count(const std::string& text, const char* option, int64_t lo, int64_t hi);
// "4096", "512M", "4G", "1T" (binary multiples); a user error otherwise.
uint64_t parse_bytes(const std::string& text, const char* option);
// Applies option `id` with `v` to the compilation. Values are checked here
// (user errors, exit 1); the parser has checked the command line's shape.
void apply_option(int id, const std::string& v, CommandLine* line);
// Parses argv[1..argc) against `table`: the one positional word is the
// model (line->input); each option goes to `handle` (its value, "" for a
// flag), which returns -1 to go on or an exit status to stop with. Returns
// -1 when all is parsed, 2 after a usage error (printed naming `command`,
// "kilnc" or "kilnc tune"), or what `handle` returned. User errors throw.
int parse_command_line(int argc, char** argv, const kiln_cli::OptionTable& table, const char* command,
                       CommandLine* line, const std::function<int(const kiln_cli::Option&, const std::string&)>& handle);
// Runs `body` and returns its exit status, or prints a thrown error the
// way kilnc does ("COMMAND: error: ..." and 1 for user errors, 3 for
// compiler bugs).
int run_reporting_errors(const char* command, const std::function<int()>& body);
// After parsing: the target, and the tuning log's points in `tuning` (which
// must outlive the compilation) when --tuning-log was given.
void finish_options(CommandLine* line, kiln::tune::Tuning* tuning);

}  // namespace kiln::kilnc
