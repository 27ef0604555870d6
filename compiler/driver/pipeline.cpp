// The kilnc pipeline. Read this file top to bottom to see everything the
// compiler does, in order.
#include "driver/pipeline.h"

#include "driver/frontends.h"
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <iostream>
#include <sstream>

#include "bundle/bundle_signer.h"
#include "bundle/bundle_writer.h"
#include "codegen/codegen_llvm.h"
#include "codegen/codegen_spirv.h"
#include "codegen/link_elf.h"
#include "codegen/static_kernels.h"
#include "driver/evaluate.h"
#include "driver/frontends.h"
#include "graph/passes.h"
#include "kiln_bundle_version.h"
#include "support/diagnostics.h"
#include "tir/hoist_invariants.h"
#include "tir/ir_visitor.h"
#include "tir/unroll_loops.h"
#include "tir/ir_printer.h"
#include "tir/inplace.h"
#include "tir/loop_partition.h"
#include "tir/simplify.h"
#include "tir/verify.h"

namespace kiln {

const std::vector<std::string>& pipeline_pass_names() {
  static const std::vector<std::string> names = {"import", "graph-passes", "lower", "simplify", "partition-loops", "unroll", "hoist-invariants", "verify", "plan-memory", "llvm", "spirv"};
  return names;
}

std::vector<std::string> graph_pass_names() {
  std::vector<std::string> names;
  for (auto& p : graph::graph_passes()) names.push_back(p.name);
  return names;
}

namespace {

class Pipeline {
 public:
  explicit Pipeline(const CompileOptions& o)
      : options_(o), out_(o.dump_stream ? *o.dump_stream : std::cerr), last_(std::chrono::steady_clock::now()) {}

  bool dumping(const std::string& pass) const {
    return options_.dump_after.count(pass) || options_.dump_after.count("all");
  }

  // Prints each kernel whose TIR changed in `pass` (or every kernel for "lower").
  // Runs `pass` on every kernel body (if `enabled`) and dumps what changed.
  void run_tir_pass(const std::string& name, bool enabled, std::vector<KernelDef>& kernels,
                    const std::function<tir::Stmt(const tir::Stmt&)>& pass) {
    std::vector<std::string> before;
    if (dumping(name))
      for (auto& k : kernels) before.push_back(tir::to_string(k.body));
    if (enabled)
      for (size_t i = 0; i < kernels.size(); i++) {
        report_progress(options_.progress, "TIR pass " + name, i, kernels.size(), "kernels");
        KernelDef& k = kernels[i];
        k.body = pass(k.body);
        if (k.host_body.defined()) k.host_body = pass(k.host_body);
      }
    dump_kernels(name, kernels, dumping(name) ? &before : nullptr);
  }

  void dump_kernels(const std::string& pass, const std::vector<KernelDef>& kernels, const std::vector<std::string>* before) {
    if (!dumping(pass)) return;
    for (size_t i = 0; i < kernels.size(); i++) {
      std::string now = tir::to_string(kernels[i].body);
      if (before && (*before)[i] == now) continue;
      out_ << "// -- after " << pass << ": kernel " << kernels[i].name << "\n" << now;
    }
  }

  void step_done(const std::string& name, const std::string& detail) {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    if (options_.report) out_ << "[kilnc] " << name << ": " << detail << " (" << ms << " ms)\n";
  }

  // `name` stands for the model in messages and generated headers.
  CompileOutput run(const std::string& bytes, const std::string& model_dir, const std::string& name) {
    const bool vulkan = options_.target.vulkan;
    user_assert(!vulkan || spirv_codegen_available())
        << "this kilnc was built without glslang and SPIRV-Tools: --target=vulkan is unavailable";
    user_assert(vulkan || options_.static_kernels || options_.target.elf_objects())
        << "target '" << options_.target.triple << "' does not use ELF objects, and the runtime loads kernel "
        << "libraries only as ELF: compile with --kernels=static and link the .kernels.o into the application "
        << "(iOS and macOS forbid or restrict mapping code at run time anyway)";

    // 1. Import: the model's frontend (driver/frontends.h: ONNX) → graph IR.
    report_progress(options_.progress, "importing");
    ImportOptions import = options_.import;
    import.run_time_checks = !vulkan;  // data symbols: CPU targets only
    graph::Graph g = frontend_for(bytes).import(bytes, model_dir, import);
    step_done("import", std::to_string(g.nodes.size()) + " nodes, " + std::to_string(g.values.size()) + " values");
    user_assert(!vulkan || g.symbols.empty())
        << "--target=vulkan: dimensions known only at run time ('" << g.symbols.front().name
        << "') are not supported on Vulkan yet; give the inputs static shapes, or compile for the CPU";
    if (options_.dump_graph || dumping("import")) out_ << "// -- graph after import\n" << g.str();

    // 2. Graph passes (graph/passes.h): constant folding, dead code, CSE,
    //    algebraic simplification; one list, in order.
    //    Constant folding compiles and runs constant subgraphs with steps 3
    //    to 6 below, for the host (driver/evaluate.h).
    graph::PassOptions po;
    po.dump_after = options_.dump_graph_after;
    po.dump_stream = &out_;
    po.disabled = options_.disabled_graph_passes;
    po.env.vector = vector_info(options_.target);
    po.env.blocked_layout = !vulkan;  // no blocked layout on GPUs
    po.env.attention_kernel = !vulkan || options_.vulkan_shared_memory;
    po.env.evaluate = evaluate_graph;
    po.env.tuning = vulkan ? nullptr : options_.tuning;
    po.progress = options_.progress;
    std::vector<graph::PassStats> pass_stats = graph::run_graph_passes(g, po);
    if (options_.report)
      for (auto& s : pass_stats)
        out_ << "[kilnc] pass " << s.name << ": " << s.nodes_before << " -> " << s.nodes_after << " nodes (" << s.ms
             << " ms)" << (s.detail.empty() ? "" : "; " + s.detail) << "\n";
    step_done("graph-passes", std::to_string(g.nodes.size()) + " nodes");
    if (dumping("graph-passes")) out_ << "// -- graph after graph-passes\n" << g.str();

    // 3.-5. Lowering, the TIR passes, the memory plan.
    check_tensor_sizes(g);
    LoweredProgram program = lower(g);
    MemoryPlan plan = plan_memory_step(g, program);

    // 6. Code generation: TIR → GLSL → SPIR-V for Vulkan, else TIR → LLVM →
    //    object → ELF shared object.
    if (vulkan) {
      check_vulkan_limits(g, plan);
      std::string glsl;
      SpirvOptions so;
      so.device_features = options_.vulkan_features;
      so.progress = options_.progress;
      if (dumping("spirv")) so.glsl_out = &glsl;
      SpirvLibrary spirv = compile_kernels_spirv(program.kernels, so);
      if (dumping("spirv")) out_ << "// -- GLSL after spirv\n" << glsl;
      // Heterogeneous bundle: kernels the device cannot run are compiled
      // for the host CPU, in a second library (docs/vulkan.md).
      std::vector<KernelDef> cpu_kernels;
      std::string first_reason;  // why the first of them runs on the host
      for (size_t i = 0; i < program.kernels.size(); i++) {
        const std::string& why = spirv.kernels[i].cpu_reason;
        if (why.empty()) continue;
        if (first_reason.empty()) first_reason = why;
        cpu_kernels.push_back(program.kernels[i]);
        if (cpu_kernels.back().host_body.defined()) cpu_kernels.back().body = cpu_kernels.back().host_body;
        // A generator failure is a warning; a missing feature or a host-only
        // kernel (KernelDef::host_only) the compiler's plan, reported on request.
        const bool failed = why.rfind("GLSL/SPIR-V", 0) == 0;
        if (options_.report || failed)
          out_ << "[kilnc] " << (failed ? "warning: " : "") << "kernel " << program.kernels[i].name
               << " runs on the CPU: " << why << "\n";
      }
      std::string cpu_library;
      if (!cpu_kernels.empty()) cpu_library = codegen_cpu(cpu_kernels, TargetSpec::host());
      if (!cpu_kernels.empty()) {
        user_assert(!options_.static_kernels)
            << "--kernels=static: kernel " << cpu_kernels.front().name << " (and any others) runs on the host CPU ("
            << first_reason << "); static host kernels for Vulkan bundles are not supported yet: compile with --vulkan-features=all "
            << "for a device that has the features, or without --kernels=static";
      }
      size_t shared = 0;  // GPU kernels allocating workgroup shared memory
      struct SharedAllocs : tir::IRVisitor {
        bool found = false;
        using tir::IRVisitor::visit;
        void visit(const tir::Allocate* op) override {
          found |= op->scope == tir::MemScope::Shared;
          tir::IRVisitor::visit(op);
        }
      };
      for (size_t i = 0; i < program.kernels.size(); i++) {
        SharedAllocs f;
        f.visit_stmt(program.kernels[i].body);
        shared += spirv.kernels[i].cpu_reason.empty() && f.found;
      }
      step_done("codegen", options_.target.str() + ", " +
                               std::to_string(spirv.kernels.size() - cpu_kernels.size()) + " SPIR-V modules (" +
                               std::to_string(shared) + " with shared memory), " + std::to_string(cpu_kernels.size()) +
                               " CPU kernels");
      return {write_bundle_step(g, program, plan, cpu_library, &spirv), "", ""};
    }
    if (options_.static_kernels) return static_kernels_step(name, g, program, plan);
    std::string library = codegen_cpu(program.kernels, options_.target);
    step_done("codegen", options_.target.str() + ", library " + std::to_string(library.size()) + " bytes");

    return {write_bundle_step(g, program, plan, library, nullptr), "", ""};
  }

  // 6.-7. (--kernels=static) The kernels as an object file for the
  // application to link, its header, and a bundle naming them by hash.
  CompileOutput static_kernels_step(const std::string& path, const graph::Graph& g, const LoweredProgram& program,
                                    const MemoryPlan& plan) {
    CompileOutput out;
    StaticKernels statics;
    statics.kernel_hash = static_kernel_hash(program.kernels, options_.target);
    statics.symbol = static_library_symbol(options_.static_name);
    std::string llvm_ir;
    CodegenOptions cg;
    if (dumping("llvm")) cg.llvm_ir_out = &llvm_ir;
    cg.static_symbol = statics.symbol;
    cg.static_name = options_.static_name;
    cg.kernel_hash = statics.kernel_hash;
    cg.progress = options_.progress;
    out.kernels_object = compile_kernels(program.kernels, options_.target, cg);
    if (dumping("llvm")) out_ << "// -- LLVM IR after optimization\n" << llvm_ir;
    out.kernels_header = static_library_header(options_.static_name, path);
    step_done("codegen", options_.target.str() + ", static kernels " + statics.symbol + ", object " +
                             std::to_string(out.kernels_object.size()) + " bytes");
    BundleStats stats;
    report_progress(options_.progress, "writing the bundle");
    out.bundle = write_bundle(g, program, plan, "", options_.target, &stats, nullptr, &statics);
    step_done("bundle", std::to_string(stats.total_bytes) + " bytes (constants " + std::to_string(stats.constant_bytes) +
                            ", kernels linked statically)");
    return out;
  }

  // 3. Lower: every node → kernels (TIR) through the operator library.
  // 4. TIR passes on every kernel, in order (Halide's Lower.cpp style);
  //    --dump-after=PASS prints the kernels a pass changed.
  LoweredProgram lower(graph::Graph& g) {
    const bool vulkan = options_.target.vulkan;
    LoweredProgram program =
        lower_graph(g, vector_info(options_.target), /*gpu=*/vulkan, options_.vulkan_shared_memory, options_.progress,
                    options_.tuning);
    step_done("lower", std::to_string(program.kernels.size()) + " kernels" +
                           (vulkan ? ", " + std::to_string(program.shared_memory_dependent_nodes) +
                                         " nodes that --vulkan-shared-memory changes"
                                   : ""));
    if (options_.tuning) {  // one dispatch per kernel, in order (bundle/bundle_writer.cpp)
      options_.tuning->dispatch_kernels.clear();
      for (const KernelDef& k : program.kernels) options_.tuning->dispatch_kernels.push_back(k.name);
    }
    dump_kernels("lower", program.kernels, nullptr);

    run_tir_pass("simplify", true, program.kernels, [](const tir::Stmt& s) { return tir::simplify(s); });
    // Partitioning on CPU only: partitioned copies would duplicate GPU local
    // loops. Unrolling everywhere (all unrolled loops on GPU targets).
    run_tir_pass("partition-loops", !vulkan, program.kernels,
                 [](const tir::Stmt& s) { return tir::simplify(tir::partition_loops(s)); });
    run_tir_pass("unroll", true, program.kernels,
                 [vulkan](const tir::Stmt& s) { return tir::simplify(tir::unroll_loops(s, /*all=*/vulkan)); });
    // GPU only (LLVM does it on CPU targets).
    run_tir_pass("hoist-invariants", vulkan, program.kernels,
                 [](const tir::Stmt& s) { return tir::simplify(tir::hoist_invariants(s)); });
    report_progress(options_.progress, "verifying " + std::to_string(program.kernels.size()) + " kernels");
    for (auto& k : program.kernels) {
      tir::verify_kernel(k.name, k.body, k.params);
      if (k.host_body.defined()) tir::verify_kernel(k.name, k.host_body, k.params);
      set_launch_parameters(k);
      k.inplace = tir::inplace_pairs(k.body, k.params);
    }
    step_done("simplify+verify", "ok");

    return program;
  }

  // 5. Static memory plan: one arena.
  MemoryPlan plan_memory_step(const graph::Graph& g, const LoweredProgram& program) {
    const bool vulkan = options_.target.vulkan;
    report_progress(options_.progress, "planning memory");
    MemoryPlan plan = plan_memory(g, program, vulkan ? KILN_BUNDLE_VULKAN_ALIGNMENT : KILN_BUNDLE_ALIGNMENT);
    user_assert(plan.arena_bytes <= options_.max_arena_bytes)
        << "the model needs an arena of " << plan.arena_bytes << " bytes, more than --max-arena ("
        << options_.max_arena_bytes << " bytes); raise --max-arena if the device has the memory";
    step_done("plan-memory", "arena " + std::to_string(plan.arena_bytes) + " bytes (sum of tensors " +
                                 std::to_string(plan.total_bytes) + ", lower bound " +
                                 std::to_string(plan.lower_bound) + ")");
    if (dumping("plan-memory"))
      for (size_t v = 0; v < g.values.size(); v++)
        if (plan.offset[v] >= 0) out_ << "  " << g.values[v].name << " @ " << plan.offset[v] << " (" << g.values[v].byte_size() << " bytes)\n";

    return plan;
  }

  // 6. (CPU targets) TIR → LLVM IR → object code → ELF shared object.
  std::string codegen_cpu(const std::vector<KernelDef>& kernels, const TargetSpec& target) {
    std::string llvm_ir;
    CodegenOptions cg;
    if (dumping("llvm")) cg.llvm_ir_out = &llvm_ir;
    cg.progress = options_.progress;
    std::string object = compile_kernels(kernels, target, cg);
    if (dumping("llvm")) out_ << "// -- LLVM IR after optimization\n" << llvm_ir;
    report_progress(options_.progress, "linking the kernel library");
    return link_shared_object(object, target);
  }

  // 7. The bundle.
  std::string write_bundle_step(const graph::Graph& g, const LoweredProgram& program, const MemoryPlan& plan,
                                const std::string& library, const SpirvLibrary* spirv) {
    BundleStats stats;
    report_progress(options_.progress, "writing the bundle");
    std::string bundle = write_bundle(g, program, plan, library, options_.target, &stats, spirv);
    step_done("bundle", std::to_string(stats.total_bytes) + " bytes (constants " + std::to_string(stats.constant_bytes) +
                            ", kernels " + std::to_string(stats.kernel_bytes) + ")");
    return bundle;
  }

  // Before lowering: no tensor of the arena alone may exceed --max-arena
  // (refused here, naming its node, before any work is spent on it).
  void check_tensor_sizes(const graph::Graph& g) const {
    for (size_t i = 0; i < g.values.size(); i++) {
      const graph::Value& v = g.values[i];
      // (A run-time-sized tensor's size is checked by the runtime, each run.)
      if (v.is_constant() || v.byte_size() <= options_.max_arena_bytes || g.runtime_sized((int)i)) continue;
      std::string who = v.producer >= 0 ? g.nodes[v.producer].describe() + ": output" : "model input";
      user_error << who << " '" << v.name << "' of shape " << graph::shape_str(v.shape) << " takes " << v.byte_size()
                 << " bytes, more than --max-arena (" << options_.max_arena_bytes
                 << " bytes); raise --max-arena if the device has the memory";
    }
  }

  // Vulkan kernels index tensors with 32-bit integers (codegen_glsl.h).
  static void check_vulkan_limits(const graph::Graph& g, const MemoryPlan& plan) {
    for (size_t v = 0; v < g.values.size(); v++) {
      bool stored = plan.offset[v] >= 0 || g.values[v].is_constant();
      user_assert(!stored || g.values[v].byte_size() < (1ull << 31))
          << "tensor '" << g.values[v].name << "' has " << g.values[v].byte_size()
          << " bytes; --target=vulkan supports tensors below 2 GiB";
    }
  }

 private:
  const CompileOptions& options_;
  std::ostream& out_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

CompiledGraph compile_graph(graph::Graph& g, const CompileOptions& options) {
  internal_assert(!options.target.vulkan) << "compile_graph: CPU targets only";
  Pipeline pipeline(options);
  CompiledGraph c;
  c.program = pipeline.lower(g);
  c.plan = pipeline.plan_memory_step(g, c.program);
  c.library = pipeline.codegen_cpu(c.program.kernels, options.target);
  return c;
}

CompileOutput compile_model_file(const std::string& path, const CompileOptions& options) {
  std::ifstream f(path, std::ios::binary);
  user_assert(f.good()) << "cannot open '" << path << "'";
  std::stringstream ss;
  ss << f.rdbuf();
  auto slash = path.rfind('/');
  return compile_model_bytes(ss.str(), slash == std::string::npos ? "." : path.substr(0, slash), path, options);
}

CompileOutput compile_model_bytes(const std::string& bytes, const std::string& model_dir, const std::string& name,
                                  const CompileOptions& options) {
  WarningScope warnings(options.warn);  // each warning once; null: to stderr
  for (auto& p : options.dump_after) {
    bool known = p == "all";
    for (auto& n : pipeline_pass_names()) known |= n == p;
    user_assert(known) << "--dump-after: unknown pass '" << p << "'";
  }
  for (auto& p : options.dump_graph_after) {
    bool known = p == "all";
    for (auto& n : graph_pass_names()) known |= n == p;
    user_assert(known) << "--dump-graph-after: unknown graph pass '" << p << "'";
  }
  for (auto& p : options.disabled_graph_passes) {
    bool known = false;
    for (auto& n : graph_pass_names()) known |= n == p;
    user_assert(known) << "--disable-graph-pass: unknown graph pass '" << p << "'";
    user_assert(p != "bfloat16") << "--disable-graph-pass: 'bfloat16' cannot be disabled (operators compute bfloat16 through it)";
  }
  // The key is read first: a bad one fails before minutes of compiling.
  std::unique_ptr<SigningKey> key;
  if (!options.sign_key.empty()) key.reset(new SigningKey(read_signing_key(options.sign_key)));
  CompileOutput out = Pipeline(options).run(bytes, model_dir, name);
  if (key) out.bundle = sign_bundle(out.bundle, *key);
  return out;
}

}  // namespace kiln
