// `kilnc tune`: searches the schedules' knobs (tune/space.h; CPU or Vulkan) of every
// workload of a model by measuring candidates on the device, through a
// `kiln rpc-server` (docs/rpc.md) -- a board's, or a local one the tuner
// starts. AutoTVM's loop, with one difference: a round compiles the whole
// model with one candidate for every workload still being tuned and times
// every dispatch in one run, so a round is a trial of each workload.
//
// Each round: propose a point per workload (the hand-written one first;
// then the best predicted by a cost model -- gradient-boosted trees on
// loop-extent and knob features, refit on every measurement, one per
// schedule -- among random points and neighbours of the best so far, with a
// share of random ones), compile, measure, append the results to the log.
// Workloads the log already measured for this target, kilnc version and
// thread count are not measured again. At the end the model is timed with
// the hand-written and the tuned points, alternately, and a summary printed
// (docs/tuning.md).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "driver/pipeline.h"

namespace kiln {

struct TuneOptions {
  CompileOptions compile;     // the model's compilation (target, shapes); its `tuning` is the tuner's own
  std::string log_path;       // --log: read first, then appended to
  std::string rpc;            // --rpc HOST:PORT; empty: a local server started from `kiln_tool`
  std::string token;          // the server's token (--token, $KILN_RPC_TOKEN)
  std::string kiln_tool;      // the kiln tool for a local server (empty: beside kilnc, else $PATH)
  int64_t trials = 32;        // --trials: measured points per workload at most
  double time_budget_s = 0;   // --time-budget: no new round after this long (0: none)
  uint32_t threads = 1;       // --threads: the session's threads on the device
  uint32_t repeats = 5;       // --repeats: runs per measurement (the fastest counts)
  uint64_t seed = 1;          // proposals' random choices
  bool progress = false;      // a progress line on stderr (a terminal)
  bool list_only = false;     // --list-workloads: print the workloads and their spaces, measure nothing
};

// Tunes the model at `model_path` and prints the summary to `out`. User
// errors for a missing server, a bad log, a model without tunable workloads
// on this target.
void tune_model(const std::string& model_path, const TuneOptions& options, std::ostream& out);

}  // namespace kiln
