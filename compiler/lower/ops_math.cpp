// Elementwise math beyond the basic activations: more unary functions,
// comparisons and logic (bool results), Pow, Mod, PRelu, Where, the variadic
// Min/Max/Sum/Mean, Cast, and integer Div (truncating, as ONNX specifies).
//
// Bool tensors are stored as one byte; reads convert to Bool with != 0 and
// results are converted back when stored (OpContext handles the store).
#include <cmath>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

using tir::Intrinsic;

Expr call(Intrinsic op, const Expr& x) { return tir::Call::make(op, {x}); }
Expr k(const Expr& like, double v) { return tir::make_const(like.type(), v); }
bool is_float(graph::DType t) { return t == graph::DType::F32 || t == graph::DType::F64 || t == graph::DType::F16; }
bool is_bool(graph::DType t) { return t == graph::DType::Bool; }

// Reads input i at a broadcast index, with bools as Bool.
Expr read(const te::Tensor& t, graph::DType dt, const Indices& out_idx) {
  Expr v = t(broadcast_index(t.shape(), out_idx));
  return is_bool(dt) ? tir::cast(tir::Bool(), v) : v;
}

// out = f(inputs...) with numpy broadcasting over all inputs.
void lower_nary(OpContext& ctx, const std::function<Expr(const std::vector<Expr>&)>& f) {
  const graph::Node& n = ctx.node();
  std::vector<te::Tensor> ins;
  std::vector<graph::DType> dts;
  for (size_t i = 0; i < n.inputs.size(); i++) {
    if (!ctx.has_input(i)) continue;
    ins.push_back(ctx.in(i));
    dts.push_back(ctx.in_dtype(i));
  }
  ctx.set_output(0, te::compute(n.op, ctx.out_shape(0), [=](const Indices& idx) {
    std::vector<Expr> v;
    for (size_t i = 0; i < ins.size(); i++) v.push_back(read(ins[i], dts[i], idx));
    return f(v);
  }));
}

void require(OpContext& ctx, bool ok, const char* what) {
  user_assert(ok) << ctx.node().describe() << ": element type " << graph::dtype_name(ctx.in_dtype(0))
                  << " is not supported (" << what << ")";
}

void unary_float(std::map<std::string, OpLowering>& r, const char* op, std::function<Expr(const graph::Node&, Expr)> f) {
  r[op] = [f](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float types only");
    const graph::Node& n = c.node();
    lower_nary(c, [f, &n](const std::vector<Expr>& v) { return f(n, v[0]); });
  };
}

void compare(std::map<std::string, OpLowering>& r, const char* op, Expr (*f)(Expr, Expr)) {
  r[op] = [f](OpContext& c) {
    require(c, !is_bool(c.in_dtype(0)) || std::string(c.node().op) == "Equal", "comparison of bools");
    lower_nary(c, [f](const std::vector<Expr>& v) { return f(v[0], v[1]); });
  };
}

void logic(std::map<std::string, OpLowering>& r, const char* op, Expr (*f)(Expr, Expr)) {
  r[op] = [f](OpContext& c) {
    require(c, is_bool(c.in_dtype(0)), "bool only");
    lower_nary(c, [f](const std::vector<Expr>& v) { return f(v[0], v[1]); });
  };
}

// Truncating integer division built from the IR's floor division.
Expr trunc_div(const Expr& a, const Expr& b) {
  Expr q = a / b, m = a % b;
  Expr zero = k(a, 0);
  Expr fix = tir::NE::make(m, zero) && tir::NE::make(a < zero, b < zero);
  return tir::select(fix, q + k(a, 1), q);
}

}  // namespace

void register_math_ops(std::map<std::string, OpLowering>& r) {
  unary_float(r, "Tanh", [](const graph::Node&, Expr x) { return call(Intrinsic::Tanh, x); });
  unary_float(r, "Log", [](const graph::Node&, Expr x) { return call(Intrinsic::Log, x); });
  unary_float(r, "Erf", [](const graph::Node&, Expr x) { return call(Intrinsic::Erf, x); });
  unary_float(r, "Sin", [](const graph::Node&, Expr x) { return call(Intrinsic::Sin, x); });
  unary_float(r, "Cos", [](const graph::Node&, Expr x) { return call(Intrinsic::Cos, x); });
  unary_float(r, "Tan", [](const graph::Node&, Expr x) { return call(Intrinsic::Tan, x); });
  unary_float(r, "Asin", [](const graph::Node&, Expr x) { return call(Intrinsic::Asin, x); });
  unary_float(r, "Acos", [](const graph::Node&, Expr x) { return call(Intrinsic::Acos, x); });
  unary_float(r, "Atan", [](const graph::Node&, Expr x) { return call(Intrinsic::Atan, x); });
  unary_float(r, "Sinh", [](const graph::Node&, Expr x) {
    return (call(Intrinsic::Exp, x) - call(Intrinsic::Exp, k(x, 0) - x)) * k(x, 0.5);
  });
  unary_float(r, "Cosh", [](const graph::Node&, Expr x) {
    return (call(Intrinsic::Exp, x) + call(Intrinsic::Exp, k(x, 0) - x)) * k(x, 0.5);
  });
  unary_float(r, "Asinh", [](const graph::Node&, Expr x) {  // odd: computed on |x|
    Expr a = call(Intrinsic::Abs, x);
    Expr v = call(Intrinsic::Log, a + call(Intrinsic::Sqrt, a * a + k(x, 1)));
    return tir::select(x < k(x, 0), k(x, 0) - v, v);
  });
  unary_float(r, "Acosh", [](const graph::Node&, Expr x) {
    return call(Intrinsic::Log, x + call(Intrinsic::Sqrt, x * x - k(x, 1)));
  });
  unary_float(r, "Atanh", [](const graph::Node&, Expr x) {
    return call(Intrinsic::Log, (k(x, 1) + x) / (k(x, 1) - x)) * k(x, 0.5);
  });
  unary_float(r, "Softplus", [](const graph::Node&, Expr x) {
    // log(1 + exp(x)), stable for large x.
    return tir::select(x > k(x, 20), x, call(Intrinsic::Log, k(x, 1) + call(Intrinsic::Exp, x)));
  });
  unary_float(r, "Softsign", [](const graph::Node&, Expr x) { return x / (k(x, 1) + call(Intrinsic::Abs, x)); });
  unary_float(r, "Elu", [](const graph::Node& n, Expr x) {
    return tir::select(x < k(x, 0), k(x, n.attr_float("alpha", 1.0)) * (call(Intrinsic::Exp, x) - k(x, 1)), x);
  });
  unary_float(r, "Celu", [](const graph::Node& n, Expr x) {
    Expr a = k(x, n.attr_float("alpha", 1.0));
    return tir::max(x, k(x, 0)) + tir::min(k(x, 0), a * (call(Intrinsic::Exp, x / a) - k(x, 1)));
  });
  unary_float(r, "Selu", [](const graph::Node& n, Expr x) {
    Expr a = k(x, n.attr_float("alpha", 1.67326319217681884765625));
    Expr g = k(x, n.attr_float("gamma", 1.05070102214813232421875));
    return tir::select(x > k(x, 0), g * x, g * (a * call(Intrinsic::Exp, x) - a));
  });
  unary_float(r, "ThresholdedRelu", [](const graph::Node& n, Expr x) {
    return tir::select(x > k(x, n.attr_float("alpha", 1.0)), x, k(x, 0));
  });
  unary_float(r, "Mish", [](const graph::Node&, Expr x) {
    Expr sp = tir::select(x > k(x, 20), x, call(Intrinsic::Log, k(x, 1) + call(Intrinsic::Exp, x)));
    return x * call(Intrinsic::Tanh, sp);
  });
  r["Sign"] = [](OpContext& c) {
    require(c, !is_bool(c.in_dtype(0)), "numbers only");
    lower_nary(c, [](const std::vector<Expr>& v) {
      Expr x = v[0];
      return tir::select(x > k(x, 0), k(x, 1), tir::select(x < k(x, 0), k(x, -1), k(x, 0)));
    });
  };
  r["Not"] = [](OpContext& c) {
    require(c, is_bool(c.in_dtype(0)), "bool only");
    lower_nary(c, [](const std::vector<Expr>& v) { return !v[0]; });
  };
  r["IsNaN"] = [](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float types only");
    lower_nary(c, [](const std::vector<Expr>& v) { return tir::NE::make(v[0], v[0]); });
  };
  r["IsInf"] = [](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float types only");
    bool pos = c.node().attr_int("detect_positive", 1) != 0, neg = c.node().attr_int("detect_negative", 1) != 0;
    lower_nary(c, [pos, neg](const std::vector<Expr>& v) {
      Expr x = v[0];
      Expr p = pos ? tir::EQ::make(x, k(x, INFINITY)) : tir::IntImm::make(tir::Bool(), 0);
      Expr m = neg ? tir::EQ::make(x, k(x, -INFINITY)) : tir::IntImm::make(tir::Bool(), 0);
      return p || m;
    });
  };

  compare(r, "Equal", [](Expr a, Expr b) { return tir::EQ::make(a, b); });
  compare(r, "Less", [](Expr a, Expr b) { return a < b; });
  compare(r, "LessOrEqual", [](Expr a, Expr b) { return a <= b; });
  compare(r, "Greater", [](Expr a, Expr b) { return a > b; });
  compare(r, "GreaterOrEqual", [](Expr a, Expr b) { return a >= b; });
  logic(r, "And", [](Expr a, Expr b) { return a && b; });
  logic(r, "Or", [](Expr a, Expr b) { return a || b; });
  logic(r, "Xor", [](Expr a, Expr b) { return tir::NE::make(a, b); });

  r["Pow"] = [](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float base only");
    tir::Type t = graph::dtype_to_tir(c.in_dtype(0));
    lower_nary(c, [t](const std::vector<Expr>& v) {
      return tir::Call::make(Intrinsic::Pow, {v[0], tir::cast(t, v[1])});
    });
  };
  r["Mod"] = [](OpContext& c) {
    bool fmod = c.node().attr_int("fmod", 0) != 0;
    bool f = is_float(c.in_dtype(0));
    user_assert(!f || fmod) << c.node().describe() << ": float Mod needs fmod=1";
    lower_nary(c, [fmod, f](const std::vector<Expr>& v) {
      Expr a = v[0], b = v[1];
      if (f) {  // C fmod: a - trunc(a / b) * b
        Expr q = a / b;
        Expr tq = tir::select(q < k(q, 0), call(Intrinsic::Ceil, q), call(Intrinsic::Floor, q));
        return a - tq * b;
      }
      if (!fmod) return a % b;  // integer Mod: the sign of the divisor (floor semantics)
      return a - trunc_div(a, b) * b;
    });
  };
  r["PRelu"] = [](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float types only");
    te::Tensor x = c.in(0), slope = c.in(1);
    // Models converted from opset < 7 keep a 1-D per-channel slope that numpy
    // broadcasting would reject: broadcast it along axis 1 instead.
    bool channel = slope.ndim() == 1 && x.ndim() > 2 && slope.shape()[0] == x.shape()[1] &&
                   slope.shape()[0] != x.shape().back() && slope.shape()[0] != 1;
    c.set_output(0, te::compute("prelu", x.shape(), [=](const Indices& i) {
      Expr s = channel ? slope({i[1]}) : slope(broadcast_index(slope.shape(), i));
      return tir::select(x(i) < k(x(i), 0), x(i) * s, x(i));
    }));
  };
  r["Where"] = [](OpContext& c) {
    lower_nary(c, [](const std::vector<Expr>& v) { return tir::select(v[0], v[1], v[2]); });
  };
  r["Max"] = [](OpContext& c) {
    lower_nary(c, [](const std::vector<Expr>& v) {
      Expr m = v[0];
      for (size_t i = 1; i < v.size(); i++) m = tir::max(m, v[i]);
      return m;
    });
  };
  r["Min"] = [](OpContext& c) {
    lower_nary(c, [](const std::vector<Expr>& v) {
      Expr m = v[0];
      for (size_t i = 1; i < v.size(); i++) m = tir::min(m, v[i]);
      return m;
    });
  };
  r["Sum"] = [](OpContext& c) {
    lower_nary(c, [](const std::vector<Expr>& v) {
      Expr s = v[0];
      for (size_t i = 1; i < v.size(); i++) s = s + v[i];
      return s;
    });
  };
  r["Mean"] = [](OpContext& c) {
    require(c, is_float(c.in_dtype(0)), "float types only");
    lower_nary(c, [](const std::vector<Expr>& v) {
      Expr s = v[0];
      for (size_t i = 1; i < v.size(); i++) s = s + v[i];
      return s / k(s, (double)v.size());
    });
  };
  r["Cast"] = [](OpContext& c) {
    graph::DType to = c.value(c.output(0)).dtype;
    graph::DType from = c.in_dtype(0);
    tir::Type t = is_bool(to) ? tir::Bool() : graph::dtype_to_tir(to);
    lower_nary(c, [t, from](const std::vector<Expr>& v) {
      Expr x = v[0];
      if (is_bool(from) && !t.is_bool()) x = tir::cast(tir::UInt(8), x);
      return tir::cast(t, x);
    });
  };
}

// Integer Div (truncating) is registered by ops_elementwise's Div when the
// element type is an integer; exposed here for it.
Expr trunc_divide(const Expr& a, const Expr& b) { return trunc_div(a, b); }

}  // namespace kiln::lower
