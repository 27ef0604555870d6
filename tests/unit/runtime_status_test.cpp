// Status objects: codes, messages, annotation, NULL == OK.
#include <doctest/doctest.h>
#include <string.h>

#include <string>

#include "base/status.h"
#include "kiln/kiln.hpp"

TEST_CASE("status: NULL is OK") {
  CHECK(kiln_status_code(NULL) == KILN_OK);
  CHECK(std::string(kiln_status_message(NULL)) == "OK");
  kiln_status_free(NULL);  // no-op
  CHECK(kiln_make_status(KILN_OK, "ignored %d", 1) == NULL);
}

TEST_CASE("status: code and formatted message") {
  kiln_status_t status = kiln_make_status(KILN_INVALID_BUNDLE, "tensor %d ('%s') bad", 12, "conv1");
  REQUIRE(status != NULL);
  CHECK(kiln_status_code(status) == KILN_INVALID_BUNDLE);
  CHECK(std::string(kiln_status_message(status)) == "tensor 12 ('conv1') bad");
  kiln_status_free(status);
}

TEST_CASE("status: long messages are not truncated") {
  std::string long_text(5000, 'x');
  kiln_status_t status = kiln_make_status(KILN_INTERNAL, "%s", long_text.c_str());
  CHECK(strlen(kiln_status_message(status)) == 5000);
  kiln_status_free(status);
}

TEST_CASE("status: annotate prefixes and keeps the code") {
  kiln_status_t status = kiln_make_status(KILN_UNSUPPORTED, "inner");
  status = kiln_status_annotate(status, "outer %d", 3);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  CHECK(std::string(kiln_status_message(status)) == "outer 3: inner");
  kiln_status_free(status);
  CHECK(kiln_status_annotate(NULL, "x") == NULL);
}

TEST_CASE("status: code names and the C++ wrapper") {
  CHECK(std::string(kiln_status_code_name(KILN_INVALID_BUNDLE)) == "INVALID_BUNDLE");
  CHECK(std::string(kiln_status_code_name((kiln_status_code_t)99)) == "UNKNOWN");
  kiln::Status ok;
  CHECK(ok.ok());
  kiln::Status bad(kiln_make_status(KILN_NOT_FOUND, "missing"));
  CHECK(!bad.ok());
  CHECK(bad.code() == KILN_NOT_FOUND);
  kiln::Status moved = std::move(bad);
  CHECK(bad.ok());
  CHECK(std::string(moved.message()) == "missing");
}

TEST_CASE("dtype names and sizes") {
  CHECK(std::string(kiln_dtype_name(KILN_DTYPE_FLOAT16)) == "float16");
  CHECK(kiln_dtype_size(KILN_DTYPE_INT64) == 8);
  CHECK(kiln_dtype_size(KILN_DTYPE_BOOL) == 1);
  CHECK(std::string(kiln_dtype_name(KILN_DTYPE_BFLOAT16)) == "bfloat16");
  CHECK(kiln_dtype_size(KILN_DTYPE_BFLOAT16) == 2);
  CHECK(kiln_dtype_size((kiln_dtype_t)13) == 0);
  CHECK(kiln_dtype_size((kiln_dtype_t)42) == 0);
  // 0.10's narrow types: one byte an element (decision 62), named as ONNX's.
  const char* narrow[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",
                          "int4",         "float4e2m1",     "float8e8m0", "uint2",          "int2"};
  for (int code = KILN_DTYPE_FLOAT8E4M3FN; code <= KILN_DTYPE_INT2; code++) {
    CHECK(kiln_dtype_size((kiln_dtype_t)code) == 1);
    CHECK(std::string(kiln_dtype_name((kiln_dtype_t)code)) == narrow[code - KILN_DTYPE_FLOAT8E4M3FN]);
  }
  CHECK(KILN_DTYPE_INT2 == 23);
  CHECK(kiln_dtype_size((kiln_dtype_t)24) == 0);
  CHECK(std::string(kiln_dtype_name((kiln_dtype_t)24)) == "unknown");
}
