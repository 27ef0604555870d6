#include "lower/op_lowering.h"

#include <cctype>

#include "support/diagnostics.h"

namespace kiln::lower {

int OpContext::input(size_t i) const {
  user_assert(has_input(i)) << node().describe() << ": required input " << i << " is missing";
  return node().inputs[i];
}
bool OpContext::has_input(size_t i) const { return i < node().inputs.size() && node().inputs[i] >= 0; }
int OpContext::output(size_t i) const {
  internal_assert(i < node().outputs.size() && node().outputs[i] >= 0) << node().describe() << ": no output " << i;
  return node().outputs[i];
}

KernelDef& OpContext::new_kernel(const std::string& what) {
  std::string safe;
  for (char c : node().name) safe += std::isalnum((unsigned char)c) ? c : '_';
  if (safe.size() > 48) safe = safe.substr(0, 48);
  KernelDef k;
  k.name = "k" + std::to_string(next_kernel_id_++) + "_" + what + "_" + safe;
  k.source_nodes = {node_index};
  kernels.push_back(std::move(k));
  return kernels.back();
}

tir::Buffer OpContext::param(KernelDef& k, int value_index, Access access) {
  const graph::Value& v = value(value_index);
  auto b = tir::make_buffer(v.name, graph::dtype_to_tir(v.dtype), v.elements(), (int)k.params.size());
  k.params.push_back(b);
  k.param_values.push_back(value_index);
  k.access.push_back(access);
  return b;
}

void OpContext::require_float32() const {
  for (int v : node().inputs)
    if (v >= 0)
      user_assert(value(v).dtype == graph::DType::F32)
          << node().describe() << ": input '" << value(v).name << "' is " << graph::dtype_name(value(v).dtype)
          << "; kilnc supports this operator on float32 only so far";
  for (int v : node().outputs)
    if (v >= 0)
      user_assert(value(v).dtype == graph::DType::F32)
          << node().describe() << ": output '" << value(v).name << "' is " << graph::dtype_name(value(v).dtype)
          << "; kilnc supports this operator on float32 only so far";
}

std::vector<int64_t> spatial_pads(const OpContext& ctx, const graph::Shape& in, const graph::Shape& out,
                                  const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations) {
  size_t k = kernel.size();
  std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads(2 * k, 0);
  if (auto_pad == "NOTSET") {
    pads = ctx.node().attr_ints("pads", pads);
    user_assert(pads.size() == 2 * k) << ctx.node().describe() << ": 'pads' must have " << 2 * k << " entries";
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < k; i++) {
      int64_t in_d = in[2 + i], out_d = out[2 + i];
      int64_t total = std::max<int64_t>(0, (out_d - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_d);
      int64_t small = total / 2, large = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      pads[i + k] = total - pads[i];
    }
  } else {
    user_assert(auto_pad == "VALID") << ctx.node().describe() << ": unknown auto_pad '" << auto_pad << "'";
  }
  for (int64_t p : pads) user_assert(p >= 0) << ctx.node().describe() << ": negative pads are not supported";
  return pads;
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  user_assert(axis >= 0 && axis < std::max<int64_t>(rank, 1))
      << ctx.node().describe() << ": axis " << axis << " is out of range for rank " << rank;
  return axis;
}

const std::map<std::string, OpLowering>& op_registry() {
  static const std::map<std::string, OpLowering> registry = [] {
    std::map<std::string, OpLowering> r;
    register_conv_ops(r);
    register_pool_ops(r);
    register_elementwise_ops(r);
    register_matmul_ops(r);
    register_shape_ops(r);
    register_softmax_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace kiln::lower
