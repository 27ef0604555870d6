#include "import/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "import/external_data.h"
#include "import/contrib_ops.h"
#include "import/fold_shapes.h"
#include "import/gradient.h"
#include "import/infer_dims.h"
#include "import/string_values.h"
#include "import/subgraph.h"
#include "import/inline_if.h"
#include "import/boundary_values.h"
#include "import/sort_nodes.h"
#include "import/declared_shapes.h"
#include "import/expand_functions.h"
#include "import/constant_nodes.h"
#include "import/validate.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using graph::DType;

const char* const kPreviewTrainingDomain = "ai.onnx.preview.training";

DType dtype_from_onnx(int t, const std::string& what) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::INT16: return DType::I16;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::UINT16: return DType::U16;
    case onnx::TensorProto::UINT32: return DType::U32;
    case onnx::TensorProto::UINT64: return DType::U64;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::STRING: return DType::String;
    case onnx::TensorProto::FLOAT8E4M3FN: return DType::F8E4M3FN;
    case onnx::TensorProto::FLOAT8E4M3FNUZ: return DType::F8E4M3FNUZ;
    case onnx::TensorProto::FLOAT8E5M2: return DType::F8E5M2;
    case onnx::TensorProto::FLOAT8E5M2FNUZ: return DType::F8E5M2FNUZ;
    case onnx::TensorProto::UINT4: return DType::U4;
    case onnx::TensorProto::INT4: return DType::I4;
    case onnx::TensorProto::FLOAT4E2M1: return DType::F4E2M1;
    case onnx::TensorProto::FLOAT8E8M0: return DType::F8E8M0;
    case onnx::TensorProto::UINT2: return DType::U2;
    case onnx::TensorProto::INT2: return DType::I2;
    default:
      user_error << what << " has ONNX element type " << onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)t)
                 << ", which kilnc does not support yet";
  }
}

// Every tensor's bytes must fit in 2^62 (so num_elements and byte_size can
// never overflow later): `who` names it in the error.
void check_size(const graph::Value& v, const std::string& who) {
  const uint64_t limit = 1ull << 62;
  uint64_t n = 1;
  bool ok = true;
  for (int64_t d : v.shape) {
    if (d < 0 || (d > 0 && n > limit / (uint64_t)d)) ok = false;
    else n *= (uint64_t)d;
  }
  ok = ok && n <= limit / graph::dtype_size(v.dtype);
  user_assert(ok) << who << " has shape " << graph::shape_str(v.shape) << " of " << graph::dtype_name(v.dtype)
                  << ": more than 2^62 bytes, which no device can hold; check the model's shapes";
}

template <typename Src, typename Dst>
void append_as(std::vector<uint8_t>& out, const Src& values) {
  for (auto v : values) {
    Dst d = (Dst)v;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&d);
    out.insert(out.end(), p, p + sizeof(Dst));
  }
}

graph::Value value_from_tensor(const onnx::TensorProto& t) {
  graph::Value v;
  v.name = t.name();
  v.dtype = dtype_from_onnx(t.data_type(), "tensor '" + t.name() + "'");
  for (auto d : t.dims()) {
    user_assert(d >= 0) << "tensor '" << t.name() << "' has a negative dimension";
    v.shape.push_back(d);
  }
  check_size(v, "tensor '" + t.name() + "'");
  std::vector<uint8_t> bytes;
  internal_assert(t.data_location() != onnx::TensorProto::EXTERNAL) << "tensor '" << t.name() << "': external data left unread";
  if (v.dtype == DType::String) {
    user_assert(!t.has_raw_data() && t.string_data_size() == v.elements())
        << "tensor '" << t.name() << "' holds " << t.string_data_size() << " strings but its shape "
        << graph::shape_str(v.shape) << " needs " << v.elements();
    bytes = graph::string_table({t.string_data().begin(), t.string_data().end()}, &v.string_bytes);
  } else if (int bits = v.dtype == DType::U4 || v.dtype == DType::I4 || v.dtype == DType::F4E2M1 ? 4
                       : v.dtype == DType::U2 || v.dtype == DType::I2                           ? 2
                                                                                                : 0) {
    // ONNX packs these (raw_data, or one packed byte per int32_data entry),
    // the first element in the lowest bits; kiln holds one per byte, the
    // signed ones sign-extended (decision 62).
    std::vector<uint8_t> packed;
    if (t.has_raw_data()) packed.assign(t.raw_data().begin(), t.raw_data().end());
    else append_as<decltype(t.int32_data()), uint8_t>(packed, t.int32_data());
    const int per_byte = 8 / bits, mask = (1 << bits) - 1;
    const uint64_t n = (uint64_t)v.elements(), want = (n + (uint64_t)per_byte - 1) / (uint64_t)per_byte;
    user_assert(packed.size() == want) << "tensor '" << t.name() << "' holds " << packed.size() << " bytes but its shape "
                                       << graph::shape_str(v.shape) << " of " << graph::dtype_name(v.dtype) << " needs "
                                       << want << " (" << per_byte << " elements a byte)";
    const bool is_signed = v.dtype == DType::I4 || v.dtype == DType::I2;
    bytes.resize(n);
    for (uint64_t i = 0; i < n; i++) {
      int e = (packed[i / (uint64_t)per_byte] >> (bits * (int)(i % (uint64_t)per_byte))) & mask;
      if (is_signed && e > mask / 2) e -= mask + 1;
      bytes[i] = (uint8_t)(int8_t)e;
    }
  } else if (t.has_raw_data()) {
    bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    switch (v.dtype) {
      case DType::F32: append_as<decltype(t.float_data()), float>(bytes, t.float_data()); break;
      case DType::F64: append_as<decltype(t.double_data()), double>(bytes, t.double_data()); break;
      case DType::I64: append_as<decltype(t.int64_data()), int64_t>(bytes, t.int64_data()); break;
      case DType::I32: append_as<decltype(t.int32_data()), int32_t>(bytes, t.int32_data()); break;
      case DType::I16: append_as<decltype(t.int32_data()), int16_t>(bytes, t.int32_data()); break;
      case DType::F16: append_as<decltype(t.int32_data()), uint16_t>(bytes, t.int32_data()); break;
      case DType::BF16: append_as<decltype(t.int32_data()), uint16_t>(bytes, t.int32_data()); break;
      case DType::I8: append_as<decltype(t.int32_data()), int8_t>(bytes, t.int32_data()); break;
      case DType::U8: append_as<decltype(t.int32_data()), uint8_t>(bytes, t.int32_data()); break;
      case DType::Bool: append_as<decltype(t.int32_data()), uint8_t>(bytes, t.int32_data()); break;
      case DType::U16: append_as<decltype(t.int32_data()), uint16_t>(bytes, t.int32_data()); break;
      case DType::U32: append_as<decltype(t.uint64_data()), uint32_t>(bytes, t.uint64_data()); break;
      case DType::U64: append_as<decltype(t.uint64_data()), uint64_t>(bytes, t.uint64_data()); break;
      case DType::String: break;  // above
      case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
      case DType::F8E8M0:  // one 8-bit code per int32_data entry
        append_as<decltype(t.int32_data()), uint8_t>(bytes, t.int32_data());
        break;
      case DType::U4: case DType::I4: case DType::F4E2M1: case DType::U2: case DType::I2: break;  // above
    }
  }
  user_assert(bytes.size() == v.byte_size()) << "tensor '" << t.name() << "' holds " << bytes.size()
                                             << " bytes but its shape " << graph::shape_str(v.shape) << " of "
                                             << graph::dtype_name(v.dtype) << " needs " << v.byte_size();
  v.data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return v;
}

// Fills dtype and shape from an ONNX type; returns false if the shape is
// not fully static. With `symbols`, a dimension named after a shape symbol
// is that symbol: its expression goes to *dims (all dimensions, when any is one).
bool read_type(const onnx::TypeProto& type, graph::Value& v, std::string* dynamic_dim,
               const std::vector<graph::Symbol>* symbols = nullptr, graph::DimExprs* dims = nullptr) {
  if (!type.has_tensor_type()) return false;
  auto& tt = type.tensor_type();
  if (tt.elem_type() == 0 || !tt.has_shape()) return false;
  v.dtype = dtype_from_onnx(tt.elem_type(), "value '" + v.name + "'");
  v.shape.clear();
  graph::DimExprs d_out;
  bool symbolic = false;
  for (auto& d : tt.shape().dim()) {
    user_assert(!d.has_dim_value() || d.dim_value() >= 0)
        << "value '" << v.name << "' has a negative dimension " << d.dim_value() << "; fix the model";
    if (!d.has_dim_value()) {
      const graph::Symbol* sym = nullptr;
      if (symbols && d.has_dim_param())
        for (auto& s : *symbols)
          if (s.name == d.dim_param()) sym = &s;
      if (!sym) {
        if (dynamic_dim) *dynamic_dim = d.has_dim_param() ? d.dim_param() : "?";
        return false;
      }
      v.shape.push_back(sym->hi);
      d_out.push_back(sym->var);
      symbolic = true;
      continue;
    }
    v.shape.push_back(d.dim_value());
    d_out.push_back(tir::Expr(d.dim_value()));
  }
  if (symbolic && dims) *dims = d_out;
  return true;
}

// Fills dtype and rank from an ONNX type (dimensions ONNX knew as values,
// -1 for the others); returns false without a tensor type or a shape.
bool read_rank(const onnx::TypeProto& type, graph::Value& v) {
  if (!type.has_tensor_type()) return false;
  auto& tt = type.tensor_type();
  if (tt.elem_type() == 0 || !tt.has_shape()) return false;
  v.dtype = dtype_from_onnx(tt.elem_type(), "value '" + v.name + "'");
  v.shape.clear();
  for (auto& d : tt.shape().dim()) {
    user_assert(!d.has_dim_value() || d.dim_value() >= 0)
        << "value '" << v.name << "' has a negative dimension " << d.dim_value() << "; fix the model";
    v.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return true;
}

graph::Attr attr_from_onnx(const onnx::AttributeProto& a, graph::Graph& g, const std::string& node_name) {
  graph::Attr r;
  switch (a.type()) {
    case onnx::AttributeProto::INT: r.kind = graph::Attr::Kind::Int; r.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: r.kind = graph::Attr::Kind::Float; r.f = a.f(); break;
    case onnx::AttributeProto::STRING: r.kind = graph::Attr::Kind::String; r.s = a.s(); break;
    case onnx::AttributeProto::INTS:
      r.kind = graph::Attr::Kind::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      r.kind = graph::Attr::Kind::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      r.kind = graph::Attr::Kind::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      r.kind = graph::Attr::Kind::Tensor;
      graph::Value v = value_from_tensor(a.t());
      v.name = g.unique_name(node_name + "." + a.name());
      r.tensor = g.add_value(std::move(v));
      break;
    }
    case onnx::AttributeProto::GRAPH: r.kind = graph::Attr::Kind::Graph; break;
    default:
      user_error << "node '" << node_name << "': attribute '" << a.name() << "' has an unsupported type";
  }
  return r;
}

// A Constant node becomes a constant value (normalize_constant_nodes left
// only the tensor form).
graph::Value constant_node_value(const onnx::NodeProto& n) {
  user_assert(n.attribute_size() == 1) << "Constant node '" << n.name() << "' must have exactly one attribute";
  auto& a = n.attribute(0);
  user_assert(a.name() == "value") << "Constant node '" << n.name() << "': attribute '" << a.name()
                                   << "' is not supported";
  graph::Value v = value_from_tensor(a.t());
  v.name = n.output(0);
  return v;
}

// A kiln.InputValue node copying value `source` (an integer tensor of at
// most 16 elements) as `name`: each element becomes a data symbol in
// [lo, hi] that the runtime checks right after the copy (infer_dims.cpp).
// Returns the copy; readers read it instead.
int checked_copy(graph::Graph& out, int source, const std::string& name, int64_t lo, int64_t hi) {
  graph::Value copy = out.values[(size_t)source];
  copy.name = out.unique_name(name);
  copy.producer = (int)out.nodes.size();
  graph::Node node;
  node.op = "kiln.InputValue";
  node.name = copy.name;
  node.inputs = {source};
  node.outputs = {out.add_value(std::move(copy))};
  for (auto& [attr, v] : {std::make_pair("lo", lo), std::make_pair("hi", hi)}) {
    graph::Attr a;
    a.i = v;
    node.attrs[attr] = a;
  }
  out.nodes.push_back(std::move(node));
  return out.nodes.back().outputs[0];
}

}  // namespace

graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const ImportOptions& options) {
  onnx::ModelProto model;
  user_assert(model.ParseFromString(bytes)) << "not a valid ONNX model (protobuf parse failed)";
  // Nodes in topological order, as everything after expects (sort_nodes.h).
  if (sort_nodes(model) > 0) user_warning << "the model's nodes are not in topological order; kilnc sorted them";
  // The model's own functions, inlined (expand_functions.h).
  inline_local_functions(model);
  validate_model(model);
  expand_contrib_ops(model);
  read_external_data(model, model_dir);

  // ONNX's checker only warns (decision 60): what kilnc relies on, its own
  // checks enforce (validate.h); what ONNX Runtime runs despite the checker
  // (a newer IR version, a missing field) kilnc compiles too.
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    user_warning << "the model fails ONNX's checker (" << one_line(e.what()) << "); compiling it anyway";
  }
  normalize_constant_nodes(*model.mutable_graph());

  int64_t opset = -1, ml_opset = 0;
  bool training = false;  // ONNX's optimizers (graph::kPreviewTraining rows)
  for (auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (o.domain() == graph::kMlDomain) ml_opset = o.version();
    training |= o.domain() == kPreviewTrainingDomain;
  }
  // A model of only the optimizers or of only ai.onnx.ml operators imports
  // no default opset: its operators do not depend on one (the version the
  // suite's optimizers are tested against).
  if (opset < 0 && (training || ml_opset > 0)) opset = 16;
  user_assert(opset > 0) << "the model imports no default-domain (ai.onnx) opset";
  if (opset < 7) {
    // Opset 7 brought numpy broadcasting; older models are converted to it
    // (the smallest step, so the fewest of the converter's adapters run).
    try {
      // The converter's broadcasting adapters need every operand's shape,
      // Constants' outputs and intermediates included: infer them first.
      onnx::shape_inference::InferShapes(model, guarded_schema_registry());
      model = onnx::version_conversion::ConvertVersion(model, 7);
      opset = 7;
    } catch (const std::exception& e) {
      user_error << "the model uses opset " << opset << " and ONNX's converter could not bring it to opset 7: " << e.what();
    }
  }

  // Sequence and optional inputs: their tensors (boundary_values.h).
  clear_composite_records(model);
  expand_composite_inputs(model, options.sequence_lengths);

  // Apply --input-shape overrides to the graph inputs: static dimensions
  // become values, run-time ones (ranges, or the model's named dimensions
  // bounded by --dim) shape symbols, written as dim_params for ONNX's
  // shape inference.
  auto* g = model.mutable_graph();
  std::unordered_map<std::string, int> initializer_names;
  for (int i = 0; i < g->initializer_size(); i++) initializer_names[g->initializer(i).name()] = i;
  std::map<std::string, std::vector<DimSpec>> unused = options.input_shapes;
  std::map<std::string, std::pair<int64_t, int64_t>> unused_dims = options.dim_bounds;
  std::vector<graph::Symbol> symbols;
  std::vector<std::pair<std::string, std::string>> unbounded_dims;  // (dimension name, input) nothing bounds
  auto symbol = [&](const std::string& name, int64_t lo, int64_t hi, const std::string& where, bool unbounded = false) {
    user_assert(lo >= 1 && lo <= hi && hi <= graph::kMaxRunTimeDim)
        << where << ": the range " << lo << ".." << hi << " must have 1 <= LO <= HI <= 2^31";
    for (auto& s : symbols)
      if (s.name == name) {
        user_assert(s.unbounded == unbounded && s.lo == lo && s.hi == hi)
            << where << ": dimension '" << name << "' is given two ranges, " << s.lo << ".." << s.hi << " and " << lo
            << ".." << hi;
        return;
      }
    symbols.push_back({name, tir::Var::make_symbol(name, (int)symbols.size(), lo, hi), lo, hi, -1, unbounded});
  };
  for (auto& in : *g->mutable_input()) {
    if (initializer_names.count(in.name()) || !in.type().has_tensor_type()) continue;
    auto it = options.input_shapes.find(in.name());
    user_assert(in.type().tensor_type().has_shape() || it != options.input_shapes.end())
        << "model input '" << in.name() << "' has no shape, not even a rank; give it one with --input-shape "
        << in.name() << "=D0,D1,... (a scalar: --input-shape " << in.name() << "=)";
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    clear_negative_dims(*shape);
    if (it == options.input_shapes.end()) {  // the model's own dimensions: --dim bounds named ones
      if (options.frozen_inputs.count(in.name())) continue;  // (becomes a constant below)
      for (int k = 0; k < shape->dim_size(); k++) {
        auto& d = *shape->mutable_dim(k);
        if (d.has_dim_value()) continue;
        auto b = d.has_dim_param() ? options.dim_bounds.find(d.dim_param()) : options.dim_bounds.end();
        if (b != options.dim_bounds.end()) {
          unused_dims.erase(d.dim_param());
          symbol(d.dim_param(), b->second.first, b->second.second, "--dim " + d.dim_param());
          continue;
        }
        // Nothing bounds it here (another input's --input-shape may name it
        // too: decided after the loop).
        std::string name = d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : in.name() + "." + std::to_string(k);
        d.set_dim_param(name);
        unbounded_dims.push_back({name, in.name()});
      }
      continue;
    }
    unused.erase(in.name());
    std::vector<std::string> params;
    for (auto& d : shape->dim()) params.push_back(d.has_dim_param() ? d.dim_param() : "");
    user_assert(!shape->dim_size() || shape->dim_size() == (int)it->second.size())
        << "--input-shape " << in.name() << ": " << it->second.size() << " dimensions, but the model's input has "
        << shape->dim_size();
    shape->clear_dim();
    for (size_t k = 0; k < it->second.size(); k++) {
      const DimSpec& spec = it->second[k];
      std::string where = "--input-shape " + in.name() + " dimension " + std::to_string(k);
      if (spec.named) {
        const std::string& p = k < params.size() ? params[k] : std::string();
        user_assert(!p.empty()) << where << ": '?' keeps the model's name for a dimension, and this one has none; "
                                << "give a size or a range LO..HI";
        auto b = options.dim_bounds.find(p);
        user_assert(b != options.dim_bounds.end()) << where << ": the model calls it '" << p << "'; bound it with --dim "
                                                   << p << "=LO..HI";
        unused_dims.erase(p);
        symbol(p, b->second.first, b->second.second, where);
        shape->add_dim()->set_dim_param(p);
      } else if (spec.lo == spec.hi) {
        shape->add_dim()->set_dim_value(spec.lo);
      } else {
        // A range: named by the model's dim_param where it has one (inputs
        // sharing it share the symbol), else INPUT.K.
        std::string name = k < params.size() && !params[k].empty() ? params[k] : in.name() + "." + std::to_string(k);
        symbol(name, spec.lo, spec.hi, where);
        shape->add_dim()->set_dim_param(name);
      }
    }
  }
  // The dimensions nothing bounds: a size only the run gives, up to 2^31,
  // and what it sizes is allocated per run (graph::Symbol::unbounded).
  for (auto& [name, input] : unbounded_dims) {
    bool named = false;
    for (auto& sym : symbols) named |= sym.name == name;
    if (!named) symbol(name, 1, graph::kMaxRunTimeDim, "model input '" + input + "'", true);
  }
  if (!unused.empty()) user_error << "--input-shape names '" << unused.begin()->first << "', which is not a model input";
  if (!unused_dims.empty())
    user_error << "--dim names '" << unused_dims.begin()->first << "', which is no named dimension of a model input";
  bool dynamic = !symbols.empty() || !options.input_values.empty();  // run-time dimensions; also set below
  // --freeze-input: the input becomes an initializer holding the given value.
  for (auto& [name, bytes] : options.frozen_inputs) {
    int index = -1;
    for (int i = 0; i < g->input_size(); i++)
      if (g->input(i).name() == name) index = i;
    user_assert(index >= 0 && !initializer_names.count(name)) << "--freeze-input names '" << name << "', which is not a model input";
    onnx::TensorProto t;
    user_assert(t.ParseFromString(bytes)) << "--freeze-input " << name << ": not a serialized ONNX TensorProto";
    t.set_name(name);
    *g->add_initializer() = t;
    initializer_names[name] = g->initializer_size() - 1;
    g->mutable_input()->DeleteSubrange(index, 1);
  }
  // IR 3 lists every initializer as a graph input too, which there means
  // nothing more: those inputs go, and the model becomes IR 4, where
  // initializers stand alone (shape inference types them, the folds below
  // read them as constants and may add their own).
  if (model.ir_version() < 4) {
    auto* inputs = g->mutable_input();
    for (int i = inputs->size() - 1; i >= 0; i--)
      if (initializer_names.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
    model.set_ir_version(4);
  }
  // Declared shapes are hints: value_info goes, and the outputs' shapes wait
  // until inference has run (declared_shapes.h).
  const DeclaredShapes declared = strip_declared_shapes(model);

  // Shape inference, with shape computations evaluated at compile time.
  // Where ONNX's inference fails, kilnc's own infers every shape (infer_dims.h).
  bool onnx_inference_failed = false;
  fold_shape_computations(model, nullptr, &onnx_inference_failed);
  // Gradient nodes: their derivative nodes, then types for those (gradient.h).
  if (expand_gradients(model) > 0) fold_shape_computations(model, nullptr, &onnx_inference_failed);
  // Ifs whose condition is still unknown: both branches, predicated (inline_if.h).
  // One level at a time: an inner If's condition may fold once its
  // branch is in the main graph (16 levels at most).
  RunTimeIfs run_time_ifs;
  for (int level = 0; level < 16 && inline_run_time_ifs(model, &run_time_ifs) > 0; level++) {
    fold_shape_computations(model, &run_time_ifs, &onnx_inference_failed);  // types for the inlined values
    dynamic = true;                                 // each condition is a data symbol
  }
  const bool declared_only = reconcile_declared_shapes(model, declared);
  // Run-time dimensions too when an operator's output size only its kernel
  // knows (a data symbol, infer_dims: NonZero), or may come from the values
  // of an input computed at run time (TopK's k, Slice's starts) that is
  // still no initializer nor a Constant node's output once shape
  // computations are folded (infer_dims then finds out).
  std::set<std::string> constants;
  for (auto& t : g->initializer()) constants.insert(t.name());
  for (auto& n : g->node())
    if (graph::op_traits(graph::onnx_op_name(n.domain(), n.op_type())).role == graph::OpRole::Import)
      for (auto& o : n.output()) constants.insert(o);
  // Run-time sequence positions, checked through a kiln.InputValue each.
  std::map<std::string, RangeCheck> checks;
  if (options.run_time_checks)
    for (auto& c : range_checks(model)) checks[c.value] = c;
  dynamic |= !checks.empty() || onnx_inference_failed || declared_only;
  for (auto& n : g->node()) {
    const graph::OpTraits& t = graph::op_traits(graph::onnx_op_name(n.domain(), n.op_type()));
    dynamic |= t.data_shape();
    for (int i = 1; t.value_shape() && i < n.input_size(); i++) dynamic |= !n.input(i).empty() && !constants.count(n.input(i));
  }
  // Values ONNX's inference left without a static shape though every input
  // has one (tf2onnx's unk__0 dimensions, an operator whose inference gave
  // up): kilnc's own inference (infer_dims.h) gives them theirs.
  if (!dynamic) {
    std::set<std::string> typed;
    auto is_static = [](const onnx::TypeProto& t) {
      if (!t.has_tensor_type() || !t.tensor_type().elem_type() || !t.tensor_type().has_shape()) return false;
      for (auto& d : t.tensor_type().shape().dim())
        if (!d.has_dim_value()) return false;
      return true;
    };
    for (auto& vi : g->value_info())
      if (is_static(vi.type())) typed.insert(vi.name());
    for (auto& vi : g->output())
      if (is_static(vi.type())) typed.insert(vi.name());
    std::vector<std::string> read;
    for (auto& n : g->node()) node_reads(n, true, &read);
    for (auto& vi : g->output()) read.push_back(vi.name());
    std::set<std::string> wanted(read.begin(), read.end());
    for (auto& n : g->node()) {
      if (graph::op_traits(n.op_type()).role == graph::OpRole::Import) continue;
      for (auto& o : n.output()) dynamic |= !o.empty() && wanted.count(o) && !typed.count(o);
    }
  }

  graph::Graph out;
  out.symbols = symbols;
  out.opset = opset;
  out.ml_opset = ml_opset;
  out.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  std::unordered_map<std::string, int> value_ids;
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (auto& vi : g->value_info()) types[vi.name()] = &vi.type();
  for (auto& vi : g->output()) types[vi.name()] = &vi.type();

  for (auto& t : g->initializer()) {
    int id = out.add_value(value_from_tensor(t));
    value_ids[t.name()] = id;
  }
  for (auto& in : g->input()) {
    if (initializer_names.count(in.name())) continue;  // an initializer listed as input (IR < 4): a constant
    if (!in.type().has_tensor_type()) {  // an optional (or sequence) static_sequences.h could not resolve
      std::string readers;
      for (auto& n : g->node())
        for (auto& i : n.input())
          if (i == in.name() && readers.empty()) readers = n.op_type() + " node '" + n.name() + "'";
      user_error << "model input '" << in.name() << "' is " << (in.type().has_optional_type() ? "an optional" : "no tensor")
                 << ", which kilnc resolves only when what reads it is known at compile time"
                 << (readers.empty() ? std::string(" (it is read inside a subgraph: a Loop's or If's)")
                                     : " (" + readers + " reads it)")
                 << "; a Loop needs a constant trip count";
    }
    graph::Value v;
    v.name = in.name();
    std::string dyn;
    graph::DimExprs dims;
    if (!read_type(in.type(), v, &dyn, dynamic ? &out.symbols : nullptr, &dims)) {
      user_error << "model input '" << in.name() << "' has a dynamic dimension '" << dyn
                 << "'; give it a static shape with --input-shape " << in.name()
                 << "=D0,D1,..., or sizes known only at run time: a range LO..HI for the dimension in --input-shape, "
                 << "or --dim " << dyn << "=LO..HI";
    }
    int id = out.add_value(std::move(v));
    if (!dims.empty()) out.set_dims(id, dims);
    if (!out.runtime_sized(id)) check_size(out.values[id], "model input '" + in.name() + "'");
    value_ids[in.name()] = id;
    out.inputs.push_back(id);
  }

  // --input-value: a kiln.InputValue node copies the input and every reader
  // reads the copy, whose elements are data symbols (import/infer_dims.cpp).
  std::map<std::string, int> input_ids;  // the inputs themselves (a model output may be one)
  for (auto& [name, range] : options.input_values) {
    auto it = value_ids.find(name);
    bool is_input = it != value_ids.end() && std::count(out.inputs.begin(), out.inputs.end(), it->second);
    user_assert(is_input) << "--input-value names '" << name << "', which is not a model input";
    const graph::Value& x = out.values[(size_t)it->second];
    tir::Type t = graph::dtype_to_tir(x.dtype);
    user_assert((t.is_int() || t.is_uint()) && x.dtype != DType::Bool && !x.is_dynamic() && x.elements() <= 16)
        << "--input-value " << name << ": the input is " << graph::dtype_name(x.dtype) << graph::shape_str(x.shape)
        << "; value ranges are for integer inputs of at most 16 elements with a static shape";
    input_ids[name] = it->second;
    value_ids[name] = checked_copy(out, it->second, name + ".value", range.first, range.second);
  }

  std::set<int> unknown_rank;      // (run-time dimensions) values whose rank ONNX did not know
  std::set<std::string> consumed;  // values some node (subgraphs' included) or the model's outputs read
  {
    std::vector<std::string> names;
    for (auto& n : g->node()) node_reads(n, true, &names);
    consumed.insert(names.begin(), names.end());
  }
  for (auto& o : g->output()) consumed.insert(o.name());
  for (int ni = 0; ni < g->node_size(); ni++) {
    const auto& n = g->node(ni);
    std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(ni) : n.name();
    const std::string op = graph::onnx_op_name(n.domain(), n.op_type());
    if (n.domain() == graph::kMlDomain && !graph::op_traits(op).known()) {
      std::string ml;  // the ai.onnx.ml rows
      for (const graph::OpTraits& t : graph::op_table())
        if (t.family == graph::OpFamily::Ml) ml += (ml.empty() ? "" : ", ") + std::string(t.name + strlen(graph::kMlDomain) + 1);
      user_error << n.op_type() << " node '" << name << "': kilnc does not support this operator of domain "
                 << graph::kMlDomain << " yet; of that domain it supports " << ml;
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx" && n.domain() != graph::kMlDomain &&
        !(n.domain() == kPreviewTrainingDomain && graph::op_traits(n.op_type()).preview_training())) {
      user_error << n.op_type() << " node '" << name << "': operators of domain '" << n.domain()
                 << "' are not supported; only the default ONNX domain and ai.onnx.ml are (and of com.microsoft: "
                 << supported_contrib_ops() << ")";
    }
    if (n.op_type() == "If") {  // left by inline_run_time_ifs (import/inline_if.h)
      user_error << "If node '" << name << "': its condition '" << (n.input_size() ? n.input(0) : std::string())
                 << "' is only known at run time, and kilnc runs such an If only when both branches give as many "
                    "outputs as it has and it is nested at most 16 deep; a compile-time constant condition "
                    "(computed from static shapes, or from a model input frozen with --freeze-input NAME=FILE.pb) "
                    "picks its branch";
    }
    if (graph::op_traits(op).role == graph::OpRole::Import) {  // Constant
      graph::Value v = constant_node_value(n);
      std::string vname = v.name;
      value_ids[vname] = out.add_value(std::move(v));
      continue;
    }
    graph::Node node;
    node.op = run_time_ifs.conditions.count(name) ? "kiln.Condition" : op;
    node.name = name;
    if (auto gi = run_time_ifs.guards.find(name); gi != run_time_ifs.guards.end())
      for (auto& [flag, taken] : gi->second) node.guards.push_back({value_ids.at(flag), taken});
    for (auto& a : n.attribute()) node.attrs[a.name()] = attr_from_onnx(a, out, name);
    for (auto& in : n.input()) {
      if (in.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      auto it = value_ids.find(in);
      user_assert(it != value_ids.end()) << node.describe() << ": input '" << in << "' is not defined before use";
      node.inputs.push_back(it->second);
    }
    int node_index = (int)out.nodes.size();
    for (auto& o : n.output()) {
      if (o.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      graph::Value v;
      v.name = o;
      v.producer = node_index;
      auto t = types.find(o);
      std::string dyn;
      // With run-time dimensions, ONNX's rank and element type are enough:
      // infer_run_time_dims gives the dimensions (-1 where ONNX knew none),
      // and the rank too where ONNX knew not even that (the element type
      // then is the first input's, as for every operator with a rule).
      bool typed = t != types.end() && (dynamic ? read_rank(*t->second, v) : read_type(*t->second, v, &dyn));
      if (!typed && dynamic && consumed.count(o) && !node.inputs.empty() && node.inputs[0] >= 0 &&
          graph::op_traits(node.op).dims != graph::OpDims::None) {
        if (t == types.end() || !t->second->has_tensor_type() || !t->second->tensor_type().elem_type())
          v.dtype = out.values[node.inputs[0]].dtype;
        else
          v.dtype = dtype_from_onnx(t->second->tensor_type().elem_type(), "value '" + o + "'");
        v.shape.clear();
        unknown_rank.insert((int)out.values.size());  // the id add_value gives it below
        typed = true;
      }
      if (!typed && !consumed.count(o)) {  // an output nothing reads (Dropout's mask in opsets 7-9)
        node.outputs.push_back(-1);
        continue;
      }
      if (!typed) {
        bool integer_input = false;
        for (int i : out.inputs) {
          tir::Type t = graph::dtype_to_tir(out.values[(size_t)i].dtype);
          integer_input |= (t.is_int() || t.is_uint()) && out.values[(size_t)i].elements() <= 16;
        }
        user_error << node.describe() << ": ONNX shape inference could not give output '" << o << "' a static shape"
                   << (dyn.empty() ? "" : " (dimension '" + dyn + "' is dynamic)")
                   << "; pass static input shapes with --input-shape, or simplify the model"
                   << (integer_input ? "; if a small integer input's values decide it, give them a range with "
                                       "--input-value NAME=LO..HI"
                                     : "");
      }
      if (!dynamic) check_size(v, node.describe() + ": output '" + o + "'");
      int id = out.add_value(std::move(v));
      value_ids[o] = id;
      node.outputs.push_back(id);
    }
    out.nodes.push_back(std::move(node));
    // A run-time sequence position: readers read it range-checked.
    for (auto& o : n.output()) {
      auto c = checks.find(o);
      if (c != checks.end() && value_ids.count(o))
        value_ids[o] = checked_copy(out, value_ids[o], c->second.node + ".position", c->second.lo, c->second.hi);
    }
  }

  user_assert(g->output_size() > 0) << "the model has no outputs: there is nothing to compute";
  for (auto& [name, range] : options.input_values) value_ids[name] = input_ids.at(name);  // an output keeps its name
  for (auto& o : g->output()) {
    auto it = value_ids.find(o.name());
    user_assert(it != value_ids.end()) << "model output '" << o.name() << "' is not produced by any node";
    out.outputs.push_back(it->second);
  }
  // Sequences and optionals at the boundary: their tensors' positions among the inputs or outputs.
  for (auto& r : composite_records(model)) {
    const std::vector<int>& among = r.output ? out.outputs : out.inputs;
    auto position = [&](const std::string& name) {
      auto it = value_ids.find(name);
      auto at = it == value_ids.end() ? among.end() : std::find(among.begin(), among.end(), it->second);
      internal_assert(at != among.end()) << name << " is no model " << (r.output ? "output" : "input");
      return (int)(at - among.begin());
    };
    graph::Composite c{r.name, r.output, r.optional, r.sequence, {}, -1};
    for (auto& name : r.element_names()) c.elements.push_back(position(name));
    if (r.optional) c.presence = position(optional_presence_name(r.name));
    out.composites.push_back(c);
  }
  if (dynamic) {
    infer_run_time_dims(out, unknown_rank);
    for (size_t i = 0; i < out.values.size(); i++) {
      const graph::Value& v = out.values[i];
      if (out.runtime_sized((int)i)) continue;  // (sized per run, and checked by the runtime then)
      check_size(v, (v.producer >= 0 ? out.nodes[(size_t)v.producer].describe() + ": output '" : "value '") + v.name +
                        "' (at its largest)");
    }
  }
  size_string_values(out, options.string_bytes);
  for (auto& n : out.nodes) {  // a run-time If's branches must give its outputs the same shapes
    auto m = run_time_ifs.merges.find(n.name);
    if (m == run_time_ifs.merges.end() || n.inputs.size() != 3) continue;
    const graph::Value &a = out.values[(size_t)n.inputs[1]], &b = out.values[(size_t)n.inputs[2]];
    user_assert(a.dtype == b.dtype && out.same_dims(a.dim_exprs(), b.dim_exprs()))
        << m->second << ": its branches give " << graph::dims_str(a.dim_exprs()) << " and "
        << graph::dims_str(b.dim_exprs()) << "; kilnc runs an If whose condition is known only at run time when both "
        << "branches give each output the same type and shape";
  }
  return out;
}

}  // namespace kiln

namespace kiln {
namespace {

// A ModelProto's first byte is the tag of one of its fields (protobuf wire
// format: field << 3 | wire type): ir_version (1, varint), producer_name (2),
// producer_version (3), domain (4), doc_string (6), graph (7), opset_import
// (8), metadata_props (14), training_info (20), functions (25): bytes.
bool looks_like_onnx(const std::string& bytes) {
  if (bytes.empty()) return false;
  const unsigned char tag = (unsigned char)bytes[0];
  const unsigned field = tag >> 3, wire = tag & 7;
  if (field == 1 || field == 5) return wire == 0;  // ir_version, model_version
  return wire == 2 && (field == 2 || field == 3 || field == 4 || field == 6 || field == 7 || field == 8 ||
                       field == 14 || field == 20 || field == 25);
}

}  // namespace

const Frontend kOnnxFrontend = {"onnx", "ONNX ModelProto (.onnx), opsets 1 to the pinned ONNX's newest",
                                looks_like_onnx, import_onnx_bytes};

}  // namespace kiln
