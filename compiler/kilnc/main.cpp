// kilnc: compiles an ONNX model into a Kiln bundle.
//
//   kilnc MODEL.onnx -o MODEL.kiln [--target=host|vulkan|"llvm -mtriple=.. -mcpu=.. -mattr=.."]
//         [--vulkan-features=none|int64|float64|all] [--vulkan-shared-memory=on|off]
//         [--input-shape NAME=1,3,224,224|NAME=1,3,32..1280,?]... [--dim NAME=LO..HI]...
//         [--dump-after=PASS]... [--dump-graph-after=PASS]...
//         [--disable-graph-pass=PASS]... [--dump-graph] [--report] [--kernels=dynamic|static]
//   kilnc --list-operators | --help | --version
// Options are parsed from one table (tools/cli/cli_options.h, shared with
// the kiln tool): --opt=value and --opt value alike. On a terminal, a
// compilation taking more than a second shows a progress line
// (kilnc/progress_line.h).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <llvm/Config/llvm-config.h>

#include "bundle/bundle_signer.h"
#include "cli_options.h"
#include "codegen/codegen_spirv.h"
#include "codegen/static_kernels.h"
#include "driver/pipeline.h"
#include "graph/op_table.h"
#include "kiln_bundle_version.h"
#include "kilnc/progress_line.h"
#include "support/diagnostics.h"
#include "support/version.h"

namespace {

enum OptionId {
  kOutput, kTarget, kVulkanFeatures, kVulkanSharedMemory, kKernels, kMaxArena, kInputShape, kDim, kInputValue, kFreezeInput,
  kSignKey, kPrintPublicKey, kDumpAfter, kDumpGraphAfter, kDisableGraphPass, kDumpGraph, kReport, kListOperators,
  kVersion, kHelp,
};

// "a, b, c" of `names`.
std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

// The option table; `storage` keeps the help texts built from the pass lists.
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
       "for the model's own name for it, bounded with --dim"},
      {kDim, "--dim", Arity::kValue, "NAME=LO..HI",
       "bounds of the model's dimension NAME (a dim_param of its inputs), known only\n"
       "at run time (repeatable)"},
      {kInputValue, "--input-value", Arity::kValue, "NAME=LO..HI",
       "the values of integer model input NAME (at most 16 elements), read at run\n"
       "time, lie in LO..HI (0 <= LO <= HI): sizes they decide (a window's length,\n"
       "Pad's pads, Range's limit) are planned for HI (repeatable)"},
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

void usage(FILE* f, const kiln_cli::OptionTable& table) {
  fprintf(f,
          "usage: kilnc MODEL.onnx -o OUT.kiln [options]\n"
          "       kilnc --list-operators | --help | --version\n"
          "Options take their value as --opt=value or --opt value. On a terminal, a\n"
          "compilation that takes more than a second shows a progress line on stderr.\n\n"
          "options:\n%s",
          kiln_cli::FormatOptions(table).c_str());
}

void print_version() {
  printf("kilnc %s\n", kiln::kKilncVersion);
  printf("bundle format %d.%d\n", KILN_BUNDLE_VERSION_MAJOR, KILN_BUNDLE_VERSION_MINOR);
  printf("LLVM %s\n", LLVM_VERSION_STRING);
  printf("Vulkan (--target=vulkan): %s\n",
         kiln::spirv_codegen_available() ? "yes (glslang, SPIRV-Tools)" : "no (built without glslang)");
}

// The operator table (graph/op_table.def): one line per operator.
void list_operators() {
  for (const auto& t : kiln::graph::op_table())
    printf("%-28s %-12s %s\n", t.name, kiln::graph::family_name(t.family), kiln::graph::role_name(t.role));
}

// "4096", "512M", "4G", "1T" (binary multiples); a user error otherwise.
uint64_t parse_bytes(const std::string& text, const char* option) {
  uint64_t v = 0;
  user_assert(kiln_cli::ParseByteCount(text.c_str(), &v))
      << option << " takes a positive byte count such as 4096, 512M or 4G, not '" << text << "'";
  return v;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  user_assert(f.good()) << "cannot write '" << path << "'";
  f.write(bytes.data(), (std::streamsize)bytes.size());
  f.close();
  user_assert(f.good()) << "failed writing '" << path << "'";
}

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
  user_assert(ok) << "bad " << (least > 0 ? "dimension" : "value range") << " '" << item << "' in " << arg << ": "
                  << (least > 0 ? "a size D > 0, a range LO..HI with 0 < LO <= HI <= 2^31" : "LO..HI with 0 <= LO <= HI <= 2^31")
                  << (dots == std::string::npos && least > 0 ? ", or ?" : "");
  return {lo, hi};
}

std::vector<kiln::DimSpec> parse_dims(const std::string& text, const std::string& arg) {
  std::vector<kiln::DimSpec> dims;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    kiln::DimSpec d;
    if (item == "?") {
      d.named = true;
    } else {
      auto [lo, hi] = parse_range(item, arg);
      d.lo = lo;
      d.hi = hi;
    }
    dims.push_back(d);
  }
  user_assert(!dims.empty()) << "no dimensions in " << arg;
  return dims;
}

// Applies option `id` with `v` to the compilation. Values are checked here
// (user errors, exit 1); the parser has checked the command line's shape.
void apply_option(int id, const std::string& v, std::string* output, std::string* target,
                  kiln::CompileOptions* options) {
  switch (id) {
    case kOutput: *output = v; break;
    case kTarget: *target = v; break;
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

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, target = "host";
  kiln::CompileOptions options;
  std::vector<std::string> help_texts;
  const kiln_cli::OptionTable table = option_table(&help_texts);
  try {
    kiln_cli::Parser parser(argc - 1, argv + 1);
    for (;;) {
      const kiln_cli::Option* option = nullptr;
      const char* value = nullptr;
      std::string error;
      kiln_cli::Next next = parser.Read(table, &option, &value, &error);
      if (next == kiln_cli::Next::kEnd) break;
      if (next == kiln_cli::Next::kError) {
        fprintf(stderr, "kilnc: error: %s\n(kilnc --help lists the options)\n", error.c_str());
        return 2;
      }
      if (next == kiln_cli::Next::kPositional) {
        user_assert(input.empty()) << "more than one input model given ('" << input << "' and '" << value << "')";
        input = value;
      } else if (option->id == kHelp) {
        usage(stdout, table);
        return 0;
      } else if (option->id == kVersion) {
        print_version();
        return 0;
      } else if (option->id == kListOperators) {
        list_operators();
        return 0;
      } else if (option->id == kPrintPublicKey) {
        kiln::SigningKey key = kiln::read_signing_key(value);
        printf("// %s: Ed25519 public key for kiln_model_load_options_t.trusted_public_keys\n", value);
        printf("static const uint8_t kTrustedKey[32] = %s;\n", kiln::public_key_c_array(key.public_key).c_str());
        printf("// hex: %s\n", kiln::public_key_hex(key.public_key).c_str());
        return 0;
      } else {
        apply_option(option->id, value ? value : "", &output, &target, &options);
      }
    }
    if (input.empty() || output.empty()) {
      fprintf(stderr, "kilnc: error: %s\n", input.empty() ? "missing MODEL.onnx" : "missing -o OUT.kiln");
      usage(stderr, table);
      return 2;
    }
    options.target = kiln::TargetSpec::parse(target);
    options.static_name = kiln::static_library_name(output);
    // The progress line only where nothing else writes to the terminal.
    bool quiet_stderr = !options.report && !options.dump_graph && options.dump_after.empty() &&
                        options.dump_graph_after.empty();
    kiln::ProgressLine progress(quiet_stderr && isatty(STDERR_FILENO));
    options.progress = progress.receiver();
    kiln::CompileOutput out = kiln::compile_onnx_file(input, options);
    progress.Finish();
    // OUT.kiln, and for static kernels OUT.kernels.o / OUT.kernels.h beside it.
    std::string stem = output;
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".kiln") == 0) stem.resize(stem.size() - 5);
    write_file(output, out.bundle);
    if (!out.kernels_object.empty()) {
      write_file(stem + ".kernels.o", out.kernels_object);
      write_file(stem + ".kernels.h", out.kernels_header);
    }
    return 0;
  } catch (const kiln::UserError& e) {
    fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  } catch (const kiln::InternalError& e) {
    fprintf(stderr, "kilnc: %s\n(this is a bug in kilnc; please report it with the model)\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  }
}
