#include "import/infer_dims.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "support/diagnostics.h"
#include "tir/inplace.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln {
namespace {

using graph::DimExprs;
using graph::Node;
using graph::Op;
using graph::OpDims;
using tir::Expr;

constexpr size_t kMaxSymElements = 64;  // symbolic values are shapes: a handful of elements
constexpr size_t kMaxSymbols = 64;      // shape symbols a bundle may hold (KILN_BUNDLE_MAX_SYMBOLS)
constexpr size_t kMaxValueSymbols = 16;  // elements of a tensor read as sizes at run time (kiln.InputValue)

// Thrown by a rule that needs the elements of `value`, a small integer
// tensor known only at run time (infer_run_time_dims copies it through a
// kiln.InputValue node and starts again).
struct NeedsValueSymbols {
  int value;            // the tensor whose elements the rule wanted
  bool readable;        // a small integer tensor: its elements can be data symbols
  std::string message;  // what to say when neither they nor the output's stated shape can help
};

Expr simp(const Expr& e) { return tir::simplify(e); }

std::optional<int64_t> const_of(const Expr& e) {
  Expr s = simp(e);
  if (auto c = tir::as_const_int(s)) return *c;
  return std::nullopt;
}

Expr as_index(const Expr& cond) { return tir::select(cond, Expr(1), Expr(0)); }

class DimInference {
 public:
  DimInference(graph::Graph& g, const std::set<int>& unknown_rank) : g_(g), unknown_rank_(unknown_rank) {}

  void run() {
    for (size_t v = 0; v < g_.values.size(); v++) seed_sym((int)v);
    for (size_t ni = 0; ni < g_.nodes.size(); ni++) infer_node((int)ni);
    drop_shape_computations();
  }

 private:
  graph::Graph& g_;
  const std::set<int>& unknown_rank_;  // outputs whose rank ONNX did not know
  const Node* node_ = nullptr;
  std::map<int, std::vector<Expr>> sym_;  // value -> elements, row-major (small integer tensors)
  // Float value -> elements (its own and its operands') whose range reaches
  // past kExactFloat: exact only if the run's values stay within it.
  std::map<int, std::vector<Expr>> float_checks_;

  // ------------------------------------------------------------ helpers --

  [[noreturn]] void fail(const std::string& why) {
    bool input_ranges = false;
    for (auto& s : g_.symbols) input_ranges |= s.source_value < 0;
    if (!input_ranges)  // only sizes kernels compute (NonZero, a run-time TopK k, ...)
      user_error << node_->describe() << ": " << why
                 << "; kilnc cannot follow sizes computed at run time here yet (docs/dynamic-shapes.md): make the "
                    "inputs that decide them constants (--freeze-input NAME=FILE.pb), or give an integer model input's "
                    "values a range (--input-value NAME=LO..HI)";
    user_error << node_->describe() << ": " << why
               << "; kilnc cannot follow this model's run-time dimensions here: give the model's inputs static shapes "
                  "(--input-shape NAME=D0,D1,... with no LO..HI range)";
  }

  const graph::Value& val(int v) const { return g_.values[(size_t)v]; }
  bool has(size_t i) const { return i < node_->inputs.size() && node_->inputs[i] >= 0; }
  int in(size_t i) {
    if (!has(i)) fail("required input " + std::to_string(i) + " is missing");
    return node_->inputs[i];
  }
  DimExprs dims(int v) const { return val(v).dim_exprs(); }
  DimExprs in_dims(size_t i) { return dims(in(i)); }
  size_t rank(size_t i) { return in_dims(i).size(); }

  // Float values are followed symbolically only while they hold integers
  // that float32 represents exactly (a window's length cast to float for a
  // Range, in ONNX's function bodies).
  static constexpr int64_t kExactFloat = int64_t(1) << 24;
  static bool is_float(graph::DType t) { return t == graph::DType::F32 || t == graph::DType::F64; }
  static bool exact_in_float(const Expr& e) {
    tir::Interval r = tir::bounds_of(e);
    return r.min >= -kExactFloat && r.max <= kExactFloat;
  }

  // A constant integer tensor (or float one holding small integers), or one
  // whose elements are known symbolically.
  void seed_sym(int v) {
    const graph::Value& x = g_.values[(size_t)v];
    if (!x.sym.empty()) {
      sym_[v] = x.sym;
      return;
    }
    bool integer = x.dtype == graph::DType::I64 || x.dtype == graph::DType::I32 || x.dtype == graph::DType::I16 ||
                   x.dtype == graph::DType::I8 || x.dtype == graph::DType::U8 || x.dtype == graph::DType::Bool;
    if (!x.is_constant() || !(integer || is_float(x.dtype)) || x.shape.size() > 1 ||
        x.elements() > (int64_t)kMaxSymElements)
      return;
    std::vector<Expr> e;
    for (int64_t k = 0; k < x.elements(); k++) {
      if (integer) {
        e.push_back(Expr(x.const_int_at(k)));
        continue;
      }
      double f = x.const_at(k);
      if (!(std::fabs(f) <= (double)kExactFloat) || f != std::floor(f)) return;
      e.push_back(Expr((int64_t)f));
    }
    sym_[v] = e;
  }
  const std::vector<Expr>* sym(size_t i) {
    if (!has(i)) return nullptr;
    auto it = sym_.find(node_->inputs[i]);
    return it == sym_.end() ? nullptr : &it->second;
  }
  // The float elements of input i's value (and of the floats it was
  // computed from) that need not be exact in float: a size read through
  // them must be checked at run time (need_sym).
  std::vector<Expr> float_checks_of(size_t i) const {
    auto it = has(i) ? float_checks_.find(node_->inputs[i]) : float_checks_.end();
    return it == float_checks_.end() ? std::vector<Expr>{} : it->second;
  }
  // Input i's elements, which must be known (a constant or a computed shape).
  // A small integer tensor computed from data (a model input, a kernel's
  // result) has no known elements: infer_run_time_dims then gives it a copy
  // whose elements are data symbols (NeedsValueSymbols) and infers again.
  const std::vector<Expr>& need_sym(size_t i, const char* what) {
    const std::vector<Expr>* s = sym(i);
    for (const Expr& e : float_checks_of(i))  // (a float holds it exactly up to 2^24)
      require(e >= Expr(-kExactFloat) && e <= Expr(kExactFloat),
              std::string(what) + " is computed in floating point, exact only up to 2^24 (" + tir::to_string(e) + ")");
    if (!s) {
      // The small integer tensor it comes from (a Cast to float of one, in
      // ONNX's function bodies: a window's length for a Range).
      int source = in(i);
      for (int hops = 0; hops < 4; hops++) {
        const graph::Value& v = val(source);
        tir::Type st = graph::dtype_to_tir(v.dtype);
        if ((st.is_int() || st.is_uint()) && v.dtype != graph::DType::Bool) break;  // (an integer already)
        if (v.producer < 0 || !g_.nodes[(size_t)v.producer].is(Op::Cast) || g_.nodes[(size_t)v.producer].inputs.empty())
          break;
        source = g_.nodes[(size_t)v.producer].inputs[0];
      }
      const graph::Value& v = val(source);
      tir::Type t = graph::dtype_to_tir(v.dtype);
      bool small_ints = (t.is_int() || t.is_uint()) && v.dtype != graph::DType::Bool && !v.is_dynamic() &&
                        !v.is_constant() && v.elements() >= 1 && v.elements() <= (int64_t)kMaxValueSymbols &&
                        !sym_.count(source);
      throw NeedsValueSymbols{source, small_ints && g_.symbols.size() + (size_t)v.elements() <= kMaxSymbols,
                              std::string(what) + " (input " + std::to_string(i) + ") is computed from data, not from shapes"};
    }
    return *s;
  }
  std::vector<int64_t> need_consts(size_t i, const char* what) {
    std::vector<int64_t> out;
    for (auto& e : need_sym(i, what)) {
      auto c = const_of(e);
      if (!c) fail(std::string(what) + " depends on run-time dimensions");
      out.push_back(*c);
    }
    return out;
  }
  int64_t axis_attr(const char* name, int64_t dflt, int64_t r) {
    int64_t a = node_->attr_int(name, dflt);
    if (a < 0) a += r;
    if (a < 0 || a >= std::max<int64_t>(r, 1)) fail(std::string("'") + name + "' is out of range");
    return a;
  }
  int64_t norm_axis(int64_t a, int64_t r) {
    if (a < 0) a += r;
    if (a < 0 || a >= r) fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    return a;
  }
  // The `axes` of reductions and (un)squeezes: an attribute before
  // `input_opset`, then input `input` (absent: none).
  std::optional<std::vector<int64_t>> axes(int64_t input_opset, size_t input) {
    if (g_.opset >= input_opset) {
      if (!has(input)) return std::nullopt;
      if (!val(in(input)).is_dynamic() && val(in(input)).elements() == 0) return std::vector<int64_t>{};  // none, even at run time
      return need_consts(input, "the axes");
    }
    if (!node_->has_attr("axes")) return std::nullopt;
    return node_->attr_ints("axes", {});
  }

  // Records that `cond` must hold at run time (a user error when it never can).
  void require(const Expr& cond, const std::string& what) {
    Expr c = simp(cond);
    if (auto k = tir::as_const_int(c)) {  // never holds: the model is wrong whatever the inputs
      if (!*k) user_error << node_->describe() << ": " << what << " can never agree; fix the model";
      return;
    }
    g_.constraints.push_back({c, node_->describe() + ": " + what});
  }
  // Past the constraint, a and b are one number (Graph::add_equal_dims).
  void require_equal(const Expr& a, const Expr& b, const std::string& what) {
    if (g_.same_dims({a}, {b})) return;
    require(tir::EQ::make(simp(a), simp(b)), what + " (" + tir::to_string(simp(a)) + " and " + tir::to_string(simp(b)) + ")");
    g_.add_equal_dims(a, b);
  }

  // Numpy broadcasting of two dimensions. A run-time dimension is never
  // taken to be 1: against another it must equal it (a constraint).
  Expr broadcast_dim(const Expr& a, const Expr& b) {
    auto ca = const_of(a), cb = const_of(b);
    if (ca && *ca == 1) return b;
    if (cb && *cb == 1) return a;
    if (g_.same_dims({a}, {b})) return a;
    if (ca && cb) fail("dimensions " + std::to_string(*ca) + " and " + std::to_string(*cb) + " do not broadcast");
    require_equal(a, b, "run-time dimensions must be equal to broadcast");
    return ca ? a : b;
  }
  DimExprs broadcast(const DimExprs& a, const DimExprs& b) {
    size_t r = std::max(a.size(), b.size());
    DimExprs out(r);
    for (size_t k = 0; k < r; k++) {
      Expr x = k + a.size() >= r ? a[k + a.size() - r] : Expr(1);
      Expr y = k + b.size() >= r ? b[k + b.size() - r] : Expr(1);
      out[k] = broadcast_dim(x, y);
    }
    return out;
  }
  static Expr product(const DimExprs& d, size_t begin, size_t end) {
    Expr p = Expr(1);
    for (size_t k = begin; k < end; k++) p = p * d[k];
    return simp(p);
  }

  // -------------------------------------------------- symbolic values --

  // Elementwise on small tensors (numpy broadcasting of their constant shapes).
  bool sym_elementwise(const std::function<Expr(const std::vector<Expr>&)>& f, size_t first, size_t count) {
    std::vector<const std::vector<Expr>*> ins;
    std::vector<graph::Shape> shapes;
    graph::Shape out_shape;
    for (size_t i = first; i < first + count; i++) {
      const std::vector<Expr>* s = sym(i);
      if (!s || val(in(i)).is_dynamic()) return false;
      ins.push_back(s);
      shapes.push_back(val(in(i)).shape);
      graph::Shape& sh = shapes.back();
      size_t r = std::max(out_shape.size(), sh.size());
      graph::Shape merged(r, 1);
      for (size_t k = 0; k < r; k++) {
        int64_t x = k + out_shape.size() >= r ? out_shape[k + out_shape.size() - r] : 1;
        int64_t y = k + sh.size() >= r ? sh[k + sh.size() - r] : 1;
        if (x != y && x != 1 && y != 1) return false;
        merged[k] = x == 1 ? y : x;
      }
      out_shape = merged;
    }
    int64_t n = graph::num_elements(out_shape);
    if (n > (int64_t)kMaxSymElements) return false;
    std::vector<Expr> out;
    for (int64_t e = 0; e < n; e++) {
      std::vector<Expr> args;
      for (size_t k = 0; k < ins.size(); k++) {
        const graph::Shape& sh = shapes[k];
        int64_t rest = e, idx = 0, stride = 1;
        for (size_t d = out_shape.size(); d-- > 0;) {
          int64_t i = rest % out_shape[d];
          rest /= out_shape[d];
          size_t off = out_shape.size() - sh.size();
          if (d >= off) {
            if (sh[d - off] != 1) idx += i * stride;
            stride *= sh[d - off];
          }
        }
        args.push_back((*ins[k])[(size_t)idx]);
      }
      out.push_back(simp(f(args)));
    }
    set_sym(0, out);
    return true;
  }
  void set_sym(size_t o, const std::vector<Expr>& elems) {
    if (o < node_->outputs.size() && node_->outputs[o] >= 0 && elems.size() <= kMaxSymElements) {
      std::vector<Expr> s;
      for (auto& e : elems) s.push_back(simp(e));
      if (is_float(val(node_->outputs[o]).dtype)) {
        // Float arithmetic would round elements past 2^24: followed, and
        // checked at run time where they decide a size (need_sym).
        std::vector<Expr> checks;
        for (size_t i = 0; i < node_->inputs.size(); i++)
          for (const Expr& e : float_checks_of(i)) checks.push_back(e);
        for (auto& e : s)
          if (!exact_in_float(e)) checks.push_back(e);
        if (checks.size() > kMaxSymElements) return;
        if (!checks.empty()) float_checks_[node_->outputs[o]] = checks;
      }
      sym_[node_->outputs[o]] = s;
    }
  }
  // Split of a 1-D tensor whose elements are known (tf2onnx splits a
  // constant into a Pad's pads): each output its part of them.
  void sym_split() {
    const std::vector<Expr>* x = sym(0);
    const size_t outs = node_->outputs.size();
    if (!x || outs == 0) return;
    std::vector<int64_t> sizes;
    if (g_.opset >= 13 && has(1)) {
      const std::vector<Expr>* s = sym(1);
      if (!s) return;
      for (const Expr& e : *s) {
        auto c = const_of(e);
        if (!c || *c < 0) return;
        sizes.push_back(*c);
      }
    } else if (g_.opset < 13) {
      sizes = node_->attr_ints("split", {});
      for (int64_t v : sizes)
        if (v < 0) return;  // (the Split rule refuses it)
    }
    if (sizes.empty()) {
      const size_t part = (x->size() + outs - 1) / outs;
      for (size_t o = 0; o < outs; o++) sizes.push_back((int64_t)std::min(part, x->size() - std::min(x->size(), part * o)));
    }
    if (sizes.size() != outs) return;
    size_t at = 0;
    for (size_t o = 0; o < outs; o++) {
      if (at + (size_t)sizes[o] > x->size()) return;
      at += (size_t)sizes[o];
    }
    if (at != x->size()) return;
    at = 0;
    for (size_t o = 0; o < outs; o++) {
      if (node_->outputs[o] >= 0) set_sym(o, std::vector<Expr>(x->begin() + (std::ptrdiff_t)at, x->begin() + (std::ptrdiff_t)(at + (size_t)sizes[o])));
      at += (size_t)sizes[o];
    }
  }

  void symbolic_values(Op op) {
    if (node_->outputs.empty() || node_->outputs[0] < 0) return;  // (a malformed model: no output to follow)
    bool float_out = is_float(val(node_->outputs[0]).dtype);
    if (float_out && (op == Op::Div || op == Op::Mod)) return;  // not integer division on floats
    switch (op) {
      case Op::Add: sym_elementwise([](auto& a) { return a[0] + a[1]; }, 0, 2); break;
      case Op::Sub: sym_elementwise([](auto& a) { return a[0] - a[1]; }, 0, 2); break;
      case Op::Mul: sym_elementwise([](auto& a) { return a[0] * a[1]; }, 0, 2); break;
      case Op::Div: {  // shapes are non-negative: floor and truncation agree
        sym_elementwise([](auto& a) { return a[0] / a[1]; }, 0, 2);
        break;
      }
      case Op::Mod: sym_elementwise([](auto& a) { return a[0] % a[1]; }, 0, 2); break;
      case Op::Max: sym_elementwise([](auto& a) { return tir::max(a[0], a[1]); }, 0, 2); break;
      case Op::Min: sym_elementwise([](auto& a) { return tir::min(a[0], a[1]); }, 0, 2); break;
      case Op::Equal: sym_elementwise([](auto& a) { return as_index(tir::EQ::make(a[0], a[1])); }, 0, 2); break;
      case Op::Less: sym_elementwise([](auto& a) { return as_index(a[0] < a[1]); }, 0, 2); break;
      case Op::Greater: sym_elementwise([](auto& a) { return as_index(a[0] > a[1]); }, 0, 2); break;
      case Op::Where:
        sym_elementwise([](auto& a) { return tir::select(tir::NE::make(a[0], Expr(0)), a[1], a[2]); }, 0, 3);
        break;
      case Op::Neg: sym_elementwise([](auto& a) { return Expr(0) - a[0]; }, 0, 1); break;
      case Op::Abs: sym_elementwise([](auto& a) { return tir::max(a[0], Expr(0) - a[0]); }, 0, 1); break;
      case Op::Cast: {  // integers, and floats holding integers (set_sym checks they are exact)
        graph::DType t = val(node_->outputs[0]).dtype;
        if (t == graph::DType::I64 || t == graph::DType::I32 || is_float(t))
          sym_elementwise([](auto& a) { return a[0]; }, 0, 1);
        break;
      }
      case Op::Split: sym_split(); break;
      case Op::Identity:
      case Op::Reshape:
      case Op::Flatten:
      case Op::Squeeze:
      case Op::Unsqueeze:
        if (const auto* s = sym(0)) set_sym(0, *s);
        break;
      default: break;
    }
  }

  // -------------------------------------------------------------- rules --

  DimExprs conv(bool transpose) {
    DimExprs x = in_dims(0);
    size_t w_input = node_->is(Op::QLinearConv) ? 3 : 1;
    DimExprs w = in_dims(w_input);
    if (x.size() < 3 || w.size() != x.size()) fail("input and weights must have the same rank, at least 3");
    size_t k = x.size() - 2;
    std::vector<int64_t> kernel;
    for (size_t i = 0; i < k; i++) {
      auto c = const_of(w[2 + i]);
      if (!c) fail("the weights' shape must be static");
      kernel.push_back(*c);
    }
    kernel = node_->attr_ints("kernel_shape", kernel);
    std::vector<int64_t> strides = node_->attr_ints("strides", std::vector<int64_t>(k, 1));
    std::vector<int64_t> dil = node_->attr_ints("dilations", std::vector<int64_t>(k, 1));
    std::vector<int64_t> pads = node_->attr_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (kernel.size() != k || strides.size() != k || dil.size() != k || pads.size() != 2 * k) fail("attribute lengths");
    std::string auto_pad = node_->attr_string("auto_pad", "NOTSET");
    int64_t group = node_->attr_int("group", 1);
    DimExprs out = {x[0], transpose ? simp(w[1] * Expr(group)) : w[0]};
    if (!transpose) require_equal(x[1], w[1] * Expr(group), "input channels and weights must agree");
    std::vector<int64_t> out_pad = node_->attr_ints("output_padding", std::vector<int64_t>(k, 0));
    std::vector<int64_t> out_shape = node_->attr_ints("output_shape", {});
    for (size_t i = 0; i < k; i++) {
      int64_t eff = dil[i] * (kernel[i] - 1) + 1;
      if (strides[i] < 1) fail("strides must be positive");
      if (transpose) {
        if (!out_shape.empty()) out.push_back(Expr(out_shape[out_shape.size() - k + i]));
        else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") out.push_back(simp(x[2 + i] * Expr(strides[i])));
        else {
          int64_t p = auto_pad == "VALID" ? 0 : pads[i] + pads[i + k];
          out.push_back(simp(Expr(strides[i]) * (x[2 + i] - Expr(1)) + Expr(out_pad[i] + eff - p)));
        }
        continue;
      }
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out.push_back(simp((x[2 + i] + Expr(strides[i] - 1)) / Expr(strides[i])));
        continue;
      }
      int64_t p = auto_pad == "VALID" ? 0 : pads[i] + pads[i + k];
      Expr num = x[2 + i] + Expr(p - eff);
      require(num >= Expr(0), "the input is smaller than the kernel");
      out.push_back(simp(num / Expr(strides[i]) + Expr(1)));
    }
    return out;
  }

  // DFT: x [..., N, ..., 1 or 2] -> [..., L, ..., 2], L = dft_length (else
  // N) along the axis, L / 2 + 1 onesided; the inverse onesided (a real
  // signal from half a spectrum) -> [..., L, ..., 1], L = dft_length (else
  // 2 (N - 1)). The axis (opset 20: an input) may be a value symbol: then
  // each dimension is the one it gives where the axis is its own.
  DimExprs dft() {
    DimExprs x = in_dims(0);
    const int64_t r = (int64_t)x.size();
    if (r < 2) fail("expects a signal [..., N, ..., 1 or 2]");
    const bool inverse = node_->attr_int("inverse", 0) != 0, onesided = node_->attr_int("onesided", 0) != 0;
    std::optional<Expr> length;
    if (has(1)) {
      const std::vector<Expr>& l = need_sym(1, "dft_length");
      if (l.size() != 1) fail("dft_length must be a scalar");
      length = l[0];
    }
    DimExprs out = x;
    out.back() = Expr(inverse && onesided ? 1 : 2);
    Expr a;
    if (g_.opset >= 20 && has(2)) {
      // Where no dimension depends on it, the kernel reads the axis.
      if (!onesided && !length && !sym(2)) return out;
      const std::vector<Expr>& v = need_sym(2, "the axis");
      if (v.size() != 1) fail("the axis must be a scalar");
      a = v[0];
      if (!const_of(a)) require(a <= Expr(r - 2), "the axis must be before the last dimension");
    } else {
      a = Expr(node_->attr_int("axis", 1));
    }
    if (auto c = const_of(a)) {  // negative counts from the end (of the whole rank)
      int64_t k = *c < 0 ? *c + r : *c;
      if (k < 0 || k > r - 2) fail("the axis must be before the last dimension");
      a = Expr(k);
    }
    for (int64_t d = 0; d + 1 < r; d++) {
      Expr l = length ? *length : inverse && onesided ? simp(Expr(2) * (x[(size_t)d] - Expr(1))) : x[(size_t)d];
      Expr along = onesided && !inverse ? simp(l / Expr(2) + Expr(1)) : l;
      if (auto c = const_of(along); c && *c < 1) {  // no transform along d: not the axis
        require(tir::NE::make(a, Expr(d)), "the transform along axis " + std::to_string(d) + " would be empty");
        continue;
      }
      if (!g_.same_dims({along}, {x[(size_t)d]})) out[(size_t)d] = simp(tir::select(tir::EQ::make(a, Expr(d)), along, x[(size_t)d]));
    }
    return out;
  }

  DimExprs pool() {
    DimExprs x = in_dims(0);
    if (x.size() < 3) fail("the input must have rank 3 or more");
    size_t k = x.size() - 2;
    std::vector<int64_t> kernel = node_->attr_ints("kernel_shape", {});
    if (kernel.size() != k) fail("'kernel_shape' must have one entry per spatial dimension");
    std::vector<int64_t> strides = node_->attr_ints("strides", std::vector<int64_t>(k, 1));
    std::vector<int64_t> dil = node_->attr_ints("dilations", std::vector<int64_t>(k, 1));
    std::vector<int64_t> pads = node_->attr_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (strides.size() != k || dil.size() != k || pads.size() != 2 * k) fail("attribute lengths");
    std::string auto_pad = node_->attr_string("auto_pad", "NOTSET");
    bool ceil_mode = node_->attr_int("ceil_mode", 0) != 0;
    DimExprs out = {x[0], x[1]};
    for (size_t i = 0; i < k; i++) {
      if (strides[i] < 1) fail("strides must be positive");
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out.push_back(simp((x[2 + i] + Expr(strides[i] - 1)) / Expr(strides[i])));
        continue;
      }
      int64_t eff = dil[i] * (kernel[i] - 1) + 1;
      int64_t p = auto_pad == "VALID" ? 0 : pads[i] + pads[i + k];
      Expr num = x[2 + i] + Expr(p - eff);
      require(num >= Expr(0), "the input is smaller than the window");
      Expr o = ceil_mode ? (num + Expr(strides[i] - 1)) / Expr(strides[i]) + Expr(1) : num / Expr(strides[i]) + Expr(1);
      // ceil_mode: a last window starting in the end padding is dropped (ONNX's shape inference).
      if (ceil_mode && auto_pad != "VALID")
        o = tir::select((o - Expr(1)) * Expr(strides[i]) >= x[2 + i] + Expr(pads[i]), o - Expr(1), o);
      out.push_back(simp(o));
    }
    return out;
  }

  DimExprs matmul(size_t ia, size_t ib) {
    DimExprs a = in_dims(ia), b = in_dims(ib);
    if (a.empty() || b.empty()) fail("inputs must be at least 1-D");
    bool a_vec = a.size() == 1, b_vec = b.size() == 1;
    if (a_vec) a.insert(a.begin(), Expr(1));
    if (b_vec) b.push_back(Expr(1));
    require_equal(a.back(), b[b.size() - 2], "the inner dimensions must agree");
    DimExprs batch = broadcast(DimExprs(a.begin(), a.end() - 2), DimExprs(b.begin(), b.end() - 2));
    if (!a_vec) batch.push_back(a[a.size() - 2]);
    if (!b_vec) batch.push_back(b.back());
    return batch;
  }

  DimExprs gemm() {
    DimExprs a = in_dims(0), b = in_dims(1);
    if (a.size() != 2 || b.size() != 2) fail("A and B must be 2-D");
    bool ta = node_->attr_int("transA", 0) != 0, tb = node_->attr_int("transB", 0) != 0;
    require_equal(ta ? a[0] : a[1], tb ? b[1] : b[0], "the inner dimensions must agree");
    return {ta ? a[1] : a[0], tb ? b[0] : b[1]};
  }

  DimExprs reshape() {
    DimExprs x = in_dims(0);
    std::vector<Expr> target;
    if (g_.opset < 5) {
      for (int64_t d : node_->attr_ints("shape", {})) target.push_back(Expr(d));
    } else {
      target = need_sym(1, "the target shape");
    }
    bool allowzero = node_->attr_int("allowzero", 0) != 0;
    DimExprs out;
    int minus_one = -1;
    for (size_t k = 0; k < target.size(); k++) {
      auto c = const_of(target[k]);
      if (c && *c == 0 && !allowzero) {
        if (k >= x.size()) fail("a 0 in the target shape past the input's rank");
        out.push_back(x[k]);
      } else if (c && *c == -1) {
        if (minus_one >= 0) fail("two -1 entries in the target shape");
        minus_one = (int)k;
        out.push_back(Expr(1));
      } else {
        if (c && *c < 0) fail("a negative dimension in the target shape");
        out.push_back(target[k]);
      }
    }
    Expr total = product(x, 0, x.size());
    if (minus_one >= 0) {
      Expr rest = product(out, 0, out.size());
      // A size a kernel computes may be 0, which a -1 cannot divide (ONNX
      // Runtime refuses it too): required at least 1, and taken so while
      // dividing, so (n * 6) / n simplifies to 6.
      std::vector<std::pair<Expr, Expr>> at_least_one, back;
      for (int sym : tir::symbols_used(rest)) {
        const graph::Symbol& d = g_.symbols[(size_t)sym];
        if (d.source_value < 0 || d.lo >= 1) continue;
        Expr one = tir::Var::make_symbol(d.name, sym, 1, d.hi);
        at_least_one.push_back({d.var, one});
        back.push_back({one, d.var});
      }
      if (!at_least_one.empty()) require(rest >= Expr(1), "-1 in the target shape needs the other dimensions non-empty");
      require(tir::EQ::make(total % rest, Expr(0)), "the element count must be a multiple of the other dimensions");
      out[(size_t)minus_one] =
          tir::substitute(simp(tir::substitute(total, at_least_one) / tir::substitute(rest, at_least_one)), back);
    } else {
      require_equal(total, product(out, 0, out.size()), "a reshape must keep the element count");
    }
    return out;
  }

  DimExprs slice() {
    DimExprs x = in_dims(0);
    size_t r = x.size();
    std::vector<Expr> starts, ends;
    std::vector<int64_t> ax, steps;
    if (g_.opset < 10) {
      for (int64_t v : node_->attr_ints("starts", {})) starts.push_back(Expr(v));
      for (int64_t v : node_->attr_ints("ends", {})) ends.push_back(Expr(v));
      ax = node_->attr_ints("axes", {});
    } else {
      bool run_time = !sym(1) || !sym(2) || (has(3) && !sym(3)) || (has(4) && !sym(4));
      if (run_time) {
        // Bounds, axes or steps read at run time: every dimension's length
        // is a data symbol (any may be sliced), defined by the Slice's first
        // kernel, which also writes each dimension's start and step into a
        // hidden int64 [2 * rank] output (lower/ops_index.cpp).
        for (size_t i = 2; i <= 4; i++)  // starts, ends, axes and steps: one entry each per sliced axis
          if (has(i)) {
            if (in_dims(1).size() != 1 || in_dims(i).size() != 1) fail("starts, ends, axes and steps must be 1-D");
            require_equal(in_dims(i)[0], in_dims(1)[0], "as many ends, axes and steps as starts");
          }
        DimExprs out;
        for (size_t d = 0; d < r; d++) out.push_back(data_symbol(val(in(0)).shape[d], 1 + d, 0, true));
        add_hidden_output(".params", {(int64_t)(2 * r)});
        return out;
      }
      starts = need_sym(1, "the starts");
      ends = need_sym(2, "the ends");
      if (has(3)) ax = need_consts(3, "the axes");
      if (has(4)) steps = need_consts(4, "the steps");
    }
    if (ax.empty())
      for (size_t k = 0; k < starts.size(); k++) ax.push_back((int64_t)k);
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || ax.size() != starts.size() || steps.size() != starts.size())
      fail("starts, ends, axes and steps must have the same length");
    DimExprs out = x;
    std::vector<Expr> first(r, Expr(0));  // for symbolic values of a 1-D input
    for (size_t k = 0; k < starts.size(); k++) {
      int64_t a = norm_axis(ax[k], (int64_t)r), step = steps[k];
      if (step == 0) fail("a step of 0");
      Expr d = x[(size_t)a];
      auto norm = [&](const Expr& v, int64_t lo_clamp, const Expr& hi_clamp) {
        auto c = const_of(v);
        Expr e = v;
        if (c && *c < 0) e = d + Expr(*c);
        if (c && *c >= (int64_t)1 << 40) e = d;  // INT64_MAX-style "to the end"
        if (c && *c <= -((int64_t)1 << 40)) e = Expr(lo_clamp);
        return simp(tir::min(tir::max(e, Expr(lo_clamp)), hi_clamp));
      };
      Expr s, e, len;
      if (step > 0) {
        s = norm(starts[k], 0, d);
        e = norm(ends[k], 0, d);
        len = simp(tir::max((e - s + Expr(step - 1)) / Expr(step), Expr(0)));
      } else {
        s = norm(starts[k], -1, d - Expr(1));
        e = norm(ends[k], -1, d - Expr(1));
        len = simp(tir::max((s - e + Expr(-step - 1)) / Expr(-step), Expr(0)));
      }
      out[(size_t)a] = len;
      first[(size_t)a] = s;
      if (r == 1 && step == 1) first[0] = s;
    }
    // A slice of a known 1-D value with constant bounds: its elements.
    if (r == 1)
      if (const auto* s = sym(0)) {
        auto n = const_of(out[0]), b = const_of(first[0]);
        if (n && b && steps.size() == 1 && steps[0] == 1 && *b >= 0 && *b + *n <= (int64_t)s->size())
          set_sym(0, std::vector<Expr>(s->begin() + *b, s->begin() + *b + *n));
      }
    return out;
  }

  DimExprs resize() {
    DimExprs x = in_dims(0);
    size_t r = x.size();
    // Inputs: Upsample (X, scales) from opset 9 (attribute before); Resize
    // (X, scales) at opset 10, (X, roi, scales, sizes) from 11.
    size_t scales_input = node_->is(Op::Upsample) || g_.opset < 11 ? 1 : 2;
    if (!node_->is(Op::Upsample) && g_.opset >= 11 && has(3) && val(in(3)).elements() > 0) {
      std::vector<Expr> sizes = need_sym(3, "the sizes");
      std::vector<int64_t> ax = node_->attr_ints("axes", {});
      if (ax.empty()) {
        if (sizes.size() != r) fail("'sizes' must have one entry per dimension");
        return DimExprs(sizes.begin(), sizes.end());
      }
      if (node_->attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
        if (auto known = known_output_dims(0)) return *known;  // (ONNX's inference computed it from constant sizes)
        fail("keep_aspect_ratio_policy");
      }
      DimExprs out = x;
      for (size_t k = 0; k < ax.size() && k < sizes.size(); k++) out[(size_t)norm_axis(ax[k], (int64_t)r)] = sizes[k];
      return out;
    }
    std::vector<double> scales;
    if (node_->is(Op::Upsample) && g_.opset < 9) {
      scales = std::vector<double>();
      for (double f : node_->attrs.count("scales") ? node_->attrs.at("scales").floats : std::vector<double>()) scales.push_back(f);
    } else {
      int v = in(scales_input);
      const graph::Value& s = val(v);
      if (!s.is_constant()) {
        // Float scales read at run time: the output's size must be stated (the
        // model's declaration or ONNX's inference), and the kernel takes it.
        if (auto known = known_output_dims(0)) return *known;
        fail("the scales are computed at run time");
      }
      for (int64_t k = 0; k < s.elements(); k++) scales.push_back(s.const_at(k));
    }
    if (scales.size() != r) fail("'scales' must have one entry per dimension");
    DimExprs out;
    for (size_t k = 0; k < r; k++) {
      double f = scales[k];
      if (!(f > 0)) fail("scales must be positive");
      // floor(d * f) exactly, for f = p / q with a small q.
      bool done = false;
      for (int64_t q = 1; q <= 64 && !done; q++) {
        double p = f * (double)q;
        if (p == std::floor(p) && p < 1e9 && (float)((double)(int64_t)p / (double)q) == (float)f) {
          out.push_back(simp((x[k] * Expr((int64_t)p)) / Expr(q)));
          done = true;
        }
      }
      // Else the float32 nearest p / q (a torch scale_factor of 1 / 300): ONNX
      // Runtime's floor(d * f) in float32 is floor(d * p / q) (d below 2^24).
      for (int64_t q = 1; q <= 1024 && !done; q++) {
        double p = std::nearbyint(f * (double)q);
        if (p >= 1 && p < 1e9 && (float)(p / (double)q) == (float)f) {
          require(x[k] < Expr(int64_t(1) << 24), "the resized dimension must stay below 2^24");
          out.push_back(simp((x[k] * Expr((int64_t)p)) / Expr(q)));
          done = true;
        }
      }
      if (!done) fail("a scale (" + std::to_string(f) + ") that is not a ratio of small integers");
    }
    return out;
  }

  // NonZero: [rank, count], the count a data symbol in [0, the input's
  // largest element count] that the kernel writes into a hidden int64 [1]
  // output (the symbol's source, read by the runtime after the kernel).
  DimExprs nonzero() {
    DimExprs x = in_dims(0);
    const graph::Value& v = val(in(0));
    if (v.is_constant()) return {Expr((int64_t)x.size()), Expr(known_count(v, v.elements()))};
    return {Expr((int64_t)x.size()), data_symbol(v.elements())};
  }

  // A count known at compile time (a constant input): the kernel still
  // writes it into a hidden output, which then defines no symbol.
  int64_t known_count(const graph::Value& v, int64_t first) {
    int64_t count = 0;
    for (int64_t i = 0; i < first; i++) count += v.const_at(i) != 0;
    add_hidden_output(".count", {1});
    return count;
  }

  // Compress: the input's dimensions with the selected one (or the
  // flattened input, without `axis`) a data symbol, at most the shorter of
  // the condition and that dimension.
  DimExprs compress() {
    DimExprs x = in_dims(0);
    const graph::Value& c = val(in(1));
    int64_t cond = c.elements();
    bool axis = node_->has_attr("axis");
    int64_t a = axis ? norm_axis(node_->attr_int("axis", 0), (int64_t)x.size()) : 0;
    Expr along = Expr(1);  // the selectable extent: the axis, or every element
    if (axis) along = x[(size_t)a];
    else
      for (auto& d : x) along = simp(along * d);
    Expr count;
    if (auto d = const_of(along); d && c.is_constant()) count = Expr(known_count(c, std::min(cond, *d)));
    else count = data_symbol(std::min(cond, axis ? val(in(0)).shape[(size_t)a] : val(in(0)).elements()));
    if (!axis) return {count};
    x[(size_t)a] = count;
    return x;
  }

  // Unique: u distinct elements (or slices along `axis`): Y, indices and
  // counts hold u, inverse_indices one per element (slice) of the input.
  DimExprs unique(std::map<size_t, DimExprs>& extra) {
    DimExprs x = in_dims(0);
    const graph::Shape& most = val(in(0)).shape;
    Expr u;
    DimExprs y;
    Expr all;
    if (!node_->has_attr("axis")) {
      u = data_symbol(val(in(0)).elements(), 4);
      all = Expr(1);
      for (auto& d : x) all = all * d;
      y = {u};
    } else {
      int64_t a = norm_axis(node_->attr_int("axis", 0), (int64_t)x.size());
      u = data_symbol(most[(size_t)a], 4);
      all = x[(size_t)a];
      y = x;
      y[(size_t)a] = u;
    }
    extra[1] = {u};
    extra[2] = {simp(all)};
    extra[3] = {u};
    // The kernel's scratch (outputs 5 and 6, after the count): first
    // occurrences and their output positions, one per element (slice).
    int64_t d = node_->has_attr("axis") ? most[(size_t)norm_axis(node_->attr_int("axis", 0), (int64_t)x.size())]
                                        : val(in(0)).elements();
    add_hidden_output(".first", {d});
    add_hidden_output(".rank", {d});
    return y;
  }

  bool uses_unbounded_symbol(const Expr& e) const {
    for (int sym : tir::symbols_used(e))
      if (g_.symbols[(size_t)sym].unbounded) return true;
    return false;
  }

  bool uses_data_symbol(const Expr& e) const {
    for (int sym : tir::symbols_used(e))
      if (g_.symbols[(size_t)sym].source_value >= 0) return true;
    return false;
  }

  // A fresh data symbol in [0, most] (a size only the kernel knows), whose
  // source is a new hidden int64 [1] output of the node, the last one (after
  // `outputs` slots: the operator's own, absent ones -1).
  // With `count_only` (the source kernel writes only the counts, a kernel
  // after it the data they size) a bound past kMaxRunTimeDim (a dimension of
  // a run-time-sized tensor) makes an unbounded symbol (graph::Symbol::
  // unbounded): what it sizes is allocated once the count is known. A
  // value read at run time with no bound (kiln.InputValue's `unbounded`)
  // says so with `no_bound`.
  Expr data_symbol(int64_t most, size_t outputs = 1, int64_t least = 0, bool count_only = false,
                   bool no_bound = false) {
    const bool unbounded = no_bound || (count_only && most > graph::kMaxRunTimeDim);
    if (unbounded) most = graph::kMaxRunTimeDim;
    if (most > graph::kMaxRunTimeDim) fail("more than 2^31 elements: the count would not fit a shape symbol");
    if (g_.symbols.size() >= kMaxSymbols)
      fail("the model needs more than " + std::to_string(kMaxSymbols) + " run-time sizes (shape symbols), the most a "
           "bundle may hold");
    std::vector<int>& outs = g_.nodes[(size_t)(node_ - g_.nodes.data())].outputs;
    if (outs.size() < outputs) outs.resize(outputs, -1);
    int cv = add_hidden_output(".count", {1});
    const std::string& name = val(cv).name;
    Expr count = tir::Var::make_symbol(name, (int)g_.symbols.size(), least, most);
    g_.symbols.push_back({name, count, least, most, cv, unbounded});
    return count;
  }

  // A reduction whose axes are read at run time (lower/ops_reduce.cpp,
  // lower_reduce_run_time_axes): a data symbol per dimension of the
  // keepdims shape (1 where reduced, else the input's), with keepdims=0 one
  // per output dimension too (the kept dimensions in order; as many as the
  // input's rank less the axes' count), and a last one in [1, 1] that is 0
  // when the axes are out of range or repeated. Hidden outputs in that order.
  DimExprs run_time_axes(const DimExprs& x, bool keep) {
    const int64_t r = (int64_t)x.size(), k = val(in(1)).elements();
    for (auto& d : x)
      if (!const_of(d)) fail("a reduction over axes known only at run time needs static input dimensions");
    if (k > r) fail("more axes than dimensions");
    DimExprs kept, out;
    int64_t largest = 0;
    for (int64_t d = 0; d < r; d++) {
      kept.push_back(data_symbol(std::max<int64_t>(val(in(0)).shape[(size_t)d], 1), 1 + (size_t)d));  // 1 if reduced
      largest = std::max(largest, val(in(0)).shape[(size_t)d]);
    }
    if (!keep)
      for (int64_t j = 0; j < r - k; j++) out.push_back(data_symbol(largest));
    data_symbol(1, 1, 1);  // the axes are valid
    return keep ? kept : out;
  }

  // Whether input i's elements are all known constants.
  bool const_elements(size_t i) {
    const std::vector<Expr>* s = sym(i);
    if (!s) return false;
    for (auto& e : *s)
      if (!const_of(e)) return false;
    return true;
  }

  // A Pad whose axes are not compile-time constants (lower/ops_index.cpp,
  // pad_begins_run_time): every output dimension is a data symbol (any may
  // be padded), defined by the Pad's first kernel, which reads the pads and
  // axes and also writes each dimension's begin pad into a hidden int64
  // [rank] output. Constant pads bound the lengths; pads read at run time
  // leave them unbounded (the output is sized per run).
  DimExprs pad_run_time_axes(const DimExprs& x) {
    if (in_dims(1).size() != 1 || in_dims(3).size() != 1) fail("pads and axes must be 1-D");
    require_equal(in_dims(1)[0], simp(in_dims(3)[0] * Expr(2)), "'pads' must have two entries per padded axis");
    int64_t grow = 0;  // the most any axis grows, with constant pads
    bool bounded = const_elements(1);
    if (bounded) {
      const std::vector<Expr>& p = *sym(1);
      const size_t axes = p.size() / 2;
      for (size_t k = 0; k < axes; k++)  // (each pad clamped: past 2^31 the symbol is unbounded anyway)
        grow = std::max(grow, std::min(*const_of(p[k]), graph::kMaxRunTimeDim) + std::min(*const_of(p[k + axes]), graph::kMaxRunTimeDim));
    }
    DimExprs out;
    for (size_t d = 0; d < x.size(); d++)
      out.push_back(data_symbol(bounded ? val(in(0)).shape[d] + grow : graph::kMaxRunTimeDim + 1, 1 + d, 0, true));
    add_hidden_output(".params", {(int64_t)x.size()});
    return out;
  }

  // A new int64 output of the node, after its others (read by the runtime or
  // by the node's own later kernels, never by other nodes).
  int add_hidden_output(const std::string& suffix, const graph::Shape& shape) {
    const int producer = (int)(node_ - g_.nodes.data());
    graph::Value c;
    c.name = g_.unique_name(node_->name + suffix);
    c.dtype = graph::DType::I64;
    c.shape = shape;
    c.producer = producer;
    int cv = g_.add_value(std::move(c));
    g_.nodes[(size_t)producer].outputs.push_back(cv);
    return cv;
  }

  // Output 0's dimensions by the operator's rule; the rule may also set
  // symbolic values and other outputs' dimensions in `extra`.
  DimExprs rule(OpDims r, std::map<size_t, DimExprs>& extra) {
    const Node& n = *node_;
    switch (r) {
      case OpDims::None: {
        for (int v : n.inputs)
          if (v >= 0 && val(v).is_dynamic()) fail("operator " + n.op + " needs static input shapes");
        for (size_t i = 0; i < n.inputs.size(); i++)  // (float values known symbolically are read as data)
          if (has(i) && sym(i) && !val(in(i)).is_constant() && !is_float(val(in(i)).dtype))
            fail("operator " + n.op + " reads a shape computed at run time");
        return {};  // ONNX's static dimensions stand
      }
      case OpDims::Same: {
        DimExprs d = in_dims(0);
        if (n.is(Op::Dropout) && n.outputs.size() > 1) extra[1] = d;  // the mask (other outputs: ONNX's, static)
        return d;
      }
      case OpDims::Broadcast: {
        DimExprs d;
        for (size_t i = 0; i < n.inputs.size(); i++)
          if (has(i)) d = broadcast(d, in_dims(i));
        return d;
      }
      case OpDims::Conv: return conv(false);
      case OpDims::ConvTranspose: return conv(true);
      case OpDims::Pool: {
        DimExprs d = pool();
        if (n.outputs.size() > 1) extra[1] = d;  // MaxPool's indices
        return d;
      }
      case OpDims::GlobalPool: {
        DimExprs d = in_dims(0);
        for (size_t k = 2; k < d.size(); k++) d[k] = Expr(1);
        return d;
      }
      case OpDims::MatMul: return n.is(Op::QLinearMatMul) ? matmul(0, 3) : matmul(0, 1);
      case OpDims::Gemm: return gemm();
      case OpDims::Reshape: return reshape();
      case OpDims::Flatten: {
        DimExprs x = in_dims(0);
        int64_t a = node_->attr_int("axis", 1);
        if (a < 0) a += (int64_t)x.size();
        if (a < 0 || a > (int64_t)x.size()) fail("'axis' is out of range");
        return {product(x, 0, (size_t)a), product(x, (size_t)a, x.size())};
      }
      case OpDims::Squeeze: {
        DimExprs x = in_dims(0);
        auto ax = axes(13, 1);
        std::vector<bool> drop(x.size(), false);
        if (!ax) {
          for (size_t k = 0; k < x.size(); k++) {
            auto c = const_of(x[k]);
            drop[k] = c && *c == 1;
          }
        } else {
          for (int64_t a : *ax) {
            size_t k = (size_t)norm_axis(a, (int64_t)x.size());
            require_equal(x[k], Expr(1), "a squeezed dimension must be 1");
            drop[k] = true;
          }
        }
        DimExprs out;
        for (size_t k = 0; k < x.size(); k++)
          if (!drop[k]) out.push_back(x[k]);
        return out;
      }
      case OpDims::Unsqueeze: {
        DimExprs x = in_dims(0);
        auto ax = axes(13, 1);
        if (!ax) fail("Unsqueeze needs axes");
        int64_t out_rank = (int64_t)(x.size() + ax->size());
        std::vector<bool> is_new((size_t)out_rank, false);
        for (int64_t a : *ax) is_new[(size_t)norm_axis(a, out_rank)] = true;
        DimExprs out;
        size_t src = 0;
        for (int64_t k = 0; k < out_rank; k++) out.push_back(is_new[(size_t)k] ? Expr(1) : x.at(src++));
        return out;
      }
      case OpDims::Shape: {
        DimExprs x = in_dims(0);
        int64_t r = (int64_t)x.size();
        int64_t start = std::clamp<int64_t>(n.attr_int("start", 0) < 0 ? n.attr_int("start", 0) + r : n.attr_int("start", 0), 0, r);
        int64_t end_attr = n.attr_int("end", r);
        int64_t end = std::clamp<int64_t>(end_attr < 0 ? end_attr + r : end_attr, start, r);
        set_sym(0, std::vector<Expr>(x.begin() + start, x.begin() + end));
        return {Expr(end - start)};
      }
      case OpDims::Size: {
        DimExprs x = in_dims(0);
        set_sym(0, {product(x, 0, x.size())});
        return {};
      }
      case OpDims::Concat: {
        DimExprs out;
        int64_t axis = -1;
        std::vector<Expr> elems;
        bool all_sym = true;
        for (size_t i = 0; i < n.inputs.size(); i++) {
          if (!has(i)) continue;
          DimExprs d = in_dims(i);
          if (axis < 0) {
            axis = axis_attr("axis", 0, (int64_t)d.size());
            out = d;
          } else {
            if (d.size() != out.size()) fail("inputs of different ranks");
            for (size_t k = 0; k < d.size(); k++) {
              if ((int64_t)k == axis) {
                out[k] = simp(out[k] + d[k]);
                continue;
              }
              require_equal(out[k], d[k], "concatenated inputs must agree off the axis");
              if (const_of(d[k])) out[k] = d[k];  // the constant, where one of them is
            }
          }
          const std::vector<Expr>* s = sym(i);
          if (s && d.size() == 1) elems.insert(elems.end(), s->begin(), s->end());
          else all_sym = false;
        }
        if (all_sym && out.size() == 1) set_sym(0, elems);
        return out;
      }
      case OpDims::Transpose: {
        DimExprs x = in_dims(0);
        std::vector<int64_t> perm = n.attr_ints("perm", {});
        if (perm.empty())
          for (size_t k = x.size(); k-- > 0;) perm.push_back((int64_t)k);
        if (perm.size() != x.size()) fail("'perm' must have one entry per dimension");
        DimExprs out;
        for (int64_t p : perm) out.push_back(x[(size_t)norm_axis(p, (int64_t)x.size())]);
        return out;
      }
      case OpDims::Reduce: {
        DimExprs x = in_dims(0);
        bool keep = n.attr_int("keepdims", 1) != 0;
        std::vector<bool> reduced(x.size(), false);
        if (n.is(Op::ArgMax) || n.is(Op::ArgMin)) {
          reduced[(size_t)axis_attr("axis", 0, (int64_t)x.size())] = true;
        } else {
          const int64_t input_opset = n.is(Op::ReduceSum) ? 13 : 18;
          if (g_.opset >= input_opset && has(1) && !sym(1) && !val(in(1)).is_dynamic() && val(in(1)).elements() > 0)
            return run_time_axes(x, keep);
          auto ax = axes(input_opset, 1);
          if (!ax || ax->empty()) {
            if (n.attr_int("noop_with_empty_axes", 0) != 0) return x;
            reduced.assign(x.size(), true);
          } else {
            for (int64_t a : *ax) reduced[(size_t)norm_axis(a, (int64_t)x.size())] = true;
          }
        }
        DimExprs out;
        for (size_t k = 0; k < x.size(); k++)
          if (!reduced[k]) out.push_back(x[k]);
          else if (keep) out.push_back(Expr(1));
        if (const auto* s = sym(0); s && x.size() == 1 && !keep && (n.is(Op::ReduceProd) || n.is(Op::ReduceSum))) {
          Expr acc = Expr(n.is(Op::ReduceProd) ? 1 : 0);
          for (auto& e : *s) acc = n.is(Op::ReduceProd) ? acc * e : acc + e;
          set_sym(0, {acc});
        }
        return out;
      }
      case OpDims::TopK: {
        DimExprs x = in_dims(0);
        int64_t a = axis_attr("axis", -1, (int64_t)x.size());
        // k read at run time (not a constant, no shape computation): a data
        // symbol in [0, the axis' largest size] that the TopK's first kernel
        // defines (lower/ops_reduce.cpp).
        Expr k = g_.opset < 10 ? Expr(n.attr_int("k", 1))
                 : sym(1)      ? sym(1)->at(0)
                               : data_symbol(val(in(0)).shape.at((size_t)a), 2, 0, true);
        require(k <= x[(size_t)a], "k must not exceed the dimension");
        x[(size_t)a] = k;
        extra[1] = x;
        return x;
      }
      case OpDims::Gather: {
        DimExprs x = in_dims(0), idx = in_dims(1);
        int64_t a = axis_attr("axis", 0, (int64_t)x.size());
        DimExprs out(x.begin(), x.begin() + a);
        out.insert(out.end(), idx.begin(), idx.end());
        out.insert(out.end(), x.begin() + a + 1, x.end());
        const std::vector<Expr>* data = sym(0);
        const std::vector<Expr>* which = sym(1);
        if (data && which && x.size() == 1 && idx.size() <= 1) {
          std::vector<Expr> elems;
          for (auto& w : *which) {
            auto c = const_of(w);
            if (!c) return out;
            int64_t j = *c < 0 ? *c + (int64_t)data->size() : *c;
            if (j < 0 || j >= (int64_t)data->size()) fail("an index is out of range");
            elems.push_back((*data)[(size_t)j]);
          }
          set_sym(0, elems);
        }
        return out;
      }
      case OpDims::GatherElements: return in_dims(1);
      case OpDims::GatherND: {  // indices' dimensions but the last (m), then data's after batch_dims + m
        DimExprs data = in_dims(0), ind = in_dims(1);
        int64_t m = -1, b = n.attr_int("batch_dims", 0);
        if (!ind.empty())
          if (auto c = const_of(ind.back())) m = *c;
        if (m < 0 || b < 0 || b + m > (int64_t)data.size()) fail("the index length must be known and fit the data");
        DimExprs out(ind.begin(), ind.end() - 1);
        out.insert(out.end(), data.begin() + b + m, data.end());
        return out;
      }
      case OpDims::Slice: return slice();
      case OpDims::Expand: {
        std::vector<Expr> shape = need_sym(1, "the target shape");
        // A target read from data (a data symbol) may be 1 on purpose, to keep
        // the input's dimension: numpy's rule then, by value, checked at run time.
        const DimExprs x = in_dims(0);
        const size_t r = std::max(x.size(), shape.size());
        DimExprs out(r);
        for (size_t k = 0; k < r; k++) {
          Expr a = k + x.size() >= r ? x[k + x.size() - r] : Expr(1);
          Expr b = k + shape.size() >= r ? shape[k + shape.size() - r] : Expr(1);
          if (const_of(b) || !uses_data_symbol(b) || (const_of(a) && *const_of(a) == 1)) {
            out[k] = broadcast_dim(a, b);
            continue;
          }
          require(tir::EQ::make(b, Expr(1)) || tir::EQ::make(a, b) || tir::EQ::make(a, Expr(1)),
                  "the target shape must broadcast with the input (" + tir::to_string(simp(a)) + " and " +
                      tir::to_string(simp(b)) + ")");
          out[k] = simp(tir::select(tir::EQ::make(b, Expr(1)), a, b));
        }
        return out;
      }
      case OpDims::Tile: {
        DimExprs x = in_dims(0);
        std::vector<Expr> rep = need_sym(1, "the repeats");
        if (rep.size() != x.size()) fail("'repeats' must have one entry per dimension");
        for (size_t k = 0; k < x.size(); k++) x[k] = simp(x[k] * rep[k]);
        return x;
      }
      case OpDims::Pad: {
        DimExprs x = in_dims(0);
        if (g_.opset >= 18 && has(3) && !const_elements(3)) return pad_run_time_axes(x);
        std::vector<Expr> pads;
        if (g_.opset < 11) {
          for (int64_t p : n.attr_ints("pads", {})) pads.push_back(Expr(p));
        } else {
          pads = need_sym(1, "the pads");
        }
        std::vector<int64_t> ax;
        if (g_.opset >= 18 && has(3)) ax = need_consts(3, "the axes");
        if (ax.empty())
          for (size_t k = 0; k < x.size(); k++) ax.push_back((int64_t)k);
        if (pads.size() != 2 * ax.size()) fail("'pads' must have two entries per padded axis");
        for (size_t k = 0; k < ax.size(); k++) {
          size_t a = (size_t)norm_axis(ax[k], (int64_t)x.size());
          x[a] = simp(x[a] + pads[k] + pads[k + ax.size()]);
        }
        return x;
      }
      case OpDims::Split: {
        DimExprs x = in_dims(0);
        int64_t a = axis_attr("axis", 0, (int64_t)x.size());
        std::vector<Expr> sizes;
        if (g_.opset >= 13 && has(1)) sizes = need_sym(1, "the split sizes");
        else if (g_.opset < 13)
          for (int64_t v : n.attr_ints("split", {})) sizes.push_back(Expr(v));
        size_t outs = n.outputs.size();
        if (sizes.empty()) {
          Expr d = x[(size_t)a];
          if (!const_of(d)) require(tir::EQ::make(d % Expr((int64_t)outs), Expr(0)), "the split dimension must divide evenly");
          Expr part = const_of(d) ? Expr((*const_of(d) + (int64_t)outs - 1) / (int64_t)outs) : simp(d / Expr((int64_t)outs));
          for (size_t o = 0; o < outs; o++) {
            DimExprs y = x;
            y[(size_t)a] = o + 1 < outs || !const_of(d) ? part : simp(d - part * Expr((int64_t)(outs - 1)));
            extra[o] = y;
          }
        } else {
          if (sizes.size() != outs) fail("one split size per output");
          Expr total = Expr(0);
          for (size_t o = 0; o < outs; o++) {
            DimExprs y = x;
            y[(size_t)a] = sizes[o];
            total = total + sizes[o];
            extra[o] = y;
          }
          require_equal(total, x[(size_t)a], "the split sizes must add up to the dimension");
        }
        return extra[0];
      }
      case OpDims::DepthToSpace:
      case OpDims::SpaceToDepth: {
        DimExprs x = in_dims(0);
        if (x.size() != 4) fail("the input must be 4-D");
        Expr b = Expr(n.attr_int("blocksize", 1));
        if (r == OpDims::DepthToSpace) return {x[0], simp(x[1] / (b * b)), simp(x[2] * b), simp(x[3] * b)};
        require(tir::EQ::make(x[2] % b, Expr(0)) && tir::EQ::make(x[3] % b, Expr(0)), "the blocksize must divide the spatial dimensions");
        return {x[0], simp(x[1] * b * b), simp(x[2] / b), simp(x[3] / b)};
      }
      case OpDims::ConstantOfShape: {
        std::vector<Expr> shape = need_sym(0, "the shape");
        return DimExprs(shape.begin(), shape.end());
      }
      case OpDims::Range: {
        Expr start = need_sym(0, "start").at(0), limit = need_sym(1, "limit").at(0);
        auto delta = need_consts(2, "delta");
        if (delta.size() != 1 || delta[0] == 0) fail("delta must be a non-zero scalar");
        int64_t d = delta[0];
        Expr count = d > 0 ? (limit - start + Expr(d - 1)) / Expr(d) : (start - limit + Expr(-d - 1)) / Expr(-d);
        return {simp(tir::max(count, Expr(0)))};
      }
      case OpDims::Resize: return resize();
      case OpDims::NonZero: return nonzero();
      case OpDims::Compress: return compress();
      case OpDims::NonMaxSuppression: {
        // [selected, 3], at most every box of every class of every batch;
        // output 1 the count, 2 the kernel's scratch (one flag per box).
        DimExprs boxes = in_dims(0), scores = in_dims(1);
        if (boxes.size() != 3 || scores.size() != 3) fail("boxes [B, N, 4] and scores [B, C, N] needed");
        require_equal(boxes[0], scores[0], "the batch of boxes and scores");
        require_equal(boxes[1], scores[2], "the box count of boxes and scores");
        require_equal(boxes[2], Expr(4), "the 4 coordinates of each box");
        int64_t most = val(in(1)).elements();
        Expr selected = data_symbol(most);
        add_hidden_output(".alive", {val(in(0)).shape[1]});
        return {selected, Expr(3)};
      }
      case OpDims::Unique: return unique(extra);
      case OpDims::StringNormalizer: {  // [K] or [1, K]: the strings kept, at least 1 (an empty one)
        DimExprs x = in_dims(0);
        if (x.empty() || x.size() > 2) fail("X must be [C] or [1, C]");
        Expr kept = data_symbol(std::max<int64_t>(val(in(0)).elements(), 1), 1, 1);
        if (x.size() == 1) return {kept};
        return {x[0], kept};
      }
      case OpDims::StringSplit: {
        // X's dimensions and the most pieces of any string, a data symbol the
        // counting kernel defines: at most maxsplit + 1, else unbounded (the
        // pieces are sized per run); output 1, the counts, X's dimensions.
        DimExprs x = in_dims(0);
        const int64_t maxsplit = node_->attr_int("maxsplit", -1);
        extra[1] = x;
        const int64_t most = maxsplit >= 0 ? std::min(maxsplit, graph::kMaxRunTimeDim) + 1 : graph::kMaxRunTimeDim + 1;
        x.push_back(data_symbol(most, 2, 0, true));
        return x;
      }
      case OpDims::Window: return {need_sym(0, "the window size").at(0)};  // its length: the size's value
      case OpDims::MaxUnpool: {  // output_shape's values (symbols from --input-value), else ONNX's (static)
        DimExprs x = in_dims(0);
        if (x.size() < 3) fail("X must be 3-D or more");
        if (!has(2)) {  // the default: (in - 1) * stride + kernel - pads per spatial axis
          size_t k = x.size() - 2;
          std::vector<int64_t> kernel = node_->attr_ints("kernel_shape", {});
          std::vector<int64_t> strides = node_->attr_ints("strides", std::vector<int64_t>(k, 1));
          std::vector<int64_t> pads = node_->attr_ints("pads", std::vector<int64_t>(2 * k, 0));
          if (kernel.size() != k || strides.size() != k || pads.size() != 2 * k)
            fail("kernel_shape, strides and pads must match the input's rank");
          DimExprs out = {x[0], x[1]};
          for (size_t a = 0; a < k; a++)
            out.push_back(simp((x[2 + a] - Expr(1)) * Expr(strides[a]) + Expr(kernel[a] - pads[a] - pads[a + k])));
          return out;
        }
        std::vector<Expr> s = need_sym(2, "output_shape");
        if (s.size() != x.size()) fail("output_shape must have one entry per dimension");
        require_equal(s[0], x[0], "the batch of output_shape and X");
        require_equal(s[1], x[1], "the channels of output_shape and X");
        return DimExprs(s.begin(), s.end());
      }
      case OpDims::Recurrent: {  // RNN, GRU, LSTM: Y [T, D, B, H], Y_h and Y_c [D, B, H] (layout 1: [B, T, D, H], [B, D, H])
        DimExprs x = in_dims(0), w = in_dims(1);
        if (x.size() != 3 || w.size() != 3) fail("X and W must be 3-D");
        const bool layout = n.attr_int("layout", 0) != 0;
        const Expr t = layout ? x[1] : x[0], b = layout ? x[0] : x[1], d = w[0];
        const int64_t gates = n.is(Op::LSTM) ? 4 : n.is(Op::GRU) ? 3 : 1;
        const Expr h = n.has_attr("hidden_size") ? Expr(n.attr_int("hidden_size", 0)) : simp(w[1] / Expr(gates));
        if (has(4) && in_dims(4).size() == 1) require_equal(in_dims(4)[0], b, "sequence_lens and the batch of X");
        for (size_t i = 5; i <= 6; i++)  // initial_h, initial_c (LSTM)
          if (has(i) && in_dims(i).size() == 3) require_equal(in_dims(i)[layout ? 0 : 1], b, "the initial state's batch and X's");
        for (size_t o = 1; o < n.outputs.size(); o++) extra[o] = layout ? DimExprs{b, d, h} : DimExprs{d, b, h};
        return layout ? DimExprs{b, t, d, h} : DimExprs{t, d, b, h};
      }
      case OpDims::AffineGrid: {  // size [N, C, D1, .., Dk] gives [N, D1, .., Dk, k]
        std::vector<Expr> size = need_sym(1, "size");
        if (size.size() < 3) fail("size must be [N, C, D1, .., Dk]");
        DimExprs out = {size[0]};
        out.insert(out.end(), size.begin() + 2, size.end());
        out.push_back(Expr((int64_t)size.size() - 2));
        return out;
      }
      case OpDims::Col2Im: {  // [N, C / prod(block_shape), image_shape...]: constants or symbols
        DimExprs x = in_dims(0);
        if (x.size() != 3) fail("the input must be 3-D: [N, C * prod(block_shape), L]");
        std::vector<Expr> image = need_sym(1, "image_shape"), block = need_sym(2, "block_shape");
        const size_t k = image.size();
        std::vector<int64_t> dil = node_->attr_ints("dilations", std::vector<int64_t>(k, 1));
        std::vector<int64_t> pads = node_->attr_ints("pads", std::vector<int64_t>(2 * k, 0));
        std::vector<int64_t> strides = node_->attr_ints("strides", std::vector<int64_t>(k, 1));
        if (k == 0 || block.size() != k || dil.size() != k || pads.size() != 2 * k || strides.size() != k)
          fail("image_shape, block_shape, dilations, strides (one entry per image axis) and pads (two) must agree");
        Expr kernel = Expr(1), blocks = Expr(1);
        DimExprs out = {x[0], Expr(0)};
        for (size_t a = 0; a < k; a++) {
          if (strides[a] < 1 || dil[a] < 1) fail("strides and dilations must be positive");
          require(block[a] >= Expr(1), "block_shape must be positive");
          Expr b = tir::max(block[a], Expr(1));  // (the run checks it; bounds the extents)
          kernel = kernel * b;
          Expr n_blocks = (image[a] + Expr(pads[a] + pads[a + k]) - Expr(dil[a]) * (b - Expr(1)) - Expr(1)) / Expr(strides[a]) +
                          Expr(1);
          require(n_blocks >= Expr(1), "image_shape, block_shape, pads, strides and dilations leave no block");
          blocks = blocks * n_blocks;
          out.push_back(simp(image[a]));
        }
        require(tir::EQ::make(x[1] % kernel, Expr(0)), "the input's dimension 1 must be a multiple of prod(block_shape)");
        require(tir::EQ::make(x[2], blocks), "the input's dimension 2 must be the number of blocks in the image");
        out[1] = simp(x[1] / kernel);
        return out;
      }
      case OpDims::MelWeightMatrix: {  // [dft_length / 2 + 1, num_mel_bins]: constants or symbols
        Expr bins = need_sym(0, "num_mel_bins").at(0), length = need_sym(1, "dft_length").at(0);
        require(bins >= Expr(1), "num_mel_bins must be positive");
        require(length >= Expr(1), "dft_length must be positive");
        // (The run checks the conditions; the extents are clamped so that a
        // symbol computed from an input, its range reaching below 1, still bounds them.)
        return {simp(tir::max(length, Expr(1)) / Expr(2) + Expr(1)), simp(tir::max(bins, Expr(1)))};
      }
      case OpDims::Dft: return dft();
      case OpDims::Stft: {  // [batch, frames, bins, 2]; frame_step and frame_length may be symbols
        DimExprs x = in_dims(0);
        if (x.size() != 3 || !const_of(x[1])) fail("a signal [batch, length, 1 or 2] of static length is needed");
        Expr step = need_sym(1, "frame_step").at(0);
        require(step >= Expr(1), "frame_step must be positive");
        Expr length;
        if (has(2)) {
          DimExprs w = in_dims(2);
          if (w.size() != 1 || !const_of(w[0])) fail("the window must be 1-D and static");
          length = w[0];
        } else {
          const std::vector<Expr>& fl = need_sym(3, "frame_length");
          if (fl.size() != 1) fail("frame_length must be a scalar");
          length = fl[0];
        }
        if (auto c = const_of(length)) {
          if (*c < 1 || *c > *const_of(x[1])) fail("the frame length must be 1 to the signal's length");
        } else {
          require(length >= Expr(1) && length <= x[1], "the frame length must be 1 to the signal's length");
          length = simp(tir::max(length, Expr(1)));  // (the run checks it; bounds the extents below)
          if (tir::bounds_of(length).max > *const_of(x[1])) length = simp(tir::min(length, x[1]));
        }
        Expr bins = node_->attr_int("onesided", 1) != 0 ? simp(length / Expr(2) + Expr(1)) : length;
        return {x[0], simp((x[1] - length) / tir::max(step, Expr(1)) + Expr(1)), bins, Expr(2)};
      }
      case OpDims::InputValue: {  // the copy keeps the input's shape; each element is a symbol in [lo, hi]
        DimExprs x = in_dims(0);
        std::vector<Expr> elems;
        for (int64_t k = 0; k < val(in(0)).elements(); k++) {
          elems.push_back(data_symbol(n.attr_int("hi", 0), 1 + (size_t)k, n.attr_int("lo", 0), false,
                                      n.attr_int("unbounded", 0) != 0));
        }
        set_sym(0, elems);
        g_.values[(size_t)n.outputs[0]].sym = elems;  // kernels that read the values as sizes (Pad) see the symbols
        return x;
      }
      case OpDims::Condition: {  // the flag keeps the condition's shape; its symbol is 0 or 1
        DimExprs c = in_dims(0);
        data_symbol(1);
        return c;
      }
    }
    internal_error << "unhandled dims rule";
  }

  // Operators whose kernels read nothing of their size inputs but what their
  // output's shape says (Reshape's target, Expand's shape, Range's count,
  // Resize's sizes, ...): with a stated output shape they need no data
  // symbols. Pad, the windows and STFT read their sizes' values themselves.
  // Output o's dimensions as ONNX's inference (or the model's declaration)
  // stated them, when it stated every one.
  std::optional<DimExprs> known_output_dims(size_t o) const {
    if (o >= node_->outputs.size() || node_->outputs[o] < 0 || unknown_rank_.count(node_->outputs[o])) return std::nullopt;
    DimExprs d;
    for (int64_t x : val(node_->outputs[o]).shape) {
      if (x < 0) return std::nullopt;
      d.push_back(Expr(x));
    }
    return d;
  }

  // Whether `d` and `known` (-1: unknown) differ in rank, or a static
  // dimension of `d` differs from a known one.
  bool static_mismatch(const DimExprs& d, const graph::Shape& known) {
    if (d.size() != known.size()) return true;
    for (size_t k = 0; k < d.size(); k++) {
      auto c = const_of(simp(d[k]));
      if (known[k] >= 0 && c && *c != known[k]) return true;
    }
    return false;
  }

  void infer_node(int ni) {
    node_ = &g_.nodes[(size_t)ni];
    const Node& n = *node_;
    std::map<size_t, DimExprs> extra;
    DimExprs d0;
    try {
      d0 = rule(n.traits().dims, extra);
    } catch (const NeedsValueSymbols& need) {
      // The operator's kernel needs only its output's shape: where the model
      // states it (or ONNX's inference knew it), that is the shape, and the
      // values the rule wanted stay the kernel's to read. Else the values
      // become data symbols (infer_run_time_dims), when they can.
      auto known = known_output_dims(0);
      if (known && n.outputs.size() == 1 && n.traits().sized_by_output()) d0 = *known;
      else if (need.readable) throw;
      else fail(need.message);
    }
    bool none = n.traits().dims == OpDims::None;
    if (!none) symbolic_values(n.traits().op);
    for (size_t o = 0; o < n.outputs.size(); o++) {
      int v = n.outputs[o];
      if (v < 0) continue;
      graph::Value& out = g_.values[(size_t)v];
      graph::Shape onnx = out.shape;  // rank, -1 where ONNX's inference did not know
      DimExprs d;
      if (extra.count(o)) d = extra[o];
      else if (o == 0 && !none) d = d0;
      if (unknown_rank_.count(v)) {
        if (d.empty() && none) fail("ONNX's shape inference could not give output '" + out.name + "' a shape");
        onnx.assign(d.size(), -1);
      }
      if (!d.empty() || extra.count(o) || (o == 0 && !none)) {
      } else {
        for (int64_t x : onnx) {
          if (x < 0) fail("ONNX's shape inference could not give output '" + out.name + "' a shape");
          d.push_back(Expr(x));
        }
      }
      // A model output's known dimensions may be the model's declaration
      // (declared_shapes.h): where ours are static and differ, ours win.
      bool declared = std::count(g_.outputs.begin(), g_.outputs.end(), v) > 0;
      if (declared && static_mismatch(d, onnx)) {  // (a scalar has no dims: rank 0)
        user_warning << "model output '" << out.name << "' is declared " << graph::shape_str(onnx) << " but is "
                     << graph::dims_str(d) << "; kilnc uses the shape it inferred";
        onnx.assign(d.size(), -1);
      }
      if (d.size() != onnx.size())
        internal_error << n.describe() << ": output '" << out.name << "' has rank " << d.size() << " here but "
                       << onnx.size() << " in ONNX's shape inference";
      for (size_t k = 0; k < d.size(); k++) {
        d[k] = simp(d[k]);
        if (onnx[k] < 0) continue;
        // ONNX knew this dimension: ours must agree (a constraint when only the run can tell).
        if (auto c = const_of(d[k])) {
          internal_assert(*c == onnx[k]) << n.describe() << ": output '" << out.name << "' dimension " << k << " is "
                                         << *c << " here but " << onnx[k] << " in ONNX's shape inference";
        } else {
          require_equal(d[k], Expr(onnx[k]), "dimension " + std::to_string(k) + " of '" + out.name + "'");
          // A size a kernel computes stays its symbol: the buffer is planned
          // at the symbol's bound, and the kernel writes what it counted
          // before the runtime can check the constraint.
          if (!uses_data_symbol(d[k])) d[k] = Expr(onnx[k]);
        }
      }
      for (auto& e : d) {
        tir::Interval r = tir::bounds_of(e);
        if (r.min < 0) require(e >= Expr(0), "dimension " + tir::to_string(e) + " of '" + out.name + "' must not be negative");
        // (A dimension over an unbounded symbol may have none: its value is sized per run.)
        if (r.max == std::numeric_limits<int64_t>::max() && !uses_unbounded_symbol(e))
          fail("dimension " + tir::to_string(e) + " of '" + out.name + "' has no bound");
      }
      g_.set_dims(v, d);
    }
  }

  // Nodes whose every output is a known small value computed only from
  // shapes (Shape, Gather, Concat, ... of run-time dimensions) are no longer
  // needed: their outputs become constants, or symbolic constants (read by
  // the kernels that need them, graph::Value::sym), and the nodes go.
  void drop_shape_computations() {
    std::vector<bool> drop(g_.nodes.size(), false);
    std::set<int> graph_outputs(g_.outputs.begin(), g_.outputs.end());
    for (size_t ni = 0; ni < g_.nodes.size(); ni++) {
      const Node& n = g_.nodes[ni];
      bool all = !n.outputs.empty() && !n.traits().nondeterministic();
      for (int v : n.outputs) all = all && v >= 0 && sym_.count(v) && !graph_outputs.count(v);
      if (!all) continue;
      drop[ni] = true;
      for (int v : n.outputs) {
        graph::Value& out = g_.values[(size_t)v];
        const std::vector<Expr>& elems = sym_[v];
        bool constant = true;
        for (auto& e : elems) constant = constant && const_of(e).has_value();
        out.producer = -1;
        if (!constant) {
          out.sym = elems;
          continue;
        }
        size_t width = graph::dtype_size(out.dtype);
        std::vector<uint8_t> bytes(elems.size() * width);
        for (size_t k = 0; k < elems.size(); k++) {
          int64_t c = *const_of(elems[k]);
          float f = (float)c;
          double d = (double)c;
          if (out.dtype == graph::DType::F32) std::memcpy(bytes.data() + k * 4, &f, 4);
          else if (out.dtype == graph::DType::F64) std::memcpy(bytes.data() + k * 8, &d, 8);
          else std::memcpy(bytes.data() + k * width, &c, width);  // little-endian: the low bytes
        }
        out.data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
      }
    }
    std::vector<Node> kept;
    std::vector<int> new_index(g_.nodes.size(), -1);
    for (size_t ni = 0; ni < g_.nodes.size(); ni++)
      if (!drop[ni]) {
        new_index[ni] = (int)kept.size();
        kept.push_back(std::move(g_.nodes[ni]));
      }
    g_.nodes = std::move(kept);
    for (auto& v : g_.values)
      if (v.producer >= 0) v.producer = new_index[(size_t)v.producer];
  }
};

}  // namespace

// Value `v` read through a kiln.InputValue node (inserted right after its
// producer, or first for a model input) by every node after it: each element
// a data symbol in [0, kMaxRunTimeDim], unbounded (graph::Symbol::unbounded:
// what it sizes is allocated once the copy ran).
void read_value_at_run_time(graph::Graph& g, int v) {
  graph::Value copy = g.values[(size_t)v];
  copy.name = g.unique_name(copy.name + ".value");
  copy.producer = -1;
  copy.sym.clear();
  int c = g.add_value(std::move(copy));
  graph::Node node;
  node.op = "kiln.InputValue";
  node.name = g.values[(size_t)c].name;
  node.inputs = {v};
  node.outputs = {c};
  for (auto& [attr, x] : {std::make_pair("lo", int64_t(0)), std::make_pair("hi", graph::kMaxRunTimeDim),
                          std::make_pair("unbounded", int64_t(1))}) {
    graph::Attr a;
    a.i = x;
    node.attrs[attr] = a;
  }
  const int producer = g.values[(size_t)v].producer;
  if (producer >= 0) node.guards = g.nodes[(size_t)producer].guards;  // runs when its source does
  const size_t at = (size_t)(producer + 1);
  for (size_t ni = at; ni < g.nodes.size(); ni++)
    for (int& in : g.nodes[ni].inputs)
      if (in == v) in = c;
  g.nodes.insert(g.nodes.begin() + (std::ptrdiff_t)at, std::move(node));
  for (auto& value : g.values)
    if (value.producer >= (int)at) value.producer++;
  g.values[(size_t)c].producer = (int)at;
}

void infer_run_time_dims(graph::Graph& g, const std::set<int>& unknown_rank) {
  graph::Graph start = g;  // where inference starts again after read_value_at_run_time
  for (size_t round = 0;; round++) {
    try {
      DimInference(g, unknown_rank).run();
      return;
    } catch (const NeedsValueSymbols& need) {
      internal_assert(need.readable) << need.message;  // (infer_node refused the others, naming the node)
      internal_assert(round < kMaxSymbols) << "value symbols: no progress";
      g = start;
      read_value_at_run_time(g, need.value);
      start = g;
    }
  }
}

}  // namespace kiln
