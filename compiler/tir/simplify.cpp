#include "tir/simplify.h"

#include <cmath>
#include <limits>
#include <map>

#include "tir/inplace.h"
#include "tir/ir_visitor.h"

namespace kiln::tir {
namespace {

constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

Interval unbounded() { return {kNegInf, kPosInf}; }

class Simplifier : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  std::map<const ExprNode*, Interval> var_bounds_;
  std::map<const ExprNode*, Expr> var_extent_;  // loop variables from 0 below a run-time extent

  // Whether `a` is a loop variable counting from 0 to below `b` (a run-time extent).
  bool below_extent(const Expr& a, const Expr& b) const {
    auto it = a.as<Var>() ? var_extent_.find(a.get()) : var_extent_.end();
    return it != var_extent_.end() && equal(it->second, b);
  }

  Interval bounds(const Expr& e) {
    if (!e.type().is_int()) return unbounded();
    if (auto c = as_const_int(e)) return {*c, *c};
    if (auto v = e.as<Var>()) {
      if (v->symbol >= 0) return {v->lo, v->hi};
      auto it = var_bounds_.find(v);
      return it == var_bounds_.end() ? unbounded() : it->second;
    }
    if (auto op = e.as<Add>()) {
      Interval a = bounds(op->a), b = bounds(op->b);
      Interval r = unbounded();
      if (a.min != kNegInf && b.min != kNegInf && !add_ok(a.min, b.min, &r.min)) r.min = kNegInf;
      if (a.max != kPosInf && b.max != kPosInf && !add_ok(a.max, b.max, &r.max)) r.max = kPosInf;
      if (a.min == kNegInf || b.min == kNegInf) r.min = kNegInf;
      if (a.max == kPosInf || b.max == kPosInf) r.max = kPosInf;
      return r;
    }
    if (auto op = e.as<Sub>()) {
      Interval a = bounds(op->a), b = bounds(op->b);
      Interval r = unbounded();
      if (a.min != kNegInf && b.max != kPosInf && __builtin_sub_overflow(a.min, b.max, &r.min)) r.min = kNegInf;
      if (a.max != kPosInf && b.min != kNegInf && __builtin_sub_overflow(a.max, b.min, &r.max)) r.max = kPosInf;
      if (a.min == kNegInf || b.max == kPosInf) r.min = kNegInf;
      if (a.max == kPosInf || b.min == kNegInf) r.max = kPosInf;
      return r;
    }
    if (auto op = e.as<Mul>()) {
      Interval a = bounds(op->a), b = bounds(op->b);
      int64_t lo = 0, hi = 0;
      if (a.min >= 0 && b.min >= 0 &&
          (a.max == kPosInf || b.max == kPosInf || __builtin_mul_overflow(a.max, b.max, &hi))) {  // sizes, no bound
        return {__builtin_mul_overflow(a.min, b.min, &lo) ? 0 : lo, kPosInf};
      }
      if (a.min == kNegInf || a.max == kPosInf || b.min == kNegInf || b.max == kPosInf) return unbounded();
      int64_t p[4];
      if (__builtin_mul_overflow(a.min, b.min, &p[0]) || __builtin_mul_overflow(a.min, b.max, &p[1]) ||
          __builtin_mul_overflow(a.max, b.min, &p[2]) || __builtin_mul_overflow(a.max, b.max, &p[3]))
        return unbounded();
      return {std::min(std::min(p[0], p[1]), std::min(p[2], p[3])), std::max(std::max(p[0], p[1]), std::max(p[2], p[3]))};
    }
    if (auto op = e.as<Div>()) {
      auto c = as_const_int(op->b);
      Interval a = bounds(op->a);
      if (!c) {  // a divisor known to be positive (a shape): the quotient of a non-negative range
        Interval d = bounds(op->b);
        if (d.min <= 0 || a.min < 0 || a.max == kPosInf) return unbounded();
        return {d.max == kPosInf ? 0 : a.min / d.max, a.max / d.min};
      }
      if (*c <= 0) return unbounded();
      return {a.min == kNegInf ? kNegInf : floor_div(a.min, *c), a.max == kPosInf ? kPosInf : floor_div(a.max, *c)};
    }
    if (auto op = e.as<Mod>()) {
      auto c = as_const_int(op->b);
      if (!c || *c <= 0) return unbounded();
      return {0, *c - 1};
    }
    if (auto op = e.as<Min>()) {
      Interval a = bounds(op->a), b = bounds(op->b);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    if (auto op = e.as<Max>()) {
      Interval a = bounds(op->a), b = bounds(op->b);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    if (auto op = e.as<Select>()) {
      Interval a = bounds(op->true_value), b = bounds(op->false_value);
      return {std::min(a.min, b.min), std::max(a.max, b.max)};
    }
    return unbounded();
  }

  static Expr const_bool(bool v) { return IntImm::make(Bool(), v); }
  static bool is_const(const Expr& e, int64_t v) {
    auto c = as_const_int(e);
    return c && *c == v;
  }

  // (x / c) * c + x % c (either order) -> x, else undefined.
  // (The divisor may also be a run-time extent: an expression over shape
  // symbols that is at least 1, the same in all three places.)
  Expr recombine(const Expr& a, const Expr& b) {
    for (int side = 0; side < 2; side++) {
      const Expr& p = side ? b : a;
      const Expr& q = side ? a : b;
      auto mul = p.as<Mul>();
      auto mod = q.as<Mod>();
      if (mul && mod && mul->a.as<Div>()) {
        auto div = mul->a.as<Div>();
        auto c1 = as_const_int(mul->b), c2 = as_const_int(div->b), c3 = as_const_int(mod->b);
        if (c1 && c2 && c3 && *c1 == *c2 && *c2 == *c3 && *c1 > 0 && tir::equal(div->a, mod->a)) return div->a;
        if (!c1 && only_symbols(mul->b) && tir::equal(mul->b, div->b) && tir::equal(mul->b, mod->b) &&
            bounds(mul->b).min >= 1 && tir::equal(div->a, mod->a))
          return div->a;
      }
    }
    return Expr();
  }


  Expr visit(const Add* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    int64_t r;
    if (ca && cb && a.type().is_int() && add_ok(*ca, *cb, &r)) return IntImm::make(a.type(), r);
    if (auto fa = a.as<FloatImm>(), fb = b.as<FloatImm>(); fa && fb) return FloatImm::make(a.type(), fa->value + fb->value);
    if (ca && !cb) std::swap(a, b), std::swap(ca, cb);  // constant to the right
    if (cb && *cb == 0 && !a.type().is_float()) return a;
    // (x / c) * c + x % c -> x (floor semantics: exact), in either order;
    // it undoes a fuse's decomposition of a fused index. Also inside a sum:
    // (w + (x / c) * c) + x % c -> w + x.
    if (a.type().is_int())
      if (auto inner = a.as<Add>()) {
        Expr merged = recombine(inner->b, b);
        if (merged.defined()) return mutate(inner->a + merged);
      }
    if (a.type().is_int()) {
      Expr merged = recombine(a, b);
      if (merged.defined()) return merged;
    }
    // (x + c1) + c2 -> x + (c1 + c2)
    if (auto inner = a.as<Add>(); inner && cb && a.type().is_int()) {
      if (auto c1 = as_const_int(inner->b); c1 && add_ok(*c1, *cb, &r)) return mutate(inner->a + IntImm::make(a.type(), r));
    }
    return a.same_as(op->a) && b.same_as(op->b) ? self : Add::make(a, b);
  }
  Expr visit(const Sub* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    int64_t r;
    if (ca && cb && a.type().is_int() && !__builtin_sub_overflow(*ca, *cb, &r)) return IntImm::make(a.type(), r);
    if (auto fa = a.as<FloatImm>(), fb = b.as<FloatImm>(); fa && fb) return FloatImm::make(a.type(), fa->value - fb->value);
    if (cb && *cb == 0 && !a.type().is_float()) return a;
    if (a.same_as(b) && a.type().is_int()) return IntImm::make(a.type(), 0);
    if (cb && a.type().is_int() && *cb != kNegInf) return mutate(a + IntImm::make(a.type(), -*cb));
    return a.same_as(op->a) && b.same_as(op->b) ? self : Sub::make(a, b);
  }
  Expr visit(const Mul* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    int64_t r;
    if (ca && cb && a.type().is_int() && !__builtin_mul_overflow(*ca, *cb, &r)) return IntImm::make(a.type(), r);
    if (auto fa = a.as<FloatImm>(), fb = b.as<FloatImm>(); fa && fb) return FloatImm::make(a.type(), fa->value * fb->value);
    if (ca && !cb) std::swap(a, b), std::swap(ca, cb);
    if (cb && *cb == 1 && !a.type().is_float()) return a;
    if (cb && *cb == 0 && a.type().is_int()) return b;
    // (x + y) * c -> x * c + y * c: index expressions become linear sums
    // (also by a run-time extent, so that a fused index's (f / W) * W + f % W recombines).
    if (auto sum = a.as<Add>(); sum && a.type().is_int() && (cb || (!as_const_int(b) && only_symbols(b))))
      return mutate(sum->a * b + sum->b * b);
    // (x * c1) * c2 -> x * (c1 * c2)
    int64_t prod;
    if (auto m = a.as<Mul>(); m && cb && a.type().is_int())
      if (auto c1 = as_const_int(m->b); c1 && !__builtin_mul_overflow(*c1, *cb, &prod)) return mutate(m->a * IntImm::make(a.type(), prod));
    return a.same_as(op->a) && b.same_as(op->b) ? self : Mul::make(a, b);
  }
  // (x * c + y) / c -> x + y / c and (x * c + y) % c -> y % c: exact for
  // floor division, and they undo a split's recombination.
  static bool split_multiple(const Expr& a, int64_t c, Expr* x, Expr* y) {
    auto add = a.as<Add>();
    if (!add) return false;
    for (int side = 0; side < 2; side++) {
      const Expr& m = side ? add->b : add->a;
      const Expr& rest = side ? add->a : add->b;
      auto mul = m.as<Mul>();
      if (mul && as_const_int(mul->b) && *as_const_int(mul->b) == c) {
        *x = mul->a;
        *y = rest;
        return true;
      }
    }
    return false;
  }

  // e / c when e is a multiple of c by its form (a constant multiple, a
  // product with such a factor, a sum or difference of such), else undefined.
  static Expr exact_quotient(const Expr& e, int64_t c, int depth = 0) {
    if (depth > 16) return Expr();
    if (auto k = as_const_int(e)) return *k % c == 0 ? IntImm::make(e.type(), *k / c) : Expr();
    if (auto m = e.as<Mul>()) {
      if (Expr q = exact_quotient(m->b, c, depth + 1); q.defined()) return m->a * q;
      if (Expr q = exact_quotient(m->a, c, depth + 1); q.defined()) return q * m->b;
      return Expr();
    }
    if (auto s = e.as<Add>()) {
      Expr qa = exact_quotient(s->a, c, depth + 1);
      Expr qb = qa.defined() ? exact_quotient(s->b, c, depth + 1) : Expr();
      return qb.defined() ? qa + qb : Expr();
    }
    if (auto s = e.as<Sub>()) {
      Expr qa = exact_quotient(s->a, c, depth + 1);
      Expr qb = qa.defined() ? exact_quotient(s->b, c, depth + 1) : Expr();
      return qb.defined() ? qa - qb : Expr();
    }
    return Expr();
  }

  // a = m + y (either order) with m a multiple of c by its form: *q = m / c,
  // *rest = y.
  static bool split_exact(const Expr& a, int64_t c, Expr* q, Expr* rest) {
    auto add = a.as<Add>();
    if (!add) return false;
    for (int side = 0; side < 2; side++) {
      Expr m = exact_quotient(side ? add->b : add->a, c);
      if (!m.defined()) continue;
      *q = m;
      *rest = side ? add->a : add->b;
      return true;
    }
    return false;
  }

  Expr visit(const Div* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    Expr sx, sy;
    if (a.type().is_int() && cb && *cb > 0 && split_multiple(a, *cb, &sx, &sy)) return mutate(sx + sy / b);
    // (m + y) / c -> m / c + y / c for a multiple m of c (exact for floor
    // division): the sums of strided sizes a detection head concatenates.
    // Shape expressions only (symbols and constants): kernels keep their
    // index arithmetic as it was.
    if (a.type().is_int() && cb && *cb > 1 && !ca && only_symbols(a)) {
      if (Expr q = exact_quotient(a, *cb); q.defined()) return mutate(q);
      if (split_exact(a, *cb, &sx, &sy)) return mutate(sx + sy / b);
    }
    if (a.type().is_int() && cb && *cb != 0) {
      if (ca && !(*ca == kNegInf && *cb == -1)) return IntImm::make(a.type(), floor_div(*ca, *cb));
      if (*cb == 1) return a;
      Interval ia = bounds(a);
      if (*cb > 0 && ia.min >= 0 && ia.max < *cb) return IntImm::make(a.type(), 0);
    }
    if (a.type().is_int() && below_extent(a, b)) return IntImm::make(a.type(), 0);
    // (x * y) / x -> y for a positive x (a run-time extent): exact. A
    // reshape's -1 over run-time dimensions is such a quotient.
    if (auto m = a.as<Mul>(); m && a.type().is_int() && !cb && bounds(b).min > 0) {
      if (equal(m->a, b)) return m->b;
      if (equal(m->b, b)) return m->a;
    }
    return a.same_as(op->a) && b.same_as(op->b) ? self : Div::make(a, b);
  }
  Expr visit(const Mod* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    Expr sx, sy;
    if (a.type().is_int() && cb && *cb > 0 && split_multiple(a, *cb, &sx, &sy)) return mutate(sy % b);
    // (m + y) % c -> y % c, m % c -> 0 for a multiple m of c (shape expressions, as Div).
    if (a.type().is_int() && cb && *cb > 1 && !ca && only_symbols(a)) {
      if (exact_quotient(a, *cb).defined()) return IntImm::make(a.type(), 0);
      if (split_exact(a, *cb, &sx, &sy)) return mutate(sy % b);
    }
    if (a.type().is_int() && cb && *cb != 0) {
      if (ca && !(*ca == kNegInf && *cb == -1)) return IntImm::make(a.type(), floor_mod(*ca, *cb));
      if (*cb == 1) return IntImm::make(a.type(), 0);
      Interval ia = bounds(a);
      if (*cb > 0 && ia.min >= 0 && ia.max < *cb) return a;
    }
    if (a.type().is_int() && below_extent(a, b)) return a;
    return a.same_as(op->a) && b.same_as(op->b) ? self : Mod::make(a, b);
  }
  // A float holding an integer (or NaN) by construction: rounded, integer
  // constants and conversions from narrow integers, and sums, products,
  // selections and clamps of those.
  static bool integral_float(const Expr& e) {
    if (!e.type().is_float()) return false;
    if (auto f = e.as<FloatImm>()) return f->value == (double)(int64_t)f->value;
    if (auto c = e.as<Call>())
      return c->op == Intrinsic::RoundEven || c->op == Intrinsic::Floor || c->op == Intrinsic::Ceil;
    if (auto c = e.as<Cast>()) return !c->value.type().is_float() && c->value.type().bits <= 16;
    if (auto o = e.as<Add>()) return integral_float(o->a) && integral_float(o->b);
    if (auto o = e.as<Sub>()) return integral_float(o->a) && integral_float(o->b);
    if (auto o = e.as<Mul>()) return integral_float(o->a) && integral_float(o->b);
    if (auto o = e.as<Min>()) return integral_float(o->a) && integral_float(o->b);
    if (auto o = e.as<Max>()) return integral_float(o->a) && integral_float(o->b);
    if (auto o = e.as<Select>()) return integral_float(o->true_value) && integral_float(o->false_value);
    return false;
  }
  // float(int8/uint8/int16(v)) = v when v is a float clamp of an integer
  // into the narrow type's range (a QuantizeLinear read back by a
  // DequantizeLinear): the two conversions are dropped. A clamp is
  // max(min(x, hi), lo) with constant bounds; it leaves no NaN.
  Expr visit(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (auto inner = v.as<Cast>(); inner && op->type.is_float() && !v.type().is_float() && v.type().bits <= 16 &&
                                    inner->value.type() == op->type) {
      const Expr& x = inner->value;
      auto mx = x.as<Max>();
      auto mn = mx ? mx->a.as<Min>() : nullptr;
      auto lo = mx ? mx->b.as<FloatImm>() : nullptr;
      auto hi = mn ? mn->b.as<FloatImm>() : nullptr;
      Type t = v.type();
      double tmin = t.is_uint() ? 0 : -std::ldexp(1.0, t.bits - 1), tmax = t.is_uint() ? std::ldexp(1.0, t.bits) - 1
                                                                                       : std::ldexp(1.0, t.bits - 1) - 1;
      if (lo && hi && lo->value >= tmin && hi->value <= tmax && integral_float(mn->a)) return x;
    }
    return v.same_as(op->value) ? self : Cast::make(op->type, v);
  }
  Expr visit(const Min* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().is_int()) {
      Interval ia = bounds(a), ib = bounds(b);
      if (ia.max <= ib.min) return a;
      if (ib.max <= ia.min) return b;
    }
    if (auto fa = a.as<FloatImm>(), fb = b.as<FloatImm>(); fa && fb) return fa->value <= fb->value ? a : b;
    return a.same_as(op->a) && b.same_as(op->b) ? self : Min::make(a, b);
  }
  Expr visit(const Max* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().is_int()) {
      Interval ia = bounds(a), ib = bounds(b);
      if (ia.min >= ib.max) return a;
      if (ib.min >= ia.max) return b;
    }
    if (auto fa = a.as<FloatImm>(), fb = b.as<FloatImm>(); fa && fb) return fa->value >= fb->value ? a : b;
    return a.same_as(op->a) && b.same_as(op->b) ? self : Max::make(a, b);
  }
  Expr visit(const LT* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().is_int()) {
      Interval ia = bounds(a), ib = bounds(b);
      if (ia.max < ib.min) return const_bool(true);
      if (ia.min >= ib.max) return const_bool(false);
    }
    return a.same_as(op->a) && b.same_as(op->b) ? self : LT::make(a, b);
  }
  Expr visit(const LE* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().is_int()) {
      Interval ia = bounds(a), ib = bounds(b);
      if (ia.max <= ib.min) return const_bool(true);
      if (ia.min > ib.max) return const_bool(false);
    }
    return a.same_as(op->a) && b.same_as(op->b) ? self : LE::make(a, b);
  }
  Expr visit(const EQ* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca && cb) return const_bool(*ca == *cb);
    return a.same_as(op->a) && b.same_as(op->b) ? self : EQ::make(a, b);
  }
  Expr visit(const NE* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca && cb) return const_bool(*ca != *cb);
    return a.same_as(op->a) && b.same_as(op->b) ? self : NE::make(a, b);
  }
  Expr visit(const And* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_const(a, 0) || is_const(b, 0)) return const_bool(false);
    if (is_const(a, 1)) return b;
    if (is_const(b, 1)) return a;
    return a.same_as(op->a) && b.same_as(op->b) ? self : And::make(a, b);
  }
  Expr visit(const Or* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_const(a, 1) || is_const(b, 1)) return const_bool(true);
    if (is_const(a, 0)) return b;
    if (is_const(b, 0)) return a;
    return a.same_as(op->a) && b.same_as(op->b) ? self : Or::make(a, b);
  }
  Expr visit(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (auto c = as_const_int(a)) return const_bool(!*c);
    return a.same_as(op->a) ? self : Not::make(a);
  }
  Expr visit(const Select* op, const Expr& self) override {
    Expr c = mutate(op->cond);
    if (auto k = as_const_int(c)) return mutate(*k ? op->true_value : op->false_value);
    Expr t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return Select::make(c, t, f);
  }
  Expr visit(const Let* op, const Expr& self) override {
    Expr v = mutate(op->value);
    var_bounds_[op->var.get()] = bounds(v);
    Expr b = mutate(op->body);
    var_bounds_.erase(op->var.get());
    return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
  }

  Stmt visit(const LetStmt* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (as_const_int(v) || v.as<Var>()) return mutate(substitute(op->body, {{op->var, v}}));
    var_bounds_[op->var.get()] = bounds(v);
    Stmt b = mutate(op->body);
    var_bounds_.erase(op->var.get());
    return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
  }
  Stmt visit(const For* op, const Stmt& self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    auto cmin = as_const_int(mn), cext = as_const_int(ext);
    if (cext && *cext <= 0) return Block::make({});
    bool is_workgroup = op->kind == ForKind::WorkgroupX || op->kind == ForKind::WorkgroupY || op->kind == ForKind::WorkgroupZ;
    if (cext && *cext == 1 && !is_workgroup) return mutate(substitute(op->body, {{op->var, mn}}));
    Interval range = unbounded();
    int64_t last;
    if (cmin && cext && add_ok(*cmin, *cext - 1, &last)) range = {*cmin, last};
    // A run-time extent (shape symbols): the variable stays below its largest value.
    Interval iext = bounds(ext);
    if (cmin && !cext && iext.max != kPosInf && add_ok(*cmin, iext.max - 1, &last)) range = {*cmin, last};
    if (!cext && iext.max != kPosInf && iext.max <= 0) return Block::make({});
    var_bounds_[op->var.get()] = range;
    if (cmin && *cmin == 0 && !cext) var_extent_[op->var.get()] = ext;
    Stmt b = mutate(op->body);
    var_bounds_.erase(op->var.get());
    var_extent_.erase(op->var.get());
    if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self;
    return For::make(op->var, mn, ext, op->kind, b);
  }
  Stmt visit(const IfThenElse* op, const Stmt& self) override {
    Expr c = mutate(op->cond);
    if (auto k = as_const_int(c)) {
      if (*k) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : Block::make({});
    }
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    return IfThenElse::make(c, t, e);
  }
};

}  // namespace

Stmt simplify(const Stmt& s) { return Simplifier().mutate(s); }
Expr simplify(const Expr& e) { return Simplifier().mutate(e); }

Interval bounds_of(const Expr& e) {
  struct Bounds : Simplifier {
    Interval of(const Expr& x) { return bounds(x); }
  } b;
  return b.of(simplify(e));
}

bool provably_equal(const Expr& a, const Expr& b) {
  Expr x = simplify(a), y = simplify(b);
  if (equal(x, y)) return true;
  Expr d = simplify(x - y);  // held: as_const_int points into it
  const int64_t* c = as_const_int(d);
  return c && *c == 0;
}

}  // namespace kiln::tir
