// kilnc: compiles an ONNX model into a Kiln bundle.
//
//   kilnc MODEL.onnx -o MODEL.kiln [--target=host|vulkan|"llvm -mtriple=.. -mcpu=.. -mattr=.."]
//         [--vulkan-features=none|int64|float64|all] [--vulkan-shared-memory=on|off]
//         [--input-shape NAME=1,3,224,224|NAME=1,3,32..1280,?]... [--dim NAME=LO..HI]...
//         [--dump-after=PASS]... [--dump-graph-after=PASS]...
//         [--disable-graph-pass=PASS]... [--dump-graph] [--report] [--kernels=dynamic|static]
//   kilnc tune MODEL.onnx --log TUNE.jsonl [--rpc HOST:PORT] [--trials N] ... (kilnc/cmd_tune.cpp)
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
#include "kilnc/cmd_tune.h"
#include "kilnc/options.h"
#include "codegen/codegen_spirv.h"
#include "codegen/static_kernels.h"
#include "driver/pipeline.h"
#include "graph/op_table.h"
#include "kiln_bundle_version.h"
#include "kilnc/progress_line.h"
#include "support/diagnostics.h"
#include "support/version.h"

namespace {

void usage(FILE* f, const kiln_cli::OptionTable& table) {
  fprintf(f,
          "usage: kilnc MODEL.onnx -o OUT.kiln [options]\n"
          "       kilnc tune MODEL.onnx --log TUNE.jsonl [options]   (kilnc tune --help)\n"
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

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  user_assert(f.good()) << "cannot write '" << path << "'";
  f.write(bytes.data(), (std::streamsize)bytes.size());
  f.close();
  user_assert(f.good()) << "failed writing '" << path << "'";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln::kilnc;
  if (argc > 1 && !strcmp(argv[1], "tune")) return run_tune(argc - 1, argv + 1);
  return run_reporting_errors("kilnc", [&]() -> int {
    CommandLine line;
    std::vector<std::string> help_texts;
    const kiln_cli::OptionTable table = option_table(&help_texts);
    int status = parse_command_line(argc, argv, table, "kilnc", &line,
                                    [&](const kiln_cli::Option& option, const std::string& value) -> int {
      switch (option.id) {
        case kHelp: usage(stdout, table); return 0;
        case kVersion: print_version(); return 0;
        case kListOperators: list_operators(); return 0;
        case kPrintPublicKey: {
          kiln::SigningKey key = kiln::read_signing_key(value);
          printf("// %s: Ed25519 public key for kiln_model_load_options_t.trusted_public_keys\n", value.c_str());
          printf("static const uint8_t kTrustedKey[32] = %s;\n", kiln::public_key_c_array(key.public_key).c_str());
          printf("// hex: %s\n", kiln::public_key_hex(key.public_key).c_str());
          return 0;
        }
        default: apply_option(option.id, value, &line); return -1;
      }
    });
    if (status >= 0) return status;
    if (line.input.empty() || line.output.empty()) {
      fprintf(stderr, "kilnc: error: %s\n", line.input.empty() ? "missing MODEL.onnx" : "missing -o OUT.kiln");
      usage(stderr, table);
      return 2;
    }
    kiln::tune::Tuning tuning;
    finish_options(&line, &tuning);
    kiln::CompileOptions& options = line.options;
    options.static_name = kiln::static_library_name(line.output);
    // The progress line only where nothing else writes to the terminal.
    bool quiet_stderr = !options.report && !options.dump_graph && options.dump_after.empty() &&
                        options.dump_graph_after.empty();
    kiln::ProgressLine progress(quiet_stderr && isatty(STDERR_FILENO));
    options.progress = progress.receiver();
    options.warn = [&progress](const std::string& message) { progress.Print("kilnc: warning: " + message); };
    kiln::CompileOutput out = kiln::compile_model_file(line.input, options);
    progress.Finish();
    // OUT.kiln, and for static kernels OUT.kernels.o / OUT.kernels.h beside it.
    std::string stem = line.output;
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".kiln") == 0) stem.resize(stem.size() - 5);
    write_file(line.output, out.bundle);
    if (!out.kernels_object.empty()) {
      write_file(stem + ".kernels.o", out.kernels_object);
      write_file(stem + ".kernels.h", out.kernels_header);
    }
    return 0;
  });
}
