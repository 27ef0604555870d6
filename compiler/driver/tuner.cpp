// `kilnc tune` (tuner.h): the search loop, the measurements through the
// RPC client, the log and the summary.
#include "driver/tuner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "rpc_client.h"  // tools/rpc
#include "support/diagnostics.h"
#include "support/version.h"
#include "tune/cost_model.h"
#include "tune/tuning_log.h"

namespace kiln {

namespace {

using tune::Config;
using tune::Space;

constexpr double kRandomShare = 0.2;  // of proposals once the model is trained
constexpr size_t kPool = 256;         // random points scored per proposal
constexpr size_t kMinTraining = 8;    // measured points before the model ranks
constexpr size_t kMaxExtents = 8;     // extents in a feature row
constexpr int kValidationRounds = 6;  // head-to-head measurements of each bundle
constexpr double kKeepMargin = 0.01;  // a tuned point must beat the hand-written one by 1%

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string config_text(const Config& c) {
  std::string text;
  for (const auto& [name, value] : c) text += (text.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return text;
}

// One workload's search.
struct Workload {
  std::string key;              // tune/space.h workload_key
  const Space* space = nullptr; // as the discovery compile declared it
  bool from_log = false;        // measured before (the log): not measured again
  int kernels = 0;              // dispatches of it in the model
  std::set<std::string> seen;   // config_text of every point tried
  std::vector<std::pair<Config, double>> measured;  // (point, ns) of this run's successes
  Config best;                  // the fastest point so far (the log's, for from_log)
  double best_ns = std::numeric_limits<double>::infinity();
  double default_ns = -1;       // the hand-written point's time (this run; validated when `validated`)
  bool validated = false;       // best and default_ns come from the head-to-head rounds
  bool resumed = false;         // an unfinished earlier tuning's points were loaded from the log
  int64_t trials = 0;           // points measured (or failed) this run
  bool done = false;            // trials used up or space exhausted
  Config pending;               // the point of the current round
};

// The cost model's view of a point: log2 of the loop extents, then each of
// the schedule's knobs (its value and log2(1 + value); -1 and 0 where the
// workload lacks it).
std::vector<double> features(const Workload& w, const Config& c, const std::vector<std::string>& knob_names) {
  std::vector<double> row;
  for (size_t i = 0; i < kMaxExtents; i++)
    row.push_back(i < w.space->extents.size() ? std::log2((double)w.space->extents[i]) : 0.0);
  for (const std::string& name : knob_names) {
    auto it = c.find(name);
    row.push_back(it != c.end() ? (double)it->second : -1.0);
    row.push_back(it != c.end() ? std::log2(1.0 + (double)std::max<int64_t>(it->second, 0)) : 0.0);
  }
  return row;
}

// A local `kiln rpc-server` on loopback for the tuning's length.
class LocalServer {
 public:
  ~LocalServer() { stop(); }
  // Starts it; returns "127.0.0.1:PORT". User error when it does not start.
  std::string start(const std::string& kiln_tool) {
    char log_path[] = "/tmp/kilnc_tune_server_XXXXXX";
    int fd = mkstemp(log_path);
    user_assert(fd >= 0) << "kilnc tune: cannot create a temporary file for the local server's log";
    log_path_ = log_path;
    pid_ = fork();
    user_assert(pid_ >= 0) << "kilnc tune: cannot fork the local server";
    if (pid_ == 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      const char* argv[] = {kiln_tool.c_str(), "rpc-server", "--port", "0", "--bind", "127.0.0.1", nullptr};
      if (kiln_tool.find('/') == std::string::npos) execvp(argv[0], (char* const*)argv);
      else execv(argv[0], (char* const*)argv);
      dprintf(fd, "exec %s: %s\n", argv[0], strerror(errno));
      _exit(127);
    }
    close(fd);
    for (int waited = 0; waited < 200; waited++) {  // 10 s
      std::ifstream f(log_path_);
      std::string first;
      if (std::getline(f, first) && first.rfind("listening on ", 0) == 0 && !f.eof()) {
        std::string address = first.substr(13, first.find(' ', 13) - 13);
        return address;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::ifstream again(log_path_);
        std::stringstream text;
        text << again.rdbuf();
        user_error << "kilnc tune: the local server (" << kiln_tool << " rpc-server) did not start: " << text.str()
                   << "(give the kiln tool with --kiln PATH, or a server with --rpc HOST:PORT)";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    user_error << "kilnc tune: the local server (" << kiln_tool << " rpc-server) did not say where it listens";
    return "";
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    if (!log_path_.empty()) unlink(log_path_.c_str());
    log_path_.clear();
  }

 private:
  pid_t pid_ = -1;        // the server's process
  std::string log_path_;  // its stdout and stderr
};

// The kiln tool beside kilnc (an install, or the build tree's tools/kiln), else "kiln" on $PATH.
std::string find_kiln_tool() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& candidate : {dir + "/kiln", dir + "/../tools/kiln/kiln"})
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "kiln";
}

class Tuner {
 public:
  Tuner(const std::string& model_path, const TuneOptions& options, std::ostream& out)
      : model_path_(model_path), options_(options), out_(out), rng_(options.seed) {}

  void run() {
    t0_ = std::chrono::steady_clock::now();
    target_ = options_.compile.target.tuning_key();
    std::vector<tune::Record> earlier;
    if (!options_.log_path.empty()) earlier = tune::read_tuning_log(options_.log_path, /*missing_ok=*/true);
    discover(earlier);
    if (options_.list_only) return list();
    connect();
    check_server_runs_model();
    log_.open(options_.log_path, std::ios::app);
    user_assert(log_.good()) << "kilnc tune: cannot append to the log '" << options_.log_path << "'";
    for (int64_t round = 0;; round++) {
      if (std::none_of(active_.begin(), active_.end(), [](const Workload* w) { return !w->done; })) break;
      if (options_.time_budget_s > 0 && seconds_since(t0_) > options_.time_budget_s) {
        budget_ended_ = true;
        break;
      }
      run_round(round);
      rounds_ = round + 1;
    }
    if (options_.progress) fprintf(stderr, "\r\033[K");
    validate();
    summary();
  }

 private:
  // The discovery compile: every workload and its space, and the log's points.
  void discover(const std::vector<tune::Record>& earlier) {
    compile({});
    discovery_ = scratch_;  // the workloads' own spaces (Workload::space points into them)
    user_assert(!discovery_.spaces.empty())
        << "kilnc tune: " << model_path_ << " has no tunable workloads (matrix products or blocked convolutions) on "
        << target_;
    // The log's records of this target, version and thread count, by workload.
    std::map<std::string, std::vector<const tune::Record*>> logged;
    for (const tune::Record& r : earlier)
      if (r.target == target_ && r.kiln == kKilncVersion && r.threads == options_.threads) logged[r.workload].push_back(&r);
    for (const auto& [key, space] : discovery_.spaces) {
      Workload w;
      w.key = key;
      w.space = &space;
      for (const auto& [kernel, workload] : discovery_.kernel_workload) w.kernels += workload == key;
      resume(w, logged[key]);
      if (tune::space_size(space) <= 1) w.done = true;  // nothing to choose
      workloads_.push_back(w);
    }
    for (Workload& w : workloads_) {
      if (!w.from_log && tune::space_size(*w.space) > 1) active_.push_back(&w);
      auto& names = knob_names_[w.space->schedule];  // each schedule's knobs, for the feature rows
      for (const tune::Knob& k : w.space->knobs)
        if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
    }
    refit();  // on what a resumed tuning measured before
  }

  // What the log says of `w`: a validated verdict ends its tuning (the
  // point is taken, nothing measured); other records are an earlier,
  // unfinished tuning's points, which count as its trials and train the
  // model, and the search goes on from them.
  void resume(Workload& w, const std::vector<const tune::Record*>& records) {
    const Config plain = tune::canonical(*w.space, {});
    for (const tune::Record* r : records) {
      if (!r->validated || r->ns < 0 || (w.from_log && r->ns >= w.best_ns)) continue;
      w.from_log = w.done = true;
      w.best = r->config;
      w.best_ns = r->ns;
    }
    if (w.from_log) return;
    for (const tune::Record* r : records) {
      Config c = tune::canonical(*w.space, r->config);
      if (!w.seen.insert(config_text(c)).second) continue;
      w.trials++;
      w.resumed = true;
      if (r->ns < 0) continue;
      w.measured.push_back({c, r->ns});
      if (c == plain) w.default_ns = r->ns;
      if (r->ns < w.best_ns) {
        w.best_ns = r->ns;
        w.best = c;
      }
    }
  }

  // --list-workloads: one line per workload, its knobs' options with the
  // hand-written choice marked *.
  void list() {
    out_ << "kilnc tune: " << model_path_ << ", target " << target_ << ": " << workloads_.size() << " workloads\n";
    for (const Workload& w : workloads_) {
      out_ << w.key << " kernels=" << w.kernels << " flops=" << std::fixed << std::setprecision(0) << w.space->flops
           << " points=" << tune::space_size(*w.space) << (w.from_log ? " (in the log)" : "") << " knobs:";
      for (const tune::Knob& k : w.space->knobs) {
        out_ << " " << k.name << "={";
        for (size_t i = 0; i < k.options.size(); i++)
          out_ << (i ? "," : "") << k.options[i] << (k.options[i] == k.fallback ? "*" : "");
        out_ << "}";
      }
      out_ << "\n";
    }
  }

  void connect() {
    std::string address = options_.rpc;
    if (address.empty()) {
      if (active_.empty()) return;  // nothing to measure
      address = local_.start(options_.kiln_tool.empty() ? find_kiln_tool() : options_.kiln_tool);
    }
    std::string why;
    user_assert(client_.Open(address.c_str(), options_.token, 30000, &why))
        << "kilnc tune: " << why;
    server_ = address + " (" + client_.server().arch + ", " + std::to_string(client_.server().cpu_count) + " CPUs)";
    if (options_.compile.target.vulkan) return;  // SPIR-V: any server with a Vulkan device
    // The runtime's name for the target's architecture (its ELF loader's).
    std::string arch = options_.compile.target.triple.substr(0, options_.compile.target.triple.find('-'));
    if (arch == "arm64") arch = "aarch64";
    if (arch.rfind("arm", 0) == 0 || arch.rfind("thumb", 0) == 0) arch = "arm";
    user_assert(arch == client_.server().arch)
        << "kilnc tune: the server at " << server_ << " runs " << client_.server().arch << " code, but the target is "
        << options_.compile.target.triple << ": give --target for the device, e.g. --target='llvm -mtriple="
        << (client_.server().arch == "arm" ? "armv7a-linux-gnueabihf" : client_.server().arch + "-linux-gnu")
        << " -mcpu=...'";
  }

  // The model as the hand-written rules compile it, run once: a server that
  // cannot run it at all (no Vulkan device, say) ends the tuning before any
  // trial is spent on it.
  void check_server_runs_model() {
    if (!client_connected() || active_.empty()) return;
    std::vector<double> unused;
    double ns = 0;
    std::string why;
    user_assert(measure(compile({}), false, &unused, &ns, &why))
        << "kilnc tune: the server at " << server_ << " cannot run the model (compiled with the hand-written "
        << "points): " << why;
  }

  // Compiles the model with the points `apply`; its tuning context (spaces,
  // kernels, dispatches) is left in scratch_.
  std::string compile(const std::map<std::string, Config>& apply) {
    scratch_ = tune::Tuning();
    scratch_.apply = apply;
    CompileOptions options = options_.compile;
    options.tuning = &scratch_;
    options.progress = nullptr;
    std::string bundle = compile_model_file(model_path_, options).bundle;
    return bundle;
  }

  // Measures `bundle`; per dispatch the fastest of the repeats. False with *why.
  bool measure(const std::string& bundle, bool per_dispatch, std::vector<double>* dispatch_ns, double* total_ns,
               std::string* why) {
    kiln_rpc::RunRequest r;
    r.warmup = 1;
    r.repeats = options_.repeats;
    r.number = 1;
    r.threads = options_.threads;
    r.device = options_.compile.target.vulkan ? 2 : 1;  // Vulkan (the server's automatic device), the CPU
    r.timeout_ms = 120000;
    r.flags = per_dispatch ? kiln_rpc::kRunDispatchTimes : 0;
    r.bundle = (const uint8_t*)bundle.data();
    r.bundle_size = bundle.size();
    kiln_rpc::RunReply reply;
    kiln_rpc::ErrorReply error;
    if (!client_.Run(r, &reply, &error)) {
      user_assert(error.code) << "kilnc tune: the server at " << server_ << ": " << error.message;
      *why = std::string(kiln_rpc::ErrorCodeName(error.code)) + ": " + error.message;
      return false;
    }
    device_ = reply.device;
    *total_ns = (double)*std::min_element(reply.repeat_ns.begin(), reply.repeat_ns.end());
    if (!per_dispatch) return true;
    user_assert(reply.dispatches == scratch_.dispatch_kernels.size())
        << "kilnc tune: the server at " << server_ << " timed " << reply.dispatches << " dispatches of a bundle that has "
        << scratch_.dispatch_kernels.size() << " (is it a kiln rpc-server of this protocol?)";
    dispatch_ns->assign(reply.dispatches, std::numeric_limits<double>::infinity());
    for (size_t r = 0; r < reply.repeat_ns.size(); r++)
      for (size_t d = 0; d < reply.dispatches; d++)
        (*dispatch_ns)[d] = std::min((*dispatch_ns)[d], (double)reply.dispatch_ns[r * reply.dispatches + d]);
    return true;
  }

  // Each workload's time in the last compile's bundle: the mean of its dispatches'.
  std::map<std::string, double> workload_times(const std::vector<double>& dispatch_ns) const {
    std::map<std::string, std::pair<double, int>> sums;  // workload -> (sum of its dispatches' ns, count)
    for (size_t d = 0; d < dispatch_ns.size(); d++) {
      auto it = scratch_.kernel_workload.find(scratch_.dispatch_kernels[d]);
      if (it == scratch_.kernel_workload.end()) continue;
      sums[it->second].first += dispatch_ns[d];
      sums[it->second].second++;
    }
    std::map<std::string, double> times;
    for (const auto& [key, sum] : sums) times[key] = sum.first / sum.second;
    return times;
  }

  // Appends `w`'s verdict: the point to use and its time (validated).
  void log_verdict(const Workload& w, const Config& point, double ns) {
    tune::Record r;
    r.workload = w.key;
    r.target = target_;
    r.kiln = kKilncVersion;
    r.threads = options_.threads;
    r.config = point;
    r.ns = ns;
    r.model = model_path_.substr(model_path_.rfind('/') + 1);
    r.trial = w.trials;
    r.validated = true;
    log_ << tune::record_json(r) << "\n";
    measured_records_++;
  }

  // The search's fastest point of a workload is its fastest of many noisy
  // measurements: biased low. So the hand-written and the best points meet
  // head to head -- two bundles, alternating, every dispatch timed -- and a
  // workload keeps its best point only where the median over the rounds
  // beats the hand-written one's by kKeepMargin. The verdicts are logged as
  // validated records, which --tuning-log prefers.
  void validate() {
    std::map<std::string, Config> plain_apply, tuned_apply;
    std::vector<Workload*> contested;
    for (Workload& w : workloads_) {
      if (w.from_log && !w.best.empty()) plain_apply[w.key] = tuned_apply[w.key] = w.best;
      if (w.from_log || w.measured.empty()) continue;
      if (w.best == tune::canonical(*w.space, {})) {  // the hand-written point is the best: nothing to contest
        log_verdict(w, w.best, w.best_ns);
        w.best = Config();
        continue;
      }
      tuned_apply[w.key] = w.best;
      contested.push_back(&w);
    }
    log_.flush();
    if (contested.empty()) return;
    // (Points change schedules, not the kernels: both bundles have the same
    // dispatches, named as in scratch_.)
    std::string bundles[2] = {compile(plain_apply), compile(tuned_apply)};
    std::map<std::string, std::vector<double>> samples[2];
    std::string why;
    for (int round = 0; round < kValidationRounds; round++)
      for (int which : {round % 2, 1 - round % 2}) {
        std::vector<double> dispatch_ns;
        double total = 0;
        bool ok = measure(bundles[which], true, &dispatch_ns, &total, &why);
        std::map<std::string, double> times = ok ? workload_times(dispatch_ns) : std::map<std::string, double>();
        if (!ok) {
          out_ << "validation: not measured (" << why << "); keeping the search's best points\n";
          return;
        }
        for (const auto& [key, ns] : times) samples[which][key].push_back(ns);
      }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? -1.0 : v[v.size() / 2];
    };
    for (Workload* w : contested) {
      double plain = median(samples[0][w->key]), tuned = median(samples[1][w->key]);
      if (plain < 0 || tuned < 0) continue;
      w->validated = true;
      w->default_ns = plain;
      bool keep = tuned < plain * (1 - kKeepMargin);
      log_verdict(*w, keep ? w->best : tune::canonical(*w->space, {}), keep ? tuned : plain);
      w->best_ns = keep ? tuned : plain;
      if (!keep) w->best = Config();
    }
    log_.flush();
  }

  // The next point of `w`: the hand-written one first, then the cost model's pick.
  bool propose(Workload& w, int64_t round) {
    const Space& space = *w.space;
    const Config plain = tune::canonical(space, {});
    if (!w.seen.count(config_text(plain))) {  // the hand-written point first
      w.pending = plain;
      return true;
    }
    std::vector<Config> pool;
    std::set<std::string> pooled;
    auto consider = [&](const Config& point) {
      Config c = tune::canonical(space, point);  // points differing in idle knobs are one
      std::string text = config_text(c);
      if (!w.seen.count(text) && pooled.insert(text).second) pool.push_back(c);
    };
    // Neighbours of the three fastest: one knob one step along its options.
    std::vector<std::pair<Config, double>> ranked = w.measured;
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (size_t i = 0; i < std::min<size_t>(3, ranked.size()); i++)
      for (const tune::Knob& k : space.knobs) {
        auto at = std::find(k.options.begin(), k.options.end(), ranked[i].first.at(k.name)) - k.options.begin();
        for (int step : {-1, 1}) {
          int64_t j = at + step;
          if (j < 0 || j >= (int64_t)k.options.size()) continue;
          Config c = ranked[i].first;
          c[k.name] = k.options[(size_t)j];
          consider(c);
        }
      }
    size_t neighbours = pool.size();
    for (size_t attempt = 0; attempt < 4 * kPool && pool.size() < neighbours + kPool; attempt++) {
      Config c;
      for (const tune::Knob& k : space.knobs) c[k.name] = k.options[rng_() % k.options.size()];
      consider(c);
    }
    if (pool.empty()) return false;  // every point seen
    const std::vector<std::string>& names = knob_names_[space.schedule];
    tune::CostModel& model = models_[space.schedule];
    std::uniform_real_distribution<double> coin(0, 1);
    if (!model.trained() || coin(rng_) < kRandomShare) {
      // Untrained, or the random share: a neighbour of the best half the time.
      bool near = neighbours && coin(rng_) < 0.5;
      w.pending = pool[near ? rng_() % neighbours : rng_() % pool.size()];
      return true;
    }
    double best = -std::numeric_limits<double>::infinity();
    for (const Config& c : pool) {
      double score = model.predict(features(w, c, names));
      if (score > best) {
        best = score;
        w.pending = c;
      }
    }
    return true;
  }

  void refit() {
    std::map<std::string, std::pair<std::vector<std::vector<double>>, std::vector<double>>> data;
    for (const Workload& w : workloads_)
      for (const auto& [c, ns] : w.measured) {
        auto& [rows, targets] = data[w.space->schedule];
        rows.push_back(features(w, c, knob_names_[w.space->schedule]));
        targets.push_back(std::log(w.space->flops / ns));  // log GFLOP/s (higher is better)
      }
    for (auto& [schedule, d] : data)
      if (d.first.size() >= kMinTraining) models_[schedule].fit(d.first, d.second);
  }

  void run_round(int64_t round) {
    std::map<std::string, Config> apply;
    std::vector<Workload*> trying;
    for (Workload& w : workloads_) {
      if (!w.done && w.trials < options_.trials && propose(w, round)) {
        apply[w.key] = w.pending;
        trying.push_back(&w);
        continue;
      }
      w.done = true;  // from the log, nothing to choose, out of trials, or every point seen
      if (!w.best.empty()) apply[w.key] = w.best;
    }
    if (trying.empty()) return;
    std::string why;
    std::vector<double> dispatch_ns;
    double total_ns = 0;
    bool ok = false;
    try {
      ok = measure(compile(apply), true, &dispatch_ns, &total_ns, &why);
    } catch (const InternalError& e) {  // a point the compiler cannot build: a kilnc bug, recorded
      why = std::string("compile: ") + e.what();
    }
    std::map<std::string, double> times;
    if (ok) times = workload_times(dispatch_ns);
    for (Workload* w : trying) {
      tune::Record r;
      r.workload = w->key;
      r.target = target_;
      r.kiln = kKilncVersion;
      r.threads = options_.threads;
      r.config = w->pending;
      r.model = model_path_.substr(model_path_.rfind('/') + 1);
      r.trial = ++w->trials;
      auto t = times.find(w->key);
      if (t != times.end()) {
        r.ns = t->second;
        w->measured.push_back({w->pending, r.ns});
        if (w->pending == tune::canonical(*w->space, {})) w->default_ns = r.ns;
        if (r.ns < w->best_ns) {
          w->best_ns = r.ns;
          w->best = w->pending;
        }
      } else {
        r.error = ok ? "no dispatch of this workload was timed" : why;
      }
      w->seen.insert(config_text(w->pending));
      log_ << tune::record_json(r) << "\n";
      measured_records_++;
    }
    log_.flush();
    refit();
    if (options_.progress) {
      const Workload* last = trying.back();
      fprintf(stderr, "\r\033[Kkilnc tune: round %lld, %zu workloads in it, %.0f s; %s: %lld/%lld trials, best %.1f GFLOP/s",
              (long long)round + 1, trying.size(), seconds_since(t0_), last->key.c_str(), (long long)last->trials,
              (long long)options_.trials, std::isfinite(last->best_ns) ? last->space->flops / last->best_ns : 0.0);
      fflush(stderr);
    }
  }

  // The model with the hand-written and the tuned points, alternately.
  void compare_model(std::ostream& out) {
    std::map<std::string, Config> best;
    for (const Workload& w : workloads_)
      if (!w.best.empty()) best[w.key] = w.best;
    if (!client_connected()) return;
    if (best.empty()) {
      out << "model: every workload keeps its hand-written point\n";
      return;
    }
    std::string plain = compile({}), tuned = compile(best);
    std::vector<double> plain_ns, tuned_ns, unused;
    std::string why;
    for (int round = 0; round < 3; round++) {
      double ns = 0;
      for (bool which : {round % 2 == 0, round % 2 != 0}) {
        if (!measure(which ? plain : tuned, false, &unused, &ns, &why)) {
          out << "model: not measured (" << why << ")\n";
          return;
        }
        (which ? plain_ns : tuned_ns).push_back(ns);
      }
    }
    double p = *std::min_element(plain_ns.begin(), plain_ns.end()), t = *std::min_element(tuned_ns.begin(), tuned_ns.end());
    out << std::fixed << std::setprecision(3) << "model: hand-written " << p / 1e6 << " ms, tuned " << t / 1e6
        << " ms (" << std::setprecision(2) << p / t << "x; fastest of 3 alternating measurements of "
        << options_.repeats << " runs each)\n";
  }

  bool client_connected() const { return !server_.empty(); }

  void summary() {
    size_t from_log = 0, fixed = 0, tuned = 0;
    for (const Workload& w : workloads_) {
      if (w.from_log) from_log++;
      else if (tune::space_size(*w.space) <= 1) fixed++;
      else tuned++;
    }
    std::ostream& out = out_;
    out << "kilnc tune: " << model_path_ << ", target " << target_ << ", " << options_.threads << " thread"
        << (options_.threads == 1 ? "" : "s") << (server_.empty() ? "" : ", on " + server_)
        << (device_.empty() ? "" : ", device " + device_) << "\n";
    out << "workloads: " << workloads_.size() << " (" << tuned << " tuned here, " << from_log
        << " from the log without measuring, " << fixed << " with nothing to choose); " << measured_records_
        << " measurements in " << rounds_ << " rounds, " << std::fixed << std::setprecision(0) << seconds_since(t0_)
        << " s" << (budget_ended_ ? " (time budget reached)" : "") << "\n";
    out << "  " << std::left << std::setw(60) << "workload" << std::right << std::setw(8) << "kernels" << std::setw(8)
        << "trials" << std::setw(12) << "default ms" << std::setw(10) << "best ms" << std::setw(9) << "GFLOP/s"
        << std::setw(9) << "speedup" << std::setw(10) << "checked" << "  point\n";
    for (const Workload& w : workloads_) {
      out << "  " << std::left << std::setw(60) << w.key << std::right << std::setw(8) << w.kernels;
      out << std::setw(8) << (w.from_log ? std::string("log") : std::to_string(w.trials));
      out << std::fixed << std::setprecision(4) << std::setw(12);
      if (w.default_ns > 0) out << w.default_ns / 1e6; else out << "-";
      out << std::setw(10);
      if (std::isfinite(w.best_ns)) out << w.best_ns / 1e6; else out << "-";
      out << std::setprecision(1) << std::setw(9);
      if (std::isfinite(w.best_ns)) out << w.space->flops / w.best_ns; else out << "-";
      out << std::setprecision(2) << std::setw(9);
      if (w.default_ns > 0 && std::isfinite(w.best_ns)) out << w.default_ns / w.best_ns << "x"; else out << "-";
      out << std::setw(10) << (w.validated ? "yes" : w.from_log ? "log" : "-");
      out << "  " << (w.best.empty() ? std::string("(hand-written)") : config_text(tune::active(*w.space, w.best))) << "\n";
    }
    compare_model(out);
    out << "log: " << options_.log_path << " (" << measured_records_ << " records added)\n";
  }

  std::string model_path_;
  const TuneOptions& options_;
  std::ostream& out_;
  std::mt19937_64 rng_;
  std::chrono::steady_clock::time_point t0_;
  std::string target_;                 // the log's target key
  std::string server_;                 // "ADDR (arch, N CPUs)" once connected
  std::string device_;                 // the device the server measured on ("cpu", or the Vulkan device's name)
  tune::Tuning discovery_;             // the first compile's context, kept (Workload::space points into it)
  tune::Tuning scratch_;               // each later compile's
  std::vector<Workload> workloads_;    // every workload of the model
  std::vector<Workload*> active_;      // those measured here
  std::map<std::string, std::vector<std::string>> knob_names_;  // schedule -> its knobs (feature order)
  std::map<std::string, tune::CostModel> models_;                // schedule -> its cost model
  kiln_rpc::Client client_;
  LocalServer local_;
  std::ofstream log_;
  int64_t rounds_ = 0, measured_records_ = 0;
  bool budget_ended_ = false;
};

}  // namespace

void tune_model(const std::string& model_path, const TuneOptions& options, std::ostream& out) {
  Tuner(model_path, options, out).run();
}

}  // namespace kiln
