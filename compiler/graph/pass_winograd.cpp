// winograd: blocked 3x3 convolutions (stride 1, pad 1) switch to Winograd's
// minimal filtering F(r x r, 3x3), r = 2 or 4, with their weights
// transformed at compile time.
//
// Each r x r output tile is computed from an a x a input tile d (a = r + 2) as
//   Y = A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A       (. : element-wise)
// so the multiplications per output pixel drop from 9 to a^2 / r^2 per input
// channel: 4 with F(2x2, 3x3) (2.25x fewer), 2.25 with F(4x4, 3x3) (4x
// fewer); the transforms are additions (and, for r = 4, small multiples).
// Here the weights g get their transform U = G g G^T, once, in double
// precision:
//   [M/m, C/c, 3, 3, c, m] (layout pass) -> U [M/m, a, a, C/c, c, m]
// and the node gets kiln_winograd=r (the output tile size); lowering
// (lower/ops_winograd.cpp) writes the rest.
//
// Which r, if any, is a tuning knob ("winograd" of the conv's
// conv2d_blocked workload, tune/space.h): 0 (the direct kernel), 2, 4. The
// hand-written pick (measured, docs/performance.md): Winograd where both
// channel counts are at least 64 and the output sizes 14 or more (smaller
// convs are transform-bound); F(4x4, 3x3) where 4 divides the map (ResNet's
// 56x56 and 28x28 stages: 1.5x faster than F(2x2, 3x3) there), else
// F(2x2, 3x3) where 2 does (the 14x14 stage). It stops where the transformed
// weights outgrow what one workgroup's sweep over them can keep in L2: at
// most 4 MB of U (ResNet's 7x7 stage streams its weights from DRAM; there
// the direct kernel, which prefetches them, is faster). F(4x4, 3x3)'s
// transforms have coefficients up to 8 (B^T: 5, G: 1/24), so it rounds more
// than F(2x2, 3x3) (relative 1e-5 against 1e-6 on one 256-channel sum of
// random data); on ResNet-18 both stay within 2e-6 of the direct kernel
// (decision 57). The GEMMs' register tile is a knob per r too
// (winograd_register_tile).
#include <algorithm>

#include "graph/passes.h"
#include "support/int_math.h"
#include "tune/space.h"

namespace kiln::graph {

namespace {

// G (a x 3) of F(2x2, 3x3) and F(4x4, 3x3) (interpolation points 0, 1, -1,
// and 2, -2 for r = 4, and infinity).
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6},  {0, 0, 1}};

// The stack buffers of a workgroup (lower/ops_winograd.cpp): a tile row's
// transformed input, a^2 x C x (OW / r) floats, plus its GEMM results
// (a^2 x the register tile: at most 29 KB for r = 2, 64.5 KB for r = 4 with
// AVX-512's 28 accumulators). Kernels keep at most about 195 KiB of scratch:
// Kiln's worker threads have 1 MB stacks, the calling thread needs 256 KB
// (docs/runtime.md). ResNet's 56x56 and 28x28 stages take 126 KiB of input
// buffer with r = 4 (112 KiB with r = 2).
int64_t input_buffer_limit(int64_t r) { return r == 2 ? (128 << 10) : (130 << 10); }

}  // namespace

bool winograd_candidate(const Graph& g, const Node& n) {
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
  return n.attr_ints("pads", {0, 0, 0, 0}) == std::vector<int64_t>{1, 1, 1, 1};
}

tune::Knobs winograd_workload(tune::Tuning* tuning, const Shape& out, int64_t in_blocks, int64_t in_lanes) {
  return tune::Knobs(tuning, "conv2d_blocked", "f32", out, {in_blocks, 3, 3, in_lanes}, tune::conv_variant({1, 1}, {1, 1}));
}

WinogradRegisterTile winograd_register_tile(tune::Knobs& knobs, int64_t r, int64_t row_tiles, int64_t channel_blocks,
                                            int registers) {
  // The hand-written tile: two channel blocks (each transformed input
  // broadcast serves two weight vectors) times as many tiles as the
  // accumulators allow, more blocks when a row has few tiles.
  int64_t budget = std::max(registers - 4, 4);
  WinogradRegisterTile t;
  t.blocks = largest_divisor(channel_blocks, 2);
  t.tiles = largest_divisor(row_tiles, budget / t.blocks);
  if (t.tiles * t.blocks * 2 <= budget) t.blocks = largest_divisor(channel_blocks, budget / t.tiles);
  std::string suffix = "_r" + std::to_string(r);
  t.tiles = knobs.get("tiles" + suffix, tune::divisors(row_tiles, budget), t.tiles, "winograd", r);
  t.blocks = knobs.get("blocks" + suffix, tune::divisors(channel_blocks, budget), t.blocks, "winograd", r);
  // A point beyond the accumulators gets fewer blocks (its GEMM results'
  // buffer stays within the stack budget; see input_buffer_limit).
  t.blocks = std::min(t.blocks, largest_divisor(channel_blocks, std::max<int64_t>(budget / t.tiles, 1)));
  return t;
}

namespace {

// Whether F(r x r, 3x3) can compute the candidate: output sizes that r
// divides, at least 32 channels each way, and its buffers within bounds.
bool fits(const Value& w, const Value& y, int64_t r) {
  int64_t C = w.shape[1] * w.shape[4], M = w.shape[0] * w.shape[5], OH = y.shape[2], OW = y.shape[3];
  int64_t a = r + 2;
  if (OH % r || OW % r || C < 32 || M < 32) return false;
  return a * a * C * (OW / r) * 4 <= input_buffer_limit(r);
}

// The hand-written pick (see the header): 4, 2 or 0.
int64_t hand_written(const Value& w, const Value& y) {
  int64_t C = w.shape[1] * w.shape[4], M = w.shape[0] * w.shape[5];
  if (C < 64 || M < 64 || y.shape[2] < 14 || y.shape[3] < 14) return 0;
  for (int64_t r : {4, 2}) {
    int64_t a = r + 2;
    if (fits(w, y, r) && a * a * C * M * 4 <= (4 << 20)) return r;
  }
  return 0;
}

// U = G g G^T for every (output block, input block, lane, lane):
// [MB, CB, 3, 3, c, m] -> [MB, a, a, CB, c, m].
std::vector<double> transform_weights(const std::vector<double>& wd, const Shape& ws, int64_t r) {
  int64_t MB = ws[0], CB = ws[1], c = ws[4], m = ws[5], a = r + 2;
  auto G = [r](int i, int k) { return r == 2 ? kG2[i][k] : kG4[i][k]; };
  std::vector<double> u((size_t)(MB * a * a * CB * c * m), 0.0);
  for (int64_t mo = 0; mo < MB; mo++)
    for (int64_t co = 0; co < CB; co++)
      for (int64_t ci = 0; ci < c; ci++)
        for (int64_t mi = 0; mi < m; mi++) {
          double k[3][3], gk[6][3];
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++)
              k[kh][kw] = wd[(size_t)(((((mo * CB + co) * 3 + kh) * 3 + kw) * c + ci) * m + mi)];
          for (int i = 0; i < a; i++)
            for (int kw = 0; kw < 3; kw++) gk[i][kw] = G(i, 0) * k[0][kw] + G(i, 1) * k[1][kw] + G(i, 2) * k[2][kw];
          for (int i = 0; i < a; i++)
            for (int j = 0; j < a; j++)
              u[(size_t)(((((mo * a + i) * a + j) * CB + co) * c + ci) * m + mi)] =
                  gk[i][0] * G(j, 0) + gk[i][1] * G(j, 1) + gk[i][2] * G(j, 2);
        }
  return u;
}

}  // namespace

bool pass_winograd(Graph& g, PassContext& ctx) {
  int rewritten[5] = {0, 0, 0, 0, 0};
  for (Node& n : g.nodes) {
    if (!winograd_candidate(g, n)) continue;
    const Value w = g.values[n.inputs[1]];
    const Value& y = g.values[n.outputs[0]];
    // The knob lives in the conv's direct workload (lower/schedules_cpu.cpp
    // declares the direct kernel's knobs under the same key).
    tune::Knobs knobs = winograd_workload(ctx.env.tuning, y.shape, w.shape[1], w.shape[4]);
    std::vector<int64_t> options = {0};
    for (int64_t r : {2, 4})
      if (fits(w, y, r)) options.push_back(r);
    int64_t r = knobs.get("winograd", options, hand_written(w, y));
    for (int64_t each : options)  // every r's register tile, whichever this compile picks
      if (each) winograd_register_tile(knobs, each, y.shape[3] / each, y.shape[1], ctx.env.vector.registers);
    if (!r) continue;
    Shape ws = w.shape;
    int64_t a = r + 2;
    std::vector<double> u = transform_weights(constant_as_doubles(w), ws, r);
    n.inputs[1] = g.add_constant(w.name + ".winograd", w.dtype, {ws[0], a, a, ws[1], ws[4], ws[5]}, doubles_to_bytes(u, w.dtype));
    n.attrs["kiln_winograd"].kind = Attr::Kind::Int;
    n.attrs["kiln_winograd"].i = r;
    rewritten[r]++;
  }
  std::string detail;
  for (int r : {2, 4})
    if (rewritten[r])
      detail += (detail.empty() ? "" : ", ") + std::to_string(rewritten[r]) +
                (rewritten[r] == 1 ? " convolution" : " convolutions") + " to Winograd F(" + std::to_string(r) + "x" +
                std::to_string(r) + ", 3x3)";
  ctx.detail = detail;
  return rewritten[2] + rewritten[4] > 0;
}

}  // namespace kiln::graph
