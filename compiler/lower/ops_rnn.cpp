// Recurrent layers: RNN, GRU and LSTM (forward, reverse, bidirectional;
// layout 0 and 1; clip; custom activations; LSTM peepholes and input_forget;
// GRU linear_before_reset).
//
// Each direction is one scan kernel (OpContext::emit_scan): iteration t
// processes time step tt = t (forward) or T-1-t (reverse) and writes the
// state slices. With W x_t + R h_{t-1} + Wb + Rb the pre-activation of gate
// g (ONNX gate order: LSTM i, o, f, c; GRU z, r, h):
//   RNN:  h = f(gate)
//   GRU:  z = f(gz), r = f(gr), h~ = g(Xw_h + (r * h_{t-1}) R_h + Rb_h + Wb_h)
//         (or Xw_h + r * (h_{t-1} R_h + Rb_h) + Wb_h with linear_before_reset),
//         h = (1 - z) h~ + z h_{t-1}
//   LSTM: i = f(gi + Pi c_{t-1}), f = f(gf + Pf c_{t-1}), c = f c_{t-1} + i g(gc),
//         o = f(go + Po c), h = o h(c)
#include <cmath>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "support/diagnostics.h"
#include "tir/simplify.h"

namespace kiln::lower {
namespace {

using tir::Intrinsic;

Expr sigmoid(const Expr& x) { return k(x, 1) / (k(x, 1) + call(Intrinsic::Exp, k(x, 0) - x)); }

struct Activation {
  std::string name;    // ONNX activation name
  double alpha, beta;  // its parameters (if any)
};

Expr activate(const Activation& a, const Expr& x) {
  const std::string& n = a.name;
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Tanh") return call(Intrinsic::Tanh, x);
  if (n == "Relu") return tir::max(x, k(x, 0));
  if (n == "LeakyRelu") return tir::select(x < k(x, 0), x * k(x, a.alpha), x);
  if (n == "ThresholdedRelu") return tir::select(x > k(x, a.alpha), x, k(x, 0));
  if (n == "HardSigmoid") return tir::clamp(x * k(x, a.alpha) + k(x, a.beta), k(x, 0), k(x, 1));
  if (n == "Affine") return x * k(x, a.alpha) + k(x, a.beta);
  if (n == "ScaledTanh") return k(x, a.alpha) * call(Intrinsic::Tanh, x * k(x, a.beta));
  if (n == "Elu") return tir::select(x < k(x, 0), k(x, a.alpha) * (call(Intrinsic::Exp, x) - k(x, 1)), x);
  if (n == "Softsign") return x / (k(x, 1) + call(Intrinsic::Abs, x));
  if (n == "Softplus") return call(Intrinsic::Log, k(x, 1) + call(Intrinsic::Exp, x));
  user_error << "activation '" << n << "' is not supported in recurrent layers";
}

}  // namespace

void lower_recurrent(OpContext& ctx) {
  const graph::Op cell = ctx.op();
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 || ctx.in_dtype(0) == graph::DType::F64)
      << n.describe() << ": X must be float32 or float64";
  te::Tensor x = ctx.in(0), w = ctx.in(1), r = ctx.in(2);
  te::Tensor bias = ctx.has_input(3) ? ctx.in(3) : te::Tensor();
  int64_t layout = n.attr_int("layout", 0);
  // The sequence length and batch may be run-time extents (the scans then
  // run for a trip count read at run time); the sizes of the weights may not.
  const te::Dims xd = x.dims();
  const Expr T = layout ? xd[1] : xd[0], B = layout ? xd[0] : xd[1];
  const int64_t I = static_extent(xd[2], "the input size (X's last dimension)");
  int64_t G = cell == graph::Op::LSTM ? 4 : cell == graph::Op::GRU ? 3 : 1;
  int64_t H = n.attr_int("hidden_size", w.shape()[1] / G);
  std::string direction = n.attr_string("direction", "forward");
  int64_t D = direction == "bidirectional" ? 2 : 1;
  user_assert(w.shape() == graph::Shape({D, G * H, I}) && r.shape() == graph::Shape({D, G * H, H}))
      << n.describe() << ": W or R has an unexpected shape";
  // sequence_lens (int32 [B]), unless every length is T: batch b runs its
  // first len_b steps (reverse: from len_b - 1 down), then holds its state;
  // Y is 0 past len_b. Lengths are clamped to [0, T].
  te::Tensor lens;
  if (ctx.has_input(4)) {
    const graph::Value& sl = ctx.value(ctx.input(4));
    const int64_t* steps = tir::as_const_int(T);
    bool full = sl.is_constant() && steps;
    for (int64_t i = 0; full && i < sl.elements(); i++) full = sl.const_int_at(i) == *steps;
    const te::Dims ld = ctx.in_dims(4);
    user_assert(ld.size() == 1 && !dims_differ(ld[0], B)) << n.describe() << ": sequence_lens must be [batch_size]";
    if (!full) lens = ctx.in(4);
  }
  auto len_of = [=](const Expr& b) {
    return lens.defined() ? tir::clamp(tir::cast(tir::Index(), lens({b})), Expr(0), T) : T;
  };
  te::Tensor init_h = ctx.has_input(5) ? ctx.in(5) : te::Tensor();
  te::Tensor init_c = cell == graph::Op::LSTM && ctx.has_input(6) ? ctx.in(6) : te::Tensor();
  te::Tensor peep = cell == graph::Op::LSTM && ctx.has_input(7) ? ctx.in(7) : te::Tensor();
  bool has_clip = n.has_attr("clip");
  double clip = n.attr_float("clip", 0);
  bool input_forget = n.attr_int("input_forget", 0) != 0;
  bool lbr = n.attr_int("linear_before_reset", 0) != 0;

  // Activations: f, g, h per direction (RNN: f only; GRU: f, g).
  int per_dir = cell == graph::Op::LSTM ? 3 : cell == graph::Op::GRU ? 2 : 1;
  std::vector<Activation> acts;
  {
    std::vector<std::string> names;
    auto it = n.attrs.find("activations");
    if (it != n.attrs.end()) names = it->second.strings;
    std::vector<double> alphas, betas;
    if (n.attrs.count("activation_alpha")) alphas = n.attrs.at("activation_alpha").floats;
    if (n.attrs.count("activation_beta")) betas = n.attrs.at("activation_beta").floats;
    std::vector<std::string> dflt = cell == graph::Op::RNN ? std::vector<std::string>{"Tanh"}
                                    : cell == graph::Op::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                        : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < D; d++)
      for (int i = 0; i < per_dir; i++) {
        size_t j = d * per_dir + i;
        std::string name = j < names.size() ? names[j] : dflt[i];
        // Default alpha/beta per the ONNX activation definitions.
        double a = name == "LeakyRelu" ? 0.01 : name == "HardSigmoid" ? 0.2 : 1.0, b = name == "HardSigmoid" ? 0.5 : 0.0;
        acts.push_back({name, j < alphas.size() ? alphas[j] : a, j < betas.size() ? betas[j] : b});
      }
  }
  tir::Type t = x.dtype();
  auto zero = tir::make_const(t, 0);

  std::vector<te::Tensor> hs(D), cs(D);
  for (int64_t d = 0; d < D; d++) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation& f = acts[d * per_dir];
    const Activation& g = acts[d * per_dir + (per_dir > 1 ? 1 : 0)];
    const Activation& hact = acts[d * per_dir + (per_dir > 2 ? 2 : 0)];
    te::Tensor Hs = ctx.scan_state("h" + std::to_string(d), {T, B, H}, t);
    te::Tensor Cs = cell == graph::Op::LSTM ? ctx.scan_state("c" + std::to_string(d), {T, B, H}, t) : te::Tensor();
    te::Tensor Rs = cell == graph::Op::GRU && !lbr ? ctx.scan_state("r" + std::to_string(d), {T, B, H}, t) : te::Tensor();
    hs[d] = Hs;
    cs[d] = Cs;
    // The time step that scan step `step` processes for batch b.
    auto tt_of = [=](const Expr& step, const Expr& b) {
      return reverse ? tir::max(len_of(b) - Expr(1) - step, Expr(0)) : step;
    };
    auto xat = [=](const Expr& tt, const Expr& b, const Expr& i) { return layout ? x({b, tt, i}) : x({tt, b, i}); };
    auto init = [=](const te::Tensor& s, const Expr& b, const Expr& j) {
      if (!s.defined()) return zero;
      return layout ? s({b, Expr(d), j}) : s({Expr(d), b, j});
    };
    auto prev = [=](const te::Tensor& state, const te::Tensor& start, const Expr& step, const Expr& b, const Expr& j) {
      return tir::select(tir::EQ::make(step, Expr(0)), init(start, b, j), state({tir::max(step - Expr(1), Expr(0)), b, j}));
    };
    auto bias_at = [=](int64_t offset, const Expr& row) { return bias.defined() ? bias({Expr(d), Expr(offset) + row}) : zero; };
    // x_t W_g^T (+ Wb_g) and h W... pieces of gate g at (b, h).
    auto xw = [=](int64_t gi, const Expr& step, const Expr& b, const Expr& h) {
      te::Tensor red = te::reduce("xw", {}, {I}, te::ReduceKind::Sum, t, [=](const Indices&, const Indices& ri) {
        return xat(tt_of(step, b), b, ri[0]) * w({Expr(d), Expr(gi * H) + h, ri[0]});
      });
      return red({}) + bias_at(gi * H, h);
    };
    auto hr = [=](int64_t gi, const std::function<Expr(const Expr&)>& hprev_j, const Expr& h) {
      te::Tensor red = te::reduce("hr", {}, {H}, te::ReduceKind::Sum, t, [=](const Indices&, const Indices& rj) {
        return hprev_j(rj[0]) * r({Expr(d), Expr(gi * H) + h, rj[0]});
      });
      return red({}) + bias_at((G + gi) * H, h);
    };
    auto clipped = [=](const Expr& v) { return has_clip ? tir::clamp(v, k(v, -clip), k(v, clip)) : v; };
    // A state's new value, or past the batch's length its previous one.
    auto held = [=](const Expr& v, const te::Tensor& state, const te::Tensor& start, const Expr& step, const Expr& b,
                    const Expr& h) {
      return lens.defined() ? tir::select(step < len_of(b), v, prev(state, start, step, b, h)) : v;
    };

    std::vector<OpContext::ScanState> states;
    if (cell == graph::Op::LSTM) {
      auto peep_at = [=](int64_t which, const Expr& h) { return peep.defined() ? peep({Expr(d), Expr(which * H) + h}) : zero; };
      states.push_back({Cs, [=](const Expr& step) {
        return te::compute("c", {B, H}, [=](const Indices& o) {
          Expr b = o[0], h = o[1];
          auto hp = [=](const Expr& j) { return prev(Hs, init_h, step, b, j); };
          Expr cprev = prev(Cs, init_c, step, b, h);
          Expr i = activate(f, clipped(xw(0, step, b, h) + hr(0, hp, h) + peep_at(0, h) * cprev));
          Expr fg = input_forget ? k(i, 1) - i : activate(f, clipped(xw(2, step, b, h) + hr(2, hp, h) + peep_at(2, h) * cprev));
          Expr c = activate(g, clipped(xw(3, step, b, h) + hr(3, hp, h)));
          return held(fg * cprev + i * c, Cs, init_c, step, b, h);
        });
      }});
      states.push_back({Hs, [=](const Expr& step) {
        return te::compute("h", {B, H}, [=](const Indices& o) {
          Expr b = o[0], h = o[1];
          auto hp = [=](const Expr& j) { return prev(Hs, init_h, step, b, j); };
          Expr c = Cs({step, b, h});
          Expr og = activate(f, clipped(xw(1, step, b, h) + hr(1, hp, h) + peep_at(1, h) * c));
          return held(og * activate(hact, c), Hs, init_h, step, b, h);
        });
      }});
    } else if (cell == graph::Op::GRU) {
      if (!lbr) {
        states.push_back({Rs, [=](const Expr& step) {
          return te::compute("r", {B, H}, [=](const Indices& o) {
            auto hp = [=](const Expr& j) { return prev(Hs, init_h, step, o[0], j); };
            return activate(f, clipped(xw(1, step, o[0], o[1]) + hr(1, hp, o[1])));
          });
        }});
      }
      states.push_back({Hs, [=](const Expr& step) {
        return te::compute("h", {B, H}, [=](const Indices& o) {
          Expr b = o[0], h = o[1];
          auto hp = [=](const Expr& j) { return prev(Hs, init_h, step, b, j); };
          Expr z = activate(f, clipped(xw(0, step, b, h) + hr(0, hp, h)));
          Expr cand;
          if (lbr) {
            Expr rg = activate(f, clipped(xw(1, step, b, h) + hr(1, hp, h)));
            cand = activate(g, clipped(xw(2, step, b, h) + rg * hr(2, hp, h)));
          } else {
            auto rh = [=](const Expr& j) { return Rs({step, b, j}) * prev(Hs, init_h, step, b, j); };
            cand = activate(g, clipped(xw(2, step, b, h) + hr(2, rh, h)));
          }
          return held((k(z, 1) - z) * cand + z * prev(Hs, init_h, step, b, h), Hs, init_h, step, b, h);
        });
      }});
    } else {
      states.push_back({Hs, [=](const Expr& step) {
        return te::compute("h", {B, H}, [=](const Indices& o) {
          auto hp = [=](const Expr& j) { return prev(Hs, init_h, step, o[0], j); };
          return held(activate(f, clipped(xw(0, step, o[0], o[1]) + hr(0, hp, o[1]))), Hs, init_h, step, o[0], o[1]);
        });
      }});
    }
    ctx.emit_scan(T, states);
  }

  // Outputs: Y [T, D, B, H] (layout 1: [B, T, D, H]), Y_h and Y_c [D, B, H] (layout 1: [B, D, H]).
  auto step_of = [=](int64_t d, const Expr& tt, const Expr& b) {
    bool reverse = direction == "reverse" || d == 1;
    return reverse ? tir::max(len_of(b) - Expr(1) - tt, Expr(0)) : tt;
  };
  auto pick = [=](const std::vector<te::Tensor>& st, const Expr& d, const Expr& step_for_d0, const Expr& step_for_d1,
                  const Expr& b, const Expr& h) {
    Expr v = st[0]({step_for_d0, b, h});
    if (D == 2) v = tir::select(tir::EQ::make(d, Expr(1)), st[1]({step_for_d1, b, h}), v);
    return v;
  };
  if (n.outputs.size() > 0 && n.outputs[0] >= 0) {
    ctx.set_output(0, te::compute("y", ctx.out_dims(0), [=](const Indices& o) {
      Expr tt = layout ? o[1] : o[0], d = layout ? o[2] : o[1], b = layout ? o[0] : o[2];
      Expr v = pick(hs, d, step_of(0, tt, b), step_of(1, tt, b), b, o[3]);
      return lens.defined() ? tir::select(tt < len_of(b), v, tir::make_const(v.type(), 0)) : v;
    }));
  }
  auto last = [=](const std::vector<te::Tensor>& st) {
    return te::compute("last", ctx.out_dims(1), [=](const Indices& o) {
      Expr d = layout ? o[1] : o[0], b = layout ? o[0] : o[1];
      const Expr final_step = tir::simplify(tir::max(T - Expr(1), Expr(0)));  // (a run-time T may be 0)
      return pick(st, d, final_step, final_step, b, o[2]);
    });
  };
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) ctx.set_output(1, last(hs));
  if (cell == graph::Op::LSTM && n.outputs.size() > 2 && n.outputs[2] >= 0) ctx.set_output(2, last(cs));
}

}  // namespace kiln::lower
