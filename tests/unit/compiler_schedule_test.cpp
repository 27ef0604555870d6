// Units for tensor expressions and schedule primitives: each schedule must
// change the loop structure as intended and leave the computed values
// unchanged (checked by compiling and running the kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "compiler_test_util.h"
#include "support/diagnostics.h"
#include "lower/schedules_gpu.h"
#include "tune/space.h"
#include "te/schedule.h"
#include "te/tensor.h"
#include "tir/ir_printer.h"
#include "tir/verify.h"

using namespace kiln;
using kiln::test::Library;
using tir::Expr;

namespace {

// out[i, j] = a[i, j] * 2 + a[i, (j + 1) % N] over a 6x10 input, scheduled by `sched`.
KernelDef scheduled_kernel(const std::string& name, const std::function<void(te::Stage&)>& sched) {
  te::Tensor a = te::placeholder("a", {6, 10}, tir::Float(32));
  te::Tensor mid = te::compute("mid", {6, 10}, [a](const te::Indices& i) { return a(i) * Expr(2.0f); });
  te::Tensor out = te::compute("out", {6, 10}, [a, mid](const te::Indices& i) {
    return mid(i) + a({i[0], (i[1] + Expr(1)) % Expr(10)});
  });
  KernelDef k;
  k.name = name;
  auto in_buf = tir::make_buffer("a", tir::Float(32), 60, 0);
  auto out_buf = tir::make_buffer("out", tir::Float(32), 60, 1);
  k.params = {in_buf, out_buf};
  te::Stage s(out);
  sched(s);
  k.body = te::lower_stage(s, out_buf, [&](const te::TensorNode* n) { return n == a.get() ? in_buf : tir::Buffer(); });
  return k;
}

std::vector<float> run(Library& lib, uint32_t kernel, uint32_t workgroups) {
  std::vector<float> in(60), out(60, -1.0f);
  std::iota(in.begin(), in.end(), 0.0f);
  lib.run(kernel, {in.data(), out.data()}, workgroups);
  return out;
}

}  // namespace

TEST_CASE("schedules change loops, not values") {
  std::vector<KernelDef> kernels = {
      scheduled_kernel("plain", [](te::Stage&) {}),
      scheduled_kernel("split_guarded", [](te::Stage& s) { s.split(s.axes[1], 4); }),  // 10 = 3 * 4 - 2: guarded
      scheduled_kernel("fused", [](te::Stage& s) { s.fuse(s.axes[0], s.axes[1]); }),
      scheduled_kernel("reordered", [](te::Stage& s) { s.reorder({s.axes[1], s.axes[0]}); }),
      scheduled_kernel("tiled", [](te::Stage& s) { s.tile(s.axes[0], s.axes[1], 4, 3); }),
      scheduled_kernel("annotated", [](te::Stage& s) {
        auto [o, i] = s.split(s.axes[1], 5);
        s.parallel(s.axes[0]);
        s.vectorize(i);
        s.unroll(o);
      }),
  };
  std::string split_ir = tir::to_string(tir::simplify(kernels[1].body));
  CHECK(split_ir.find("if (") != std::string::npos);  // the non-dividing split keeps its guard
  std::string tiled_ir = tir::to_string(kernels[4].body);
  CHECK(tiled_ir.find("i0.o") < tiled_ir.find("i1.o"));
  CHECK(tiled_ir.find("i1.o") < tiled_ir.find("i0.i"));
  std::string annotated_ir = tir::to_string(kernels[5].body);
  CHECK(annotated_ir.find("workgroup.x (i0") != std::string::npos);
  CHECK(annotated_ir.find("vectorized (i1.i") != std::string::npos);
  CHECK(annotated_ir.find("unrolled (i1.o") != std::string::npos);
  for (auto& k : kernels) CHECK_NOTHROW(tir::verify_kernel(k.name, tir::simplify(k.body), k.params));

  Library lib(kernels);
  std::vector<float> want = run(lib, 0, 1);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 10; j++) CHECK(want[i * 10 + j] == (float)(i * 10 + j) * 2 + (float)(i * 10 + (j + 1) % 10));
  for (uint32_t k = 1; k < kernels.size(); k++) {
    INFO("kernel " << kernels[k].name);
    CHECK(run(lib, k, k == 5 ? 6 : 1) == want);
  }
}

TEST_CASE("a reduction's loops can be split and reordered") {
  te::Tensor a = te::placeholder("a", {4, 12}, tir::Float(32));
  te::Tensor sum = te::reduce("rowsum", {4}, {12}, te::ReduceKind::Sum, tir::Float(32),
                              [a](const te::Indices& o, const te::Indices& r) { return a({o[0], r[0]}); });
  te::Stage s(sum);
  auto [ro, ri] = s.split(s.reduce_axes[0], 5);  // 12 = 3 * 5 - 3: guarded
  s.reorder({ri, ro});
  s.bind(s.axes[0], tir::ForKind::WorkgroupX);
  CHECK_THROWS_AS(s.reorder({ri, s.axes[0]}), InternalError);  // a workgroup loop inside a reduction: rejected
  KernelDef k;
  k.name = "rowsum";
  auto in = tir::make_buffer("a", tir::Float(32), 48, 0), out = tir::make_buffer("sum", tir::Float(32), 4, 1);
  k.params = {in, out};
  k.body = te::lower_stage(s, out, [&](const te::TensorNode* n) { return n == a.get() ? in : tir::Buffer(); });
  Library lib({k});
  std::vector<float> x(48), y(4);
  std::iota(x.begin(), x.end(), 1.0f);
  lib.run(0, {x.data(), y.data()}, 4);
  for (int i = 0; i < 4; i++) {
    float want = 0;
    for (int j = 0; j < 12; j++) want += x[i * 12 + j];
    CHECK(y[i] == want);
  }
}

TEST_CASE("tensorize replaces the inner loops with a micro-kernel") {
  // out[i] = a[i] + 1 over 16 elements; the inner 4 are computed by an
  // intrinsic that writes the tile with explicit, unrolled stores.
  te::Tensor a = te::placeholder("a", {16}, tir::Float(32));
  te::Tensor out = te::compute("out", {16}, [a](const te::Indices& i) { return a(i) + Expr(1.0f); });
  te::Stage s(out);
  auto [o, i] = s.split(s.axes[0], 4);
  int calls = 0;
  te::TensorIntrin add4{"add4", [&](const te::TensorizeContext& ctx) {
                          calls++;
                          CHECK(ctx.tile_extents == std::vector<int64_t>{4});
                          tir::Buffer src = ctx.buffer_of(a.get());
                          std::vector<tir::Stmt> stores;
                          for (int lane = 0; lane < 4; lane++) {
                            Expr idx = ctx.axis_base[0] + Expr(lane);
                            stores.push_back(tir::Store::make(ctx.out, idx, tir::Load::make(src, idx) + Expr(1.0f)));
                          }
                          return tir::Block::make(stores);
                        }};
  s.tensorize(i, add4);
  KernelDef k;
  k.name = "add4";
  auto in = tir::make_buffer("a", tir::Float(32), 16, 0), ob = tir::make_buffer("out", tir::Float(32), 16, 1);
  k.params = {in, ob};
  k.body = te::lower_stage(s, ob, [&](const te::TensorNode* n) { return n == a.get() ? in : tir::Buffer(); });
  CHECK(calls == 1);
  CHECK(tir::to_string(k.body).find("for (i0.i") == std::string::npos);  // the inner loop is gone
  Library lib({k});
  std::vector<float> x(16), y(16);
  std::iota(x.begin(), x.end(), 0.0f);
  lib.run(0, {x.data(), y.data()}, 1);
  for (int j = 0; j < 16; j++) CHECK(y[j] == x[j] + 1.0f);
}

TEST_CASE("spatial loops inside a reduction accumulate a register tile") {
  // C[i, j] = sum_k A[i, k] * B[k, j], 6x10 by 10x7, scheduled GEMM-style:
  // io, jo, k, ii, ji with a 3x4 tile (7 = 2 * 4 - 1: the tile is guarded).
  te::Tensor A = te::placeholder("A", {6, 10}, tir::Float(32)), B = te::placeholder("B", {10, 7}, tir::Float(32));
  te::Tensor C = te::reduce("C", {6, 7}, {10}, te::ReduceKind::Sum, tir::Float(32), [=](const te::Indices& o, const te::Indices& r) {
    return A({o[0], r[0]}) * B({r[0], o[1]});
  });
  te::Stage s(C);
  auto tiles = s.tile(s.axes[0], s.axes[1], 3, 4);
  s.reorder({tiles[0], tiles[1], s.reduce_axes[0], tiles[2], tiles[3]});
  s.unroll(tiles[3]);
  KernelDef k;
  k.name = "gemm_tiled";
  auto a = tir::make_buffer("A", tir::Float(32), 60, 0), b = tir::make_buffer("B", tir::Float(32), 70, 1);
  auto c = tir::make_buffer("C", tir::Float(32), 42, 2);
  k.params = {a, b, c};
  k.body = te::lower_stage(s, c, [&](const te::TensorNode* n) { return n == A.get() ? a : n == B.get() ? b : tir::Buffer(); });
  std::string ir = tir::to_string(k.body);
  CHECK(ir.find("allocate C_acc[f32 * 12]") != std::string::npos);
  CHECK_NOTHROW(tir::verify_kernel(k.name, tir::simplify(k.body), k.params));
  Library lib({k});
  std::vector<float> av(60), bv(70), cv(42, -1.0f);
  for (int i = 0; i < 60; i++) av[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 70; i++) bv[i] = (float)(i % 5) * 0.5f;
  lib.run(0, {av.data(), bv.data(), cv.data()}, 1);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 7; j++) {
      float want = 0;
      for (int r = 0; r < 10; r++) want += av[i * 10 + r] * bv[r * 7 + j];
      CHECK(cv[i * 7 + j] == want);
    }
}

TEST_CASE("rows inside a split reduction: a register tile per row tile, and prefetches") {
  // C[i, j] = sum_k A[i, k] * B[k, j], 7x8 by 12x8, in the streaming order
  // of schedule_conv2d_blocked_cpu: ko (the slice) outside the row tiles io
  // (7 = 2 * 4 - 1: guarded), ki and the 4x8 register tile inside. B is
  // prefetched one slice ahead in the first row tile.
  te::Tensor A = te::placeholder("A", {7, 12}, tir::Float(32)), B = te::placeholder("B", {12, 8}, tir::Float(32));
  te::Tensor C = te::reduce("C", {7, 8}, {12}, te::ReduceKind::Sum, tir::Float(32), [=](const te::Indices& o, const te::Indices& r) {
    return A({o[0], r[0]}) * B({r[0], o[1]});
  });
  te::Stage s(C);
  auto [io, ii] = s.split(s.axes[0], 4);
  auto [ko, ki] = s.split(s.reduce_axes[0], 3);
  s.reorder({ko, io, ki, ii, s.axes[1]});
  s.unroll(ii);
  s.vectorize(s.axes[1]);
  s.prefetch(B, ko, 1);
  CHECK_THROWS_AS(s.prefetch(B, ko, 0), InternalError);
  KernelDef k;
  k.name = "gemm_streaming";
  auto a = tir::make_buffer("A", tir::Float(32), 84, 0), b = tir::make_buffer("B", tir::Float(32), 96, 1);
  auto c = tir::make_buffer("C", tir::Float(32), 56, 2);
  k.params = {a, b, c};
  k.body = te::lower_stage(s, c, [&](const te::TensorNode* n) { return n == A.get() ? a : n == B.get() ? b : tir::Buffer(); });
  std::string ir = tir::to_string(k.body);
  CHECK(ir.find("allocate C_acc[f32 * 64]") != std::string::npos);  // the whole map (8 rows), in memory
  CHECK(ir.find("allocate C_reg[f32 * 32]") != std::string::npos);  // one row tile, in registers
  // One prefetch per row of B read (the vectorized columns: one line), for
  // slice ko + 1, only in the first row tile.
  CHECK(ir.find("prefetch B[") != std::string::npos);
  CHECK(ir.find("if ((i0.o == 0))") != std::string::npos);
  CHECK_NOTHROW(tir::verify_kernel(k.name, tir::simplify(k.body), k.params));
  Library lib({k});
  std::vector<float> av(84), bv(96), cv(56, -1.0f);
  for (int i = 0; i < 84; i++) av[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 96; i++) bv[i] = (float)(i % 5) * 0.5f;
  lib.run(0, {av.data(), bv.data(), cv.data()}, 1);
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 8; j++) {
      float want = 0;
      for (int r = 0; r < 12; r++) want += av[i * 12 + r] * bv[r * 8 + j];
      CHECK(cv[i * 8 + j] == want);
    }
}

TEST_CASE("vectorized loops run lane by lane: vector loads, stores, gathers and math") {
  // C[i, j] = exp(sum_k A[i, k] * B[k, j] / 16) + A[j % 6, i]: a 2x8 register
  // tile (ii unrolled, ji vectorized) and a gathered (strided) read.
  te::Tensor A = te::placeholder("A", {6, 10}, tir::Float(32)), B = te::placeholder("B", {10, 16}, tir::Float(32));
  te::Tensor P = te::reduce("P", {6, 16}, {10}, te::ReduceKind::Sum, tir::Float(32), [=](const te::Indices& o, const te::Indices& r) {
    return A({o[0], r[0]}) * B({r[0], o[1]});
  });
  te::Tensor C = te::compute("C", {6, 16}, [=](const te::Indices& o) {
    return tir::Call::make(tir::Intrinsic::Exp, {P(o) / Expr(16.0f)}) + A({o[1] % Expr(6), o[0]});
  });
  te::Epilogue epilogue;
  REQUIRE(te::find_epilogue_anchor(C, &epilogue).get() == P.get());
  te::Stage s(P);
  auto tiles = s.tile(s.axes[0], s.axes[1], 2, 8);
  s.reorder({tiles[0], tiles[1], s.reduce_axes[0], tiles[2], tiles[3]});
  s.unroll(tiles[2]);
  s.vectorize(tiles[3]);
  KernelDef k;
  k.name = "gemm_vector";
  auto a = tir::make_buffer("A", tir::Float(32), 60, 0), b = tir::make_buffer("B", tir::Float(32), 160, 1);
  auto c = tir::make_buffer("C", tir::Float(32), 96, 2);
  k.params = {a, b, c};
  k.body = te::lower_stage(s, c, [&](const te::TensorNode* n) { return n == A.get() ? a : n == B.get() ? b : tir::Buffer(); },
                           Expr(0), epilogue);
  CHECK(tir::to_string(k.body).find("vectorized") != std::string::npos);
  std::string llvm_ir;
  {
    KernelDef copy = k;
    copy.body = tir::simplify(copy.body);
    CodegenOptions options;
    options.llvm_ir_out = &llvm_ir;
    compile_kernels({copy}, TargetSpec::host(), options);
  }
  CHECK(llvm_ir.find("<8 x float>") != std::string::npos);
  Library lib({k});
  std::vector<float> av(60), bv(160), cv(96, -1.0f);
  for (int i = 0; i < 60; i++) av[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 160; i++) bv[i] = (float)(i % 5) * 0.25f;
  lib.run(0, {av.data(), bv.data(), cv.data()}, 1);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 16; j++) {
      float sum = 0;
      for (int r = 0; r < 10; r++) sum += av[i * 10 + r] * bv[r * 16 + j];
      float want = std::exp(sum / 16.0f) + av[(j % 6) * 10 + i];
      CHECK(cv[i * 16 + j] == doctest::Approx(want).epsilon(1e-6));
    }
}

TEST_CASE("cache_shared: tiles of a GPU matmul's inputs, none where a block needs more") {
  // C[i, j] = sum_k A[i, k] * B[k, j] (40x24 by 24x32), 8 invocations of
  // 4x4 outputs per 8x16 block, scheduled as schedules_gpu.cpp does: the
  // block's slices of A (8 x 8) and B (8 x 16) per 8 steps of k. With rows
  // read as select(i < 24, i, 2i - 40) the last blocks read 15 rows of A,
  // with select(16 <= i < 24, 2i - 16, i) only the third block does: more
  // than the first block's 8 either way, so A is not tiled (B still is).
  te::Tensor A = te::placeholder("A", {40, 24}, tir::Float(32)), B = te::placeholder("B", {24, 32}, tir::Float(32));
  auto gemm = [&](int uneven) {
    return te::reduce("C", {40, 32}, {24}, te::ReduceKind::Sum, tir::Float(32), [=](const te::Indices& o, const te::Indices& r) {
      Expr i = o[0];
      Expr row = uneven == 0   ? i
                 : uneven == 1 ? tir::select(i < Expr(24), i, i * Expr(2) - Expr(40))
                               : tir::select(Expr(16) <= i && i < Expr(24), i * Expr(2) - Expr(16), i);
      return A({row, r[0]}) * B({r[0], o[1]});
    });
  };
  for (int uneven : {0, 1, 2}) {  // uneven: which select row index
    CAPTURE(uneven);
    te::Tensor C = gemm(uneven);
    te::Stage s(C);
    auto [io, ii] = s.split(s.axes[0], 8);
    auto [ig, it] = s.split(ii, 4);
    auto [jo, ji] = s.split(s.axes[1], 16);
    auto [jg, jt] = s.split(ji, 4);
    auto [ko, ki] = s.split(s.reduce_axes[0], 8);
    s.reorder({io, jo, ig, jg, ko, ki, it, jt});
    auto lanes = s.fuse(ig, jg);
    s.bind(lanes, tir::ForKind::LocalX);
    s.bind(s.fuse(io, jo), tir::ForKind::WorkgroupX);
    s.unroll(it);
    s.unroll(jt);
    s.cache_shared(A, ko);
    s.cache_shared(B, ko);
    CHECK_THROWS_AS(s.cache_shared(A, lanes), InternalError);  // not a reduction loop
    auto a = tir::make_buffer("A", tir::Float(32), 960, 0), b = tir::make_buffer("B", tir::Float(32), 768, 1);
    auto c = tir::make_buffer("C", tir::Float(32), 1280, 2);
    tir::Stmt body = te::lower_stage(s, c, [&](const te::TensorNode* n) { return n == A.get() ? a : n == B.get() ? b : tir::Buffer(); });
    std::string ir = tir::to_string(body);
    CHECK_NOTHROW(tir::verify_kernel("gemm", tir::simplify(body), {a, b, c}));
    CHECK(ir.find("allocate shared B_shared[f32 * 128]") != std::string::npos);  // 8 k x 16 columns
    CHECK((ir.find("allocate shared A_shared[f32 * 64]") != std::string::npos) == !uneven);  // 8 rows x 8 k
    CHECK(ir.find("barrier") != std::string::npos);
  }
}

// Invocations a stage's loops run: the extents bound to workgroups and
// local invocations, multiplied.
static int64_t gpu_invocations(const te::Stage& s) {
  int64_t n = 1;
  for (auto& l : s.leaves)
    if (l->kind == tir::ForKind::WorkgroupX || l->kind == tir::ForKind::WorkgroupY || l->kind == tir::ForKind::LocalX)
      n *= l->extent;
  return n;
}

TEST_CASE("desktop-class GPU convolutions on small maps shrink their tiles to fill the GPU") {
  // SqueezeNet's expand3x3 on a 13x13 map: [1, 256, 13, 13] over [64, 3, 3]. On an
  // H200 its 16-channel x 8x8 shared blocks (64 workgroups) ran at 65 GFLOP/s.
  auto conv = [](int64_t m, int64_t hw) {
    te::Tensor x = te::placeholder("xpad", {1, 64, hw + 2, hw + 2}, tir::Float(32));
    te::Tensor w = te::placeholder("w", {m, 64, 3, 3}, tir::Float(32));
    te::Tensor y = te::reduce("y", {1, m, hw, hw}, {64, 3, 3}, te::ReduceKind::Sum, tir::Float(32),
                              [=](const te::Indices& o, const te::Indices& r) {
                                return x({o[0], r[0], o[2] + r[1], o[3] + r[2]}) * w({o[1], r[0], r[1], r[2]});
                              });
    return std::make_tuple(x, w, y);
  };
  {
    auto [x, w, y] = conv(256, 13);
    te::Stage desk(y), mobile(y);
    lower::schedule_conv2d_gpu(desk, x, w, true, false, nullptr, "");
    lower::schedule_conv2d_gpu(mobile, x, w, false, false, nullptr, "");
    CHECK(desk.shared_caches.empty());
    CHECK(gpu_invocations(desk) >= lower::kGpuMinInvocations);
    CHECK(gpu_invocations(mobile) < lower::kGpuMinInvocations);  // 4 x 4 tiles, as before
  }
  {
    // A large map keeps the shared-memory blocks.
    auto [x, w, y] = conv(256, 56);
    te::Stage desk(y);
    lower::schedule_conv2d_gpu(desk, x, w, true, false, nullptr, "");
    CHECK(desk.shared_caches.size() == 2);
    // Its knobs: the block or register tiles, and the tiles' sizes.
    kiln::tune::Tuning t;
    te::Stage declared(y);
    lower::schedule_conv2d_gpu(declared, x, w, true, false, &t, "s1x1 d1x1");
    REQUIRE(t.spaces.count("conv2d_gpu f32 [1,256,56,56;64,3,3] s1x1 d1x1 smem"));  // (shared memory on)
    const kiln::tune::Space& space = t.spaces.begin()->second;
    std::vector<std::string> names;
    for (auto& k : space.knobs) names.push_back(k.name);
    CHECK(names == std::vector<std::string>{"shared", "tile_m", "tile_w"});
    CHECK(space.knobs[1].only_if == "shared");
    CHECK(declared.shared_caches.size() == 2);  // the hand-written point: the block
    t.apply[t.spaces.begin()->first] = {{"shared", 0}, {"tile_m", 8}, {"tile_w", 2}};
    te::Stage tiled(y);
    lower::schedule_conv2d_gpu(tiled, x, w, true, false, &t, "s1x1 d1x1");
    CHECK(tiled.shared_caches.empty());
    std::vector<int64_t> factors;
    for (auto& r : tiled.relations)
      if (r.kind == te::Relation::Kind::Split) factors.push_back(r.factor);
    REQUIRE(factors.size() >= 2);
    CHECK(factors[0] == 8);  // channels
    CHECK(factors[1] == 2);  // pixels of a row
  }
}

TEST_CASE("gpu schedules: matrix products declare their block and register tiles as knobs") {
  te::Tensor a = te::placeholder("a", {128, 96}, tir::Float(32));
  te::Tensor b = te::placeholder("b", {96, 64}, tir::Float(32));
  auto mm = [&] {
    return te::reduce("mm", {128, 64}, {96}, te::ReduceKind::Sum, tir::Float(32),
                      [&](const te::Indices& o, const te::Indices& r) { return a({o[0], r[0]}) * b({r[0], o[1]}); });
  };
  kiln::tune::Tuning t;
  te::Stage plain(mm());
  lower::schedule_matmul_gpu(plain, a, b, true, &t, "");
  REQUIRE(t.spaces.count("matmul_gpu f32 [128,64;96] smem"));
  const kiln::tune::Space& space = t.spaces.begin()->second;
  std::vector<std::string> names;
  for (auto& k : space.knobs) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"shared", "tile", "side", "depth", "tile_i", "tile_j"});
  CHECK(space.knobs[3].options == std::vector<int64_t>{8, 16, 32});
  CHECK(plain.shared_caches.size() == 2);
  auto workgroup = [](const te::Stage& s) {
    for (auto& l : s.leaves)
      if (l->kind == tir::ForKind::LocalX) return l->extent;
    return int64_t(0);
  };
  CHECK(workgroup(plain) == 64);  // 8 x 8 invocations
  // A smaller workgroup with a deeper slice.
  t.apply[t.spaces.begin()->first] = {{"side", 4}, {"depth", 32}, {"tile", 8}};
  te::Stage block(mm());
  lower::schedule_matmul_gpu(block, a, b, true, &t, "");
  CHECK(block.shared_caches.size() == 2);
  CHECK(workgroup(block) == 16);
  // Register tiles instead.
  t.apply[t.spaces.begin()->first] = {{"shared", 0}, {"tile_i", 8}, {"tile_j", 2}};
  te::Stage tiles(mm());
  lower::schedule_matmul_gpu(tiles, a, b, true, &t, "");
  CHECK(tiles.shared_caches.empty());
  // Without shared memory only the register tile is a knob.
  kiln::tune::Tuning mobile;
  te::Stage m(mm());
  lower::schedule_matmul_gpu(m, a, b, false, &mobile, "");
  names.clear();
  for (auto& k : mobile.spaces.begin()->second.knobs) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"tile_i", "tile_j"});
}
