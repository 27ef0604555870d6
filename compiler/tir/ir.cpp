// Constructors of the TIR nodes, with the type rules checked.
#include "tir/ir.h"

#include "support/diagnostics.h"

namespace kiln::tir {

std::string Type::str() const {
  switch (code) {
    case TypeCode::Int: return "i" + std::to_string(bits);
    case TypeCode::UInt: return "u" + std::to_string(bits);
    case TypeCode::Float: return "f" + std::to_string(bits);
    case TypeCode::Bool: return "bool";
  }
  return "?";
}

const char* node_type_name(NodeType t) {
  switch (t) {
#define KILN_X(n) \
  case NodeType::n: return #n;
    KILN_TIR_EXPR_NODES(KILN_X) KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
  }
  return "?";
}

const char* intrinsic_name(Intrinsic i) {
  switch (i) {
    case Intrinsic::Exp: return "exp";
    case Intrinsic::Log: return "log";
    case Intrinsic::Sqrt: return "sqrt";
    case Intrinsic::Abs: return "abs";
    case Intrinsic::Floor: return "floor";
    case Intrinsic::Ceil: return "ceil";
    case Intrinsic::RoundEven: return "round_even";
    case Intrinsic::Tanh: return "tanh";
    case Intrinsic::Erf: return "erf";
    case Intrinsic::Pow: return "pow";
    case Intrinsic::Sin: return "sin";
    case Intrinsic::Cos: return "cos";
    case Intrinsic::Tan: return "tan";
    case Intrinsic::Asin: return "asin";
    case Intrinsic::Acos: return "acos";
    case Intrinsic::Atan: return "atan";
    case Intrinsic::DotU8S8: return "dot_u8s8";
    case Intrinsic::DotS8S8: return "dot_s8s8";
    case Intrinsic::Bf16ToF32: return "bf16_to_f32";
    case Intrinsic::F32ToBf16: return "f32_to_bf16";
    case Intrinsic::FloatToBits: return "float_to_bits";
    case Intrinsic::BitsToFloat: return "bits_to_float";
  }
  return "?";
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "for";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::WorkgroupX: return "workgroup.x";
    case ForKind::WorkgroupY: return "workgroup.y";
    case ForKind::WorkgroupZ: return "workgroup.z";
    case ForKind::LocalX: return "local.x";
    case ForKind::LocalY: return "local.y";
    case ForKind::LocalZ: return "local.z";
  }
  return "?";
}

Expr::Expr(int v) : node(std::make_shared<IntImm>(Index(), v)) {}
Expr::Expr(int64_t v) : node(std::make_shared<IntImm>(Index(), v)) {}
Expr::Expr(float v) : node(std::make_shared<FloatImm>(Float(32), v)) {}
Type Expr::type() const {
  internal_assert(node) << "type of an undefined Expr";
  return node->type;
}

Buffer make_buffer(std::string name, Type dtype, int64_t size, int binding) {
  auto b = std::make_shared<BufferNode>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->size = size;
  b->binding = binding;
  return b;
}

Expr IntImm::make(Type t, int64_t v) {
  internal_assert(!t.is_float()) << "IntImm of float type";
  return Expr(std::make_shared<IntImm>(t, v));
}
Expr FloatImm::make(Type t, double v) {
  internal_assert(t.is_float()) << "FloatImm of type " << t.str();
  return Expr(std::make_shared<FloatImm>(t, v));
}
Expr Var::make(Type t, std::string name) { return Expr(std::make_shared<Var>(t, std::move(name))); }
Expr Var::make_symbol(std::string name, int symbol, int64_t lo, int64_t hi) {
  internal_assert(symbol >= 0 && lo <= hi) << "symbol " << name << " needs an index and lo <= hi";
  auto v = std::make_shared<Var>(Index(), std::move(name));
  v->symbol = symbol;
  v->lo = lo;
  v->hi = hi;
  return Expr(v);
}
bool is_symbol(const Expr& e) {
  auto v = e.as<Var>();
  return v && v->symbol >= 0;
}
Expr Cast::make(Type t, Expr v) {
  internal_assert(v.defined());
  if (v.type() == t) return v;
  return Expr(std::make_shared<Cast>(t, std::move(v)));
}

// Brings a constant operand to the other operand's type, so builders can
// write `x + 1` for any x.
static void match_types(Expr& a, Expr& b, const char* op) {
  internal_assert(a.defined() && b.defined()) << "undefined operand of " << op;
  if (a.type() == b.type()) return;
  if (as_const_int(b) || b.as<FloatImm>()) {
    b = make_const(a.type(), b.as<FloatImm>() ? b.as<FloatImm>()->value : (double)*as_const_int(b));
  } else if (as_const_int(a) || a.as<FloatImm>()) {
    a = make_const(b.type(), a.as<FloatImm>() ? a.as<FloatImm>()->value : (double)*as_const_int(a));
  } else {
    internal_error << "operands of " << op << " have types " << a.type().str() << " and " << b.type().str();
  }
}

#define KILN_TIR_ARITH_MAKE(N)                                           \
  Expr N::make(Expr a, Expr b) {                                         \
    match_types(a, b, #N);                                               \
    Type t = a.type();                                                   \
    return Expr(std::make_shared<N>(t, std::move(a), std::move(b)));     \
  }
KILN_TIR_ARITH_MAKE(Add)
KILN_TIR_ARITH_MAKE(Sub)
KILN_TIR_ARITH_MAKE(Mul)
KILN_TIR_ARITH_MAKE(Div)
KILN_TIR_ARITH_MAKE(Mod)
KILN_TIR_ARITH_MAKE(Min)
KILN_TIR_ARITH_MAKE(Max)
#undef KILN_TIR_ARITH_MAKE

#define KILN_TIR_CMP_MAKE(N)                                                  \
  Expr N::make(Expr a, Expr b) {                                              \
    match_types(a, b, #N);                                                    \
    return Expr(std::make_shared<N>(Bool(), std::move(a), std::move(b)));     \
  }
KILN_TIR_CMP_MAKE(EQ)
KILN_TIR_CMP_MAKE(NE)
KILN_TIR_CMP_MAKE(LT)
KILN_TIR_CMP_MAKE(LE)
#undef KILN_TIR_CMP_MAKE

Expr And::make(Expr a, Expr b) {
  internal_assert(a.type().is_bool() && b.type().is_bool()) << "And of non-bool";
  return Expr(std::make_shared<And>(Bool(), std::move(a), std::move(b)));
}
Expr Or::make(Expr a, Expr b) {
  internal_assert(a.type().is_bool() && b.type().is_bool()) << "Or of non-bool";
  return Expr(std::make_shared<Or>(Bool(), std::move(a), std::move(b)));
}
Expr Not::make(Expr a) {
  internal_assert(a.type().is_bool()) << "Not of non-bool";
  return Expr(std::make_shared<Not>(std::move(a)));
}
#define KILN_TIR_BITWISE_MAKE(N)                                                          \
  Expr N::make(Expr a, Expr b) {                                                          \
    match_types(a, b, #N);                                                                \
    Type t = a.type();                                                                    \
    internal_assert(t.is_int() || t.is_uint()) << #N " of " << t.str();                   \
    return Expr(std::make_shared<N>(t, std::move(a), std::move(b)));                      \
  }
KILN_TIR_BITWISE_MAKE(BitAnd)
KILN_TIR_BITWISE_MAKE(BitOr)
KILN_TIR_BITWISE_MAKE(BitXor)
#undef KILN_TIR_BITWISE_MAKE
Expr BitNot::make(Expr a) {
  internal_assert(a.defined() && (a.type().is_int() || a.type().is_uint())) << "BitNot of non-integer";
  return Expr(std::make_shared<BitNot>(std::move(a)));
}
Expr Select::make(Expr c, Expr t, Expr f) {
  internal_assert(c.type().is_bool()) << "Select condition is " << c.type().str();
  match_types(t, f, "Select");
  return Expr(std::make_shared<Select>(std::move(c), std::move(t), std::move(f)));
}
Expr Load::make(Buffer b, Expr index) {
  internal_assert(b && index.type() == Index()) << "Load index must be i64";
  return Expr(std::make_shared<Load>(std::move(b), std::move(index)));
}
Expr Call::make(Intrinsic op, std::vector<Expr> args) {
  if (is_int8_dot(op)) {
    internal_assert(args.size() == 2 && args[0].type() == Int(32) && args[1].type() == Int(32))
        << "intrinsic " << intrinsic_name(op) << " takes two int32 words";
    return Expr(std::make_shared<Call>(Int(32), op, std::move(args)));
  }
  if (is_bf16_conversion(op)) {
    bool widen = op == Intrinsic::Bf16ToF32;
    internal_assert(args.size() == 1 && args[0].type() == (widen ? UInt(16) : Float(32)))
        << "intrinsic " << intrinsic_name(op) << " takes one " << (widen ? "uint16" : "float32");
    return Expr(std::make_shared<Call>(widen ? Float(32) : UInt(16), op, std::move(args)));
  }
  if (is_bit_cast(op)) {
    bool to_bits = op == Intrinsic::FloatToBits;
    Type t = args.size() == 1 ? args[0].type() : Type();
    internal_assert(args.size() == 1 && (to_bits ? t.is_float() : t.is_uint()) && (t.bits == 16 || t.bits == 32 || t.bits == 64))
        << "intrinsic " << intrinsic_name(op) << " takes one " << (to_bits ? "float" : "uint") << " of 16, 32 or 64 bits";
    return Expr(std::make_shared<Call>(to_bits ? UInt(t.bits) : Float(t.bits), op, std::move(args)));
  }
  internal_assert(!args.empty() && args[0].type().is_float()) << "intrinsic " << intrinsic_name(op) << " needs float args";
  Type t = args[0].type();
  for (auto& a : args) match_types(args[0], a, intrinsic_name(op));
  return Expr(std::make_shared<Call>(t, op, std::move(args)));
}
Expr Let::make(Expr var, Expr value, Expr body) {
  internal_assert(var.as<Var>() && var.type() == value.type()) << "bad Let";
  return Expr(std::make_shared<Let>(std::move(var), std::move(value), std::move(body)));
}

Expr ProducerLoad::make(std::shared_ptr<const Producer> p, std::vector<Expr> indices) {
  internal_assert(p) << "ProducerLoad of nothing";
  for (auto& i : indices) internal_assert(i.type() == Index()) << "index of " << p->name << " is not i64";
  return Expr(std::make_shared<ProducerLoad>(std::move(p), std::move(indices)));
}

Stmt LetStmt::make(Expr var, Expr value, Stmt body) {
  internal_assert(var.as<Var>() && var.type() == value.type()) << "bad LetStmt";
  return Stmt(std::make_shared<LetStmt>(std::move(var), std::move(value), std::move(body)));
}
Stmt For::make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body) {
  internal_assert(var.as<Var>() && var.type() == Index() && min.type() == Index() && extent.type() == Index())
      << "For needs i64 var, min and extent";
  return Stmt(std::make_shared<For>(std::move(var), std::move(min), std::move(extent), kind, std::move(body)));
}
Stmt Prefetch::make(Buffer b, Expr index) {
  internal_assert(b && index.type() == Index()) << "Prefetch index must be i64";
  return Stmt(std::make_shared<Prefetch>(std::move(b), std::move(index)));
}

Stmt Store::make(Buffer b, Expr index, Expr value) {
  internal_assert(b && index.type() == Index()) << "Store index must be i64";
  if (value.type() != b->dtype && (as_const_int(value) || value.as<FloatImm>()))
    value = make_const(b->dtype, value.as<FloatImm>() ? value.as<FloatImm>()->value : (double)*as_const_int(value));
  internal_assert(value.type() == b->dtype)
      << "Store of " << value.type().str() << " into " << b->name << " of " << b->dtype.str();
  return Stmt(std::make_shared<Store>(std::move(b), std::move(index), std::move(value)));
}
Stmt IfThenElse::make(Expr c, Stmt t, Stmt e) {
  internal_assert(c.type().is_bool() && t.defined()) << "bad IfThenElse";
  return Stmt(std::make_shared<IfThenElse>(std::move(c), std::move(t), std::move(e)));
}
Stmt Block::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s.defined()) continue;
    if (auto b = s.as<Block>()) {
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    } else {
      flat.push_back(s);
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<Block>(std::move(flat)));
}
Stmt Allocate::make(Buffer b, Stmt body, MemScope scope) {
  internal_assert(b && b->binding < 0 && b->size > 0) << "bad Allocate";
  return Stmt(std::make_shared<Allocate>(std::move(b), std::move(body), scope));
}

Stmt Barrier::make() { return Stmt(std::make_shared<Barrier>()); }

Expr operator+(Expr a, Expr b) { return Add::make(std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Sub::make(std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Mul::make(std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Div::make(std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return Mod::make(std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return LT::make(std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return LE::make(std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return LT::make(std::move(b), std::move(a)); }
Expr operator>=(Expr a, Expr b) { return LE::make(std::move(b), std::move(a)); }
Expr operator&&(Expr a, Expr b) { return And::make(std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return Or::make(std::move(a), std::move(b)); }
Expr operator!(Expr a) { return Not::make(std::move(a)); }
Expr operator&(Expr a, Expr b) { return BitAnd::make(std::move(a), std::move(b)); }
Expr operator|(Expr a, Expr b) { return BitOr::make(std::move(a), std::move(b)); }
Expr operator^(Expr a, Expr b) { return BitXor::make(std::move(a), std::move(b)); }
Expr operator~(Expr a) { return BitNot::make(std::move(a)); }
Expr min(Expr a, Expr b) { return Min::make(std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return Max::make(std::move(a), std::move(b)); }
Expr select(Expr c, Expr t, Expr f) { return Select::make(std::move(c), std::move(t), std::move(f)); }
Expr cast(Type t, Expr v) { return Cast::make(t, std::move(v)); }
Expr clamp(Expr v, Expr lo, Expr hi) { return max(min(std::move(v), std::move(hi)), std::move(lo)); }

Expr make_const(Type t, double v) {
  if (t.is_float()) return FloatImm::make(t, v);
  if (t.is_bool()) return IntImm::make(t, v != 0);
  return IntImm::make(t, (int64_t)v);
}

const int64_t* as_const_int(const Expr& e) {
  auto i = e.as<IntImm>();
  return i ? &i->value : nullptr;
}

}  // namespace kiln::tir
