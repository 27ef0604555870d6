// Units for static memory planning: tensors whose lifetimes intersect never
// share bytes, offsets are aligned, and a chain reuses memory.
#include <doctest/doctest.h>

#include <random>

#include "bundle/bundle_writer.h"
#include "graph/graph.h"
#include "lower/lower_graph.h"
#include "plan/memory_plan.h"
#include "tir/inplace.h"

using namespace kiln;

namespace {

int add_value(graph::Graph& g, const std::string& name, int64_t elements) {
  graph::Value v;
  v.name = name;
  v.dtype = graph::DType::F32;
  v.shape = {elements};
  return g.add_value(v);
}

KernelDef kernel(std::vector<int> reads, int write) {
  KernelDef k;
  for (int r : reads) {
    k.param_values.push_back(r);
    k.access.push_back(Access::Read);
  }
  k.param_values.push_back(write);
  k.access.push_back(Access::Write);
  return k;
}

// Checks the plan against the program: the real safety property.
void check_plan(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan) {
  int steps = (int)p.kernels.size();
  std::vector<int> first(g.values.size(), 1 << 30), last(g.values.size(), -2);
  auto touch = [&](int v, int s) {
    first[v] = std::min(first[v], s);
    last[v] = std::max(last[v], s);
  };
  for (int v : g.inputs) touch(v, -1);
  for (int s = 0; s < steps; s++)
    for (int v : p.kernels[s].param_values) touch(v, s);
  for (int v : g.outputs) touch(v, steps);
  for (size_t a = 0; a < g.values.size(); a++) {
    if (plan.offset[a] < 0) continue;
    CHECK(plan.offset[a] % 64 == 0);
    CHECK((uint64_t)plan.offset[a] + g.values[a].byte_size() <= plan.arena_bytes);
    for (size_t b = a + 1; b < g.values.size(); b++) {
      if (plan.offset[b] < 0) continue;
      bool live_together = first[a] <= last[b] && first[b] <= last[a];
      bool overlap = plan.offset[a] < plan.offset[b] + (int64_t)g.values[b].byte_size() &&
                     plan.offset[b] < plan.offset[a] + (int64_t)g.values[a].byte_size();
      CHECK_FALSE((live_together && overlap));
    }
  }
  CHECK(plan.arena_bytes >= plan.lower_bound);
  CHECK(plan.arena_bytes <= plan.total_bytes);
}

}  // namespace

TEST_CASE("a chain ping-pongs between two buffers") {
  graph::Graph g;
  int x = add_value(g, "x", 1000);
  g.inputs = {x};
  LoweredProgram p;
  int prev = x;
  for (int i = 0; i < 6; i++) {
    int y = add_value(g, "y" + std::to_string(i), 1000);
    p.kernels.push_back(kernel({prev}, y));
    prev = y;
  }
  g.outputs = {prev};
  p.storage_root.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); i++) p.storage_root[i] = (int)i;
  MemoryPlan plan = plan_memory(g, p, 64);
  check_plan(g, p, plan);
  CHECK(plan.arena_bytes == 2 * 4032);  // two live 4000-byte tensors, each padded to 64
  CHECK(plan.lower_bound == plan.arena_bytes);
}

TEST_CASE("random programs never overlap live tensors") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 50; trial++) {
    graph::Graph g;
    LoweredProgram p;
    std::vector<int> avail = {add_value(g, "in", 1 + rng() % 5000)};
    g.inputs = avail;
    int n = 3 + rng() % 25;
    for (int s = 0; s < n; s++) {
      std::vector<int> reads;
      int k = 1 + rng() % 3;
      for (int r = 0; r < k; r++) reads.push_back(avail[rng() % avail.size()]);
      int y = add_value(g, "v" + std::to_string(s), 1 + rng() % 5000);
      p.kernels.push_back(kernel(reads, y));
      avail.push_back(y);
    }
    g.outputs = {avail.back(), avail[avail.size() / 2]};
    p.storage_root.resize(g.values.size());
    for (size_t i = 0; i < g.values.size(); i++) p.storage_root[i] = (int)i;
    MemoryPlan plan = plan_memory(g, p, 64);
    check_plan(g, p, plan);
  }
}

TEST_CASE("aliases share their root's storage and extend its life") {
  graph::Graph g;
  int x = add_value(g, "x", 100);
  int a = add_value(g, "a", 100);
  int a_view = add_value(g, "a_view", 100);  // e.g. Reshape(a)
  int b = add_value(g, "b", 100);
  int c = add_value(g, "c", 100);
  g.inputs = {x};
  g.outputs = {c};
  LoweredProgram p;
  p.kernels = {kernel({x}, a), kernel({x}, b), kernel({a_view, b}, c)};
  p.storage_root = {x, a, a, b, c};
  MemoryPlan plan = plan_memory(g, p, 64);
  CHECK(plan.offset[a_view] == plan.offset[a]);
  // a must stay live until the third kernel reads its view: a and b differ.
  CHECK(plan.offset[a] != plan.offset[b]);
  CHECK(plan.offset[c] != plan.offset[b]);
}

TEST_CASE("elementwise kernels may write over an input whose life ends there") {
  graph::Graph g;
  int x = add_value(g, "x", 1000);
  int a = add_value(g, "a", 1000), b = add_value(g, "b", 1000), c = add_value(g, "c", 1000);
  g.inputs = {x};
  g.outputs = {c};
  LoweredProgram p;
  p.kernels = {kernel({x}, a), kernel({a}, b), kernel({b}, c)};
  p.kernels[1].inplace = {{0, 1}};  // b may overwrite a
  p.kernels[2].inplace = {{0, 1}};  // but c is a model output: it keeps its own storage
  p.storage_root = {x, a, b, c};
  MemoryPlan plan = plan_memory(g, p, 64);
  CHECK(plan.offset[a] == plan.offset[b]);
  CHECK(plan.offset[c] != plan.offset[b]);
  CHECK(plan.offset[x] != plan.offset[a]);  // model inputs are never overwritten
  // Without the in-place permission, a and b are live together in kernel 1.
  p.kernels[1].inplace.clear();
  MemoryPlan plain = plan_memory(g, p, 64);
  CHECK(plain.offset[a] != plain.offset[b]);
}

TEST_CASE("in-place pairs come only from same-index elementwise reads") {
  using namespace kiln::tir;
  Expr i = Var::make(Index(), "i");
  Buffer in = make_buffer("in", Float(32), 8, 0), out = make_buffer("out", Float(32), 8, 1);
  Stmt same = For::make(i, Expr(0), Expr(8), ForKind::Serial, Store::make(out, i, max(Load::make(in, i), Expr(0.0f))));
  CHECK(inplace_pairs(same, {in, out}) == std::vector<std::pair<int, int>>{{0, 1}});
  // A neighbour read (out[i] = in[7 - i]) is not safe.
  Stmt flipped = For::make(i, Expr(0), Expr(8), ForKind::Serial, Store::make(out, i, Load::make(in, Expr(7) - i)));
  CHECK(inplace_pairs(flipped, {in, out}).empty());
}

TEST_CASE("in-place pairs never name a kernel-local buffer (issue 18 finding 1)") {
  using namespace kiln::tir;
  // tmp[i] = in[i] (tmp local, binding -1); out[i] = tmp[i] * 2: `in` is read
  // at the index of a store, but to a local; the relation to out's stores is
  // unknown, so no pair; and certainly none with binding -1, which the
  // memory planner would index param_values with.
  Expr i = Var::make(Index(), "i"), j = Var::make(Index(), "j");
  Buffer in = make_buffer("in", Float(32), 8, 0), out = make_buffer("out", Float(32), 8, 1);
  Buffer tmp = make_buffer("tmp", Float(32), 8, -1);
  Stmt fill = For::make(i, Expr(0), Expr(8), ForKind::Serial, Store::make(tmp, i, Load::make(in, i)));
  Stmt use = For::make(j, Expr(0), Expr(8), ForKind::Serial, Store::make(out, j, Load::make(tmp, j) * Expr(2.0f)));
  Stmt body = Allocate::make(tmp, Block::make({fill, use}));
  auto pairs = inplace_pairs(body, {in, out});
  for (auto& [a, b] : pairs) {
    CHECK(a >= 0);
    CHECK(b >= 0);
  }
  CHECK(pairs.empty());
}

// Heterogeneous bundles: the copies around host dispatches (bundle_writer.h).
TEST_CASE("host transfers: download what the host copy lacks, upload what the host writes") {
  using Ranges = std::vector<std::vector<std::pair<int64_t, uint64_t>>>;
  // 0 device: writes A=[0,256)            reads a constant
  // 1 host:   reads A, writes B=[256,512)
  // 2 host:   reads B, writes C=[512,768) (B is held: no download)
  // 3 device: reads C, writes A
  // 4 host:   reads A (written by the device since: downloaded again) and C (held)
  std::vector<bool> on_host = {false, true, true, false, true};
  Ranges ranges = {{{0, 256}, {-1, 64}}, {{0, 256}, {256, 256}}, {{256, 256}, {512, 256}},
                   {{512, 256}, {0, 256}}, {{0, 256}, {512, 256}}};
  std::vector<std::vector<bool>> writes = {{true, false}, {false, true}, {false, true}, {false, true},
                                           {false, false}};
  HostTransfers h = host_transfers(on_host, ranges, writes);
  using V = std::vector<size_t>;
  CHECK(h.downloads[0] == V{});
  CHECK(h.uploads[0] == V{});
  CHECK(h.downloads[1] == V{0, 1});  // A, and B (written: the kernel may write part of it)
  CHECK(h.uploads[1] == V{1});
  CHECK(h.downloads[2] == V{1});     // C only
  CHECK(h.uploads[2] == V{1});
  CHECK(h.downloads[3] == V{});
  CHECK(h.downloads[4] == V{0});     // A again; C still held
  CHECK(h.uploads[4] == V{});
}
