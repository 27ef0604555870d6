// ai.onnx.ml: ONNX's classical machine-learning domain. Its rows' names
// carry the domain ("ai.onnx.ml.LabelEncoder", graph::onnx_op_name): the
// import maps each (domain, op_type) to its row.
//
// ArrayFeatureExtractor: Z[..., j] = X[..., Y[j]] over the last axis of X
// (Y any shape, read row-major; a 1-D X gives [1, len(Y)]; indices clamped
// into the axis, negative ones counting from its end).
// Binarizer: 1 where X > threshold, else 0, in X's type.
// LabelEncoder (opsets 1 to 4): each element of X becomes the value of its
// key, or the default: keys and values as keys_/values_ strings, int64s,
// floats or tensors (opset 4; opset 1: classes_strings, strings to their
// positions or back), the default as default_string / _int64 /
// _float / _tensor (absent: -1 for integers, -0.0 for floats). A key given
// twice maps to its last value (as the reference's dict); float keys are
// compared bit by bit (the spec: a NaN key maps NaN). String keys are matched by the string-token kernel of
// ops_text.cpp (token_ids), numbers by a min-reduction over the
// constant key table; the value is then read from a constant table whose
// last entry is the default. String values: a host kernel appends each
// element's text to the output's string table (import/string_values.cpp
// sizes it by the longest string of the node's attributes).
// TreeEnsemble (ai.onnx.ml opset 5): every tree of tree_roots walks X's row
// from its root: node i compares X[row, nodes_featureids[i]] with
// nodes_splits[i] by nodes_modes[i] (LEQ, LT, GTE, GT, EQ, NEQ, or MEMBER of
// its set in membership_values, the sets in node order delimited by NaN; a
// NaN feature goes the true way where nodes_missing_value_tracks_true says
// so) and goes to nodes_true/falsenodeids[i], a node or, where
// nodes_true/falseleafs[i] is 1, a leaf. Leaf l adds leaf_weights[l] to
// target leaf_targetids[l] by aggregate_function (AVERAGE, SUM, MIN, MAX:
// as ONNX's reference, MIN and MAX start from the type's largest and lowest
// finite values), then post_transform (NONE, SOFTMAX, LOGISTIC,
// SOFTMAX_ZERO, PROBIT, as ONNX Runtime computes them). A serial kernel per
// row over constant node, leaf and root tables; the walk has as many steps
// as the deepest tree (checked at compile time: every index in range, no
// cycles).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "lower/expr_helpers.h"
#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "lower/string_table.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace ml {

using graph::DType;

// A list of keys or values: numbers (their bytes, of `dtype`) or strings.
struct Table {
  DType dtype = DType::F32;
  int64_t count = 0;
  std::vector<uint8_t> bytes;        // numbers: count elements of dtype
  std::vector<std::string> strings;  // strings
  bool is_string() const { return dtype == DType::String; }
  size_t element() const { return graph::dtype_size(dtype); }
  std::vector<uint8_t> at(int64_t i) const {
    return std::vector<uint8_t>(bytes.begin() + (ptrdiff_t)(i * element()), bytes.begin() + (ptrdiff_t)((i + 1) * element()));
  }
};

// The node's list `base` ("keys", "values"): one of the attributes
// base_strings, base_int64s, base_floats or base_tensor.
Table read_table(const OpContext& ctx, const std::string& base) {
  const graph::Node& n = ctx.node();
  Table t;
  int given = 0;
  if (n.has_attr(base + "_strings")) {
    t.dtype = DType::String;
    t.strings = n.attrs.at(base + "_strings").strings;
    t.count = (int64_t)t.strings.size();
    given++;
  }
  if (n.has_attr(base + "_int64s")) {
    t.dtype = DType::I64;
    const std::vector<int64_t>& v = n.attrs.at(base + "_int64s").ints;
    t.count = (int64_t)v.size();
    t.bytes.resize(v.size() * 8);
    if (!v.empty()) memcpy(t.bytes.data(), v.data(), t.bytes.size());
    given++;
  }
  if (n.has_attr(base + "_floats")) {
    t.dtype = DType::F32;
    std::vector<float> v(n.attrs.at(base + "_floats").floats.begin(), n.attrs.at(base + "_floats").floats.end());
    t.count = (int64_t)v.size();
    t.bytes.resize(v.size() * 4);
    if (!v.empty()) memcpy(t.bytes.data(), v.data(), t.bytes.size());
    given++;
  }
  if (n.has_attr(base + "_tensor") && n.attrs.at(base + "_tensor").kind == graph::Attr::Kind::Tensor) {
    const graph::Value& v = ctx.value(n.attrs.at(base + "_tensor").tensor);
    t.dtype = v.dtype;
    t.count = v.elements();
    if (v.dtype == DType::String) t.strings = graph::table_strings(*v.data, v.elements());
    else t.bytes = *v.data;
    given++;
  }
  user_assert(given == 1) << n.describe() << ": needs exactly one of the attributes " << base << "_strings, " << base
                          << "_int64s, " << base << "_floats and " << base << "_tensor";
  return t;
}

// One element of `dtype` standing for LabelEncoder's default where the
// model gives none: -1 for integers (all bits set), -0.0 for floats (the
// sign bit alone).
std::vector<uint8_t> implicit_default(DType dtype) {
  const size_t size = graph::dtype_size(dtype);
  if (!tir::Type(graph::dtype_to_tir(dtype)).is_float()) return std::vector<uint8_t>(size, 0xFF);
  std::vector<uint8_t> b(size, 0);
  b[size - 1] = 0x80;
  return b;
}

// A constant 1-D int64 table of `v` (one 0 when empty).
int int64_table(OpContext& ctx, const std::string& what, std::vector<int64_t> v) {
  if (v.empty()) v.push_back(0);
  std::vector<uint8_t> b(v.size() * 8);
  memcpy(b.data(), v.data(), b.size());
  return ctx.graph.add_constant(ctx.graph.unique_name(ctx.node().name + "." + what), DType::I64, {(int64_t)v.size()},
                                std::move(b));
}

// A constant 1-D table of `v` in float type `dtype` (F32 or F64; one 0 when empty).
int float_table(OpContext& ctx, const std::string& what, DType dtype, std::vector<double> v) {
  if (v.empty()) v.push_back(0);
  std::vector<uint8_t> b;
  if (dtype == DType::F64) {
    b.resize(v.size() * 8);
    memcpy(b.data(), v.data(), b.size());
  } else {
    std::vector<float> f(v.begin(), v.end());
    b.resize(f.size() * 4);
    memcpy(b.data(), f.data(), b.size());
  }
  return ctx.graph.add_constant(ctx.graph.unique_name(ctx.node().name + "." + what), dtype, {(int64_t)v.size()},
                                std::move(b));
}

const char* const kMlStringKernels = "string tables run on the CPU";

// The constant keys of `first` (positions in `keys`, a numeric table) as a 1-D tensor of their type.
int distinct_keys(OpContext& ctx, const Table& keys, const std::vector<int64_t>& first) {
  std::vector<uint8_t> bytes;
  for (int64_t i : first) {
    std::vector<uint8_t> v = keys.at(i);
    bytes.insert(bytes.end(), v.begin(), v.end());
  }
  return ctx.graph.add_constant(ctx.graph.unique_name(ctx.node().name + ".keys"), keys.dtype, {(int64_t)first.size()},
                                std::move(bytes));
}

// Whether number x is key: floats compared bit by bit, as the spec says (a
// NaN key maps NaNs of its bits, -0.0 and 0.0 are different keys).
Expr same_key(const Expr& x, const Expr& key) {
  if (!x.type().is_float()) return tir::EQ::make(x, key);
  return tir::EQ::make(call(tir::Intrinsic::FloatToBits, x), call(tir::Intrinsic::FloatToBits, key));
}

// LabelEncoder to strings: texts holds the values of the distinct keys
// (first: their positions in `keys`), then the default. A host kernel finds
// each element's key (a string's through token_ids, a number's by a loop
// over the key table) and appends its text to the output table.
void encode_to_strings(OpContext& ctx, const Table& keys, const std::vector<int64_t>& first,
                       const std::vector<std::string>& texts) {
  const graph::Node& n = ctx.node();
  const int64_t K = (int64_t)first.size(), count = ctx.value(ctx.input(0)).elements();
  user_assert(!ctx.value(ctx.input(0)).is_dynamic() && !ctx.value(ctx.output(0)).is_dynamic())
      << n.describe() << ": encoding to strings needs a static shape";
  int64_t bytes = 0;
  std::vector<uint8_t> table = graph::string_table(texts, &bytes);
  const int64_t table_size = (int64_t)table.size();
  const int texts_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".texts"), DType::U8, {table_size}, std::move(table));
  int source = ctx.input(0), keys_v = -1;
  if (keys.is_string()) {
    std::vector<std::string> vocabulary;
    for (int64_t i : first) vocabulary.push_back(keys.strings[(size_t)i]);
    source = token_ids(ctx, vocabulary);
  } else if (K > 0) {
    keys_v = distinct_keys(ctx, keys, first);
  }
  const int out = ctx.output(0);
  ctx.emit_tir("label_encoder_strings", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(source, Access::Read), V = bind(texts_v, Access::Read), Y = bind(out, Access::Write);
    tir::Buffer Kt = keys_v >= 0 ? bind(keys_v, Access::Read) : tir::Buffer();
    Expr i = serial::index_var("i"), c = serial::index_var("c"), key = serial::index_var("key");
    Expr begin = serial::index_var("begin"), length = serial::index_var("length");
    serial::Local at("position", tir::Index());
    strings::Writer w{Y, strings::bytes_start(Expr(count))};
    tir::Stmt find;
    if (keys.is_string()) {
      Expr id = tir::Load::make(X, i);
      find = at.set(tir::select(id < Expr(0), Expr(K), id));
    } else {
      std::vector<tir::Stmt> steps = {at.set(Expr(K))};
      if (K > 0) {
        Expr match = tir::EQ::make(at.get(), Expr(K)) && same_key(tir::Load::make(X, i), tir::Load::make(Kt, key));
        steps.push_back(serial::loop(key, Expr(K), serial::when(match, at.set(key))));
      }
      find = serial::block(steps);
    }
    Expr vs = strings::bytes_start(Expr(K + 1));
    tir::Stmt copy = tir::LetStmt::make(begin, vs + strings::offset(V, at.get()),
        tir::LetStmt::make(length, strings::offset(V, at.get() + Expr(1)) - strings::offset(V, at.get()),
                           serial::loop(c, length, w.put(strings::byte_at(V, begin + c)))));
    tir::Stmt each = serial::block({find, copy, strings::set_offset(Y, i + Expr(1), w.at.get())});
    return serial::allocate({at.b, w.at.b}, serial::block({w.at.set(Expr(0)), strings::set_offset(Y, Expr(0), Expr(0)),
                                                           serial::loop(i, Expr(count), each)}));
  });
  ctx.kernels.back().host_only = kMlStringKernels;
}

}  // namespace ml

using namespace serial;  // NOLINT: the builders are the tree kernel's vocabulary

void lower_array_feature_extractor(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Shape xs = ctx.in_shape(0), is = ctx.in_shape(1), ys = ctx.out_shape(0);
  user_assert(!xs.empty()) << n.describe() << ": X must have at least one dimension";
  user_assert(ctx.in_dtype(1) == graph::DType::I64) << n.describe() << ": Y (the indices) must be int64";
  user_assert(ctx.in_dtype(0) != graph::DType::String)
      << n.describe() << ": kilnc does not pick from string tensors yet; pick from their positions instead";
  const int64_t count = graph::num_elements(is), C = xs.back();
  user_assert(count >= 1 && C >= 1) << n.describe() << ": X's last dimension and Y must not be empty";
  graph::Shape want = xs.size() == 1 ? graph::Shape{1, count} : graph::Shape(xs.begin(), xs.end() - 1);
  if (xs.size() > 1) want.push_back(count);
  user_assert(ys == want) << n.describe() << ": the output must be " << graph::shape_str(want) << ", not "
                          << graph::shape_str(ys);
  te::Tensor X = ctx.in(0), I = ctx.in(1);
  te::Tensor Z = te::compute("array_feature_extractor", ys, [&](const Indices& o) {
    Indices ii(is.size());  // element o.back() of Y, row-major
    Expr rest = o.back();
    for (size_t d = is.size(); d-- > 0;) {
      ii[d] = rest % Expr(is[d]);
      rest = rest / Expr(is[d]);
    }
    Indices xi = xs.size() == 1 ? Indices{} : Indices(o.begin(), o.end() - 1);
    xi.push_back(wrap_index(I(ii), Expr(C)));
    return X(xi);
  });
  ctx.set_output(0, Z);
}

void lower_binarizer(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::DType dt = ctx.in_dtype(0);
  user_assert(dt == graph::DType::F32 || dt == graph::DType::F64 || dt == graph::DType::I32 || dt == graph::DType::I64)
      << n.describe() << ": X must be float32, float64, int32 or int64, not " << graph::dtype_name(dt);
  const tir::Type t = graph::dtype_to_tir(dt), f64 = tir::Float(64);
  const double threshold = n.attr_float("threshold", 0.0);
  te::Tensor X = ctx.in(0);
  // Floats compare in their type (the threshold rounded to it), integers as float64 (numpy's rules).
  te::Tensor Y = te::compute("binarizer", ctx.in_dims(0), [&](const Indices& i) {
    Expr x = X(i);
    Expr above = t.is_float() ? x > k(t, threshold) : tir::cast(f64, x) > k(f64, threshold);
    return tir::select(above, k(t, 1), k(t, 0));
  });
  ctx.set_output(0, Y);
}

void lower_label_encoder(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  ml::Table keys, values;
  if (n.has_attr("classes_strings")) {  // opset 1: strings to their positions, or positions to their strings
    ml::Table classes, positions;
    classes.dtype = graph::DType::String;
    classes.strings = n.attrs.at("classes_strings").strings;
    classes.count = positions.count = (int64_t)classes.strings.size();
    positions.dtype = graph::DType::I64;
    for (int64_t i = 0; i < positions.count; i++)
      for (int b = 0; b < 8; b++) positions.bytes.push_back((uint8_t)((uint64_t)i >> (8 * b)));
    const bool from_strings = ctx.in_dtype(0) == graph::DType::String;
    keys = from_strings ? classes : positions;
    values = from_strings ? positions : classes;
  } else {
    keys = ml::read_table(ctx, "keys");
    values = ml::read_table(ctx, "values");
  }
  user_assert(keys.count == values.count) << n.describe() << ": has " << keys.count << " keys but " << values.count
                                          << " values";
  const graph::DType xt = ctx.in_dtype(0), yt = ctx.value(ctx.output(0)).dtype;
  user_assert(xt == keys.dtype) << n.describe() << ": X is " << graph::dtype_name(xt) << " but the keys are "
                                << graph::dtype_name(keys.dtype);
  user_assert(yt == values.dtype) << n.describe() << ": Y is " << graph::dtype_name(yt) << " but the values are "
                                  << graph::dtype_name(values.dtype);
  // The distinct keys in order of first appearance, each with its last value.
  std::vector<int64_t> first, last;
  {
    std::map<std::string, size_t> by_string;
    std::map<std::vector<uint8_t>, size_t> by_bytes;
    for (int64_t i = 0; i < keys.count; i++) {
      const size_t next = first.size();
      const size_t slot = keys.is_string() ? by_string.emplace(keys.strings[(size_t)i], next).first->second
                                           : by_bytes.emplace(keys.at(i), next).first->second;
      if (slot == next) {
        first.push_back(i);
        last.push_back(i);
      } else {
        last[slot] = i;
      }
    }
  }
  if (values.is_string()) {  // the default: default_tensor's string, or default_string
    std::vector<std::string> texts;
    for (int64_t i : last) texts.push_back(values.strings[(size_t)i]);
    if (n.has_attr("default_tensor") && n.attrs.at("default_tensor").kind == graph::Attr::Kind::Tensor) {
      const graph::Value& d = ctx.value(n.attrs.at("default_tensor").tensor);
      user_assert(d.dtype == graph::DType::String && d.elements() == 1)
          << n.describe() << ": default_tensor must hold one string";
      texts.push_back(graph::table_strings(*d.data, 1)[0]);
    } else {
      texts.push_back(n.attr_string("default_string", "_Unused"));
    }
    ml::encode_to_strings(ctx, keys, first, texts);
    return;
  }
  // The default, as one element of the values' type.
  std::vector<uint8_t> fallback;
  if (n.has_attr("default_tensor") && n.attrs.at("default_tensor").kind == graph::Attr::Kind::Tensor) {
    const graph::Value& d = ctx.value(n.attrs.at("default_tensor").tensor);
    user_assert(d.dtype == values.dtype && d.elements() == 1)
        << n.describe() << ": default_tensor must hold one element of the values' type";
    fallback = *d.data;
  } else if (values.dtype == graph::DType::I64 && n.has_attr("default_int64")) {
    int64_t v = n.attr_int("default_int64", -1);
    fallback.resize(8);
    memcpy(fallback.data(), &v, 8);
  } else if (values.dtype == graph::DType::F32 && n.has_attr("default_float")) {
    float v = (float)n.attr_float("default_float", -0.0);
    fallback.resize(4);
    memcpy(fallback.data(), &v, 4);
  } else {
    fallback = ml::implicit_default(values.dtype);
  }
  const int64_t K = (int64_t)first.size();
  std::vector<uint8_t> table;  // the values of the distinct keys, then the default
  for (int64_t i : last) {
    std::vector<uint8_t> v = values.at(i);
    table.insert(table.end(), v.begin(), v.end());
  }
  table.insert(table.end(), fallback.begin(), fallback.end());
  const int values_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".values"), values.dtype, {K + 1},
                                              std::move(table));
  const te::Dims dims = ctx.in_dims(0);
  const tir::Type i64 = tir::Int(64);
  te::Tensor position;  // per element of X: its key's position among the distinct keys, K for none
  if (keys.is_string()) {
    user_assert(!ctx.value(ctx.input(0)).is_dynamic())
        << n.describe() << ": string keys need X's shape static; give it one with --input-shape";
    std::vector<std::string> vocabulary;
    for (int64_t i : first) vocabulary.push_back(keys.strings[(size_t)i]);
    te::Tensor ids = ctx.tensor_of(token_ids(ctx, vocabulary));
    position = te::compute("label_position", dims, [&](const Indices& i) {
      Expr id = tir::cast(i64, ids(i));
      return tir::select(id < tir::IntImm::make(i64, 0), tir::IntImm::make(i64, K), id);
    });
  } else if (K > 0) {
    te::Tensor X = ctx.in(0), keys_t = ctx.tensor_of(ml::distinct_keys(ctx, keys, first));
    position = te::reduce("label_position", dims, te::Dims{Expr(K)}, te::ReduceKind::Min, i64,
                          [&](const Indices& i, const Indices& r) {
                            return tir::select(ml::same_key(X(i), keys_t({r[0]})), tir::cast(i64, r[0]),
                                               tir::IntImm::make(i64, K));
                          },
                          tir::IntImm::make(i64, K));
  }
  te::Tensor V = ctx.tensor_of(values_v);
  te::Tensor Y = te::compute("label_encoder", dims, [&](const Indices& i) {
    Expr at = position.defined() ? tir::clamp(tir::cast(tir::Index(), position(i)), Expr(0), Expr(K)) : Expr(K);
    return V({at});
  });
  ctx.set_output(0, Y);
}

namespace ml {

enum TreeMode : int64_t { kTreeLeq = 0, kTreeLt, kTreeGte, kTreeGt, kTreeEq, kTreeNeq, kTreeMember, kTreeModes };
enum Aggregate : int64_t { kAggregateAverage = 0, kAggregateSum, kAggregateMin, kAggregateMax };
enum PostTransform : int64_t { kPostNone = 0, kPostSoftmax, kPostLogistic, kPostSoftmaxZero, kPostProbit };
// Columns of the node table.
enum NodeColumn : int64_t {
  kNodeFeature = 0, kNodeTrue, kNodeFalse, kNodeMode, kNodeMissing, kNodeMemberBegin, kNodeMemberCount, kNodeColumns
};

// The numbers of attribute `name` (a tensor, floats or ints); `required`: a user error when absent.
std::vector<double> tree_numbers(const OpContext& ctx, const std::string& name, bool required) {
  const graph::Node& n = ctx.node();
  std::vector<double> r;
  if (!n.has_attr(name)) {
    user_assert(!required) << n.describe() << ": needs attribute " << name;
    return r;
  }
  const graph::Attr& a = n.attrs.at(name);
  if (a.kind == graph::Attr::Kind::Tensor) {
    const graph::Value& v = ctx.value(a.tensor);
    user_assert(v.dtype != DType::String) << n.describe() << ": " << name << " must hold numbers";
    for (int64_t i = 0; i < v.elements(); i++) r.push_back(v.const_at(i));
  } else if (a.kind == graph::Attr::Kind::Floats) {
    r = a.floats;
  } else {
    for (int64_t i : a.ints) r.push_back((double)i);
  }
  return r;
}

// ONNX Runtime's erfinv approximation (ml_common.h), for PROBIT.
Expr probit_erf_inverse(const Expr& x) {
  const Expr one = k(x, 1), sign = tir::select(x < k(x, 0), k(x, -1), one);
  const Expr w = call(tir::Intrinsic::Log, (one - x) * (one + x));
  const Expr a = k(x, 2.0 / (3.14159 * 0.147)) + k(x, 0.5) * w, b = k(x, 1.0 / 0.147) * w;
  return sign * call(tir::Intrinsic::Sqrt, call(tir::Intrinsic::Sqrt, a * a - b) - a - a);
}

}  // namespace ml

void lower_tree_ensemble(OpContext& ctx) {
  using namespace ml;  // NOLINT
  const graph::Node& n = ctx.node();
  const DType xt = ctx.in_dtype(0);
  user_assert(xt == DType::F32 || xt == DType::F64)
      << n.describe() << ": X must be float32 or float64 (kilnc does not run float16 trees yet), not "
      << graph::dtype_name(xt);
  const graph::Shape xs = ctx.in_shape(0), ys = ctx.out_shape(0);
  user_assert(xs.size() == 2) << n.describe() << ": X must be [N, F]";
  const int64_t N = xs[0], F = xs[1], T = n.attr_int("n_targets", 0);
  user_assert(T >= 1 && ys == graph::Shape({N, T})) << n.describe() << ": needs n_targets >= 1, the output [N, n_targets]";
  const std::vector<int64_t> features = n.attr_ints("nodes_featureids", {});
  const std::vector<int64_t> true_ids = n.attr_ints("nodes_truenodeids", {}), false_ids = n.attr_ints("nodes_falsenodeids", {});
  const std::vector<int64_t> true_leafs = n.attr_ints("nodes_trueleafs", {}), false_leafs = n.attr_ints("nodes_falseleafs", {});
  const std::vector<int64_t> targets = n.attr_ints("leaf_targetids", {}), roots = n.attr_ints("tree_roots", {});
  std::vector<int64_t> missing = n.attr_ints("nodes_missing_value_tracks_true", {});
  const std::vector<double> splits = tree_numbers(ctx, "nodes_splits", true), modes = tree_numbers(ctx, "nodes_modes", true);
  const std::vector<double> weights = tree_numbers(ctx, "leaf_weights", true);
  const std::vector<double> members = tree_numbers(ctx, "membership_values", false);
  const int64_t aggregate = n.attr_int("aggregate_function", kAggregateSum), post = n.attr_int("post_transform", kPostNone);
  const size_t M = features.size(), L = targets.size();
  if (missing.empty()) missing.assign(M, 0);
  user_assert(M >= 1 && splits.size() == M && modes.size() == M && true_ids.size() == M && false_ids.size() == M &&
              true_leafs.size() == M && false_leafs.size() == M && missing.size() == M)
      << n.describe() << ": the nodes_ attributes must all list the same nodes (at least one)";
  user_assert(L >= 1 && weights.size() == L) << n.describe() << ": leaf_targetids and leaf_weights must list the same leaves";
  user_assert(!roots.empty()) << n.describe() << ": tree_roots is empty";
  user_assert(aggregate >= kAggregateAverage && aggregate <= kAggregateMax)
      << n.describe() << ": aggregate_function must be 0 to 3";
  user_assert(post >= kPostNone && post <= kPostProbit) << n.describe() << ": post_transform must be 0 to 4";
  for (int64_t t : targets) user_assert(t >= 0 && t < T) << n.describe() << ": a leaf_targetids entry is not below n_targets";
  // The node table; a child is a node's index, or -(leaf + 1).
  std::vector<int64_t> table(M * kNodeColumns), used_modes(kTreeModes, 0);
  std::vector<double> member_table;
  size_t next_member = 0;
  int64_t widest_set = 0;
  auto child = [&](size_t i, bool leaf, int64_t id) {
    user_assert(leaf ? id >= 0 && (size_t)id < L : id >= 0 && (size_t)id < M)
        << n.describe() << ": node " << i << " names a " << (leaf ? "leaf" : "node") << " " << id << " that does not exist";
    return leaf ? -(id + 1) : id;
  };
  for (size_t i = 0; i < M; i++) {
    const double m = modes[i];
    user_assert(m >= 0 && m < kTreeModes && m == std::floor(m)) << n.describe() << ": node " << i << " has mode " << m
                                                             << "; the modes are 0 (LEQ) to 6 (MEMBER)";
    user_assert(features[i] >= 0 && features[i] < F) << n.describe() << ": node " << i << " reads feature " << features[i]
                                                     << ", not one of X's " << F;
    int64_t* row = &table[i * kNodeColumns];
    row[kNodeFeature] = features[i];
    row[kNodeTrue] = child(i, true_leafs[i] != 0, true_ids[i]);
    row[kNodeFalse] = child(i, false_leafs[i] != 0, false_ids[i]);
    row[kNodeMode] = (int64_t)m;
    row[kNodeMissing] = missing[i] != 0;
    used_modes[(size_t)m] = 1;
    if (m == kTreeMember) {  // its set: the next values up to a NaN
      row[kNodeMemberBegin] = (int64_t)member_table.size();
      for (; next_member < members.size() && !std::isnan(members[next_member]); next_member++)
        member_table.push_back(members[next_member]);
      user_assert(next_member < members.size())
          << n.describe() << ": membership_values must hold a NaN-terminated set for each MEMBER node, in node order";
      next_member++;
      row[kNodeMemberCount] = (int64_t)member_table.size() - row[kNodeMemberBegin];
      widest_set = std::max(widest_set, row[kNodeMemberCount]);
    }
  }
  user_assert(next_member == members.size())
      << n.describe() << ": membership_values holds more sets than there are MEMBER nodes";
  // Each node's depth to its deepest leaf (internal nodes on the way), without cycles.
  std::vector<int64_t> depth(M, -1);
  std::vector<char> state(M, 0);  // 0 new, 1 on the path, 2 done
  int64_t steps = 0;
  std::vector<int64_t> root_codes;
  for (int64_t r : roots) {
    user_assert(r >= 0 && (size_t)r < M) << n.describe() << ": tree root " << r << " is not a node";
    root_codes.push_back(r);
    std::vector<size_t> stack = {(size_t)r};
    while (!stack.empty()) {
      size_t i = stack.back();
      if (state[i] == 2) {
        stack.pop_back();
        continue;
      }
      state[i] = 1;
      bool ready = true;
      for (int64_t c : {table[i * kNodeColumns + kNodeTrue], table[i * kNodeColumns + kNodeFalse]}) {
        if (c < 0 || state[(size_t)c] == 2) continue;
        user_assert(state[(size_t)c] != 1) << n.describe() << ": the nodes reached from root " << r << " form a cycle";
        stack.push_back((size_t)c);
        ready = false;
      }
      if (!ready) continue;
      int64_t d = 1;
      for (int64_t c : {table[i * kNodeColumns + kNodeTrue], table[i * kNodeColumns + kNodeFalse]})
        if (c >= 0) d = std::max(d, depth[(size_t)c] + 1);
      depth[i] = d;
      state[i] = 2;
      stack.pop_back();
    }
    steps = std::max(steps, depth[(size_t)r]);
  }
  const int64_t R = (int64_t)roots.size();
  std::vector<double> leaf_weights = weights;
  const int nodes_v = int64_table(ctx, "nodes", table), roots_v = int64_table(ctx, "roots", root_codes);
  const int targets_v = int64_table(ctx, "leaf_targets", targets);
  const int splits_v = float_table(ctx, "splits", xt, splits), weights_v = float_table(ctx, "leaf_weights", xt, leaf_weights);
  const bool has_members = used_modes[kTreeMember] != 0;
  const int members_v = has_members ? float_table(ctx, "members", xt, member_table) : -1;
  bool any_missing = false;
  for (int64_t m : missing) any_missing |= m != 0;
  const int in = ctx.input(0), out = ctx.output(0);
  const tir::Type ft = graph::dtype_to_tir(xt);
  ctx.emit_tir("tree_ensemble", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
    tir::Buffer Nd = bind(nodes_v, Access::Read), Rt = bind(roots_v, Access::Read), Lt = bind(targets_v, Access::Read);
    tir::Buffer S = bind(splits_v, Access::Read), W = bind(weights_v, Access::Read);
    tir::Buffer Ms = has_members ? bind(members_v, Access::Read) : tir::Buffer();
    Expr row = index_var("row"), t = index_var("t"), r = index_var("r"), step = index_var("step"), q = index_var("q");
    Local cur("node", tir::Index()), hit("hit", tir::Index()), top("top", ft), sum("sum", ft);
    auto y = [&](const Expr& target) { return row * Expr(T) + target; };
    auto column = [&](const Expr& node, NodeColumn c) {
      return tir::Load::make(Nd, node * Expr((int64_t)kNodeColumns) + Expr((int64_t)c));
    };
    // One step of the walk from node `cur` (while it is a node).
    Expr node = index_var("at"), v = tir::Var::make(ft, "v"), s = tir::Var::make(ft, "split");
    auto compare = [&](int64_t mode) -> Expr {
      switch (mode) {
        case kTreeLeq: return v <= s;
        case kTreeLt: return v < s;
        case kTreeGte: return v >= s;
        case kTreeGt: return v > s;
        case kTreeEq: return tir::EQ::make(v, s);
        case kTreeNeq: return tir::NE::make(v, s);
        default: return tir::NE::make(hit.get(), Expr(0));
      }
    };
    int distinct = 0;
    for (int64_t m = 0; m < kTreeModes; m++) distinct += (int)used_modes[(size_t)m];
    Expr cond;
    for (int64_t m = 0; m < kTreeModes; m++) {
      if (!used_modes[(size_t)m]) continue;
      Expr c = distinct == 1 ? compare(m) : tir::EQ::make(column(node, kNodeMode), Expr(m)) && compare(m);
      cond = cond.defined() ? (cond || c) : c;
    }
    if (any_missing) cond = cond || (tir::NE::make(column(node, kNodeMissing), Expr(0)) && tir::NE::make(v, v));
    std::vector<Stmt> visit;
    if (has_members) {
      Expr begin = column(node, kNodeMemberBegin), count = column(node, kNodeMemberCount);
      const Expr last = Expr((int64_t)std::max<size_t>(member_table.size(), 1) - 1);
      Stmt test = when(q < count && tir::EQ::make(tir::Load::make(Ms, tir::min(begin + q, last)), v), hit.set(Expr(1)));
      visit.push_back(hit.set(Expr(0)));
      visit.push_back(when(tir::EQ::make(column(node, kNodeMode), Expr((int64_t)kTreeMember)), loop(q, Expr(widest_set), test)));
    }
    visit.push_back(cur.set(tir::select(cond, column(node, kNodeTrue), column(node, kNodeFalse))));
    Stmt walk_step = when(cur.get() >= Expr(0),
                          tir::LetStmt::make(node, cur.get(),
                              tir::LetStmt::make(v, tir::Load::make(X, row * Expr(F) + column(node, kNodeFeature)),
                                  tir::LetStmt::make(s, tir::Load::make(S, node), block(visit)))));
    // The leaf reached, and its weight into its target.
    Expr leaf = Expr(-1) - cur.get(), target = tir::Load::make(Lt, leaf), w = tir::Load::make(W, leaf);
    Expr old = tir::Load::make(Y, y(target));
    Expr combined = aggregate == kAggregateSum ? old + w
                    : aggregate == kAggregateAverage ? old + w / k(ft, (double)R)
                    : aggregate == kAggregateMin ? tir::select(w < old, w, old)
                                        : tir::select(w > old, w, old);
    Stmt tree = block({cur.set(tir::Load::make(Rt, r)), loop(step, Expr(steps), walk_step),
                       tir::Store::make(Y, y(target), combined)});
    const double big = xt == DType::F64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
    const double start = aggregate == kAggregateMin ? big : aggregate == kAggregateMax ? -big : 0.0;
    std::vector<Stmt> body = {loop(t, Expr(T), tir::Store::make(Y, y(t), k(ft, start))), loop(r, Expr(R), tree)};
    Expr yt = tir::Load::make(Y, y(t));
    if (post == kPostLogistic) {
      body.push_back(loop(t, Expr(T), tir::Store::make(Y, y(t), k(ft, 1) / (k(ft, 1) + call(tir::Intrinsic::Exp, k(ft, 0) - yt)))));
    } else if (post == kPostProbit) {
      body.push_back(loop(t, Expr(T), tir::Store::make(Y, y(t), k(ft, 1.41421356) * probit_erf_inverse(yt * k(ft, 2) - k(ft, 1)))));
    } else if (post == kPostSoftmax || post == kPostSoftmaxZero) {
      // SOFTMAX_ZERO leaves zeros at zero (ONNX Runtime: |v| <= 1e-7), the rest share the sum.
      Expr counted = post == kPostSoftmax ? Expr() : yt > k(ft, 1e-7) || yt < k(ft, -1e-7);
      Expr e = call(tir::Intrinsic::Exp, yt - top.get());
      Stmt exps = tir::Store::make(Y, y(t), counted.defined() ? tir::select(counted, e, k(ft, 0)) : e);
      body.push_back(block({top.set(tir::Load::make(Y, y(Expr(0)))),
                            loop(t, Expr(T), top.set(tir::select(yt > top.get(), yt, top.get()))),
                            loop(t, Expr(T), exps), sum.set(k(ft, 0)),
                            loop(t, Expr(T), sum.set(sum.get() + yt)),
                            when(sum.get() > k(ft, 0), loop(t, Expr(T), tir::Store::make(Y, y(t), yt / sum.get())))}));
    }
    return workgroups(row, N, allocate({cur.b, hit.b, top.b, sum.b}, block(body)));
  });
}

}  // namespace kiln::lower
