// Measuring where a model's time goes, through the public API only
// (kiln_session_set_profiling, kiln_session_get_dispatch_profile,
// kiln_session_get_load_stats): timed runs for bench and profile; the
// start-up and profiled runs of `kiln profile` and `kiln inspect
// --profile-run`; their Chrome/Perfetto trace (written and read back); the
// table of layers (dispatches grouped by source nodes) with shares and GFLOP/s.
#ifndef KILN_TOOLS_KILN_PROFILING_H_
#define KILN_TOOLS_KILN_PROFILING_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "common.h"
#include "contents.h"

namespace kiln_tool {

// One run: when it started and ended (NowNs) and, for a profiled run, each
// dispatch's time (kiln_session_get_dispatch_profile).
struct RunTiming {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::vector<uint64_t> dispatch_ns;  // empty unless profiled
};

// Runs `session` `iterations` times, copying `inputs` in before each run
// (not timed); reads the dispatch times after each run when `profiled`
// (profiling must be enabled on the session).
kiln::Status TimeRuns(kiln::Session* session, const std::vector<NpyArray>& inputs,
                      uint64_t iterations, bool profiled, std::vector<RunTiming>* out);

// What `kiln profile` measures: the start-up, with the times the tool saw
// around each call, then args.iterations profiled runs.
struct Measurement {
  std::string model_path;
  std::string device;             // kiln_session_device_name
  uint32_t threads = 1;
  uint64_t load_start_ns = 0;     // around kiln_model_load_file
  uint64_t create_start_ns = 0;   // around kiln_session_create
  uint64_t first_run_start_ns = 0;  // around the first (unprofiled) run
  kiln_session_load_stats_t stats;
  std::vector<RunTiming> runs;    // the profiled runs
};

// Loads args.model_path into *model, creates its session, runs it once and
// then args.iterations times profiled (inputs: PrepareInputs). kExitOk, or
// Fail() with the status.
int Measure(const CommandArgs& args, kiln::Model* model, Measurement* out);
// Where a measurement was made: "cpu, 2 threads", or the Vulkan device's name.
std::string MeasuredOn(const std::string& device, uint32_t threads);

// "startup: ..." (or `label`): the time from the load call to the end of the
// first run and the stages that usually dominate (kiln_session_load_stats_t);
// `cache_bytes`: the pipeline cache that seeded the session, if any.
void PrintStartup(const char* label, const kiln_session_load_stats_t& s, size_t cache_bytes);

// Each dispatch's median time over the runs, in milliseconds.
std::vector<double> DispatchMedianMs(const std::vector<RunTiming>& runs, size_t dispatch_count);

// The Chrome trace event format (JSON object with "traceEvents", read by
// Perfetto and chrome://tracing): the start-up stages, every run and every
// dispatch of every run as complete events on the calling thread's track
// (Vulkan dispatches on a device track), times in microseconds from the
// load call. "otherData" names the bundle (content_hash) for ReadTrace.
std::string TraceJson(const ModelContents& c, const Measurement& m);

// Reads a trace TraceJson wrote for this bundle: each dispatch's median
// time (ms) over its runs, and where it was measured (MeasuredOn). kExitOk,
// or Fail() naming the problem (not JSON, another bundle, a dispatch missing).
int ReadTrace(const std::string& path, const ModelContents& c, std::vector<double>* dispatch_ms,
              std::string* measured_on);

// Prints the layers (dispatches grouped by their source nodes, or by kernel
// when they list none), slowest first: time, share, GFLOP/s where NodeFlops
// counts the nodes ("-" otherwise). `top` rows, then one for the rest, so
// the shares add up to 100%.
void PrintLayerTable(const ModelContents& c, const std::vector<double>& dispatch_ms, size_t top);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_PROFILING_H_
