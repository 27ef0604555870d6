// Timed and profiled runs, the start-up measurement of `kiln profile`, and
// its trace in the Chrome trace event format, written and read back.
//
// The runtime gives durations, not start times: each start-up stage's time
// (kiln_session_get_load_stats) and each dispatch's time in the last run
// (kiln_session_get_dispatch_profile, the whole dispatch: all workgroups on
// all threads and the barrier). The trace places them on the tool's own
// clock (CLOCK_MONOTONIC, as libkiln's): a call's stages back to back from
// the moment the tool made the call, in the order libkiln runs them; a
// run's dispatches back to back from the moment the run began. Per-worker
// times are not in the public API, so the dispatches are on the calling
// thread's track (worker 0), with the thread count in their args.
#include "profiling.h"

#include <stdio.h>

#include <fstream>
#include <sstream>

#include "json_reader.h"  // tools/cli

namespace kiln_tool {

namespace {

constexpr int kCallerTrack = 1;  // tid of the calling thread (worker 0)
constexpr int kDeviceTrack = 2;  // tid of the Vulkan device's dispatches

// Appends the trace's events, one per line.
class TraceWriter {
 public:
  explicit TraceWriter(uint64_t origin_ns) : origin_ns_(origin_ns) {}

  // A complete event ("ph": "X"); `args` is a JSON object's members, or "".
  void Complete(const std::string& name, const char* category, int track, uint64_t start_ns,
                uint64_t duration_ns, const std::string& args) {
    char times[96];
    snprintf(times, sizeof(times), "\"ts\": %.3f, \"dur\": %.3f",
             (double)(start_ns - origin_ns_) / 1e3, (double)duration_ns / 1e3);
    Add("{\"name\": " + JsonString(name.c_str()) + ", \"cat\": \"" + category +
        "\", \"ph\": \"X\", " + times + ", \"pid\": 1, \"tid\": " + std::to_string(track) +
        ", \"args\": {" + args + "}}");
  }
  // A metadata event naming the process (track 0) or a thread's track.
  void Name(const char* what, int track, const std::string& name) {
    Add(std::string("{\"name\": \"") + what + "\", \"ph\": \"M\", \"pid\": 1, \"tid\": " +
        std::to_string(track) + ", \"args\": {\"name\": " + JsonString(name.c_str()) + "}}");
  }
  // Stages that ran one after the other from `start_ns`, each as a complete
  // event: {name, duration}; stages of duration 0 did not run.
  void Sequence(uint64_t start_ns, const std::vector<std::pair<const char*, uint64_t>>& stages) {
    for (const auto& stage : stages) {
      if (!stage.second) continue;
      Complete(stage.first, "startup", kCallerTrack, start_ns, stage.second, "");
      start_ns += stage.second;
    }
  }
  size_t count() const { return count_; }
  const std::string& events() const { return events_; }

 private:
  void Add(const std::string& event) {
    events_ += std::string(count_++ ? ",\n  " : "\n  ") + event;
  }

  uint64_t origin_ns_;
  std::string events_;
  size_t count_ = 0;
};

double NsToMs(uint64_t nanoseconds) { return (double)nanoseconds / 1e6; }

// ", \"key\": [a, b]" of node names or op types of dispatch `d`.
std::string NodeList(const ModelContents& c, size_t d, bool op_types) {
  const kiln_dispatch_info_t& dispatch = c.dispatches[d];
  std::string list = "[";
  for (uint32_t i = 0; i < dispatch.source_node_count; ++i) {
    const kiln_node_info_t& node = c.nodes[dispatch.source_nodes[i]];
    list += std::string(i ? ", " : "") + JsonString(op_types ? node.op_type : node.name);
  }
  return list + "]";
}

// The args of dispatch `d`'s events: what it is (the same in every run).
std::string DispatchArgs(const ModelContents& c, size_t d, uint32_t threads) {
  const kiln_dispatch_info_t& dispatch = c.dispatches[d];
  const uint32_t* w = dispatch.workgroup_count;
  std::string args = "\"dispatch\": " + std::to_string(d) +
                     ", \"kernel\": " + JsonString(c.kernels[dispatch.kernel].name) +
                     ", \"nodes\": " + NodeList(c, d, false) + ", \"op_types\": " + NodeList(c, d, true) +
                     ", \"workgroups\": [" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " +
                     std::to_string(w[2]) + "]";
  if (dispatch.device != KILN_DEVICE_VULKAN) args += ", \"threads\": " + std::to_string(threads);
  double flops = 0, node_flops = 0;
  for (uint32_t i = 0; i < dispatch.source_node_count; ++i) {
    if (NodeFlops(c, dispatch.source_nodes[i], &node_flops)) flops += node_flops;
  }
  if (flops > 0) {
    char text[64];
    snprintf(text, sizeof(text), ", \"flops\": %.0f", flops);
    args += text;
  }
  return args;
}

}  // namespace

kiln::Status TimeRuns(kiln::Session* session, const std::vector<NpyArray>& inputs,
                      uint64_t iterations, bool profiled, std::vector<RunTiming>* out) {
  size_t dispatches = profiled ? session->dispatch_count() : 0;
  out->clear();
  for (uint64_t i = 0; i < iterations; ++i) {
    kiln::Status status = SetInputs(session, inputs);
    if (!status.ok()) return status;
    RunTiming run;
    run.start_ns = NowNs();
    status = session->run();
    run.end_ns = NowNs();
    if (!status.ok()) return status;
    run.dispatch_ns.resize(dispatches);
    for (size_t d = 0; d < dispatches; ++d) {
      status = session->get_dispatch_profile(d, &run.dispatch_ns[d]);
      if (!status.ok()) return status;
    }
    out->push_back(std::move(run));
  }
  return kiln::Status();
}

int Measure(const CommandArgs& args, kiln::Model* model, Measurement* out) {
  out->model_path = args.model_path;
  kiln_session_options_t options;
  SessionOptions(args, &options);
  out->load_start_ns = NowNs();
  int result = OpenModel(args, model);
  if (result != kExitOk) return result;
  std::vector<NpyArray> inputs;
  std::vector<bool> given;
  result = PrepareInputs(*model, args, &inputs, &given);
  if (result != kExitOk) return result;
  kiln::Session session;
  out->create_start_ns = NowNs();
  kiln::Status status = kiln::Session::Create(*model, &options, &session);
  if (!status.ok()) return FailStatus(status);
  status = SetInputs(&session, inputs);
  out->first_run_start_ns = NowNs();
  if (status.ok()) status = session.run();
  kiln_session_load_stats_init(&out->stats);
  if (status.ok()) status = session.get_load_stats(&out->stats);
  if (status.ok()) status = session.set_profiling(true);
  if (status.ok()) status = TimeRuns(&session, inputs, args.iterations, true, &out->runs);
  if (!status.ok()) return FailStatus(status);
  out->device = session.device_name();
  out->threads = options.thread_count > 1 ? options.thread_count : 1;
  return kExitOk;
}

// "startup: ..." (or `label`): the total and the stages that usually dominate.
void PrintStartup(const char* label, const kiln_session_load_stats_t& s, size_t cache_bytes) {
  printf("%s: load_to_first_run_ms=%.3f model_load_ms=%.3f session_create_ms=%.3f "
         "pipeline_create_ms=%.3f first_run_ms=%.3f pipelines=%u pipeline_cache=%s",
         label, NsToMs(s.load_to_first_run_ns), NsToMs(s.model_load_ns), NsToMs(s.session_create_ns),
         NsToMs(s.pipeline_create_ns), NsToMs(s.first_run_ns), s.pipeline_count,
         s.pipeline_count == 0 ? "none" : s.pipeline_cache_used ? "used" : "cold");
  if (cache_bytes) printf(" pipeline_cache_bytes=%zu", cache_bytes);
  printf("\n");
}

std::string MeasuredOn(const std::string& device, uint32_t threads) {
  if (device != "cpu") return device;
  return "cpu, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::vector<double> DispatchMedianMs(const std::vector<RunTiming>& runs, size_t dispatch_count) {
  std::vector<double> medians(dispatch_count);
  std::vector<double> times;
  for (size_t d = 0; d < dispatch_count; ++d) {
    times.clear();
    for (const RunTiming& run : runs) {
      if (d < run.dispatch_ns.size()) times.push_back((double)run.dispatch_ns[d] / 1e6);
    }
    medians[d] = Median(times);
  }
  return medians;
}

std::string TraceJson(const ModelContents& c, const Measurement& m) {
  const kiln_session_load_stats_t& s = m.stats;
  TraceWriter trace(m.load_start_ns);
  trace.Name("process_name", 0, "kiln profile " + m.model_path);
  trace.Name("thread_name", kCallerTrack,
             m.threads > 1 ? "calling thread (worker 0 of " + std::to_string(m.threads) + ")"
                           : std::string("calling thread"));
  bool device_track = false;
  for (const kiln_dispatch_info_t& d : c.dispatches) device_track |= d.device == KILN_DEVICE_VULKAN;
  if (device_track) trace.Name("thread_name", kDeviceTrack, "Vulkan device " + m.device);

  // The start-up: the calls, then their stages in the order libkiln runs them.
  trace.Complete("load_to_first_run", "startup", kCallerTrack, m.load_start_ns, s.load_to_first_run_ns, "");
  trace.Complete("model_load", "startup", kCallerTrack, m.load_start_ns, s.model_load_ns, "");
  trace.Sequence(m.load_start_ns, {{"bundle_map", s.bundle_map_ns},
                                   {"bundle_verify", s.bundle_verify_ns},
                                   {"kernel_load", s.kernel_load_ns}});
  trace.Complete("session_create", "startup", kCallerTrack, m.create_start_ns, s.session_create_ns,
                 "\"device\": " + JsonString(m.device.c_str()) + ", \"threads\": " + std::to_string(m.threads));
  trace.Sequence(m.create_start_ns, {{"instance_create", s.instance_create_ns},
                                     {"device_create", s.device_create_ns},
                                     {"pipeline_create", s.pipeline_create_ns},
                                     {"buffer_create", s.buffer_create_ns},
                                     {"parameter_upload", s.parameter_upload_ns},
                                     {"record", s.record_ns},
                                     {"thread_start", s.thread_start_ns}});
  trace.Complete("first_run", "startup", kCallerTrack, m.first_run_start_ns, s.first_run_ns, "");

  // The profiled runs, each dispatch after the one before it.
  std::vector<std::string> dispatch_args(c.dispatches.size());
  std::vector<std::string> labels(c.dispatches.size());
  for (size_t d = 0; d < c.dispatches.size(); ++d) {
    dispatch_args[d] = DispatchArgs(c, d, m.threads);
    labels[d] = DispatchLabel(c, d);
  }
  for (size_t r = 0; r < m.runs.size(); ++r) {
    const RunTiming& run = m.runs[r];
    trace.Complete("run " + std::to_string(r), "run", kCallerTrack, run.start_ns, run.end_ns - run.start_ns,
                   "\"run\": " + std::to_string(r));
    uint64_t cursor = run.start_ns;
    for (size_t d = 0; d < run.dispatch_ns.size() && d < c.dispatches.size(); ++d) {
      int track = c.dispatches[d].device == KILN_DEVICE_VULKAN ? kDeviceTrack : kCallerTrack;
      trace.Complete(labels[d], "dispatch", track, cursor, run.dispatch_ns[d],
                     dispatch_args[d] + ", \"run\": " + std::to_string(r));
      cursor += run.dispatch_ns[d];
    }
  }
  std::string other = "{\"tool\": \"kiln profile\", \"model\": " + JsonString(m.model_path.c_str()) +
                      ", \"content_hash\": \"" + HexHash(c.info.content_hash) + "\", \"device\": " +
                      JsonString(m.device.c_str()) + ", \"threads\": " + std::to_string(m.threads) +
                      ", \"runs\": " + std::to_string(m.runs.size()) + ", \"dispatch_count\": " +
                      std::to_string(c.dispatches.size()) + ", \"runtime_version\": " +
                      JsonString(kiln_version()) + "}";
  return "{\"traceEvents\": [" + trace.events() + "\n],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": " +
         other + "}\n";
}

int ReadTrace(const std::string& path, const ModelContents& c, std::vector<double>* dispatch_ms,
              std::string* measured_on) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Fail("--profile: cannot read '%s'", path.c_str());
  std::stringstream text;
  text << file.rdbuf();
  kiln_cli::JsonValue trace;
  std::string error;
  if (!kiln_cli::ParseJson(text.str(), &trace, &error)) return Fail("--profile: '%s' is not JSON (%s)", path.c_str(), error.c_str());
  const kiln_cli::JsonValue* other = trace.Find("otherData");
  const kiln_cli::JsonValue* hash = other ? other->Find("content_hash") : nullptr;
  const kiln_cli::JsonValue* events = trace.Find("traceEvents");
  if (!hash || !events || events->kind != kiln_cli::JsonValue::kArray) {
    return Fail("--profile: '%s' is not a trace written by kiln profile", path.c_str());
  }
  if (hash->string != HexHash(c.info.content_hash)) {
    return Fail("--profile: '%s' profiles another bundle (content hash %s, this one's is %s)", path.c_str(),
                hash->string.c_str(), HexHash(c.info.content_hash).c_str());
  }
  const kiln_cli::JsonValue* device = other->Find("device");
  const kiln_cli::JsonValue* threads = other->Find("threads");
  *measured_on = MeasuredOn(device ? device->string : "?", threads ? (uint32_t)threads->number : 1);
  std::vector<std::vector<double>> times(c.dispatches.size());
  for (const kiln_cli::JsonValue& event : events->items) {
    const kiln_cli::JsonValue* category = event.Find("cat");
    const kiln_cli::JsonValue* duration = event.Find("dur");
    const kiln_cli::JsonValue* args = event.Find("args");
    const kiln_cli::JsonValue* index = args ? args->Find("dispatch") : nullptr;
    if (!category || category->string != "dispatch" || !duration || !index) continue;
    if (index->kind != kiln_cli::JsonValue::kNumber || index->number < 0 || index->number >= (double)times.size()) {
      return Fail("--profile: '%s' has an event for a dispatch the bundle does not have", path.c_str());
    }
    times[(size_t)index->number].push_back(duration->number / 1e3);
  }
  dispatch_ms->resize(times.size());
  for (size_t d = 0; d < times.size(); ++d) {
    if (times[d].empty()) return Fail("--profile: '%s' has no event for dispatch %zu", path.c_str(), d);
    (*dispatch_ms)[d] = Median(times[d]);
  }
  return kExitOk;
}

}  // namespace kiln_tool
