// Run-time dimensions (bundle format 0.5): the verifier rejects every
// malformed symbol, shape expression, dynamic tensor, run-time workgroup
// count and constraint with a message naming it; a session takes input
// shapes within their ranges, evaluates the shape expressions (checked
// arithmetic), checks shared dimensions, constraints and planned sizes,
// and runs the kernels with run-time workgroup counts.
#include <doctest/doctest.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

using kiln_test::AddScaleBundle;
using kiln_test::Contains;
using kiln_test::LoadError;
using kiln_test::MinimalBundle;
using Op = fb::ShapeOp;
using Code = std::vector<fb::ShapeInstr>;

constexpr int64_t kMax = kiln_test::kAddScaleElements;  // DynamicAddScale's largest n

fb::ShapeInstr Sym(int64_t symbol) { return fb::ShapeInstr(Op::Symbol, symbol); }
fb::ShapeInstr Const(int64_t value) { return fb::ShapeInstr(Op::Const, value); }
fb::ShapeInstr Step(Op op) { return fb::ShapeInstr(op, 0); }

// MinimalBundle() with one run-time dimension: x (input) and y (output) are
// [n], n in 1..4 (symbol "n", dimension 0 of input 0); expression 0 is n.
TestBundle DynamicMinimal() {
  TestBundle b = MinimalBundle();
  b.min_runtime_minor = 5;
  b.symbols = {{"n", 1, 4, 0, 0}};
  b.shape_exprs = {{Sym(0)}};
  for (int t : {0, 1}) {
    b.tensors[t].dynamic_dims = {0};
    b.tensors[t].min_shape = {1};
  }
  return b;
}

// AddScaleBundle() over a run-time length: a, t and out/final are [1, n], n
// in 1..256 (symbol "n", dimension 1 of input 0), planned at n = 256. Both
// dispatches run (n + 63) / 64 workgroups (expression 1) of 64 elements
// (static push constants: the test kernels take no symbols). Expression 0 is n.
TestBundle DynamicAddScale() {
  TestBundle b = AddScaleBundle();
  b.min_runtime_minor = 5;
  b.symbols = {{"n", 1, kMax, 0, 1}};
  b.shape_exprs = {{Sym(0)}, {Sym(0), Const(63), Step(Op::Add), Const(64), Step(Op::Div)}};
  for (int t : {0, 2, 3}) {
    b.tensors[t].dynamic_dims = {-1, 0};
    b.tensors[t].min_shape = {1, 1};
  }
  for (auto& d : b.dispatches) d.workgroup_count_exprs = {1, -1, -1};
  return b;
}

// DynamicAddScale() with a data symbol (minor 6): symbol 1 "count" in
// 0..256 is written by dispatch 0 into tensor 4, an int64 [1] sharing the
// first 8 bytes of t (dispatch 0 writes t through it: t[0] = a[0],
// t[1] = a[1] + 0.5), so a test sets the count through a[0..1]. The output
// is [1, count] (expression 2), and dispatch 1 runs (count + 63) / 64
// workgroups (expression 3).
TestBundle DataSymbolAddScale() {
  TestBundle b = DynamicAddScale();
  b.min_runtime_minor = 6;
  b.tensors.push_back({"count", fb::DType::Int64, {1}, fb::Storage::Arena, 1024});
  b.dispatches[0].bindings[2] = {4, fb::Access::Write};
  b.symbols.push_back({"add.count", 0, kMax, 0, 0, 0, 4});
  b.shape_exprs.push_back({Sym(1)});
  b.shape_exprs.push_back({Sym(1), Const(63), Step(Op::Add), Const(64), Step(Op::Div)});
  b.tensors[3].dynamic_dims = {-1, 2};
  b.tensors[3].min_shape = {1, 0};
  b.dispatches[1].workgroup_count_exprs = {3, -1, -1};
  return b;
}

// A bundle loaded, with a CPU session on `threads` threads.
struct Loaded {
  std::vector<uint8_t> file;  // outlives the model
  kiln::Model model;
  kiln::Session session;

  explicit Loaded(const TestBundle& b, uint32_t threads = 1) : file(b.Build()) {
    kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
    REQUIRE_MESSAGE(status.ok(), status.message());
    kiln_session_options_t options;
    kiln_session_options_init(&options);
    options.thread_count = threads;
    status = kiln::Session::Create(model, &options, &session);
    REQUIRE_MESSAGE(status.ok(), status.message());
  }

  kiln::Status SetShape(size_t input, std::vector<int64_t> dims) {
    return session.set_input_shape(input, dims.data(), (uint32_t)dims.size());
  }
  // Input or output `index`'s current dimensions and byte size (failing the test on an error).
  std::vector<int64_t> Shape(size_t index, bool output, size_t* byte_size = nullptr) {
    kiln_tensor_info_t info;
    kiln::Status status = output ? session.get_output_info(index, &info) : session.get_input_info(index, &info);
    REQUIRE_MESSAGE(status.ok(), status.message());
    if (byte_size) *byte_size = info.byte_size;
    return std::vector<int64_t>(info.shape, info.shape + info.rank);
  }
};

// The error of `status` (code and message words), for one-line checks.
bool Fails(const kiln::Status& status, kiln_status_code_t code, const char* words) {
  CHECK(status.code() == code);
  return !status.ok() && Contains(status.message(), words);
}

// DynamicAddScale(): sets input 0 to [1, n] with a[i] = i % 5 - 2 + round,
// runs, and checks output 0 is [1, n] holding (a[i] + 0.5 i) * 2.
void RunAddScale(Loaded* loaded, int64_t n, int round = 0) {
  REQUIRE(loaded->SetShape(0, {1, n}).ok());
  std::vector<float> a((size_t)n), out((size_t)n, -1.0f);
  for (int64_t i = 0; i < n; ++i) a[i] = (float)(i % 5 - 2 + round);
  kiln::Status status = loaded->session.set_input(0, a.data(), a.size() * 4);
  REQUIRE_MESSAGE(status.ok(), status.message());
  status = loaded->session.run();
  REQUIRE_MESSAGE(status.ok(), status.message());
  size_t bytes = 0;
  CHECK(loaded->Shape(0, true, &bytes) == std::vector<int64_t>{1, n});
  CHECK(bytes == (size_t)n * 4);
  status = loaded->session.get_output(0, out.data(), out.size() * 4);
  REQUIRE_MESSAGE(status.ok(), status.message());
  for (int64_t i = 0; i < n; ++i) CHECK(out[i] == (a[i] + 0.5f * (float)i) * 2.0f);
}

}  // namespace

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

// A valid dynamic bundle loads; the model's infos report each dimension's range.
TEST_CASE("dynamic: a valid bundle loads and its inputs and outputs report their ranges") {
  std::vector<uint8_t> file = DynamicAddScale().Build();
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  kiln_tensor_info_t info;
  kiln_tensor_info_init(&info);
  REQUIRE(model.get_input_info(0, &info).ok());
  CHECK(info.dynamic != 0);
  REQUIRE(info.rank == 2);
  CHECK(info.shape[0] == 1);
  CHECK(info.shape[1] == kMax);  // the largest shape
  CHECK(info.min_shape[0] == 1);
  CHECK(info.min_shape[1] == 1);
  CHECK(info.byte_size == (size_t)kMax * 4);
  REQUIRE(model.get_output_info(0, &info).ok());
  CHECK(info.dynamic != 0);
  CHECK(info.shape[1] == kMax);
  CHECK(info.min_shape[1] == 1);
  // The constant b has no run-time dimension: min_shape is its shape.
  REQUIRE(model.get_tensor_info(1, &info).ok());
  CHECK(info.dynamic == 0);
  CHECK(info.min_shape[1] == kMax);
  // A static bundle: nothing dynamic, min_shape equals shape.
  std::vector<uint8_t> static_file = AddScaleBundle().Build();
  kiln::Model static_model;
  REQUIRE(kiln::Model::LoadMemory(static_file.data(), static_file.size(), &static_model).ok());
  REQUIRE(static_model.get_input_info(0, &info).ok());
  CHECK(info.dynamic == 0);
  CHECK(info.min_shape[1] == info.shape[1]);
  // The smallest dynamic bundle loads too, from a file.
  std::string path = kiln_test::WriteTemp(DynamicMinimal().Build());
  kiln::Model from_file;
  status = kiln::Model::LoadFile(path.c_str(), &from_file);
  unlink(path.c_str());
  CHECK_MESSAGE(status.ok(), status.message());
}

// Shape expressions: the stack machine's code is simulated at load.
TEST_CASE("dynamic verify: shape expressions (stack, steps, operands, operations)") {
  auto with = [](const Code& code) {
    TestBundle b = DynamicMinimal();
    b.shape_exprs.push_back(code);  // expression 1, used by nothing
    return LoadError(b);
  };
  CHECK(Contains(with({Step(Op::Add)}), "shape expression 1, step 0: pops an empty stack"));
  CHECK(Contains(with({Const(1), Step(Op::Sub)}), "shape expression 1, step 1: pops an empty stack"));
  CHECK(Contains(with({Const(1), Const(2), Step(Op::Select)}), "step 2: pops an empty stack"));
  CHECK(Contains(with({Step(Op::Not)}), "step 0: pops an empty stack"));
  CHECK(Contains(with({Const(1), Const(2)}), "shape expression 1 leaves 2 values (must leave 1)"));
  CHECK(Contains(with({}), "shape expression 1 has 0 steps (1 to 256)"));
  // 256 steps is the limit: 1 + 127 * 2 + 1 loads, one more step does not.
  Code longest = {Const(1)};
  for (int i = 0; i < 127; ++i) longest.insert(longest.end(), {Const(1), Step(Op::Add)});
  longest.push_back(Step(Op::Not));
  CHECK(with(longest) == "");
  longest.push_back(Step(Op::Not));
  CHECK(Contains(with(longest), "shape expression 1 has 257 steps (1 to 256)"));
  // A stack of 32 is the limit.
  Code deep(32, Const(1));
  for (int i = 0; i < 31; ++i) deep.push_back(Step(Op::Max));
  CHECK(with(deep) == "");
  deep.insert(deep.begin(), Const(1));
  deep.push_back(Step(Op::Min));
  CHECK(Contains(with(deep), "shape expression 1 needs a stack deeper than 32"));
  CHECK(Contains(with({Sym(1)}), "shape expression 1, step 0: symbol 1 out of range (1 symbols)"));
  CHECK(Contains(with({Sym(-1)}), "symbol -1 out of range"));
  CHECK(Contains(with({Const(1), fb::ShapeInstr((Op)17, 0)}), "shape expression 1, step 1: unknown operation 17"));
  CHECK(Contains(with({fb::ShapeInstr((Op)255, 0)}), "unknown operation 255"));
}

// Symbols: ranges, names, and the input dimension they are read from.
TEST_CASE("dynamic verify: symbols") {
  TestBundle b = DynamicMinimal();
  b.symbols[0].min = 0;
  CHECK(Contains(LoadError(b), "symbol 0 ('n'): range 0..4 (need 1 <= min <= max <= 2^31;"));
  b = DynamicMinimal();
  b.symbols[0].min = 3;
  b.symbols[0].max = 2;
  CHECK(Contains(LoadError(b), "symbol 0 ('n'): range 3..2"));
  b = DynamicMinimal();
  b.symbols[0].max = (1ll << 31) + 1;
  CHECK(Contains(LoadError(b), "range 1..2147483649"));
  b = DynamicMinimal();
  b.symbols[0].name = "";
  CHECK(Contains(LoadError(b), "symbol 0 has no name"));
  b = DynamicMinimal();
  b.symbols[0].input = 1;
  CHECK(Contains(LoadError(b), "symbol 0 ('n'): input 1 out of range (1 inputs)"));
  const char* not_it = "symbol 0 ('n'): dimension 0 of input 0 is not this symbol with its range";
  b = DynamicMinimal();
  b.symbols[0].max = 3;  // x's dimension holds 4
  CHECK(Contains(LoadError(b), not_it));
  b = DynamicMinimal();
  b.shape_exprs[0] = {Sym(0), Const(0), Step(Op::Add)};  // n + 0: not exactly n
  CHECK(Contains(LoadError(b), not_it));
  b = DynamicMinimal();
  b.tensors[0].dynamic_dims = {-1};  // x's dimension is static
  CHECK(Contains(LoadError(b), not_it));
  b = DynamicMinimal();
  b.symbols[0].min = 2;  // x's min_shape says 1: set_input_shape would let 1 through
  CHECK(Contains(LoadError(b), not_it));
  b = DynamicMinimal();
  b.tensors[0].min_shape.clear();  // an input's range needs its least values
  CHECK(Contains(LoadError(b), not_it));
  b = DynamicMinimal();
  b.symbols[0].dim = 1;  // x has rank 1
  CHECK(Contains(LoadError(b), "dimension 1 of input 0 is not this symbol"));
  b = DynamicMinimal();
  b.symbols.resize(65, b.symbols[0]);
  CHECK(Contains(LoadError(b), "65 shape symbols and 1 shape expressions (at most 64"));
}

// Tensors' dynamic_dims and min_shape: one entry per dimension, Arena only, in range.
TEST_CASE("dynamic verify: tensors' dynamic_dims and min_shape") {
  const char* layout = "dynamic_dims and min_shape need one entry per dimension, on an Arena or Dynamic tensor";
  TestBundle b = DynamicMinimal();
  b.tensors[1].dynamic_dims = {0, 0};
  CHECK(Contains(LoadError(b), "tensor 1 ('y'): "));
  CHECK(Contains(LoadError(b), layout));
  b = DynamicMinimal();
  b.tensors[1].min_shape = {1, 1};
  CHECK(Contains(LoadError(b), layout));
  b = DynamicMinimal();
  b.tensors[1].dynamic_dims.clear();  // min_shape alone
  CHECK(Contains(LoadError(b), layout));
  b = DynamicMinimal();
  b.tensors[2].dynamic_dims = {0};  // w is a constant
  CHECK(Contains(LoadError(b), "tensor 2 ('w'): dynamic_dims and min_shape"));
  b = DynamicMinimal();
  b.tensors[1].dynamic_dims = {1};
  CHECK(Contains(LoadError(b), "tensor 1 ('y'): dimension 0: expression 1 or least value 1 out of range"));
  b = DynamicMinimal();
  b.tensors[1].dynamic_dims = {-2};
  CHECK(Contains(LoadError(b), "expression -2 or least value 1 out of range"));
  b = DynamicMinimal();
  b.tensors[1].min_shape = {5};  // larger than shape 4
  CHECK(Contains(LoadError(b), "expression 0 or least value 5 out of range"));
  b = DynamicMinimal();
  b.tensors[1].min_shape = {-1};
  CHECK(Contains(LoadError(b), "least value -1 out of range"));
  b = DynamicMinimal();
  b.tensors[1].min_shape.clear();  // optional
  CHECK(LoadError(b) == "");
}

// Dispatches: workgroup_count_exprs (3 valid indices) and push_constant_symbols.
TEST_CASE("dynamic verify: run-time workgroup counts and push constant symbols") {
  TestBundle b = DynamicAddScale();
  b.dispatches[0].workgroup_count_exprs = {1, -1};
  CHECK(Contains(LoadError(b), "dispatch 0: workgroup_count_exprs needs 3 entries"));
  b = DynamicAddScale();
  b.dispatches[1].workgroup_count_exprs = {2, -1, -1};
  CHECK(Contains(LoadError(b), "dispatch 1: workgroup_count_exprs[0] = 2 out of range (2 expressions)"));
  b = DynamicAddScale();
  b.dispatches[0].workgroup_count_exprs = {1, -2, -1};
  CHECK(Contains(LoadError(b), "workgroup_count_exprs[1] = -2 out of range"));
  b = DynamicAddScale();
  b.dispatches[1].push_constants.clear();
  b.dispatches[1].push_constant_symbols = {1};
  CHECK(Contains(LoadError(b), "dispatch 1: push constant symbol 1 out of range (1 symbols)"));
  b = DynamicAddScale();
  b.dispatches[0].push_constant_symbols = {0};  // beside push_constants {64}
  CHECK(Contains(LoadError(b), "dispatch 0: 1 push constant symbols (at most 64, and no push constants beside them)"));
  b = DynamicAddScale();
  b.dispatches[0].push_constants.clear();
  b.dispatches[0].push_constant_symbols.assign(65, 0);
  CHECK(Contains(LoadError(b), "dispatch 0: 65 push constant symbols"));
}

// Constraints, and the fields that need symbols and min_runtime_minor 5.
TEST_CASE("dynamic verify: constraints; run-time fields need symbols and min_runtime_minor 5") {
  TestBundle b = DynamicMinimal();
  b.shape_constraints = {{1, "node 'add': n must be even"}};
  CHECK(Contains(LoadError(b), "shape constraint 0: expression 1 out of range (1), or no message"));
  b = DynamicMinimal();
  b.shape_constraints = {{0, ""}};
  CHECK(Contains(LoadError(b), "shape constraint 0: expression 0 out of range (1), or no message"));

  const char* no_symbols = "run-time dimensions without shape symbols";
  b = MinimalBundle();
  b.min_runtime_minor = 5;
  b.shape_exprs = {{Const(4)}};  // expressions alone
  CHECK(Contains(LoadError(b), no_symbols));
  b.tensors[1].dynamic_dims = {0};  // a tensor dimension
  CHECK(Contains(LoadError(b), no_symbols));
  b = MinimalBundle();
  b.shape_exprs = {{Const(1)}};
  b.shape_constraints = {{0, "always"}};
  CHECK(Contains(LoadError(b), no_symbols));
  b = AddScaleBundle();
  b.shape_exprs = {{Const(4)}};
  b.dispatches[0].workgroup_count_exprs = {0, -1, -1};
  CHECK(Contains(LoadError(b), no_symbols));
  b = AddScaleBundle();
  b.dispatches[1].push_constants.clear();
  b.dispatches[1].push_constant_symbols = {0};
  CHECK(Contains(LoadError(b), "push constant symbol 0 out of range (0 symbols)"));

  // An older runtime would ignore the symbols: the bundle must require minor 5.
  b = DynamicMinimal();
  b.min_runtime_minor = 4;
  CHECK(Contains(LoadError(b), "shape symbols need min_runtime_minor >= 5"));
  std::string path = kiln_test::WriteTemp(b.Build());  // the same through kiln_model_load_file
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(path.c_str(), &model);
  unlink(path.c_str());
  CHECK(Fails(status, KILN_INVALID_BUNDLE, "min_runtime_minor >= 5"));
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

// set_input_shape within the range changes the input's shape and the byte
// size set_input takes; the session starts at the largest shape.
TEST_CASE("dynamic session: set_input_shape changes the input's shape and byte size") {
  Loaded loaded(DynamicAddScale());
  size_t bytes = 0;
  CHECK(loaded.Shape(0, false, &bytes) == std::vector<int64_t>{1, kMax});
  CHECK(bytes == (size_t)kMax * 4);
  CHECK(loaded.Shape(0, true, &bytes) == std::vector<int64_t>{1, kMax});
  kiln_tensor_info_t info;
  REQUIRE(loaded.session.get_input_info(0, &info).ok());
  CHECK(info.dynamic != 0);
  CHECK(info.min_shape[1] == 1);

  REQUIRE(loaded.SetShape(0, {1, 128}).ok());
  CHECK(loaded.Shape(0, false, &bytes) == std::vector<int64_t>{1, 128});
  CHECK(bytes == 512);
  CHECK(loaded.Shape(0, true, &bytes) == std::vector<int64_t>{1, 128});  // out/final follows n
  CHECK(bytes == 512);
  std::vector<float> a(kMax, 1.0f);
  CHECK(Fails(loaded.session.set_input(0, a.data(), kMax * 4), KILN_INVALID_ARGUMENT,
              "input 'a' takes 512 bytes, got 1024"));
  CHECK(loaded.session.set_input(0, a.data(), 512).ok());
  std::vector<float> out(kMax);
  CHECK(Fails(loaded.session.get_output(0, out.data(), kMax * 4), KILN_INVALID_ARGUMENT,
              "output 'out/final' has 512 bytes, buffer has 1024"));
  CHECK(loaded.SetShape(0, {1, 1}).ok());  // the least value
  CHECK(loaded.Shape(0, false, &bytes) == std::vector<int64_t>{1, 1});
  CHECK(bytes == 4);
}

// Shapes outside the input's ranges are refused at once and change nothing.
TEST_CASE("dynamic session: out-of-range sizes, wrong rank and changed static dimensions are refused") {
  Loaded loaded(DynamicAddScale());
  REQUIRE(loaded.SetShape(0, {1, 64}).ok());
  CHECK(Fails(loaded.SetShape(0, {1, kMax + 1}), KILN_INVALID_ARGUMENT,
              "input 'a' dimension 1 is 257, outside the range 1..256"));
  CHECK(Fails(loaded.SetShape(0, {1, 0}), KILN_INVALID_ARGUMENT,
              "input 'a' dimension 1 is 0, outside the range 1..256"));
  CHECK(Fails(loaded.SetShape(0, {1, -5}), KILN_INVALID_ARGUMENT, "dimension 1 is -5, outside"));
  CHECK(Fails(loaded.SetShape(0, {64}), KILN_INVALID_ARGUMENT, "input 'a' has rank 2, not 1"));
  CHECK(Fails(loaded.SetShape(0, {1, 64, 1}), KILN_INVALID_ARGUMENT, "has rank 2, not 3"));
  CHECK(Fails(loaded.SetShape(0, {2, 64}), KILN_INVALID_ARGUMENT,
              "input 'a' dimension 0 is 2; this bundle takes only 1"));
  CHECK(Fails(loaded.SetShape(1, {1, 64}), KILN_INVALID_ARGUMENT, "index 1 out of range (1 inputs)"));
  CHECK(Fails(loaded.session.set_input_shape(0, nullptr, 2), KILN_INVALID_ARGUMENT, "NULL argument"));
  CHECK(Fails(kiln::Status(kiln_session_set_input_shape(nullptr, 0, nullptr, 0)), KILN_INVALID_ARGUMENT,
              "NULL argument"));
  CHECK(loaded.Shape(0, false) == std::vector<int64_t>{1, 64});  // unchanged
  RunAddScale(&loaded, 64);

  // A static bundle takes only its own shape.
  Loaded fixed(AddScaleBundle());
  CHECK(fixed.SetShape(0, {1, kMax}).ok());
  CHECK(Fails(fixed.SetShape(0, {1, 128}), KILN_INVALID_ARGUMENT,
              "input 'a' dimension 1 is 128; this bundle takes only 256"));
  kiln_tensor_info_t info;
  REQUIRE(fixed.session.get_input_info(0, &info).ok());
  CHECK(info.dynamic == 0);
  CHECK(fixed.Shape(0, true) == std::vector<int64_t>{1, kMax});
}

// Runs at smaller shapes compute the first n elements, on one thread or several.
TEST_CASE("dynamic session: runs at several shapes compute the right values") {
  for (uint32_t threads : {1u, 4u}) {
    CAPTURE(threads);
    Loaded loaded(DynamicAddScale(), threads);
    int round = 0;
    for (int64_t n : {kMax, (int64_t)128, (int64_t)64, (int64_t)192, (int64_t)1, kMax}) {
      CAPTURE(n);
      RunAddScale(&loaded, n, round++);
    }
  }
}

// The run-time workgroup counts reach the kernels: a third dispatch
// (workgroup_ids, n / 64 workgroups) counts its runs per workgroup; a count
// of 0 skips it.
TEST_CASE("dynamic session: run-time workgroup counts, 0 skipping the dispatch") {
  TestBundle b = DynamicAddScale();
  b.shape_exprs.push_back({Sym(0), Const(64), Step(Op::Div)});  // expression 2: n / 64
  b.tensors.push_back({"ids", fb::DType::Int32, {4}, fb::Storage::Arena, 3072});
  b.tensors.push_back({"counts", fb::DType::Int32, {4}, fb::Storage::Arena, 3136});
  b.tensors.push_back({"workers", fb::DType::Int32, {4}, fb::Storage::Arena, 3200});
  b.arena_bytes = 3264;
  b.outputs = {3, 5};
  b.kernels.push_back({"workgroup_ids", 0, 3});
  kiln_test::TestDispatch ids;
  ids.kernel = 3;
  ids.workgroup_count = {4, 1, 1};
  ids.bindings = {{4, fb::Access::Write}, {5, fb::Access::ReadWrite}, {6, fb::Access::Write}};
  ids.workgroup_count_exprs = {2, -1, -1};
  b.dispatches.push_back(ids);
  for (uint32_t threads : {1u, 3u}) {
    CAPTURE(threads);
    Loaded loaded(b, threads);
    struct Step {
      int64_t n;
      std::vector<int32_t> counts;  // after the run
    };
    for (const Step& step : {Step{kMax, {1, 1, 1, 1}}, Step{128, {2, 2, 1, 1}}, Step{63, {2, 2, 1, 1}},
                             Step{200, {3, 3, 2, 1}}, Step{64, {4, 3, 2, 1}}}) {
      CAPTURE(step.n);
      RunAddScale(&loaded, step.n);
      CHECK(loaded.Shape(1, true) == std::vector<int64_t>{4});  // static output
      std::vector<int32_t> counts(4);
      REQUIRE(loaded.session.get_output(1, counts.data(), 16).ok());
      CHECK(counts == step.counts);
    }
  }
}

// push_constant_symbols hand the kernels the symbols' values: vector_add
// takes its element count from push constant 0, here n in one workgroup, so
// it writes t[0, n) only; scale's whole workgroups then leave out/final zero
// from n up to the next multiple of 64 (t there was never written).
TEST_CASE("dynamic session: push_constant_symbols pass the symbols' values to the kernels") {
  TestBundle b = DynamicAddScale();
  b.dispatches[0].push_constants.clear();
  b.dispatches[0].push_constant_symbols = {0};
  b.dispatches[0].workgroup_count_exprs.clear();
  b.dispatches[0].workgroup_count = {1, 1, 1};
  Loaded loaded(b);
  for (int64_t n : {100, 150}) {
    CAPTURE(n);
    RunAddScale(&loaded, n);
    const void* view = nullptr;
    REQUIRE(loaded.session.get_output_view(0, &view).ok());
    const float* out = static_cast<const float*>(view);
    for (int64_t i = n; i < (n + 63) / 64 * 64; ++i) CHECK(out[i] == 0.0f);
  }
}

// The output's shape comes from its expression (here 2n - 1, a dimension
// of its own), before and after a run.
TEST_CASE("dynamic session: get_output_info reports the output's shape from its expression") {
  TestBundle b = DynamicMinimal();
  b.tensors[1].shape = {7};
  b.tensors[1].min_shape = {1};
  b.tensors[1].dynamic_dims = {1};
  b.shape_exprs.push_back({Sym(0), Const(2), Step(Op::Mul), Const(1), Step(Op::Sub)});
  Loaded loaded(b);
  size_t bytes = 0;
  CHECK(loaded.Shape(0, true, &bytes) == std::vector<int64_t>{7});  // n = 4
  CHECK(bytes == 28);
  REQUIRE(loaded.SetShape(0, {2}).ok());
  CHECK(loaded.Shape(0, true, &bytes) == std::vector<int64_t>{3});
  CHECK(bytes == 12);
  REQUIRE(loaded.session.run().ok());
  CHECK(loaded.Shape(0, true) == std::vector<int64_t>{3});
  std::vector<float> y(3);
  CHECK(loaded.session.get_output(0, y.data(), 12).ok());
}

// The evaluator's semantics: floor division and modulo, comparisons,
// logic and select, seen through an output dimension (y = [value]).
TEST_CASE("dynamic session: shape expression operations evaluate as documented") {
  struct Case {
    Code code;
    int64_t n, value;
  };
  const Case cases[] = {
      {{Const(-7), Sym(0), Step(Op::Mod)}, 4, 1},                          // floor: -7 = -2 * 4 + 1
      {{Const(0), Const(-7), Sym(0), Step(Op::Div), Step(Op::Sub)}, 4, 2},  // -(-7 / 4) = 2
      {{Const(7), Const(-4), Step(Op::Mod), Const(4), Step(Op::Add)}, 1, 3},  // 7 mod -4 = -1
      {{Const(7), Sym(0), Step(Op::Mod)}, 4, 3},
      {{Sym(0), Const(3), Step(Op::Min)}, 4, 3},
      {{Sym(0), Const(2), Step(Op::Max)}, 1, 2},
      {{Sym(0), Const(4), Step(Op::Lt)}, 4, 0},
      {{Sym(0), Const(4), Step(Op::Le)}, 4, 1},
      {{Sym(0), Const(4), Step(Op::Eq)}, 3, 0},
      {{Sym(0), Const(4), Step(Op::Ne)}, 3, 1},
      {{Const(2), Const(0), Step(Op::And)}, 1, 0},
      {{Const(2), Const(0), Step(Op::Or)}, 1, 1},
      {{Const(5), Step(Op::Not)}, 1, 0},
      {{Const(0), Step(Op::Not)}, 1, 1},
      {{Sym(0), Const(4), Step(Op::Eq), Const(3), Const(2), Step(Op::Select)}, 4, 3},
      {{Sym(0), Const(4), Step(Op::Eq), Const(3), Const(2), Step(Op::Select)}, 2, 2},
  };
  for (const Case& c : cases) {
    TestBundle b = DynamicMinimal();
    b.shape_exprs.push_back(c.code);
    b.tensors[1].dynamic_dims = {1};
    b.tensors[1].min_shape = {0};
    Loaded loaded(b);
    REQUIRE(loaded.SetShape(0, {c.n}).ok());
    CHECK(loaded.Shape(0, true) == std::vector<int64_t>{c.value});
  }
}

// A constraint that does not hold fails the run and the output infos with
// its message; a shape that meets it works again.
TEST_CASE("dynamic session: a failing constraint refuses the run with its message") {
  TestBundle b = DynamicAddScale();
  b.shape_exprs.push_back({Sym(0), Const(7), Step(Op::Ne)});
  b.shape_constraints = {{2, "node 'add': n must not be 7"}};
  Loaded loaded(b);
  RunAddScale(&loaded, 128);
  REQUIRE(loaded.SetShape(0, {1, 7}).ok());  // within the range: accepted until used
  const char* message = "these input shapes do not fit the model: node 'add': n must not be 7";
  CHECK(Fails(loaded.session.run(), KILN_INVALID_ARGUMENT, message));
  kiln_tensor_info_t info;
  CHECK(Fails(loaded.session.get_output_info(0, &info), KILN_INVALID_ARGUMENT, message));
  std::vector<float> out(7);
  CHECK(Fails(loaded.session.get_output(0, out.data(), 28), KILN_INVALID_ARGUMENT, message));
  CHECK(Fails(loaded.session.run(), KILN_INVALID_ARGUMENT, message));  // still refused
  RunAddScale(&loaded, 64, 1);
}

// Inputs sharing a symbol (x and z are both [n]; n is read from x) must agree.
TEST_CASE("dynamic session: inputs sharing a symbol must agree") {
  TestBundle b = DynamicMinimal();
  b.tensors.push_back({"z", fb::DType::Float32, {4}, fb::Storage::Arena, 128, kiln_test::kAuto, {0}, {1}});
  b.inputs = {0, 3};
  b.arena_bytes = 192;
  Loaded loaded(b);
  REQUIRE(loaded.SetShape(0, {3}).ok());
  REQUIRE(loaded.SetShape(1, {2}).ok());
  const char* message = "input 'z' dimension 0 is 2, but the inputs that share it make it 3";
  CHECK(Fails(loaded.session.run(), KILN_INVALID_ARGUMENT, message));
  kiln_tensor_info_t info;
  CHECK(Fails(loaded.session.get_output_info(0, &info), KILN_INVALID_ARGUMENT, message));
  REQUIRE(loaded.SetShape(1, {3}).ok());
  CHECK(loaded.session.run().ok());
  CHECK(loaded.Shape(0, true) == std::vector<int64_t>{3});
}

// Checked arithmetic: overflow and division by zero are errors at run time,
// and a shape that avoids them runs afterwards.
TEST_CASE("dynamic session: shape expressions that overflow or divide by zero fail the run") {
  struct Case {
    Code code;
    int64_t bad_n, good_n;  // good_n 0: no shape avoids it
  };
  const Case cases[] = {
      {{Sym(0), Const(INT64_MAX), Step(Op::Mul)}, 2, 1},
      {{Const(INT64_MAX), Sym(0), Const(1), Step(Op::Sub), Step(Op::Add)}, 3, 1},
      {{Const(INT64_MIN), Sym(0), Step(Op::Sub)}, 1, 0},
      {{Const(1), Sym(0), Const(1), Step(Op::Sub), Step(Op::Div)}, 1, 2},
      {{Const(1), Sym(0), Const(1), Step(Op::Sub), Step(Op::Mod)}, 1, 4},
      {{Const(INT64_MIN), Const(-1), Step(Op::Div)}, 4, 0},
      {{Const(INT64_MIN), Const(-1), Step(Op::Mod)}, 4, 0},
  };
  for (const Case& c : cases) {
    TestBundle b = DynamicMinimal();
    b.shape_exprs.push_back(c.code);  // expression 1
    Loaded loaded(b);
    CAPTURE(c.bad_n);
    REQUIRE(loaded.SetShape(0, {c.bad_n}).ok());
    CHECK(Fails(loaded.session.run(), KILN_INVALID_ARGUMENT, "shapes: expression 1"));
    CHECK(Fails(loaded.session.run(), KILN_INVALID_ARGUMENT, "overflows or divides by zero"));
    kiln_tensor_info_t info;
    CHECK(Fails(loaded.session.get_output_info(0, &info), KILN_INVALID_ARGUMENT, "overflows or divides by zero"));
    if (!c.good_n) continue;
    REQUIRE(loaded.SetShape(0, {c.good_n}).ok());
    kiln::Status status = loaded.session.run();
    CHECK_MESSAGE(status.ok(), status.message());
  }
}

// Shapes that would make a tensor outgrow its memory plan, or a dispatch
// run more workgroups than its largest count, are refused before any kernel runs.
TEST_CASE("dynamic session: a tensor or dispatch that would outgrow its plan is refused") {
  TestBundle b = DynamicMinimal();
  b.shape_exprs.push_back({Sym(0), Const(2), Step(Op::Mul)});  // y = [2n], planned for 4
  b.tensors[1].dynamic_dims = {1};
  Loaded loaded(b);
  REQUIRE(loaded.SetShape(0, {2}).ok());
  REQUIRE(loaded.session.run().ok());
  CHECK(loaded.Shape(0, true) == std::vector<int64_t>{4});
  REQUIRE(loaded.SetShape(0, {3}).ok());
  const char* message = "tensor 1 ('y') would need 24 bytes at these input shapes, more than the 16";
  CHECK(Fails(loaded.session.run(), KILN_INVALID_BUNDLE, message));
  kiln_tensor_info_t info;
  CHECK(Fails(loaded.session.get_output_info(0, &info), KILN_INVALID_BUNDLE, message));

  b = DynamicMinimal();
  b.shape_exprs.push_back({Const(0), Sym(0), Step(Op::Sub)});  // y = [-n]
  b.tensors[1].dynamic_dims = {1};
  b.tensors[1].min_shape = {0};
  Loaded negative(b);
  CHECK(Fails(negative.session.run(), KILN_INVALID_BUNDLE, "tensor 1 ('y') would need"));

  b = DynamicAddScale();  // n workgroups of 64 elements: at most 4
  b.dispatches[1].workgroup_count_exprs = {0, -1, -1};
  Loaded counts(b, 2);
  RunAddScale(&counts, 4);
  REQUIRE(counts.SetShape(0, {1, 5}).ok());
  CHECK(Fails(counts.session.run(), KILN_INVALID_BUNDLE,
              "dispatch 1 would run 5 workgroups along axis 0, more than its largest count 4"));
  CHECK(Fails(counts.session.run(), KILN_INVALID_BUNDLE, "dispatch 1 would run 5 workgroups"));  // resolved again
  RunAddScale(&counts, 3, 2);
}

// Vulkan sessions do not support run-time dimensions yet: refused before any
// device is touched, so this runs with or without a Vulkan device.
TEST_CASE("dynamic session: a Vulkan bundle with symbols is KILN_UNSUPPORTED") {
  TestBundle b = kiln_test::SpirvBundle();
  b.min_runtime_minor = 5;
  b.symbols = {{"n", 1, 4, 0, 0}};
  b.shape_exprs = {{Sym(0)}};
  b.tensors[0].dynamic_dims = {0};
  b.tensors[0].min_shape = {1};
  std::vector<uint8_t> file = b.Build();
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  for (uint32_t device : {(uint32_t)KILN_DEVICE_AUTO, (uint32_t)KILN_DEVICE_VULKAN}) {
    kiln_session_options_t options;
    kiln_session_options_init(&options);
    options.device = device;
    kiln::Session session;
    CHECK(Fails(kiln::Session::Create(model, &options, &session), KILN_UNSUPPORTED,
                "dimensions known only at run time, which the Vulkan backend does not support"));
  }
}

//===----------------------------------------------------------------------===//
// Data symbols (bundle format 0.6): sizes a kernel writes
//===----------------------------------------------------------------------===//

TEST_CASE("data symbols verify: source, type, and no use before the source ran") {
  CHECK(LoadError(DataSymbolAddScale()) == "");
  TestBundle b = DataSymbolAddScale();
  b.symbols[1].source_dispatch = 2;
  CHECK(Contains(LoadError(b), "symbol 1 ('add.count'): source dispatch 2 or tensor 4 out of range"));
  b = DataSymbolAddScale();
  b.symbols[1].min = 1;
  b.symbols[1].source_dispatch = -2;
  CHECK(Contains(LoadError(b), "symbol 1 ('add.count'): source dispatch -2"));
  b = DataSymbolAddScale();
  b.symbols[1].source_tensor = 5;
  CHECK(Contains(LoadError(b), "source dispatch 0 or tensor 5 out of range"));
  const char* source = "its source tensor 4 must be a static Arena int64 tensor its source dispatch 0 writes";
  b = DataSymbolAddScale();
  b.dispatches[0].bindings.back().second = fb::Access::Read;  // bound, but not written
  CHECK(Contains(LoadError(b), source));
  b = DataSymbolAddScale();
  b.symbols[1].source_tensor = 1;  // a constant of float32
  CHECK(Contains(LoadError(b), "its source tensor 1 must be"));
  b = DataSymbolAddScale();
  b.tensors[4].dtype = fb::DType::Int32;
  b.tensors[4].shape = {2};
  CHECK(Contains(LoadError(b), source));
  b = DataSymbolAddScale();
  b.symbols[1].source_dispatch = 1;  // dispatch 1 does not bind tensor 4
  CHECK(Contains(LoadError(b), "its source tensor 4 must be a static Arena int64 tensor its source dispatch 1 writes"));
  b = DataSymbolAddScale();
  b.min_runtime_minor = 5;  // a 0.5 runtime would take it for an input dimension
  CHECK(Contains(LoadError(b), "data symbols need min_runtime_minor >= 6"));
  b = DataSymbolAddScale();
  b.symbols[1].min = -1;
  CHECK(Contains(LoadError(b), "range -1..256"));
  b = DataSymbolAddScale();
  b.dispatches[0].workgroup_count_exprs = {3, -1, -1};  // the source itself sized by its count
  CHECK(Contains(LoadError(b), "dispatch 0: workgroup_count_exprs[0] uses a data symbol defined only by this "
                               "dispatch or a later one"));
  b = DataSymbolAddScale();
  b.dispatches[0].push_constant_symbols = {1};
  b.dispatches[0].push_constants.clear();
  CHECK(Contains(LoadError(b), "dispatch 0: push constant symbol 1 is a data symbol defined only by this dispatch"));
  b = DataSymbolAddScale();
  b.dispatches[1].push_constant_symbols = {1};  // after the source: allowed
  b.dispatches[1].push_constants.clear();
  CHECK(LoadError(b) == "");
  b = DataSymbolAddScale();
  b.tensors[4].shape = {0};  // no int64 to read
  CHECK(Contains(LoadError(b), source));
  // The source is dispatch 1 (tensor 5 shares out's first bytes): dispatch 1
  // itself and dispatch 0 before it may not use the symbol.
  b = DataSymbolAddScale();
  b.tensors.push_back({"count1", fb::DType::Int64, {1}, fb::Storage::Arena, 2048});
  b.dispatches[1].bindings[1] = {5, fb::Access::Write};
  b.symbols[1].source_dispatch = 1;
  b.symbols[1].source_tensor = 5;
  CHECK(Contains(LoadError(b), "dispatch 1: workgroup_count_exprs[0] uses a data symbol defined only by this"));
  b.dispatches[1].workgroup_count_exprs = {1, -1, -1};
  CHECK(LoadError(b) == "");
  b.dispatches[0].workgroup_count_exprs = {3, -1, -1};
  CHECK(Contains(LoadError(b), "dispatch 0: workgroup_count_exprs[0] uses a data symbol defined only by this "
                               "dispatch or a later one"));
  b.dispatches[0].workgroup_count_exprs = {1, -1, -1};
  b.dispatches[0].push_constant_symbols = {1};
  b.dispatches[0].push_constants.clear();
  CHECK(Contains(LoadError(b), "dispatch 0: push constant symbol 1 is a data symbol"));
  b = DataSymbolAddScale();
  b.tensors[0].dynamic_dims = {2, 0};  // an input sized by a kernel's count
  b.tensors[0].min_shape = {0, 1};
  CHECK(Contains(LoadError(b), "input 0: dimension 0 uses a data symbol"));
}

// Sets a[0..1] so that dispatch 0 writes the int64 `count` into t's first
// 8 bytes (the data symbol's source: the low half passes through as a
// float's bits, a denormal; a zero high half is -0.5 + 0.5, a non-zero one
// a NaN, which the addition keeps) and a[i] = i after them, runs, and checks
// the output is [1, count] with out[i] = (i + 0.5 i) * 2 past the first two.
static kiln::Status RunDataSymbol(Loaded* loaded, int64_t n, int64_t count) {
  std::vector<float> a((size_t)n);
  for (int64_t i = 0; i < n; ++i) a[i] = (float)i;
  uint32_t half[2];
  memcpy(half, &count, sizeof(count));
  memcpy(&a[0], &half[0], 4);
  if (half[1] == 0) a[1] = -0.5f;
  else memcpy(&a[1], &half[1], 4);
  REQUIRE(loaded->SetShape(0, {1, n}).ok());
  REQUIRE(loaded->session.set_input(0, a.data(), a.size() * 4).ok());
  kiln::Status status = loaded->session.run();
  if (!status.ok()) return status;
  size_t bytes = 0;
  CHECK(loaded->Shape(0, true, &bytes) == std::vector<int64_t>{1, count});
  CHECK(bytes == (size_t)count * 4);
  std::vector<float> out((size_t)count + 1, -1.0f);
  REQUIRE(loaded->session.get_output(0, out.data(), (size_t)count * 4).ok());
  for (int64_t i = 2; i < count; ++i) CHECK(out[i] == ((float)i + 0.5f * (float)i) * 2.0f);
  CHECK(out[(size_t)count] == -1.0f);  // nothing past the run's shape
  return status;
}

TEST_CASE("data symbols session: the count the source wrote sizes what follows, each run") {
  for (uint32_t threads : {1u, 2u}) {
    Loaded loaded(DataSymbolAddScale(), threads);
    kiln_tensor_info_t info;
    REQUIRE(loaded.model.get_output_info(0, &info).ok());
    CHECK(info.min_shape[1] == 0);  // a data dimension may be empty
    CHECK(info.shape[1] == kMax);
    CHECK(RunDataSymbol(&loaded, kMax, 100).ok());
    CHECK(RunDataSymbol(&loaded, kMax, 0).ok());  // no workgroups: dispatch 1 skipped
    CHECK(RunDataSymbol(&loaded, 40, 130).ok());  // larger than the input: fits the plan
    CHECK(RunDataSymbol(&loaded, kMax, kMax).ok());
    kiln::Status status = RunDataSymbol(&loaded, kMax, kMax + 1);
    CHECK(Fails(status, KILN_INVALID_ARGUMENT, "'add.count' came out as 257, outside the range 0..256"));
    CHECK(Contains(status.message(), "after dispatch 0"));
    CHECK(Fails(RunDataSymbol(&loaded, kMax, -5), KILN_INVALID_ARGUMENT, "came out as -5"));
    CHECK(RunDataSymbol(&loaded, 9, 3).ok());  // the session recovers
  }
}

TEST_CASE("data symbols session: constraints on a data symbol wait for it, then refuse the run") {
  TestBundle b = DataSymbolAddScale();
  b.shape_exprs.push_back({Sym(1), Sym(0), Step(Op::Le)});  // count <= n
  b.shape_constraints = {{4, "Compress node 'c': the count must not exceed n"}};
  Loaded loaded(b);
  CHECK(RunDataSymbol(&loaded, 64, 64).ok());  // resolved at the count's maximum (256 > 64): waited
  kiln::Status status = RunDataSymbol(&loaded, 64, 65);
  CHECK(Fails(status, KILN_INVALID_ARGUMENT, "the count must not exceed n"));
  CHECK(Contains(status.message(), "the sizes this run computed do not fit the model"));
  CHECK(RunDataSymbol(&loaded, 64, 10).ok());
}

//===----------------------------------------------------------------------===//
// Dynamic storage (bundle format 0.10): tensors sized per run, outside the arena
//===----------------------------------------------------------------------===//

namespace {

// DynamicAddScale() with a, t and out/final in Dynamic storage: no arena
// offset (offset is the tensor's slot), byte_size 0, sized at each run.
TestBundle DynamicStorageAddScale() {
  TestBundle b = DynamicAddScale();
  b.min_runtime_minor = 10;
  b.arena_bytes = 0;  // nothing left in the arena
  uint64_t slot = 0;
  for (int t : {0, 2, 3}) {
    b.tensors[t].storage = fb::Storage::Dynamic;
    b.tensors[t].offset = slot++;
    b.tensors[t].byte_size = 0;
  }
  return b;
}

}  // namespace

TEST_CASE("dynamic storage verify: byte_size 0, run-time dimensions, a slot in range, minor 10") {
  CHECK(LoadError(DynamicStorageAddScale()).empty());
  TestBundle b = DynamicStorageAddScale();
  b.tensors[2].byte_size = 64;
  CHECK(Contains(LoadError(b), "tensor 2 ('t'): a Dynamic tensor has byte_size 0"));
  b = DynamicStorageAddScale();
  b.tensors[2].dynamic_dims.clear();
  b.tensors[2].min_shape.clear();
  CHECK(Contains(LoadError(b), "tensor 2 ('t'): a Dynamic tensor needs run-time dimensions"));
  b = DynamicStorageAddScale();
  b.tensors[3].offset = 99;
  CHECK(Contains(LoadError(b), "a slot below the tensor count (slot 99)"));
  b = DynamicStorageAddScale();
  b.min_runtime_minor = 9;
  CHECK(Contains(LoadError(b), "tensor 0 ('a'): Dynamic storage needs min_runtime_minor >= 10"));
}

TEST_CASE("dynamic storage session: tensors grow and shrink per run and compute the right values") {
  for (uint32_t threads : {1u, 3u}) {
    CAPTURE(threads);
    Loaded loaded(DynamicStorageAddScale(), threads);
    int round = 0;
    for (int64_t n : {(int64_t)1, (int64_t)64, kMax, (int64_t)3, (int64_t)192, kMax}) {
      CAPTURE(n);
      RunAddScale(&loaded, n, round++);
    }
  }
}

TEST_CASE("dynamic storage session: max_arena_bytes bounds the per-run tensors") {
  std::vector<uint8_t> file = DynamicStorageAddScale().Build();
  kiln::Model model;
  REQUIRE(kiln::Model::LoadMemory(file.data(), file.size(), &model).ok());
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.max_arena_bytes = 2048;  // three [1, n] float tensors of 4n bytes each: n = 256 needs 3072
  kiln::Session session;
  kiln::Status status = kiln::Session::Create(model, &options, &session);
  REQUIRE_MESSAGE(status.ok(), status.message());
  std::vector<float> a((size_t)kMax, 1.0f), out((size_t)kMax);
  REQUIRE(session.set_input_shape(0, std::vector<int64_t>{1, kMax}.data(), 2).ok());
  status = session.set_input(0, a.data(), a.size() * 4);
  if (status.ok()) status = session.run();
  CHECK(status.code() == KILN_OUT_OF_MEMORY);
  CHECK(Contains(status.message(), "the tensors sized per run need 3072 bytes"));
  CHECK(Contains(status.message(), "max_arena_bytes"));
  // The session stays usable at sizes that fit, the slots kept larger by
  // one run giving bytes back when another needs them.
  std::vector<float> ones((size_t)kMax, 1.0f);
  REQUIRE(session.set_input_shape(0, std::vector<int64_t>{1, 128}.data(), 2).ok());
  REQUIRE(session.set_input(0, ones.data(), 512).ok());
  REQUIRE(session.run().ok());
  REQUIRE(session.set_input_shape(0, std::vector<int64_t>{1, 4}.data(), 2).ok());
  REQUIRE(session.set_input(0, a.data(), 16).ok());
  status = session.run();
  CHECK_MESSAGE(status.ok(), status.message());
  REQUIRE(session.get_output(0, out.data(), 16).ok());
  CHECK(out[3] == (1.0f + 0.5f * 3.0f) * 2.0f);
}

namespace {

// DataSymbolAddScale() with its output [1, count] sized per run (slot 0).
TestBundle DataSymbolDynamicOutput() {
  TestBundle b = DataSymbolAddScale();
  b.min_runtime_minor = 10;
  b.tensors[3].storage = fb::Storage::Dynamic;
  b.tensors[3].offset = 0;
  b.tensors[3].byte_size = 0;
  return b;
}

}  // namespace

TEST_CASE("dynamic storage session: a data symbol sizes a per-run output, each run") {
  for (uint32_t threads : {1u, 2u}) {
    Loaded loaded(DataSymbolDynamicOutput(), threads);
    CHECK(RunDataSymbol(&loaded, kMax, 100).ok());
    CHECK(RunDataSymbol(&loaded, kMax, 0).ok());
    CHECK(RunDataSymbol(&loaded, 40, 130).ok());
    CHECK(RunDataSymbol(&loaded, kMax, kMax).ok());
    CHECK(RunDataSymbol(&loaded, 9, 3).ok());
  }
}

// Dispatch 0 (the count's source) runs no workgroups at n = 1: the count
// stays pending, so dispatch 1, whose counts and per-run output wait for
// it, does not run, and the output has no value (a run-time If's branch not
// taken). Before: a NULL binding reached the kernel.
TEST_CASE("dynamic storage session: what waits for a data symbol no dispatch defined does not run") {
  TestBundle b = DataSymbolDynamicOutput();
  // n == 1 ? 0 : (n + 63) / 64
  b.shape_exprs.push_back({Sym(0), Const(1), Step(Op::Eq), Const(0), Sym(0), Const(63), Step(Op::Add), Const(64),
                           Step(Op::Div), Step(Op::Select)});
  b.dispatches[0].workgroup_count_exprs = {(int32_t)b.shape_exprs.size() - 1, -1, -1};
  Loaded loaded(b);
  REQUIRE(loaded.SetShape(0, {1, 1}).ok());
  float one = 1.0f;
  REQUIRE(loaded.session.set_input(0, &one, 4).ok());
  kiln::Status status = loaded.session.run();
  REQUIRE_MESSAGE(status.ok(), status.message());
  size_t bytes = 0;
  loaded.Shape(0, true, &bytes);
  std::vector<uint8_t> out(bytes);
  CHECK(Fails(loaded.session.get_output(0, out.data(), out.size()), KILN_INVALID_ARGUMENT, "has no value"));
  const void* view = nullptr;
  CHECK(Fails(loaded.session.get_output_view(0, &view), KILN_INVALID_ARGUMENT, "has no value"));
  CHECK(RunDataSymbol(&loaded, kMax, 100).ok());  // a run that defines it
}

TEST_CASE("dynamic storage verify: a dispatch binds a per-run tensor only once its size is known") {
  TestBundle b = DataSymbolDynamicOutput();
  b.dispatches[0].bindings.push_back({3, fb::Access::Write});  // the count's own source writes [1, count]
  CHECK(Contains(LoadError(b), "dispatch 0: binding 3 ('out/final', sized per run) uses a data symbol defined only "
                               "by this dispatch or a later one"));
}
