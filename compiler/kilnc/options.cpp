// kilnc's command line (options.h).
#include "kilnc/options.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "support/diagnostics.h"
#include "support/version.h"
#include "tune/tuning_log.h"

namespace kiln::kilnc {

namespace {

// "a, b, c" of `names`.
std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

// The option table; `storage` keeps the help texts built from the pass lists.
}  // namespace

kiln_cli::OptionTable option_table(std::vector<std::string>* storage) {
  storage->push_back("print the IR after PASS (repeatable): " + join(kiln::pipeline_pass_names()) + ", all");
  storage->push_back("print the graph after graph pass PASS when it changed it\n(repeatable): " +
                     join(kiln::graph_pass_names()) + ", all");
  using kiln_cli::Arity;
  return {
      {kOutput, "-o", Arity::kValue, "OUT.kiln", "the bundle to write"},
      {kTarget, "--target", Arity::kValue, "T",
       "'host' (default), 'vulkan' (SPIR-V) or\n'llvm -mtriple=TRIPLE -mcpu=CPU -mattr=FEATURES'"},
      {kVulkanFeatures, "--vulkan-features", Arity::kValue, "F",
       "none|int64|float64|all (default): optional device features (shaderInt64,\n"
       "shaderFloat64) Vulkan kernels may use; the others run on the host CPU"},
      {kVulkanSharedMemory, "--vulkan-shared-memory", Arity::kValue, "on|off",
       "GPU schedules tile convolutions and matrix products through workgroup\n"
       "shared memory, and attention runs as one kernel (default off: on for\n"
       "desktop-class GPUs; it is no faster on Mali, V3D or lavapipe)"},
      {kKernels, "--kernels", Arity::kValue, "K",
       "'dynamic' (default): the kernels travel in the bundle; 'static': they are\n"
       "written to OUT.kernels.o (with OUT.kernels.h) for the application to link and\n"
       "register, for platforms that forbid mapping code at run time (iOS)"},
      {kMaxArena, "--max-arena", Arity::kValue, "BYTES",
       "refuse models whose arena needs more (default 4G; K, M, G, T suffixes)"},
      {kInputShape, "--input-shape", Arity::kValue, "NAME=D,D,..",
       "shape of model input NAME (repeatable); a dimension is a size, a range\n"
       "LO..HI of sizes known only at run time (one bundle serves them all), or ?\n"
       "for the model's own name for it, bounded with --dim; NAME= is a scalar"},
      {kDim, "--dim", Arity::kValue, "NAME=LO..HI",
       "bounds of the model's dimension NAME (a dim_param of its inputs), known only\n"
       "at run time (repeatable)"},
      {kInputValue, "--input-value", Arity::kValue, "NAME=LO..HI",
       "the values of integer model input NAME (at most 16 elements), read at run\n"
       "time, lie in LO..HI (0 <= LO <= HI): sizes they decide (a window's length,\n"
       "Pad's pads, Range's limit) are planned for HI (repeatable)"},
      {kSequenceLength, "--sequence-length", Arity::kValue, "NAME=N",
       "model input NAME, a sequence, holds N tensors (0..4096): inputs NAME[0] ..\n"
       "NAME[N-1] of the bundle, shaped by the model or --input-shape 'NAME[i]=..'\n"
       "(repeatable; docs/sequences.md)"},
      {kStringBytes, "--string-bytes", Arity::kValue, "N",
       "bytes per element (on average) that string model inputs may hold, 1..65536\n"
       "(default 64): each input's table is sized for N times its elements"},
      {kFreezeInput, "--freeze-input", Arity::kValue, "NAME=FILE",
       "make model input NAME a constant holding FILE, a serialized ONNX TensorProto\n"
       "(as in ONNX test data); for shape-deciding inputs (repeatable)"},
      {kSignKey, "--sign-key", Arity::kValue, "KEY.pem",
       "sign the bundle with this Ed25519 private key (PKCS#8 PEM: openssl genpkey\n"
       "-algorithm ed25519 -out KEY.pem); runtimes given its public key refuse\n"
       "bundles it did not sign (docs/bundle.md, Signatures)"},
      {kPrintPublicKey, "--print-public-key", Arity::kValue, "KEY.pem",
       "print the public key of KEY.pem as a C array for\n"
       "kiln_model_load_options_t.trusted_public_keys, and in hex; then exit"},
      {kTuningLog, "--tuning-log", Arity::kValue, "FILE",
       "compile each workload at the fastest point FILE records for this target and\n"
       "kilnc version (a log of kilnc tune); the others keep the hand-written schedules"},
      {kTuningThreads, "--tuning-threads", Arity::kValue, "N",
       "with --tuning-log: use its measurements made at N threads (needed when it\n"
       "holds several thread counts for this target)"},
      {kDumpAfter, "--dump-after", Arity::kValue, "PASS", (*storage)[0].c_str()},
      {kDumpGraphAfter, "--dump-graph-after", Arity::kValue, "PASS", (*storage)[1].c_str()},
      {kDisableGraphPass, "--disable-graph-pass", Arity::kValue, "PASS", "skip graph pass PASS (debugging; repeatable)"},
      {kDumpGraph, "--dump-graph", Arity::kFlag, "", "print the graph after import"},
      {kReport, "--report", Arity::kFlag, "", "print per-step and per-graph-pass statistics"},
      {kListOperators, "--list-operators", Arity::kFlag, "", "print the supported operators (name, family, role) and exit"},
      {kVersion, "--version", Arity::kFlag, "", "print kilnc's version, the bundle format it writes and LLVM's version"},
      {kHelp, "--help", Arity::kFlag, "", "print this help and exit"},
      {kHelp, "-h", Arity::kFlag, "", "the same as --help"},
  };
}


int64_t parse_count(const std::string& text, const char* option, int64_t lo, int64_t hi) {
  char* end = nullptr;
  long long v = strtoll(text.c_str(), &end, 10);
  user_assert(!text.empty() && *end == '\0' && v >= lo && v <= hi)
      << option << " takes a whole number from " << lo << " to " << hi << ", not '" << text << "'";
  return v;
}

uint64_t parse_bytes(const std::string& text, const char* option) {

  uint64_t v = 0;
  user_assert(kiln_cli::ParseByteCount(text.c_str(), &v))
      << option << " takes a positive byte count such as 4096, 512M or 4G, not '" << text << "'";
  return v;
}


namespace {

// A positive size, or LO..HI (sizes: 0 < LO; values: 0 <= LO).
std::pair<int64_t, int64_t> parse_range(const std::string& item, const std::string& arg, long long least = 1) {
  auto dots = item.find("..");
  std::string lo_text = dots == std::string::npos ? item : item.substr(0, dots);
  std::string hi_text = dots == std::string::npos ? item : item.substr(dots + 2);
  char* end = nullptr;
  long long lo = strtoll(lo_text.c_str(), &end, 10);
  bool ok = !lo_text.empty() && *end == '\0' && lo >= least && lo <= (1ll << 31);
  long long hi = strtoll(hi_text.c_str(), &end, 10);
  ok = ok && !hi_text.empty() && *end == '\0' && hi >= lo && hi <= (1ll << 31);
  const bool dim = arg.rfind("--input-shape", 0) == 0 || arg.rfind("--dim", 0) == 0;
  user_assert(ok) << "bad " << (dim ? "dimension" : "value range") << " '" << item << "' in " << arg << ": "
                  << (dim ? "a size D >= 0, a range LO..HI with 0 < LO <= HI <= 2^31" : "LO..HI with 0 <= LO <= HI <= 2^31")
                  << (dots == std::string::npos && dim ? ", or ?" : "");
  return {lo, hi};
}

std::vector<kiln::DimSpec> parse_dims(const std::string& text, const std::string& arg) {
  std::vector<kiln::DimSpec> dims;
  if (text.empty()) return dims;  // NAME=: a scalar
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    kiln::DimSpec d;
    if (item == "?") {
      d.named = true;
    } else {
      // A static size may be 0 (an empty tensor); a range's least size is 1.
      auto [lo, hi] = parse_range(item, arg, item.find("..") == std::string::npos ? 0 : 1);
      d.lo = lo;
      d.hi = hi;
    }
    dims.push_back(d);
  }
  return dims;
}

}  // namespace

void apply_option(int id, const std::string& v, CommandLine* line) {
  kiln::CompileOptions* options = &line->options;
  switch (id) {
    case kOutput: line->output = v; break;
    case kTarget: line->target = v; break;
    case kTuningLog: line->tuning_log = v; break;
    case kTuningThreads: line->tuning_threads = parse_count(v, "--tuning-threads", 1, 1024); break;
    case kVulkanFeatures:
      options->vulkan_features = v == "all" ? 3u : v == "float64" ? 2u : v == "int64" ? 1u : v == "none" ? 0u : 4u;
      user_assert(options->vulkan_features != 4u) << "--vulkan-features takes none, int64, float64 or all, not '" << v << "'";
      break;
    case kVulkanSharedMemory:
      user_assert(v == "on" || v == "off") << "--vulkan-shared-memory takes on or off, not '" << v << "'";
      options->vulkan_shared_memory = v == "on";
      break;
    case kSignKey: options->sign_key = v; break;
    case kMaxArena: options->max_arena_bytes = parse_bytes(v, "--max-arena"); break;
    case kKernels:
      user_assert(v == "static" || v == "dynamic") << "--kernels takes dynamic or static, not '" << v << "'";
      options->static_kernels = v == "static";
      break;
    case kInputShape: {
      auto eq = v.rfind('=');
      user_assert(eq != std::string::npos && eq > 0) << "--input-shape takes NAME=D0,D1,...";
      options->import.input_shapes[v.substr(0, eq)] = parse_dims(v.substr(eq + 1), "--input-shape " + v);
      break;
    }
    case kDim: {
      auto eq = v.rfind('=');
      user_assert(eq != std::string::npos && eq > 0) << "--dim takes NAME=LO..HI";
      options->import.dim_bounds[v.substr(0, eq)] = parse_range(v.substr(eq + 1), "--dim " + v);
      break;
    }
    case kInputValue: {
      auto eq = v.rfind('=');
      user_assert(eq != std::string::npos && eq > 0 && v.find("..", eq) != std::string::npos)
          << "--input-value takes NAME=LO..HI";
      options->import.input_values[v.substr(0, eq)] = parse_range(v.substr(eq + 1), "--input-value " + v, 0);
      break;
    }
    case kSequenceLength: {
      auto eq = v.rfind('=');
      user_assert(eq != std::string::npos && eq > 0) << "--sequence-length takes NAME=N";
      options->import.sequence_lengths[v.substr(0, eq)] = parse_count(v.substr(eq + 1), "--sequence-length", 0, 4096);
      break;
    }
    case kStringBytes: options->import.string_bytes = parse_count(v, "--string-bytes", 1, 65536); break;
    case kFreezeInput: {
      auto eq = v.find('=');
      user_assert(eq != std::string::npos && eq > 0) << "--freeze-input takes NAME=FILE";
      std::ifstream f(v.substr(eq + 1), std::ios::binary);
      user_assert(f.good()) << "--freeze-input: cannot open '" << v.substr(eq + 1) << "'";
      std::stringstream ss;
      ss << f.rdbuf();
      options->import.frozen_inputs[v.substr(0, eq)] = ss.str();
      break;
    }
    case kDumpGraphAfter: options->dump_graph_after.insert(v); break;
    case kDisableGraphPass: options->disabled_graph_passes.insert(v); break;
    case kDumpAfter: options->dump_after.insert(v); break;
    case kDumpGraph: options->dump_graph = true; break;
    case kReport: options->report = true; break;
  }
}


int parse_command_line(int argc, char** argv, const kiln_cli::OptionTable& table, const char* command,
                       CommandLine* line, const std::function<int(const kiln_cli::Option&, const std::string&)>& handle) {
  kiln_cli::Parser parser(argc - 1, argv + 1);
  for (;;) {
    const kiln_cli::Option* option = nullptr;
    const char* value = nullptr;
    std::string error;
    kiln_cli::Next next = parser.Read(table, &option, &value, &error);
    if (next == kiln_cli::Next::kEnd) return -1;
    if (next == kiln_cli::Next::kError) {
      fprintf(stderr, "%s: error: %s\n(%s --help lists the options)\n", command, error.c_str(), command);
      return 2;
    }
    std::string v = value ? value : "";
    if (next == kiln_cli::Next::kPositional) {
      user_assert(line->input.empty()) << "more than one input model given ('" << line->input << "' and '" << v << "')";
      line->input = v;
      continue;
    }
    int status = handle(*option, v);
    if (status >= 0) return status;
  }
}

int run_reporting_errors(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const kiln::UserError& e) {
    fprintf(stderr, "%s: error: %s\n", command, e.what());
    return 1;
  } catch (const kiln::InternalError& e) {
    fprintf(stderr, "%s: %s\n(this is a bug in kilnc; please report it with the model)\n", command, e.what());
    return 3;
  } catch (const std::exception& e) {
    fprintf(stderr, "%s: error: %s\n", command, e.what());
    return 1;
  }
}

void finish_options(CommandLine* line, kiln::tune::Tuning* tuning) {
  line->options.target = kiln::TargetSpec::parse(line->target);
  if (line->tuning_log.empty()) return;
  std::vector<kiln::tune::Record> records = kiln::tune::read_tuning_log(line->tuning_log, /*missing_ok=*/false);
  const std::string target = line->options.target.tuning_key();
  std::set<int64_t> threads;  // the thread counts it measured this target at
  for (const kiln::tune::Record& r : records)
    if (r.target == target && r.kiln == kiln::kKilncVersion && r.ns >= 0) threads.insert(r.threads);
  if (!line->tuning_threads && threads.size() > 1) {
    std::string counts;
    for (int64_t t : threads) counts += (counts.empty() ? "" : ", ") + std::to_string(t);
    user_error << "--tuning-log: '" << line->tuning_log << "' holds measurements at " << counts
               << " threads for this target: say which the bundle will run with (--tuning-threads N)";
  }
  tuning->apply = kiln::tune::best_configs(records, target, kiln::kKilncVersion, line->tuning_threads);
  line->options.tuning = tuning;
}

}  // namespace kiln::kilnc
