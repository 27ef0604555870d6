// winograd: blocked 3x3 convolutions (stride 1, pad 1) switch to Winograd's
// F(2x2, 3x3) algorithm, with their weights transformed at compile time.
//
// Each 2x2 output tile is computed from a 4x4 input tile d as
//   Y = A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A       (. : element-wise)
// so the multiplications per output pixel drop from 9 to 16/4 = 4 per input
// channel (2.25x fewer); the transforms are additions. Here the weights g
// get their transform U = G g G^T, once, in double precision:
//   [M/m, C/c, 3, 3, c, m] (layout pass) -> U [M/m, 4, 4, C/c, c, m]
// and the node gets kiln_winograd=2 (the output tile size); lowering
// (lower/ops_winograd.cpp) writes the rest.
//
// Where it wins (measured, docs/performance.md): both channel counts at
// least 64 and even output sizes of 14 or more. Smaller convs are
// transform-bound. It stops where the transformed weights (16/9 the size)
// outgrow what one workgroup's sweep over them can keep in L2: at most 4 MB
// of U (ResNet's 7x7 stage streams its weights from DRAM; there the direct
// kernel, which prefetches them, is faster), and where a tile row's
// transformed input (a stack buffer) would pass 128 KB.
#include "graph/passes.h"

namespace kiln::graph {

namespace {

// G (4x3) of F(2x2, 3x3).
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

bool wants_winograd(const Graph& g, const Node& n) {
  if (!n.is(Op::Conv) || n.attr_string("kiln_layout", "") != "NCHWc" || n.has_attr("kiln_winograd")) return false;
  if (n.inputs.size() < 2 || n.inputs[1] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  const Value& w = g.values[n.inputs[1]];
  const Value& y = g.values[n.outputs[0]];
  if (!w.is_constant() || w.shape.size() != 6 || y.shape.size() != 5) return false;
  if (y.is_dynamic()) return false;  // run-time dimensions: not yet (docs/dynamic-shapes.md)
  if (w.dtype != DType::F32 || y.dtype != DType::F32) return false;  // the kernel computes in float32
  if (w.shape[2] != 3 || w.shape[3] != 3 || n.attr_int("group", 1) != 1) return false;
  if (n.attr_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  if (n.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  if (n.attr_ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{1, 1, 1, 1}) return false;
  int64_t C = w.shape[1] * w.shape[4], M = w.shape[0] * w.shape[5], OH = y.shape[2], OW = y.shape[3];
  if (C < 64 || M < 64 || OH % 2 || OW % 2 || OH < 14 || OW < 14) return false;
  int64_t u_bytes = 16 * C * M * 4;
  // The kernel keeps a tile row's transformed input on the stack: at most
  // 128 KB (114 KB for each of ResNet's stages), plus up to 28 KB of GEMM
  // results; kiln's worker threads have 1 MB stacks (the calling thread
  // needs 256 KB; see docs/runtime.md).
  int64_t v_bytes = 16 * C * (OW / 2) * 4;
  return u_bytes <= (4 << 20) && v_bytes <= (128 << 10);
}

}  // namespace

bool pass_winograd(Graph& g, PassContext& ctx) {
  int rewritten = 0;
  for (Node& n : g.nodes) {
    if (!wants_winograd(g, n)) continue;
    const Value w = g.values[n.inputs[1]];
    int64_t MB = w.shape[0], CB = w.shape[1], c = w.shape[4], m = w.shape[5];
    std::vector<double> wd = constant_as_doubles(w), u((size_t)(MB * 16 * CB * c * m), 0.0);
    for (int64_t mo = 0; mo < MB; mo++)
      for (int64_t co = 0; co < CB; co++)
        for (int64_t ci = 0; ci < c; ci++)
          for (int64_t mi = 0; mi < m; mi++) {
            double k[3][3], gk[4][3];
            for (int kh = 0; kh < 3; kh++)
              for (int kw = 0; kw < 3; kw++)
                k[kh][kw] = wd[(size_t)(((((mo * CB + co) * 3 + kh) * 3 + kw) * c + ci) * m + mi)];
            for (int a = 0; a < 4; a++)
              for (int kw = 0; kw < 3; kw++) gk[a][kw] = kG[a][0] * k[0][kw] + kG[a][1] * k[1][kw] + kG[a][2] * k[2][kw];
            for (int a = 0; a < 4; a++)
              for (int b = 0; b < 4; b++) {
                double v = gk[a][0] * kG[b][0] + gk[a][1] * kG[b][1] + gk[a][2] * kG[b][2];
                u[(size_t)(((((mo * 4 + a) * 4 + b) * CB + co) * c + ci) * m + mi)] = v;
              }
          }
    n.inputs[1] = g.add_constant(w.name + ".winograd", w.dtype, {MB, 4, 4, CB, c, m}, doubles_to_bytes(u, w.dtype));
    n.attrs["kiln_winograd"].kind = Attr::Kind::Int;
    n.attrs["kiln_winograd"].i = 2;
    rewritten++;
  }
  if (rewritten)
    ctx.detail = std::to_string(rewritten) + (rewritten == 1 ? " convolution" : " convolutions") + " to Winograd F(2x2, 3x3)";
  return rewritten > 0;
}

}  // namespace kiln::graph
