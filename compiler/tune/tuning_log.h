// Tuning logs: JSON lines, one measured point of one workload per line,
// keyed by (workload, target, kilnc version). `kilnc tune` appends to one;
// `kilnc --tuning-log` and the next `kilnc tune` read it back, so a model
// that shares workloads with one tuned before needs no new measurements
// (docs/tuning.md, "The log").
//
//   {"workload":"matmul f32 [128,1024;256]","target":"x86_64-pc-linux-gnu cpu=... features#...","kiln":"0.1.0",
//    "threads":1,"config":{"rows":4,"rows_outer":0,"k_block":0},"ns":51234,
//    "model":"resnet18.onnx","trial":3}
// A failed measurement has "ns":null and "error":"..."; the tuner's final
// verdict on a workload has "validated":true.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tune/space.h"

namespace kiln::tune {

// One line of a log.
struct Record {
  std::string workload;  // tune/space.h workload_key()
  std::string target;    // TargetSpec::tuning_key() of what was measured
  std::string kiln;      // kilnc's version (schedules change between versions)
  int64_t threads = 1;   // the session's threads during the measurement
  Config config;         // the point measured
  double ns = -1;        // mean time of the workload's kernels, nanoseconds; < 0: failed
  std::string error;     // why it failed (empty when measured)
  std::string model;     // the model it was measured in (informational)
  int64_t trial = 0;     // the trial's number for this workload (informational)
  bool validated = false;  // the tuner's verdict after measuring its best point against the
                           // hand-written one head to head (its ns: the median of those rounds)
};

// Reads a log. A missing file is an empty log when `missing_ok`; a line
// that is not a record is a user error naming the file and line.
std::vector<Record> read_tuning_log(const std::string& path, bool missing_ok);
// One record as a line of JSON (no newline).
std::string record_json(const Record& r);

// The fastest measured point of each workload among the records for
// `target` and `kiln`, at `threads` (0: any thread count); where a workload
// has validated records, among those only (a search's fastest single
// measurement is biased low by noise). `out_ns`, when given, gets each
// one's time.
std::map<std::string, Config> best_configs(const std::vector<Record>& records, const std::string& target,
                                           const std::string& kiln, int64_t threads,
                                           std::map<std::string, double>* out_ns = nullptr);

}  // namespace kiln::tune
