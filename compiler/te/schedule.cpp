#include "te/schedule.h"

#include "support/diagnostics.h"

namespace kiln::te {

IterVar make_iter_var(const std::string& name, int64_t extent, bool reduce) {
  auto iv = std::make_shared<IterVarNode>();
  iv->name = name;
  iv->extent = extent;
  iv->reduce = reduce;
  iv->var = tir::Var::make(tir::Index(), name);
  return iv;
}

Stage::Stage(const Tensor& t) : tensor(t) {
  internal_assert(t.defined() && t->kind != TensorNode::Kind::Placeholder) << "a placeholder has no schedule";
  for (size_t i = 0; i < t.shape().size(); i++) axes.push_back(make_iter_var("i" + std::to_string(i), t.shape()[i], false));
  if (t->kind == TensorNode::Kind::Reduce)
    for (size_t i = 0; i < t->rshape.size(); i++)
      reduce_axes.push_back(make_iter_var("r" + std::to_string(i), t->rshape[i], true));
  leaves = axes;
  leaves.insert(leaves.end(), reduce_axes.begin(), reduce_axes.end());
}

size_t Stage::leaf_index(const IterVar& iv) const {
  for (size_t i = 0; i < leaves.size(); i++)
    if (leaves[i] == iv) return i;
  internal_error << "loop " << (iv ? iv->name : "<null>") << " is not a current loop of stage " << tensor.name();
}

void default_cpu_schedule(Stage& s) {
  for (auto& iv : s.axes)
    if (iv->extent > 1) {
      s.bind(iv, tir::ForKind::WorkgroupX);
      return;
    }
}

}  // namespace kiln::te
