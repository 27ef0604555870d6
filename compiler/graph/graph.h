// The graph IR: values (tensors) and nodes (operators), ONNX-shaped.
//
// Every value has a static dtype and shape. Constants carry their bytes.
// Nodes reference values by index; optional inputs that are absent are -1.
// This is the level where the graph optimizer works (issue 4); lowering
// turns each node into kernels and dispatches (lower/lower_graph.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_table.h"
#include "tir/ir.h"

namespace kiln::graph {

// Element types; the numbering is the bundle's (kiln.fb.DType).
enum class DType : uint8_t {
  F32 = 0, F16 = 1, F64 = 2, I8 = 3, I16 = 4, I32 = 5, I64 = 6, U8 = 7, Bool = 8, U16 = 9, U32 = 10, U64 = 11,
  BF16 = 12,  // bfloat16: stored as the upper half of a float32 (tir::UInt(16) bits), computed in float32
  // A string table (u32 offsets, then UTF-8 bytes; docs/bundle.md#string-tensors):
  // kernels see its bytes (tir::UInt(8)), Value::byte_size counts the table.
  String = 13,
  // ONNX's narrow types (bundle minor 10, decision 62), one element per byte:
  // the float8s and e8m0 as their 8-bit code (tir::UInt(8)), float4e2m1 as
  // its 4-bit code in the low bits of a byte (tir::UInt(8)), the 4- and
  // 2-bit integers as their value (tir::Int(8) sign-extended, tir::UInt(8)).
  // Only Cast, CastLike, QuantizeLinear, DequantizeLinear and the operators
  // that move bytes handle them; graph pass `bfloat16` makes every other
  // operator compute the float ones in float32 (lower/narrow_types.h converts).
  F8E4M3FN = 14, F8E4M3FNUZ = 15, F8E5M2 = 16, F8E5M2FNUZ = 17, U4 = 18, I4 = 19, F4E2M1 = 20, F8E8M0 = 21,
  U2 = 22, I2 = 23
};

size_t dtype_size(DType t);  // bytes per element (String: 1, the bytes of its table as kernels see them)
// The narrow types of bundle minor 10 (F8E4M3FN .. I2).
inline bool is_narrow(DType t) { return (uint8_t)t >= (uint8_t)DType::F8E4M3FN && (uint8_t)t <= (uint8_t)DType::I2; }
// The narrow float types (float8s, float4e2m1, e8m0): computed in float32 like bfloat16.
inline bool is_narrow_float(DType t) { return is_narrow(t) && t != DType::U4 && t != DType::I4 && t != DType::U2 && t != DType::I2; }
// The value of a narrow type's byte `b` (the float code's value: NaN, inf,
// the 2^-127 of e8m0's 0; an integer's low bits, sign-extended for I4/I2).
double narrow_value(DType t, uint8_t b);

const char* dtype_name(DType t);
tir::Type dtype_to_tir(DType t);

// The string table (docs/bundle.md#string-tensors) of `strings`: u32
// offsets, then their bytes; *out_bytes gets the bytes area's size. A user
// error past 2^32 - 1 bytes.
std::vector<uint8_t> string_table(const std::vector<std::string>& strings, int64_t* out_bytes);
// The `count` strings of a string table (a constant's bytes); a user error
// where its offsets lie outside it.
std::vector<std::string> table_strings(const std::vector<uint8_t>& table, int64_t count);
// Bytes the text of one number takes at most (Cast to string:
// lower/string_table.cpp writes it, import/string_values.cpp plans for it).
constexpr int64_t kNumberTextBytes = 24;

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);
// Dimensions as Index expressions: constants, or expressions over shape symbols.
using DimExprs = std::vector<tir::Expr>;
// "[1x3xHxW]": constants as numbers, symbolic dimensions as expressions.
std::string dims_str(const DimExprs& d);
// Whether two dimension lists are the same (rank and every dimension,
// symbolic ones compared as simplified expressions).
bool same_dims(const DimExprs& a, const DimExprs& b);

// A shape symbol: a dimension of a model input known only at run time
// (kilnc --input-shape x=1,3,32..1280,32..1280, or a named dimension of the
// model bounded by --dim NAME=LO..HI), within [lo, hi]. Kernels receive the
// symbols they use as parameters; the runtime binds each from the input
// dimension that is exactly it (docs/dynamic-shapes.md).
struct Symbol {
  std::string name;  // the model's dim_param, or "INPUT.K" for dimension K of an input
  tir::Expr var;     // its variable (tir::Var::make_symbol; symbol = index in Graph::symbols)
  int64_t lo = 1;    // least value
  int64_t hi = 1;    // greatest value
  // A data symbol (a size only a kernel knows: NonZero's count): the int64
  // [1] value its producer writes the size into, read by the runtime right
  // after that kernel (docs/dynamic-shapes.md); -1 for an input dimension.
  int source_value = -1;
  // Neither the model nor the user bounds it (a model input's dimension
  // with no --input-shape, a size read from data with no --input-value): hi
  // is kMaxRunTimeDim, the most a run may give, and the tensors it sizes are
  // run-time-sized (Graph::runtime_sized): allocated per run, not planned.
  bool unbounded = false;
};

// The largest value a run-time dimension may take (a shape symbol's hi; its
// value reaches kernels as a uint32 push constant).
constexpr int64_t kMaxRunTimeDim = tir::kUnboundedSymbolMax;

// A condition on the shape symbols that every run must meet (two run-time
// dimensions the model combines must agree, a reshape must keep the element
// count): the runtime checks it when the inputs' shapes change and refuses
// the run with `message` when it fails.
struct ShapeConstraint {
  tir::Expr cond;       // Bool, over shape symbols
  std::string message;  // what is wrong when it fails, naming the node
};

struct Value {
  std::string name;                            // ONNX value name (unique)
  DType dtype = DType::F32;                    // element type
  Shape shape;                                 // static shape; with run-time dimensions, each one's largest value
  // Run-time dimensions: empty when the shape is static, else one
  // expression per dimension (a constant or over shape symbols); `shape`
  // then holds their bounds (the memory plan reserves that much).
  DimExprs dims;
  // A small integer tensor whose elements are expressions over the shape
  // symbols (a shape computed from run-time dimensions), row-major; empty
  // otherwise. With no producer and no data it is a symbolic constant:
  // kernels compute its elements from the symbols they receive.
  std::vector<tir::Expr> sym;
  std::shared_ptr<std::vector<uint8_t>> data;  // bytes if constant, else null
  int producer = -1;                           // index of the producing node, -1 for inputs/constants
  // String values: the capacity of the table's bytes area (what the
  // strings may hold in all; import/string_values.cpp), 0 otherwise.
  int64_t string_bytes = 0;

  bool is_constant() const { return data != nullptr; }
  bool is_dynamic() const { return !dims.empty(); }
  // The dimensions as expressions (constants for a static shape).
  DimExprs dim_exprs() const;
  int64_t elements() const { return num_elements(shape); }
  // Bytes the value occupies (a string table: its offsets and bytes area).
  // (Saturating at 2^62, as elements(): a run-time-sized value's largest.)
  size_t byte_size() const {
    const size_t n = (size_t)elements(), most = size_t(1) << 62;
    if (dtype == DType::String) return n >= most / 4 ? most : 4 * (n + 1) + (size_t)string_bytes;
    return n > most / dtype_size(dtype) ? most : n * dtype_size(dtype);
  }
  // Elements of the value's kernel buffer (a string table: its bytes).
  int64_t storage_elements() const { return dtype == DType::String ? (int64_t)byte_size() : elements(); }
  // Element i of a constant, converted (int and float dtypes).
  double const_at(int64_t i) const;
  int64_t const_int_at(int64_t i) const;
};

// An ONNX attribute, kept in the form the lowering reads.
struct Attr {
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph } kind = Kind::Int;
  int64_t i = 0;                    // Int
  double f = 0;                     // Float
  std::string s;                    // String
  std::vector<int64_t> ints;        // Ints
  std::vector<double> floats;       // Floats
  std::vector<std::string> strings; // Strings
  int tensor = -1;                  // Tensor: index of a constant Value holding it

  std::string str() const;          // printable form, as stored in the bundle
};

struct Node {
  std::string op;                      // ONNX op type, e.g. "Conv"
  std::string name;                    // ONNX node name (generated if empty)
  std::map<std::string, Attr> attrs;   // attributes by name
  std::vector<int> inputs;             // value indices; -1 for an absent optional input
  std::vector<int> outputs;            // value indices; -1 for an unused optional output
  // A branch of an If whose condition is known only at run time
  // (import/inline_if.h): the node runs only when each flag (output 0 of a
  // kiln.Condition node) is true (second = true) or false (second = false).
  std::vector<std::pair<int, bool>> guards;

  // The operator's row in the operator table (graph/op_table.h).
  const OpTraits& traits() const { return op_traits(op); }
  bool is(Op o) const { return traits().op == o; }
  bool has_attr(const std::string& n) const { return attrs.count(n) != 0; }
  int64_t attr_int(const std::string& n, int64_t dflt) const;
  double attr_float(const std::string& n, double dflt) const;
  std::string attr_string(const std::string& n, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> dflt) const;
  // "Conv node 'conv1'": how user errors name a node.
  std::string describe() const;
};

// A model input or output that ONNX types as a sequence or an optional
// (docs/sequences.md, import/boundary_values.h), made of ordinary ones.
struct Composite {
  std::string name;           // the ONNX value's name
  bool output = false;        // its tensors are model outputs (else inputs)
  bool optional = false;      // an optional (else a sequence)
  bool sequence = false;      // it is, or holds, a sequence of `elements`
  std::vector<int> elements;  // positions in Graph::inputs or ::outputs, in order
  int presence = -1;          // an optional: the position of its bool scalar
};

struct Graph {
  std::vector<Symbol> symbols;  // shape symbols (run-time dimensions), by index
  std::vector<ShapeConstraint> constraints;  // conditions on the symbols every run must meet
  // Run-time dimensions the constraints make equal, as rewrites from the
  // longer expression to the shorter (graph/dim_equalities.cpp).
  std::vector<std::pair<tir::Expr, tir::Expr>> equal_dims;
  std::vector<Value> values;  // all tensors
  std::vector<Node> nodes;    // in topological order
  std::vector<int> inputs;    // model inputs (value indices)
  std::vector<int> outputs;   // model outputs (value indices)
  std::vector<Composite> composites;  // sequence inputs and outputs, made of the ones above
  int64_t opset = 13;         // default-domain opset of the model
  int64_t ml_opset = 0;       // ai.onnx.ml opset of the model (0: it imports none)
  std::string producer;       // producer name from the model

  int add_value(Value v);
  // Whether value v's dimensions use an unbounded symbol (Symbol::unbounded):
  // its size is known only at run time, and the runtime allocates it then.
  bool runtime_sized(int v) const;
  // Sets value v's dimensions: static when every one is a constant, else
  // run-time ones with `shape` their bounds.
  void set_dims(int v, const DimExprs& dims);
  int add_constant(const std::string& name, DType dtype, Shape shape, std::vector<uint8_t> bytes);
  std::string unique_name(const std::string& base) const;
  std::string str() const;    // printable form for --dump-graph

  // Run-time dimensions known equal (graph/dim_equalities.cpp): where a
  // model needs two to agree (an Add of two branches whose widths were
  // computed differently: ceil(W / 4) and 8 * ceil(W / 32) in a detector's
  // feature pyramid), dimension inference records a constraint the runtime
  // checks before every run, and the equality here. Past that check they are
  // one number, so passes and fusion treat them as the same dimension.
  void add_equal_dims(const tir::Expr& a, const tir::Expr& b);
  tir::Expr canonical(const tir::Expr& e) const;  // with every known equality applied, simplified
  bool same_dims(const DimExprs& a, const DimExprs& b) const;  // graph::same_dims, up to known equalities
  // Whether node n writes a data symbol's source (Symbol::source_value):
  // passes must neither fold, merge nor remove it.
  bool defines_symbol(const Node& n) const;
};

}  // namespace kiln::graph
