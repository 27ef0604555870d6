#include "codegen/codegen_glsl.h"

#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "support/diagnostics.h"
#include "tir/ir_visitor.h"

namespace kiln {
namespace {

using namespace tir;

// Helpers every shader may call (unused ones are removed by the optimizer).
// min/max keep the IR's select semantics (a NaN operand picks the other);
// integer division and remainder round toward negative infinity; float
// division is correctly rounded (Vulkan lets a GPU's OpFDiv be 2.5 ulp off:
// NVIDIA's is, and quantization's round(x / scale) then picks the wrong
// integer at ties). kiln_fdiv divides the significands (normalized into
// [1, 2), subnormal operands too), corrects that quotient q to c = q +
// (a - q b) / b, then picks c or its neighbour towards the true quotient by
// their exact remainders (a quotient of floats is never a midpoint), and
// scales the result back by powers of two (exact); a subnormal result is
// rounded as an integer count of 2^-149, its ties broken by the sign of the
// remainder. Remainders use Dekker's exact product (not fma: Vulkan does not
// require fma to be fused, and lavapipe's is not), split by masking the low
// 12 bits (no arithmetic a compiler could simplify away). q is hidden from
// the compiler (xor with a zero it cannot know: 65535^3 workgroups are legal
// everywhere, and kiln never dispatches them): NVIDIA's otherwise folds
// a - (a / b) b to 0, `precise` or not, and the correction vanishes (seen on
// an H200, decision 58). Zero, infinite and NaN operands are decided from
// their bits: NVIDIA's hardware quotient flushes subnormals (0 / 1e-45 and
// inf / 3.4e38 came out NaN). kiln_fdiv stays one function, not inlined at
// every division (codegen_spirv.cpp).
const char* kPrelude = R"(float kiln_min(float a, float b) { return a < b ? a : b; }
float kiln_max(float a, float b) { return a > b ? a : b; }
int kiln_div(int a, int b) { int q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
int kiln_mod(int a, int b) { int r = a - (a / b) * b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
vec2 kiln_split(float x) { float h = uintBitsToFloat(floatBitsToUint(x) & 0xFFFFF000u); return vec2(h, x - h); }
float kiln_fdiv_rem(float ma, float mb, vec2 bs, float q) {
  vec2 qs = kiln_split(q);
  precise float p = q * mb;
  precise float r = (ma - p) - (((qs.x * bs.x - p) + qs.x * bs.y + qs.y * bs.x) + qs.y * bs.y);
  return r;
}
uint kiln_significand(uint u, out int e) {
  uint m = u & 0x007FFFFFu;
  e = int((u >> 23) & 255u);
  if (e == 0) { int s = 23 - findMSB(m); m = (m << uint(s)) & 0x007FFFFFu; e = 1 - s; }
  return m | 0x3F800000u;
}
float kiln_fdiv(float a, float b) {
  uint ua = floatBitsToUint(a), ub = floatBitsToUint(b), xa = ua & 0x7FFFFFFFu, xb = ub & 0x7FFFFFFFu;
  uint sign = (ua ^ ub) & 0x80000000u;
  if (xa > 0x7F800000u || xb > 0x7F800000u || (xa == xb && (xa == 0u || xa == 0x7F800000u)))
    return uintBitsToFloat(0x7FC00000u);
  if (xa == 0x7F800000u || xb == 0u) return uintBitsToFloat(sign | 0x7F800000u);
  if (xa == 0u || xb == 0x7F800000u) return uintBitsToFloat(sign);
  uint z = uint(gl_NumWorkGroups.x == 65535u && gl_NumWorkGroups.y == 65535u && gl_NumWorkGroups.z == 65535u);
  int ea, eb;
  float ma = uintBitsToFloat(kiln_significand(ua, ea)), mb = uintBitsToFloat(kiln_significand(ub, eb));
  vec2 bs = kiln_split(mb);
  precise float m = uintBitsToFloat(floatBitsToUint(ma / mb) ^ z);
  precise float c = m + kiln_fdiv_rem(ma, mb, bs, m) / mb;
  float rc = kiln_fdiv_rem(ma, mb, bs, c);
  if (rc != 0.0) {
    float c2 = uintBitsToFloat(floatBitsToUint(c) + (rc > 0.0 ? 1u : 0xFFFFFFFFu));
    float r2 = kiln_fdiv_rem(ma, mb, bs, c2);
    if (abs(r2) < abs(rc)) { c = c2; rc = r2; }
  }
  int d = ea - eb;
  if (d < -126 || (d == -126 && c < 1.0)) {
    int k = d + 149;
    if (k < -1) return uintBitsToFloat(sign);
    precise float t = c * uintBitsToFloat(uint(k + 127) << 23);
    float f = floor(t), n = roundEven(t);
    if (t - f == 0.5 && rc != 0.0) n = rc > 0.0 ? f + 1.0 : f;
    return uintBitsToFloat(sign | uint(n));
  }
  c = c * uintBitsToFloat(uint(min(d, 127) + 127) << 23);
  if (d > 127) c = c * uintBitsToFloat(uint(min(d - 127, 127) + 127) << 23);
  return uintBitsToFloat(sign | floatBitsToUint(c));
}
float kiln_f16(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }
float kiln_bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }
uint kiln_f32_to_bf16(float x) {
  uint b = floatBitsToUint(x);
  return isnan(x) ? ((b >> 16) | 64u) : ((b + 32767u + ((b >> 16) & 1u)) >> 16);
}
float kiln_erf(float x) {
  float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  float p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
  float y = 1.0 - p * exp(-x * x);
  return x < 0.0 ? -y : y;
}
float kiln_tanh(float x) {
  float a = abs(x);
  float t;
  if (a < 0.0625) {
    float s = a * a;
    t = a * (1.0 + s * (-0.33333333 + s * 0.13333333));
  } else {
    float e = exp(-2.0 * a);
    t = (1.0 - e) / (1.0 + e);
  }
  return x < 0.0 ? -t : t;
}
float kiln_pow(float x, float y) {
  if (y == 0.0) return 1.0;
  if (x == 0.0) return y < 0.0 ? uintBitsToFloat(0x7f800000u) : 0.0;
  float r = exp2(y * log2(abs(x)));
  if (x < 0.0) {
    if (floor(y) != y) return uintBitsToFloat(0x7fc00000u);
    if (floor(y * 0.5) != y * 0.5) r = -r;
  }
  return r;
}
)";
const char* kPreludeInt64 = R"(int64_t kiln_div(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0l) != (b < 0l))) ? q - 1l : q; }
int64_t kiln_mod(int64_t a, int64_t b) { int64_t r = a - (a / b) * b; return (r != 0l && ((r < 0l) != (b < 0l))) ? r + b : r; }
)";
const char* kPreludeFloat64 = R"(double kiln_min(double a, double b) { return a < b ? a : b; }
double kiln_max(double a, double b) { return a > b ? a : b; }
)";

// Mesa's lavapipe (llvmpipe) silently ends every loop of a shader invocation
// once 65535 loop iterations have run in it, all loops together (a guard
// against hangs). When one invocation of a kernel would iterate more than
// kLoopBudget times, its innermost loops of constant extent are unrolled in
// the text: fully up to kFullUnroll iterations, else by kPartialUnroll.
constexpr int64_t kLoopBudget = 16384;
constexpr int64_t kFullUnroll = 64;
constexpr int64_t kPartialUnroll = 8;

bool is_invocation_loop(ForKind k) {
  return k == ForKind::WorkgroupX || k == ForKind::WorkgroupY || k == ForKind::WorkgroupZ || k == ForKind::LocalX ||
         k == ForKind::LocalY || k == ForKind::LocalZ;
}

// Loop iterations one invocation runs (saturating; unknown extents count as large).
class IterationCount : public IRVisitor {
 public:
  int64_t total = 0;

 protected:
  using IRVisitor::visit;
  int64_t scale_ = 1;
  void visit(const For* op) override {
    if (is_invocation_loop(op->kind)) return IRVisitor::visit(op);
    auto ext = as_const_int(op->extent);
    int64_t n = ext ? std::max<int64_t>(*ext, 0) : (1 << 20);
    int64_t saved = scale_;
    scale_ = std::min<int64_t>(scale_ * n, int64_t(1) << 40);
    total = std::min<int64_t>(total + scale_, int64_t(1) << 40);
    visit_stmt(op->body);
    scale_ = saved;
  }
};

bool contains_loop(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const For*) override { found = true; }
  } f;
  f.visit_stmt(s);
  return f.found;
}

// How a buffer is declared and accessed.
enum class Storage { Native, Packed8, Packed16, Local };

struct BufferInfo {
  std::string name;  // "b<binding>" or "a<n>"
  Storage storage;
  bool writable = false;
};

// What the shader needs before its text is emitted: whether it computes in
// float64, and the local loops' extents (the workgroup size).
class Survey : public IRVisitor {
 public:
  bool float64 = false;
  std::array<int64_t, 3> local{1, 1, 1};
  bool has_local = false;

  void note(Type t) {
    if (t.is_float() && t.bits == 64) float64 = true;
  }

 protected:
  using IRVisitor::visit;
  void visit(const Cast* op) override {
    note(op->type);
    IRVisitor::visit(op);
  }
  void visit(const FloatImm* op) override { note(op->type); }
  void visit(const Call* op) override {
    note(op->type);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    if (op->buffer->dtype.is_float()) note(op->buffer->dtype);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    int axis = op->kind == ForKind::LocalX ? 0 : op->kind == ForKind::LocalY ? 1 : op->kind == ForKind::LocalZ ? 2 : -1;
    if (axis >= 0) {
      auto ext = as_const_int(op->extent);
      internal_assert(ext && *ext >= 1) << "local loop with a non-constant extent";
      local[axis] = std::max(local[axis], *ext);
      has_local = true;
    }
    IRVisitor::visit(op);
  }
};

class GlslEmitter {
 public:
  explicit GlslEmitter(const KernelDef& k) : k_(k) {}

  GlslKernel emit() {
    Survey survey;
    for (auto& p : k_.params) survey.note(p->dtype);
    survey.visit_stmt(k_.body);
    // int64 index arithmetic only where int64 data is bound (see the header).
    for (auto& p : k_.params) index64_ |= (p->dtype.is_int() || p->dtype.is_uint()) && p->dtype.bits == 64;
    float64_ = survey.float64;
    has_local_ = survey.has_local;
    local_size_ = survey.local;
    IterationCount count;
    count.visit_stmt(k_.body);
    unroll_ = count.total > kLoopBudget;
    GlslKernel out;
    for (int d = 0; d < 3; d++) out.workgroup_size[d] = (uint32_t)survey.local[d];
    internal_assert(survey.local[0] * survey.local[1] * survey.local[2] <= 128)
        << "kernel " << k_.name << ": workgroup of more than 128 invocations";
    if (index64_) out.features |= kGlslFeatureInt64;
    if (float64_) out.features |= kGlslFeatureFloat64;

    std::ostringstream head;
    head << "#version 450\n";
    if (index64_) head << "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    head << "// kernel " << k_.name << "\n";
    head << "layout(local_size_x = " << survey.local[0] << ", local_size_y = " << survey.local[1]
         << ", local_size_z = " << survey.local[2] << ") in;\n";
    for (size_t i = 0; i < k_.params.size(); i++) declare_param(head, i);
    head << kPrelude;
    if (index64_) head << kPreludeInt64;
    if (float64_) head << kPreludeFloat64;
    head << accessors_.str();
    indent_ = 1;
    emit_stmt(k_.body);
    out.source = head.str() + shared_.str() + "void main() {\n" + body_.str() + "}\n";
    return out;
  }

 private:
  const KernelDef& k_;
  bool index64_ = false, float64_ = false, has_local_ = false;
  bool unroll_ = false;  // unroll innermost loops (kLoopBudget)
  std::array<int64_t, 3> local_size_{1, 1, 1};
  int local_depth_ = 0;
  int guarded_locals_ = 0;       // enclosing local loops with an invocation guard
  int64_t shared_bytes_ = 0;     // workgroup memory declared so far
  std::ostringstream shared_;    // its declarations (global scope)
  int indent_ = 0;
  int next_name_ = 0;
  std::ostringstream body_, accessors_;
  std::map<const ExprNode*, std::string> vars_;
  std::map<const BufferNode*, BufferInfo> buffers_;
  std::set<const ExprNode*> hoisted_;  // Let vars declared in the current statement's scope
  std::set<const ExprNode*> wide_vars_;  // 64-bit Let vars declared int64_t (see wide())
  std::map<const ExprNode*, bool> wide_memo_;  // wide() per expression node

  // ----------------------------------------------------------------- types

  std::string type_name(Type t) const {
    switch (t.code) {
      case TypeCode::Bool: return "bool";
      case TypeCode::Int: return t.bits == 64 && index64_ ? "int64_t" : "int";
      case TypeCode::UInt: return t.bits == 64 ? "uint64_t" : "uint";
      case TypeCode::Float: return t.bits == 64 ? "double" : "float";
    }
    internal_error << "no GLSL type for " << t.str();
  }
  std::string index_type() const { return index64_ ? "int64_t" : "int"; }

  // Index arithmetic is 32-bit even where int64 data is bound: a 64-bit
  // expression is *wide* (GLSL int64_t) only when it derives from int64
  // data (a load, a cast from another type, a wide Let); one built from loop
  // variables and constants alone is emitted as int. Buffers are smaller
  // than 2^31 elements, so such values fit; and NVIDIA's driver computed
  // chains of int64 divisions wrongly (tools/gpu_check, docs/vulkan.md).
  bool wide(const Expr& e) {
    Type t = e.type();
    if (!index64_ || t.code != TypeCode::Int || t.bits != 64) return false;
    auto memo = wide_memo_.find(e.get());
    if (memo != wide_memo_.end()) return memo->second;
    bool w = true;
    switch (e->node_type) {
      case NodeType::IntImm: {
        int64_t v = e.as<IntImm>()->value;
        w = v < INT32_MIN || v > INT32_MAX;
        break;
      }
      case NodeType::Var: w = wide_vars_.count(e.get()) > 0; break;
      case NodeType::Cast: {
        const Cast* c = e.as<Cast>();
        w = c->value.type() != t || wide(c->value);
        break;
      }
      case NodeType::Add: w = wide(e.as<Add>()->a) || wide(e.as<Add>()->b); break;
      case NodeType::Sub: w = wide(e.as<Sub>()->a) || wide(e.as<Sub>()->b); break;
      case NodeType::Mul: w = wide(e.as<Mul>()->a) || wide(e.as<Mul>()->b); break;
      case NodeType::Div: w = wide(e.as<Div>()->a) || wide(e.as<Div>()->b); break;
      case NodeType::Mod: w = wide(e.as<Mod>()->a) || wide(e.as<Mod>()->b); break;
      case NodeType::Min: w = wide(e.as<Min>()->a) || wide(e.as<Min>()->b); break;
      case NodeType::Max: w = wide(e.as<Max>()->a) || wide(e.as<Max>()->b); break;
      case NodeType::Select: w = wide(e.as<Select>()->true_value) || wide(e.as<Select>()->false_value); break;
      case NodeType::Let: w = wide(e.as<Let>()->body); break;
      default: w = true; break;  // loads of int64 data, calls
    }
    wide_memo_[e.get()] = w;
    return w;
  }
  // `e` as GLSL int64_t when `as_wide`, else as its own width.
  std::string emit_width(const Expr& e, bool as_wide) {
    std::string x = emit_expr(e);
    bool is64 = index64_ && e.type().code == TypeCode::Int && e.type().bits == 64;
    return as_wide && is64 && !wide(e) ? "int64_t(" + x + ")" : x;
  }
  // The GLSL type of a 64-bit Let or loop variable bound to `value`.
  std::string var_type(Type t, const Expr& value) {
    bool is64 = t.code == TypeCode::Int && t.bits == 64;
    return is64 ? (wide(value) ? "int64_t" : "int") : type_name(t);
  }

  // ------------------------------------------------------------ buffers

  void declare_param(std::ostringstream& os, size_t i) {
    const Buffer& b = k_.params[i];
    BufferInfo info;
    info.name = "b" + std::to_string(i);
    info.writable = k_.access[i] != Access::Read;
    int bits = b->dtype.is_bool() ? 8 : b->dtype.bits;
    info.storage = bits == 8 ? Storage::Packed8 : bits == 16 ? Storage::Packed16 : Storage::Native;
    std::string elem = info.storage == Storage::Native ? type_name(b->dtype) : "uint";
    os << "layout(std430, set = 0, binding = " << i << ") " << (info.writable ? "" : "readonly ") << "buffer B" << i
       << " { " << elem << " d[]; } " << info.name << ";  // " << b->name << ": " << b->dtype.str() << "[" << b->size
       << "]\n";
    if (info.storage != Storage::Native) declare_accessors(info, b->dtype, bits);
    buffers_[b.get()] = info;
  }

  // Per packed buffer (GLSL cannot pass a buffer to a function):
  // kiln_ld_<b>(i) reads element i as its value type, kiln_st_<b>(i, v)
  // writes it with atomics that leave the word's other elements alone.
  void declare_accessors(const BufferInfo& info, Type t, int bits) {
    std::string vt = type_name(t), n = info.name, it = index_type();
    int per_word = 32 / bits;
    std::string mask = bits == 8 ? "0xffu" : "0xffffu";
    std::string word = n + ".d[j / " + std::to_string(per_word) + "]";
    std::string shift = "uint((j % " + std::to_string(per_word) + ") * " + std::to_string(bits) + ")";
    std::string raw = "((" + word + " >> " + shift + ") & " + mask + ")";
    std::string value;
    if (t.is_bool()) value = raw + " != 0u";
    else if (t.is_float()) value = "unpackHalf2x16(" + raw + ").x";
    else if (t.is_uint()) value = raw;
    else value = "int(" + raw + " << " + std::to_string(32 - bits) + ") >> " + std::to_string(32 - bits);
    accessors_ << vt << " kiln_ld_" << n << "(" << it << " i) { int j = int(i); return " << value << "; }\n";
    if (!info.writable) return;
    std::string bitsv;
    if (t.is_bool()) bitsv = "(v ? 1u : 0u)";
    else if (t.is_float()) bitsv = "(packHalf2x16(vec2(v, 0.0)) & " + mask + ")";
    else bitsv = "(uint(v) & " + mask + ")";
    accessors_ << "void kiln_st_" << n << "(" << it << " i, " << vt << " v) { int j = int(i); uint s = " << shift
               << "; atomicAnd(" << word << ", ~(" << mask << " << s)); atomicOr(" << word << ", " << bitsv
               << " << s); }\n";
  }

  const BufferInfo& buffer(const Buffer& b) const {
    auto it = buffers_.find(b.get());
    internal_assert(it != buffers_.end()) << "kernel " << k_.name << ": buffer " << b->name << " not in scope";
    return it->second;
  }
  std::string subscript(const std::string& index) const { return index64_ ? "[int(" + index + ")]" : "[" + index + "]"; }

  // -------------------------------------------------------- expressions

  std::string fresh(const std::string& hint) {
    std::string s = "v" + std::to_string(next_name_++);
    std::string tail;
    for (char c : hint) {
      bool ok = std::isalnum((unsigned char)c);
      if (ok) tail += c;
      else if (!tail.empty() && tail.back() != '_') tail += '_';
      if (tail.size() >= 24) break;
    }
    while (!tail.empty() && tail.back() == '_') tail.pop_back();
    return tail.empty() ? s : s + "_" + tail;
  }

  std::string int_literal(Type t, int64_t v) const {
    if (t.is_bool()) return v ? "true" : "false";
    char buf[64];
    if (t.is_uint()) {
      if (t.bits == 64) snprintf(buf, sizeof buf, "%" PRIu64 "ul", (uint64_t)v);
      else snprintf(buf, sizeof buf, "%" PRIu64 "u", (uint64_t)(v & 0xffffffffll));
      return buf;
    }
    if (t.bits == 64 && index64_ && (v < INT32_MIN || v > INT32_MAX)) {
      if (v == INT64_MIN) return "(-9223372036854775807l - 1l)";
      snprintf(buf, sizeof buf, v < 0 ? "(%" PRId64 "l)" : "%" PRId64 "l", v);
      return buf;
    }
    // 32-bit index arithmetic: constants beyond int's range only bound
    // values that are in range (buffers are smaller than 2^31 bytes).
    v = std::max<int64_t>(std::min<int64_t>(v, INT32_MAX), INT32_MIN);
    if (v == INT32_MIN) return "(-2147483647 - 1)";
    snprintf(buf, sizeof buf, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
    return buf;
  }

  static std::string float_literal(Type t, double v) {
    bool dbl = t.bits == 64;
    std::string s;
    if (std::isnan(v)) s = "uintBitsToFloat(0x7fc00000u)";
    else if (std::isinf(v)) s = v > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
    if (!s.empty()) return dbl ? "double(" + s + ")" : s;
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", dbl ? v : (double)(float)v);
    s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (dbl) s += "lf";
    return v < 0 ? "(" + s + ")" : s;
  }

  std::string bin(const std::string& a, const char* op, const std::string& b) { return "(" + a + " " + op + " " + b + ")"; }

  std::string emit_expr(const Expr& e) {
    switch (e->node_type) {
      case NodeType::IntImm: return int_literal(e.type(), e.as<IntImm>()->value);
      case NodeType::FloatImm: return float_literal(e.type(), e.as<FloatImm>()->value);
      case NodeType::Var: {
        auto it = vars_.find(e.get());
        internal_assert(it != vars_.end()) << "kernel " << k_.name << ": unbound Var " << e.as<Var>()->name;
        return it->second;
      }
      case NodeType::Cast: return emit_cast(e.as<Cast>());
      case NodeType::Add: return arith(e, e.as<Add>()->a, "+", e.as<Add>()->b);
      case NodeType::Sub: return arith(e, e.as<Sub>()->a, "-", e.as<Sub>()->b);
      case NodeType::Mul: return arith(e, e.as<Mul>()->a, "*", e.as<Mul>()->b);
      case NodeType::Div: return div_mod(e.as<Div>()->a, e.as<Div>()->b, true);
      case NodeType::Mod: return div_mod(e.as<Mod>()->a, e.as<Mod>()->b, false);
      case NodeType::Min: return min_max(e.as<Min>()->a, e.as<Min>()->b, true);
      case NodeType::Max: return min_max(e.as<Max>()->a, e.as<Max>()->b, false);
      case NodeType::EQ: return compare(e.as<EQ>()->a, e.as<EQ>()->b, "==");
      case NodeType::NE: return compare(e.as<NE>()->a, e.as<NE>()->b, "!=");
      case NodeType::LT: return compare(e.as<LT>()->a, e.as<LT>()->b, "<");
      case NodeType::LE: return compare(e.as<LE>()->a, e.as<LE>()->b, "<=");
      case NodeType::And: return bin(emit_expr(e.as<And>()->a), "&&", emit_expr(e.as<And>()->b));
      case NodeType::Or: return bin(emit_expr(e.as<Or>()->a), "||", emit_expr(e.as<Or>()->b));
      case NodeType::Not: return "(!" + emit_expr(e.as<Not>()->a) + ")";
      case NodeType::BitAnd: return arith(e, e.as<BitAnd>()->a, "&", e.as<BitAnd>()->b);
      case NodeType::BitOr: return arith(e, e.as<BitOr>()->a, "|", e.as<BitOr>()->b);
      case NodeType::BitXor: return arith(e, e.as<BitXor>()->a, "^", e.as<BitXor>()->b);
      case NodeType::BitNot: {
        // Narrow integers live in 32 bits: unsigned ones keep their upper bits clear
        // (signed ones stay sign-extended).
        Type t = e.type();
        std::string r = "(~" + emit_width(e.as<BitNot>()->a, wide(e)) + ")";
        return t.is_uint() && t.bits < 32 ? "(" + r + " & " + std::to_string((1u << t.bits) - 1) + "u)" : r;
      }
      case NodeType::Select: {
        auto* s = e.as<Select>();
        bool w = wide(e);
        return "(" + emit_expr(s->cond) + " ? " + emit_width(s->true_value, w) + " : " + emit_width(s->false_value, w) +
               ")";
      }
      case NodeType::Load: return emit_load(e.as<Load>());
      case NodeType::Call: return emit_call(e.as<Call>());
      case NodeType::Let: {
        auto* l = e.as<Let>();
        internal_assert(hoisted_.count(l->var.get())) << "kernel " << k_.name << ": Let not hoisted";
        return emit_expr(l->body);
      }
      default: internal_error << "cannot emit " << node_type_name(e->node_type) << " as GLSL";
    }
  }

  std::string arith(const Expr& e, const Expr& a, const char* op, const Expr& b) {
    bool w = wide(e);
    return bin(emit_width(a, w), op, emit_width(b, w));
  }

  std::string div_mod(const Expr& a, const Expr& b, bool is_div) {
    Type t = a.type();
    bool w = wide(a) || wide(b);
    std::string x = emit_width(a, w), y = emit_width(b, w);
    if (t.is_float()) {
      internal_assert(is_div) << "float Mod is not supported";
      return t.bits == 64 ? bin(x, "/", y) : "kiln_fdiv(" + x + ", " + y + ")";
    }
    if (t.is_uint() || t.is_bool()) return bin(x, is_div ? "/" : "%", y);
    return std::string(is_div ? "kiln_div(" : "kiln_mod(") + x + ", " + y + ")";
  }

  std::string min_max(const Expr& a, const Expr& b, bool is_min) {
    Type t = a.type();
    bool w = wide(a) || wide(b);
    std::string x = emit_width(a, w), y = emit_width(b, w);
    if (t.is_bool()) return bin(x, is_min ? "&&" : "||", y);
    if (t.is_float()) return std::string(is_min ? "kiln_min(" : "kiln_max(") + x + ", " + y + ")";
    return std::string(is_min ? "min(" : "max(") + x + ", " + y + ")";
  }

  std::string compare(const Expr& a, const Expr& b, const char* op) {
    bool w = wide(a) || wide(b);
    std::string x = emit_width(a, w), y = emit_width(b, w);
    if (a.type().is_bool() && op[0] == '<') x = "int(" + x + ")", y = "int(" + y + ")";
    return bin(x, op, y);
  }

  std::string emit_cast(const Cast* c) {
    Type from = c->value.type(), to = c->type;
    std::string v = emit_expr(c->value);
    if (to.is_bool()) {
      std::string zero = from.is_float() ? float_literal(from, 0.0) : int_literal(from, 0);
      return from.is_bool() ? v : bin(v, "!=", zero);
    }
    if (from.is_bool()) return "(" + v + " ? " + type_name(to) + "(1) : " + type_name(to) + "(0))";
    if (to.is_float()) {
      std::string r = type_name(to) == type_name(from) ? v : type_name(to) + "(" + v + ")";
      return to.bits == 16 && !(from.is_float() && from.bits == 16) ? "kiln_f16(" + r + ")" : r;
    }
    // To an integer: narrow types wrap like the CPU's truncation.
    if (from.is_float() && to.is_uint()) v = "int(" + v + ")";  // negative floats: defined
    std::string r = type_name(to) == type_name(from) ? v : type_name(to) + "(" + v + ")";
    if (to.bits < 32) {
      if (to.is_uint()) return "(" + r + " & " + std::to_string((1u << to.bits) - 1) + "u)";
      std::string s = std::to_string(32 - to.bits);
      return "((" + r + " << " + s + ") >> " + s + ")";
    }
    return r;
  }

  std::string emit_load(const Load* l) {
    const BufferInfo& b = buffer(l->buffer);
    std::string index = emit_expr(l->index);
    switch (b.storage) {
      case Storage::Native: return b.name + ".d" + subscript(index);
      case Storage::Local: return b.name + subscript(index);
      default: return "kiln_ld_" + b.name + "(" + index + ")";
    }
  }

  std::string emit_call(const Call* c) {
    std::vector<std::string> args;
    bool w = c->type.code == TypeCode::Int && c->type.bits == 64;  // wide() holds every such call wide
    for (auto& a : c->args) args.push_back(emit_width(a, w));
    bool dbl = c->type.is_float() && c->type.bits == 64;
    std::string name;
    switch (c->op) {
      case Intrinsic::Sqrt: return "sqrt(" + args[0] + ")";
      case Intrinsic::Abs: return "abs(" + args[0] + ")";
      case Intrinsic::Floor: return "floor(" + args[0] + ")";
      case Intrinsic::Ceil: return "ceil(" + args[0] + ")";
      case Intrinsic::RoundEven: return "roundEven(" + args[0] + ")";
      case Intrinsic::Exp: name = "exp"; break;
      case Intrinsic::Log: name = "log"; break;
      case Intrinsic::Tanh: name = "kiln_tanh"; break;
      case Intrinsic::Erf: name = "kiln_erf"; break;
      case Intrinsic::Pow: name = "kiln_pow"; break;
      case Intrinsic::Sin: name = "sin"; break;
      case Intrinsic::Cos: name = "cos"; break;
      case Intrinsic::Tan: name = "tan"; break;
      case Intrinsic::Asin: name = "asin"; break;
      case Intrinsic::Acos: name = "acos"; break;
      case Intrinsic::Atan: name = "atan"; break;
      case Intrinsic::Bf16ToF32: return "kiln_bf16_to_f32(uint(" + args[0] + "))";
      case Intrinsic::F32ToBf16: return "kiln_f32_to_bf16(" + args[0] + ")";
      case Intrinsic::FloatToBits:
      case Intrinsic::BitsToFloat: {
        bool to_bits = c->op == Intrinsic::FloatToBits;
        switch (c->args[0].type().bits) {
          case 16:  // float16 values live in a float (the packed buffers' accessors convert)
            return to_bits ? "(packHalf2x16(vec2(" + args[0] + ", 0.0)) & 0xffffu)"
                           : "unpackHalf2x16(uint(" + args[0] + ")).x";
          case 64: return (to_bits ? "doubleBitsToUint64(" : "uint64BitsToDouble(") + args[0] + ")";
          default: return (to_bits ? "floatBitsToUint(" : "uintBitsToFloat(") + args[0] + ")";
        }
      }
      case Intrinsic::DotU8S8:
      case Intrinsic::DotS8S8: {
        // Four byte products: a's bytes zero- (U8S8) or sign-extended, b's sign-extended.
        std::string sum;
        for (int k = 0; k < 4; k++) {
          std::string at = ", " + std::to_string(8 * k) + ", 8)";
          std::string ak = c->op == Intrinsic::DotU8S8 ? "int(bitfieldExtract(uint(" + args[0] + ")" + at + ")"
                                                        : "bitfieldExtract(" + args[0] + at;
          sum += (k ? " + " : "") + ak + " * bitfieldExtract(" + args[1] + at;
        }
        return "(" + sum + ")";
      }
    }
    // Transcendentals are float32 (GLSL has no double versions; the CPU
    // backend computes float64 ones in float32 precision too).
    std::string call = name + "(";
    for (size_t i = 0; i < args.size(); i++) call += (i ? ", " : "") + (dbl ? "float(" + args[i] + ")" : args[i]);
    call += ")";
    return dbl ? "double(" + call + ")" : call;
  }

  // Declares the Let variables of `e` (in evaluation order) before the
  // statement that uses it: GLSL has no let-expressions. Every Let value is
  // safe to evaluate unconditionally (see tir::Select).
  void hoist(const Expr& e) {
    struct Finder : IRVisitor {
      GlslEmitter* self;
      using IRVisitor::visit;
      void visit(const Let* op) override {
        visit_expr(op->value);
        if (!self->hoisted_.count(op->var.get())) {
          std::string name = self->fresh(op->var.as<Var>()->name);
          if (self->wide(op->value)) self->wide_vars_.insert(op->var.get());
          self->line(self->var_type(op->var.type(), op->value) + " " + name + " = " + self->emit_expr(op->value) + ";");
          self->vars_[op->var.get()] = name;
          self->hoisted_.insert(op->var.get());
        }
        visit_expr(op->body);
      }
    } f;
    f.self = this;
    f.visit_expr(e);
  }

  // --------------------------------------------------------- statements

  void line(const std::string& s) {
    for (int i = 0; i < indent_; i++) body_ << "  ";
    body_ << s << "\n";
  }
  void open(const std::string& s) {
    line(s.empty() ? "{" : s + " {");
    indent_++;
  }
  void close() {
    indent_--;
    line("}");
  }

  // Runs `emit` in a new scope after hoisting the Lets of `exprs`.
  template <typename F>
  void with_lets(const std::vector<Expr>& exprs, F emit) {
    bool any = false;
    struct HasLet : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const Let*) override { found = true; }
    } h;
    for (auto& e : exprs) h.visit_expr(e);
    any = h.found;
    if (!any) return emit();
    std::set<const ExprNode*> saved = hoisted_;
    open("");
    for (auto& e : exprs) hoist(e);
    emit();
    close();
    hoisted_ = saved;
  }

  void emit_stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s->node_type) {
      case NodeType::Block:
        for (auto& x : s.as<Block>()->stmts) emit_stmt(x);
        return;
      case NodeType::Store: {
        auto* st = s.as<Store>();
        const BufferInfo& b = buffer(st->buffer);
        internal_assert(b.storage == Storage::Local || !has_local_ || local_depth_ > 0)
            << "kernel " << k_.name << ": store to " << st->buffer->name << " outside the local loops";
        with_lets({st->index, st->value}, [&] {
          Type vt = st->buffer->dtype;
          std::string index = emit_expr(st->index);
          std::string value = emit_width(st->value, vt.code == TypeCode::Int && vt.bits == 64);
          switch (b.storage) {
            case Storage::Native: line(b.name + ".d" + subscript(index) + " = " + value + ";"); break;
            case Storage::Local: line(b.name + subscript(index) + " = " + value + ";"); break;
            default: line("kiln_st_" + b.name + "(" + index + ", " + value + ");");
          }
        });
        return;
      }
      case NodeType::Prefetch: return;  // no cache hint in GLSL compute shaders
      case NodeType::Barrier:
        // Every invocation must reach it: not inside a local loop shorter
        // than the workgroup (whose guard leaves some invocations out).
        internal_assert(guarded_locals_ == 0) << "kernel " << k_.name << ": barrier under a local-loop guard";
        line("memoryBarrierShared();");
        line("barrier();");
        return;
      case NodeType::LetStmt: {
        auto* l = s.as<LetStmt>();
        with_lets({l->value}, [&] {
          std::string name = fresh(l->var.as<Var>()->name);
          open("");
          if (wide(l->value)) wide_vars_.insert(l->var.get());
          line(var_type(l->var.type(), l->value) + " " + name + " = " + emit_expr(l->value) + ";");
          vars_[l->var.get()] = name;
          emit_stmt(l->body);
          vars_.erase(l->var.get());
          close();
        });
        return;
      }
      case NodeType::Allocate: {
        auto* a = s.as<Allocate>();
        internal_assert(a->buffer->size >= 1 && a->buffer->size <= 4096)
            << "kernel " << k_.name << ": local buffer " << a->buffer->name << " of " << a->buffer->size << " elements";
        BufferInfo info{fresh(a->buffer->name), Storage::Local, true};
        std::string decl = type_name(a->buffer->dtype) + " " + info.name + "[" + std::to_string(a->buffer->size) + "];";
        bool shared = a->scope == MemScope::Shared;
        if (shared) {
          // Workgroup memory is declared at global scope; 16 KB is what
          // every Vulkan device offers (maxComputeSharedMemorySize).
          // (Narrow types are declared as 32-bit elements.)
          shared_bytes_ += a->buffer->size * std::max(a->buffer->dtype.bits / 8, 4);
          internal_assert(shared_bytes_ <= 16384) << "kernel " << k_.name << ": more than 16 KB of shared memory";
          shared_ << "shared " << decl << "\n";
        } else {
          open("");
          line(decl);
        }
        buffers_[a->buffer.get()] = info;
        emit_stmt(a->body);
        buffers_.erase(a->buffer.get());
        if (!shared) close();
        return;
      }
      case NodeType::IfThenElse: {
        auto* i = s.as<IfThenElse>();
        with_lets({i->cond}, [&] {
          open("if (" + emit_expr(i->cond) + ")");
          emit_stmt(i->then_case);
          if (i->else_case.defined()) {
            indent_--;
            line("} else {");
            indent_++;
            emit_stmt(i->else_case);
          }
          close();
        });
        return;
      }
      case NodeType::For: emit_for(s.as<For>()); return;
      default: internal_error << "cannot emit " << node_type_name(s->node_type) << " as GLSL";
    }
  }

  // The body once per iteration, each copy in its own scope with the loop
  // variable `mn + index`: all of them up to kFullUnroll iterations, else
  // kPartialUnroll per iteration of an outer loop, then the rest.
  void emit_unrolled(const For* f, const std::string& name, const std::string& mn, int64_t extent) {
    std::string it = "int";
    auto copy = [&](const std::string& index) {
      open("");
      line(it + " " + name + " = " + mn + " + " + index + ";");
      vars_[f->var.get()] = name;
      emit_stmt(f->body);
      close();
    };
    int64_t whole = extent <= kFullUnroll ? 0 : extent / kPartialUnroll;
    if (whole) {
      std::string outer = fresh(f->var.as<Var>()->name + "_u");
      open("for (" + it + " " + outer + " = 0; " + outer + " < " + std::to_string(whole) + "; ++" + outer + ")");
      for (int64_t j = 0; j < kPartialUnroll; j++)
        copy(outer + " * " + std::to_string(kPartialUnroll) + " + " + std::to_string(j));
      close();
    }
    for (int64_t j = whole * kPartialUnroll; j < extent; j++) copy(std::to_string(j));
  }

  void emit_for(const For* f) {
    std::string name = fresh(f->var.as<Var>()->name), it = "int";  // loop variables are narrow (see wide())
    const char* builtin = nullptr;
    bool local = false;
    switch (f->kind) {
      case ForKind::WorkgroupX: builtin = "gl_WorkGroupID.x"; break;
      case ForKind::WorkgroupY: builtin = "gl_WorkGroupID.y"; break;
      case ForKind::WorkgroupZ: builtin = "gl_WorkGroupID.z"; break;
      case ForKind::LocalX: builtin = "gl_LocalInvocationID.x", local = true; break;
      case ForKind::LocalY: builtin = "gl_LocalInvocationID.y", local = true; break;
      case ForKind::LocalZ: builtin = "gl_LocalInvocationID.z", local = true; break;
      default: break;
    }
    with_lets({f->min, f->extent}, [&] {
      std::string mn = emit_expr(f->min), ext = emit_expr(f->extent);
      if (wide(f->min)) mn = "int(" + mn + ")";
      if (wide(f->extent)) ext = "int(" + ext + ")";
      if (builtin) {
        internal_assert(!local || local_depth_ == 0) << "kernel " << k_.name << ": nested local loops";
        open("");
        line(it + " " + name + " = " + it + "(" + builtin + ") + " + mn + ";");
        vars_[f->var.get()] = name;
        // A local loop shorter than the workgroup leaves some invocations idle.
        int axis = f->kind == ForKind::LocalX ? 0 : f->kind == ForKind::LocalY ? 1 : 2;
        bool guard = local && *as_const_int(f->extent) < local_size_[axis];
        if (guard) open("if (" + it + "(" + builtin + ") < " + ext + ")");
        local_depth_ += local;
        guarded_locals_ += guard;
        emit_stmt(f->body);
        guarded_locals_ -= guard;
        local_depth_ -= local;
        if (guard) close();
        close();
      } else if (unroll_ && as_const_int(f->extent) && !contains_loop(f->body)) {
        emit_unrolled(f, name, mn, *as_const_int(f->extent));
      } else {
        std::string end = fresh(f->var.as<Var>()->name + "_end");
        open("");
        line(it + " " + end + " = " + mn + " + " + ext + ";");
        open("for (" + it + " " + name + " = " + mn + "; " + name + " < " + end + "; ++" + name + ")");
        vars_[f->var.get()] = name;
        emit_stmt(f->body);
        close();
        close();
      }
      vars_.erase(f->var.get());
    });
  }
};

}  // namespace

GlslKernel emit_glsl(const KernelDef& kernel) { return GlslEmitter(kernel).emit(); }

}  // namespace kiln
