// ReadModelContents and the text helpers of contents.h; the FLOPs of the
// operators whose count the bundle's shapes and attributes give.
#include "contents.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace kiln_tool {

namespace {

// Fills `out` with `count` entries: get(i, &(*out)[i]) until one fails.
template <typename Info, typename Get>
kiln::Status ReadAll(size_t count, std::vector<Info>* out, Get get) {
  out->resize(count);
  kiln::Status status;
  for (size_t i = 0; status.ok() && i < count; ++i) status = get(i, &(*out)[i]);
  return status;
}

// The integers of an attribute's text value: "[1, 2]" or "3".
std::vector<int64_t> IntList(const char* text) {
  std::vector<int64_t> values;
  if (!text) return values;
  for (const char* p = text; *p;) {
    if ((*p >= '0' && *p <= '9') || *p == '-') {
      char* end = nullptr;
      values.push_back(strtoll(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return values;
}

int64_t Product(const int64_t* dims, size_t count) {
  int64_t product = 1;
  for (size_t i = 0; i < count; ++i) product *= dims[i];
  return product;
}

// Conv: 2 * N * prod(output spatial) * Cout * Cin/group * prod(kernel), the
// direct count also for Winograd convs (whose packed weights hold
// (m + k - 1)^2 taps: kiln_winograd = m). Weights in any layout kilnc writes
// hold Cout * Cin/group * taps elements (NCHW [Cout, Cin/g, kh, kw], NCHWc
// [Cout/o, Cin/i, kh, kw, i, o]); activations have their spatial dimensions
// at 2.. in NCHW and NCHWc alike.
bool ConvFlops(const ModelContents& c, size_t node, double* flops) {
  const kiln_node_info_t& n = c.nodes[node];
  if (n.input_count < 2) return false;
  const kiln_tensor_info_t& x = c.tensors[n.inputs[0]];
  const kiln_tensor_info_t& w = c.tensors[n.inputs[1]];
  std::vector<int64_t> kernel = IntList(FindAttribute(c, node, "kernel_shape"));
  if (kernel.empty() && w.rank == x.rank) kernel.assign(w.shape + 2, w.shape + w.rank);
  size_t spatial = kernel.size();
  if (spatial == 0 || x.rank < 2 + spatial) return false;
  std::vector<int64_t> strides = IntList(FindAttribute(c, node, "strides"));
  std::vector<int64_t> dilations = IntList(FindAttribute(c, node, "dilations"));
  std::vector<int64_t> pads = IntList(FindAttribute(c, node, "pads"));
  const char* auto_pad = FindAttribute(c, node, "auto_pad");
  bool same = auto_pad && strstr(auto_pad, "SAME");
  std::vector<int64_t> winograd_m = IntList(FindAttribute(c, node, "kiln_winograd"));
  int64_t winograd = winograd_m.empty() ? 0 : winograd_m[0];
  const kiln_tensor_info_t* y = n.output_count ? &c.tensors[n.outputs[0]] : nullptr;
  int64_t outputs = x.shape[0], taps = 1, stored_taps = 1;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t k = kernel[i];
    int64_t stride = i < strides.size() ? strides[i] : 1;
    int64_t dilation = i < dilations.size() ? dilations[i] : 1;
    int64_t pad = pads.size() == 2 * spatial ? pads[i] + pads[i + spatial] : 0;
    int64_t in = x.shape[2 + i], out;
    if (y && y->rank >= 2 + spatial) out = y->shape[2 + i];
    else if (same) out = (in + stride - 1) / stride;
    else out = (in + pad - dilation * (k - 1) - 1) / stride + 1;
    if (k <= 0 || stride <= 0 || out <= 0) return false;
    outputs *= out;
    taps *= k;
    stored_taps *= winograd ? winograd + k - 1 : k;
  }
  int64_t channel_pairs = Product(w.shape, w.rank) / stored_taps;  // Cout * Cin/group
  *flops = 2.0 * (double)outputs * (double)channel_pairs * (double)taps;
  return channel_pairs > 0;
}

// Gemm: 2 * M * N * K with A [M, K] (transA: [K, M]); N from Y [M, N], or
// from B (any packing holds K * N elements) when Y is fused away.
bool GemmFlops(const ModelContents& c, size_t node, double* flops) {
  const kiln_node_info_t& n = c.nodes[node];
  if (n.input_count < 2) return false;
  const kiln_tensor_info_t& a = c.tensors[n.inputs[0]];
  const kiln_tensor_info_t& b = c.tensors[n.inputs[1]];
  if (a.rank != 2) return false;
  const char* trans_a = FindAttribute(c, node, "transA");
  bool transposed = trans_a && IntList(trans_a) == std::vector<int64_t>{1};
  int64_t m = transposed ? a.shape[1] : a.shape[0], k = transposed ? a.shape[0] : a.shape[1];
  int64_t cols = 0;
  if (n.output_count && c.tensors[n.outputs[0]].rank == 2) cols = c.tensors[n.outputs[0]].shape[1];
  else if (k > 0) cols = Product(b.shape, b.rank) / k;
  *flops = 2.0 * (double)m * (double)cols * (double)k;
  return *flops > 0;
}

// MatMul: 2 * prod(Y) * K with K the last dimension of A; without Y, 2 *
// prod(A) * N for an unpacked B [..., K, N] (B broadcast over A's batch).
bool MatMulFlops(const ModelContents& c, size_t node, double* flops) {
  const kiln_node_info_t& n = c.nodes[node];
  if (n.input_count < 2) return false;
  const kiln_tensor_info_t& a = c.tensors[n.inputs[0]];
  const kiln_tensor_info_t& b = c.tensors[n.inputs[1]];
  if (a.rank == 0 || b.rank == 0) return false;
  int64_t k = a.shape[a.rank - 1];
  if (n.output_count) {
    const kiln_tensor_info_t& y = c.tensors[n.outputs[0]];
    *flops = 2.0 * (double)Product(y.shape, y.rank) * (double)k;
  } else if (b.rank >= 2 && b.rank <= a.rank && !FindAttribute(c, node, "kiln_packed_b")) {
    *flops = 2.0 * (double)Product(a.shape, a.rank) * (double)b.shape[b.rank - 1];
  } else {
    return false;
  }
  return *flops > 0;
}

}  // namespace

kiln::Status ReadModelContents(const kiln::Model& model, ModelContents* out) {
  kiln::Status status = model.get_info(&out->info);
  const kiln_model_info_t& info = out->info;
  auto tensor = [&](size_t i, kiln_tensor_info_t* t) { return model.get_tensor_info(i, t); };
  auto input = [&](size_t i, kiln_tensor_info_t* t) { return model.get_input_info(i, t); };
  auto output = [&](size_t i, kiln_tensor_info_t* t) { return model.get_output_info(i, t); };
  auto library = [&](size_t i, kiln_library_info_t* l) { return model.get_library_info(i, l); };
  auto kernel = [&](size_t i, kiln_kernel_info_t* k) { return model.get_kernel_info(i, k); };
  auto node = [&](size_t i, kiln_node_info_t* n) {
    kiln::Status read = model.get_node_info(i, n);
    if (!read.ok()) return read;
    return ReadAll(n->attribute_count, &out->attributes[i], [&](size_t a, kiln_attribute_info_t* x) {
      return model.get_attribute_info(i, a, x);
    });
  };
  auto dispatch = [&](size_t i, kiln_dispatch_info_t* d) {
    kiln::Status read = model.get_dispatch_info(i, d);
    if (!read.ok()) return read;
    return ReadAll(d->binding_count, &out->bindings[i], [&](size_t b, kiln_binding_info_t* x) {
      return model.get_binding_info(i, b, x);
    });
  };
  out->attributes.resize(info.node_count);
  out->bindings.resize(info.dispatch_count);
  if (status.ok()) status = ReadAll(info.tensor_count, &out->tensors, tensor);
  if (status.ok()) status = ReadAll(model.input_count(), &out->inputs, input);
  if (status.ok()) status = ReadAll(model.output_count(), &out->outputs, output);
  if (status.ok()) status = ReadAll(info.node_count, &out->nodes, node);
  if (status.ok()) status = ReadAll(info.library_count, &out->libraries, library);
  if (status.ok()) status = ReadAll(info.kernel_count, &out->kernels, kernel);
  if (status.ok()) status = ReadAll(info.dispatch_count, &out->dispatches, dispatch);
  auto composite = [&](size_t i, kiln_composite_info_t* x) { return model.get_composite_info(i, x); };
  if (status.ok()) status = ReadAll(model.composite_count(), &out->composites, composite);
  return status;
}

std::string ShapeText(const kiln_tensor_info_t& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.rank; ++d) {
    if (d) s += ",";
    // A run-time dimension (a bundle compiled with a range) shows its range.
    if (t.dynamic && t.min_shape && t.min_shape[d] != t.shape[d]) s += std::to_string(t.min_shape[d]) + "..";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}

std::string TensorText(const kiln_tensor_info_t& t) {
  return std::string(t.name) + ":" + kiln_dtype_name(t.dtype) + ShapeText(t);
}

std::string JsonString(const char* s) {
  std::string out = "\"";
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    switch (*p) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (*p < 0x20 || *p >= 0x7f) {  // control and non-ASCII bytes: \u00XX (always valid JSON)
          char buffer[8];
          snprintf(buffer, sizeof(buffer), "\\u%04x", *p);
          out += buffer;
        } else {
          out += (char)*p;
        }
    }
  }
  return out + "\"";
}

std::string HexHash(uint64_t hash) {
  char text[17];
  snprintf(text, sizeof(text), "%016llx", (unsigned long long)hash);
  return text;
}

const char* FindAttribute(const ModelContents& c, size_t node, const char* name) {
  for (const kiln_attribute_info_t& attribute : c.attributes[node]) {
    if (!strcmp(attribute.name, name)) return attribute.value;
  }
  return nullptr;
}

std::string DispatchLabel(const ModelContents& c, size_t d) {
  const kiln_dispatch_info_t& dispatch = c.dispatches[d];
  if (!dispatch.source_node_count) return c.kernels[dispatch.kernel].name;
  std::string label;
  for (uint32_t i = 0; i < dispatch.source_node_count; ++i) {
    const kiln_node_info_t& node = c.nodes[dispatch.source_nodes[i]];
    label += std::string(i ? " + " : "") + node.op_type + " \"" + node.name + "\"";
  }
  return label;
}

bool NodeFlops(const ModelContents& c, size_t node, double* flops) {
  const char* op = c.nodes[node].op_type;
  if (!strcmp(op, "Conv")) return ConvFlops(c, node, flops);
  if (!strcmp(op, "Gemm")) return GemmFlops(c, node, flops);
  if (!strcmp(op, "MatMul") || !strcmp(op, "kiln.QMatMul")) return MatMulFlops(c, node, flops);
  if (!strcmp(op, "kiln.QConv")) {  // int8 (docs/int8.md): weights packed as words of 4 input channels
    if (!ConvFlops(c, node, flops)) return false;
    if (IntList(FindAttribute(c, node, "kiln_int8_dot")) == std::vector<int64_t>{1}) *flops *= 4;
    return true;
  }
  return false;
}

}  // namespace kiln_tool
