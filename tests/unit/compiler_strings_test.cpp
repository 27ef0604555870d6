// String-table kernels (lower/string_table.h): numbers to text and back,
// compiled with the real code generator and run in this process, against
// references written with libc (snprintf / strtod).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler_test_util.h"
#include "graph/graph.h"
#include "lower/string_table.h"

namespace kiln {
namespace {

using lower::serial::Local;
using tir::Expr;

// numpy's str() of a float32: the shortest %.{p}e digits that read back,
// positional from 1e-4 to 1e16 (the value widened to double: str(np.float32(1e-4))
// is '1e-04'), else d[.ddd]e+XX; "NaN", "INF", "-INF".
std::string reference_text(float v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
  std::string sign = std::signbit(v) ? "-" : "";
  float a = std::fabs(v);
  if (a == 0) return sign + "0.0";
  char buf[64];
  int p = 1;
  for (; p <= 9; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, (double)a);
    if (strtof(buf, nullptr) == a) break;
  }
  // buf: d.ddde[+-]XX -> digits and exponent.
  std::string s = buf, digits;
  size_t e_at = s.find('e');
  for (size_t i = 0; i < e_at; i++)
    if (s[i] != '.') digits += s[i];
  int exp10 = atoi(s.c_str() + e_at + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if ((double)a >= 1e-4 && (double)a < 1e16) {  // numpy widens the value (float32's 1e-4 is below 1e-4)
    if (exp10 >= 0) {
      for (int q = 0; q <= exp10; q++) out += q < (int)digits.size() ? digits[(size_t)q] : '0';
      out += '.';
      out += (int)digits.size() > exp10 + 1 ? digits.substr((size_t)exp10 + 1) : "0";
    } else {
      out = "0." + std::string((size_t)(-exp10 - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    snprintf(buf, sizeof buf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += buf;
  }
  return sign + out;
}

// Table bytes of `strings` and back.
std::vector<std::string> read_table(const std::vector<uint8_t>& t, size_t n) {
  auto at = [&](size_t i) { uint32_t o; memcpy(&o, t.data() + 4 * i, 4); return o; };
  std::vector<std::string> r;
  size_t start = 4 * (n + 1);
  for (size_t i = 0; i < n; i++) {
    REQUIRE(at(i) <= at(i + 1));
    REQUIRE(start + at(i + 1) <= t.size());
    r.emplace_back((const char*)t.data() + start + at(i), at(i + 1) - at(i));
  }
  return r;
}

// Runs a kernel formatting n float32s into a table.
std::vector<std::string> format_floats(const std::vector<float>& values) {
  const int64_t n = (int64_t)values.size(), size = 4 * (n + 1) + n * graph::kNumberTextBytes;
  KernelDef k;
  k.name = "format";
  auto in = tir::make_buffer("in", tir::Float(32), n, 0), out = tir::make_buffer("out", tir::UInt(8), size, 1);
  k.params = {in, out};
  lower::strings::Writer w{out, lower::strings::bytes_start(Expr(n))};
  Expr i = lower::serial::index_var("i");
  tir::Stmt each = lower::serial::block({lower::strings::format_number(tir::Load::make(in, i), graph::DType::F32, w),
                                         lower::strings::set_offset(out, i + Expr(1), w.at.get())});
  k.body = lower::serial::allocate({w.at.b}, lower::serial::block({w.at.set(Expr(0)),
                                                                    lower::strings::set_offset(out, Expr(0), Expr(0)),
                                                                    lower::serial::loop(i, Expr(n), each)}));
  test::Library lib({k});
  std::vector<uint8_t> table((size_t)size, 0xEE);
  lib.run(0, {(void*)values.data(), table.data()});
  return read_table(table, values.size());
}

// Runs a kernel parsing a table of strings into float64s.
std::vector<double> parse_strings(const std::vector<std::string>& strings) {
  int64_t bytes = 0;
  std::vector<uint8_t> table = graph::string_table(strings, &bytes);
  const int64_t n = (int64_t)strings.size();
  KernelDef k;
  k.name = "parse";
  auto in = tir::make_buffer("in", tir::UInt(8), (int64_t)table.size(), 0), out = tir::make_buffer("out", tir::Float(64), n, 1);
  k.params = {in, out};
  Expr i = lower::serial::index_var("i"), start = lower::strings::bytes_start(Expr(n));
  lower::strings::Parsed v;
  tir::Stmt parse = lower::strings::parse_number(in, start + lower::strings::offset(in, i),
                                                 start + lower::strings::offset(in, i + Expr(1)), v);
  k.body = lower::serial::loop(i, Expr(n), lower::serial::allocate(v.buffers(), lower::serial::block({parse, tir::Store::make(out, i, v.value.get())})));
  test::Library lib({k});
  std::vector<double> r((size_t)n, -12345.0);
  lib.run(0, {table.data(), r.data()});
  return r;
}

TEST_CASE("strings: float32 to text is numpy's shortest repr") {
  std::vector<float> values = {0.9767611f, 0.039187793f, 0.5f, 1.0f, -1.0f, 100.0f, 12.5f, 0.1f, 1e-4f, 9.999e-5f,
                               1e-5f, 1.5e20f, 3.4028235e38f, 1e-45f, 1.17549435e-38f, 123456789.0f, 1.2345679e15f,
                               1e16f, 9.9999e15f, -0.0f, 0.0f, NAN, INFINITY, -INFINITY, 16777216.0f, 0.3f, 2.0f / 3};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 3000; i++) {  // random bit patterns cover every exponent
    uint32_t b = bits(rng);
    float f;
    memcpy(&f, &b, 4);
    values.push_back(f);
  }
  std::vector<std::string> text = format_floats(values);
  for (size_t i = 0; i < values.size(); i++) {
    CAPTURE(values[i]);
    CHECK(text[i] == reference_text(values[i]));
  }
}

TEST_CASE("strings: text to numbers reads what strtod reads") {
  std::vector<std::string> s = {"0.47892547", "NaN", "INF", "+INF", "-INF", "-inf", "Infinity", "nan", "1e-5", "1E8",
                                "  3.25 ", "-0", "+12", ".5", "5.", "1.5e+20", "123456789012345678901234", "0.000001",
                                "1e400", "1e-400", "", "abc", "1e", "--1", "1.2.3", "0x10", "4e-45", "3.4028235e38"};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> mant(1, 10);
  std::uniform_int_distribution<int> ex(-40, 38);
  char buf[64];
  for (int i = 0; i < 500; i++) {
    snprintf(buf, sizeof buf, "%.*e", i % 12, mant(rng) * std::pow(10.0, ex(rng)));
    s.push_back(buf);
  }
  std::vector<double> got = parse_strings(s);
  for (size_t i = 0; i < s.size(); i++) {
    CAPTURE(s[i]);
    char* end = nullptr;
    double want = strtod(s[i].c_str(), &end);
    while (end && (*end == ' ')) end++;
    bool whole = !s[i].empty() && end && *end == 0 && s[i].find('x') == std::string::npos;
    if (!whole) want = NAN;  // not a number: NaN
    if (std::isnan(want)) {
      CHECK(std::isnan(got[i]));
    } else {
      // float32 results must match exactly; the float64 within a few ulps.
      CHECK((float)got[i] == (float)want);
      CHECK(std::signbit(got[i]) == std::signbit(want));
    }
  }
}

}  // namespace
}  // namespace kiln
