// kilnc: compiles an ONNX model into a Kiln bundle.
//
//   kilnc MODEL.onnx -o MODEL.kiln [--target=host|vulkan|"llvm -mtriple=.. -mcpu=.. -mattr=.."]
//         [--vulkan-features=none|int64|float64|all] [--vulkan-shared-memory=on|off]
//         [--input-shape NAME=1,3,224,224]... [--dump-after=PASS]... [--dump-graph-after=PASS]...
//         [--disable-graph-pass=PASS]... [--dump-graph] [--report] [--kernels=dynamic|static]
//   kilnc --list-operators
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/static_kernels.h"
#include "driver/pipeline.h"
#include "graph/op_table.h"
#include "support/diagnostics.h"

namespace {

void usage(FILE* f) {
  fprintf(f,
          "usage: kilnc MODEL.onnx -o OUT.kiln [options]\n"
          "       kilnc --list-operators   print the supported operators (name, family, role)\n"
          "  --target=T             'host' (default), 'vulkan' (SPIR-V) or 'llvm -mtriple=TRIPLE -mcpu=CPU -mattr=FEATURES'\n"
          "  --vulkan-shared-memory=on|off  GPU schedules tile convolutions and matrix products through\n"
          "                         workgroup shared memory (default off: on for desktop-class GPUs; it is no\n"
          "                         faster on Mali, V3D or lavapipe)\n"
          "  --vulkan-features=F    none|int64|float64|all (default): optional device features (shaderInt64,\n"
          "                         shaderFloat64) Vulkan kernels may use; the others run on the host CPU\n"
          "  --kernels=K            'dynamic' (default): the kernels travel in the bundle; 'static': they are\n"
          "                         written to OUT.kernels.o (with OUT.kernels.h) for the application to link\n"
          "                         and register, for platforms that forbid mapping code at run time (iOS)\n"
          "  --max-arena=BYTES      refuse models whose arena needs more (default 4G; K, M, G, T suffixes)\n"
          "  --input-shape N=D,D..  static shape for model input N (repeatable)\n"
          "  --freeze-input N=FILE  make model input N a constant holding FILE, a serialized ONNX\n"
          "                         TensorProto (as in ONNX test data); for shape-deciding inputs\n"
          "  --dump-after=PASS      print the IR after PASS (");
  bool first = true;
  for (auto& p : kiln::pipeline_pass_names()) {
    fprintf(f, "%s%s", first ? "" : ", ", p.c_str());
    first = false;
  }
  fprintf(f,
          ", all)\n"
          "  --dump-graph-after=P   print the graph after graph pass P when it changed it (");
  first = true;
  for (auto& p : kiln::graph_pass_names()) {
    fprintf(f, "%s%s", first ? "" : ", ", p.c_str());
    first = false;
  }
  fprintf(f,
          ", all)\n"
          "  --disable-graph-pass=P skip graph pass P (debugging)\n"
          "  --dump-graph           print the graph after import\n"
          "  --report               print per-step and per-graph-pass statistics\n");
}

// The operator table (graph/op_table.def): one line per operator.
void list_operators() {
  for (const auto& t : kiln::graph::op_table())
    printf("%-28s %-12s %s\n", t.name, kiln::graph::family_name(t.family), kiln::graph::role_name(t.role));
}

// "4096", "512M", "4G", "1T" (binary multiples); a user error otherwise.
uint64_t parse_bytes(const std::string& text, const char* option) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; i++) {
    user_assert(v <= (UINT64_MAX - 9) / 10) << option << ": '" << text << "' is too large";
    v = v * 10 + (uint64_t)(text[i] - '0');
  }
  int shift = 0;
  if (i + 1 == text.size()) shift = text[i] == 'K' ? 10 : text[i] == 'M' ? 20 : text[i] == 'G' ? 30 : text[i] == 'T' ? 40 : -1;
  user_assert(i > 0 && shift >= 0 && (i == text.size() || i + 1 == text.size()) && v > 0 && v <= (UINT64_MAX >> shift))
      << option << " takes a positive byte count such as 4096, 512M or 4G, not '" << text << "'";
  return v << shift;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  user_assert(f.good()) << "cannot write '" << path << "'";
  f.write(bytes.data(), (std::streamsize)bytes.size());
  f.close();
  user_assert(f.good()) << "failed writing '" << path << "'";
}

std::vector<int64_t> parse_dims(const std::string& text, const std::string& arg) {
  std::vector<int64_t> dims;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long long d = strtoll(item.c_str(), &end, 10);
    user_assert(!item.empty() && *end == '\0' && d > 0) << "bad dimension '" << item << "' in " << arg;
    dims.push_back(d);
  }
  user_assert(!dims.empty()) << "no dimensions in " << arg;
  return dims;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, target = "host";
  kiln::CompileOptions options;
  try {
    for (int i = 1; i < argc; i++) {
      std::string a = argv[i];
      auto value = [&](const char* flag) -> std::string {
        size_t n = strlen(flag);
        if (a.size() > n && a.compare(0, n, flag) == 0 && a[n] == '=') return a.substr(n + 1);
        user_assert(i + 1 < argc) << flag << " needs a value";
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "--list-operators") {
        list_operators();
        return 0;
      } else if (a == "-o") {
        output = value("-o");
      } else if (a.rfind("--target", 0) == 0) {
        target = value("--target");
      } else if (a.rfind("--vulkan-features", 0) == 0) {
        std::string v = value("--vulkan-features");
        options.vulkan_features = v == "all" ? 3u : v == "float64" ? 2u : v == "int64" ? 1u : v == "none" ? 0u : 4u;
        user_assert(options.vulkan_features != 4u) << "--vulkan-features takes none, int64, float64 or all, not '" << v << "'";
      } else if (a.rfind("--vulkan-shared-memory", 0) == 0) {
        std::string v = value("--vulkan-shared-memory");
        user_assert(v == "on" || v == "off") << "--vulkan-shared-memory takes on or off, not '" << v << "'";
        options.vulkan_shared_memory = v == "on";
      } else if (a.rfind("--max-arena", 0) == 0) {
        options.max_arena_bytes = parse_bytes(value("--max-arena"), "--max-arena");
      } else if (a.rfind("--kernels", 0) == 0) {
        std::string v = value("--kernels");
        user_assert(v == "static" || v == "dynamic") << "--kernels takes dynamic or static, not '" << v << "'";
        options.static_kernels = v == "static";
      } else if (a.rfind("--input-shape", 0) == 0) {
        std::string v = value("--input-shape");
        auto eq = v.rfind('=');
        user_assert(eq != std::string::npos && eq > 0) << "--input-shape takes NAME=D0,D1,...";
        options.import.input_shapes[v.substr(0, eq)] = parse_dims(v.substr(eq + 1), a);
      } else if (a.rfind("--freeze-input", 0) == 0) {
        std::string v = value("--freeze-input");
        auto eq = v.find('=');
        user_assert(eq != std::string::npos && eq > 0) << "--freeze-input takes NAME=FILE";
        std::ifstream f(v.substr(eq + 1), std::ios::binary);
        user_assert(f.good()) << "--freeze-input: cannot open '" << v.substr(eq + 1) << "'";
        std::stringstream ss;
        ss << f.rdbuf();
        options.import.frozen_inputs[v.substr(0, eq)] = ss.str();
      } else if (a.rfind("--dump-graph-after", 0) == 0) {
        options.dump_graph_after.insert(value("--dump-graph-after"));
      } else if (a.rfind("--disable-graph-pass", 0) == 0) {
        options.disabled_graph_passes.insert(value("--disable-graph-pass"));
      } else if (a.rfind("--dump-after", 0) == 0) {
        options.dump_after.insert(value("--dump-after"));
      } else if (a == "--dump-graph") {
        options.dump_graph = true;
      } else if (a == "--report") {
        options.report = true;
      } else if (!a.empty() && a[0] == '-') {
        fprintf(stderr, "kilnc: error: unknown option '%s'\n", a.c_str());
        usage(stderr);
        return 2;
      } else {
        user_assert(input.empty()) << "more than one input model given ('" << input << "' and '" << a << "')";
        input = a;
      }
    }
    if (input.empty() || output.empty()) {
      usage(stderr);
      return 2;
    }
    options.target = kiln::TargetSpec::parse(target);
    options.static_name = kiln::static_library_name(output);
    kiln::CompileOutput out = kiln::compile_onnx_file(input, options);
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
