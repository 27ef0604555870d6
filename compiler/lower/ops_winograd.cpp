// Conv 3x3 (stride 1, pad 1) by Winograd's F(r x r, 3x3), r = 2 or 4,
// blocked layout: a Conv the winograd graph pass marked (kiln_winograd=r),
// its weights already transformed: U [M/m, a, a, C/c, c, m] = G g G^T, with
// a = r + 2 the input tile's size.
//
// The formula (what the kernel computes; any schedule may lower it):
//   out[n, mo, oh, ow, mi] = sum_{xi, nu, co, ci}
//       AT[oh%r][xi] AT[ow%r][nu] U[mo, xi, nu, co, ci, mi] V[n, co, ci, oh/r, ow/r, xi, nu]
//   V[.., th, tw, xi, nu] = sum_{i, j} BT[xi][i] BT[nu][j] x[n, co, r th+i-1, r tw+j-1, ci]   (0 outside)
//
// The CPU schedule tensorizes a workgroup (one row of r x r tiles, all
// output channels or a group of them) into the fast form, in three steps
// over local buffers:
//   1. input transform: V[xi,nu][co][t][ci] for every tile t of the row,
//      a^2 vector lincombs per tile and input channel block;
//   2. a^2 GEMMs, one per (xi, nu): Mt[xi,nu][t][m] = sum_c V[..][t][c] U[..][c][m],
//      a register tile of tiles x channel blocks, as in the direct conv;
//   3. output transform: Y = AT Mt A per tile, through the fused epilogue.
// V (about 114 KB for ResNet's stages with r = 2, 126 KiB with r = 4) is
// reused by every output channel; U by every row.
#include <algorithm>

#include "graph/passes.h"
#include "lower/op_lowering.h"
#include "lower/ops_winograd.h"
#include "lower/schedules_cpu.h"
#include "support/diagnostics.h"
#include "support/int_math.h"

namespace kiln::lower {
namespace {

using tir::Stmt;

// B^T (a x a) and A^T (r x a) of F(2x2, 3x3) and F(4x4, 3x3) (G is in graph/pass_winograd.cpp).
constexpr float kBT2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr float kAT2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
constexpr float kBT4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                              {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr float kAT4[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// Row `i` of B^T or A^T for output tile size r.
const float* bt_row(int64_t r, int i) { return r == 2 ? kBT2[i] : kBT4[i]; }
const float* at_row(int64_t r, int i) { return r == 2 ? kAT2[i] : kAT4[i]; }

// sum_k coef[k] * terms[k]: zeros skipped, +-1 as additions.
Expr lincomb(const float* coef, const std::vector<Expr>& terms) {
  Expr sum;
  for (size_t k = 0; k < terms.size(); k++) {
    float a = coef[k];
    if (a == 0) continue;
    Expr term = a == 1 || a == -1 ? terms[k] : terms[k] * Expr(a);
    if (!sum.defined()) sum = a == -1 ? Expr(0.0f) - term : term;
    else sum = a == -1 ? sum - term : sum + term;
  }
  return sum.defined() ? sum : Expr(0.0f);
}

// row[idx] of a constant table, for a variable idx (the formula only).
Expr lookup(const float* row, int n, const Expr& idx) {
  Expr e = Expr(row[n - 1]);
  for (int k = n - 2; k >= 0; k--) e = tir::select(tir::EQ::make(idx, Expr(k)), Expr(row[k]), e);
  return e;
}

Expr var(const std::string& name) { return tir::Var::make(tir::Index(), name); }

Stmt counted_loop(const Expr& v, int64_t extent, tir::ForKind kind, Stmt body) {
  return tir::For::make(v, Expr(0), Expr(extent), kind, std::move(body));
}

// The tensorized workgroup: r output rows from oh0, every column and channel.
struct WinogradTile {
  int64_t r, a;                // output tile size (2 or 4) and input tile size (r + 2)
  int64_t H, W, CB, c, MB, m;  // input rows/columns, input channel blocks and lanes, output ones (of the workgroup)
  int64_t tm, tt;              // register tile: channel blocks x tiles
  te::Tensor x, u;             // input [N, C/c, H, W, c] and U

  Stmt emit(const te::TensorizeContext& ctx) const {
    tir::Buffer xb = ctx.buffer_of(x.get()), ub = ctx.buffer_of(u.get());
    internal_assert(xb && ub) << "winograd: input and weights must be buffers";
    Expr n0 = ctx.axis_base[0], mo0 = ctx.axis_base[1], oh0 = ctx.axis_base[2];
    int64_t T = W / r, A = a * a;  // tiles in the row, transform points
    tir::Type f32 = tir::Float(32);
    tir::Buffer vb = tir::make_buffer("wino_v", f32, A * CB * T * c, -1);
    tir::Buffer mb = tir::make_buffer("wino_m", f32, A * tt * tm * m, -1);
    tir::Buffer acc = tir::make_buffer("wino_acc", f32, tt * tm * m, -1);

    // 1. Input transform.
    Expr co = var("wco"), t = var("wt"), ci = var("wci");
    std::vector<std::vector<Expr>> d(a);  // d[i][j] = x[n0, co, oh0+i-1, r t+j-1, ci], 0 outside
    for (int i = 0; i < a; i++)
      for (int j = 0; j < a; j++) {
        Expr ih = oh0 + Expr(i - 1), iw = t * Expr(r) + Expr(j - 1);
        Expr inside = ih >= Expr(0) && ih < Expr(H) && iw >= Expr(0) && iw < Expr(W);
        Expr ch = tir::clamp(ih, Expr(0), Expr(H - 1)), cw = tir::clamp(iw, Expr(0), Expr(W - 1));
        Expr idx = (((n0 * Expr(CB) + co) * Expr(H) + ch) * Expr(W) + cw) * Expr(c) + ci;
        d[i].push_back(tir::select(inside, tir::Load::make(xb, idx), Expr(0.0f)));
      }
    std::vector<Stmt> stores;
    for (int nu = 0; nu < a; nu++) {
      std::vector<Expr> rows;  // (d B)[i][nu], shared by every xi
      for (int i = 0; i < a; i++) rows.push_back(lincomb(bt_row(r, nu), d[i]));
      for (int xi = 0; xi < a; xi++) {
        Expr v = lincomb(bt_row(r, xi), rows);
        Expr at = (((Expr(xi * a + nu) * Expr(CB) + co) * Expr(T) + t) * Expr(c)) + ci;
        stores.push_back(tir::Store::make(vb, at, v));
      }
    }
    Stmt transform_in =
        counted_loop(co, CB, tir::ForKind::Serial, counted_loop(t, T, tir::ForKind::Serial, counted_loop(ci, c, tir::ForKind::Vectorized, tir::Block::make(stores))));

    // 2. GEMMs and 3. output transform, per channel tile and tile group.
    Expr mt = var("wmt"), tg = var("wtg"), xn = var("wxn"), k = var("wk"), kc = var("wkc");
    Expr ti = var("wti"), mo = var("wmo"), mi = var("wmi");
    Expr acc_at = (ti * Expr(tm) + mo) * Expr(m) + mi;
    auto over_tile = [&](Stmt s) {
      return counted_loop(ti, tt, tir::ForKind::Unrolled, counted_loop(mo, tm, tir::ForKind::Unrolled, counted_loop(mi, m, tir::ForKind::Vectorized, s)));
    };
    Expr v_at = ((xn * Expr(CB) + k) * Expr(T) + tg * Expr(tt) + ti) * Expr(c) + kc;
    Expr u_at = ((((mo0 + mt * Expr(tm) + mo) * Expr(A) + xn) * Expr(CB) + k) * Expr(c) + kc) * Expr(m) + mi;
    Stmt fma = tir::Store::make(acc, acc_at, tir::Load::make(acc, acc_at) + tir::Load::make(vb, v_at) * tir::Load::make(ub, u_at));
    Expr m_at = ((xn * Expr(tt) + ti) * Expr(tm) + mo) * Expr(m) + mi;
    Stmt gemm = tir::Allocate::make(
        acc, tir::Block::make({over_tile(tir::Store::make(acc, acc_at, Expr(0.0f))),
                               counted_loop(k, CB, tir::ForKind::Serial, counted_loop(kc, c, tir::ForKind::Serial, over_tile(fma))),
                               over_tile(tir::Store::make(mb, m_at, tir::Load::make(acc, acc_at)))}));
    gemm = counted_loop(xn, A, tir::ForKind::Serial, gemm);

    std::vector<std::vector<Expr>> mv(a);  // mv[xi][nu]: Mt[xi*a+nu] of tile ti, block mo, lane mi
    for (int x = 0; x < A; x++)
      mv[x / a].push_back(tir::Load::make(mb, ((Expr(x) * Expr(tt) + ti) * Expr(tm) + mo) * Expr(m) + mi));
    std::vector<Stmt> writes;
    for (int sc = 0; sc < r; sc++) {
      std::vector<Expr> cols;  // (Mt A)[xi][sc], shared by every output row
      for (int xi = 0; xi < a; xi++) cols.push_back(lincomb(at_row(r, sc), mv[xi]));
      for (int sr = 0; sr < r; sr++) {
        Expr y = lincomb(at_row(r, sr), cols);
        Expr col = (tg * Expr(tt) + ti) * Expr(r) + Expr(sc);
        writes.push_back(ctx.write(y, {n0, mo0 + mt * Expr(tm) + mo, oh0 + Expr(sr), col, mi}));
      }
    }
    Stmt transform_out = counted_loop(ti, tt, tir::ForKind::Serial,
                                      counted_loop(mo, tm, tir::ForKind::Unrolled, counted_loop(mi, m, tir::ForKind::Vectorized, tir::Block::make(writes))));
    Stmt per_tile = counted_loop(mt, MB / tm, tir::ForKind::Serial,
                                 counted_loop(tg, T / tt, tir::ForKind::Serial, tir::Allocate::make(mb, tir::Block::make({gemm, transform_out}))));
    return tir::Allocate::make(vb, tir::Block::make({transform_in, per_tile}));
  }
};

}  // namespace

te::Tensor winograd_conv(const te::Tensor& x, const te::Tensor& u, const graph::Shape& os) {
  tir::Type t = x.dtype();
  int64_t a = u.shape()[1], r = a - 2;
  // A^T[o % r][k] for a variable k.
  auto at = [r, a](const Expr& o, const Expr& k) {
    Expr e = lookup(at_row(r, (int)r - 1), (int)a, k);
    for (int p = (int)r - 2; p >= 0; p--) e = tir::select(tir::EQ::make(o % Expr(r), Expr(p)), lookup(at_row(r, p), (int)a, k), e);
    return e;
  };
  return te::reduce("conv_winograd", os, {a, a, u.shape()[3], u.shape()[4]}, te::ReduceKind::Sum, t,
                    [=](const Indices& o, const Indices& rd) {
    Expr th = o[2] / Expr(r), tw = o[3] / Expr(r);
    Expr v;
    for (int i = 0; i < a; i++)
      for (int j = 0; j < a; j++) {
        Expr d = padded_read(x, {o[0], rd[2], th * Expr(r) + Expr(i - 1), tw * Expr(r) + Expr(j - 1), rd[3]}, tir::make_const(t, 0));
        float col_i[6], col_j[6];
        for (int k = 0; k < a; k++) col_i[k] = bt_row(r, k)[i], col_j[k] = bt_row(r, k)[j];
        Expr term = lookup(col_i, (int)a, rd[0]) * lookup(col_j, (int)a, rd[1]) * d;
        v = v.defined() ? v + term : term;
      }
    return at(o[2], rd[0]) * at(o[3], rd[1]) * u({o[1], rd[0], rd[1], rd[2], rd[3], o[4]}) * v;
  });
}

// The conv's direct-kernel knobs, declared (on a stage that is not used)
// in its workload beside the "winograd" knob the graph pass declared, so
// that the tuner's space is the same whichever algorithm a compile picks,
// and the kernel is this workload's.
void declare_direct_knobs(const te::Tensor& x, const graph::Shape& us, const graph::Shape& os, int registers,
                          tune::Tuning* tuning) {
  te::Tensor w = te::placeholder("w_direct", graph::Shape{us[0], us[3], 3, 3, us[4], us[5]}, x.dtype());
  te::Tensor direct = te::reduce("conv_nchwc", os, graph::Shape{us[3], 3, 3, us[4]}, te::ReduceKind::Sum, x.dtype(),
                                 [=](const Indices& o, const Indices& r) {
    return x({o[0], r[0], o[2] + r[1], o[3] + r[2], r[3]}) * w({o[1], r[0], r[1], r[2], r[3], o[4]});
  });
  te::Stage unused(direct);
  schedule_conv2d_blocked_cpu(unused, w, registers, false, tuning, tune::conv_variant({1, 1}, {1, 1}), true);
}

void lower_conv_winograd(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0), u = ctx.in(1);
  graph::Shape xs = x.shape(), us = u.shape(), os = ctx.out_shape(0);
  int64_t r = n.attr_int("kiln_winograd", 0);
  internal_assert((r == 2 || r == 4) && xs.size() == 5 && us.size() == 6 && os.size() == 5 && us[1] == r + 2 &&
                  us[2] == r + 2)
      << n.describe() << ": bad Winograd shapes";
  internal_assert(os[2] == xs[2] && os[3] == xs[3] && os[2] % r == 0 && os[3] % r == 0)
      << n.describe() << ": Winograd F(" << r << "x" << r << ", 3x3) needs 'same' output sizes that " << r << " divides";
  int64_t m = os[4];
  te::Tensor conv = winograd_conv(x, u, os);
  VectorInfo target = ctx.vector();
  tune::Tuning* tuning = ctx.tuning();
  ctx.schedule_reduction(conv, [=](te::Stage& s) {
    if (tuning) declare_direct_knobs(x, us, os, target.registers, tuning);
    schedule_conv2d_winograd_cpu(s, x, u, target, tuning);
  });
  if (ctx.has_input(2)) {
    te::Tensor b = ctx.in(2), acc = conv;
    conv = te::compute("conv_bias", os, [acc, b, m](const Indices& o) { return acc(o) + b({o[1] * Expr(m) + o[4]}); });
  }
  ctx.set_output(0, conv);
}

void schedule_conv2d_winograd_cpu(te::Stage& s, const te::Tensor& x, const te::Tensor& u, const VectorInfo& target,
                                  tune::Tuning* tuning) {
  internal_assert(s.axes.size() == 5 && s.reduce_axes.size() == 4) << "winograd: unexpected stage";
  auto n = s.axes[0], mo = s.axes[1], oh = s.axes[2], ow = s.axes[3], mi = s.axes[4];
  WinogradTile w;
  w.a = u.shape()[1];
  w.r = w.a - 2;
  w.H = x.shape()[2];
  w.W = x.shape()[3];
  w.CB = x.shape()[1];
  w.c = x.shape()[4];
  w.MB = mo->extent;  // for now: the whole conv; a channel group below
  w.m = mi->extent;
  w.x = x;
  w.u = u;
  // The register tile: a knob of the conv's workload (the key its direct
  // kernel's schedule gives it), declared by the winograd graph pass.
  graph::Shape out;
  for (auto& axis : s.axes) out.push_back(axis->extent);
  tune::Knobs knobs = graph::winograd_workload(tuning, out, w.CB, w.c);
  graph::WinogradRegisterTile tile = graph::winograd_register_tile(knobs, w.r, w.W / w.r, w.MB, target.registers);
  w.tt = tile.tiles;
  w.tm = tile.blocks;
  // Workgroups: tile rows, and channel groups where rows are few (ResNet's
  // 14x14 stage has 7), so that threads share the work evenly; each group
  // transforms the input rows again (a few percent of the work).
  int64_t rows = n->extent * (oh->extent / w.r);
  int64_t groups = rows >= 12 ? 1 : largest_divisor(w.MB / w.tm, (12 + rows - 1) / rows);
  w.MB /= groups;
  auto [oho, ohi] = s.split(oh, w.r);
  auto [mg, mb] = s.split(mo, w.MB);
  // (The group loop outside the row loop: loop partitioning branches the
  // row loop, and must not copy another workgroup loop into both branches.)
  s.reorder({mg, n, oho, ohi, mb, ow, mi, s.reduce_axes[0], s.reduce_axes[1], s.reduce_axes[2], s.reduce_axes[3]});
  s.bind(mg, tir::ForKind::WorkgroupY);
  s.bind(s.fuse(n, oho), tir::ForKind::WorkgroupX);
  s.tensorize(ohi, te::TensorIntrin{w.r == 2 ? "winograd_f2x2_3x3" : "winograd_f4x4_3x3", [w](const te::TensorizeContext& ctx) { return w.emit(ctx); }});
}

}  // namespace kiln::lower
