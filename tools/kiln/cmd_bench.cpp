// kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W] [--profile] [--startup]
//                       [--device auto|cpu|vulkan] [--vulkan-device N] [--validation[=sync]]
// Inputs are filled deterministically (fixed seed); the last line is
// "median_ms=X min_ms=Y mean_ms=Z iterations=K".
// --profile times every dispatch (kiln_session_set_profiling) and prints the
// 100 slowest by median time, with their kernel and source node names.
// Before it, a "startup:" line gives the time from the load call to the end
// of the first run and the largest stages (kiln_session_load_stats);
// --startup adds "startup_stages:" (every stage) and, after the timed runs,
// loads the model again into a new session ("startup_warm:"): on Vulkan
// seeded with the first session's pipeline cache.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "bundle_generated.h"
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

// Prints the slowest dispatches by median time. `times[d]` holds dispatch d's
// time (ms) in every timed iteration. Names come from the bundle, which the
// runtime verified at load.
void PrintProfile(const kiln::Model& model, const std::vector<std::vector<double>>& times) {
  const void* data = nullptr;
  size_t size = 0;
  const kiln::fb::Bundle* bundle = nullptr;
  if (kiln_model_bundle_data(model.get(), &data, &size) == nullptr) {
    bundle = kiln::fb::GetSizePrefixedBundle(data);
  }
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
    if (bundle && bundle->dispatches() && d < bundle->dispatches()->size()) {
      const kiln::fb::Dispatch* dispatch = bundle->dispatches()->Get((uint32_t)d);
      kernel = bundle->kernels()->Get(dispatch->kernel())->name()->str();
      const flatbuffers::Vector<uint32_t>* sources = dispatch->source_nodes();
      for (uint32_t i = 0; sources && i < sources->size(); ++i) {
        const flatbuffers::String* name = bundle->nodes()->Get(sources->Get(i))->name();
        if (i) nodes += ',';
        nodes += name ? name->str() : "?";
      }
    }
    printf("  %10.4f %5.1f%% %9zu  %-40s %s\n", medians[d], sum > 0 ? 100.0 * medians[d] / sum : 0.0,
           d, kernel.c_str(), nodes.c_str());
  }
}

}  // namespace

int CmdBench(int argc, char** argv) {
  const char* model_path = nullptr;
  uint64_t threads = 1, iterations = 10, warmup = 2;
  bool profile = false, startup = false;
  DeviceOptions device;
  for (int i = 0; i < argc; ++i) {
    int parsed = ParseDeviceOption(argc, argv, &i, &device);
    if (parsed == 1) continue;
    if (parsed) return parsed;
    const char* arg = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!strcmp(arg, "--threads")) {
      if (!ParseCount(next, KILN_SESSION_MAX_THREADS, &threads)) {
        return UsageError("--threads needs a count (at most %u)", KILN_SESSION_MAX_THREADS);
      }
      ++i;
    } else if (!strcmp(arg, "--iterations")) {
      if (!ParseCount(next, 1u << 30, &iterations) || iterations == 0) {
        return UsageError("--iterations needs a positive count");
      }
      ++i;
    } else if (!strcmp(arg, "--warmup")) {
      if (!ParseCount(next, 1u << 30, &warmup)) return UsageError("--warmup needs a count");
      ++i;
    } else if (!strcmp(arg, "--profile")) {
      profile = true;
    } else if (!strcmp(arg, "--startup")) {
      startup = true;
    } else if (arg[0] == '-' && arg[1]) {
      return UsageError("bench: unknown option '%s'", arg);
    } else if (!model_path) {
      model_path = arg;
    } else {
      return UsageError("bench: unexpected argument '%s'", arg);
    }
  }
  if (!model_path) return UsageError("bench: missing MODEL.kiln");

  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(model_path, &model);
  if (!status.ok()) return FailStatus(status);
  kiln::Session session;
  kiln_session_options_t options = {};  // zero: defaults
  options.thread_count = (uint32_t)threads;
  device.Apply(&options);
  status = kiln::Session::Create(model, &options, &session);
  if (!status.ok()) return FailStatus(status);
  PrintDevice(session);

  Random random;
  std::vector<std::vector<uint8_t>> inputs(model.input_count());
  for (size_t i = 0; i < model.input_count(); ++i) {
    kiln_tensor_info_t info;
    model.input_info(i, &info);
    inputs[i].resize(info.byte_size);
    Fill(info.dtype, &inputs[i], &random);
    printf("input %s: %s\n", info.name, DescribeTensor(info).c_str());
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
  printf("threads=%llu warmup=%llu iterations=%llu%s\n", (unsigned long long)threads, (unsigned long long)warmup, (unsigned long long)iterations, profile ? " profile" : "");
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
  for (uint64_t i = 0; i < iterations; ++i) {
    status = set_inputs();
    if (!status.ok()) return FailStatus(status);
    double start = NowMs();
    status = session.run();
    double elapsed = NowMs() - start;
    if (!status.ok()) return FailStatus(status);
    times.push_back(elapsed);
    for (size_t d = 0; d < dispatch_times.size(); ++d) {
      uint64_t nanoseconds = 0;
      status = session.dispatch_profile(d, &nanoseconds);
      if (!status.ok()) return FailStatus(status);
      dispatch_times[d].push_back((double)nanoseconds / 1e6);
    }
  }
  if (profile) PrintProfile(model, dispatch_times);

  // Start-up: the first run above (a warm-up run unless --warmup 0) ended it.
  kiln_session_load_stats_t stats = {};
  status = session.load_stats(&stats);
  if (!status.ok()) return FailStatus(status);
  PrintStartup("startup", stats, 0);
  if (startup) {
    PrintStartupStages(stats);
    // A second load into a new session, after the first is gone; on Vulkan
    // seeded with the first session's pipeline cache.
    void* cache = nullptr;
    size_t cache_size = 0;
    if (stats.pipeline_count) {
      status = kiln::Status(kiln_session_vulkan_pipeline_cache(session.get(), &cache, &cache_size));
      if (!status.ok()) return FailStatus(status);
    }
    session = kiln::Session();
    model = kiln::Model();
    options.vulkan_pipeline_cache = cache;
    options.vulkan_pipeline_cache_size = cache_size;
    status = LoadAndRunOnce(model_path, options, inputs, &model, &session);
    kiln_free(cache);
    options.vulkan_pipeline_cache = nullptr;
    if (status.ok()) status = session.load_stats(&stats);
    if (!status.ok()) return FailStatus(status);
    PrintStartup("startup_warm", stats, cache_size);
  }
  double min = *std::min_element(times.begin(), times.end());
  double mean = std::accumulate(times.begin(), times.end(), 0.0) / (double)times.size();
  printf("median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%llu\n", Median(times), min, mean,
         (unsigned long long)iterations);
  return CheckValidationMessages();
}

}  // namespace kiln_tool
