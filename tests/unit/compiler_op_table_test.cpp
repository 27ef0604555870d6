// Units for the operator table (compiler/graph/op_table.def): every row is
// reachable by its name and has a lowering; unknown operators get the
// conservative traits; the columns the passes read say what they should.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "graph/op_table.h"
#include "lower/op_registry.h"

namespace {

using namespace kiln::graph;

TEST_CASE("op table: every row by name, with a lowering, names unique") {
  std::set<std::string> names;
  REQUIRE(op_table().size() == (size_t)Op::Unknown);
  for (size_t i = 0; i < op_table().size(); i++) {
    const OpTraits& t = op_table()[i];
    CAPTURE(t.name);
    CHECK((size_t)t.op == i);
    CHECK(names.insert(t.name).second);
    CHECK(&op_traits(t.name) == &t);
    CHECK(&op_traits(t.op) == &t);
    CHECK(std::string(op_name(t.op)) == t.name);
    bool has_lowering = kiln::lower::op_lowering(t.op) != nullptr;
    CHECK(has_lowering);
    // Only import rows are consumed before lowering; a reshape or
    // passthrough never anchors or joins a fused kernel.
    CHECK((t.role == OpRole::Import) == (t.family == OpFamily::Import));
    if (t.shape_only()) CHECK(t.layout == OpLayout::Nchw);
    // The layout pass runs elementwise operators on blocked operands and
    // nothing else under Layout "Any".
    if (t.layout == OpLayout::Any) CHECK(t.elementwise());
    if (t.keeps_finite()) CHECK(t.elementwise());
  }
  bool unknown_lowering = kiln::lower::op_lowering(Op::Unknown) != nullptr;
  CHECK_FALSE(unknown_lowering);
}

TEST_CASE("op table: an unknown operator is never folded, merged or fused") {
  const OpTraits& t = op_traits("NoSuchOperator");
  CHECK_FALSE(t.known());
  CHECK(t.op == Op::Unknown);
  CHECK(t.nondeterministic());
  CHECK_FALSE(t.elementwise());
  CHECK_FALSE(t.shape_only());
  CHECK(t.fold == ImportFold::None);
  CHECK_FALSE(t.param_input(0));
  CHECK(op_traits("kiln.ToBlocked").op == Op::KilnToBlocked);
  CHECK_FALSE(op_traits("conv").known());  // names are case-sensitive, as in ONNX
}

TEST_CASE("op table: ai.onnx.ml rows carry their domain") {
  CHECK(onnx_op_name("ai.onnx.ml", "LabelEncoder") == "ai.onnx.ml.LabelEncoder");
  CHECK(op_traits(onnx_op_name(kMlDomain, "TreeEnsemble")).op == Op::MlTreeEnsemble);
  CHECK(op_traits(onnx_op_name(kMlDomain, "TreeEnsemble")).family == OpFamily::Ml);
  CHECK(onnx_op_name("", "Conv") == "Conv");
  CHECK(onnx_op_name("ai.onnx.preview.training", "Adam") == "Adam");
  CHECK_FALSE(op_traits("LabelEncoder").known());  // a default-domain node of that name is unknown
}

TEST_CASE("op table: the columns the passes read") {
  // Fusion: Conv anchors, Relu joins as an epilogue, Reshape aliases.
  CHECK(op_traits("Conv").role == OpRole::Heavy);
  CHECK(op_traits("Relu").elementwise());
  CHECK(op_traits("Reshape").role == OpRole::Reshape);
  CHECK(op_traits("Dropout").role == OpRole::Passthrough);
  // Constant folding keeps weights whatever their size: Conv's inputs 1 and
  // 2, either side of a MatMul, never a Conv's data input.
  CHECK_FALSE(op_traits("Conv").param_input(0));
  CHECK(op_traits("Conv").param_input(1));
  CHECK(op_traits("Conv").param_input(2));
  CHECK(op_traits("MatMul").param_input(0));
  CHECK(op_traits("MatMul").param_input(1));
  CHECK_FALSE(op_traits("Add").param_input(1));
  // Layout: padded channels only through ops that keep values finite.
  CHECK(op_traits("Relu").keeps_finite());
  CHECK_FALSE(op_traits("Exp").keeps_finite());
  CHECK_FALSE(op_traits("Div").keeps_finite());
  CHECK(op_traits("BatchNormalization").layout == OpLayout::Nchw);
  // Import folding of shape arithmetic.
  CHECK(op_traits("Shape").fold == ImportFold::Shape);
  CHECK(op_traits("Equal").fold == ImportFold::Compare);
  CHECK(op_traits("Constant").role == OpRole::Import);
}

}  // namespace
