// kiln profile MODEL.kiln [--threads N] [--device D] [--iterations K]
//                         [--input NAME=FILE.npy ...] [--top K] [-o TRACE.json]
// Loads the model, creates its session and runs it once (the start-up),
// then --iterations runs with every dispatch timed (profiling.cpp). Writes
// the Chrome/Perfetto trace with -o and prints the start-up line and the
// slowest layers (layers.cpp).
#include <stdio.h>

#include <fstream>

#include "profiling.h"

namespace kiln_tool {

const CommandHelp kProfileHelp = {
    "profile", "MODEL.kiln [options] [-o TRACE.json]",
    "Loads the model, runs it once (the start-up) and then --iterations times with\n"
    "every dispatch timed. Writes a Chrome/Perfetto trace (-o: the start-up stages,\n"
    "every run and every dispatch; open it in https://ui.perfetto.dev or\n"
    "chrome://tracing) and prints the layers (dispatches grouped by the graph nodes\n"
    "they implement) that take the most time, with their share and GFLOP/s (Conv,\n"
    "Gemm and MatMul; '-' for the others). Inputs: --input files, else fixed\n"
    "pseudo-random values.\n"};

int CmdProfile(int argc, char** argv) {
  std::string trace_path;
  uint64_t top = 20;
  CommandArgs args;
  args.iterations = 10;
  using kiln_cli::Arity;
  const kiln_cli::OptionTable own = {
      {kOptOutput, "-o", Arity::kValue, "TRACE.json", "write the trace to TRACE.json"},
      {kOptLayers, "--top", Arity::kValue, "K", "print the K slowest layers (default 20; 0: all)"},
  };
  auto handle = [&](const kiln_cli::Option& option, const char* value) -> int {
    if (option.id == kOptOutput) {
      if (!*value) return UsageError("-o needs a file name");
      trace_path = value;
    } else if (!ParseCount(value, 1u << 30, &top)) {
      return UsageError("--top needs a count");
    }
    return kContinue;
  };
  int result = ParseCommandArgs(kProfileHelp, own, "profiled runs after the first (default 10)", argc, argv,
                                handle, &args);
  if (result != kContinue) return result;

  kiln::Model model;
  Measurement measurement;
  result = Measure(args, &model, &measurement);
  if (result != kExitOk) return result;
  ModelContents contents;
  kiln::Status status = ReadModelContents(model, &contents);
  if (!status.ok()) return FailStatus(status);

  std::vector<double> run_ms;
  for (const RunTiming& run : measurement.runs) run_ms.push_back((double)(run.end_ns - run.start_ns) / 1e6);
  printf("profile: %s, device=%s threads=%u, %zu profiled runs: median run %.4f ms\n", args.model_path,
         measurement.device.c_str(), measurement.threads, measurement.runs.size(), Median(run_ms));
  PrintStartup("startup", measurement.stats, 0);
  if (!trace_path.empty()) {
    std::string trace = TraceJson(contents, measurement);
    std::ofstream file(trace_path, std::ios::binary);
    file << trace;
    file.close();
    if (!file) return Fail("cannot write '%s'", trace_path.c_str());
    printf("trace: %s\n", trace_path.c_str());
  }
  PrintLayerTable(contents, DispatchMedianMs(measurement.runs, contents.dispatches.size()), (size_t)top);
  return CheckValidationMessages();
}

}  // namespace kiln_tool
