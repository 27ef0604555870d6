// The graph pass list and its runner (see passes.h, docs/graph-passes.md).
#include "graph/passes.h"

#include <chrono>
#include <iostream>

#include "support/diagnostics.h"

namespace kiln::graph {

const std::vector<GraphPass>& graph_passes() {
  // Order matters: bfloat16 goes first (a correctness rewrite, not an
  // optimization: operators compute bfloat16 in float32); Identity/Dropout go next so that later patterns see
  // producer -> consumer directly; constant folding then turns every
  // compile-time computation (run-time-built weights included) into
  // constants, which the BatchNormalization and affine folds and the
  // layer-norm fusion (its epsilon, scale and bias) need, and so does the
  // attention fusion (its scale);
  // conv-transpose turns stride-sized ConvTransposes into 1x1 Convs (and a
  // shuffle) before layout
  // then packs the folded weights for the target's blocked convolutions,
  // winograd transforms those of the 3x3 ones where it wins; lookup-table
  // turns 8-bit-to-8-bit elementwise chains (on the tensors as they will
  // run, blocked or not) into tables; CSE and
  // dead-code elimination clean up what the rewrites left behind.
  static const std::vector<GraphPass> passes = {
      {"bfloat16", pass_bfloat16},
      {"identity", pass_identity},
      {"quantize", pass_quantize},
      {"constant-fold", pass_constant_fold},
      {"reshape-chain", pass_reshape_chain},
      {"fold-batchnorm", pass_fold_batchnorm},
      {"fold-affine", pass_fold_affine},
      {"fuse-layer-norm", pass_fuse_layer_norm},
      {"fuse-attention", pass_fuse_attention},
      {"conv-transpose", pass_conv_transpose},
      {"layout", pass_layout},
      {"winograd", pass_winograd},
      {"lookup-table", pass_lookup_table},
      {"cse", pass_cse},
      {"dead-code", pass_dead_code},
  };
  return passes;
}

std::vector<PassStats> run_graph_passes(Graph& g, const PassOptions& options) {
  std::ostream& out = options.dump_stream ? *options.dump_stream : std::cerr;
  std::vector<PassStats> stats;
  const std::vector<GraphPass>& passes = graph_passes();
  for (size_t i = 0; i < passes.size(); i++) {
    const GraphPass& p = passes[i];
    if (options.disabled.count(p.name)) continue;
    report_progress(options.progress, std::string("graph pass ") + p.name, i, passes.size(), "passes");
    PassStats s;
    s.name = p.name;
    s.nodes_before = g.nodes.size();
    PassContext ctx;
    ctx.env = options.env;
    auto t0 = std::chrono::steady_clock::now();
    s.changed = p.run(g, ctx);
    s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.nodes_after = g.nodes.size();
    s.detail = ctx.detail;
    if (s.changed && (options.dump_after.count(p.name) || options.dump_after.count("all")))
      out << "// -- graph after " << p.name << "\n" << g.str();
    stats.push_back(std::move(s));
  }
  return stats;
}

}  // namespace kiln::graph
