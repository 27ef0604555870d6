// String tensors (bundle format 0.9, docs/bundle.md#string-tensors): the
// verifier's checks of String tensors and string constants; a session
// checks a string input's table before copying it, hands out a string
// output's table as the last run left it (a bad one is KILN_INTERNAL), and
// refuses a run while a string input's slot may hold no table; kiln.hpp
// packs and unpacks tables.
#include <doctest/doctest.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime_bundle_builder.h"

using kiln_test::TestBundle;
namespace fb = kiln::fb;

namespace {

using kiln_test::Contains;
using kiln_test::LoadError;

// The table of `strings`.
std::vector<uint8_t> Table(const std::vector<std::string>& strings) {
  std::vector<uint8_t> table;
  REQUIRE(kiln::PackStrings(strings, &table));
  return table;
}

// A table from raw offsets and bytes (possibly malformed).
std::vector<uint8_t> RawTable(const std::vector<uint32_t>& offsets, const std::string& bytes) {
  std::vector<uint8_t> table(offsets.size() * 4 + bytes.size());
  memcpy(table.data(), offsets.data(), offsets.size() * 4);
  memcpy(table.data() + offsets.size() * 4, bytes.data(), bytes.size());
  return table;
}

constexpr uint64_t kInputBytes = 32;  // x's string_bytes

// x: a string input [3] (32 bytes of strings) at arena 0; y: a string
// output [3] sharing x's slot (so y is x after any run); z: a string
// output [2] at 128 that nothing writes; c: a string constant ["ab", "c"].
TestBundle StringBundle() {
  TestBundle b;
  b.tensors = {
      {"x", fb::DType::String, {3}, fb::Storage::Arena, 0},
      {"y", fb::DType::String, {3}, fb::Storage::Arena, 0},
      {"z", fb::DType::String, {2}, fb::Storage::Arena, 128},
      {"c", fb::DType::String, {2}, fb::Storage::Constant, 0},
  };
  b.tensors[0].string_bytes = b.tensors[1].string_bytes = kInputBytes;
  b.tensors[2].string_bytes = 8;
  b.tensors[3].string_bytes = 3;
  b.inputs = {0};
  b.outputs = {1, 2};
  b.arena_bytes = 192;
  b.data = Table({"ab", "c"});
  return b;
}

// A bundle loaded, with a CPU session.
struct StringModel {
  std::vector<uint8_t> file;  // outlives the model
  kiln::Model model;
  kiln::Session session;

  explicit StringModel(const TestBundle& b) : file(b.Build()) {
    kiln::Status status = kiln::Model::LoadMemory(file.data(), file.size(), &model);
    REQUIRE_MESSAGE(status.ok(), status.message());
    status = kiln::Session::Create(model, nullptr, &session);
    REQUIRE_MESSAGE(status.ok(), status.message());
  }
  kiln::Status SetInput(size_t index, const std::vector<uint8_t>& table) {
    return session.set_input(index, table.data(), table.size());
  }
  // Output `index`'s table after the last run, through kiln_session_get_output.
  std::vector<uint8_t> Output(size_t index) {
    kiln_tensor_info_t info;
    kiln::Status status = session.get_output_info(index, &info);
    REQUIRE_MESSAGE(status.ok(), status.message());
    std::vector<uint8_t> table(info.byte_size);
    status = session.get_output(index, table.data(), table.size());
    REQUIRE_MESSAGE(status.ok(), status.message());
    return table;
  }
};

}  // namespace

TEST_CASE("strings: the dtype, and a string bundle's infos") {
  CHECK(std::string(kiln_dtype_name(KILN_DTYPE_STRING)) == "string");
  CHECK(kiln_dtype_size(KILN_DTYPE_STRING) == 0);  // no element size: a table
  StringModel loaded(StringBundle());
  kiln_tensor_info_t info;
  kiln_tensor_info_init(&info);
  REQUIRE(loaded.model.get_input_info(0, &info).ok());
  CHECK(info.dtype == KILN_DTYPE_STRING);
  CHECK(info.string_bytes == kInputBytes);
  CHECK(info.byte_size == 4 * 4 + kInputBytes);
  REQUIRE(loaded.model.get_tensor_info(3, &info).ok());  // the constant: exactly its table
  CHECK(info.byte_size == 15);
  CHECK(info.string_bytes == 3);
  std::vector<std::string> strings;
  CHECK(kiln::UnpackStrings(info.data, info.byte_size, 2, &strings));
  CHECK(strings == std::vector<std::string>{"ab", "c"});
  REQUIRE(loaded.session.get_input_info(0, &info).ok());  // the largest table at the current shape
  CHECK(info.byte_size == 4 * 4 + kInputBytes);
  // A caller built before 0.9 does not get string_bytes written.
  unsigned char buffer[sizeof(kiln_tensor_info_t)];
  memset(buffer, 0xA5, sizeof(buffer));
  size_t old_size = offsetof(kiln_tensor_info_t, string_bytes);
  memcpy(buffer, &old_size, sizeof(old_size));
  REQUIRE(kiln_model_get_input_info(loaded.model.get(), 0, (kiln_tensor_info_t*)buffer) == NULL);
  for (size_t i = old_size; i < sizeof(buffer); ++i) CHECK(buffer[i] == 0xA5);
}

TEST_CASE("strings: the verifier checks String tensors and string constants") {
  CHECK(LoadError(StringBundle()) == "");
  TestBundle b = StringBundle();
  b.tensors[0].byte_size = 47;  // byte_size and string_bytes disagree
  CHECK(Contains(LoadError(b), "tensor 0 ('x'): byte_size 47 does not match its string table "
                               "(4 * (3 + 1) offsets + 32 string_bytes = 48)"));
  b = StringBundle();
  b.tensors[0].string_bytes = 1ull << 32;
  CHECK(Contains(LoadError(b), "tensor 0 ('x'): string_bytes 4294967296 is not below 2^32"));
  b = StringBundle();
  b.tensors[0].shape = {1ll << 62, 1};  // 4 * (2^62 + 1) overflows
  b.tensors[0].byte_size = 64;
  CHECK(Contains(LoadError(b), "tensor 0 ('x'): shape size overflows 64 bits"));
  b = StringBundle();
  b.tensors.push_back({"f", fb::DType::Float32, {1}, fb::Storage::Arena, 64});
  b.tensors.back().string_bytes = 5;
  b.tensors.back().byte_size = 4;
  CHECK(Contains(LoadError(b), "tensor 4 ('f'): string_bytes 5 on a float32 tensor"));

  // The constant's table: offsets 0, 2, 3 and "abc".
  struct Case {
    std::vector<uint32_t> offsets;
    const char* error;
  };
  const Case cases[] = {
      {{1, 2, 3}, "offset 0 is 1, not 0"},
      {{0, 3, 2}, "offset 2 (2) is less than offset 1 (3)"},
      {{0, 2, 9}, "offset 2 (9) is outside its table of 15 bytes"},
      {{0, 1, 2}, "its strings end at byte 14, but the table has 15 bytes"},
  };
  for (const Case& c : cases) {
    b = StringBundle();
    b.data = RawTable(c.offsets, "abc");
    std::string error = LoadError(b);
    CHECK_MESSAGE(Contains(error, "tensor 3 ('c'): string constant: "), error);
    CHECK_MESSAGE(Contains(error, c.error), error);
  }
}

TEST_CASE("strings: set_input checks the table before copying anything") {
  StringModel loaded(StringBundle());
  const std::vector<uint8_t> first = Table({"kiln", "", "strings"});
  kiln::Status status = loaded.SetInput(0, first);
  REQUIRE_MESSAGE(status.ok(), status.message());
  struct Case {
    std::vector<uint8_t> table;
    const char* error;
  };
  std::vector<uint8_t> trailing = first;
  trailing.push_back('!');
  const Case cases[] = {
      {RawTable({0, 1, 2, 70}, "ab"), "string input 'x': offset 3 (70) is outside its table of 18 bytes"},
      {RawTable({0, 5, 3, 6}, "abcdef"), "string input 'x': offset 2 (3) is less than offset 1 (5)"},
      {RawTable({2, 2, 2, 2}, "ab"), "string input 'x': offset 0 is 2, not 0"},
      {Table({std::string(20, 'a'), "", std::string(20, 'b')}),
       "string input 'x' holds 40 bytes, more than the 32 the bundle was compiled for (kilnc --string-bytes)"},
      {RawTable({0, 0}, ""), "string input 'x': 8 bytes are too few for the 3 + 1 offsets of 3 strings"},
      {trailing, "string input 'x': its strings end at byte 27, but the table has 28 bytes"},
      {Table({"a", "b"}), "string input 'x': 14 bytes are too few"},  // a table of 2 strings, not 3
  };
  for (const Case& c : cases) {
    status = loaded.SetInput(0, c.table);
    CHECK(status.code() == KILN_INVALID_ARGUMENT);
    CHECK_MESSAGE(Contains(status.message(), c.error), status.message());
  }
  status = loaded.session.set_input(0, nullptr, 0);
  CHECK(Contains(status.message(), "NULL data"));
  // The input is still the first table.
  REQUIRE(loaded.session.run().ok());
  CHECK(loaded.Output(0) == first);
}

TEST_CASE("strings: outputs are the table the last run left") {
  StringModel loaded(StringBundle());
  // Before any run the arena is zeroed: empty strings.
  CHECK(loaded.Output(0) == Table({"", "", ""}));
  CHECK(loaded.Output(1) == Table({"", ""}));
  const std::vector<uint8_t> table = Table({"a", "bc", std::string("\xff\x00z", 3)});
  REQUIRE(loaded.SetInput(0, table).ok());
  REQUIRE(loaded.session.run().ok());
  kiln_tensor_info_t info;
  REQUIRE(loaded.session.get_output_info(0, &info).ok());
  CHECK(info.byte_size == table.size());  // the used size, not the slot's
  CHECK(info.string_bytes == kInputBytes);
  CHECK(loaded.Output(0) == table);
  std::vector<uint8_t> larger(info.byte_size + 1);
  kiln::Status status = loaded.session.get_output(0, larger.data(), larger.size());
  CHECK(Contains(status.message(), "has 22 bytes, buffer has 23"));
  const void* view = nullptr;
  REQUIRE(loaded.session.get_output_view(0, &view).ok());
  CHECK(memcmp(view, table.data(), table.size()) == 0);
  std::vector<std::string> strings;
  REQUIRE(loaded.session.get_output_strings(0, &strings).ok());
  CHECK(strings == std::vector<std::string>{"a", "bc", std::string("\xff\x00z", 3)});
  REQUIRE(loaded.session.get_output_strings(1, &strings).ok());
  CHECK(strings == std::vector<std::string>{"", ""});
}

TEST_CASE("strings: a run refuses a string input whose memory the last run may have reused") {
  StringModel loaded(StringBundle());  // y shares x's slot
  REQUIRE(loaded.session.run().ok());  // never set: the zeroed slot's empty strings
  kiln::Status status = loaded.session.run();
  CHECK(status.code() == KILN_INVALID_ARGUMENT);
  CHECK(Contains(status.message(), "run: string input 'x' must be set (kiln_session_set_input)"));
  REQUIRE(loaded.session.set_input_strings(0, {"p", "q", "r"}).ok());
  REQUIRE(loaded.session.run().ok());
  std::vector<std::string> strings;
  REQUIRE(loaded.session.get_output_strings(0, &strings).ok());
  CHECK(strings == std::vector<std::string>{"p", "q", "r"});

  // An input no other tensor shares runs again without being set.
  TestBundle b = StringBundle();
  b.tensors[1].offset = 64;
  StringModel apart(b);
  REQUIRE(apart.session.set_input_strings(0, {"p", "q", "r"}).ok());
  REQUIRE(apart.session.run().ok());
  REQUIRE(apart.session.run().ok());
}

TEST_CASE("strings: a corrupt output table is KILN_INTERNAL") {
  // u (uint8 [24], the input) fills the bytes of y (a string output [2] with
  // 12 bytes of strings) at arena 0.
  TestBundle b;
  b.tensors = {{"u", fb::DType::UInt8, {24}, fb::Storage::Arena, 0},
               {"y", fb::DType::String, {2}, fb::Storage::Arena, 0}};
  b.tensors[1].string_bytes = 12;
  b.inputs = {0};
  b.outputs = {1};
  b.arena_bytes = 64;
  StringModel loaded(b);
  std::vector<uint8_t> bytes = RawTable({0, 9, 4}, std::string(12, 'a'));
  REQUIRE(loaded.SetInput(0, bytes).ok());
  REQUIRE(loaded.session.run().ok());
  kiln_tensor_info_t info;
  kiln::Status status = loaded.session.get_output_info(0, &info);
  CHECK(status.code() == KILN_INTERNAL);
  CHECK(Contains(status.message(), "string output 'y' (a kernel wrote no valid string table): offset 2 (4) is less"));
  const void* view = nullptr;
  CHECK(loaded.session.get_output_view(0, &view).code() == KILN_INTERNAL);
  CHECK(loaded.session.get_output(0, bytes.data(), 16).code() == KILN_INTERNAL);
  // An offset past the slot (12 bytes of strings at this shape).
  bytes = RawTable({0, 9, 13}, std::string(12, 'a'));
  REQUIRE(loaded.SetInput(0, bytes).ok());
  REQUIRE(loaded.session.run().ok());
  status = loaded.session.get_output_info(0, &info);
  CHECK(Contains(status.message(), "offset 2 (13) is outside its table of 24 bytes"));
  bytes = RawTable({0, 9, 12}, std::string(12, 'a'));  // the whole slot: fine
  REQUIRE(loaded.SetInput(0, bytes).ok());
  REQUIRE(loaded.session.run().ok());
  REQUIRE(loaded.session.get_output_info(0, &info).ok());
  CHECK(info.byte_size == 24);
}

TEST_CASE("strings: run-time dimensions: the table follows the input's current shape") {
  // x and y: string [n], n in 1..4 (16 bytes of strings), y apart from x.
  TestBundle b;
  b.tensors = {{"x", fb::DType::String, {4}, fb::Storage::Arena, 0},
               {"y", fb::DType::String, {4}, fb::Storage::Arena, 64}};
  for (auto& t : b.tensors) {
    t.string_bytes = 16;
    t.dynamic_dims = {0};
    t.min_shape = {1};
  }
  b.inputs = {0};
  b.outputs = {1};
  b.arena_bytes = 128;
  b.min_runtime_minor = 5;
  b.symbols = {{"n", 1, 4, 0, 0}};
  b.shape_exprs = {{fb::ShapeInstr(fb::ShapeOp::Symbol, 0)}};
  StringModel loaded(b);
  REQUIRE(loaded.session.set_input_strings(0, {"a", "b", "c", "d"}).ok());
  REQUIRE(loaded.session.run().ok());
  REQUIRE(loaded.session.run().ok());  // not shared: still set
  int64_t two = 2;
  REQUIRE(loaded.session.set_input_shape(0, &two, 1).ok());
  kiln::Status status = loaded.session.run();  // the 4-string table does not fit [2]
  CHECK(Contains(status.message(), "string input 'x' must be set"));
  status = loaded.session.set_input_strings(0, {"a", "b", "c"});
  CHECK(Contains(status.message(), "its strings end at byte"));  // 3 strings for 2
  REQUIRE(loaded.session.set_input_strings(0, {"long", "er"}).ok());
  kiln_tensor_info_t info;
  REQUIRE(loaded.session.get_input_info(0, &info).ok());
  CHECK(info.byte_size == 4 * 3 + 16);  // the largest table at [2]
  REQUIRE(loaded.session.run().ok());
  REQUIRE(loaded.session.get_output_info(0, &info).ok());
  CHECK(info.shape[0] == 2);
  CHECK(info.byte_size == 4 * 3);  // y holds zeros: two empty strings
  REQUIRE(loaded.session.set_input_shape(0, &two, 1).ok());  // the same shape: still set
  REQUIRE(loaded.session.run().ok());
}

TEST_CASE("strings: kiln.hpp packs and unpacks tables") {
  std::vector<uint8_t> table;
  REQUIRE(kiln::PackStrings({}, &table));
  CHECK(table == std::vector<uint8_t>(4, 0));
  std::vector<std::string> strings = {"", "\xe2\x82\xac", "", std::string("a\0b", 3)};
  REQUIRE(kiln::PackStrings(strings, &table));
  CHECK(table.size() == 4 * 5 + 6);
  std::vector<std::string> back;
  REQUIRE(kiln::UnpackStrings(table.data(), table.size(), strings.size(), &back));
  CHECK(back == strings);
  CHECK(!kiln::UnpackStrings(table.data(), table.size() - 1, strings.size(), &back));  // ends early
  CHECK(back.empty());
  CHECK(!kiln::UnpackStrings(table.data(), table.size(), strings.size() + 1, &back));
  CHECK(!kiln::UnpackStrings(RawTable({0, 3, 1}, "abc").data(), 15, 2, &back));   // decreasing
  CHECK(!kiln::UnpackStrings(RawTable({1, 2, 3}, "abc").data(), 15, 2, &back));   // offsets[0] != 0
  CHECK(!kiln::UnpackStrings(RawTable({0, 2, 9}, "abc").data(), 15, 2, &back));   // past the end
  CHECK(!kiln::UnpackStrings(table.data(), 3, 0, &back));                          // no room for offsets[0]
  const char* data[] = {"xy", "z"};
  const size_t sizes[] = {2, 1};
  REQUIRE(kiln::PackStrings(data, sizes, 2, &table));
  CHECK(table == RawTable({0, 2, 3}, "xyz"));
}

// Writes a string identity bundle to $KILN_TEST_WRITE_STRING_BUNDLE (for
// runtime_tool_test.py's `kiln run` of .npy strings and the bindings'
// tests); skipped otherwise: x, a string input [2, 3] with 64 bytes of
// strings, and y, a string output sharing its slot (y is x after a run).
TEST_CASE("strings: write the string bundle for the tool test") {
  const char* path = getenv("KILN_TEST_WRITE_STRING_BUNDLE");
  if (!path) return;
  TestBundle b;
  b.tensors = {{"x", fb::DType::String, {2, 3}, fb::Storage::Arena, 0},
               {"y", fb::DType::String, {2, 3}, fb::Storage::Arena, 0}};
  b.tensors[0].string_bytes = b.tensors[1].string_bytes = 64;
  b.inputs = {0};
  b.outputs = {1};
  b.arena_bytes = 128;
  std::vector<uint8_t> file = b.Build();
  FILE* f = fopen(path, "wb");
  REQUIRE(f != NULL);
  CHECK(fwrite(file.data(), 1, file.size(), f) == file.size());
  fclose(f);
}
