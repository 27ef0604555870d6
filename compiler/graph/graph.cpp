#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "support/diagnostics.h"
#include "tir/inplace.h"
#include "tir/ir_visitor.h"
#include "tir/ir_printer.h"
#include "tir/simplify.h"

namespace kiln::graph {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::F64: return 8;
    case DType::I8: return 1;
    case DType::I16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::Bool: return 1;
    case DType::U16: return 2;
    case DType::U32: return 4;
    case DType::U64: return 8;
    case DType::BF16: return 2;
    case DType::String: return 1;
    case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ: case DType::U4:
    case DType::I4: case DType::F4E2M1: case DType::F8E8M0: case DType::U2: case DType::I2:
      return 1;  // one element per byte, never packed
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::F64: return "float64";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::Bool: return "bool";
    case DType::U16: return "uint16";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::BF16: return "bfloat16";
    case DType::String: return "string";
    case DType::F8E4M3FN: return "float8e4m3fn";
    case DType::F8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::F8E5M2: return "float8e5m2";
    case DType::F8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::U4: return "uint4";
    case DType::I4: return "int4";
    case DType::F4E2M1: return "float4e2m1";
    case DType::F8E8M0: return "float8e8m0";
    case DType::U2: return "uint2";
    case DType::I2: return "int2";
  }
  return "?";
}

tir::Type dtype_to_tir(DType t) {
  switch (t) {
    case DType::F32: return tir::Float(32);
    case DType::F16: return tir::Float(16);
    case DType::F64: return tir::Float(64);
    case DType::I8: return tir::Int(8);
    case DType::I16: return tir::Int(16);
    case DType::I32: return tir::Int(32);
    case DType::I64: return tir::Int(64);
    case DType::U8: return tir::UInt(8);
    case DType::Bool: return tir::UInt(8);  // stored as one byte, 0 or 1
    case DType::U16: return tir::UInt(16);
    case DType::U32: return tir::UInt(32);
    case DType::U64: return tir::UInt(64);
    case DType::BF16: return tir::UInt(16);  // the bits; Cast converts (tir::Intrinsic::Bf16ToF32)
    case DType::String: return tir::UInt(8);  // the table's bytes (lower/string_table.h reads and writes it)
    case DType::I4: case DType::I2: return tir::Int(8);  // the value, sign-extended
    case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ: case DType::U4:
    case DType::F4E2M1: case DType::F8E8M0: case DType::U2:
      return tir::UInt(8);  // the code (Cast converts: lower/narrow_types.h), or the unsigned value
  }
  return tir::Float(32);
}

std::vector<uint8_t> string_table(const std::vector<std::string>& strings, int64_t* out_bytes) {
  uint64_t total = 0;
  for (auto& x : strings) total += x.size();
  user_assert(total < (1ull << 32)) << "a string tensor holds " << total << " bytes; string tensors hold less than 4 GiB";
  std::vector<uint8_t> table(4 * (strings.size() + 1));
  uint32_t at = 0;
  for (size_t i = 0; i <= strings.size(); i++) {
    for (int b = 0; b < 4; b++) table[4 * i + (size_t)b] = (uint8_t)(at >> (8 * b));
    if (i < strings.size()) {
      table.insert(table.end(), strings[i].begin(), strings[i].end());
      at += (uint32_t)strings[i].size();
    }
  }
  *out_bytes = (int64_t)total;
  return table;
}

std::vector<std::string> table_strings(const std::vector<uint8_t>& table, int64_t count) {
  auto offset = [&](int64_t i) {
    user_assert(count >= 0 && (uint64_t)(4 * i + 4) <= table.size()) << "a string table is shorter than its offsets";
    uint64_t at = 0;
    for (int b = 0; b < 4; b++) at |= (uint64_t)table[(size_t)(4 * i + b)] << (8 * b);
    return at;
  };
  const uint64_t start = 4 * (uint64_t)(count + 1);
  std::vector<std::string> strings;
  for (int64_t i = 0; i < count; i++) {
    const uint64_t from = start + offset(i), to = start + offset(i + 1);
    user_assert(from <= to && to <= table.size()) << "a string table's offsets lie outside it";
    strings.emplace_back(table.begin() + (ptrdiff_t)from, table.begin() + (ptrdiff_t)to);
  }
  return strings;
}

int64_t num_elements(const Shape& s) {
  // Saturating at 2^62: a run-time-sized value's largest shape (each
  // dimension up to kMaxRunTimeDim) may have more elements than int64 counts.
  const int64_t most = int64_t(1) << 62;
  int64_t n = 1;
  for (int64_t d : s) {
    if (d == 0) return 0;
    n = d > 0 && n > most / d ? most : n * d;
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + "]";
}

std::string dims_str(const DimExprs& d) {
  std::string r = "[";
  for (size_t i = 0; i < d.size(); i++) {
    std::string e = tir::to_string(tir::simplify(d[i]));
    r += (i ? "x" : "") + (tir::as_const_int(d[i]) || e.find(' ') == std::string::npos ? e : "(" + e + ")");
  }
  return r + "]";
}

bool same_dims(const DimExprs& a, const DimExprs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (!tir::provably_equal(a[i], b[i])) return false;
  return true;
}

DimExprs Value::dim_exprs() const {
  if (!dims.empty()) return dims;
  DimExprs d;
  for (int64_t x : shape) d.push_back(tir::Expr(x));
  return d;
}

void Graph::set_dims(int v, const DimExprs& dims) {
  Value& value = values.at((size_t)v);
  value.shape.clear();
  value.dims.clear();
  bool dynamic = false;
  for (auto& d : dims) {
    tir::Expr e = tir::simplify(d);
    if (auto c = tir::as_const_int(e)) {
      value.shape.push_back(*c);
    } else {
      // Its largest value; over unbounded symbols (Symbol::unbounded) it may
      // have none: at most 2^62 then (a run-time-sized value, never planned).
      tir::Interval r = tir::bounds_of(e);
      bool unbounded = false;
      for (int s : tir::symbols_used(e)) unbounded |= symbols[(size_t)s].unbounded;
      internal_assert(unbounded || r.max != std::numeric_limits<int64_t>::max())
          << "value " << value.name << ": dimension " << tir::to_string(e) << " has no finite bound";
      value.shape.push_back(std::clamp<int64_t>(r.max, 0, int64_t(1) << 62));
      dynamic = true;
    }
    value.dims.push_back(e);
  }
  if (!dynamic) value.dims.clear();
}

double Value::const_at(int64_t i) const {
  internal_assert(data && i >= 0 && i < elements()) << "const_at on " << name;
  const uint8_t* p = data->data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::F32: { float v; memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; memcpy(&v, p, 8); return v; }
    case DType::I8: return (int8_t)*p;
    case DType::U8: case DType::Bool: return *p;
    case DType::I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DType::I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DType::I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case DType::U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DType::U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case DType::U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case DType::BF16: { uint16_t b; memcpy(&b, p, 2); uint32_t w = (uint32_t)b << 16; float v; memcpy(&v, &w, 4); return v; }
    case DType::F16: internal_error << "const_at on float16 " << name;
    case DType::String: internal_error << "const_at on string " << name;
    case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ: case DType::U4:
    case DType::I4: case DType::F4E2M1: case DType::F8E8M0: case DType::U2: case DType::I2:
      return narrow_value(dtype, *p);
  }
  return 0;
}

double narrow_value(DType t, uint8_t b) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // Sign, exponent and mantissa formats: exponent bits, mantissa bits, bias.
  int e_bits = 0, m_bits = 0, bias = 0;
  switch (t) {
    case DType::U4: return b & 15;
    case DType::I4: return (int)((b + 8) & 15) - 8;
    case DType::U2: return b & 3;
    case DType::I2: return (int)((b + 2) & 3) - 2;
    case DType::F8E8M0: return b == 0xFF ? nan : std::ldexp(1.0, (int)b - 127);
    case DType::F8E4M3FN: e_bits = 4, m_bits = 3, bias = 7; break;
    case DType::F8E4M3FNUZ: e_bits = 4, m_bits = 3, bias = 8; break;
    case DType::F8E5M2: e_bits = 5, m_bits = 2, bias = 15; break;
    case DType::F8E5M2FNUZ: e_bits = 5, m_bits = 2, bias = 16; break;
    case DType::F4E2M1: e_bits = 2, m_bits = 1, bias = 1, b &= 15; break;
    default: internal_error << "narrow_value of " << dtype_name(t);
  }
  const int bits = 1 + e_bits + m_bits;
  const bool negative = (b >> (bits - 1)) & 1;
  const int e = (b >> m_bits) & ((1 << e_bits) - 1), m = b & ((1 << m_bits) - 1);
  const bool fnuz = t == DType::F8E4M3FNUZ || t == DType::F8E5M2FNUZ;
  if (fnuz && b == 0x80) return nan;
  if (t == DType::F8E4M3FN && (b & 0x7F) == 0x7F) return nan;
  if (t == DType::F8E5M2 && e == 31) return m ? nan : negative ? -inf : inf;
  double v = e == 0 ? std::ldexp((double)m, 1 - bias - m_bits) : std::ldexp((double)((1 << m_bits) + m), e - bias - m_bits);
  return negative ? -v : v;
}

int64_t Value::const_int_at(int64_t i) const {
  if (dtype == DType::I64) {
    internal_assert(data && i >= 0 && i < elements()) << "const_int_at on " << name;
    int64_t v;
    memcpy(&v, data->data() + i * 8, 8);
    return v;
  }
  return (int64_t)const_at(i);
}

std::string Attr::str() const {
  std::ostringstream o;
  auto list = [&](auto& v) {
    o << "[";
    for (size_t i = 0; i < v.size(); i++) o << (i ? ", " : "") << v[i];
    o << "]";
  };
  switch (kind) {
    case Kind::Int: o << i; break;
    case Kind::Float: o << f; break;
    case Kind::String: o << '"' << s << '"'; break;
    case Kind::Ints: list(ints); break;
    case Kind::Floats: list(floats); break;
    case Kind::Strings: list(strings); break;
    case Kind::Tensor: o << "<tensor>"; break;
    case Kind::Graph: o << "<graph>"; break;
  }
  return o.str();
}

int64_t Node::attr_int(const std::string& n, int64_t dflt) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return dflt;
  user_assert(it->second.kind == Attr::Kind::Int) << describe() << ": attribute '" << n << "' must be an int";
  return it->second.i;
}
double Node::attr_float(const std::string& n, double dflt) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return dflt;
  if (it->second.kind == Attr::Kind::Int) return (double)it->second.i;
  user_assert(it->second.kind == Attr::Kind::Float) << describe() << ": attribute '" << n << "' must be a float";
  return it->second.f;
}
std::string Node::attr_string(const std::string& n, const std::string& dflt) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return dflt;
  user_assert(it->second.kind == Attr::Kind::String) << describe() << ": attribute '" << n << "' must be a string";
  return it->second.s;
}
std::vector<int64_t> Node::attr_ints(const std::string& n, std::vector<int64_t> dflt) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return dflt;
  user_assert(it->second.kind == Attr::Kind::Ints) << describe() << ": attribute '" << n << "' must be a list of ints";
  return it->second.ints;
}
std::string Node::describe() const { return op + " node '" + name + "'"; }

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return (int)values.size() - 1;
}

bool Graph::runtime_sized(int v) const {
  for (const tir::Expr& d : values[(size_t)v].dims)
    for (int s : tir::symbols_used(d))
      if (symbols[(size_t)s].unbounded) return true;
  return false;
}

int Graph::add_constant(const std::string& name, DType dtype, Shape shape, std::vector<uint8_t> bytes) {
  Value v;
  v.name = unique_name(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  internal_assert(bytes.size() == v.byte_size()) << "constant " << name << " has " << bytes.size() << " bytes";
  v.data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return add_value(std::move(v));
}

std::string Graph::unique_name(const std::string& base) const {
  std::set<std::string> names;
  for (auto& v : values) names.insert(v.name);
  if (!names.count(base)) return base;
  for (int i = 1;; i++) {
    std::string n = base + "_" + std::to_string(i);
    if (!names.count(n)) return n;
  }
}

std::string Graph::str() const {
  std::ostringstream o;
  auto val = [&](int i) {
    if (i < 0) return std::string("<none>");
    const Value& v = values[i];
    return "%" + v.name + ":" + dtype_name(v.dtype) + (v.is_dynamic() ? dims_str(v.dims) : shape_str(v.shape)) +
           (v.is_constant() ? "(const)" : "");
  };
  o << "graph(opset " << opset << ")";
  for (auto& sym : symbols) o << " " << sym.name << "=" << sym.lo << ".." << sym.hi;
  o << " inputs:";
  for (int i : inputs) o << " " << val(i);
  o << "\n";
  for (auto& n : nodes) {
    o << "  ";
    for (size_t i = 0; i < n.outputs.size(); i++) o << (i ? ", " : "") << val(n.outputs[i]);
    o << " = " << n.op << "[" << n.name << "](";
    for (size_t i = 0; i < n.inputs.size(); i++) o << (i ? ", " : "") << val(n.inputs[i]);
    o << ")";
    if (!n.attrs.empty()) {
      o << " {";
      bool first = true;
      for (auto& [k, a] : n.attrs) {
        o << (first ? "" : ", ") << k << "=" << a.str();
        first = false;
      }
      o << "}";
    }
    o << "\n";
  }
  o << "outputs:";
  for (int i : outputs) o << " " << val(i);
  o << "\n";
  return o.str();
}

bool Graph::defines_symbol(const Node& n) const {
  for (auto& s : symbols)
    for (int o : n.outputs)
      if (s.source_value >= 0 && o == s.source_value) return true;
  return false;
}

}  // namespace kiln::graph
