// kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W] [--profile] [--startup]
//                       [--input NAME=FILE.npy ...]
//                       [--device auto|cpu|vulkan] [--vulkan-device N] [--validation[=sync]]
//                       [--rpc HOST:PORT [--token T] [--rpc-timeout S]]
// Inputs come from --input files or are filled deterministically (fixed
// seed); the last line is "median_ms=X min_ms=Y mean_ms=Z iterations=K".
// --profile times every dispatch (kiln_session_set_profiling) and prints the
// 100 slowest by median time, with their kernel and source node names.
// Before it, a "startup:" line gives the time from the load call to the end
// of the first run and the largest stages (kiln_session_get_load_stats);
// --startup adds "startup_stages:" (every stage) and, after the timed runs,
// loads the model again into a new session ("startup_warm:"): on Vulkan
// seeded with the first session's pipeline cache.
// --rpc sends the bundle to a `kiln rpc-server` (docs/rpc.md), which times
// it on its device on pseudo-random inputs; the same last line follows.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "profiling.h"
#include "rpc_client.h"

namespace kiln_tool {

namespace {

constexpr size_t kProfileTop = 100;

double Ms(uint64_t nanoseconds) { return (double)nanoseconds / 1e6; }

// "startup_stages: ...": every stage of kiln_session_load_stats_t.
void PrintStartupStages(const kiln_session_load_stats_t& s) {
  printf("startup_stages: bundle_map_ms=%.3f bundle_verify_ms=%.3f kernel_load_ms=%.3f "
         "instance_create_ms=%.3f device_create_ms=%.3f pipeline_create_ms=%.3f "
         "buffer_create_ms=%.3f parameter_upload_ms=%.3f record_ms=%.3f thread_start_ms=%.3f "
         "first_run_ms=%.3f\n",
         Ms(s.bundle_map_ns), Ms(s.bundle_verify_ns), Ms(s.kernel_load_ns), Ms(s.instance_create_ns),
         Ms(s.device_create_ns), Ms(s.pipeline_create_ns), Ms(s.buffer_create_ns),
         Ms(s.parameter_upload_ns), Ms(s.record_ns), Ms(s.thread_start_ns), Ms(s.first_run_ns));
}

// Loads the model, creates the session, sets the inputs and runs once: the
// start-up as an application sees it.
kiln::Status LoadAndRunOnce(const char* path, const kiln_model_load_options_t& load_options,
                            const kiln_session_options_t& options,
                            const std::vector<NpyArray>& inputs, kiln::Model* model,
                            kiln::Session* session) {
  kiln::Status status = kiln::Model::LoadFile(path, load_options, model);
  if (!status.ok()) return status;
  status = kiln::Session::Create(*model, &options, session);
  if (status.ok()) status = SetInputs(session, inputs);
  if (status.ok()) status = session->run();
  return status;
}

// "kernel" and "node,node" of dispatch `d` (names from the bundle).
void DispatchNames(const kiln::Model& model, size_t d, std::string* kernel, std::string* nodes) {
  kiln_dispatch_info_t dispatch;
  kiln_kernel_info_t kernel_info;
  if (!model.get_dispatch_info(d, &dispatch).ok() ||
      !model.get_kernel_info(dispatch.kernel, &kernel_info).ok()) {
    return;
  }
  *kernel = kernel_info.name;
  for (uint32_t i = 0; i < dispatch.source_node_count; ++i) {
    kiln_node_info_t node;
    if (i) *nodes += ',';
    *nodes += model.get_node_info(dispatch.source_nodes[i], &node).ok() ? node.name : "?";
  }
}

// Prints the slowest dispatches by median time (`medians[d]`: dispatch d's, in ms).
void PrintProfile(const kiln::Model& model, const std::vector<double>& medians) {
  size_t count = medians.size();
  double sum = std::accumulate(medians.begin(), medians.end(), 0.0);
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return medians[a] > medians[b]; });
  size_t shown = std::min(count, kProfileTop);
  printf("profile: %zu dispatches, sum of medians %.4f ms; slowest %zu:\n", count, sum, shown);
  printf("  %10s %6s %9s  %-40s %s\n", "median_ms", "share", "dispatch", "kernel", "nodes");
  for (size_t rank = 0; rank < shown; ++rank) {
    size_t d = order[rank];
    std::string kernel = "?", nodes;
    DispatchNames(model, d, &kernel, &nodes);
    printf("  %10.4f %5.1f%% %9zu  %-40s %s\n", medians[d], sum > 0 ? 100.0 * medians[d] / sum : 0.0,
           d, kernel.c_str(), nodes.c_str());
  }
}

// The options of a remote bench (--rpc).
struct RemoteOptions {
  const char* address = nullptr;  // --rpc HOST:PORT
  std::string token;              // --token, or $KILN_RPC_TOKEN
  uint64_t timeout_s = 600;       // --rpc-timeout: the server's limit for the whole measurement
};

// kiln bench --rpc: the bundle measured by a server, each iteration one repeat.
int BenchRemote(const CommandArgs& args, uint64_t warmup, const RemoteOptions& remote) {
  std::vector<uint8_t> bundle;
  std::string why;
  if (!ReadFileBytes(args.model_path, &bundle, &why)) return Fail("%s", why.c_str());
  kiln_rpc::Client client;
  if (!client.Open(remote.address, remote.token, 30000, &why)) return Fail("%s", why.c_str());
  const kiln_rpc::HelloReply& server = client.server();
  printf("remote %s: kiln %s, %s, %u CPUs\n", remote.address, server.kiln_version.c_str(),
         server.arch.c_str(), server.cpu_count);
  kiln_rpc::RunRequest request;
  request.warmup = (uint32_t)warmup;
  request.repeats = (uint32_t)args.iterations;
  request.number = 1;
  request.threads = (uint32_t)args.threads;
  request.device = args.device.device;
  request.vulkan_device = args.device.vulkan_device;
  request.timeout_ms = (uint32_t)(remote.timeout_s * 1000);
  request.bundle = bundle.data();
  request.bundle_size = bundle.size();
  printf("threads=%llu warmup=%llu iterations=%llu\n", (unsigned long long)args.threads,
         (unsigned long long)warmup, (unsigned long long)args.iterations);
  kiln_rpc::RunReply reply;
  kiln_rpc::ErrorReply error;
  if (!client.Run(request, &reply, &error)) {
    return error.code ? Fail("the server: %s: %s", kiln_rpc::ErrorCodeName(error.code), error.message.c_str())
                      : Fail("%s", error.message.c_str());
  }
  if (reply.device != "cpu") printf("device=%s\n", reply.device.c_str());
  std::vector<double> times;
  for (uint64_t ns : reply.repeat_ns) times.push_back((double)ns / 1e6);
  double min = *std::min_element(times.begin(), times.end());
  double mean = std::accumulate(times.begin(), times.end(), 0.0) / (double)times.size();
  printf("median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%zu\n", Median(times), min, mean, times.size());
  return kExitOk;
}

}  // namespace

const CommandHelp kBenchHelp = {
    "bench", "MODEL.kiln [options]",
    "Runs the model repeatedly on inputs from --input files (the others: fixed\n"
    "pseudo-random values) and prints the start-up (startup: ...) and the run times;\n"
    "the last line is median_ms=X min_ms=Y mean_ms=Z iterations=K. With --rpc, a\n"
    "kiln rpc-server times it on its device instead (pseudo-random inputs).\n"};

int CmdBench(int argc, char** argv) {
  uint64_t warmup = 2;
  bool profile = false, startup = false;
  CommandArgs args;
  args.iterations = 10;
  RemoteOptions remote;
  if (const char* env = getenv("KILN_RPC_TOKEN")) remote.token = env;
  using kiln_cli::Arity;
  const kiln_cli::OptionTable own = {
      {kOptWarmup, "--warmup", Arity::kValue, "W", "untimed runs first (default 2)"},
      {kOptProfile, "--profile", Arity::kFlag, "",
       "time every dispatch; print the 100 slowest by median time"},
      {kOptStartup, "--startup", Arity::kFlag, "",
       "print every start-up stage, and load the model a second time\n"
       "(startup_warm: on Vulkan with the first session's pipeline cache)"},
      {kOptRpc, "--rpc", Arity::kValue, "HOST:PORT",
       "time the bundle on a kiln rpc-server's device (docs/rpc.md)"},
      {kOptRpcToken, "--token", Arity::kValue, "T", "--rpc: the server's token (default $KILN_RPC_TOKEN)"},
      {kOptRpcTimeout, "--rpc-timeout", Arity::kValue, "S",
       "--rpc: the server stops the measurement after S seconds (default 600)"},
  };
  auto handle = [&](const kiln_cli::Option& option, const char* value) -> int {
    if (option.id == kOptWarmup) {
      if (!ParseCount(value, 1u << 30, &warmup)) return UsageError("--warmup needs a count");
    } else if (option.id == kOptProfile) {
      profile = true;
    } else if (option.id == kOptRpc) {
      remote.address = value;
    } else if (option.id == kOptRpcToken) {
      remote.token = value;
    } else if (option.id == kOptRpcTimeout) {
      if (!ParseCount(value, kiln_rpc::kMaxTimeoutMs / 1000, &remote.timeout_s) || !remote.timeout_s) {
        return UsageError("--rpc-timeout needs 1..3600 seconds");
      }
    } else {
      startup = true;
    }
    return kContinue;
  };
  int result = ParseCommandArgs(kBenchHelp, own, "timed runs (default 10)", argc, argv, handle, &args);
  if (result != kContinue) return result;
  if (remote.address) {
    if (profile || startup || !args.inputs.empty() || !args.trusted_keys.empty() || args.max_arena_bytes) {
      return UsageError("--rpc takes none of --profile, --startup, --input, --trusted-key or "
                        "--max-arena (the server decides)");
    }
    if (args.iterations > kiln_rpc::kMaxRepeats || warmup > kiln_rpc::kMaxWarmup) {
      return UsageError("--rpc: at most %u iterations and %u warm-up runs", kiln_rpc::kMaxRepeats,
                        kiln_rpc::kMaxWarmup);
    }
    if (args.threads == 0 || args.threads > kiln_rpc::kMaxThreads) {
      return UsageError("--rpc: 1 to %u threads", kiln_rpc::kMaxThreads);
    }
    return BenchRemote(args, warmup, remote);
  }

  kiln::Model model;
  result = OpenModel(args, &model);
  if (result != kExitOk) return result;
  std::vector<NpyArray> inputs;
  std::vector<bool> given;
  result = PrepareInputs(model, args, &inputs, &given);
  if (result != kExitOk) return result;
  kiln::Session session;
  kiln_session_options_t options;
  result = OpenSession(args, model, &options, &session);
  if (result != kExitOk) return result;
  for (size_t i = 0; i < model.input_count(); ++i) {
    kiln_tensor_info_t info;
    model.get_input_info(i, &info);
    printf("input %s: %s%s\n", info.name, DescribeTensor(info).c_str(), given[i] ? " (--input)" : "");
  }
  // Inputs are copied in before every run (the memory plan may reuse their
  // space); only session.run() is timed.
  auto set_inputs = [&]() { return SetInputs(&session, inputs); };
  printf("threads=%llu warmup=%llu iterations=%llu%s\n", (unsigned long long)args.threads,
         (unsigned long long)warmup, (unsigned long long)args.iterations, profile ? " profile" : "");
  kiln::Status status;
  for (uint64_t i = 0; i < warmup; ++i) {
    status = set_inputs();
    if (!status.ok()) return FailStatus(status);
    status = session.run();
    if (!status.ok()) return FailStatus(status);
  }
  // Profiling is on for the timed iterations only (its cost is two clock
  // reads per dispatch).
  if (profile) {
    status = session.set_profiling(true);
    if (!status.ok()) return FailStatus(status);
  }
  std::vector<RunTiming> runs;
  status = TimeRuns(&session, inputs, args.iterations, profile, &runs);
  if (!status.ok()) return FailStatus(status);
  std::vector<double> times;
  for (const RunTiming& run : runs) times.push_back((double)(run.end_ns - run.start_ns) / 1e6);
  if (profile) PrintProfile(model, DispatchMedianMs(runs, session.dispatch_count()));

  // Start-up: the first run above (a warm-up run unless --warmup 0) ended it.
  kiln_session_load_stats_t stats;
  kiln_session_load_stats_init(&stats);
  status = session.get_load_stats(&stats);
  if (!status.ok()) return FailStatus(status);
  PrintStartup("startup", stats, 0);
  if (startup) {
    PrintStartupStages(stats);
    // A second load into a new session, after the first is gone; on Vulkan
    // seeded with the first session's pipeline cache.
    std::vector<uint8_t> cache;
    size_t cache_size = 0;
    if (stats.pipeline_count) {  // two calls: the size, then the bytes
      status = session.get_vulkan_pipeline_cache(nullptr, 0, &cache_size);
      cache.resize(cache_size);
      if (status.ok()) status = session.get_vulkan_pipeline_cache(cache.data(), cache.size(), &cache_size);
      if (!status.ok()) return FailStatus(status);
    }
    session = kiln::Session();
    model = kiln::Model();
    options.vulkan_pipeline_cache = cache.data();
    options.vulkan_pipeline_cache_size = cache_size;
    kiln_model_load_options_t load_options;
    LoadOptions(args, 0, &load_options);
    status = LoadAndRunOnce(args.model_path, load_options, options, inputs, &model, &session);
    options.vulkan_pipeline_cache = nullptr;
    if (status.ok()) status = session.get_load_stats(&stats);
    if (!status.ok()) return FailStatus(status);
    PrintStartup("startup_warm", stats, cache_size);
  }
  double min = *std::min_element(times.begin(), times.end());
  double mean = std::accumulate(times.begin(), times.end(), 0.0) / (double)times.size();
  printf("median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%llu\n", Median(times), min, mean,
         (unsigned long long)args.iterations);
  return CheckValidationMessages();
}

}  // namespace kiln_tool
