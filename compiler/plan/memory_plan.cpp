#include "plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "support/diagnostics.h"

namespace kiln {

MemoryPlan plan_memory(const graph::Graph& g, const LoweredProgram& p, uint64_t alignment) {
  const int n_steps = (int)p.kernels.size();
  struct Interval {
    int start = INT32_MAX, end = -2;
  };
  std::map<int, Interval> live;  // root value -> interval
  std::map<int, int> dynamic_slot;  // run-time-sized root -> its slot
  auto touch = [&](int value, int step) {
    int root = p.storage_root[value];
    if (g.values[root].is_constant()) return;
    if (g.runtime_sized(root)) {  // allocated by the runtime once its size is known: no offset
      dynamic_slot.emplace(root, (int)dynamic_slot.size());
      return;
    }
    Interval& iv = live[root];
    iv.start = std::min(iv.start, step);
    iv.end = std::max(iv.end, step);
  };
  for (int in : g.inputs) touch(in, -1);
  for (int s = 0; s < n_steps; s++)
    for (int v : p.kernels[s].param_values) touch(v, s);
  for (int out : g.outputs) touch(out, n_steps);

  // In-place reuse: an elementwise kernel whose input's life ends in it may
  // write its output over that input (tir/inplace.h decides which pairs are
  // safe). The two roots then form one group with one offset.
  std::set<int> pinned(g.inputs.begin(), g.inputs.end());
  for (int out : g.outputs) pinned.insert(p.storage_root[out]);
  std::map<int, int> group_of;  // root -> the group's first root
  auto group = [&](int root) {
    auto it = group_of.find(root);
    return it == group_of.end() ? root : it->second;
  };
  for (int s = 0; s < n_steps; s++) {
    const KernelDef& k = p.kernels[s];
    int writes = 0;
    for (auto a : k.access) writes += a != Access::Read;
    if (writes != 1) continue;
    for (auto [in, out] : k.inplace) {
      internal_assert(in >= 0 && out >= 0 && (size_t)in < k.param_values.size() && (size_t)out < k.param_values.size())
          << "kernel " << k.name << ": in-place pair (" << in << ", " << out << ") is not two of its parameters";
      int x = group(p.storage_root[k.param_values[in]]), o = p.storage_root[k.param_values[out]];
      if (x == o || pinned.count(x) || pinned.count(o) || !live.count(x) || !live.count(o) || group_of.count(o)) continue;
      if (live[x].end != s || live[o].start != s) continue;
      if (g.values[x].byte_size() != g.values[o].byte_size()) continue;
      live[x].end = std::max(live[x].end, live[o].end);  // the group's interval
      live.erase(o);
      group_of[o] = x;
      break;
    }
  }

  auto align = [&](uint64_t x) { return (x + alignment - 1) / alignment * alignment; };
  struct Item {
    int root;
    uint64_t size;
    Interval iv;
    uint64_t offset = 0;
  };
  std::vector<Item> items;
  for (auto& [root, iv] : live) items.push_back({root, align(std::max<uint64_t>(g.values[root].byte_size(), 1)), iv});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.size > b.size; });

  MemoryPlan plan;
  plan.alignment = alignment;
  std::vector<const Item*> placed;
  for (auto& it : items) {
    // Placed items whose lifetime intersects this one, by offset.
    std::vector<const Item*> conflicts;
    for (auto* q : placed)
      if (q->iv.start <= it.iv.end && it.iv.start <= q->iv.end) conflicts.push_back(q);
    std::sort(conflicts.begin(), conflicts.end(), [](const Item* a, const Item* b) { return a->offset < b->offset; });
    // Best fit: the smallest gap that holds it, else the end.
    uint64_t cursor = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (auto* q : conflicts) {
      if (q->offset > cursor && q->offset - cursor >= it.size && q->offset - cursor < best_gap) {
        best_gap = q->offset - cursor;
        best = cursor;
      }
      cursor = std::max(cursor, q->offset + q->size);
    }
    it.offset = best != UINT64_MAX ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, it.offset + it.size);
    plan.total_bytes += it.size;
    placed.push_back(&it);
  }

  // Lower bound: the most bytes live at once at any step.
  for (int s = -1; s <= n_steps; s++) {
    uint64_t sum = 0;
    for (auto& it : items)
      if (it.iv.start <= s && s <= it.iv.end) sum += it.size;
    plan.lower_bound = std::max(plan.lower_bound, sum);
  }

  std::map<int, uint64_t> root_offset;
  for (auto& it : items) root_offset[it.root] = it.offset;
  for (auto& [member, first] : group_of) root_offset[member] = root_offset.at(first);
  plan.offset.assign(g.values.size(), -1);
  plan.dynamic_slot.assign(g.values.size(), -1);
  for (size_t v = 0; v < g.values.size(); v++) {
    auto f = root_offset.find(p.storage_root[v]);
    if (f != root_offset.end()) plan.offset[v] = (int64_t)f->second;
    auto d = dynamic_slot.find(p.storage_root[v]);
    if (d != dynamic_slot.end()) plan.dynamic_slot[v] = d->second;
  }
  return plan;
}

}  // namespace kiln
