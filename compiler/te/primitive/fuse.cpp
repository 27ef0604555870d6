// fuse: two adjacent loops (outer directly enclosing inner) become one.
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  size_t po = leaf_index(outer), pi = leaf_index(inner);
  internal_assert(pi == po + 1) << "fuse needs adjacent loops, outer first";
  internal_assert(outer->reduce == inner->reduce) << "cannot fuse a spatial and a reduction loop";
  std::string name = outer->name + "." + inner->name + ".f";
  IterVar fused = outer->is_dynamic() || inner->is_dynamic()
                      ? make_iter_var(name, outer->extent_expr() * inner->extent_expr(), outer->reduce)
                      : make_iter_var(name, outer->extent * inner->extent, outer->reduce);
  relations.push_back({Relation::Kind::Fuse, nullptr, outer, inner, fused, 0});
  leaves[po] = fused;
  leaves.erase(leaves.begin() + pi);
  return fused;
}

}  // namespace kiln::te
