// Units for bfloat16 (decision 47): graph pass `bfloat16`
// (compiler/graph/pass_bfloat16.cpp) on a small hand-built graph, then the
// rewritten graph run through the real compiler (driver/evaluate.h): the
// Cast intrinsics' rounding and each operator rounding once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "compiler_graph_builder.h"
#include "driver/evaluate.h"
#include "graph/passes.h"

namespace {

using namespace kiln::graph;
using kiln::test::Builder;

}  // namespace

TEST_CASE("graph pass bfloat16: computing nodes get float32 between Casts, bits movers stay, results round once") {
  // x: bf16 [6] -> Relu -> r (bf16) -> Reshape [2,3] -> y (bf16, output)
  //                  \-> Add(r, c: bf16 constant) -> s (bf16, output); Cast(x -> f32) -> z (output)
  Builder b;
  int x = b.input("x", {6}, DType::BF16);
  std::vector<uint8_t> cb(12);
  for (int k = 0; k < 6; k++) {
    float f = 0.5f * (float)k - 1.0f;
    uint32_t w;
    memcpy(&w, &f, 4);
    uint16_t h = (uint16_t)(w >> 16);
    memcpy(cb.data() + 2 * k, &h, 2);
  }
  int c = b.g.add_constant("c", DType::BF16, {6}, cb);
  int r = b.node("Relu", {x}, {6}, {}, DType::BF16);
  int y = b.node("Reshape", {r, b.constant_i64("shape", {2, 3})}, {2, 3}, {}, DType::BF16);
  int s = b.node("Add", {r, c}, {6}, {}, DType::BF16);
  Attr to;
  to.i = 1;
  int z = b.node("Cast", {x}, {6}, {{"to", to}}, DType::F32);
  b.output(y);
  b.output(s);
  b.output(z);
  b.g.nodes[0].guards = {{x, true}};  // a branch's node: its Casts must carry the guard
  Graph before = b.g;
  PassContext ctx;
  REQUIRE(pass_bfloat16(b.g, ctx));
  // Relu and Add each got a Cast per bfloat16 input and one after; Reshape and Cast stayed.
  int casts = 0;
  for (const Node& n : b.g.nodes) {
    if (n.op == "Relu" || n.op == "Add") {
      for (int v : n.inputs) CHECK(b.g.values[v].dtype == DType::F32);
      CHECK(b.g.values[n.outputs[0]].dtype == DType::F32);
    }
    if (n.op == "Reshape") CHECK(b.g.values[n.inputs[0]].dtype == DType::BF16);
    if (n.op == "Cast" && n.name.find("Relu") != std::string::npos) {
      CHECK(n.guards == std::vector<std::pair<int, bool>>{{x, true}});
      casts++;
    }
    if (n.op == "Cast") CHECK(n.inputs.size() == 1);
  }
  CHECK(casts == 2);
  CHECK(b.g.nodes.size() == before.nodes.size() + 5);
  // Topological order and producers hold; the model's values keep their indices and types.
  for (size_t i = 0; i < b.g.nodes.size(); i++) {
    for (int v : b.g.nodes[i].inputs) CHECK(b.g.values[v].producer < (int)i);
    for (int v : b.g.nodes[i].outputs) CHECK(b.g.values[v].producer == (int)i);
  }
  CHECK(b.g.values[s].dtype == DType::BF16);
  CHECK(b.g.values[y].dtype == DType::BF16);
  CHECK_FALSE(pass_bfloat16(b.g, ctx));  // nothing left to rewrite
  // Run: x = [-2.5, -0.00390625 (a bf16), 1, 3.140625, 100, 0.333984375]; Add rounds its float32 sum once.
  for (Node& n : b.g.nodes) n.guards.clear();  // no kiln.Condition here: run every node
  const float xs[6] = {-2.5f, -0.00390625f, 1.0f, 3.140625f, 100.0f, 0.333984375f};
  std::vector<uint8_t> in(12);
  for (int k = 0; k < 6; k++) {
    uint32_t w;
    memcpy(&w, &xs[k], 4);
    uint16_t h = (uint16_t)(w >> 16);
    memcpy(in.data() + 2 * k, &h, 2);
  }
  auto out = kiln::evaluate_graph(b.g, {in});
  REQUIRE(out.size() == 3);
  for (int k = 0; k < 6; k++) {
    uint16_t h;
    memcpy(&h, out[1].data() + 2 * k, 2);
    uint32_t w = (uint32_t)h << 16;
    float got;
    memcpy(&got, &w, 4);
    float want = std::max(xs[k], 0.0f) + (0.5f * (float)k - 1.0f);  // exact in float32 here
    uint32_t ww;
    memcpy(&ww, &want, 4);
    ww = (ww + 0x7fff + ((ww >> 16) & 1)) & 0xffff0000u;
    memcpy(&want, &ww, 4);
    CHECK(got == want);
    float z32;
    memcpy(&z32, out[2].data() + 4 * k, 4);
    CHECK(z32 == xs[k]);
  }
}

