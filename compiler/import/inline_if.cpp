#include "import/inline_if.h"

#include <map>
#include <set>
#include <string>

#include "import/subgraph.h"

namespace kiln {
namespace {

// The single value of a bool tensor; false when `t` is not one.
bool bool_scalar(const onnx::TensorProto& t, bool* out) {
  for (auto d : t.dims())
    if (d != 1) return false;
  if (t.data_type() != onnx::TensorProto::BOOL || t.has_data_location()) return false;
  if (t.has_raw_data()) {
    if (t.raw_data().size() != 1) return false;
    *out = t.raw_data()[0] != 0;
    return true;
  }
  if (t.int32_data_size() != 1) return false;
  *out = t.int32_data(0) != 0;
  return true;
}

class IfInliner {
 public:
  IfInliner(onnx::GraphProto& g, RunTimeIfs* run_time, bool both) : g_(g), run_time_(run_time), both_(both), inliner_(g) {
    initializers_ = graph_constants(g, /*inputs_override=*/true);
  }

  bool made_sequence_where() const { return sequence_where_; }

  int run() {
    int count = 0;
    std::vector<onnx::NodeProto> nodes;
    for (auto& n : g_.node()) {
      bool cond;
      const onnx::GraphProto* branch = nullptr;
      if (both_ && n.op_type() == "If" && (n.domain().empty() || n.domain() == "ai.onnx") && n.input_size() == 1 &&
          !condition(n.input(0), &cond)) {
        const onnx::GraphProto *then_branch = nullptr, *else_branch = nullptr;
        for (auto& a : n.attribute()) {
          if (a.name() == "then_branch" && a.has_g()) then_branch = &a.g();
          if (a.name() == "else_branch" && a.has_g()) else_branch = &a.g();
        }
        if (then_branch && else_branch && then_branch->output_size() == n.output_size() &&
            else_branch->output_size() == n.output_size()) {
          inline_both(n, *then_branch, *else_branch, nodes);
          count++;
          continue;
        }
      }
      if (n.op_type() == "If" && (n.domain().empty() || n.domain() == "ai.onnx") && n.input_size() == 1 &&
          condition(n.input(0), &cond))
        for (auto& a : n.attribute())
          if (a.name() == (cond ? "then_branch" : "else_branch") && a.has_g()) branch = &a.g();
      if (!branch || branch->output_size() != n.output_size()) {
        nodes.push_back(n);
        continue;
      }
      inline_branch(n, *branch, nodes);
      count++;
    }
    if (count) {
      g_.clear_node();
      for (auto& n : nodes) *g_.add_node() = std::move(n);
    }
    return count;
  }

 private:
  bool condition(const std::string& name, bool* out) const {
    auto it = initializers_.find(name);
    return it != initializers_.end() && bool_scalar(*it->second, out);
  }

  std::string fresh(const std::string& base) { return inliner_.fresh(base); }

  // A run-time If: the condition's Identity (a kiln.Condition to be), both
  // branches guarded by it, and a Where per output.
  void inline_both(const onnx::NodeProto& n, const onnx::GraphProto& then_branch, const onnx::GraphProto& else_branch,
                   std::vector<onnx::NodeProto>& out) {
    std::string prefix = (n.name().empty() ? n.output(0) : n.name()) + "/";
    std::vector<std::pair<std::string, bool>> outer = run_time_->guards[n.name()];  // a nested If's
    onnx::NodeProto flag;
    flag.set_op_type("Identity");
    flag.set_name(fresh(prefix + "condition"));
    flag.add_input(n.input(0));
    flag.add_output(fresh(prefix + "condition"));
    run_time_->conditions.insert(flag.name());
    run_time_->guards[flag.name()] = outer;
    out.push_back(flag);
    std::vector<std::string> results[2];
    for (int taken = 1; taken >= 0; taken--) {
      size_t first = out.size();
      results[taken] = inline_branch(n, taken ? then_branch : else_branch, out, prefix + (taken ? "then/" : "else/"));
      for (size_t k = first; k < out.size(); k++) {
        auto& guards = run_time_->guards[out[k].name()];
        guards = outer;
        guards.push_back({flag.output(0), taken != 0});
      }
    }
    // The Wheres take the condition as a scalar: a [1] or [1, 1] condition
    // must not raise the outputs' rank by broadcasting.
    onnx::TensorProto* scalar_shape = g_.add_initializer();
    scalar_shape->set_name(fresh(prefix + "scalar_shape"));
    scalar_shape->set_data_type(onnx::TensorProto::INT64);
    scalar_shape->add_dims(0);
    onnx::NodeProto scalar;
    scalar.set_op_type("Reshape");
    scalar.set_name(fresh(prefix + "condition_scalar"));
    scalar.add_input(n.input(0));
    scalar.add_input(scalar_shape->name());
    scalar.add_output(fresh(prefix + "condition_scalar"));
    run_time_->guards[scalar.name()] = outer;
    out.push_back(scalar);
    for (int k = 0; k < n.output_size(); k++) {
      if (n.output(k).empty()) continue;
      onnx::NodeProto where;
      where.set_op_type("Where");
      // Sequences: static_sequences.h makes one Where per element; ONNX's
      // shape inference (which types Where's operands as tensors) skips a
      // node of kiln's domain.
      auto composite = [&](const onnx::GraphProto& b) {
        const onnx::TypeProto& t = b.output(k).type();
        return t.has_sequence_type() || t.has_optional_type();
      };
      if (composite(then_branch) || composite(else_branch))
        where.set_domain(kSequenceWhereDomain), sequence_where_ = true;
      where.set_name(fresh(prefix + "output_" + std::to_string(k)));
      where.add_input(scalar.output(0));
      where.add_input(results[1][(size_t)k]);
      where.add_input(results[0][(size_t)k]);
      where.add_output(n.output(k));
      run_time_->guards[where.name()] = outer;
      run_time_->merges[where.name()] = "If node '" + (n.name().empty() ? n.output(0) : n.name()) + "' output " +
                                        std::to_string(k);
      out.push_back(std::move(where));
    }
  }

  // Appends the branch's nodes (renamed) and one Identity per output of `n`;
  // inside a run-time If's branch, they keep its guards.
  void inline_branch(const onnx::NodeProto& n, const onnx::GraphProto& branch, std::vector<onnx::NodeProto>& out) {
    size_t first = out.size();
    std::vector<std::string> results = inline_branch(n, branch, out, (n.name().empty() ? n.output(0) : n.name()) + "/");
    for (int k = 0; k < n.output_size(); k++) {
      if (n.output(k).empty()) continue;
      onnx::NodeProto id;
      id.set_op_type("Identity");
      id.set_name((n.name().empty() ? n.output(0) : n.name()) + "/output_" + std::to_string(k));
      id.add_input(results[(size_t)k]);
      id.add_output(n.output(k));
      out.push_back(std::move(id));
    }
    if (!run_time_ || !run_time_->guards.count(n.name())) return;
    const std::vector<std::pair<std::string, bool>> guards = run_time_->guards.at(n.name());
    for (size_t k = first; k < out.size(); k++) run_time_->guards[out[k].name()] = guards;
  }

  // Appends the branch's nodes, values renamed under `prefix`; returns the
  // names of the branch's outputs.
  std::vector<std::string> inline_branch(const onnx::NodeProto&, const onnx::GraphProto& branch,
                                         std::vector<onnx::NodeProto>& out, const std::string& prefix) {
    return inliner_.inline_graph(branch, {}, prefix, out);
  }

  onnx::GraphProto& g_;
  RunTimeIfs* run_time_;  // guards of run-time Ifs' branches (null: none are known)
  bool both_;             // inline_run_time_ifs: Ifs with run-time conditions, both branches
  bool sequence_where_ = false;  // a Where of kSequenceWhereDomain was made
  SubgraphInliner inliner_;                                      // fresh names, copies of branches
  std::map<std::string, const onnx::TensorProto*> initializers_;  // constants by name
};

}  // namespace

int inline_constant_ifs(onnx::ModelProto& model, RunTimeIfs* run_time_ifs) {
  return IfInliner(*model.mutable_graph(), run_time_ifs, false).run();
}

int inline_run_time_ifs(onnx::ModelProto& model, RunTimeIfs* out) {
  IfInliner inliner(*model.mutable_graph(), out, true);
  int count = inliner.run();
  bool imported = false;
  for (auto& o : model.opset_import()) imported |= o.domain() == kSequenceWhereDomain;
  if (inliner.made_sequence_where() && !imported) {  // (shape inference wants every domain imported)
    auto* o = model.add_opset_import();
    o->set_domain(kSequenceWhereDomain);
    o->set_version(1);
  }
  return count;
}

}  // namespace kiln
