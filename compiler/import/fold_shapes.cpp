#include "import/fold_shapes.h"

#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "graph/op_table.h"
#include "import/expand_functions.h"
#include "import/inline_if.h"
#include "import/unroll_loops.h"
#include "import/static_sequences.h"
#include "import/unroll_loops.h"
#include "import/validate.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

using TP = onnx::TensorProto;
using graph::ImportFold;
using graph::Op;

// A Constant node (its value is a constant at import).
bool is_constant_node(const onnx::NodeProto& n) { return graph::op_traits(n.op_type()).fold == ImportFold::Constant; }

// A small constant: integers (and bools) as int64, floats as double.
struct Const {
  int elem = TP::INT64;         // ONNX element type
  std::vector<int64_t> dims;    // shape
  std::vector<int64_t> i;       // values, integer types
  std::vector<double> f;        // values, float types
  bool is_float() const { return elem == TP::FLOAT || elem == TP::DOUBLE || elem == TP::FLOAT16; }
  // The element count, or -1 when a dimension is negative or the product
  // overflows int64 (the model's dims are untrusted).
  int64_t size() const {
    int64_t n = 1;
    for (auto d : dims)
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
    return n;
  }
  double at(int64_t k) const { return is_float() ? f[k] : (double)i[k]; }
  int64_t iat(int64_t k) const { return is_float() ? (int64_t)f[k] : i[k]; }
};

constexpr int64_t kMaxElements = 1 << 22;  // don't materialize anything huge

bool supported_elem(int e) {
  return e == TP::INT64 || e == TP::INT32 || e == TP::INT16 || e == TP::INT8 || e == TP::UINT8 || e == TP::BOOL ||
         e == TP::FLOAT || e == TP::DOUBLE;
}

bool from_proto(const TP& t, Const* out) {
  if (!supported_elem(t.data_type()) || t.data_location() == TP::EXTERNAL) return false;
  Const c;
  c.elem = t.data_type();
  c.dims.assign(t.dims().begin(), t.dims().end());
  int64_t n = c.size();
  if (n < 0 || n > kMaxElements) return false;
  const std::string& raw = t.raw_data();
  auto get_raw = [&](size_t width, auto convert) {
    if (raw.size() != (size_t)n * width) return false;
    for (int64_t k = 0; k < n; k++) convert(raw.data() + k * width);
    return true;
  };
  bool ok = true;
  if (t.has_raw_data()) {
    switch (c.elem) {
      case TP::INT64: ok = get_raw(8, [&](const char* p) { int64_t v; memcpy(&v, p, 8); c.i.push_back(v); }); break;
      case TP::INT32: ok = get_raw(4, [&](const char* p) { int32_t v; memcpy(&v, p, 4); c.i.push_back(v); }); break;
      case TP::INT16: ok = get_raw(2, [&](const char* p) { int16_t v; memcpy(&v, p, 2); c.i.push_back(v); }); break;
      case TP::INT8: ok = get_raw(1, [&](const char* p) { c.i.push_back((int8_t)*p); }); break;
      case TP::UINT8: case TP::BOOL: ok = get_raw(1, [&](const char* p) { c.i.push_back((uint8_t)*p); }); break;
      case TP::FLOAT: ok = get_raw(4, [&](const char* p) { float v; memcpy(&v, p, 4); c.f.push_back(v); }); break;
      case TP::DOUBLE: ok = get_raw(8, [&](const char* p) { double v; memcpy(&v, p, 8); c.f.push_back(v); }); break;
    }
  } else if (c.elem == TP::INT64) c.i.assign(t.int64_data().begin(), t.int64_data().end());
  else if (c.elem == TP::FLOAT) c.f.assign(t.float_data().begin(), t.float_data().end());
  else if (c.elem == TP::DOUBLE) c.f.assign(t.double_data().begin(), t.double_data().end());
  else c.i.assign(t.int32_data().begin(), t.int32_data().end());
  if (!ok || (int64_t)(c.is_float() ? c.f.size() : c.i.size()) != n) return false;
  *out = std::move(c);
  return true;
}

TP to_proto(const Const& c, const std::string& name) {
  TP t;
  t.set_name(name);
  t.set_data_type(c.elem);
  for (auto d : c.dims) t.add_dims(d);
  std::string raw;
  int64_t n = c.size();
  for (int64_t k = 0; k < n; k++) {
    switch (c.elem) {
      case TP::INT64: { int64_t v = c.i[k]; raw.append((const char*)&v, 8); break; }
      case TP::INT32: { int32_t v = (int32_t)c.i[k]; raw.append((const char*)&v, 4); break; }
      case TP::INT16: { int16_t v = (int16_t)c.i[k]; raw.append((const char*)&v, 2); break; }
      case TP::INT8: case TP::UINT8: case TP::BOOL: { char v = (char)c.i[k]; raw.push_back(v); break; }
      case TP::FLOAT: { float v = (float)c.f[k]; raw.append((const char*)&v, 4); break; }
      case TP::DOUBLE: { double v = c.f[k]; raw.append((const char*)&v, 8); break; }
    }
  }
  t.set_raw_data(raw);
  return t;
}

Const make_ints(std::vector<int64_t> dims, std::vector<int64_t> v, int elem = TP::INT64) {
  Const c;
  c.elem = elem;
  c.dims = std::move(dims);
  c.i = std::move(v);
  return c;
}

int64_t attr_i(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  for (auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return dflt;
}
const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) {
  for (auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t norm_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

// Numpy broadcasting of two constants with f(x, y) per element.
bool broadcast2(const Const& a, const Const& b, Const* out, int elem,
                const std::function<void(int64_t ia, int64_t ib, Const& o)>& f) {
  size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> da(rank, 1), db(rank, 1), dout(rank);
  std::copy(a.dims.begin(), a.dims.end(), da.begin() + (rank - a.dims.size()));
  std::copy(b.dims.begin(), b.dims.end(), db.begin() + (rank - b.dims.size()));
  for (size_t d = 0; d < rank; d++) {
    if (da[d] != db[d] && da[d] != 1 && db[d] != 1) return false;
    dout[d] = std::max(da[d], db[d]);
    if (da[d] == 0 || db[d] == 0) dout[d] = 0;
  }
  Const o;
  o.elem = elem;
  o.dims = dout;
  int64_t n = o.size();
  if (n < 0 || n > kMaxElements) return false;
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t idx = rem % dout[d];
      rem /= dout[d];
      ia += (da[d] == 1 ? 0 : idx) * sa;
      ib += (db[d] == 1 ? 0 : idx) * sb;
      sa *= da[d];
      sb *= db[d];
    }
    f(ia, ib, o);
  }
  *out = std::move(o);
  return true;
}

class Folder {
 public:
  explicit Folder(onnx::ModelProto& m) : m_(m), g_(*m.mutable_graph()) {}

  int run_once() {
    collect();
    int folded = 0;
    std::vector<int> remove;
    for (int ni = 0; ni < g_.node_size(); ni++) {
      const onnx::NodeProto& n = g_.node(ni);
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      if (is_constant_node(n) || n.output_size() != 1 || n.output(0).empty()) continue;
      Const r;
      if (!eval(n, &r) || r.size() < 0 || r.size() > kMaxElements) continue;
      consts_[n.output(0)] = r;
      *g_.add_initializer() = to_proto(r, n.output(0));
      remove.push_back(ni);
      folded++;
    }
    for (auto it = remove.rbegin(); it != remove.rend(); ++it) g_.mutable_node()->DeleteSubrange(*it, 1);
    return folded;
  }

 private:
  onnx::ModelProto& m_;
  onnx::GraphProto& g_;
  int64_t opset_ = 13;
  std::map<std::string, Const> consts_;
  std::map<std::string, std::vector<int64_t>> shapes_;  // fully static shapes

  void collect() {
    consts_.clear();
    shapes_.clear();
    for (auto& o : m_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    std::set<std::string> graph_inputs;
    for (auto& in : g_.input()) graph_inputs.insert(in.name());
    for (auto& t : g_.initializer()) {
      Const c;
      // An initializer that is also a graph input can be overridden at run time: not a constant.
      if (!graph_inputs.count(t.name()) && from_proto(t, &c)) consts_[t.name()] = c;
    }
    for (auto& n : g_.node()) {
      const onnx::AttributeProto* v = attr(n, "value");
      Const c;
      if (is_constant_node(n) && v && v->has_t() && from_proto(v->t(), &c)) consts_[n.output(0)] = c;
    }
    shapes_ = static_shapes(g_);
  }

  const Const* in(const onnx::NodeProto& n, int k) {
    if (k >= n.input_size() || n.input(k).empty()) return nullptr;
    auto it = consts_.find(n.input(k));
    return it == consts_.end() ? nullptr : &it->second;
  }
  bool all_const(const onnx::NodeProto& n) {
    for (int k = 0; k < n.input_size(); k++)
      if (!n.input(k).empty() && !in(n, k)) return false;
    return true;
  }

  bool eval(const onnx::NodeProto& n, Const* r) {
    // What to compute: the operator's ImportFold rule (graph/op_table.def).
    const graph::OpTraits& traits = graph::op_traits(n.op_type());
    const Op op = traits.op;
    const ImportFold fold = traits.fold;
    if (fold == ImportFold::None) return false;
    if (fold == ImportFold::Shape || fold == ImportFold::Size) {
      auto it = shapes_.find(n.input(0));
      if (it == shapes_.end()) return false;
      const auto& s = it->second;
      if (fold == ImportFold::Size) {
        int64_t total = 1;
        for (auto d : s) total *= d;
        *r = make_ints({}, {total});
        return true;
      }
      int64_t rank = (int64_t)s.size();
      int64_t start = std::clamp<int64_t>(norm_axis(attr_i(n, "start", 0), rank), 0, rank);
      int64_t end = std::clamp<int64_t>(norm_axis(attr_i(n, "end", rank), rank), start, rank);
      *r = make_ints({end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end));
      return true;
    }
    if (!all_const(n) || n.input_size() == 0) return false;
    const Const* a = in(n, 0);
    if (!a) return false;
    if (fold == ImportFold::Identity) {
      *r = *a;
      return true;
    }
    if (fold == ImportFold::Cast) {
      int to = (int)attr_i(n, "to", 0);
      if (!supported_elem(to)) return false;
      Const c;
      c.elem = to;
      c.dims = a->dims;
      bool to_float = to == TP::FLOAT || to == TP::DOUBLE;
      for (int64_t k = 0; k < a->size(); k++) {
        if (to_float) c.f.push_back(to == TP::FLOAT ? (double)(float)a->at(k) : a->at(k));
        else if (to == TP::BOOL) c.i.push_back(a->at(k) != 0);
        else c.i.push_back(a->iat(k));
      }
      *r = c;
      return true;
    }
    if (fold == ImportFold::Unsqueeze || fold == ImportFold::Squeeze) {
      std::vector<int64_t> axes;
      if (opset_ >= 13) {
        if (const Const* ax = in(n, 1))
          for (int64_t k = 0; k < ax->size(); k++) axes.push_back(ax->iat(k));
      } else if (auto* at = attr(n, "axes")) {
        axes.assign(at->ints().begin(), at->ints().end());
      }
      Const c = *a;
      if (fold == ImportFold::Unsqueeze) {
        int64_t rank = (int64_t)a->dims.size() + (int64_t)axes.size();
        std::vector<bool> is_new(rank, false);
        for (auto x : axes) {
          int64_t p = norm_axis(x, rank);
          if (p < 0 || p >= rank) return false;
          is_new[p] = true;
        }
        c.dims.clear();
        size_t src = 0;
        for (int64_t d = 0; d < rank; d++) c.dims.push_back(is_new[d] ? 1 : a->dims.at(src++));
      } else {
        c.dims.clear();
        int64_t rank = (int64_t)a->dims.size();
        for (int64_t d = 0; d < rank; d++) {
          bool drop = axes.empty() ? a->dims[d] == 1 : false;
          for (auto x : axes) drop |= norm_axis(x, rank) == d;
          if (!drop) c.dims.push_back(a->dims[d]);
        }
      }
      *r = c;
      return true;
    }
    if (fold == ImportFold::Reshape) {
      const Const* sh = in(n, 1);
      auto it = shapes_.find(n.output(0));
      if (!sh || it == shapes_.end()) return false;  // rely on shape inference for the shape
      Const c = *a;
      c.dims = it->second;
      if (c.size() != a->size()) return false;
      *r = c;
      return true;
    }
    if (fold == ImportFold::Concat) {
      int64_t rank = (int64_t)a->dims.size();
      int64_t axis = norm_axis(attr_i(n, "axis", 0), rank);
      if (rank != 1 || axis != 0) return false;  // 1-D shape vectors only
      Const c = *a;
      for (int k = 1; k < n.input_size(); k++) {
        const Const* b = in(n, k);
        if (!b || b->dims.size() != 1 || b->is_float() != a->is_float()) return false;
        c.i.insert(c.i.end(), b->i.begin(), b->i.end());
        c.f.insert(c.f.end(), b->f.begin(), b->f.end());
        c.dims[0] += b->dims[0];
      }
      *r = c;
      return true;
    }
    if (fold == ImportFold::Gather) {
      const Const* idx = in(n, 1);
      if (!idx || a->dims.size() != 1 || attr_i(n, "axis", 0) != 0) return false;
      Const c;
      c.elem = a->elem;
      c.dims = idx->dims;
      for (int64_t k = 0; k < idx->size(); k++) {
        int64_t j = idx->iat(k);
        if (j < 0) j += a->dims[0];
        if (j < 0 || j >= a->dims[0]) return false;
        if (a->is_float()) c.f.push_back(a->f[j]);
        else c.i.push_back(a->i[j]);
      }
      *r = c;
      return true;
    }
    if (fold == ImportFold::Slice) {
      if (a->dims.size() != 1) return false;
      int64_t s, e, step = 1;
      if (opset_ < 10) {  // starts, ends, axes as attributes; no steps
        const onnx::AttributeProto *st = attr(n, "starts"), *en = attr(n, "ends"), *ax = attr(n, "axes");
        if (!st || !en || st->ints_size() != 1 || en->ints_size() != 1) return false;
        if (ax && (ax->ints_size() != 1 || norm_axis(ax->ints(0), 1) != 0)) return false;
        s = st->ints(0), e = en->ints(0);
      } else {
        const Const *st = in(n, 1), *en = in(n, 2), *ax = in(n, 3), *sp = in(n, 4);
        if (!st || !en || st->size() != 1 || en->size() != 1) return false;
        if (ax && (ax->size() != 1 || norm_axis(ax->iat(0), 1) != 0)) return false;
        step = sp ? sp->iat(0) : 1;
        s = st->iat(0), e = en->iat(0);
      }
      int64_t d = a->dims[0];
      if (step == 0) return false;
      if (s < 0) s += d;
      if (e < 0) e += d;
      Const c;
      c.elem = a->elem;
      // Counted loops: k += step could overflow for a huge step (untrusted).
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        int64_t count = e > s ? (e - s - 1) / step + 1 : 0;
        for (int64_t j = 0, k = s; j < count; j++, k = j < count ? k + step : k)
          a->is_float() ? c.f.push_back(a->f[k]) : c.i.push_back(a->i[k]);
      } else {
        s = std::clamp<int64_t>(s, -1, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        if (step == INT64_MIN) step = -d - 1;  // the same slice: at most one element
        int64_t count = s > e ? (s - e - 1) / -step + 1 : 0;
        for (int64_t j = 0, k = s; j < count; j++, k = j < count ? k + step : k)
          a->is_float() ? c.f.push_back(a->f[k]) : c.i.push_back(a->i[k]);
      }
      c.dims = {(int64_t)(a->is_float() ? c.f.size() : c.i.size())};
      *r = c;
      return true;
    }
    if (fold == ImportFold::ConstantOfShape) {
      if (a->dims.size() != 1) return false;
      Const c;
      c.elem = TP::FLOAT;
      double v = 0;
      if (auto* at = attr(n, "value")) {
        Const val;
        if (!from_proto(at->t(), &val) || val.size() != 1) return false;
        c.elem = val.elem;
        v = val.at(0);
      }
      c.dims.assign(a->i.begin(), a->i.end());
      int64_t total = c.size();
      if (total < 0 || total > kMaxElements) return false;
      if (c.is_float()) c.f.assign(total, v);
      else c.i.assign(total, (int64_t)v);
      *r = c;
      return true;
    }
    if (fold == ImportFold::Range) {
      const Const *lim = in(n, 1), *dl = in(n, 2);
      if (!lim || !dl) return false;
      double s = a->at(0), l = lim->at(0), step = dl->at(0);
      if (step == 0) return false;
      int64_t count = std::max<int64_t>(0, (int64_t)std::ceil((l - s) / step));
      if (count > kMaxElements) return false;
      Const c;
      c.elem = a->elem;
      c.dims = {count};
      for (int64_t k = 0; k < count; k++) {
        if (c.is_float()) c.f.push_back(s + k * step);
        else c.i.push_back(a->iat(0) + k * dl->iat(0));
      }
      *r = c;
      return true;
    }
    // Elementwise arithmetic on small constants.
    if ((fold == ImportFold::Arith || fold == ImportFold::Compare) && n.input_size() == 2) {
      const Const* b = in(n, 1);
      bool cmp = fold == ImportFold::Compare;
      bool fl = a->is_float();
      if (b->is_float() != fl) return false;
      const bool fmod = attr_i(n, "fmod", 0) != 0;
      if (op == Op::Mod && fl && !fmod) return false;  // (not a valid model)
      auto compare = [op](auto x, auto y) -> int64_t {
        switch (op) {
          case Op::Equal: return x == y;
          case Op::Less: return x < y;
          case Op::LessOrEqual: return x <= y;
          case Op::GreaterOrEqual: return x >= y;
          default: return x > y;
        }
      };
      return broadcast2(*a, *b, r, cmp ? (int)TP::BOOL : a->elem, [&](int64_t ia, int64_t ib, Const& o) {
        if (fl) {
          double x = a->f[ia], y = b->f[ib];
          if (cmp) o.i.push_back(compare(x, y));
          else o.f.push_back(op == Op::Add ? x + y : op == Op::Sub ? x - y : op == Op::Mul ? x * y : op == Op::Div ? x / y
                             : op == Op::Mod ? std::fmod(x, y) : op == Op::Max ? std::max(x, y) : std::min(x, y));
        } else {
          int64_t x = a->i[ia], y = b->i[ib];
          // Integer Mod: the divisor's sign (fmod=0, numpy's), or the dividend's (fmod=1, C's).
          auto mod = [&]() -> int64_t {
            if (y == 0 || (y == -1 && x == INT64_MIN)) return 0;
            int64_t m = x % y;
            return !fmod && m != 0 && ((m < 0) != (y < 0)) ? m + y : m;
          };
          if (cmp) o.i.push_back(compare(x, y));
          else o.i.push_back(op == Op::Add ? x + y : op == Op::Sub ? x - y : op == Op::Mul ? x * y
                             : op == Op::Div ? (y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x / y)
                             : op == Op::Mod ? mod() : op == Op::Max ? std::max(x, y) : std::min(x, y));
        }
      });
    }
    // Boolean logic on small constants.
    if (fold == ImportFold::Logic && !a->is_float()) {
      if (op == Op::Not) {
        if (n.input_size() != 1) return false;
        Const c = *a;
        for (auto& v : c.i) v = !v;
        *r = c;
        return true;
      }
      const Const* b = in(n, 1);
      if (n.input_size() != 2 || !b || b->is_float()) return false;
      return broadcast2(*a, *b, r, (int)TP::BOOL, [&](int64_t ia, int64_t ib, Const& o) {
        bool x = a->i[ia] != 0, y = b->i[ib] != 0;
        o.i.push_back(op == Op::And ? (x && y) : op == Op::Or ? (x || y) : (x != y));
      });
    }
    if (fold == ImportFold::Where && n.input_size() == 3) {
      const Const *x = in(n, 1), *y = in(n, 2);
      if (x->is_float() || y->is_float()) return false;
      Const xy;
      if (!broadcast2(*x, *y, &xy, x->elem, [&](int64_t ix, int64_t iy, Const& o) {
            o.i.push_back(x->i[ix]);
            o.i.push_back(y->i[iy]);
          }))
        return false;
      // xy holds (x, y) pairs; select with the broadcast condition.
      Const idx = make_ints(xy.dims, {});
      for (int64_t k = 0; k < xy.size(); k++) idx.i.push_back(k);
      return broadcast2(*a, idx, r, x->elem, [&](int64_t ic, int64_t ik, Const& o) {
        o.i.push_back(a->i[ic] ? xy.i[2 * idx.i[ik]] : xy.i[2 * idx.i[ik] + 1]);
      });
    }
    if (fold == ImportFold::IntUnary && !a->is_float()) {
      Const c = *a;
      for (auto& v : c.i) v = op == Op::Neg ? -v : std::abs(v);
      *r = c;
      return true;
    }
    if (fold == ImportFold::IntReduce && !a->is_float() && n.input_size() == 1 &&
        attr_i(n, "keepdims", 1) == 0 && !attr(n, "axes")) {
      int64_t v = op == Op::ReduceProd ? 1 : 0;
      for (auto x : a->i) v = op == Op::ReduceProd ? v * x : v + x;
      *r = make_ints({}, {v}, a->elem);
      return true;
    }
    return false;
  }
};

// ONNX's shape inference, with shape computations propagated. Where it fails
// (an operator's inference rejects what ONNX Runtime runs, a declared shape
// it cannot merge, a function body it cannot expand) that is a warning: the
// values it typed keep their types, and kilnc's own inference
// (infer_dims.cpp) gives the others theirs (decision 60).
// Returns false when it failed.
bool infer(onnx::ModelProto& model) {
  std::string failure;
  try {
    onnx::ShapeInferenceOptions si(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, guarded_schema_registry(), si);
    return true;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  // Again, every node that can be inferred inferred: the strict pass stopped
  // at its end, with value_info of some values written.
  model.mutable_graph()->clear_value_info();
  user_warning << "ONNX's shape inference failed (" << one_line(failure) << "); kilnc infers those shapes itself";
  try {
    onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, guarded_schema_registry(), si);
  } catch (const std::exception& e) {
    // Not even lenient inference ran: nothing more is typed by ONNX.
    model.mutable_graph()->clear_value_info();
  }
  return false;
}

}  // namespace

std::optional<std::vector<int64_t>> constant_ints(const onnx::TensorProto& t) {
  Const c;
  if (!from_proto(t, &c) || c.is_float()) return std::nullopt;
  return c.i;
}

std::map<std::string, std::vector<int64_t>> static_shapes(const onnx::GraphProto& g) {
  std::map<std::string, std::vector<int64_t>> shapes;
  auto add_shape = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    std::vector<int64_t> dims;
    for (auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes[vi.name()] = dims;
  };
  for (auto& vi : g.input()) add_shape(vi);
  for (auto& vi : g.value_info()) add_shape(vi);
  for (auto& vi : g.output()) add_shape(vi);
  for (auto& t : g.initializer()) shapes[t.name()] = std::vector<int64_t>(t.dims().begin(), t.dims().end());
  return shapes;
}

int fold_shape_computations(onnx::ModelProto& model, RunTimeIfs* run_time_ifs, bool* inference_failed) {
  int total = 0;
  for (int round = 0; round < 32; round++) {
    if (!infer(model) && inference_failed) *inference_failed = true;
    int folded = expand_functions(model);  // operators kilnc lacks, as ONNX's function bodies (expand_functions.h)
    folded += Folder(model).run_once();
    folded += unroll_static_sequences(model);  // lists of tensors known at compile time (static_sequences.h)
    folded += unroll_static_loops(model);      // Loop and Scan with compile-time trip counts (unroll_loops.h)
    folded += inline_constant_ifs(model, run_time_ifs);  // a condition folded just now picks its branch
    total += folded;
    if (folded == 0) break;
    model.mutable_graph()->clear_value_info();  // stale: recomputed by the next inference
  }
  return total;
}

}  // namespace kiln
