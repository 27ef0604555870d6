// Units for the ONNX importer: constants, shapes, overrides and the errors a
// user sees for bad models.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include "import/onnx_import.h"
#include "lower/lower_graph.h"
#include "support/diagnostics.h"

namespace {

void add_float_input(onnx::GraphProto* g, const std::string& name, std::vector<std::string> dims) {
  auto* in = g->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (auto& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (isdigit((unsigned char)d[0])) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

void add_output(onnx::GraphProto* g, const std::string& name, std::vector<std::string> dims) {
  auto* o = g->add_output();
  o->set_name(name);
  auto* tt = o->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (auto& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (isdigit((unsigned char)d[0])) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          std::vector<std::string> ins, std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

// x[N,4] -> Relu -> Add(bias) -> y
std::string relu_add_model(const std::string& batch, const std::string& op = "Relu") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("kiln-test");
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  add_float_input(g, "x", {batch, "4"});
  auto* bias = g->add_initializer();
  bias->set_name("bias");
  bias->set_data_type(onnx::TensorProto::FLOAT);
  bias->add_dims(4);
  for (float v : {1.f, 2.f, 3.f, 4.f}) bias->add_float_data(v);
  add_node(g, op, "my_relu", {"x"}, {"r"});
  add_node(g, "Add", "my_add", {"r", "bias"}, {"y"});
  add_output(g, "y", {batch, "4"});
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("import gives static shapes and constants") {
  kiln::graph::Graph g = kiln::import_onnx_bytes(relu_add_model("2"), ".", {});
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.values[g.inputs[0]].shape == kiln::graph::Shape{2, 4});
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].op == "Relu");
  const auto& bias = g.values[g.nodes[1].inputs[1]];
  CHECK(bias.is_constant());
  CHECK(bias.const_at(3) == 4.0);
  CHECK(g.values[g.outputs[0]].shape == kiln::graph::Shape{2, 4});
}

TEST_CASE("a dynamic input is sized per run without --input-shape, static with it") {
  {
    // Nothing bounds 'N': an unbounded symbol, and the values it sizes are run-time-sized.
    kiln::graph::Graph g = kiln::import_onnx_bytes(relu_add_model("N"), ".", {});
    REQUIRE(g.symbols.size() == 1);
    CHECK(g.symbols[0].name == "N");
    CHECK(g.symbols[0].unbounded);
    CHECK(g.symbols[0].lo == 1);
    CHECK(g.symbols[0].hi == kiln::graph::kMaxRunTimeDim);
    CHECK(g.runtime_sized(g.inputs[0]));
    CHECK(g.runtime_sized(g.outputs[0]));
  }
  kiln::ImportOptions o;
  o.input_shapes["x"] = {3, 4};
  kiln::graph::Graph g = kiln::import_onnx_bytes(relu_add_model("N"), ".", o);
  CHECK(g.values[g.outputs[0]].shape == kiln::graph::Shape{3, 4});
  o.input_shapes["nope"] = {1};
  CHECK_THROWS_AS(kiln::import_onnx_bytes(relu_add_model("N"), ".", o), kiln::UserError);
}

TEST_CASE("garbage is rejected as a user error") {
  CHECK_THROWS_AS(kiln::import_onnx_bytes("this is not a protobuf", ".", {}), kiln::UserError);
  CHECK_THROWS_AS(kiln::import_onnx_bytes(std::string(), ".", {}), kiln::UserError);
}

TEST_CASE("an unsupported operator names the node and the operator") {
  // An operator of a domain kilnc does not know (default-domain operators with
  // tensor operands that kilnc lacks have run out: RandomUniformLike, then
  // Multinomial served here).
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(relu_add_model("2", "Swish")));
  m.mutable_graph()->mutable_node(0)->set_domain("kiln_test");
  auto* opset = m.add_opset_import();
  opset->set_domain("kiln_test");
  opset->set_version(1);
  try {
    kiln::graph::Graph g = kiln::import_onnx_bytes(m.SerializeAsString(), ".", {});
    kiln::lower_graph(g);
    FAIL("expected a user error");
  } catch (const kiln::UserError& e) {
    std::string msg = e.what();
    CHECK(msg.find("my_relu") != std::string::npos);
    CHECK(msg.find("Swish") != std::string::npos);
  }
}

// Found by tests/fuzz/fuzz_onnx_import: an opset-1 model whose graph output
// no node produces crashed inside ONNX's version converter (a null Value in
// onnx::graphProtoToGraph); validate_model now refuses it first.
TEST_CASE("a graph output nothing defines is a user error, also before the version converter") {
  for (int opset : {1, 13}) {
    CAPTURE(opset);
    onnx::ModelProto m;
    m.set_ir_version(7);
    m.add_opset_import()->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("g");
    add_float_input(g, "a", {"2", "3"});
    add_float_input(g, "b", {"2", "3"});
    add_node(g, "Add", "add", {"a", "b"}, {"sum"});
    add_output(g, "c", {"2", "3"});
    std::string bytes;
    REQUIRE(m.SerializeToString(&bytes));
    try {
      kiln::import_onnx_bytes(bytes, ".", {});
      FAIL("expected a UserError");
    } catch (const kiln::UserError& e) {
      CHECK(std::string(e.what()).find("graph output 'c' is not a graph input") != std::string::npos);
    }
  }
}

// An opset-13 model (IR 8) whose graph "g" has one float input "x" of `dims`.
static onnx::ModelProto opset13_model(std::vector<std::string> dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  m.mutable_graph()->set_name("g");
  add_float_input(m.mutable_graph(), "x", std::move(dims));
  return m;
}

// Found by tests/fuzz/fuzz_onnx_import: ONNX's shape inference for Conv and
// ConvTranspose takes the kernel's spatial rank from the weight and indexes
// vectors sized by the data's rank with it; a weight of another rank read
// out of bounds (a crash in convPoolShapeInference). The guarded schema
// registry (import/validate.h) makes it a user error first.
TEST_CASE("a Conv weight whose rank is not the input's is a user error, not a crash in ONNX") {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    for (int weight_rank : {6, 4}) {
      CAPTURE(op);
      CAPTURE(weight_rank);
      onnx::ModelProto m = opset13_model({"1", "3", "9", "11"});
      auto* g = m.mutable_graph();
      auto* w = g->add_initializer();
      w->set_name("w");
      w->set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t d : {3, 3, 3, 3}) w->add_dims(d);
      for (int i = 4; i < weight_rank; i++) w->add_dims(1);
      for (int i = 0; i < 81; i++) w->add_float_data(0.5f);
      add_node(g, op, "conv", {"x", "w"}, {"y"});
      if (std::string(op) == "Conv") add_output(g, "y", {"1", "3", "7", "9"});
      else add_output(g, "y", {"1", "3", "11", "13"});
      std::string bytes;
      REQUIRE(m.SerializeToString(&bytes));
      if (weight_rank == 4) {
        CHECK_NOTHROW(kiln::import_onnx_bytes(bytes, ".", {}));
        continue;
      }
      try {
        kiln::import_onnx_bytes(bytes, ".", {});
        FAIL("expected a UserError");
      } catch (const kiln::UserError& e) {
        // ONNX's inference (its guard: "input 1 has rank 6 but input 0 has rank 4") only warns;
        // kilnc's own inference refuses the node.
        CHECK(std::string(e.what()).find("node 'conv'") != std::string::npos);
        CHECK(std::string(e.what()).find("same rank") != std::string::npos);
      }
    }
  }
}

TEST_CASE("a shape Slice with a step near INT64_MAX folds, without overflow in ONNX or kilnc") {
  // Shape(x) -> Slice(starts, ends, axes, steps) -> Concat(-1) -> Reshape: ONNX's data propagation
  // and kilnc's folder both walked `i += step` (fuzz regression fold_shapes_slice_step_overflow).
  for (int64_t step : {INT64_MAX, INT64_MIN}) {
    CAPTURE(step);
    onnx::ModelProto m = opset13_model({"2", "3", "4", "5"});
    auto* g = m.mutable_graph();
    auto constant = [&](const char* name, int64_t v) {
      auto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(1);
      t->add_int64_data(v);
    };
    constant("st", step > 0 ? 1 : 3);
    constant("en", step > 0 ? 10 : -10);
    constant("ax", 0);
    constant("sp", step);
    constant("m1", -1);
    add_node(g, "Shape", "shape", {"x"}, {"s"});
    add_node(g, "Slice", "slice", {"s", "st", "en", "ax", "sp"}, {"t"});
    add_node(g, "Concat", "concat", {"t", "m1"}, {"shape"})->add_attribute()->CopyFrom(
        [] { onnx::AttributeProto a; a.set_name("axis"); a.set_type(onnx::AttributeProto::INT); a.set_i(0); return a; }());
    add_node(g, "Reshape", "reshape", {"x", "shape"}, {"y"});
    add_output(g, "y", step > 0 ? std::vector<std::string>{"3", "40"} : std::vector<std::string>{"5", "24"});
    std::string bytes;
    REQUIRE(m.SerializeToString(&bytes));
    kiln::graph::Graph out = kiln::import_onnx_bytes(bytes, ".", {});
    REQUIRE(out.outputs.size() == 1);
    CHECK(out.values[out.outputs[0]].shape == (step > 0 ? kiln::graph::Shape{3, 40} : kiln::graph::Shape{5, 24}));
  }
}
