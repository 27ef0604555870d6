// fold-batchnorm: folds an inference BatchNormalization into the Conv or
// Gemm that produces its input.
//
// BN(y) = (y - mean) * f + beta with f = scale / sqrt(var + eps), per
// channel, is affine; when y = Conv(x, W, b) it equals
// Conv(x, W * f[oc], (b - mean) * f + beta), and when y = Gemm(A, B, C)
// (BN over the N axis of the [M, N] result) it equals Gemm with B's
// columns scaled by f and C' = (beta_gemm * C - mean) * f + beta. This
// removes the BN's work entirely (one multiply-add per element, and a
// kernel where it was not fused). Conditions: BN in inference mode (its
// optional mean/var outputs unused), all four BN parameters constants, the
// Conv/Gemm weights (and bias, if any) constants, and the Conv/Gemm output
// read only by the BN (not a model output). New weights are computed in
// double and stored as new constants (the originals may be shared).
#include <cmath>

#include "graph/passes.h"

namespace kiln::graph {

namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F64; }

bool extra_outputs_unused(const Graph& g, const Node& n, const std::vector<int>& uses) {
  for (size_t k = 1; k < n.outputs.size(); k++) {
    int o = n.outputs[k];
    if (o >= 0 && (uses[o] > 0 || is_model_output(g, o))) return false;
  }
  return true;
}

bool fold_into_gemm(Graph& g, Node& gemm, const std::vector<double>& f, const std::vector<double>& shift,
                    const std::vector<double>& mean) {
  if (gemm.inputs.size() < 2 || gemm.inputs[1] < 0) return false;
  const Value& B = g.values[gemm.inputs[1]];
  int64_t N = (int64_t)f.size();
  if (!B.is_constant() || !is_float(B.dtype) || B.shape.size() != 2) return false;
  bool transB = gemm.attr_int("transB", 0) != 0;
  if ((transB ? B.shape[0] : B.shape[1]) != N) return false;
  std::vector<double> c(N, 0.0);
  double beta = gemm.attr_float("beta", 1.0);
  if (gemm.inputs.size() > 2 && gemm.inputs[2] >= 0) {
    const Value& C = g.values[gemm.inputs[2]];
    if (!C.is_constant()) return false;
    // Only a C that does not vary along M: scalar, [N], [1, N], [1], [1, 1].
    int64_t e = C.elements();
    bool rowish = C.shape.empty() || (C.shape.size() == 1) || (C.shape.size() == 2 && C.shape[0] == 1);
    if (!rowish || (e != 1 && e != N)) return false;
    for (int64_t n = 0; n < N; n++) c[(size_t)n] = beta * C.const_at(e == 1 ? 0 : n);
  }
  std::vector<double> bd = constant_as_doubles(B);
  int64_t K = B.elements() / N;
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) {
      size_t idx = transB ? (size_t)(n * K + k) : (size_t)(k * N + n);
      bd[idx] *= f[(size_t)n];
    }
  for (int64_t n = 0; n < N; n++) c[(size_t)n] = (c[(size_t)n] - mean[(size_t)n]) * f[(size_t)n] + shift[(size_t)n];
  DType dt = B.dtype;
  Shape bshape = B.shape;
  std::string name = B.name;
  int nB = g.add_constant(name + ".bn", dt, bshape, doubles_to_bytes(bd, dt));
  int nC = g.add_constant(name + ".bn_bias", dt, {N}, doubles_to_bytes(c, dt));
  gemm.inputs.resize(3);
  gemm.inputs[1] = nB;
  gemm.inputs[2] = nC;
  Attr one;
  one.kind = Attr::Kind::Float;
  one.f = 1.0;
  gemm.attrs["beta"] = one;
  return true;
}

}  // namespace

bool pass_fold_batchnorm(Graph& g, PassContext& ctx) {
  std::vector<int> uses = use_counts(g);
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    Node& bn = g.nodes[i];
    if (!bn.is(Op::BatchNormalization) || bn.inputs.size() < 5 || bn.outputs.empty() || bn.outputs[0] < 0) continue;
    if (bn.attr_int("training_mode", 0) != 0 || !extra_outputs_unused(g, bn, uses)) continue;
    bool params_const = true;
    for (int k = 1; k <= 4; k++) params_const &= bn.inputs[k] >= 0 && g.values[bn.inputs[k]].is_constant();
    if (!params_const) continue;
    int x = bn.inputs[0];
    int p = g.values[x].producer;
    if (p < 0 || uses[x] != 1 || is_model_output(g, x)) continue;
    Node& prod = g.nodes[p];
    if ((!prod.is(Op::Conv) && !prod.is(Op::Gemm)) || prod.outputs.size() != 1) continue;
    const Value& xv = g.values[x];
    if (!is_float(xv.dtype) || xv.shape.size() < 2) continue;
    if (prod.is(Op::Gemm) && xv.shape.size() != 2) continue;
    if (xv.is_dynamic() && !tir::as_const_int(xv.dims[1])) continue;  // channels must be static
    int64_t C = xv.shape[1];
    bool shapes_ok = true;
    for (int k = 1; k <= 4; k++) shapes_ok &= g.values[bn.inputs[k]].elements() == C;
    if (!shapes_ok) continue;
    std::vector<double> scale = constant_as_doubles(g.values[bn.inputs[1]]);
    std::vector<double> shift = constant_as_doubles(g.values[bn.inputs[2]]);
    std::vector<double> mean = constant_as_doubles(g.values[bn.inputs[3]]);
    std::vector<double> var = constant_as_doubles(g.values[bn.inputs[4]]);
    double eps = bn.attr_float("epsilon", 1e-5);
    std::vector<double> f(C);
    for (int64_t c = 0; c < C; c++) f[(size_t)c] = scale[(size_t)c] / std::sqrt(var[(size_t)c] + eps);
    bool ok;
    if (prod.is(Op::Conv)) {
      // (y - mean) * f + beta = y * f + (beta - mean * f)
      std::vector<double> beta(C);
      for (int64_t c = 0; c < C; c++) beta[(size_t)c] = shift[(size_t)c] - mean[(size_t)c] * f[(size_t)c];
      ok = fold_channel_affine_into_conv(g, g.nodes[p], f, beta, "bn");
    } else {
      ok = fold_into_gemm(g, g.nodes[p], f, shift, mean);
    }
    if (!ok) continue;
    absorb_consumer(g, p, (int)i, r.remove);
    r.count++;
  }
  return r.finish(g, ctx, "folded");
}

}  // namespace kiln::graph
