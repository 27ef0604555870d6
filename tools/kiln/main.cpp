// kiln: run, inspect, benchmark and profile Kiln bundles; measure them for
// a tuner (rpc-server).
//
//   kiln run MODEL.kiln --input NAME=FILE.npy ... [options]
//   kiln inspect MODEL.kiln [--json | --dot | --svg] [--profile TRACE.json | --profile-run]
//   kiln bench MODEL.kiln [options]
//   kiln profile MODEL.kiln [options] [-o TRACE.json]
//   kiln rpc-server [--port P] [--bind ADDR] [--token T] [options]
//   kiln --help | kiln COMMAND --help | kiln --version
// Every option takes its value as --opt=value or --opt value (tools/cli);
// each command's table of options is in its cmd_*.cpp, the shared ones in
// args.cpp and device.cpp.
//
// Errors: "kiln: error: ..." on stderr, exit 1; usage errors exit 2.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>

#include "common.h"
#include "contents.h"

namespace kiln_tool {

namespace {

const CommandHelp* g_command = nullptr;  // the command being parsed, for usage errors

struct Command {
  const CommandHelp* help;
  int (*run)(int argc, char** argv);
};
const Command kCommands[] = {
    {&kRunHelp, CmdRun},
    {&kInspectHelp, CmdInspect},
    {&kBenchHelp, CmdBench},
    {&kProfileHelp, CmdProfile},
    {&kRpcServerHelp, CmdRpcServer},
};

void PrintUsage(FILE* out) {
  fputs("usage: kiln COMMAND MODEL.kiln [options]\n\ncommands:\n", out);
  for (const Command& command : kCommands) {
    fprintf(out, "  kiln %s %s\n", command.help->name, command.help->synopsis);
  }
  fputs("\n  kiln COMMAND --help    a command's options\n"
        "  kiln --version         the runtime's version and ABI\n"
        "Options take their value as --opt=value or --opt value.\n", out);
}

}  // namespace

void SetCurrentCommand(const CommandHelp* command) { g_command = command; }

int Fail(const char* fmt, ...) {
  fputs("kiln: error: ", stderr);
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fputc('\n', stderr);
  return kExitError;
}

int UsageError(const char* fmt, ...) {
  fprintf(stderr, "kiln: %s%s", g_command ? g_command->name : "", g_command ? ": " : "");
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fputc('\n', stderr);
  if (g_command) {
    fprintf(stderr, "usage: kiln %s %s\n(kiln %s --help lists the options)\n", g_command->name,
            g_command->synopsis, g_command->name);
  } else {
    PrintUsage(stderr);
  }
  return kExitUsage;
}

int FailStatus(const kiln::Status& status) { return Fail("%s", status.message()); }

bool ParseCount(const char* text, uint64_t max, uint64_t* out) {
  if (!text || !*text) return false;
  uint64_t value = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    if (value > (max - (uint64_t)(*p - '0')) / 10) return false;
    value = value * 10 + (uint64_t)(*p - '0');
  }
  *out = value;
  return true;
}

std::string DescribeTensor(const kiln_tensor_info_t& info) { return kiln_dtype_name(info.dtype) + ShapeText(info); }

uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double NowMs() { return (double)NowNs() / 1e6; }

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace kiln_tool

int main(int argc, char** argv) {
  using namespace kiln_tool;
  if (argc < 2) return UsageError("missing command");
  const char* command = argv[1];
  int command_argc = argc - 2;
  char** command_argv = argv + 2;
  char help_flag[] = "--help";
  char* help_argv[] = {help_flag, nullptr};
  if (!strcmp(command, "help") && argc > 2) {  // kiln help COMMAND: kiln COMMAND --help
    command = argv[2];
    command_argc = 1;
    command_argv = help_argv;
  } else if (!strcmp(command, "-h") || !strcmp(command, "--help") || !strcmp(command, "help")) {
    PrintUsage(stdout);
    return kExitOk;
  }
  if (!strcmp(command, "--version")) {
    // The library actually loaded, and the header this kiln was built with.
    printf("kiln: libkiln %s, ABI %u (built with kiln.h %s, ABI %u)\n", kiln_version(),
           kiln_abi_version(), KILN_VERSION_STRING, (unsigned)KILN_ABI_VERSION);
    return kExitOk;
  }
  for (const Command& entry : kCommands) {
    if (strcmp(command, entry.help->name) != 0) continue;
    SetCurrentCommand(entry.help);
    return entry.run(command_argc, command_argv);
  }
  return UsageError("unknown command '%s'", command);
}
