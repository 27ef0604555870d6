// Operators whose output size depends on the data (docs/dynamic-shapes.md,
// "Sizes a kernel computes"): NonZero, Compress, NonMaxSuppression, Unique,
// and kiln.Condition (a run-time If's taken branch, docs/dynamic-shapes.md).
//
// Each output size is a data symbol that import/infer_dims.cpp made, with a
// hidden int64 [1] output of the node as its source. These lowerings are
// hand-written TIR kernels of one invocation (OpContext::emit_tir): they
// select serially, write the selected elements, and store the count, which
// the runtime reads right after the kernel to size everything downstream.
// Output buffers are planned at the symbol's bound; a kernel never writes
// past the count it stores.
#include <functional>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"

namespace kiln::lower {

using namespace serial;  // NOLINT: the builders are this file's vocabulary

namespace {

// The body of a kernel whose output size only it knows (NonZero, Compress):
// it counts the positions i < extent where pred(i) holds, writes the count
// into `count` (the hidden output, the data symbol's source: the runtime
// reads it after this kernel and sizes everything downstream by it), then
// visits those positions again in order, write(i, k, c) storing the k-th of
// c. One invocation, serial.
tir::Stmt count_then_write(const tir::Buffer& count, const Expr& extent, const std::function<Expr(const Expr&)>& pred,
                           const std::function<tir::Stmt(const Expr& i, const Expr& k, const Expr& c)>& write) {
  Local n("selected", tir::Index());  // the running count
  tir::Stmt bump = n.set(n.get() + Expr(1));
  auto over_selected = [&](const char* name, const std::function<tir::Stmt(const Expr&)>& then) {
    Expr i = index_var(name);
    return block({n.set(Expr(0)), loop(i, extent, when(pred(i), then(i)))});
  };
  Expr c = index_var("selected_count");
  tir::Stmt second = over_selected("sel_w", [&](const Expr& i) { return block({write(i, n.get(), c), bump}); });
  tir::Stmt body = block({over_selected("sel_c", [&](const Expr&) { return bump; }),
                          tir::LetStmt::make(c, n.get(), block({tir::Store::make(count, Expr(0), c), second}))});
  return allocate({n.b}, body);
}

Expr product(const te::Dims& d, size_t begin, size_t end) {
  Expr p = Expr(1);
  for (size_t k = begin; k < end; k++) p = p * d[k];
  return p;
}

}  // namespace

// NonZero: the coordinates of each non-zero element, in row-major order,
// into rows of the count's length: output [rank, count].
void lower_nonzero(OpContext& ctx) {
  const te::Dims x = ctx.in_dims(0);
  user_assert(!x.empty()) << ctx.node().describe() << ": the input is a scalar; NonZero needs at least one dimension";
  const int in = ctx.input(0), out = ctx.output(0), count = ctx.output(1);
  const tir::Type type = graph::dtype_to_tir(ctx.in_dtype(0));
  ctx.emit_tir("nonzero", [&](const OpContext::BindFn& bind) {
    tir::Buffer xb = bind(in, Access::Read), ob = bind(out, Access::Write), cb = bind(count, Access::Write);
    auto pred = [&](const Expr& i) { return tir::NE::make(tir::Load::make(xb, i), tir::make_const(type, 0)); };
    return count_then_write(cb, product(x, 0, x.size()), pred, [&](const Expr& i, const Expr& k, const Expr& c) {
      std::vector<tir::Stmt> s;
      Expr rest = i;
      for (size_t d = x.size(); d-- > 0;) {
        s.push_back(tir::Store::make(ob, Expr((int64_t)d) * c + k, d ? rest % x[d] : rest));
        rest = rest / x[d];
      }
      return tir::Block::make(s);
    });
  });
}

// Compress: the slices along `axis` (of the flattened input without it)
// whose condition entry is non-zero; a condition shorter than the axis
// selects among its first entries only.
void lower_compress(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims x = ctx.in_dims(0), cond = ctx.in_dims(1);
  user_assert(cond.size() == 1) << n.describe() << ": the condition must be 1-D";
  const int in = ctx.input(0), flags = ctx.input(1), out = ctx.output(0), count = ctx.output(1);
  Expr outer = Expr(1), along = product(x, 0, x.size()), inner = Expr(1);
  if (n.has_attr("axis")) {
    size_t a = (size_t)normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)x.size());
    outer = product(x, 0, a), along = x[a], inner = product(x, a + 1, x.size());
  }
  const tir::Type type = graph::dtype_to_tir(ctx.in_dtype(1));
  ctx.emit_tir("compress", [&](const OpContext::BindFn& bind) {
    tir::Buffer xb = bind(in, Access::Read), fb = bind(flags, Access::Read), ob = bind(out, Access::Write),
                cb = bind(count, Access::Write);
    auto pred = [&](const Expr& j) { return tir::NE::make(tir::Load::make(fb, j), tir::make_const(type, 0)); };
    return count_then_write(cb, tir::min(cond[0], along), pred, [&](const Expr& j, const Expr& k, const Expr& c) {
      Expr o = tir::Var::make(tir::Index(), "cmp_o"), i = tir::Var::make(tir::Index(), "cmp_i");
      tir::Stmt copy = tir::Store::make(ob, (o * c + k) * inner + i, tir::Load::make(xb, (o * along + j) * inner + i));
      return tir::For::make(o, Expr(0), outer, tir::ForKind::Serial,
                            tir::For::make(i, Expr(0), inner, tir::ForKind::Serial, copy));
    });
  });
}

// NonMaxSuppression: per batch and class, greedy selection in descending
// score order (ties: the lower box index first), each pick suppressing the
// remaining boxes whose IoU with it exceeds iou_threshold; boxes at or below
// score_threshold never compete; at most max_output_boxes_per_class picks
// (absent: 0, none). Output [selected, 3] int64: (batch, class, box), in
// that order, as ONNX Runtime gives them. O(N^2) per class.
void lower_non_max_suppression(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 && ctx.in_dtype(1) == graph::DType::F32)
      << n.describe() << ": boxes and scores must be float32";
  const te::Dims bd = ctx.in_dims(0), sd = ctx.in_dims(1);
  user_assert(bd.size() == 3 && sd.size() == 3) << n.describe() << ": boxes [B, N, 4] and scores [B, C, N] needed";
  const bool center = n.attr_int("center_point_box", 0) != 0;
  ctx.emit_tir("nms", [&](const OpContext::BindFn& bind) {
    tir::Buffer boxes = bind(ctx.input(0), Access::Read), scores = bind(ctx.input(1), Access::Read);
    auto scalar = [&](size_t i, Expr dflt) {
      if (!ctx.has_input(i)) return dflt;
      return tir::Load::make(bind(ctx.input(i), Access::Read), Expr(0));
    };
    Expr max_out = ctx.has_input(2) ? scalar(2, Expr(0)) : Expr(0);
    Expr iou_thr = scalar(3, Expr(0.0f));
    const bool has_score_thr = ctx.has_input(4);
    Expr score_thr = scalar(4, Expr(0.0f));
    // Outputs: 0 the selection, 1 its count, 2 one flag per box (in the
    // arena: a stack buffer would not hold a detector's many boxes).
    tir::Buffer out = bind(ctx.output(0), Access::Write), count_out = bind(n.outputs.at(1), Access::Write);
    tir::Buffer alive = bind(n.outputs.at(2), Access::Write);
    Expr B = bd[0], N = bd[1], C = sd[1];
    Local count("nms_count", tir::Index()), picked("nms_picked", tir::Index()), best("nms_best", tir::Index()),
        best_score("nms_best_score", tir::Float(32));
    Expr b = index_var("nms_b"), c = index_var("nms_c"), it = index_var("nms_it"), i = index_var("nms_i"),
         j = index_var("nms_j"), k = index_var("nms_k");
    auto score = [&](const Expr& box) { return tir::Load::make(scores, (b * C + c) * N + box); };
    auto coord = [&](const Expr& box, int64_t q) { return tir::Load::make(boxes, (b * N + box) * Expr(4) + Expr(q)); };
    // [xmin, ymin, xmax, ymax] of a box.
    auto corners = [&](const Expr& box) -> std::vector<Expr> {
      if (center) {
        Expr half_w = coord(box, 2) * Expr(0.5f), half_h = coord(box, 3) * Expr(0.5f);
        return {coord(box, 0) - half_w, coord(box, 1) - half_h, coord(box, 0) + half_w, coord(box, 1) + half_h};
      }
      Expr y1 = coord(box, 0), x1 = coord(box, 1), y2 = coord(box, 2), x2 = coord(box, 3);
      return {tir::min(x1, x2), tir::min(y1, y2), tir::max(x1, x2), tir::max(y1, y2)};
    };
    auto suppresses = [&](const Expr& p, const Expr& q) {
      std::vector<Expr> a = corners(p), o = corners(q);
      Expr zero = Expr(0.0f);
      Expr iw = tir::max(tir::min(a[2], o[2]) - tir::max(a[0], o[0]), zero);
      Expr ih = tir::max(tir::min(a[3], o[3]) - tir::max(a[1], o[1]), zero);
      Expr inter = iw * ih, area_a = (a[2] - a[0]) * (a[3] - a[1]), area_o = (o[2] - o[0]) * (o[3] - o[1]);
      Expr uni = area_a + area_o - inter;
      Expr iou = tir::select(uni > zero, inter / tir::select(uni > zero, uni, Expr(1.0f)), zero);
      return inter > zero && area_a > zero && area_o > zero && uni > zero && iou > iou_thr;
    };
    tir::Stmt pick = block({
        best.set(Expr(-1)),
        loop(j, N, when(tir::NE::make(tir::Load::make(alive, j), Expr(0)) &&
                            (best.get() < Expr(0) || score(j) > best_score.get()),
                        block({best.set(j), best_score.set(score(j))}))),
        when(best.get() >= Expr(0),
             block({tir::Store::make(alive, best.get(), Expr(0)),
                    tir::Store::make(out, count.get() * Expr(3), b),
                    tir::Store::make(out, count.get() * Expr(3) + Expr(1), c),
                    tir::Store::make(out, count.get() * Expr(3) + Expr(2), best.get()),
                    count.set(count.get() + Expr(1)), picked.set(picked.get() + Expr(1)),
                    loop(k, N, when(tir::NE::make(tir::Load::make(alive, k), Expr(0)) && suppresses(best.get(), k),
                                    tir::Store::make(alive, k, Expr(0))))})),
    });
    // A NaN score never competes (as in ONNX Runtime).
    Expr competes = tir::select(has_score_thr ? score(i) > score_thr : tir::EQ::make(score(i), score(i)), Expr(1), Expr(0));
    tir::Stmt per_class = block({loop(i, N, tir::Store::make(alive, i, competes)), picked.set(Expr(0)),
                                 loop(it, N, when(picked.get() < as_index(max_out), pick))});
    tir::Stmt body = block({count.set(Expr(0)), loop(b, B, loop(c, C, per_class)),
                            tir::Store::make(count_out, Expr(0), count.get())});
    return allocate({count.b, picked.b, best.b, best_score.b}, body);
  });
}

// Unique: the distinct elements of the flattened input, or the distinct
// slices along `axis` (compared element by element in row-major order),
// sorted ascending (lexicographically for slices) or in order of first
// occurrence (sorted = 0); indices (first occurrences), inverse_indices and
// counts as ONNX defines them. O(D^2 * slice) for D elements (slices).
void lower_unique(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims x = ctx.in_dims(0);
  const bool sorted = n.attr_int("sorted", 1) != 0;
  Expr outer = Expr(1), D = Expr(1), inner = Expr(1);
  if (n.has_attr("axis")) {
    size_t a = (size_t)normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)x.size());
    for (size_t d = 0; d < a; d++) outer = outer * x[d];
    D = x[a];
    for (size_t d = a + 1; d < x.size(); d++) inner = inner * x[d];
  } else {
    for (auto& d : x) D = D * d;
  }
  const Expr S = outer * inner;  // elements of one slice
  // Outputs 0-3 ONNX's (-1: absent), 4 the count, 5 and 6 the scratch.
  auto out = [&](size_t i) { return n.outputs[i]; };
  ctx.emit_tir("unique", [&](const OpContext::BindFn& bind) {
    tir::Buffer xb = bind(ctx.input(0), Access::Read);
    tir::Buffer yb = bind(ctx.output(0), Access::Write);
    tir::Buffer ib = out(1) >= 0 ? bind(out(1), Access::Write) : nullptr;
    tir::Buffer vb = out(2) >= 0 ? bind(out(2), Access::Write) : nullptr;
    tir::Buffer cb = out(3) >= 0 ? bind(out(3), Access::Write) : nullptr;
    tir::Buffer count_out = bind(n.outputs.at(4), Access::Write);
    tir::Buffer first = bind(n.outputs.at(5), Access::Write);  // first occurrences, in order
    tir::Buffer rank = bind(n.outputs.at(6), Access::Write);   // output position of each
    Local u("uniq_count", tir::Index()), cmp("uniq_cmp", tir::Index()), acc("uniq_acc", tir::Index());
    auto elem = [&](const Expr& slice, const Expr& e) {
      return tir::Load::make(xb, ((e / inner) * D + slice) * inner + e % inner);
    };
    // cmp = -1, 0 or 1 as slice p is before, equal to or after slice q
    // (NaNs after every number and equal to each other, as numpy sorts them).
    int fresh = 0;
    auto compare = [&](const Expr& p, const Expr& q) {
      Expr e = tir::Var::make(tir::Index(), "uniq_e" + std::to_string(fresh++));
      Expr a = elem(p, e), o = elem(q, e);
      Expr a_nan = tir::NE::make(a, a), o_nan = tir::NE::make(o, o);
      Expr before = a < o || (o_nan && !a_nan), after = a > o || (a_nan && !o_nan);
      return block({cmp.set(Expr(0)),
                    loop(e, S, when(tir::EQ::make(cmp.get(), Expr(0)),
                                    block({when(before, cmp.set(Expr(-1))), when(after, cmp.set(Expr(1)))})))});
    };
    Expr i = index_var("uniq_i"), j = index_var("uniq_j"), k = index_var("uniq_k"), m = index_var("uniq_m"),
         e = index_var("uniq_y");
    Expr fk = tir::Load::make(first, k);
    // 1. First occurrences, in order.
    tir::Stmt firsts = block({
        u.set(Expr(0)),
        loop(i, D, block({acc.set(Expr(0)),
                          loop(j, i, when(tir::EQ::make(acc.get(), Expr(0)),
                                          block({compare(j, i), when(tir::EQ::make(cmp.get(), Expr(0)), acc.set(Expr(1)))}))),
                          when(tir::EQ::make(acc.get(), Expr(0)),
                               block({tir::Store::make(first, u.get(), i), u.set(u.get() + Expr(1))}))})),
    });
    // 2. Each one's position (ascending, or as found), its slice, index and count.
    std::vector<tir::Stmt> place;
    if (sorted) {
      place.push_back(acc.set(Expr(0)));
      place.push_back(loop(m, u.get(), block({compare(tir::Load::make(first, m), fk),
                                              when(tir::EQ::make(cmp.get(), Expr(-1)), acc.set(acc.get() + Expr(1)))})));
      place.push_back(tir::Store::make(rank, k, acc.get()));
    } else {
      place.push_back(tir::Store::make(rank, k, k));
    }
    Expr r = tir::Load::make(rank, k);
    place.push_back(loop(e, S, tir::Store::make(yb, ((e / inner) * u.get() + r) * inner + e % inner, elem(fk, e))));
    if (ib) place.push_back(tir::Store::make(ib, r, fk));
    if (cb) {
      place.push_back(acc.set(Expr(0)));
      place.push_back(loop(i, D, block({compare(i, fk), when(tir::EQ::make(cmp.get(), Expr(0)), acc.set(acc.get() + Expr(1)))})));
      place.push_back(tir::Store::make(cb, r, acc.get()));
    }
    std::vector<tir::Stmt> body = {firsts, loop(k, u.get(), block(place))};
    // 3. inverse_indices: the position of each element's (slice's) value.
    if (vb)
      body.push_back(loop(i, D, loop(k, u.get(), block({compare(fk, i),
                                                         when(tir::EQ::make(cmp.get(), Expr(0)), tir::Store::make(vb, i, r))}))));
    body.push_back(tir::Store::make(count_out, Expr(0), u.get()));
    return allocate({u.b, cmp.b, acc.b}, block(body));
  });
}

// kiln.Condition: the flag (a copy of the condition) and the count 1 or 0
// as the condition's first element is true, the data symbol that
// predicates the dispatches of a run-time If's branches.
void lower_condition(OpContext& ctx) {
  const int in = ctx.input(0), flag = ctx.output(0), count = ctx.node().outputs.back();
  const int64_t n = ctx.value(in).elements();
  const tir::Type type = graph::dtype_to_tir(ctx.in_dtype(0));
  user_assert(n == 1) << ctx.node().describe() << ": an If's condition must hold one value";
  ctx.emit_tir("condition", [&](const OpContext::BindFn& bind) {
    tir::Buffer cb = bind(in, Access::Read), fb = bind(flag, Access::Write), ob = bind(count, Access::Write);
    Expr c = tir::Load::make(cb, Expr(0));
    return block({tir::Store::make(fb, Expr(0), c),
                  tir::Store::make(ob, Expr(0), tir::select(tir::NE::make(c, tir::make_const(type, 0)), Expr(1), Expr(0)))});
  });
}

// kiln.InputValue: the copy of an --input-value input and each element as
// its data symbol's count (the runtime checks each against [lo, hi]).
void lower_input_value(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const int in = ctx.input(0), copy = ctx.output(0);
  const int64_t count = ctx.value(in).elements();
  internal_assert((int64_t)n.outputs.size() == 1 + count) << n.describe() << ": one count per element";
  ctx.emit_tir("input_value", [&](const OpContext::BindFn& bind) {
    tir::Buffer xb = bind(in, Access::Read), cb = bind(copy, Access::Write);
    std::vector<tir::Stmt> body;
    for (int64_t k = 0; k < count; k++) {
      Expr v = tir::Load::make(xb, Expr(k));
      body.push_back(tir::Store::make(cb, Expr(k), v));
      body.push_back(tir::Store::make(bind(n.outputs[(size_t)(1 + k)], Access::Write), Expr(0), tir::cast(tir::Index(), v)));
    }
    return block(body);
  });
}

}  // namespace kiln::lower
