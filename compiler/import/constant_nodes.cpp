// Constant nodes to their `value` form (constant_nodes.h).
#include "import/constant_nodes.h"

#include <cstring>

#include "support/diagnostics.h"

namespace kiln {
namespace {

// A sparse tensor (values at flat or per-dimension indices) as a dense one
// (zeros elsewhere); raw or typed fields of 1-, 2-, 4- and 8-byte elements.
onnx::TensorProto densify(const onnx::SparseTensorProto& sp, const std::string& node) {
  const onnx::TensorProto& values = sp.values();
  const onnx::TensorProto& indices = sp.indices();
  int64_t total = 1;
  for (int64_t d : sp.dims()) {
    user_assert(d >= 0 && (d == 0 || total <= (int64_t(1) << 40) / d))
        << "Constant node '" << node << "': the sparse value's shape is negative or too large";
    total *= d;
  }
  size_t width = 0;
  switch (values.data_type()) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: width = 4; break;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: width = 8; break;
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: width = 1; break;
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: width = 2; break;
    default:
      user_error << "Constant node '" << node << "': a sparse value of element type "
                 << onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)values.data_type())
                 << " is not supported";
  }
  user_assert(total <= (int64_t(1) << 32) / (int64_t)width)
      << "Constant node '" << node << "': the sparse value's dense form would take more than 4 GiB";
  const int64_t nnz = values.dims_size() == 1 ? values.dims(0) : -1;
  user_assert(nnz >= 0) << "Constant node '" << node << "': the sparse value's values must be 1-D";
  user_assert(nnz <= total) << "Constant node '" << node << "': the sparse value has more values (" << nnz
                            << ") than elements (" << total << ")";
  // The values' bytes, from raw data or the typed field.
  std::string bytes = values.raw_data();
  if (!values.has_raw_data()) {
    for (int64_t k = 0; k < nnz; k++) {
      char b[8] = {0};
      switch (values.data_type()) {
        case onnx::TensorProto::FLOAT: {
          float f = k < values.float_data_size() ? values.float_data((int)k) : 0;
          std::memcpy(b, &f, 4);
          break;
        }
        case onnx::TensorProto::DOUBLE: {
          double f = k < values.double_data_size() ? values.double_data((int)k) : 0;
          std::memcpy(b, &f, 8);
          break;
        }
        case onnx::TensorProto::INT64: {
          int64_t v = k < values.int64_data_size() ? values.int64_data((int)k) : 0;
          std::memcpy(b, &v, 8);
          break;
        }
        case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64: {
          uint64_t v = k < values.uint64_data_size() ? values.uint64_data((int)k) : 0;
          std::memcpy(b, &v, width);
          break;
        }
        default: {
          int32_t v = k < values.int32_data_size() ? values.int32_data((int)k) : 0;
          std::memcpy(b, &v, width);  // little-endian: the low bytes
        }
      }
      bytes.append(b, width);
    }
  }
  user_assert(bytes.size() == (size_t)nnz * width)
      << "Constant node '" << node << "': the sparse value holds " << bytes.size() << " bytes for " << nnz << " values";
  // Indices: [NNZ] flat, or [NNZ, rank] coordinates.
  std::vector<int64_t> idx(indices.int64_data().begin(), indices.int64_data().end());
  if (indices.has_raw_data()) {
    idx.resize(indices.raw_data().size() / 8);
    std::memcpy(idx.data(), indices.raw_data().data(), idx.size() * 8);
  }
  const bool flat = indices.dims_size() == 1;
  const size_t rank = (size_t)sp.dims_size();
  user_assert((flat && (int64_t)idx.size() == nnz) || (!flat && idx.size() == (size_t)nnz * rank))
      << "Constant node '" << node << "': the sparse value's indices do not match its values";
  std::string dense((size_t)total * width, '\0');
  for (int64_t k = 0; k < nnz; k++) {
    int64_t at = 0;
    if (flat) {
      at = idx[(size_t)k];
    } else {
      for (size_t d = 0; d < rank; d++) {
        int64_t i = idx[(size_t)k * rank + d];
        user_assert(i >= 0 && i < sp.dims((int)d)) << "Constant node '" << node << "': a sparse index is out of range";
        at = at * sp.dims((int)d) + i;
      }
    }
    user_assert(at >= 0 && at < total) << "Constant node '" << node << "': a sparse index is out of range";
    std::memcpy(&dense[(size_t)at * width], bytes.data() + (size_t)k * width, width);
  }
  onnx::TensorProto t;
  t.set_data_type(values.data_type());
  for (int64_t d : sp.dims()) t.add_dims(d);
  t.set_raw_data(dense);
  return t;
}

}  // namespace

void normalize_constant_nodes(onnx::GraphProto& g) {
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) normalize_constant_nodes(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) normalize_constant_nodes(sub);
    }
    if (n.op_type() != "Constant" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.attribute_size() != 1)
      continue;
    onnx::AttributeProto& a = *n.mutable_attribute(0);
    onnx::TensorProto t;
    if (a.name() == "value_float" || a.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      if (a.name() == "value_float") t.add_float_data(a.f());
      else for (float f : a.floats()) t.add_float_data(f);
      if (a.name() == "value_floats") t.add_dims(a.floats_size());
    } else if (a.name() == "value_int" || a.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      if (a.name() == "value_int") t.add_int64_data(a.i());
      else for (int64_t i : a.ints()) t.add_int64_data(i);
      if (a.name() == "value_ints") t.add_dims(a.ints_size());
    } else if (a.name() == "value_string" || a.name() == "value_strings") {
      t.set_data_type(onnx::TensorProto::STRING);
      if (a.name() == "value_string") t.add_string_data(a.s());
      else for (const auto& s : a.strings()) t.add_string_data(s);
      if (a.name() == "value_strings") t.add_dims(a.strings_size());
    } else if (a.name() == "sparse_value") {
      t = densify(a.sparse_tensor(), n.name());
    } else {
      continue;
    }
    a.Clear();
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    *a.mutable_t() = t;
  }
}

}  // namespace kiln
