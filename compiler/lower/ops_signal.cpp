// Signal processing (opset 17): the window functions HannWindow,
// HammingWindow and BlackmanWindow; DFT, STFT and MelWeightMatrix.
//
// A window of `size` samples is a sum of cosines of 2 pi n / N, with N =
// size (periodic = 1, the default: one period of a longer window, for
// spectral analysis) or size - 1 (symmetric, for filter design):
//   Hann      0.5 - 0.5 cos(x)
//   Hamming   25/46 - 21/46 cos(x)
//   Blackman  0.42 - 0.5 cos(x) + 0.08 cos(2x)
// computed in float32 and cast to output_datatype. The size is a
// compile-time constant, or a data symbol (kilnc --input-value); so is
// STFT's frame step and frame length, while DFT lengths are compile-time
// constants (a DFT's axis may be read at run time).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include "lower/op_lowering.h"
#include "tir/simplify.h"
#include "support/diagnostics.h"

namespace kiln::lower {

void lower_window(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims y = ctx.out_dims(0);
  user_assert(y.size() == 1) << n.describe() << ": the window must be 1-D";
  const bool periodic = n.attr_int("periodic", 1) != 0;
  const tir::Type f32 = tir::Float(32);
  // The output's length is the size input's value: a constant here, or a
  // data symbol (kilnc --input-value) that dimension inference made the
  // output's length (a declared output shape alone would let another size
  // run unnoticed).
  Expr step;  // 2 pi / the period (N periodic, N - 1 symmetric)
  if (!ctx.value(ctx.input(0)).sym.empty() || !ctx.value(ctx.input(0)).is_constant()) {
    user_assert(!tir::as_const_int(y[0])) << n.describe() << ": the window size must be a compile-time constant "
                                          << "(an initializer, --freeze-input, or a range with --input-value)";
    step = tir::make_const(f32, 2.0 * M_PI) / tir::cast(f32, periodic ? y[0] : y[0] - Expr(1));
  } else {
    const int64_t size = ctx.out_shape(0)[0];
    const std::vector<int64_t> sv = const_ints(ctx, 0, "the window size");
    user_assert(sv.size() == 1 && sv[0] == size) << n.describe() << ": the window size differs from the output's length " << size;
    step = tir::make_const(f32, 2.0 * M_PI / (double)(periodic ? size : size - 1));
  }
  const tir::Type out = graph::dtype_to_tir(ctx.value(ctx.output(0)).dtype);
  user_assert(out.is_float() || out.is_int() || out.is_uint())
      << n.describe() << ": output_datatype must be a number type";
  // cos(k x) with x = 2 pi n / N, and the window's coefficients a_k.
  std::vector<double> a;
  switch (ctx.op()) {
    case graph::Op::HannWindow: a = {0.5, -0.5}; break;
    case graph::Op::HammingWindow: a = {25.0 / 46.0, -21.0 / 46.0}; break;
    case graph::Op::BlackmanWindow: a = {0.42, -0.5, 0.08}; break;
    default: internal_error << n.describe() << ": not a window function";
  }
  ctx.set_output(0, te::compute("window", y, [=](const Indices& i) {
    Expr x = tir::cast(f32, i[0]) * step;
    Expr w = tir::make_const(f32, a[0]);
    for (size_t k = 1; k < a.size(); k++)
      w = w + tir::make_const(f32, a[k]) * tir::Call::make(tir::Intrinsic::Cos, {x * tir::make_const(f32, (double)k)});
    return tir::cast(out, w);
  }));
}

namespace {

// Integer input `i` as a compile-time constant (a shape decided by its value).
int64_t const_scalar(OpContext& ctx, size_t i, const char* what) {
  const std::vector<int64_t> v = const_ints(ctx, i, what);
  user_assert(v.size() == 1) << ctx.node().describe() << ": " << what << " must be a scalar";
  return v[0];
}

// The twiddles cos and sin of 2 pi m / N as a float64 constant: [N, 2] for
// a constant N, indexed by m; for N a run-time size (a data symbol of at
// most kMaxRunTimeDftLength), [hi + 1, hi, 2] holding every N's, indexed by
// (N, m). `at(N, m)` reads component c of one. `most` bounds a run-time N
// that is no expression over symbols (a DFT's axis read by its kernel).
constexpr int64_t kMaxRunTimeDftLength = 512;

std::function<Expr(const Expr& m, int c)> twiddles(OpContext& ctx, const Expr& N, int64_t most) {
  const int64_t* fixed = tir::as_const_int(N);
  const int64_t hi = fixed ? *fixed : most > 0 ? most : tir::bounds_of(N).max;
  user_assert(fixed || hi <= kMaxRunTimeDftLength)
      << ctx.node().describe() << ": a transform length known only at run time may be at most " << kMaxRunTimeDftLength
      << " (its --input-value range reaches " << hi << ")";
  const int64_t lengths = fixed ? 1 : hi + 1;
  std::vector<uint8_t> bytes((size_t)(lengths * hi) * 16, 0);
  for (int64_t l = 0; l < lengths; l++) {
    const int64_t n = fixed ? *fixed : l;
    for (int64_t m = 0; n > 0 && m < n; m++) {
      double cs[2] = {std::cos(2.0 * M_PI * (double)m / (double)n), std::sin(2.0 * M_PI * (double)m / (double)n)};
      memcpy(bytes.data() + (l * hi + m) * 16, cs, 16);
    }
  }
  graph::Shape shape = fixed ? graph::Shape{hi, 2} : graph::Shape{lengths, hi, 2};
  te::Tensor tw = ctx.tensor_of(ctx.graph.add_constant(ctx.graph.unique_name(ctx.node().name + ".twiddles"),
                                                       graph::DType::F64, shape, std::move(bytes)));
  if (fixed) return [=](const Expr& m, int c) { return tw({m, Expr(c)}); };
  return [=](const Expr& m, int c) { return tw({N, m, Expr(c)}); };
}

// Sum over n in [0, count) of the complex x(n) times e^(sign 2 pi i k n / N),
// component c (0 real, 1 imaginary) of the result, times `scale`. The
// twiddles (above) are indexed by m = k n mod N (exact integers), and the
// sum is float64: a bin that cancels to 0 stays within float32 rounding of 0
// (in float32 the error grows with the signal's magnitude: 3e-5 on a
// 10-point transform of 0..99). N and count may be run-time sizes (most_N:
// twiddles()' `most`).
te::Tensor dft_sum(OpContext& ctx, const std::string& name, const te::Dims& out, const Expr& count, const Expr& N,
                   double sign, double scale, const std::function<Expr(const Indices& o)>& bin,
                   const std::function<Expr(const Indices& o)>& component,
                   const std::function<std::pair<Expr, Expr>(const Indices& o, const Expr& n)>& x,
                   int64_t most_N = -1) {
  auto tw = twiddles(ctx, N, most_N);
  const tir::Type f64 = tir::Float(64), f32 = tir::Float(32);
  te::Tensor sum = te::reduce(name + "_sum", out, {count}, te::ReduceKind::Sum, f64, [=](const Indices& o, const Indices& r) {
    Expr m = (bin(o) * r[0]) % N;
    Expr c = tw(m, 0), s = tw(m, 1);
    auto [re32, im32] = x(o, r[0]);
    Expr re = tir::cast(f64, re32), im = tir::cast(f64, im32), sg = tir::make_const(f64, sign);
    // (re + i im)(c + i sign s) = (re c - sign im s) + i (im c + sign re s)
    return select(tir::EQ::make(component(o), Expr(0)), re * c - sg * im * s, im * c + sg * re * s);
  });
  return te::compute(name, out, [=](const Indices& o) { return tir::cast(f32, sum(o) * tir::make_const(f64, scale)); });
}

}  // namespace

// DFT (opset 17): along `axis` of x [..., N, ..., 1 or 2] (real, or complex
// as its last axis), to [..., L or L/2 + 1 (onesided), ..., 2], L =
// dft_length (default N; shorter truncates, longer pads with zeros); the
// inverse divides by L. The inverse onesided transform takes half a
// spectrum [..., N, ..., 2] to a real signal [..., L, ..., 1] (L default
// 2 (N - 1)), the rest of the spectrum the conjugates of the half (numpy's
// irfft). A direct sum (O(L N) per line) in float64. The axis (opset 20:
// an input) may be known only at run time: a value symbol where the output
// shape depends on it (import/infer_dims.cpp), else read by the kernel;
// then every index picks the axis by value, and the sum runs over the
// longest candidate, terms past the axis' own length counting 0.
void lower_dft(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == graph::DType::F32 && ctx.value(ctx.output(0)).dtype == graph::DType::F32)
      << n.describe() << ": kilnc supports DFT on float32 only so far";
  const graph::Shape xs = ctx.in_shape(0);
  // (The output's dimensions follow an axis given by a value symbol.)
  const te::Dims yd = ctx.out_dims(0);
  const graph::Shape ys = yd.is_static() ? yd.static_shape() : graph::Shape{};
  const int64_t rank = (int64_t)xs.size();
  user_assert(rank >= 2 && (xs.back() == 1 || xs.back() == 2))
      << n.describe() << ": expects a signal [..., N, ..., 1 or 2] and an axis before the last";
  const bool inverse = n.attr_int("inverse", 0) != 0, onesided = n.attr_int("onesided", 0) != 0;
  const bool irfft = inverse && onesided;
  // The axis: a constant (the attribute, or input 2), a value symbol, or read here.
  Expr axis_e;
  int64_t axis = -1;  // when a compile-time constant
  if (ctx.has_input(2) && ctx.graph.opset >= 20) {
    const graph::Value& av = ctx.value(ctx.input(2));
    user_assert(av.elements() == 1) << n.describe() << ": the axis must hold one value";
    if (!av.sym.empty() || av.is_constant()) {
      axis_e = int_exprs(ctx, 2, "the axis")[0];
    } else {  // negative counts from the end; out of range clamps (no read leaves the tensor)
      te::Tensor at = ctx.in(2);
      Expr a = tir::Cast::make(tir::Index(), at(Indices(at.ndim(), Expr(0))));
      axis_e = tir::clamp(tir::select(a < Expr(0), a + Expr(rank), a), Expr(0), Expr(rank - 2));
    }
  } else {
    axis_e = Expr(n.attr_int("axis", 1));
  }
  if (const int64_t* c = tir::as_const_int(tir::simplify(axis_e))) {
    axis = *c < 0 ? *c + rank : *c;
    user_assert(axis >= 0 && axis < rank - 1) << n.describe() << ": the axis must be before the last dimension";
    axis_e = Expr(axis);
  }
  const std::optional<int64_t> given =
      ctx.has_input(1) ? std::optional<int64_t>(const_scalar(ctx, 1, "dft_length")) : std::nullopt;
  // Per candidate axis d: its length N, the transform's L, the terms summed.
  std::vector<int64_t> Ns, Ls, counts;
  for (int64_t d = 0; d + 1 < rank; d++) {
    const int64_t N = xs[(size_t)d], L = given ? *given : irfft ? 2 * (N - 1) : N;
    user_assert(axis != d || L >= 1) << n.describe() << ": dft_length must be positive";
    graph::Shape want = xs;
    want[(size_t)d] = onesided && !inverse ? L / 2 + 1 : L;
    want.back() = irfft ? 1 : 2;
    user_assert(axis != d || ys == want) << n.describe() << ": unexpected output shape";
    Ns.push_back(N), Ls.push_back(std::max<int64_t>(L, 1)), counts.push_back(irfft ? std::max<int64_t>(L, 1) : std::min(N, L));
  }
  // A per-axis value: the constant axis' own, or chosen by the axis' value.
  auto pick = [=](const std::vector<int64_t>& v) {
    if (axis >= 0) return Expr(v[(size_t)axis]);
    Expr r = Expr(v.back());
    for (int64_t d = rank - 3; d >= 0; d--) r = tir::select(tir::EQ::make(axis_e, Expr(d)), Expr(v[(size_t)d]), r);
    return r;
  };
  auto along = [=](const Indices& o) {
    if (axis >= 0) return o[(size_t)axis];
    Expr r = o[(size_t)(rank - 2)];
    for (int64_t d = rank - 3; d >= 0; d--) r = tir::select(tir::EQ::make(axis_e, Expr(d)), o[(size_t)d], r);
    return r;
  };
  auto moved = [=](const Indices& o, const Expr& t) {  // o with the axis' index t
    Indices i(o.begin(), o.end());
    if (axis >= 0) i[(size_t)axis] = t;
    for (int64_t d = 0; axis < 0 && d + 1 < rank; d++)
      i[(size_t)d] = tir::select(tir::EQ::make(axis_e, Expr(d)), tir::min(t, Expr(xs[(size_t)d] - 1)), o[(size_t)d]);
    return i;
  };
  const Expr N = pick(Ns), L = pick(Ls), count = pick(counts);
  const int64_t longest = axis >= 0 ? counts[(size_t)axis] : *std::max_element(counts.begin(), counts.end());
  te::Tensor x = ctx.in(0);
  const bool complex = xs.back() == 2;
  const tir::Type f32 = tir::Float(32);
  const Expr zero = tir::make_const(f32, 0);
  auto read = [=](const Indices& o, const Expr& t) {  // x at the axis' index t
    Indices i = moved(o, t);
    i.back() = Expr(0);
    Expr re = x(i);
    i.back() = Expr(1);
    return std::make_pair(re, complex ? x(i) : zero);
  };
  std::function<std::pair<Expr, Expr>(const Indices&, const Expr&)> term = read;
  if (irfft)  // term t of the whole spectrum: the half's, or the conjugate of its mirror image
    term = [=](const Indices& o, const Expr& t) {
      Expr mirrored = t > L / Expr(2), k = tir::select(mirrored, L - t, t);
      auto [re, im] = read(o, tir::clamp(k, Expr(0), N - Expr(1)));
      Expr inside = k < N && t < count;
      return std::make_pair(tir::select(inside, re, zero), tir::select(inside, tir::select(mirrored, zero - im, im), zero));
    };
  else if (axis < 0)
    term = [=](const Indices& o, const Expr& t) {
      auto [re, im] = read(o, t);
      Expr inside = t < count;
      return std::make_pair(tir::select(inside, re, zero), tir::select(inside, im, zero));
    };
  if (axis >= 0 && !irfft) {
    ctx.set_output(0, dft_sum(ctx, "dft", yd, Expr(counts[(size_t)axis]), L, inverse ? 1.0 : -1.0,
                              inverse ? 1.0 / (double)Ls[(size_t)axis] : 1.0, along,
                              [=](const Indices& o) { return o.back(); }, term));
    return;
  }
  // The inverse divides by L, a per-axis value: scaled after the sum.
  te::Tensor sum = dft_sum(ctx, "dft", yd, Expr(longest), L, inverse ? 1.0 : -1.0, 1.0, along,
                           [=](const Indices& o) { return irfft ? Expr(0) : o.back(); }, term,
                           *std::max_element(Ls.begin(), Ls.end()));
  if (!inverse) {
    ctx.set_output(0, sum);
    return;
  }
  ctx.set_output(0, te::compute("dft_scaled", yd, [=](const Indices& o) { return sum(o) / tir::cast(f32, L); }));
}

// STFT (opset 17): signal [B, T, 1 or 2], frame_step, optional window [W],
// optional frame_length (else W) -> [B, frames, bins, 2] with frames =
// (T - frame_length) / frame_step + 1 and bins = frame_length / 2 + 1
// (onesided, the default for real signals) or frame_length: the DFT of each
// frame times the window. frame_step and frame_length are compile-time
// constants or data symbols (kilnc --input-value: they decide the shape);
// a run-time frame length reads its twiddles from a table of every length
// in its range (at most kMaxRunTimeDftLength).
void lower_stft(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Shape xs = ctx.in_shape(0);
  user_assert(ctx.in_dtype(0) == graph::DType::F32 && (!ctx.has_input(2) || ctx.in_dtype(2) == graph::DType::F32))
      << n.describe() << ": kilnc supports STFT on float32 signals and windows only so far";
  user_assert(xs.size() == 3 && (xs[2] == 1 || xs[2] == 2)) << n.describe() << ": expects a signal [batch, length, 1 or 2]";
  // frame_step: a constant, or a data symbol (kilnc --input-value; the frame
  // count is then one too, import/infer_dims.cpp's Stft rule).
  const std::vector<Expr> steps = int_exprs(ctx, 1, "frame_step");
  user_assert(steps.size() == 1) << n.describe() << ": frame_step must be a scalar";
  const Expr step_e = steps[0];
  const int64_t* step_c = tir::as_const_int(step_e);  // null: a symbol
  const bool has_window = ctx.has_input(2);
  // frame_length: a constant, or a data symbol (kilnc --input-value) when no window gives it.
  Expr length_e;
  if (ctx.has_input(3)) {
    const std::vector<Expr> lengths = int_exprs(ctx, 3, "frame_length");
    user_assert(lengths.size() == 1) << n.describe() << ": frame_length must be a scalar";
    length_e = lengths[0];
  }
  if (has_window) {
    const graph::Shape ws = ctx.in_shape(2);
    const int64_t* given = length_e.defined() ? tir::as_const_int(length_e) : nullptr;
    user_assert(ws.size() == 1 && (!length_e.defined() || (given && *given == ws[0])))
        << n.describe() << ": the window must be 1-D, as long as frame_length";
    length_e = Expr(ws[0]);
  }
  user_assert(length_e.defined()) << n.describe() << ": needs frame_length or a window";
  const int64_t* length_c = tir::as_const_int(length_e);  // null: a symbol (infer_dims checked its range)
  if (!length_c) {  // as infer_dims bounds it
    length_e = tir::simplify(tir::max(length_e, Expr(1)));
    if (tir::bounds_of(length_e).max > xs[1]) length_e = tir::simplify(tir::min(length_e, Expr(xs[1])));
  }
  user_assert((!length_c || (*length_c >= 1 && *length_c <= xs[1])) && (!step_c || *step_c >= 1))
      << n.describe() << ": needs frame_length (or a window) of 1 to " << xs[1] << " samples and a positive frame_step";
  const bool onesided = n.attr_int("onesided", 1) != 0;
  const te::Dims ys = ctx.out_dims(0);
  if (step_c && length_c) {
    const int64_t length = *length_c, bins = onesided ? length / 2 + 1 : length;
    user_assert(ctx.out_shape(0) == graph::Shape({xs[0], (xs[1] - length) / *step_c + 1, bins, 2}))
        << n.describe() << ": unexpected output shape";
  }
  te::Tensor x = ctx.in(0), w = has_window ? ctx.in(2) : te::Tensor();
  const bool complex = xs[2] == 2;
  ctx.set_output(0, dft_sum(ctx, "stft", ys, length_e, length_e, -1.0, 1.0, [](const Indices& o) { return o[2]; },
                            [](const Indices& o) { return o[3]; },
                            [=](const Indices& o, const Expr& t) {
                              Expr at = o[1] * step_e + t;
                              Expr re = x({o[0], at, Expr(0)});
                              Expr im = complex ? x({o[0], at, Expr(1)}) : tir::make_const(tir::Float(32), 0);
                              if (has_window) re = re * w({t}), im = im * w({t});
                              return std::make_pair(re, im);
                            }));
}

// MelWeightMatrix (opset 17): num_mel_bins M, dft_length L, sample_rate,
// lower and upper edge (Hz) -> [L / 2 + 1, M] triangular filters, as ONNX's
// reference computes them: M + 2 points evenly spaced in mel between the
// edges (mel = 2595 log10(1 + hz / 700)), each back in Hz and then in
// spectrogram bins, f = floor((L + 1) hz / sample_rate); filter i rises from
// f(i) to 1 at f(i + 1) and falls to f(i + 2). M and L are constants or data
// symbols (kilnc --input-value); the rest are read at run time. Computed in
// float32 (kernels' transcendentals are float32) and cast to output_datatype.
void lower_mel_weight_matrix(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims y = ctx.out_dims(0);
  user_assert(y.size() == 2) << n.describe() << ": expects a 2-D output";
  const tir::Type out = graph::dtype_to_tir(ctx.value(ctx.output(0)).dtype);
  user_assert(out.is_float() || out.is_int() || out.is_uint()) << n.describe() << ": output_datatype must be a number type";
  const std::vector<Expr> lengths = int_exprs(ctx, 1, "dft_length");
  user_assert(lengths.size() == 1) << n.describe() << ": dft_length must be a scalar";
  const tir::Type f32 = tir::Float(32);
  auto f = [=](double v) { return tir::make_const(f32, v); };
  const Expr bins = tir::cast(f32, y[1]), length = tir::cast(f32, lengths[0]);
  const Expr rate = scalar_input(ctx, 2, f32), lower = scalar_input(ctx, 3, f32), upper = scalar_input(ctx, 4, f32);
  auto mel = [=](const Expr& hz) {  // 2595 log10(1 + hz / 700)
    return f(2595.0 / std::log(10.0)) * tir::Call::make(tir::Intrinsic::Log, {f(1.0) + hz / f(700.0)});
  };
  const Expr low = mel(lower), step = (mel(upper) - low) / (bins + f(2.0));
  auto bin = [=](const Expr& t) {  // point t in spectrogram bins (a whole number, as float32)
    Expr hz = f(700.0) * (tir::Call::make(tir::Intrinsic::Exp, {(tir::cast(f32, t) * step + low) *
                                                                f(std::log(10.0) / 2595.0)}) - f(1.0));
    return tir::Call::make(tir::Intrinsic::Floor, {(length + f(1.0)) * hz / rate});
  };
  ctx.set_output(0, te::compute("mel_weights", y, [=](const Indices& i) {
    Expr j = tir::cast(f32, i[0]);
    Expr left = bin(i[1]), center = bin(i[1] + Expr(1)), right = bin(i[1] + Expr(2));
    Expr rising = (j - left) / tir::max(center - left, f(1.0));
    Expr falling = (right - j) / tir::max(right - center, f(1.0));
    Expr w = select(tir::EQ::make(j, center), f(1.0),
                    select(j >= left && j < center, rising, select(j > center && j < right, falling, f(0.0))));
    return tir::cast(out, w);
  }));
}

}  // namespace kiln::lower
