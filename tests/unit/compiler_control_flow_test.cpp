// Units for the import's compile-time control flow and boundary values:
// Loop and Scan unrolled when their trip count is known (unroll_loops.h),
// sequences and optionals as model inputs and outputs (boundary_values.h,
// static_sequences.h). Results are computed with the compiler itself
// (driver/evaluate.h) and compared with what ONNX's semantics give.
#include <algorithm>
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "driver/evaluate.h"
#include "import/onnx_import.h"
#include "support/diagnostics.h"

namespace {

using TP = onnx::TensorProto;

onnx::ValueInfoProto* tensor_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                                   const std::string& name, int elem, std::vector<int64_t> dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return v;
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                      std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

void int_attr(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void ints_attr(onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void int64_initializer(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v, bool scalar,
                       int type = TP::INT64) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  if (!scalar) t->add_dims((int64_t)v.size());
  for (int64_t x : v) {
    if (type == TP::INT64) t->add_int64_data(x);
    else t->add_int32_data((int32_t)x);
  }
}

onnx::ModelProto model(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("kiln-test");
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

std::vector<uint8_t> floats(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> as_floats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  memcpy(v.data(), b.data(), b.size());
  return v;
}

std::string import_error(const onnx::ModelProto& m, const kiln::ImportOptions& o = {}) {
  try {
    kiln::import_onnx_bytes(m.SerializeAsString(), ".", o);
  } catch (const kiln::UserError& e) {
    return e.what();
  }
  return "";
}

// Loop(M, cond, y) whose body adds x[i] to y and scans y: the running sums.
// `early`: the body's condition is computed (y < 100), so the loop may end early.
onnx::ModelProto running_sum_loop(int64_t trips, bool early) {
  onnx::ModelProto m = model(13);
  auto* g = m.mutable_graph();
  tensor_value(g->mutable_input(), "y", TP::FLOAT, {1});
  int64_initializer(g, "M", {trips}, true);
  auto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(TP::BOOL);
  cond->add_int32_data(1);
  auto* x = g->add_initializer();
  x->set_name("x");
  x->set_data_type(TP::FLOAT);
  x->add_dims(8);
  for (int k = 0; k < 8; k++) x->add_float_data((float)(k + 1));
  auto* loop = node(g, "Loop", {"M", "cond", "y"}, {"y_final", "sums"});
  auto* body = loop->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  auto* b = body->mutable_g();
  b->set_name("body");
  tensor_value(b->mutable_input(), "i", TP::INT64, {});
  tensor_value(b->mutable_input(), "c", TP::BOOL, {});
  tensor_value(b->mutable_input(), "y_in", TP::FLOAT, {1});
  int64_initializer(b, "zero", {0}, false);
  node(b, "Unsqueeze", {"i", "zero"}, {"at"});
  int64_initializer(b, "one", {1}, false);
  node(b, "Add", {"at", "one"}, {"end"});
  node(b, "Slice", {"x", "at", "end"}, {"xi"});
  node(b, "Add", {"y_in", "xi"}, {"y_out"});
  node(b, "Identity", {"y_out"}, {"scan"});
  if (early) {
    auto* limit = b->add_initializer();
    limit->set_name("limit");
    limit->set_data_type(TP::FLOAT);
    limit->add_float_data(100.f);
    node(b, "Less", {"y_out", "limit"}, {"below"});
    node(b, "Squeeze", {"below", "zero"}, {"c_out"});
  } else {
    node(b, "Identity", {"c"}, {"c_out"});
  }
  tensor_value(b->mutable_output(), "c_out", TP::BOOL, {});
  tensor_value(b->mutable_output(), "y_out", TP::FLOAT, {1});
  tensor_value(b->mutable_output(), "scan", TP::FLOAT, {1});
  tensor_value(g->mutable_output(), "y_final", TP::FLOAT, {1});
  tensor_value(g->mutable_output(), "sums", TP::FLOAT, {trips, 1});
  return m;
}

}  // namespace

TEST_CASE("control flow: a Loop with a constant trip count is unrolled") {
  kiln::graph::Graph g = kiln::import_onnx_bytes(running_sum_loop(4, false).SerializeAsString(), ".", {});
  for (auto& n : g.nodes) CHECK(n.op != "Loop");
  REQUIRE(g.outputs.size() == 2);
  CHECK(g.values[g.outputs[1]].shape == kiln::graph::Shape{4, 1});
  auto out = kiln::evaluate_graph(g, {floats({10.f})});
  CHECK(as_floats(out[0]) == std::vector<float>{20.f});                     // 10 + 1 + 2 + 3 + 4
  CHECK(as_floats(out[1]) == std::vector<float>{11.f, 13.f, 16.f, 20.f});  // the running sums
}

TEST_CASE("control flow: a Loop that may end early, runs 0 times with scans, or is too long, is left for kilnc to name") {
  // (2^62 iterations of a 5-node body: the size check must not overflow.)
  for (auto m : {running_sum_loop(4, true), running_sum_loop(0, false), running_sum_loop(int64_t(1) << 62, false),
                 running_sum_loop(INT64_MAX, false), running_sum_loop(70000, false)}) {
    // (The huge ones declare a scan output too large to hold: a user error
    // naming the Loop, also fine; what must not happen is unrolling.)
    std::string error = import_error(m);
    if (!error.empty()) {
      CHECK_MESSAGE(error.find("Loop") != std::string::npos, error);
      continue;
    }
    kiln::graph::Graph g = kiln::import_onnx_bytes(m.SerializeAsString(), ".", {});
    bool loop = false;
    for (auto& n : g.nodes) loop |= n.op == "Loop";
    CHECK(loop);
  }
}

TEST_CASE("control flow: Scan (opset 9 and opset 8's batch axis) is unrolled, in its directions") {
  for (int opset : {8, 11}) {
    CAPTURE(opset);
    onnx::ModelProto m = model(opset);
    auto* g = m.mutable_graph();
    const bool batched = opset < 9;
    std::vector<int64_t> state = batched ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2};
    std::vector<int64_t> xs = batched ? std::vector<int64_t>{1, 3, 2} : std::vector<int64_t>{3, 2};
    tensor_value(g->mutable_input(), "init", TP::FLOAT, state);
    tensor_value(g->mutable_input(), "x", TP::FLOAT, xs);
    std::vector<std::string> ins = {"init", "x"};
    if (batched) ins.insert(ins.begin(), "");
    auto* scan = node(g, "Scan", ins, {"final", "partial"});
    int_attr(scan, "num_scan_inputs", 1);
    // Reversed (opset 8 calls it `directions`): 5,6 then 3,4 then 1,2.
    ints_attr(scan, batched ? "directions" : "scan_input_directions", {1});
    auto* body = scan->add_attribute();
    body->set_name("body");
    body->set_type(onnx::AttributeProto::GRAPH);
    auto* b = body->mutable_g();
    b->set_name("body");
    tensor_value(b->mutable_input(), "s", TP::FLOAT, {2});
    tensor_value(b->mutable_input(), "xi", TP::FLOAT, {2});
    node(b, "Add", {"s", "xi"}, {"s_out"});
    node(b, "Identity", {"s_out"}, {"p"});
    tensor_value(b->mutable_output(), "s_out", TP::FLOAT, {2});
    tensor_value(b->mutable_output(), "p", TP::FLOAT, {2});
    tensor_value(g->mutable_output(), "final", TP::FLOAT, state);
    tensor_value(g->mutable_output(), "partial", TP::FLOAT, xs);
    kiln::graph::Graph graph = kiln::import_onnx_bytes(m.SerializeAsString(), ".", {});
    for (auto& n : graph.nodes) CHECK(n.op != "Scan");
    auto out = kiln::evaluate_graph(graph, {floats({0, 0}), floats({1, 2, 3, 4, 5, 6})});
    CHECK(as_floats(out[0]) == std::vector<float>{9, 12});
    CHECK(as_floats(out[1]) == std::vector<float>{5, 6, 8, 10, 9, 12});
  }
}

// y = SequenceMap(x, body: Mul(e, 2)); z = OptionalHasElement(o), w = OptionalGetElement(o).
onnx::ModelProto boundary_model() {
  onnx::ModelProto m = model(17);
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  auto* o = g->add_input();
  o->set_name("o");
  auto* ot = o->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type();
  ot->set_elem_type(TP::FLOAT);
  ot->mutable_shape()->add_dim()->set_dim_value(2);
  auto* map = node(g, "SequenceMap", {"x"}, {"y"});
  auto* body = map->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  auto* b = body->mutable_g();
  b->set_name("body");
  auto* e = b->add_input();
  e->set_name("e");
  e->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  auto* two = b->add_initializer();
  two->set_name("two");
  two->set_data_type(TP::FLOAT);
  two->add_float_data(2.f);
  node(b, "Mul", {"e", "two"}, {"doubled"});
  auto* d = b->add_output();
  d->set_name("doubled");
  d->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  node(g, "OptionalHasElement", {"o"}, {"z"});
  node(g, "OptionalGetElement", {"o"}, {"w"});
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  tensor_value(g->mutable_output(), "z", TP::BOOL, {});
  tensor_value(g->mutable_output(), "w", TP::FLOAT, {2});
  return m;
}

TEST_CASE("boundary: sequence and optional inputs and outputs become tensors, recorded as composites") {
  onnx::ModelProto m = boundary_model();
  std::string error = import_error(m);
  CHECK(error.find("'x' is a sequence") != std::string::npos);
  CHECK(error.find("--sequence-length x=N") != std::string::npos);
  kiln::ImportOptions o;
  o.sequence_lengths = {{"x", 2}, {"o", 2}};
  CHECK(import_error(m, o).find("--sequence-length names 'o', which is no sequence input") != std::string::npos);
  o.sequence_lengths = {{"x", 2}, {"nope", 1}};
  CHECK(import_error(m, o).find("'nope'") != std::string::npos);
  o.sequence_lengths = {{"x", 2}};
  error = import_error(m, o);
  CHECK_MESSAGE(error.find("'x[0]' has no shape") != std::string::npos, error);
  o.input_shapes["x[0]"] = {kiln::DimSpec{3, 3}};
  o.input_shapes["x[1]"] = {kiln::DimSpec{1, 1}};
  kiln::graph::Graph g = kiln::import_onnx_bytes(m.SerializeAsString(), ".", o);
  // Inputs: x[0], x[1], o.value, o.present; outputs y[0], y[1], z, w.
  REQUIRE(g.inputs.size() == 4);
  CHECK(g.values[g.inputs[0]].name == "x[0]");
  CHECK(g.values[g.inputs[3]].name == "o.present");
  REQUIRE(g.outputs.size() == 4);
  CHECK(g.values[g.outputs[1]].name == "y[1]");
  REQUIRE(g.composites.size() == 3);
  CHECK(g.composites[0].name == "x");
  CHECK(g.composites[0].elements == std::vector<int>{0, 1});
  CHECK(g.composites[1].name == "o");
  CHECK(g.composites[1].optional);
  CHECK(g.composites[1].elements == std::vector<int>{2});
  CHECK(g.composites[1].presence == 3);
  CHECK(g.composites[2].name == "y");
  CHECK(g.composites[2].output);
  CHECK(g.composites[2].elements == std::vector<int>{0, 1});
  const std::vector<uint8_t> present = {1}, absent = {0};
  auto out = kiln::evaluate_graph(g, {floats({1, 2, 3}), floats({4}), floats({5, 6}), absent});
  CHECK(as_floats(out[0]) == std::vector<float>{2, 4, 6});
  CHECK(as_floats(out[1]) == std::vector<float>{8});
  CHECK(out[2] == absent);
  out = kiln::evaluate_graph(g, {floats({1, 2, 3}), floats({4}), floats({5, 6}), present});
  CHECK(out[2] == present);
  CHECK(as_floats(out[3]) == std::vector<float>{5, 6});
}

TEST_CASE("boundary: an element name the model already uses is a user error") {
  onnx::ModelProto m = boundary_model();
  tensor_value(m.mutable_graph()->mutable_value_info(), "x[0]", TP::FLOAT, {1});
  node(m.mutable_graph(), "Identity", {"w"}, {"x[0]"});
  kiln::ImportOptions o;
  o.sequence_lengths["x"] = 1;
  CHECK(import_error(m, o).find("already has a value of that name") != std::string::npos);
}

TEST_CASE("sequences: positions read at run time pick elements of one shape") {
  // s = [a, b, c]; at = s[p]; ins = insert(s, t, p) -> concat; era = erase(s, p) -> concat.
  onnx::ModelProto m = model(13);
  auto* g = m.mutable_graph();
  for (const char* name : {"a", "b", "c", "t"}) tensor_value(g->mutable_input(), name, TP::FLOAT, {2});
  tensor_value(g->mutable_input(), "p", TP::INT64, {});
  node(g, "SequenceConstruct", {"a", "b", "c"}, {"s"});
  node(g, "SequenceAt", {"s", "p"}, {"at"});
  node(g, "SequenceInsert", {"s", "t", "p"}, {"si"});
  int_attr(node(g, "ConcatFromSequence", {"si"}, {"ins"}), "axis", 0);
  node(g, "SequenceErase", {"s", "p"}, {"se"});
  int_attr(node(g, "ConcatFromSequence", {"se"}, {"era"}), "axis", 0);
  tensor_value(g->mutable_output(), "at", TP::FLOAT, {2});
  tensor_value(g->mutable_output(), "ins", TP::FLOAT, {8});
  tensor_value(g->mutable_output(), "era", TP::FLOAT, {4});
  // Each normalized position is range-checked at run time through a
  // kiln.InputValue (a data symbol: [0, 2] for At and Erase, [0, 3] for
  // Insert), which the in-process evaluator cannot run: checked here, then
  // compiled without the checks (tools_sequences runs them).
  {
    kiln::graph::Graph checked = kiln::import_onnx_bytes(m.SerializeAsString(), ".", {});
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (auto& n : checked.nodes)
      if (n.op == "kiln.InputValue") ranges.push_back({n.attr_int("lo", -1), n.attr_int("hi", -1)});
    std::sort(ranges.begin(), ranges.end());
    CHECK(ranges == std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {0, 2}, {0, 3}});
  }
  kiln::ImportOptions unchecked;
  unchecked.run_time_checks = false;
  kiln::graph::Graph graph = kiln::import_onnx_bytes(m.SerializeAsString(), ".", unchecked);
  const std::vector<std::vector<float>> x = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};  // a, b, c, t
  for (int64_t p : {0, 1, 2, -1, -3}) {
    CAPTURE(p);
    std::vector<uint8_t> pos(8);
    memcpy(pos.data(), &p, 8);
    auto out = kiln::evaluate_graph(graph, {floats(x[0]), floats(x[1]), floats(x[2]), floats(x[3]), pos});
    const int64_t k = p < 0 ? p + 3 : p;
    std::vector<std::vector<float>> s = {x[0], x[1], x[2]};
    CHECK(as_floats(out[0]) == s[(size_t)k]);
    std::vector<std::vector<float>> ins = s, era = s;
    ins.insert(ins.begin() + k, x[3]);
    era.erase(era.begin() + k);
    std::vector<float> ins_flat, era_flat;
    for (auto& v : ins) ins_flat.insert(ins_flat.end(), v.begin(), v.end());
    for (auto& v : era) era_flat.insert(era_flat.end(), v.begin(), v.end());
    CHECK(as_floats(out[1]) == ins_flat);
    CHECK(as_floats(out[2]) == era_flat);
  }
}

TEST_CASE("boundary: passthrough, name collisions and a model's own composite metadata") {
  // A sequence input that is also the output: its elements are both.
  onnx::ModelProto m = model(13);
  auto* g = m.mutable_graph();
  auto* s_in = g->add_input();
  s_in->set_name("s");
  auto* st = s_in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  st->set_elem_type(TP::FLOAT);
  st->mutable_shape()->add_dim()->set_dim_value(2);
  *g->add_output() = *s_in;
  kiln::ImportOptions o;
  o.sequence_lengths["s"] = 2;
  kiln::graph::Graph graph = kiln::import_onnx_bytes(m.SerializeAsString(), ".", o);
  REQUIRE(graph.composites.size() == 2);
  CHECK(graph.composites[1].output);
  CHECK(graph.composites[1].elements == std::vector<int>{0, 1});
  CHECK(graph.outputs == graph.inputs);
  // A model output named like an element the expansion would make is refused.
  onnx::ModelProto c = model(13);
  g = c.mutable_graph();
  tensor_value(g->mutable_input(), "x", TP::FLOAT, {2});
  node(g, "Relu", {"x"}, {"y"});
  node(g, "SequenceConstruct", {"y", "x"}, {"s"});
  node(g, "Neg", {"x"}, {"s[0]"});
  auto* s_out = g->add_output();
  s_out->set_name("s");
  *s_out->mutable_type() = s_in->type();
  tensor_value(g->mutable_output(), "s[0]", TP::FLOAT, {2});
  CHECK(import_error(c).find("would become tensor 's[0]'") != std::string::npos);
  // Composite records in the model's own metadata are not kilnc's.
  onnx::ModelProto p = model(13);
  g = p.mutable_graph();
  tensor_value(g->mutable_input(), "x", TP::FLOAT, {2});
  node(g, "Relu", {"x"}, {"y"});
  tensor_value(g->mutable_output(), "y", TP::FLOAT, {2});
  for (const char* key : {"kiln.composite:out:y", "kiln.composite:in:x"}) {
    auto* prop = p.add_metadata_props();
    prop->set_key(key);
    prop->set_value("seq 2");
  }
  graph = kiln::import_onnx_bytes(p.SerializeAsString(), ".", {});
  CHECK(graph.composites.empty());
}
