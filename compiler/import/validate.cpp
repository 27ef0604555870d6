// Model checks before ONNX's code runs (validate.h).
#include "import/validate.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "import/subgraph.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

// Attributes of default-domain operators that must be positive wherever
// they appear (their every use in ONNX is a size, step or divisor).
const char* const kPositive[] = {"strides", "dilations", "kernel_shape", "group", "blocksize"};

std::string describe(const onnx::NodeProto& n, int index) {
  return n.op_type() + " node '" + (n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name()) + "'";
}


// What kilnc needs of ONNX's checker, enforced whether or not the checker
// passes: each attribute of a default-domain node has the type its schema
// gives it (lowering reads `strides` as integers), and each name is written
// once in a graph (the import maps names to values).
void check_node(const onnx::NodeProto& n, int index, int64_t opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return;
  const onnx::OpSchema* schema = opset > 0 ? onnx::OpSchemaRegistry::Schema(n.op_type(), (int)opset, "") : nullptr;
  if (!schema) return;  // an operator this opset lacks: the import names it
  const auto& attrs = schema->attributes();
  for (const auto& a : n.attribute()) {
    auto it = attrs.find(a.name());
    if (it == attrs.end() || !a.ref_attr_name().empty()) continue;
    // The type a writer may leave unset (ONNX IR < 3) is taken as the schema's.
    if (a.type() == onnx::AttributeProto::UNDEFINED) continue;
    user_assert(a.type() == it->second.type)
        << describe(n, index) << ": attribute '" << a.name() << "' is "
        << onnx::AttributeProto::AttributeType_Name(a.type()) << " but " << n.op_type() << " takes "
        << onnx::AttributeProto::AttributeType_Name(it->second.type) << "; fix the model";
  }
}

void check_single_assignment(const onnx::GraphProto& g) {
  std::unordered_set<std::string> written;
  for (const auto& in : g.input()) written.insert(in.name());
  for (const auto& init : g.initializer()) written.insert(init.name());
  for (int i = 0; i < g.node_size(); i++)
    for (const auto& o : g.node(i).output())
      user_assert(o.empty() || written.insert(o).second)
          << describe(g.node(i), i) << ": output '" << o
          << "' is also written by a graph input or an earlier node; every value must have one writer: fix the model";
}

void check_graph(const onnx::GraphProto& g, int64_t opset) {
  check_single_assignment(g);
  for (int i = 0; i < g.node_size(); i++) {
    const onnx::NodeProto& n = g.node(i);
    check_node(n, i, opset);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_graph(a.g(), opset);
      for (const auto& sub : a.graphs()) check_graph(sub, opset);
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      bool positive = false;
      for (const char* name : kPositive) positive |= a.name() == name;
      if (!positive) continue;
      bool ok = a.type() == onnx::AttributeProto::INT ? a.i() > 0 : a.type() == onnx::AttributeProto::INTS;
      for (int64_t v : a.ints()) ok &= v > 0;
      std::string got = a.type() == onnx::AttributeProto::INT ? std::to_string(a.i()) : "";
      for (int k = 0; k < a.ints_size(); k++) got += (k ? ", " : "[") + std::to_string(a.ints(k));
      if (a.type() == onnx::AttributeProto::INTS) got += a.ints_size() ? "]" : "[]";
      user_assert(ok) << describe(n, i) << ": attribute '" << a.name() << "' must be positive integers (got "
                      << (got.empty() ? "a " + onnx::AttributeProto::AttributeType_Name(a.type()) : got)
                      << "); fix the model";
    }
  }
}

// Every output of the main graph must be a value the graph defines: a graph
// input, a node's output or (from IR version 4, where initializers need not
// be inputs) an initializer. ONNX's checker does not check this, and ONNX's
// IR conversion (onnx::ImportModelProto, under the version converter)
// dereferences a null value for an undefined output. Subgraphs may name
// values of enclosing scopes, which ONNX resolves itself.
void check_graph_outputs(const onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  std::unordered_set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  if (model.ir_version() >= 4) {
    for (const auto& init : g.initializer()) defined.insert(init.name());
  }
  for (const auto& n : g.node()) {
    for (const auto& out : n.output()) defined.insert(out);
  }
  for (const auto& out : g.output()) {
    user_assert(!out.name().empty() && defined.count(out.name()))
        << "graph output '" << out.name()
        << "' is not a graph input, an initializer or any node's output; fix the model";
  }
}

// Operators whose ONNX shape inference takes a kernel's spatial rank from
// input `kernel` and then indexes the vectors sized by input `data`'s rank
// with it (convPoolShapeInference, convTransposeShapeInference), or reads
// input `kernel`'s dimension 1 unchecked (MaxUnpool): ranks that differ
// make it read out of bounds (fuzz_onnx_import: a Conv weight of rank 250
// crashed kilnc in convPoolShapeInference).
struct RankGuard {
  const char* op;          // default-domain operator type
  int data;                // input whose rank is the reference (N, C, spatial...)
  int kernel;              // input that must have a shape of the same rank
  bool kernel_shape_first; // the kernel input's shape must be known when `data`'s is
};
const RankGuard kRankGuards[] = {
    {"Conv", 0, 1, false},          {"ConvInteger", 0, 1, false}, {"ConvTranspose", 0, 1, false},
    {"QLinearConv", 0, 3, false},   {"MaxUnpool", 0, 1, true},
};

void check_ranks(const RankGuard& guard, onnx::InferenceContext& ctx) {
  if (!onnx::hasInputShape(ctx, guard.data)) return;  // ONNX infers nothing then
  const int rank = ctx.getInputType(guard.data)->tensor_type().shape().dim_size();
  if (!onnx::hasInputShape(ctx, guard.kernel)) {
    if (guard.kernel_shape_first) {
      fail_shape_inference(guard.op, ": input ", guard.kernel, " needs a shape (of rank ", rank, ", like input ",
                           guard.data, ")");
    }
    return;
  }
  const int kernel_rank = ctx.getInputType(guard.kernel)->tensor_type().shape().dim_size();
  if (kernel_rank != rank) {
    fail_shape_inference(guard.op, ": input ", guard.kernel, " has rank ", kernel_rank, " but input ", guard.data,
                         " has rank ", rank, "; they must be equal");
  }
}

// Slice's data propagation (what shape inference computes on shape values,
// data_prop=true) walks `for (i = start; i < end; i += step)`: a step near
// INT64_MAX overflows i and reads out of bounds (a crash inside libonnx on a
// model its checker accepts). A step longer than the sliced shape picks one
// element at most; such a Slice propagates nothing here, and kilnc's own
// folder (fold_shapes.cpp, counted loops) computes it.
void guarded_slice_propagation(const onnx::DataPropagationFunction& original, onnx::DataPropagationContext& ctx) {
  if (ctx.getNumInputs() >= 5) {
    const onnx::TensorShapeProto* data = ctx.getInputData(0);
    const onnx::TensorShapeProto* steps = ctx.getInputData(4);
    if (steps) {
      const int64_t n = data ? data->dim_size() : 0;
      for (const auto& d : steps->dim())
        if (!d.has_dim_value() || d.dim_value() > n || d.dim_value() < -n) return;
    }
  }
  original(ctx);
}

// STFT's inference (onnx 1.12) ignores `onesided` (default 1): it gives
// frame_length bins where a onesided transform has frame_length / 2 + 1, and
// the model's own (right) output shape then fails the merge. After it runs,
// the bins are set from the frame length (the window's length, or the
// frame_length input when it is a constant) whenever both are known.
void stft_bins(const onnx::InferenceFunction& original, onnx::InferenceContext& ctx) {
  original(ctx);
  const onnx::AttributeProto* one = ctx.getAttribute("onesided");
  if ((one ? one->i() : 1) == 0) return;
  int64_t length = -1;
  if (ctx.getNumInputs() > 2 && ctx.getInputType(2) && ctx.getInputType(2)->tensor_type().has_shape() &&
      ctx.getInputType(2)->tensor_type().shape().dim_size() == 1 &&
      ctx.getInputType(2)->tensor_type().shape().dim(0).has_dim_value())
    length = ctx.getInputType(2)->tensor_type().shape().dim(0).dim_value();
  const onnx::TensorProto* fl = ctx.getNumInputs() > 3 ? ctx.getInputData(3) : nullptr;
  if (length < 0 && fl && fl->dims_size() == 0 && fl->data_type() == onnx::TensorProto::INT64) {
    if (fl->int64_data_size() == 1) length = fl->int64_data(0);
    else if (fl->raw_data().size() == 8) memcpy(&length, fl->raw_data().data(), 8);
  } else if (length < 0 && fl && fl->dims_size() == 0 && fl->data_type() == onnx::TensorProto::INT32) {
    int32_t v = -1;
    if (fl->int32_data_size() == 1) v = fl->int32_data(0);
    else if (fl->raw_data().size() == 4) memcpy(&v, fl->raw_data().data(), 4);
    length = v;
  }
  onnx::TypeProto* out = ctx.getOutputType(0);
  if (length < 1 || !out || !out->tensor_type().has_shape() || out->tensor_type().shape().dim_size() != 4) return;
  out->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(length / 2 + 1);
}

// OpSchemaRegistry, with the inference functions of kRankGuards' operators
// and Slice's data propagation wrapped: the guard runs first. Wrapped schemas
// are copies made once per schema and kept for the process's life.
class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_inclusive_version, domain);
    if (!schema || !(domain.empty() || domain == "ai.onnx")) return schema;
    const RankGuard* guard = nullptr;
    for (const RankGuard& g : kRankGuards) {
      if (key == g.op) guard = &g;
    }
    bool slice = key == "Slice", stft = key == "STFT" && schema->has_type_and_shape_inference_function();
    if ((!guard || !schema->has_type_and_shape_inference_function()) && !slice && !stft) return schema;
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<onnx::OpSchema>& wrapped = wrapped_[schema];
    if (!wrapped) {
      wrapped = std::make_unique<onnx::OpSchema>(*schema);
      if (stft) {
        onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
        wrapped->TypeAndShapeInferenceFunction([original](onnx::InferenceContext& ctx) { stft_bins(original, ctx); });
      } else if (guard) {
        onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
        wrapped->TypeAndShapeInferenceFunction([guard, original](onnx::InferenceContext& ctx) {
          check_ranks(*guard, ctx);
          original(ctx);
        });
      } else {
        onnx::DataPropagationFunction original = schema->GetDataPropagationFunction();
        wrapped->PartialDataPropagationFunction(
            [original](onnx::DataPropagationContext& ctx) { guarded_slice_propagation(original, ctx); });
      }
    }
    return wrapped.get();
  }

 private:
  mutable std::mutex mutex_;                                                        // guards wrapped_
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> wrapped_;  // by ONNX's schema
};

}  // namespace

const onnx::ISchemaRegistry* guarded_schema_registry() {
  static const GuardedRegistry* registry = new GuardedRegistry();  // never destroyed: used until exit
  return registry;
}

void validate_model(const onnx::ModelProto& model) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto known = ranges.find(onnx::ONNX_DOMAIN);
  const int max_opset = known == ranges.end() ? 0 : known->second.second;
  for (const auto& o : model.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    user_assert(o.version() >= 1 && o.version() <= max_opset)
        << "the model imports ONNX opset " << o.version() << ", but kilnc knows opsets 1 to " << max_opset
        << "; export it for opset " << max_opset << " or older";
  }
  // ONNX Runtime refuses a model without an IR version; so does kilnc (a
  // newer one than this ONNX release knows is only the checker's warning).
  user_assert(model.ir_version() >= 1) << "the model has no IR version (ir_version " << model.ir_version()
                                       << "): it is not a complete ONNX model; export it again";
  check_graph(model.graph(), imported_opset(model));
  check_graph_outputs(model);
}

}  // namespace kiln
