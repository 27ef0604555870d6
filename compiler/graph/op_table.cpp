// The operator table's traits (op_table.h), built from graph/op_table.def.
#include "graph/op_table.h"

#include <unordered_map>

#include "support/diagnostics.h"

namespace kiln::graph {

const std::vector<OpTraits>& op_table() {
  static const std::vector<OpTraits> table = {
#define KILN_OP(id, name, family, lowering, role, layout, fold, params, flags, dims) \
  {Op::id, name, OpFamily::family, OpRole::role, OpLayout::layout, ImportFold::fold, params, flags, OpDims::dims},
#include "graph/op_table.def"
#undef KILN_OP
  };
  return table;
}

namespace {

const OpTraits kUnknown = {Op::Unknown, "?", OpFamily::None, OpRole::Kernel, OpLayout::Nchw,
                           ImportFold::None, kNoParams, kNondeterministic, OpDims::None};

}  // namespace

const OpTraits& op_traits(Op op) {
  const auto& table = op_table();
  size_t i = (size_t)op;
  return i < table.size() ? table[i] : kUnknown;
}

const OpTraits& op_traits(const std::string& name) {
  static const std::unordered_map<std::string, size_t> by_name = [] {
    std::unordered_map<std::string, size_t> m;
    const auto& table = op_table();
    for (size_t i = 0; i < table.size(); i++) {
      internal_assert((size_t)table[i].op == i) << "op_table.def: row " << i << " out of order";
      internal_assert(m.emplace(table[i].name, i).second) << "op_table.def: '" << table[i].name << "' twice";
    }
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? kUnknown : op_table()[it->second];
}

const char* op_name(Op op) { return op_traits(op).name; }

std::string onnx_op_name(const std::string& domain, const std::string& op_type) {
  return domain == kMlDomain ? domain + "." + op_type : op_type;
}

const char* family_name(OpFamily family) {
  switch (family) {
    case OpFamily::Import: return "import";
    case OpFamily::Conv: return "conv";
    case OpFamily::Pool: return "pool";
    case OpFamily::Elementwise: return "elementwise";
    case OpFamily::Math: return "math";
    case OpFamily::Matmul: return "matmul";
    case OpFamily::Shape: return "shape";
    case OpFamily::Softmax: return "softmax";
    case OpFamily::Reduce: return "reduce";
    case OpFamily::Index: return "index";
    case OpFamily::Norm: return "norm";
    case OpFamily::Scan: return "scan";
    case OpFamily::Rnn: return "rnn";
    case OpFamily::Loss: return "loss";
    case OpFamily::Resize: return "resize";
    case OpFamily::Quant: return "quant";
    case OpFamily::Layout: return "layout";
    case OpFamily::Select: return "select";
    case OpFamily::Attention: return "attention";
    case OpFamily::Signal: return "signal";
    case OpFamily::Text: return "text";
    case OpFamily::Random: return "random";
    case OpFamily::Training: return "training";
    case OpFamily::Ml: return "ml";
    case OpFamily::None: return "none";
  }
  return "?";
}

const char* role_name(OpRole role) {
  switch (role) {
    case OpRole::Kernel: return "kernel";
    case OpRole::Elementwise: return "elementwise";
    case OpRole::Heavy: return "heavy";
    case OpRole::Reshape: return "reshape";
    case OpRole::Passthrough: return "passthrough";
    case OpRole::Import: return "import";
  }
  return "?";
}

}  // namespace kiln::graph
