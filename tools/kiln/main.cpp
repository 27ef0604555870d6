// kiln: run, inspect and benchmark Kiln bundles.
//
//   kiln run MODEL.kiln --input NAME=FILE.npy ... [--output-dir DIR] [--top K] [--iterations N]
//            [--threads N]
//   kiln inspect MODEL.kiln [--json]
//   kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W] [--profile] [--startup]
//              [--input NAME=FILE.npy ...]
//   (run and bench: [--device auto|cpu|vulkan] [--vulkan-device N] [--validation[=sync]];
//   their shared options are parsed in args.cpp)
//
// Errors: "kiln: error: ..." on stderr, exit 1; usage errors exit 2.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>

#include "common.h"

namespace kiln_tool {

static const char kUsage[] =
    "usage:\n"
    "  kiln run MODEL.kiln --input NAME=FILE.npy ... [--output-dir DIR] [--top K]\n"
    "           [--iterations N] [--threads N]\n"
    "  kiln inspect MODEL.kiln [--json]\n"
    "  kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W] [--profile]\n"
    "             [--startup]  (every start-up stage, and a second load: warm pipeline cache)\n"
    "             [--input NAME=FILE.npy ...]  (other inputs: fixed pseudo-random values)\n"
    "  --threads N: threads running each dispatch, the calling one included (default 1)\n"
    "  run and bench also take --device auto|cpu|vulkan (default: what the bundle was\n"
    "  compiled for), --vulkan-device N and --validation[=sync] (the Vulkan validation\n"
    "  layer; any message it reports fails the command; or KILN_VULKAN_VALIDATION=1|sync)\n";

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
  fputs("kiln: ", stderr);
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fputc('\n', stderr);
  fputs(kUsage, stderr);
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

std::string DescribeTensor(const kiln_tensor_info_t& info) {
  std::string text = kiln_dtype_name(info.dtype);
  text += '[';
  for (uint32_t d = 0; d < info.rank; ++d) {
    if (d) text += ',';
    text += std::to_string(info.shape[d]);
  }
  text += ']';
  return text;
}

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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
  if (!strcmp(command, "-h") || !strcmp(command, "--help") || !strcmp(command, "help")) {
    fputs(kUsage, stdout);
    return kExitOk;
  }
  if (!strcmp(command, "run")) return CmdRun(argc - 2, argv + 2);
  if (!strcmp(command, "inspect")) return CmdInspect(argc - 2, argv + 2);
  if (!strcmp(command, "bench")) return CmdBench(argc - 2, argv + 2);
  return UsageError("unknown command '%s'", command);
}
