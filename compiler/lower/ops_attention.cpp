// kiln.Attention (graph/pass_fuse_attention.cpp): out = softmax(Q Kt * scale
// [+ mask]) V per batch and head, over strided views of the inputs, as one
// CPU kernel in the manner of flash attention: the scores are never written
// whole, each key block is read once per block of query rows, and the
// softmax is online (a running maximum and sum per row rescale the partial
// result when a later block raises the maximum).
//
// A workgroup is one (batch, head, block of Bq query rows). For each block
// of Bk keys it
//   1. packs the block of K transposed and scaled, kt[d][j] = K[j][d] * scale
//      (vector lanes along the keys; a gather when K's keys are strided),
//      so that the scores run as a matrix product with vector loads;
//   2. for each tile of Tq query rows: computes the Tq x Bk scores in
//      register tiles of Tq x 2 vectors (Q's elements broadcast), adds the
//      mask, updates each row's maximum m and sum l (exp once per score),
//      rescales the row's partial result by exp(m_old - m_new), and adds
//      P V in register tiles of Tq x EC vectors of V's columns;
// then writes acc / l through the output view. Scratch per workgroup (the
// stack): kt (D x Bk), the tile's scores (Tq x Bk), the block's partial
// results (Bq x Dv) and m, l; each under 32 KB (thread stacks: 1 MB,
// runtime/src/exec/thread_pool.h).
//
// Views (attributes "q", "k", "v", "mask", "out"): [offset, stride of batch,
// head, row, column] in elements of the input's buffer; k's row is the key.
// "dims" = [B, H, Sq, Sk, D, Dv] (Sq and Sk at their largest where they are
// known only at run time: then "q_rows" and "k_rows" name the dimension of
// Q's and K's input holding them, and the workgroup and key-block counts
// follow the run's); "scale" a float. Keys past Sk in the last block score
// -inf; query rows past Sq read row Sq - 1 and are not written.
#include <algorithm>
#include <cmath>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"
#include "support/int_math.h"
#include "tune/space.h"

namespace kiln::lower {

using namespace serial;  // NOLINT: the builders are this file's vocabulary

namespace {

struct View {
  int64_t offset = 0;  // first element
  int64_t s[4] = {};   // strides of batch, head, row, column
};

View view_attr(const graph::Node& n, const char* name) {
  std::vector<int64_t> v = n.attr_ints(name, {});
  internal_assert(v.size() == 5) << n.describe() << ": attribute '" << name << "' must hold 5 integers";
  View r;
  r.offset = v[0];
  for (int k = 0; k < 4; k++) r.s[k] = v[k + 1];
  return r;
}

// The largest element index a view reaches over `extent` (per dimension),
// which must lie inside a buffer of `elements`.
void check_view(const graph::Node& n, const char* name, const View& v, const int64_t extent[4], int64_t elements) {
  int64_t last = v.offset;
  bool ok = v.offset >= 0;
  for (int k = 0; k < 4; k++) {
    ok &= v.s[k] >= 0 && extent[k] >= 1;
    last += (extent[k] - 1) * v.s[k];
  }
  internal_assert(ok && last < elements) << n.describe() << ": view '" << name << "' reaches element " << last << " of "
                                         << elements;
}

Expr f32(double x) { return tir::make_const(tir::Float(32), x); }
Expr idx(int64_t x) { return Expr(x); }

// for lane in [0, lanes): body(lane), vectorized.
tir::Stmt vec(int64_t lanes, const std::function<tir::Stmt(const Expr&)>& body) {
  Expr lane = index_var("lane");
  return tir::For::make(lane, Expr(0), Expr(lanes), tir::ForKind::Vectorized, body(lane));
}

// lanes[at] = op over lanes[at .. at + n) (n a power of two), folding
// halves: log2(n) vector steps instead of a chain of n - 1 scalar ones.
tir::Stmt tree_reduce(const tir::Buffer& lanes, int64_t at, int64_t n,
                      const std::function<Expr(const Expr&, const Expr&)>& op) {
  std::vector<tir::Stmt> steps;
  for (int64_t w = n / 2; w >= 1; w /= 2)
    steps.push_back(vec(w, [&](const Expr& l) {
      Expr i = idx(at) + l;
      return tir::Store::make(lanes, i, op(tir::Load::make(lanes, i), tir::Load::make(lanes, i + idx(w))));
    }));
  return block(steps);
}

// The largest power of two <= limit dividing n.
int64_t pow2_divisor(int64_t n, int64_t limit) {
  int64_t p = 1;
  while (p * 2 <= limit && n % (p * 2) == 0) p *= 2;
  return p;
}

}  // namespace

namespace {

// What both kernels read: the node's attributes, checked.
struct Attention {
  int64_t B, H, Sq, Sk, D, Dv;  // batch, heads, query rows, keys, head width of Q/K and of V (Sq, Sk: the largest)
  Expr sq, sk;                   // the query rows and keys of a run (over shape symbols where known only then)
  View qv, kv, vv, ov, mv;      // the views (mv: only with a mask)
  bool has_mask;                // a fourth input, added to the scores
  float scale;                  // multiplies Q Kt
  int q_in, k_in, v_in, m_in, out;  // graph values (m_in: -1 without a mask)
};

Attention read_attention(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  ctx.require_float32();
  std::vector<int64_t> dims = n.attr_ints("dims", {});
  internal_assert(dims.size() == 6) << n.describe() << ": attribute 'dims' must hold 6 integers";
  for (int64_t d : dims) internal_assert(d >= 1) << n.describe() << ": empty dimension";
  Attention a;
  a.B = dims[0], a.H = dims[1], a.Sq = dims[2], a.Sk = dims[3], a.D = dims[4], a.Dv = dims[5];
  a.has_mask = n.inputs.size() > 3 && n.inputs[3] >= 0;
  a.qv = view_attr(n, "q"), a.kv = view_attr(n, "k"), a.vv = view_attr(n, "v"), a.ov = view_attr(n, "out");
  a.mv = a.has_mask ? view_attr(n, "mask") : View();
  const int64_t qe[4] = {a.B, a.H, a.Sq, a.D}, ke[4] = {a.B, a.H, a.Sk, a.D}, ve[4] = {a.B, a.H, a.Sk, a.Dv};
  const int64_t oe[4] = {a.B, a.H, a.Sq, a.Dv}, me[4] = {a.B, a.H, a.Sq, a.Sk};
  check_view(n, "q", a.qv, qe, ctx.value(ctx.input(0)).elements());
  check_view(n, "k", a.kv, ke, ctx.value(ctx.input(1)).elements());
  check_view(n, "v", a.vv, ve, ctx.value(ctx.input(2)).elements());
  check_view(n, "out", a.ov, oe, ctx.value(ctx.output(0)).elements());
  if (a.has_mask) check_view(n, "mask", a.mv, me, ctx.value(ctx.input(3)).elements());
  a.scale = (float)n.attr_float("scale", 1.0);
  a.q_in = ctx.input(0), a.k_in = ctx.input(1), a.v_in = ctx.input(2), a.out = ctx.output(0);
  a.m_in = a.has_mask ? ctx.input(3) : -1;
  // Run-time row and key counts: the input dimension holding each (graph/pass_fuse_attention.cpp).
  auto extent = [&](const char* attr, size_t input, int64_t largest) {
    std::vector<int64_t> at = n.attr_ints(attr, {});
    if (at.empty()) return Expr(largest);
    te::Dims d = ctx.in_dims(input);
    internal_assert(at.size() == 1 && at[0] >= 0 && at[0] < (int64_t)d.size()) << n.describe() << ": bad '" << attr << "'";
    return d[(size_t)at[0]];
  };
  a.sq = extent("q_rows", 0, a.Sq);
  a.sk = extent("k_rows", 1, a.Sk);
  return a;
}

// The buffers a kernel binds, in binding order.
struct Buffers {
  tir::Buffer Q, K, V, M, O;  // M: undefined without a mask
};

// The CPU kernel's tiles (the file comment).
struct Tiles {
  int64_t L;   // vector lanes
  int64_t KT;  // keys per score register tile (two vectors)
  int64_t Tq;  // query rows of a register tile
  int64_t Bk;  // keys of a block (a multiple of KT)
  int64_t EV;  // lanes of a vector of V's columns
  int64_t EC;  // vectors of V's columns in a P V register tile (dividing Dv / EV)
  int64_t Bq;  // query rows of a workgroup (a multiple of Tq)
  // Bytes of a workgroup's scratch (cpu_body's buffers).
  int64_t scratch(int64_t D, int64_t Dv) const {
    return 4 * (D * Bk + Tq * Bk + Bq * Dv + 2 * Bq + Tq * (KT + EC * EV + 2 * L + 1));
  }
};

// The tiles for `target`'s vector registers: the hand-written sizes, or a
// point of the kernel's "attention" workload (tune/space.h; `tuning` null:
// the hand-written sizes). Knobs: rows (Tq), key_block (Bk), query_block
// (Bq, rounded down to a multiple of Tq), pv_vectors (EC).
Tiles choose_tiles(const graph::Node& n, const Attention& a, const VectorInfo& target, tune::Tuning* tuning) {
  const int64_t Sq = a.Sq, Sk = a.Sk, D = a.D, Dv = a.Dv;
  const int64_t regs = std::max(8, target.registers);
  Tiles t;
  t.L = std::max(1, target.lanes);
  t.KT = 2 * t.L;
  t.EV = pow2_divisor(Dv, t.L);
  // The most P V vectors of a tile of `rows` rows within `limit` accumulators.
  auto pv_vectors = [&](int64_t rows, int64_t limit) {
    int64_t ec = std::max<int64_t>(1, std::min(Dv / t.EV, limit / rows));
    while ((Dv / t.EV) % ec) ec--;
    return ec;
  };
  // The hand-written tiles: a quarter of the registers' rows; the packed
  // keys (D x Bk) and the tile's scores (Tq x Bk) within 40 KB; the P V tile
  // in half the registers; the block's partial results within 32 KB.
  t.Tq = std::min<int64_t>(Sq, std::max<int64_t>(1, regs / 4));
  t.Bk = std::max(t.KT, std::min(round_up(Sk, t.KT), (10240 / (D + t.Tq)) / t.KT * t.KT));
  t.EC = pv_vectors(t.Tq, regs / 2);
  t.Bq = std::max(t.Tq, std::min({round_up(Sq, t.Tq), 8192 / Dv, (int64_t)128}) / t.Tq * t.Tq);
  // The knobs.
  // (The key: the query rows, then the keys and the widths of a score's and
  // an output's dot products, D + Dv, so that the space's flops are the
  // kernel's; then "d<D>", the row and column strides of Q, K and V (how
  // the kernel reads them: "q768x1" for rows of a fused QKV product), and
  // "mask".)
  auto strides = [](const char* name, const View& v) {
    return std::string(" ") + name + std::to_string(v.s[2]) + "x" + std::to_string(v.s[3]);
  };
  tune::Knobs knobs(tuning, "attention", "f32", {a.B, a.H, Sq}, {Sk, D + Dv},
                    "d" + std::to_string(D) + strides("q", a.qv) + strides("k", a.kv) + strides("v", a.vv) +
                        (a.has_mask ? " mask" : ""));
  std::vector<int64_t> rows, keys, queries;
  for (int64_t r : {1, 2, 3, 4, 6, 8, 12, 16})
    if (r <= Sq && 2 * r <= regs - 4) rows.push_back(r);  // the score tile: 2 Tq accumulators
  for (int64_t k = t.KT; k <= round_up(Sk, t.KT) && k <= 64 * t.KT; k *= 2) keys.push_back(k);
  for (int64_t q : {16, 32, 64, 128, 256})
    if (q <= round_up(Sq, 16)) queries.push_back(q);
  t.Tq = knobs.get("rows", rows, t.Tq);
  t.Bk = knobs.get("key_block", keys, t.Bk);
  t.Bq = std::max(t.Tq, std::min(knobs.get("query_block", queries, t.Bq), round_up(Sq, t.Tq)) / t.Tq * t.Tq);
  // (A P V tile beyond the accumulators gets fewer vectors.)
  t.EC = std::min(knobs.get("pv_vectors", tune::divisors(Dv / t.EV, regs / 2), t.EC), pv_vectors(t.Tq, regs - 4));
  // Blocks beyond the stack budget (thread stacks: 1 MB) shrink, keys first.
  while (t.scratch(D, Dv) > (160 << 10) && (t.Bk > t.KT || t.Bq > t.Tq)) {
    if (t.Bk > t.KT) t.Bk = std::max(t.KT, t.Bk / 2 / t.KT * t.KT);
    else t.Bq = std::max(t.Tq, t.Bq / 2 / t.Tq * t.Tq);
  }
  internal_assert(t.scratch(D, Dv) <= (160 << 10)) << n.describe() << ": " << t.scratch(D, Dv) << " bytes of scratch "
                                                   << "(heads wider than graph/pass_fuse_attention.cpp allows?)";
  return t;
}

// The CPU kernel's body (the file comment), tiles sized for `target` (a
// point of its workload: choose_tiles).
tir::Stmt cpu_body(const graph::Node& n, const Attention& a, const VectorInfo& target, const Buffers& buf,
                   tune::Tuning* tuning) {
  const int64_t B = a.B, H = a.H, Sq = a.Sq, Sk = a.Sk, D = a.D, Dv = a.Dv;
  const View &qv = a.qv, &kv = a.kv, &vv = a.vv, &ov = a.ov, &mv = a.mv;
  const bool has_mask = a.has_mask;
  const float scale = a.scale;
  const Tiles tiles = choose_tiles(n, a, target, tuning);
  const int64_t L = tiles.L, KT = tiles.KT, Tq = tiles.Tq, Bk = tiles.Bk, EV = tiles.EV, EC = tiles.EC, Bq = tiles.Bq;
  const int64_t nkb = ceil_div(Sk, Bk);  // at most
  const bool dynamic = !tir::as_const_int(a.sq) || !tir::as_const_int(a.sk);
  const Expr nqb = (a.sq + idx(Bq - 1)) / idx(Bq), nkb_run = (a.sk + idx(Bk - 1)) / idx(Bk);
  const bool ragged_keys = dynamic || Sk % Bk != 0;
  const bool ragged_rows = dynamic || Sq % Bq != 0 || Bq % Tq != 0 || Sq % Tq != 0;

  {
    const tir::Buffer &Q = buf.Q, &K = buf.K, &V = buf.V, &M = buf.M, &O = buf.O;
    tir::Type F = tir::Float(32);
    tir::Buffer kt = tir::make_buffer("att_kt", F, D * Bk, -1);        // the key block, transposed and scaled
    tir::Buffer s = tir::make_buffer("att_s", F, Tq * Bk, -1);         // the tile's scores, then exp
    tir::Buffer acc = tir::make_buffer("att_acc", F, Bq * Dv, -1);     // partial results of the block's rows
    tir::Buffer mx = tir::make_buffer("att_m", F, Bq, -1);             // running maximum per row
    tir::Buffer sum = tir::make_buffer("att_l", F, Bq, -1);            // running sum per row
    tir::Buffer st = tir::make_buffer("att_tile", F, Tq * KT, -1);     // score register tile
    tir::Buffer pt = tir::make_buffer("att_pv", F, Tq * EC * EV, -1);  // P V register tile
    tir::Buffer rmax = tir::make_buffer("att_rmax", F, Tq * L, -1);    // the tile's row maxima, per lane
    tir::Buffer rsum = tir::make_buffer("att_rsum", F, Tq * L, -1);    // the tile's row sums, per lane
    tir::Buffer mnew = tir::make_buffer("att_mnew", F, Tq, -1);        // the tile's new row maxima

    Expr wg = index_var("wg");
    Expr bh = wg / nqb, row0 = (wg % nqb) * idx(Bq);
    // The block's query rows: Bq, or fewer in the last block of a ragged
    // (or short, run-time) count; the loops over rows and row tiles stop there.
    Expr rows_here = ragged_rows ? min(idx(Bq), a.sq - row0) : idx(Bq);
    Expr b = bh / idx(H), h = bh % idx(H);
    auto base = [&](const View& v) { return idx(v.offset) + b * idx(v.s[0]) + h * idx(v.s[1]); };
    Expr qb = base(qv), kb = base(kv), vb = base(vv), ob = base(ov), mb = has_mask ? base(mv) : Expr();
    auto row = [&](const Expr& local) {  // a query row of the block (clamped: the last block may be ragged)
      Expr r = row0 + local;
      return ragged_rows ? min(r, a.sq - idx(1)) : r;
    };
    const Expr ninf = f32(-INFINITY);

    std::vector<tir::Stmt> body;
    {  // m = -inf, l = 0, acc = 0
      Expr r = index_var("r");
      body.push_back(loop(r, rows_here, block({tir::Store::make(mx, r, ninf), tir::Store::make(sum, r, f32(0))})));
      Expr c = index_var("c");
      body.push_back(loop(c, rows_here * idx(Dv / EV), vec(EV, [&](const Expr& l) { return tir::Store::make(acc, c * idx(EV) + l, f32(0)); })));
    }
    Expr kblk = index_var("kblk");
    Expr j0 = kblk * idx(Bk);
    Expr nk = ragged_keys ? min(idx(Bk), a.sk - j0) : idx(Bk);  // keys in this block
    // Loops over the block's keys stop at the vector or tile holding its
    // last key: a short run (or block) pays for its keys, not for the block's
    // size (the lanes past the last key are masked or score -inf).
    auto chunks = [&](int64_t width) { return ragged_keys ? (nk + idx(width - 1)) / idx(width) : idx(Bk / width); };
    std::vector<tir::Stmt> per_block;
    {  // 1. kt[d][j] = K[j0 + j][d] * scale
      Expr jc = index_var("jc"), d = index_var("d");
      tir::Stmt pack = vec(L, [&](const Expr& l) {
        Expr j = jc * idx(L) + l;
        tir::Stmt st1 = tir::Store::make(kt, d * idx(Bk) + j,
                                         tir::Load::make(K, kb + (j0 + j) * idx(kv.s[2]) + d * idx(kv.s[3])) * f32(scale));
        return ragged_keys ? when(j < nk, st1) : st1;
      });
      per_block.push_back(loop(jc, chunks(L), loop(d, idx(D), pack)));
    }
    Expr qt = index_var("qt");
    Expr r0 = qt * idx(Tq);
    std::vector<tir::Stmt> tile;
    {  // 2a. scores of the tile, masked, into s; each row's maximum in lanes
      Expr jt = index_var("jt"), d = index_var("d");
      std::vector<tir::Stmt> zero, fma, store;
      for (int64_t t = 0; t < Tq; t++)
        tile.push_back(vec(L, [&](const Expr& l) { return tir::Store::make(rmax, idx(t * L) + l, ninf); }));
      for (int64_t t = 0; t < Tq; t++)
        for (int64_t u = 0; u < 2; u++) {
          int64_t at = (t * 2 + u) * L;
          zero.push_back(vec(L, [&](const Expr& l) { return tir::Store::make(st, idx(at) + l, f32(0)); }));
          Expr qval = tir::Load::make(Q, qb + row(r0 + idx(t)) * idx(qv.s[2]) + d * idx(qv.s[3]));
          fma.push_back(vec(L, [&](const Expr& l) {
            Expr kval = tir::Load::make(kt, d * idx(Bk) + jt * idx(KT) + idx(u * L) + l);
            return tir::Store::make(st, idx(at) + l, tir::Load::make(st, idx(at) + l) + qval * kval);
          }));
          store.push_back(vec(L, [&](const Expr& l) {
            Expr j = jt * idx(KT) + idx(u * L) + l;
            Expr v = tir::Load::make(st, idx(at) + l);
            if (has_mask)
              v = v + tir::Load::make(M, mb + row(r0 + idx(t)) * idx(mv.s[2]) + (j0 + j) * idx(mv.s[3]));
            Expr lane = idx(t * L) + l;
            tir::Stmt write = block({tir::Store::make(s, idx(t * Bk) + j, v),
                                     tir::Store::make(rmax, lane, max(tir::Load::make(rmax, lane), tir::Load::make(s, idx(t * Bk) + j)))});
            if (!ragged_keys) return write;
            return block({tir::Store::make(s, idx(t * Bk) + j, ninf), when(j < nk, write)});
          }));
        }
      std::vector<tir::Stmt> jt_body = zero;
      jt_body.push_back(loop(d, idx(D), block(fma)));
      for (auto& x : store) jt_body.push_back(x);
      tile.push_back(loop(jt, chunks(KT), block(jt_body)));
    }
    {  // 2b. online softmax, each step for all the tile's rows (independent chains side by side)
      // A row whose scores are all -inf so far subtracts 0, not -inf (no NaN).
      auto msafe = [&](int64_t t) {
        Expr m = tir::Load::make(mnew, idx(t));
        return select(tir::EQ::make(m, ninf), f32(0), m);
      };
      for (int64_t t = 0; t < Tq; t++) {  // the new maximum
        tile.push_back(tree_reduce(rmax, t * L, L, [](const Expr& a, const Expr& c) { return max(a, c); }));
        tile.push_back(tir::Store::make(mnew, idx(t), max(tir::Load::make(mx, r0 + idx(t)), tir::Load::make(rmax, idx(t * L)))));
      }
      for (int64_t t = 0; t < Tq; t++) {  // p = exp(s - m), summed in lanes
        Expr srow = idx(t * Bk), c = index_var("c");
        tile.push_back(vec(L, [&](const Expr& l) { return tir::Store::make(rsum, idx(t * L) + l, f32(0)); }));
        tile.push_back(loop(c, chunks(L), vec(L, [&](const Expr& l) {
                              Expr at = srow + c * idx(L) + l, lane = idx(t * L) + l;
                              Expr p = tir::Call::make(tir::Intrinsic::Exp, {tir::Load::make(s, at) - msafe(t)});
                              return block({tir::Store::make(s, at, p),
                                            tir::Store::make(rsum, lane, tir::Load::make(rsum, lane) + tir::Load::make(s, at))});
                            })));
      }
      for (int64_t t = 0; t < Tq; t++) {  // l = l * corr + sum(p); m = m_new; acc *= corr
        Expr r = r0 + idx(t);
        tile.push_back(tree_reduce(rsum, t * L, L, [](const Expr& a, const Expr& c) { return a + c; }));
        Expr corr = tir::Call::make(tir::Intrinsic::Exp, {tir::Load::make(mx, r) - msafe(t)});
        Expr corr_t = tir::Var::make(F, "corr");
        std::vector<tir::Stmt> fin;
        fin.push_back(tir::Store::make(sum, r, tir::Load::make(sum, r) * corr_t + tir::Load::make(rsum, idx(t * L))));
        Expr e = index_var("e");
        // The first key block finds acc = 0: nothing to rescale.
        if (nkb > 1)
          fin.push_back(when(kblk > idx(0), loop(e, idx(Dv / EV), vec(EV, [&](const Expr& l) {
                                                    Expr at = r * idx(Dv) + e * idx(EV) + l;
                                                    return tir::Store::make(acc, at, tir::Load::make(acc, at) * corr_t);
                                                  }))));
        fin.push_back(tir::Store::make(mx, r, tir::Load::make(mnew, idx(t))));
        tile.push_back(tir::LetStmt::make(corr_t, corr, block(fin)));
      }
    }
    {  // 2c. acc += P V, in column chunks of EC vectors
      Expr ch = index_var("ch"), j = index_var("j");
      std::vector<tir::Stmt> load, fma, save;
      for (int64_t t = 0; t < Tq; t++)
        for (int64_t u = 0; u < EC; u++) {
          int64_t at = (t * EC + u) * EV;
          Expr col0 = ch * idx(EC * EV) + idx(u * EV);
          Expr arow = (r0 + idx(t)) * idx(Dv) + col0;
          load.push_back(vec(EV, [&](const Expr& l) { return tir::Store::make(pt, idx(at) + l, tir::Load::make(acc, arow + l)); }));
          Expr p = tir::Load::make(s, idx(t * Bk) + j);
          fma.push_back(vec(EV, [&](const Expr& l) {
            Expr vval = tir::Load::make(V, vb + (j0 + j) * idx(vv.s[2]) + (col0 + l) * idx(vv.s[3]));
            return tir::Store::make(pt, idx(at) + l, tir::Load::make(pt, idx(at) + l) + p * vval);
          }));
          save.push_back(vec(EV, [&](const Expr& l) { return tir::Store::make(acc, arow + l, tir::Load::make(pt, idx(at) + l)); }));
        }
      std::vector<tir::Stmt> chb = load;
      chb.push_back(loop(j, nk, block(fma)));
      for (auto& x : save) chb.push_back(x);
      tile.push_back(loop(ch, idx(Dv / (EC * EV)), block(chb)));
    }
    tir::Stmt tile_s = block(tile);
    per_block.push_back(loop(qt, ragged_rows ? (rows_here + idx(Tq - 1)) / idx(Tq) : idx(Bq / Tq), tile_s));
    body.push_back(loop(kblk, nkb_run, block(per_block)));
    {  // out = acc / l
      Expr r = index_var("r"), e = index_var("e");
      Expr inv = tir::Var::make(F, "inv");
      tir::Stmt w = loop(e, idx(Dv / EV), vec(EV, [&](const Expr& l) {
                           Expr col = e * idx(EV) + l;
                           return tir::Store::make(O, ob + (row0 + r) * idx(ov.s[2]) + col * idx(ov.s[3]),
                                                   tir::Load::make(acc, r * idx(Dv) + col) * inv);
                         }));
      w = tir::LetStmt::make(inv, f32(1) / tir::Load::make(sum, r), w);
      body.push_back(loop(r, rows_here, w));
    }
    tir::Stmt all = allocate({kt, s, acc, mx, sum, st, pt, rmax, rsum, mnew}, block(body));
    return tir::For::make(wg, Expr(0), idx(B * H) * nqb, tir::ForKind::WorkgroupX, all);
  }
}

// The GPU kernel's body, in the manner of flash decoding: a workgroup per
// (batch, head, query row), its T invocations splitting the keys (key j to
// invocation j mod T). Each runs the online softmax over its keys alone,
// keeping its maximum m, sum l and partial result (Dv floats) private; they
// meet in shared memory, and after a barrier each invocation rescales all
// T partials by exp(m_u - max) to write its share of the row's columns.
// T x (Dv + 2) floats of shared memory stay within 16 KB (Vulkan's least
// maxComputeSharedMemorySize).
tir::Stmt gpu_body(const graph::Node& n, const Attention& a, const Buffers& buf) {
  user_assert(tir::as_const_int(a.sq) && tir::as_const_int(a.sk))
      << n.describe() << ": attention with row or key counts known only at run time has no GPU kernel yet";
  int64_t T = 64;
  while (T > 1 && (T > a.Sk * 2 || T * (a.Dv + 2) * 4 > (16 << 10))) T /= 2;
  const tir::Type F = tir::Float(32);
  const Expr ninf = f32(-INFINITY);
  tir::Buffer sm_m = tir::make_buffer("att_sm_m", F, T, -1), sm_l = tir::make_buffer("att_sm_l", F, T, -1);
  tir::Buffer sm_acc = tir::make_buffer("att_sm_acc", F, T * a.Dv, -1);
  tir::Buffer acc = tir::make_buffer("att_acc", F, a.Dv, -1);  // this invocation's partial result
  Local m("att_m", F), l("att_l", F), dot("att_dot", F), red("att_red", F), sum("att_sum", F);
  Expr wg = index_var("wg"), t = index_var("t");
  Expr bh = wg / idx(a.Sq), row = wg % idx(a.Sq);
  Expr b = bh / idx(a.H), h = bh % idx(a.H);
  auto at = [&](const View& v, const Expr& r, const Expr& c) {
    return idx(v.offset) + b * idx(v.s[0]) + h * idx(v.s[1]) + r * idx(v.s[2]) + c * idx(v.s[3]);
  };
  auto msafe = [&](const Expr& x) { return select(tir::EQ::make(x, ninf), f32(0), x); };
  auto exp = [](const Expr& x) { return tir::Call::make(tir::Intrinsic::Exp, {x}); };
  Expr c = index_var("c"), d = index_var("d"), e = index_var("e"), u = index_var("u");
  Expr j = c * idx(T) + t;
  // 1. This invocation's keys.
  Expr score = dot.get() * f32(a.scale);
  if (a.has_mask) score = score + tir::Load::make(buf.M, at(a.mv, row, j));
  Expr sv = tir::Var::make(F, "s"), mnew = tir::Var::make(F, "mnew"), corr = tir::Var::make(F, "corr"), p = tir::Var::make(F, "p");
  tir::Stmt update = block({l.set(l.get() * corr + p),
                            loop(e, idx(a.Dv), tir::Store::make(acc, e, tir::Load::make(acc, e) * corr +
                                                                            p * tir::Load::make(buf.V, at(a.vv, j, e)))),
                            m.set(mnew)});
  update = tir::LetStmt::make(p, exp(sv - msafe(mnew)), update);
  update = tir::LetStmt::make(corr, exp(m.get() - msafe(mnew)), update);
  update = tir::LetStmt::make(mnew, max(m.get(), sv), update);
  tir::Stmt key = block({dot.set(f32(0)),
                         loop(d, idx(a.D), dot.set(dot.get() + tir::Load::make(buf.Q, at(a.qv, row, d)) *
                                                                  tir::Load::make(buf.K, at(a.kv, j, d)))),
                         tir::LetStmt::make(sv, score, update)});
  if (a.Sk % T) key = when(j < idx(a.Sk), key);
  // 2. The row's maximum; each invocation's partials scaled by exp(m - max)
  //    into shared memory; then the sums, each invocation its columns.
  Expr mx = tir::Var::make(F, "row_max"), w = tir::Var::make(F, "w");
  tir::Stmt share = block({tir::Store::make(sm_l, t, l.get() * w),
                           loop(e, idx(a.Dv), tir::Store::make(sm_acc, t * idx(a.Dv) + e, tir::Load::make(acc, e) * w))});
  share = tir::LetStmt::make(w, exp(m.get() - msafe(mx)), share);
  Expr e0 = index_var("e0"), lsum = tir::Var::make(F, "row_sum");
  Expr col = e0 * idx(T) + t;
  tir::Stmt write = block({sum.set(f32(0)), loop(u, idx(T), sum.set(sum.get() + tir::Load::make(sm_acc, u * idx(a.Dv) + col))),
                           tir::Store::make(buf.O, at(a.ov, row, col), sum.get() / lsum)});
  if (a.Dv % T) write = when(col < idx(a.Dv), write);
  std::vector<tir::Stmt> seq = {m.set(ninf), l.set(f32(0)), loop(e, idx(a.Dv), tir::Store::make(acc, e, f32(0))),
                                loop(c, idx(ceil_div(a.Sk, T)), key), tir::Store::make(sm_m, t, m.get()), tir::Barrier::make(),
                                red.set(ninf), loop(u, idx(T), red.set(max(red.get(), tir::Load::make(sm_m, u)))),
                                tir::LetStmt::make(mx, red.get(), share), tir::Barrier::make(),
                                sum.set(f32(0)), loop(u, idx(T), sum.set(sum.get() + tir::Load::make(sm_l, u))),
                                tir::LetStmt::make(lsum, sum.get(), loop(e0, idx(ceil_div(a.Dv, T)), write))};
  tir::Stmt local = tir::For::make(t, Expr(0), idx(T), tir::ForKind::LocalX,
                                   allocate({acc, m.b, l.b, dot.b, red.b, sum.b}, block(seq)));
  for (const tir::Buffer& sb : {sm_acc, sm_l, sm_m}) local = tir::Allocate::make(sb, local, tir::MemScope::Shared);
  return tir::For::make(wg, Expr(0), idx(a.B * a.H * a.Sq), tir::ForKind::WorkgroupX, local);
}

}  // namespace

void lower_attention(OpContext& ctx) {
  const Attention a = read_attention(ctx);
  tir::Stmt host;
  ctx.emit_tir("attention", [&](const OpContext::BindFn& bind) {
    Buffers buf;
    buf.Q = bind(a.q_in, Access::Read), buf.K = bind(a.k_in, Access::Read), buf.V = bind(a.v_in, Access::Read);
    if (a.has_mask) buf.M = bind(a.m_in, Access::Read);
    buf.O = bind(a.out, Access::Write);
    if (!ctx.gpu()) return cpu_body(ctx.node(), a, ctx.vector(), buf, ctx.tuning());
    // The GPU form shares workgroup memory between invocations: a device
    // that cannot run it falls back to the CPU form (KernelDef::host_body).
    VectorInfo host_vector;
    host_vector.lanes = 8;
    host_vector.registers = 16;
    host = cpu_body(ctx.node(), a, host_vector, buf, nullptr);
    return gpu_body(ctx.node(), a, buf);
  });
  if (host.defined()) ctx.kernels.back().host_body = host;
}

}  // namespace kiln::lower
