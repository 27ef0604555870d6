// kilnc tune MODEL.onnx --log TUNE.jsonl [--rpc HOST:PORT] [--token T] [--trials N]
//            [--time-budget MIN] [--threads N] [--repeats N] [--kiln PATH] [compile options]
// kilnc tune MODEL.onnx --list-workloads [compile options]
// The command line of the tuner (driver/tuner.h, docs/tuning.md): the
// compilation's options (kilnc/options.h) plus its own.
#include "kilnc/cmd_tune.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli_options.h"
#include "driver/tuner.h"
#include "kilnc/options.h"
#include "support/diagnostics.h"

namespace kiln::kilnc {

namespace {

void usage(FILE* f, const kiln_cli::OptionTable& table) {
  fprintf(f,
          "usage: kilnc tune MODEL.onnx --log TUNE.jsonl [--rpc HOST:PORT] [options]\n"
          "Searches the schedules' choices for every workload of the model (CPU, or the\n"
          "GPU with --target=vulkan), measuring candidates on a kiln rpc-server (--rpc;\n"
          "without it, a local one started from the kiln tool beside kilnc), and\n"
          "appends every measurement to the log; then `kilnc MODEL.onnx -o OUT.kiln\n"
          "--tuning-log TUNE.jsonl` compiles the best. A log that already measured a\n"
          "workload (same target, kilnc version and threads) spares measuring it again\n"
          "(docs/tuning.md).\n\noptions:\n%s",
          kiln_cli::FormatOptions(table).c_str());
}

}  // namespace

int run_tune(int argc, char** argv) {
  using kiln_cli::Arity;
  std::vector<std::string> help_texts;
  kiln_cli::OptionTable table = {
      {kTuneLog, "--log", Arity::kValue, "FILE", "the tuning log: read first, then appended to (JSON lines)"},
      {kTuneRpc, "--rpc", Arity::kValue, "HOST:PORT",
       "measure on this kiln rpc-server (default: a local one on loopback)"},
      {kTuneToken, "--token", Arity::kValue, "T", "the server's token (default $KILN_RPC_TOKEN)"},
      {kTuneTrials, "--trials", Arity::kValue, "N", "measured points per workload at most (default 32)"},
      {kTuneTimeBudget, "--time-budget", Arity::kValue, "MIN",
       "start no new round after MIN minutes (default: no limit)"},
      {kTuneThreads, "--threads", Arity::kValue, "N", "threads of the measured sessions (default 1)"},
      {kTuneRepeats, "--repeats", Arity::kValue, "N", "runs per measurement; the fastest counts (default 5)"},
      {kTuneKiln, "--kiln", Arity::kValue, "PATH",
       "the kiln tool for a local server (default: beside kilnc, else $PATH)"},
      {kTuneList, "--list-workloads", Arity::kFlag, "",
       "print the workloads and their knobs (options, the hand-written choice\n"
       "marked *), measure nothing; --log is then optional"},
  };
  for (const kiln_cli::Option& o : option_table(&help_texts)) {
    if (o.id == kOutput || o.id == kTuningLog || o.id == kTuningThreads || o.id == kListOperators || o.id == kVersion ||
        o.id == kPrintPublicKey || o.id == kSignKey || o.id == kKernels) {
      continue;  // not a tuning's
    }
    table.push_back(o);
  }
  CommandLine line;
  TuneOptions tune;
  if (const char* env = getenv("KILN_RPC_TOKEN")) tune.token = env;
  return run_reporting_errors("kilnc tune", [&]() -> int {
    int status = parse_command_line(argc, argv, table, "kilnc tune", &line,
                                    [&](const kiln_cli::Option& option, const std::string& v) -> int {
      switch (option.id) {
        case kHelp: usage(stdout, table); return 0;
        case kTuneLog: tune.log_path = v; break;
        case kTuneRpc: tune.rpc = v; break;
        case kTuneToken: tune.token = v; break;
        case kTuneTrials: tune.trials = parse_count(v, "--trials", 1, 100000); break;
        case kTuneTimeBudget: tune.time_budget_s = 60.0 * (double)parse_count(v, "--time-budget", 1, 100000); break;
        case kTuneThreads: tune.threads = (uint32_t)parse_count(v, "--threads", 1, 256); break;
        case kTuneRepeats: tune.repeats = (uint32_t)parse_count(v, "--repeats", 1, 1000); break;
        case kTuneKiln: tune.kiln_tool = v; break;
        case kTuneList: tune.list_only = true; break;
        default: apply_option(option.id, v, &line); break;
      }
      return -1;
    });
    if (status >= 0) return status;
    if (line.input.empty() || (tune.log_path.empty() && !tune.list_only)) {
      fprintf(stderr, "kilnc tune: error: %s\n", line.input.empty() ? "missing MODEL.onnx" : "missing --log TUNE.jsonl");
      usage(stderr, table);
      return 2;
    }
    tune::Tuning unused;
    finish_options(&line, &unused);
    tune.compile = line.options;
    tune.progress = isatty(STDERR_FILENO);
    tune_model(line.input, tune, std::cout);
    return 0;
  });
}

}  // namespace kiln::kilnc
