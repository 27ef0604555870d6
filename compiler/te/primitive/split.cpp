// split: one loop becomes two, outer * factor + inner.
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

std::pair<IterVar, IterVar> Stage::split(const IterVar& iv, int64_t factor) {
  internal_assert(factor >= 1) << "split factor must be positive";
  size_t pos = leaf_index(iv);
  IterVar outer = iv->is_dynamic()
                      ? make_iter_var(iv->name + ".o", (iv->dynamic + Expr(factor - 1)) / Expr(factor), iv->reduce)
                      : make_iter_var(iv->name + ".o", (iv->extent + factor - 1) / factor, iv->reduce);
  IterVar inner = make_iter_var(iv->name + ".i", std::min(factor, iv->extent), iv->reduce);
  relations.push_back({Relation::Kind::Split, iv, outer, inner, nullptr, factor});
  leaves[pos] = inner;
  leaves.insert(leaves.begin() + pos, outer);
  return {outer, inner};
}

}  // namespace kiln::te
