// kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W] [--profile] [--startup]
//                       [--input NAME=FILE.npy ...]
//                       [--device auto|cpu|vulkan] [--vulkan-device N] [--validation[=sync]]
// Inputs come from --input files or are filled deterministically (fixed
// seed); the last line is "median_ms=X min_ms=Y mean_ms=Z iterations=K".
// --profile times every dispatch (kiln_session_set_profiling) and prints the
// 100 slowest by median time, with their kernel and source node names.
// Before it, a "startup:" line gives the time from the load call to the end
// of the first run and the largest stages (kiln_session_get_load_stats);
// --startup adds "startup_stages:" (every stage) and, after the timed runs,
// loads the model again into a new session ("startup_warm:"): on Vulkan
// seeded with the first session's pipeline cache.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "common.h"

namespace kiln_tool {

namespace {

// xorshift64*: a small deterministic generator.
struct Random {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  uint64_t Next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
  }
  double Uniform() { return (double)(Next() >> 11) / 9007199254740992.0; }  // [0, 1)
};

// Fills a buffer of `dtype` elements: floats in [-1, 1), integers in [0, 10), bools 0/1.
void Fill(kiln_dtype_t dtype, std::vector<uint8_t>* bytes, Random* random) {
  size_t size = kiln_dtype_size(dtype);
  for (size_t i = 0; i + size <= bytes->size(); i += size) {
    uint8_t* p = bytes->data() + i;
    double u = random->Uniform();
    switch (dtype) {
      case KILN_DTYPE_FLOAT32: { float v = (float)(2 * u - 1); memcpy(p, &v, 4); break; }
      case KILN_DTYPE_FLOAT64: { double v = 2 * u - 1; memcpy(p, &v, 8); break; }
      case KILN_DTYPE_FLOAT16: {  // a multiple of 1/1024 in [-1, 1): exact in float16
        float f = (float)((int)(u * 2048) - 1024) / 1024.0f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint16_t h = (uint16_t)((bits >> 16) & 0x8000);
        int exponent = (int)((bits >> 23) & 0xff) - 127 + 15;
        if (f != 0.0f && exponent > 0) h |= (uint16_t)((exponent << 10) | ((bits >> 13) & 0x3ff));
        memcpy(p, &h, 2);
        break;
      }
      case KILN_DTYPE_BOOL: *p = u < 0.5 ? 0 : 1; break;
      default: {  // integers
        int64_t v = (int64_t)(u * 10);
        memcpy(p, &v, size);  // little-endian: the low bytes
        break;
      }
    }
  }
}

constexpr size_t kProfileTop = 100;

double Ms(uint64_t nanoseconds) { return (double)nanoseconds / 1e6; }

// "startup: ..." (or `label`): the total and the stages that usually dominate.
void PrintStartup(const char* label, const kiln_session_load_stats_t& s, size_t cache_bytes) {
  printf("%s: load_to_first_run_ms=%.3f model_load_ms=%.3f session_create_ms=%.3f "
         "pipeline_create_ms=%.3f first_run_ms=%.3f pipelines=%u pipeline_cache=%s",
         label, Ms(s.load_to_first_run_ns), Ms(s.model_load_ns), Ms(s.session_create_ns),
         Ms(s.pipeline_create_ns), Ms(s.first_run_ns), s.pipeline_count,
         s.pipeline_count == 0 ? "none" : s.pipeline_cache_used ? "used" : "cold");
  if (cache_bytes) printf(" pipeline_cache_bytes=%zu", cache_bytes);
  printf("\n");
}

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
kiln::Status LoadAndRunOnce(const char* path, const kiln_session_options_t& options,
                            const std::vector<std::vector<uint8_t>>& inputs, kiln::Model* model,
                            kiln::Session* session) {
  kiln::Status status = kiln::Model::LoadFile(path, model);
  if (!status.ok()) return status;
  status = kiln::Session::Create(*model, &options, session);
  for (size_t i = 0; status.ok() && i < inputs.size(); ++i) {
    status = session->set_input(i, inputs[i].data(), inputs[i].size());
  }
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

// Prints the slowest dispatches by median time. `times[d]` holds dispatch d's
// time (ms) in every timed iteration.
void PrintProfile(const kiln::Model& model, const std::vector<std::vector<double>>& times) {
  size_t count = times.size();
  std::vector<double> medians(count);
  for (size_t d = 0; d < count; ++d) medians[d] = Median(times[d]);
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

}  // namespace

int CmdBench(int argc, char** argv) {
  uint64_t warmup = 2;
  bool profile = false, startup = false;
  CommandArgs args;
  args.iterations = 10;
  auto own = [&](int count, char** values, int* i) -> int {
    const char* arg = values[*i];
    if (!strcmp(arg, "--warmup")) {
      if (!ParseCount(*i + 1 < count ? values[++*i] : nullptr, 1u << 30, &warmup)) {
        return UsageError("--warmup needs a count");
      }
    } else if (!strcmp(arg, "--profile")) {
      profile = true;
    } else if (!strcmp(arg, "--startup")) {
      startup = true;
    } else {
      return 0;
    }
    return 1;
  };
  int result = ParseCommandArgs("bench", argc, argv, own, &args);
  if (result != kExitOk) return result;

  kiln::Model model;
  result = OpenModel(args, &model);
  if (result != kExitOk) return result;
  std::vector<NpyArray> arrays;
  std::vector<bool> given;
  result = ReadInputs(model, args, &arrays, &given);
  if (result != kExitOk) return result;
  kiln::Session session;
  kiln_session_options_t options;
  result = OpenSession(args, model, &options, &session);
  if (result != kExitOk) return result;

  Random random;
  std::vector<std::vector<uint8_t>> inputs(model.input_count());
  for (size_t i = 0; i < model.input_count(); ++i) {
    kiln_tensor_info_t info;
    model.get_input_info(i, &info);
    if (given[i]) {
      inputs[i] = std::move(arrays[i].data);
    } else {
      inputs[i].resize(info.byte_size);
      Fill(info.dtype, &inputs[i], &random);
    }
    printf("input %s: %s%s\n", info.name, DescribeTensor(info).c_str(), given[i] ? " (--input)" : "");
  }
  // Inputs are copied in before every run (the memory plan may reuse their
  // space); only session.run() is timed.
  auto set_inputs = [&]() {
    for (size_t i = 0; i < inputs.size(); ++i) {
      kiln::Status set = session.set_input(i, inputs[i].data(), inputs[i].size());
      if (!set.ok()) return set;
    }
    return kiln::Status();
  };
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
  std::vector<std::vector<double>> dispatch_times(profile ? session.dispatch_count() : 0);
  std::vector<double> times;
  for (uint64_t i = 0; i < args.iterations; ++i) {
    status = set_inputs();
    if (!status.ok()) return FailStatus(status);
    double start = NowMs();
    status = session.run();
    double elapsed = NowMs() - start;
    if (!status.ok()) return FailStatus(status);
    times.push_back(elapsed);
    for (size_t d = 0; d < dispatch_times.size(); ++d) {
      uint64_t nanoseconds = 0;
      status = session.get_dispatch_profile(d, &nanoseconds);
      if (!status.ok()) return FailStatus(status);
      dispatch_times[d].push_back((double)nanoseconds / 1e6);
    }
  }
  if (profile) PrintProfile(model, dispatch_times);

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
    status = LoadAndRunOnce(args.model_path, options, inputs, &model, &session);
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
