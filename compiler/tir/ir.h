// The loop-level tensor IR (TIR): plain structs for expressions and statements.
//
// Every operator is lowered to a kernel whose body is a TIR statement: loops
// (with a kind: serial, vectorized, unrolled, bound to a workgroup id), loads
// and stores on flat buffers, lets, ifs and scalar allocations. The node list
// is declared once below (KILN_TIR_EXPR_NODES / KILN_TIR_STMT_NODES); the
// visitor and mutator in ir_visitor.h derive their dispatch from it.
//
// Integer Div and Mod use floor semantics (like Halide): x / y rounds toward
// negative infinity and x % y has the sign of y, so index arithmetic on
// possibly negative values (padding) stays well-defined.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::tir {

// ---------------------------------------------------------------- types --

enum class TypeCode : uint8_t { Int, UInt, Float, Bool };

// A scalar type. (Vector lanes come with the vectorize schedule, issue 3.)
struct Type {
  TypeCode code = TypeCode::Int;  // kind of number
  uint8_t bits = 32;              // width in bits (Bool: 1)

  bool is_float() const { return code == TypeCode::Float; }
  bool is_int() const { return code == TypeCode::Int; }
  bool is_uint() const { return code == TypeCode::UInt; }
  bool is_bool() const { return code == TypeCode::Bool; }
  bool operator==(const Type& o) const { return code == o.code && bits == o.bits; }
  bool operator!=(const Type& o) const { return !(*this == o); }
  std::string str() const;
};

inline Type Int(int bits) { return {TypeCode::Int, (uint8_t)bits}; }
inline Type UInt(int bits) { return {TypeCode::UInt, (uint8_t)bits}; }
inline Type Float(int bits) { return {TypeCode::Float, (uint8_t)bits}; }
inline Type Bool() { return {TypeCode::Bool, 1}; }
inline Type Index() { return Int(64); }  // the type of all loop variables and indices

// ---------------------------------------------------------- node lists --

#define KILN_TIR_EXPR_NODES(X) \
  X(IntImm)                    \
  X(FloatImm)                  \
  X(Var)                       \
  X(Cast)                      \
  X(Add)                       \
  X(Sub)                       \
  X(Mul)                       \
  X(Div)                       \
  X(Mod)                       \
  X(Min)                       \
  X(Max)                       \
  X(EQ)                        \
  X(NE)                        \
  X(LT)                        \
  X(LE)                        \
  X(And)                       \
  X(Or)                        \
  X(Not)                       \
  X(BitAnd)                    \
  X(BitOr)                     \
  X(BitXor)                    \
  X(BitNot)                    \
  X(Select)                    \
  X(Load)                      \
  X(Call)                      \
  X(Let)                       \
  X(ProducerLoad)

#define KILN_TIR_STMT_NODES(X) \
  X(LetStmt)                   \
  X(For)                       \
  X(Store)                     \
  X(IfThenElse)                \
  X(Block)                     \
  X(Allocate)                 \
  X(Prefetch)                 \
  X(Barrier)

enum class NodeType : uint8_t {
#define KILN_X(n) n,
  KILN_TIR_EXPR_NODES(KILN_X) KILN_TIR_STMT_NODES(KILN_X)
#undef KILN_X
};

const char* node_type_name(NodeType t);

struct ExprNode;
struct StmtNode;

// A handle on an immutable expression node (shared; cheap to copy).
struct Expr {
  std::shared_ptr<const ExprNode> node;
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> n) : node(std::move(n)) {}
  Expr(int v);      // IntImm of Index type
  Expr(int64_t v);  // IntImm of Index type
  Expr(float v);    // FloatImm of Float(32)
  bool defined() const { return node != nullptr; }
  const ExprNode* get() const { return node.get(); }
  const ExprNode* operator->() const { return node.get(); }
  Type type() const;
  template <typename T>
  const T* as() const;
  bool same_as(const Expr& o) const { return node == o.node; }
};

// A handle on an immutable statement node.
struct Stmt {
  std::shared_ptr<const StmtNode> node;
  Stmt() = default;
  Stmt(std::shared_ptr<const StmtNode> n) : node(std::move(n)) {}
  bool defined() const { return node != nullptr; }
  const StmtNode* get() const { return node.get(); }
  const StmtNode* operator->() const { return node.get(); }
  template <typename T>
  const T* as() const;
  bool same_as(const Stmt& o) const { return node == o.node; }
};

struct ExprNode {
  NodeType node_type;  // which struct this is
  Type type;           // the value's type
  ExprNode(NodeType nt, Type t) : node_type(nt), type(t) {}
  virtual ~ExprNode() = default;
};

struct StmtNode {
  NodeType node_type;  // which struct this is
  explicit StmtNode(NodeType nt) : node_type(nt) {}
  virtual ~StmtNode() = default;
};

template <typename T>
const T* Expr::as() const {
  return node && node->node_type == T::kNodeType ? static_cast<const T*>(node.get()) : nullptr;
}
template <typename T>
const T* Stmt::as() const {
  return node && node->node_type == T::kNodeType ? static_cast<const T*>(node.get()) : nullptr;
}

// A buffer a kernel reads or writes: one dispatch binding, or a local scratch.
struct BufferNode {
  std::string name;  // for printing and debugging
  Type dtype;        // element type
  int64_t size = 0;  // number of elements
  int binding = -1;  // index in the dispatch's bindings; -1 for an Allocate'd local
  bool constant = false;  // bound to a graph constant: never written, its loads are invariant
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer make_buffer(std::string name, Type dtype, int64_t size, int binding);

// ---------------------------------------------------------- expressions --

struct IntImm : ExprNode {
  static constexpr NodeType kNodeType = NodeType::IntImm;
  int64_t value;  // the constant
  static Expr make(Type t, int64_t v);
  IntImm(Type t, int64_t v) : ExprNode(kNodeType, t), value(v) {}
};

struct FloatImm : ExprNode {
  static constexpr NodeType kNodeType = NodeType::FloatImm;
  double value;  // the constant (rounded to `type` when emitted)
  static Expr make(Type t, double v);
  FloatImm(Type t, double v) : ExprNode(kNodeType, t), value(v) {}
};

// A named scalar bound by a For, Let or LetStmt. Identity is the node itself.
// A shape symbol (`symbol` >= 0) is bound by nothing inside a kernel: it is
// a model dimension known only at run time, within [lo, hi], which kernels
// receive as a parameter (docs/dynamic-shapes.md).
struct Var : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Var;
  std::string name;  // for printing; need not be unique
  int symbol = -1;   // >= 0: index of the shape symbol in the graph's symbol table
  int64_t lo = 0;    // a symbol's least value (inclusive)
  int64_t hi = 0;    // a symbol's greatest value (inclusive)
  static Expr make(Type t, std::string name);
  // A shape symbol (Index type).
  static Expr make_symbol(std::string name, int symbol, int64_t lo, int64_t hi);
  Var(Type t, std::string n) : ExprNode(kNodeType, t), name(std::move(n)) {}
};
// The largest value a shape symbol may take where nothing bounds it
// (graph::kMaxRunTimeDim: a dimension sized per run).
constexpr int64_t kUnboundedSymbolMax = int64_t(1) << 31;

// Whether e is a shape symbol (a Var with symbol >= 0).
bool is_symbol(const Expr& e);

struct Cast : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Cast;
  Expr value;  // converted to `type` (float->int truncates toward zero)
  static Expr make(Type t, Expr v);
  Cast(Type t, Expr v) : ExprNode(kNodeType, t), value(std::move(v)) {}
};

// Binary nodes: both operands have the same type. Comparisons yield Bool.
#define KILN_TIR_BINARY(N)                              \
  struct N : ExprNode {                                 \
    static constexpr NodeType kNodeType = NodeType::N;  \
    Expr a, b; /* operands */                           \
    static Expr make(Expr a, Expr b);                   \
    N(Type t, Expr x, Expr y) : ExprNode(kNodeType, t), a(std::move(x)), b(std::move(y)) {} \
  };
KILN_TIR_BINARY(Add)
KILN_TIR_BINARY(Sub)
KILN_TIR_BINARY(Mul)
KILN_TIR_BINARY(Div)
KILN_TIR_BINARY(Mod)
KILN_TIR_BINARY(Min)
KILN_TIR_BINARY(Max)
KILN_TIR_BINARY(EQ)
KILN_TIR_BINARY(NE)
KILN_TIR_BINARY(LT)
KILN_TIR_BINARY(LE)
KILN_TIR_BINARY(And)
KILN_TIR_BINARY(Or)
// Bitwise and, or, exclusive or of two integers of one type (two's
// complement bits), of that type.
KILN_TIR_BINARY(BitAnd)
KILN_TIR_BINARY(BitOr)
KILN_TIR_BINARY(BitXor)
#undef KILN_TIR_BINARY

struct Not : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Not;
  Expr a;  // Bool operand
  static Expr make(Expr a);
  Not(Expr x) : ExprNode(kNodeType, Bool()), a(std::move(x)) {}
};

// The bitwise complement of an integer, of its type.
struct BitNot : ExprNode {
  static constexpr NodeType kNodeType = NodeType::BitNot;
  Expr a;  // integer operand
  static Expr make(Expr a);
  BitNot(Expr x) : ExprNode(kNodeType, x.type()), a(std::move(x)) {}
};

// cond ? t : f. Both sides may be evaluated: they must be safe to evaluate
// (loads in a Select use clamped indices).
struct Select : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Select;
  Expr cond, true_value, false_value;  // Bool condition, and the two values
  static Expr make(Expr c, Expr t, Expr f);
  Select(Expr c, Expr t, Expr f)
      : ExprNode(kNodeType, t.type()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
};

struct Load : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Load;
  Buffer buffer;  // the buffer read
  Expr index;     // flat element index (Index type)
  static Expr make(Buffer b, Expr index);
  Load(Buffer b, Expr i) : ExprNode(kNodeType, b->dtype), buffer(std::move(b)), index(std::move(i)) {}
};

// A pure math intrinsic. Code generation expands each inline (no libm calls).
// Float math functions (RoundEven: to the nearest integer, ties to even),
// and the int8 dot products: DotU8S8(a, b) and
// DotS8S8(a, b) take two int32 words of four bytes each (byte k = bits
// 8k..8k+7, the byte at the lower address on the little-endian targets)
// and return sum_k a_k * b_k in int32, a's bytes unsigned (U8S8) or signed
// (S8S8), b's signed: the lane operation of vpdpbusd, usdot and sdot
// (docs/int8.md). Code generation fuses `acc + Dot(a, b)` into one
// instruction where the target has it.
// The bfloat16 conversions: Bf16ToF32(bits) takes a UInt(16) (bfloat16's
// bits, the upper half of a float32) and returns that Float(32) exactly;
// F32ToBf16(x) rounds a Float(32) to the nearest bfloat16, ties to even
// (overflow to infinity), and returns its bits as UInt(16); a NaN stays a
// quiet NaN of the same sign.
// The bit casts: FloatToBits(x) takes a Float(16/32/64) and returns its
// bits as the UInt of the same width; BitsToFloat(bits) the other way
// (the narrow types' conversions are integer arithmetic on these bits:
// lower/narrow_types.h). GLSL: float16 through packHalf2x16, float64 with
// the int64 feature.
enum class Intrinsic : uint8_t { Exp, Log, Sqrt, Abs, Floor, Ceil, RoundEven, Tanh, Erf, Pow, Sin, Cos, Tan, Asin,
                                 Acos, Atan, DotU8S8, DotS8S8, Bf16ToF32, F32ToBf16, FloatToBits, BitsToFloat };
inline bool is_int8_dot(Intrinsic i) { return i == Intrinsic::DotU8S8 || i == Intrinsic::DotS8S8; }
inline bool is_bf16_conversion(Intrinsic i) { return i == Intrinsic::Bf16ToF32 || i == Intrinsic::F32ToBf16; }
inline bool is_bit_cast(Intrinsic i) { return i == Intrinsic::FloatToBits || i == Intrinsic::BitsToFloat; }
const char* intrinsic_name(Intrinsic i);

struct Call : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Call;
  Intrinsic op;             // which function
  std::vector<Expr> args;   // float arguments, all of `type` (the dot products: two int32; the bit casts: one)
  static Expr make(Intrinsic op, std::vector<Expr> args);
  Call(Type t, Intrinsic o, std::vector<Expr> a) : ExprNode(kNodeType, t), op(o), args(std::move(a)) {}
};

struct Let : ExprNode {
  static constexpr NodeType kNodeType = NodeType::Let;
  Expr var;    // a Var
  Expr value;  // bound to var within body
  Expr body;
  static Expr make(Expr var, Expr value, Expr body);
  Let(Expr v, Expr val, Expr b)
      : ExprNode(kNodeType, b.type()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

// A read of a tensor-expression stage (te::Tensor) that is not lowered yet:
// lowering replaces it with the producer's formula (inlined) or a Load of
// the buffer it was materialized into. Never reaches code generation.
struct Producer {
  std::string name;  // for printing
  Type dtype;        // element type
  virtual ~Producer() = default;
};

struct ProducerLoad : ExprNode {
  static constexpr NodeType kNodeType = NodeType::ProducerLoad;
  std::shared_ptr<const Producer> producer;  // the stage read
  std::vector<Expr> indices;                 // one Index per dimension
  static Expr make(std::shared_ptr<const Producer> p, std::vector<Expr> indices);
  ProducerLoad(std::shared_ptr<const Producer> p, std::vector<Expr> i)
      : ExprNode(kNodeType, p->dtype), producer(std::move(p)), indices(std::move(i)) {}
};

// ----------------------------------------------------------- statements --

struct LetStmt : StmtNode {
  static constexpr NodeType kNodeType = NodeType::LetStmt;
  Expr var;    // a Var
  Expr value;  // bound to var within body
  Stmt body;
  static Stmt make(Expr var, Expr value, Stmt body);
  LetStmt(Expr v, Expr val, Stmt b) : StmtNode(kNodeType), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

enum class ForKind : uint8_t {
  Serial,      // an ordinary loop
  Vectorized,  // the code generator asks LLVM to vectorize it
  Unrolled,    // the code generator asks LLVM to unroll it fully
  WorkgroupX,  // not a loop: var = workgroup_id[0], extent = workgroup_count[0]
  WorkgroupY,  // likewise for y
  WorkgroupZ,  // likewise for z
  LocalX,      // an invocation index within a workgroup (GPU); a serial loop on CPU
  LocalY,      // likewise for y
  LocalZ,      // likewise for z
};
const char* for_kind_name(ForKind k);
// LocalX, LocalY or LocalZ: the loop is a workgroup's invocations.
inline bool is_local_loop(ForKind k) { return k == ForKind::LocalX || k == ForKind::LocalY || k == ForKind::LocalZ; }

struct For : StmtNode {
  static constexpr NodeType kNodeType = NodeType::For;
  Expr var;      // loop variable (Index type)
  Expr min;      // first value
  Expr extent;   // number of iterations
  ForKind kind;  // how it runs
  Stmt body;
  static Stmt make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body);
  For(Expr v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kNodeType), var(std::move(v)), min(std::move(mn)), extent(std::move(ext)), kind(k), body(std::move(b)) {}
};

struct Store : StmtNode {
  static constexpr NodeType kNodeType = NodeType::Store;
  Buffer buffer;  // the buffer written
  Expr index;     // flat element index (Index type)
  Expr value;     // of the buffer's element type
  static Stmt make(Buffer b, Expr index, Expr value);
  Store(Buffer b, Expr i, Expr v) : StmtNode(kNodeType), buffer(std::move(b)), index(std::move(i)), value(std::move(v)) {}
};

struct IfThenElse : StmtNode {
  static constexpr NodeType kNodeType = NodeType::IfThenElse;
  Expr cond;       // Bool
  Stmt then_case;  // run when cond holds
  Stmt else_case;  // may be undefined
  static Stmt make(Expr c, Stmt t, Stmt e = Stmt());
  IfThenElse(Expr c, Stmt t, Stmt e) : StmtNode(kNodeType), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

struct Block : StmtNode {
  static constexpr NodeType kNodeType = NodeType::Block;
  std::vector<Stmt> stmts;  // run in order
  static Stmt make(std::vector<Stmt> stmts);
  explicit Block(std::vector<Stmt> s) : StmtNode(kNodeType), stmts(std::move(s)) {}
};

// Where an Allocate'd buffer lives.
enum class MemScope : uint8_t {
  Local,   // private to one invocation (CPU: the stack; accumulators end up in registers)
  Shared,  // one per workgroup, shared by its invocations (GPU shared memory; CPU: the stack)
};

// A local buffer (e.g. an accumulator) live within body.
struct Allocate : StmtNode {
  static constexpr NodeType kNodeType = NodeType::Allocate;
  Buffer buffer;   // binding == -1
  Stmt body;
  MemScope scope;  // private or workgroup-shared
  static Stmt make(Buffer b, Stmt body, MemScope scope = MemScope::Local);
  Allocate(Buffer b, Stmt s, MemScope sc) : StmtNode(kNodeType), buffer(std::move(b)), body(std::move(s)), scope(sc) {}
};

// Every invocation of the workgroup waits here until all have arrived, and
// their writes to shared buffers before it are visible to reads after it.
// GPU schedules only: it must be reached by all invocations (uniform control
// flow, inside an unguarded local loop). A no-op on CPU targets.
struct Barrier : StmtNode {
  static constexpr NodeType kNodeType = NodeType::Barrier;
  static Stmt make();
  Barrier() : StmtNode(kNodeType) {}
};

// A hint: bring the cache line holding buffer[index] closer to the core
// (a schedule's software prefetch of data a later iteration reads). Never
// faults, whatever the index; targets without prefetch drop it.
struct Prefetch : StmtNode {
  static constexpr NodeType kNodeType = NodeType::Prefetch;
  Buffer buffer;  // the buffer read later
  Expr index;     // flat element index (Index type); may lie outside the buffer
  static Stmt make(Buffer b, Expr index);
  Prefetch(Buffer b, Expr i) : StmtNode(kNodeType), buffer(std::move(b)), index(std::move(i)) {}
};

// ----------------------------------------------------- sugar for builders --

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr operator&(Expr a, Expr b);  // BitAnd
Expr operator|(Expr a, Expr b);  // BitOr
Expr operator^(Expr a, Expr b);  // BitXor
Expr operator~(Expr a);          // BitNot
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr c, Expr t, Expr f);
Expr cast(Type t, Expr v);
Expr make_const(Type t, double v);  // IntImm or FloatImm of type t
Expr clamp(Expr v, Expr lo, Expr hi);

// Constant value of an IntImm, or nullptr.
const int64_t* as_const_int(const Expr& e);

}  // namespace kiln::tir
