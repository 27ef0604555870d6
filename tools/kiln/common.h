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

int CmdRun(int argc, char** argv);
int CmdInspect(int argc, char** argv);
int CmdBench(int argc, char** argv);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_COMMON_H_
