// Static memory planning: one arena, every tensor's offset fixed at compile time.
//
// Each storage root (a value that is not a constant and not an alias) gets a
// live interval over the dispatch list: from the dispatch that first writes
// it (model inputs: before the first) to the last dispatch that touches it or
// any alias of it (model outputs: past the last). Roots are placed largest
// first at the lowest aligned offset that overlaps no placed root with an
// intersecting interval (greedy by size, as in TVM's planner), so tensors
// with disjoint lifetimes share bytes. Run-time-sized roots (their
// dimensions use an unbounded symbol) get no offset but a slot of their own:
// the runtime allocates them per run. An elementwise kernel writes its
// output over an input whose life ends in it (in-place reuse), when the
// kernel reads that input only at the index it stores to.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "kiln_bundle_version.h"
#include "lower/lower_graph.h"

namespace kiln {

struct MemoryPlan {
  uint64_t alignment = KILN_BUNDLE_ALIGNMENT;  // of every offset (and of every root's size)
  uint64_t arena_bytes = 0;      // size of the arena
  std::vector<int64_t> offset;   // per value: arena offset of its storage root, -1 if none
  // Run-time-sized values (graph::Graph::runtime_sized): not in the arena;
  // per value the slot of its storage root (aliases share it), -1 if none.
  // The runtime allocates each slot once its size is known (Storage::Dynamic).
  std::vector<int> dynamic_slot;
  uint64_t total_bytes = 0;      // sum of all planned roots (the no-sharing size)
  uint64_t lower_bound = 0;      // largest total of simultaneously live roots
};

MemoryPlan plan_memory(const graph::Graph& g, const LoweredProgram& p, uint64_t alignment);

}  // namespace kiln
