// The whole compilation, ONNX file to bundle bytes, as one list of steps.
#pragma once

#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "frontend/frontend.h"
#include "lower/lower_graph.h"
#include "plan/memory_plan.h"
#include "support/diagnostics.h"
#include "support/progress.h"
#include "target/target.h"

namespace kiln {

struct CompileOptions {
  ImportOptions import;              // input shape overrides
  TargetSpec target;                 // where the kernels run
  // --target=vulkan: the device features kernels may use (GlslFeature bits:
  // 1 shaderInt64, 2 shaderFloat64); kernels needing others run on the host CPU.
  uint32_t vulkan_features = 3;
  // --target=vulkan: GPU schedules may tile through workgroup shared memory
  // (--vulkan-shared-memory=on: desktop-class GPUs; off by default, as it is
  // no faster than the caches on ARM Mali, Raspberry Pi's V3D or lavapipe,
  // where barriers made it 2-4x slower; see docs/vulkan.md). It also turns
  // on the fused attention kernel, whose GPU form shares workgroup memory.
  bool vulkan_shared_memory = false;
  // --kernels=static: the CPU kernels are not put in the bundle but returned
  // as an object file for the application to link (iOS), with a header
  // declaring kiln_static_library_<static_name> (codegen/static_kernels.h).
  bool static_kernels = false;
  std::string static_name = "model";
  // --max-arena: the most bytes the arena (every intermediate tensor, the
  // inputs and outputs) may need; a model that needs more is refused.
  uint64_t max_arena_bytes = 4ull << 30;
  // --sign-key: a PEM file of an Ed25519 private key; the bundle ends with
  // its signature (bundle/bundle_signer.h). Empty: unsigned.
  std::string sign_key;
  std::set<std::string> dump_after;  // pass names (see pipeline.cpp); "all" for every pass
  std::set<std::string> dump_graph_after;  // graph pass names (graph/passes.h); "all" for every graph pass
  std::set<std::string> disabled_graph_passes;  // graph passes to skip (debugging)
  bool dump_graph = false;           // print the graph after import and after lowering
  bool report = false;               // print per-step statistics
  std::ostream* dump_stream = nullptr;  // where dumps and the report go (stderr if null)
  ProgressFn progress;               // hears what the pipeline is doing (kilnc's progress line)
  WarningFn warn;                    // hears the compilation's warnings (support/diagnostics.h); null: stderr
  // CPU targets: the schedules' knobs (tune/space.h). The compilation
  // records every workload's space, the kernel of each workload and of each
  // dispatch, and compiles the points in tuning->apply. Null: the
  // hand-written choices (what --tuning-log does not name stays so too).
  tune::Tuning* tuning = nullptr;
};

// Names of the passes --dump-after accepts, in order.
const std::vector<std::string>& pipeline_pass_names();
// Names of the graph passes --dump-graph-after accepts, in order.
std::vector<std::string> graph_pass_names();

// What a compilation produces.
struct CompileOutput {
  std::string bundle;          // the .kiln file
  std::string kernels_object;  // --kernels=static: MODEL.kernels.o (empty without CPU kernels)
  std::string kernels_header;  // --kernels=static: MODEL.kernels.h
};

// Compiles the model at `path` (its format recognized by driver/frontends.h:
// ONNX); throws UserError / InternalError.
CompileOutput compile_model_file(const std::string& path, const CompileOptions& options);
// The same for a model file's bytes in memory (language bindings):
// external data is read from `model_dir` (under the rules of
// import/external_data.h); `name` stands for the model in messages and in
// the static-kernel header.
CompileOutput compile_model_bytes(const std::string& bytes, const std::string& model_dir, const std::string& name,
                                  const CompileOptions& options);

// A graph through steps 3 to 6 of the pipeline for a CPU target: its
// kernels, memory plan and linked kernel library.
struct CompiledGraph {
  LoweredProgram program;  // the kernels, after the TIR passes
  MemoryPlan plan;         // the arena
  std::string library;     // the ELF shared object of the kernels
};
// Lowers `g` (which gains lowering's values) and compiles it for
// options.target (a CPU), exactly as compile_model_file does after the
// graph passes; the evaluator (driver/evaluate.h) runs the result.
CompiledGraph compile_graph(graph::Graph& g, const CompileOptions& options);

}  // namespace kiln
