// Units for the narrow element types (decision 62): the conversions of
// lower/narrow_types.h run through the real compiler (driver/evaluate.h),
// every code of each 8-bit type decoded and rounded back, ties to even,
// saturation and the special values, e8m0's round modes, the 4- and 2-bit
// integers; the importer's unpacking; graph pass `bfloat16` widening the
// narrow floats for other operators; QuantizeLinear / DequantizeLinear.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <onnx/onnx_pb.h>

#include "compiler_graph_builder.h"
#include "driver/evaluate.h"
#include "graph/passes.h"
#include "import/onnx_import.h"
#include "support/diagnostics.h"

namespace {

using namespace kiln::graph;
using kiln::test::Builder;
using kiln::test::integer;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Attr text(const std::string& s) {
  Attr a;
  a.kind = Attr::Kind::String;
  a.s = s;
  return a;
}

std::vector<uint8_t> f32_bytes(const std::vector<double>& x) {
  std::vector<uint8_t> b(4 * x.size());
  for (size_t i = 0; i < x.size(); i++) {
    float f = (float)x[i];
    memcpy(b.data() + 4 * i, &f, 4);
  }
  return b;
}

float f32_at(const std::vector<uint8_t>& b, size_t i) {
  float f;
  memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

// Cast of `x` (float32 values) to `to`, with Cast's attributes: the bytes.
std::vector<uint8_t> cast_f32(const std::vector<double>& x, DType to, int saturate = 1, const std::string& mode = "") {
  Builder b;
  int in = b.input("x", {(int64_t)x.size()});
  std::map<std::string, Attr> attrs = {{"to", integer((int64_t)to + 3)}, {"saturate", integer(saturate)}};
  if (!mode.empty()) attrs["round_mode"] = text(mode);
  b.output(b.node("Cast", {in}, {(int64_t)x.size()}, attrs, to));
  return kiln::evaluate_graph(b.g, {f32_bytes(x)})[0];
}

// The float32 values of `codes` of narrow type `from` (Cast to float32).
std::vector<uint8_t> decode(const std::vector<uint8_t>& codes, DType from) {
  Builder b;
  int in = b.input("x", {(int64_t)codes.size()}, from);
  b.output(b.node("Cast", {in}, {(int64_t)codes.size()}, {{"to", integer(1)}}));
  return kiln::evaluate_graph(b.g, {codes})[0];
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

const DType kFloat8s[] = {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ};

}  // namespace

TEST_CASE("narrow types: every code decodes to its value and rounds back to itself") {
  for (DType t : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F8E8M0, DType::F4E2M1}) {
    CAPTURE(dtype_name(t));
    const int n = t == DType::F4E2M1 ? 16 : 256;
    std::vector<uint8_t> codes(n);
    for (int c = 0; c < n; c++) codes[c] = (uint8_t)c;
    std::vector<uint8_t> f = decode(codes, t);
    std::vector<double> values;
    for (int c = 0; c < n; c++) {
      CAPTURE(c);
      CHECK(same(f32_at(f, c), narrow_value(t, (uint8_t)c)));
      values.push_back(f32_at(f, c));
    }
    // float32 -> the type: every value to its own code (saturate = 0 keeps
    // E5M2's infinities); NaN to the type's NaN.
    std::vector<uint8_t> back = cast_f32(values, t, 0);
    for (int c = 0; c < n; c++) {
      CAPTURE(c);
      uint8_t want = (uint8_t)c;
      if (t == DType::F8E5M2 && (c & 0x7F) > 0x7C) want = (uint8_t)(0x7E | (c & 0x80));  // NaN: the quiet one, its sign
      CHECK(back[c] == want);
    }
  }
  // Known values (kiln.h's formats).
  CHECK(narrow_value(DType::F8E4M3FN, 0x7E) == 448);
  CHECK(narrow_value(DType::F8E4M3FN, 0x01) == std::ldexp(1.0, -9));
  CHECK(std::isnan(narrow_value(DType::F8E4M3FN, 0xFF)));
  CHECK(narrow_value(DType::F8E4M3FNUZ, 0x7F) == 240);
  CHECK(narrow_value(DType::F8E5M2, 0x7B) == 57344);
  CHECK(narrow_value(DType::F8E5M2, 0xFC) == -kInf);
  CHECK(narrow_value(DType::F8E5M2FNUZ, 0x01) == std::ldexp(1.0, -17));
  CHECK(std::isnan(narrow_value(DType::F8E5M2FNUZ, 0x80)));
  CHECK(narrow_value(DType::F4E2M1, 0x7) == 6);
  CHECK(narrow_value(DType::F4E2M1, 0x1) == 0.5);
  CHECK(narrow_value(DType::F8E8M0, 0) == std::ldexp(1.0, -127));
  CHECK(narrow_value(DType::F8E8M0, 254) == std::ldexp(1.0, 127));
}

TEST_CASE("narrow types: rounding to nearest even, saturation, special values") {
  // Between every two neighbouring finite values: the midpoint goes to the
  // even code, just above it up, just below it down.
  for (DType t : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F4E2M1}) {
    CAPTURE(dtype_name(t));
    const int n = t == DType::F4E2M1 ? 8 : 128;
    std::vector<double> x;
    std::vector<uint8_t> want;
    for (int c = 0; c + 1 < n; c++) {
      double lo = narrow_value(t, (uint8_t)c), hi = narrow_value(t, (uint8_t)(c + 1));
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      double mid = (lo + hi) / 2;
      float above = std::nextafter((float)mid, (float)kInf), below = std::nextafter((float)mid, 0.0f);
      x.insert(x.end(), {mid, above, below, -mid});
      uint8_t even = (uint8_t)(c % 2 ? c + 1 : c), sign = t == DType::F4E2M1 ? 8 : 0x80;
      bool fnuz_zero = (t == DType::F8E4M3FNUZ || t == DType::F8E5M2FNUZ) && even == 0;  // no -0
      want.insert(want.end(), {even, (uint8_t)(c + 1), (uint8_t)c, (uint8_t)(fnuz_zero ? 0 : even | sign)});
    }
    std::vector<uint8_t> got = cast_f32(x, t);
    for (size_t i = 0; i < x.size(); i++) {
      CAPTURE(x[i]);
      CHECK(got[i] == want[i]);
    }
  }
  // Past the largest finite value, infinities, NaN, -0, tiny values; with
  // saturate (Cast's default) and without.
  const std::vector<double> x = {464, 465, 1e9, kInf, -kInf, kNaN, -0.0, -1e-30, 61440, 57344, 1e6, -1e6};
  struct Want {
    DType t;
    std::vector<int> sat, raw;
  };
  const Want wants[] = {
      {DType::F8E4M3FN, {0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x80, 0x80, 0x7E, 0x7E, 0x7E, 0xFE},
       {0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x80, 0x7F, 0x7F, 0x7F, 0xFF}},
      {DType::F8E4M3FNUZ, {0x7F, 0x7F, 0x7F, 0x7F, 0xFF, 0x80, 0x00, 0x00, 0x7F, 0x7F, 0x7F, 0xFF},
       {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80}},
      {DType::F8E5M2, {0x5F, 0x5F, 0x7B, 0x7B, 0xFB, 0x7E, 0x80, 0x80, 0x7B, 0x7B, 0x7B, 0xFB},
       {0x5F, 0x5F, 0x7C, 0x7C, 0xFC, 0x7E, 0x80, 0x80, 0x7C, 0x7B, 0x7C, 0xFC}},
      {DType::F8E5M2FNUZ, {0x63, 0x63, 0x7F, 0x7F, 0xFF, 0x80, 0x00, 0x00, 0x7F, 0x7F, 0x7F, 0xFF},
       {0x63, 0x63, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x80, 0x7F, 0x80, 0x80}},
      // No inf or NaN: always saturates; NaN becomes -0 (as ml_dtypes writes it).
      {DType::F4E2M1, {0x7, 0x7, 0x7, 0x7, 0xF, 0x8, 0x8, 0x8, 0x7, 0x7, 0x7, 0xF},
       {0x7, 0x7, 0x7, 0x7, 0xF, 0x8, 0x8, 0x8, 0x7, 0x7, 0x7, 0xF}},
  };
  for (const Want& w : wants) {
    CAPTURE(dtype_name(w.t));
    std::vector<uint8_t> sat = cast_f32(x, w.t, 1), raw = cast_f32(x, w.t, 0);
    for (size_t i = 0; i < x.size(); i++) {
      CAPTURE(x[i]);
      CHECK((int)sat[i] == w.sat[i]);
      CHECK((int)raw[i] == w.raw[i]);
    }
  }
}

TEST_CASE("narrow types: float8e8m0's round modes and saturation") {
  const std::vector<double> x = {1, 3, 2.9, 1.25, 0, kInf, kNaN, 3e38, std::ldexp(1.0, -127), 1e-40, -4};
  // code = 127 + the power of two chosen; 0xFF NaN.
  CHECK(cast_f32(x, DType::F8E8M0, 1, "up") == std::vector<uint8_t>{127, 129, 129, 128, 0, 254, 255, 254, 0, 0, 129});
  CHECK(cast_f32(x, DType::F8E8M0, 0, "up") == std::vector<uint8_t>{127, 129, 129, 128, 0, 255, 255, 255, 0, 0, 129});
  CHECK(cast_f32(x, DType::F8E8M0, 1, "down") == std::vector<uint8_t>{127, 128, 128, 127, 0, 254, 255, 254, 0, 0, 129});
  CHECK(cast_f32(x, DType::F8E8M0, 0, "down") == std::vector<uint8_t>{127, 128, 128, 127, 255, 255, 255, 254, 0, 255, 129});
  // nearest: ties (1.5 * 2^k) up
  CHECK(cast_f32(x, DType::F8E8M0, 1, "nearest") == std::vector<uint8_t>{127, 129, 128, 127, 0, 254, 255, 254, 0, 0, 129});
  CHECK(cast_f32(x, DType::F8E8M0, 0, "nearest") == std::vector<uint8_t>{127, 129, 128, 127, 255, 255, 255, 255, 0, 255, 129});
}

TEST_CASE("narrow types: int4, uint4, int2, uint2") {
  // From floats: truncated, 0 outside the range or NaN (ONNX's reference).
  const std::vector<double> x = {7.9, 8, -8.5, -9, -0.7, 2.5, kNaN, kInf, 1.5, -2};
  auto as_int = [](const std::vector<uint8_t>& b) {
    std::vector<int> r;
    for (uint8_t v : b) r.push_back((int8_t)v);
    return r;
  };
  CHECK(as_int(cast_f32(x, DType::I4)) == std::vector<int>{7, 0, -8, 0, 0, 2, 0, 0, 1, -2});
  CHECK(as_int(cast_f32(x, DType::U4)) == std::vector<int>{7, 8, 0, 0, 0, 2, 0, 0, 1, 0});
  CHECK(as_int(cast_f32(x, DType::I2)) == std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1, -2});
  CHECK(as_int(cast_f32(x, DType::U2)) == std::vector<int>{0, 0, 0, 0, 0, 2, 0, 0, 1, 0});
  // From integers: the low bits, sign-extended (ONNX's Cast wraps); back to
  // int8 and float32 from bytes whose high bits are set (only the low bits count).
  Builder b;
  int in = b.input("x", {6}, DType::I32);
  int q = b.node("Cast", {in}, {6}, {{"to", integer(22)}}, DType::I4);
  b.output(q);
  int bytes = b.input("raw", {4}, DType::I4);
  b.output(b.node("Cast", {bytes}, {4}, {{"to", integer(3)}}, DType::I8));
  b.output(b.node("Cast", {bytes}, {4}, {{"to", integer(1)}}));
  std::vector<uint8_t> ints(24);
  const int32_t iv[6] = {-9, 8, 15, 16, -1, 7};
  memcpy(ints.data(), iv, 24);
  auto out = kiln::evaluate_graph(b.g, {ints, {0x0F, 0xF7, 0x08, 0xFF}});
  CHECK(as_int(out[0]) == std::vector<int>{7, -8, -1, 0, -1, 7});
  CHECK(as_int(out[1]) == std::vector<int>{-1, 7, -8, -1});
  CHECK(f32_at(out[2], 0) == -1);
  CHECK(f32_at(out[2], 2) == -8);
}

TEST_CASE("narrow types: QuantizeLinear saturates and rounds half to even; blocked DequantizeLinear") {
  Builder b;
  int x = b.input("x", {2, 4});
  int s = b.constant("s", {2, 2}, {1, 2, 0.5, 4});  // blocks of 2 along axis 1
  int z = b.constant_of("z", DType::I4, {2, 2}, {0, 1, -1, 2});
  int q = b.node("QuantizeLinear", {x, s, z}, {2, 4}, {{"axis", integer(1)}, {"block_size", integer(2)}}, DType::I4);
  b.output(q);
  b.output(b.node("DequantizeLinear", {q, s, z}, {2, 4}, {{"axis", integer(1)}, {"block_size", integer(2)}}));
  int f8 = b.node("QuantizeLinear", {x, b.constant("one", {}, {1})}, {2, 4}, {}, DType::F8E4M3FN);
  b.output(f8);
  auto out = kiln::evaluate_graph(b.g, {f32_bytes({2.5, -100, 3, 5, 0.25, 0.75, 10, -30})});
  // x / s rounded half to even, plus z, clamped to [-8, 7].
  std::vector<int> qi;
  for (uint8_t v : out[0]) qi.push_back((int8_t)v);
  CHECK(qi == std::vector<int>{2, -8, 3, 3, -1, 1, 4, -6});
  const double dq[8] = {2, -8, 4, 4, 0, 1, 8, -32};
  for (int i = 0; i < 8; i++) CHECK(f32_at(out[1], i) == dq[i]);
  // float8: x / scale rounded to nearest even (the zero point is ignored).
  CHECK(out[2] == std::vector<uint8_t>{0x42, 0xEC, 0x44, 0x4A, 0x28, 0x34, 0x52, 0xDF});  // -100: 96 (a tie, even)
}

TEST_CASE("graph pass bfloat16: other operators compute the narrow floats in float32") {
  // x: float8e5m2 [4] -> Relu -> r (float8e5m2) -> DequantizeLinear(r, 2) -> y
  Builder b;
  int x = b.input("x", {4}, DType::F8E5M2);
  int r = b.node("Relu", {x}, {4}, {}, DType::F8E5M2);
  int d = b.node("DequantizeLinear", {r, b.constant("s", {}, {2})}, {4});
  b.output(r);
  b.output(d);
  PassContext ctx;
  REQUIRE(pass_bfloat16(b.g, ctx));
  int casts = 0;
  for (const Node& n : b.g.nodes) {
    if (n.op == "Relu") CHECK(b.g.values[n.inputs[0]].dtype == DType::F32);
    if (n.op == "DequantizeLinear") CHECK(b.g.values[n.inputs[0]].dtype == DType::F8E5M2);  // handles its operands
    casts += n.op == "Cast";
  }
  CHECK(casts == 2);
  auto out = kiln::evaluate_graph(b.g, {{0x3C, 0xBC, 0x7C, 0x01}});  // 1, -1, inf, 2^-16
  CHECK(out[0] == std::vector<uint8_t>{0x3C, 0x00, 0x7C, 0x01});
  CHECK(f32_at(out[1], 0) == 2);
  CHECK(f32_at(out[1], 2) == (float)kInf);
  CHECK(f32_at(out[1], 3) == (float)std::ldexp(1.0, -15));
}

TEST_CASE("import: sub-byte initializers and Constant values are unpacked, one element a byte") {
  // y = DequantizeLinear(w, 1) + Cast(c): w an int4 initializer [5] in
  // raw_data (two a byte, low bits first), c a uint2 Constant [5] in
  // int32_data (four a byte), e an e4m3fn initializer [2] in int32_data.
  onnx::ModelProto m;
  m.set_ir_version(10);
  m.add_opset_import()->set_version(25);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT4);
  w->add_dims(5);
  w->set_raw_data(std::string("\xF1\x87\x0A", 3));  // 1, -1, 7, -8, -6 (and a zero pad)
  auto* e = g->add_initializer();
  e->set_name("e");
  e->set_data_type(onnx::TensorProto::FLOAT8E4M3FN);
  e->add_dims(2);
  e->add_int32_data(0x38);  // 1
  e->add_int32_data(0xFE);  // -448
  auto* s1 = g->add_initializer();
  s1->set_name("s");
  s1->set_data_type(onnx::TensorProto::FLOAT);
  s1->add_float_data(1);
  auto* c = g->add_node();
  c->set_op_type("Constant");
  c->add_output("c");
  auto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  auto* t = value->mutable_t();
  t->set_data_type(onnx::TensorProto::UINT2);
  t->add_dims(5);
  t->add_int32_data(0xE4);  // 0, 1, 2, 3
  t->add_int32_data(0x02);  // 2
  auto add = [&](const char* op, std::vector<std::string> ins, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  add("DequantizeLinear", {"w", "s"}, "wf");
  auto* cast = add("Cast", {"c"}, "cf");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  add("Add", {"wf", "cf"}, "y");
  add("DequantizeLinear", {"e", "s"}, "ef");
  for (const char* name : {"y", "ef"}) {
    auto* o = g->add_output();
    o->set_name(name);
    auto* tt = o->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(name[0] == 'y' ? 5 : 2);
  }
  Graph imported = kiln::import_onnx_bytes(m.SerializeAsString(), ".", {});
  bool seen_w = false, seen_e = false;
  for (const Value& v : imported.values) {
    if (v.name == "w") {
      seen_w = true;
      CHECK(v.dtype == DType::I4);
      REQUIRE(v.is_constant());
      CHECK(*v.data == std::vector<uint8_t>{0x01, 0xFF, 0x07, 0xF8, 0xFA});  // sign-extended
    }
    if (v.name == "e") {
      seen_e = true;
      CHECK(*v.data == std::vector<uint8_t>{0x38, 0xFE});
      CHECK(v.const_at(1) == -448);
    }
  }
  CHECK((seen_w && seen_e));
  auto out = kiln::evaluate_graph(imported, {});
  const float y[5] = {1, 0, 9, -5, -4};  // w + c
  for (int i = 0; i < 5; i++) CHECK(f32_at(out[0], i) == y[i]);
  CHECK(f32_at(out[1], 1) == -448);
  // A packed tensor of the wrong size is refused by name.
  w->set_raw_data(std::string("\xF1\x87", 2));
  CHECK_THROWS_WITH_AS(kiln::import_onnx_bytes(m.SerializeAsString(), ".", {}),
                       doctest::Contains("tensor 'w' holds 2 bytes but its shape [5] of int4 needs 3"), kiln::UserError);
}
