// Winograd F(2x2, 3x3) and F(4x4, 3x3) (lower/ops_winograd.cpp): its formula, lowered with
// the default schedule, and its tensorized CPU kernel both compute a 3x3
// convolution (stride 1, pad 1), checked against a direct convolution in
// double precision on random data.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "compiler_test_util.h"
#include "lower/ops_winograd.h"
#include "tune/space.h"
#include "tir/ir_printer.h"
#include "te/schedule.h"

using namespace kiln;
using kiln::test::Library;

namespace {

// G (a x 3) of F(2x2, 3x3) and F(4x4, 3x3), as graph/pass_winograd.cpp has them.
const double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
const double kG4[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                          {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6},  {0, 0, 1}};

// `point`: the register tile's knobs (graph::winograd_register_tile), else
// the hand-written tile; `workgroups`: the kernel's expected count.
void check_winograd(int r, int64_t MB, int64_t registers, const tune::Config& point = {}, int64_t workgroups = -1) {
  const int a = r + 2;
  const int64_t CB = 2, c = 4, H = r == 2 ? 6 : 8, W = 8, m = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> xv((size_t)(CB * H * W * c)), g((size_t)(MB * m * CB * c * 9)), uv((size_t)(MB * a * a * CB * c * m));
  for (auto& v : xv) v = dist(rng);
  for (auto& v : g) v = dist(rng);
  // g[M][C][3][3] -> U[M/m, a, a, C/c, c, m] = G g G^T.
  auto G = [r](int i, int k) { return r == 2 ? kG2[i][k] : kG4[i][k]; };
  for (int64_t oc = 0; oc < MB * m; oc++)
    for (int64_t ic = 0; ic < CB * c; ic++)
      for (int p = 0; p < a; p++)
        for (int q = 0; q < a; q++) {
          double s = 0;
          for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) s += G(p, i) * g[(size_t)(((oc * CB * c + ic) * 3 + i) * 3 + j)] * G(q, j);
          uv[(size_t)(((((oc / m) * a + p) * a + q) * CB + ic / c) * c * m + (ic % c) * m + oc % m)] = (float)s;
        }
  te::Tensor x = te::placeholder("x", {1, CB, H, W, c}, tir::Float(32));
  te::Tensor u = te::placeholder("u", {MB, a, a, CB, c, m}, tir::Float(32));
  graph::Shape os = {1, MB, H, W, m};
  std::vector<KernelDef> kernels;
  for (bool fast : {false, true}) {
    te::Tensor conv = lower::winograd_conv(x, u, os);
    te::Stage s(conv);
    tune::Tuning tuning;
    const std::string key = "conv2d_blocked f32 [1," + std::to_string(MB) + "," + std::to_string(H) + "," +
                            std::to_string(W) + "," + std::to_string(m) + ";2,3,3,4] s1x1 d1x1";
    if (!point.empty()) tuning.apply[key] = point;
    if (fast) lower::schedule_conv2d_winograd_cpu(s, x, u, VectorInfo{16, (int)registers}, &tuning);
    if (fast) {  // the kernel's register tile is a knob of the conv's workload, for this r only
      REQUIRE(tuning.spaces.count(key));
      const tune::Space& space = tuning.spaces.at(key);
      REQUIRE(space.knobs.size() == 2);
      CHECK(space.knobs[0].name == "tiles_r" + std::to_string(r));
      CHECK(space.knobs[1].name == "blocks_r" + std::to_string(r));
      CHECK(space.knobs[0].only_if == "winograd");
      CHECK(space.knobs[0].only_if_value == r);
    }
    KernelDef k;
    k.name = fast ? "winograd_cpu" : "winograd_formula";
    auto xb = tir::make_buffer("x", tir::Float(32), (int64_t)xv.size(), 0);
    auto ub = tir::make_buffer("u", tir::Float(32), (int64_t)uv.size(), 1);
    auto ob = tir::make_buffer("out", tir::Float(32), MB * H * W * m, 2);
    k.params = {xb, ub, ob};
    k.body = te::lower_stage(s, ob, [&](const te::TensorNode* n) { return n == x.get() ? xb : n == u.get() ? ub : tir::Buffer(); });
    if (fast) CHECK(tir::to_string(k.body).find("wino_v") != std::string::npos);  // the tensorized form
    kernels.push_back(k);
  }
  Library lib(kernels);
  for (uint32_t kernel = 0; kernel < 2; kernel++) {
    CAPTURE(kernel);
    std::vector<float> out((size_t)(MB * H * W * m), -1.0f);
    lib.run(kernel, {xv.data(), uv.data(), out.data()}, kernel == 1 ? (workgroups >= 0 ? workgroups : H / r * (MB / 2)) : -1);
    double worst = 0;
    for (int64_t oc = 0; oc < MB * m; oc++)
      for (int64_t oh = 0; oh < H; oh++)
        for (int64_t ow = 0; ow < W; ow++) {
          double want = 0;
          for (int64_t ic = 0; ic < CB * c; ic++)
            for (int i = 0; i < 3; i++)
              for (int j = 0; j < 3; j++) {
                int64_t ih = oh + i - 1, iw = ow + j - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                want += (double)xv[(size_t)((((ic / c) * H + ih) * W + iw) * c + ic % c)] *
                        g[(size_t)(((oc * CB * c + ic) * 3 + i) * 3 + j)];
              }
          double got = out[(size_t)((((oc / m) * H + oh) * W + ow) * m + oc % m)];
          worst = std::max(worst, std::fabs(got - want));
        }
    CHECK(worst < 1e-4);
  }
}

}  // namespace

TEST_CASE("winograd F(2x2, 3x3) and F(4x4, 3x3): formula and CPU kernel match a direct convolution") {
  // 8 -> 8 or 16 channels on a 6x8 map (3 x 4 tiles of 2x2) or an 8x8 one (2 x 2 tiles of 4x4). With
  // 8 registers the kernel has two channel groups (workgroup y), and for F(2x2) two tile groups per row.
  for (int r : {2, 4}) {
    CAPTURE(r);
    check_winograd(r, 2, 32);  // one workgroup per tile row
    check_winograd(r, 4, 8);   // channel groups, tile groups
  }
}

TEST_CASE("winograd: other register tiles from the workload's knobs compute the same convolution") {
  for (int r : {2, 4}) {
    CAPTURE(r);
    const std::string s = std::to_string(r);
    const int64_t rows = (r == 2 ? 6 : 8) / r;
    // One tile by one block: 4 channel groups (a row's transform repeated).
    check_winograd(r, 4, 32, {{"tiles_r" + s, 1}, {"blocks_r" + s, 1}}, rows * 4);
    // All four blocks: one group.
    check_winograd(r, 4, 32, {{"tiles_r" + s, 2}, {"blocks_r" + s, 4}}, rows * 1);
    // A tile beyond the 4 accumulators of 8 registers: fewer blocks (2 x 4 -> 2 x 2).
    check_winograd(r, 4, 8, {{"tiles_r" + s, 2}, {"blocks_r" + s, 4}}, rows * 2);
    // A value that is not an option (3 divides neither): the hand-written tile.
    check_winograd(r, 4, 8, {{"tiles_r" + s, 3}, {"blocks_r" + s, 3}});
  }
}
