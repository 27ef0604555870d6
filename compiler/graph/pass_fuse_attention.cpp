// fuse-attention: scaled dot-product attention, as exporters write it,
// becomes one kiln.Attention node, whose CPU kernel (lower/ops_attention.cpp)
// never writes the Sq x Sk score matrix and reads Q, K and V where the
// projections wrote them: the head split and merge (Split, Reshape,
// Transpose) become strides of the kernel instead of kernels of their own.
//
//   S = MatMul(Q, Kt)   [S = Div(S, c) | Mul(S, c)]   [S = Add(S, M)]
//   P = Softmax(S, axis = last)      O = MatMul(P, V)
//   [O = Transpose(O, perm)]  [O = Reshape(O) ...]
//
// This is torch's `softmax(q @ k.transpose(-2, -1) / sqrt(d) [+ mask]) @ v`
// and the form HF-style exporters write. Q, Kt and V are followed back
// through Transpose, Reshape-like nodes (splitting a dimension) and Split to
// the value that holds them (the projection's output); each becomes a view:
// an offset and one stride per logical dimension [batch, head, row, column].
// The result is written through the Transpose and Reshapes that merge the
// heads, when they are its only readers.
//
// Conditions: float32; constant batch and head counts and head widths (at
// most 256), the sequence lengths possibly run-time dimensions (then the
// node's "q_rows" / "k_rows" name the input dimension holding each), every
// stride a view needs a constant; 2 to 4 dimensions with equal batch
// dimensions on Q, K and V; c a scalar constant; M float32 and numpy-
// broadcastable to the scores; S, P and the merge's intermediate values read
// only inside the pattern and not model outputs; no run-time If guards.
// The kernel has a CPU and a GPU form (lower/ops_attention.cpp); the pass
// runs where PassEnvironment::attention_kernel says the kernel pays (CPU
// targets, and Vulkan with --vulkan-shared-memory=on).
#include "graph/passes.h"
#include "tir/simplify.h"

namespace kiln::graph {

namespace {

constexpr int kRank = 4;  // logical dimensions: batch, head, row, column
// The kernel's scratch grows with the head width (a transposed key block of
// D x 2 vectors at least): wider heads keep the plain operators.
constexpr int64_t kMaxHeadDim = 256;
// The least run-time sequence length (its range's lower bound) that fuses.
constexpr int64_t kMinRunTimeLength = 32;

using tir::Expr;

const int64_t* constant(const Expr& e) { return tir::as_const_int(e); }
bool is_one(const Expr& e) { return constant(e) && *constant(e) == 1; }

// Row-major strides of dimensions (expressions where dimensions are
// known only at run time).
DimExprs contiguous_strides(const Graph& g, const DimExprs& d) {
  DimExprs st(d.size(), Expr(1));
  for (size_t i = d.size(); i-- > 1;) st[i - 1] = g.canonical(st[i] * d[i]);
  return st;
}

// A stride as a constant, or false when it is known only at run time.
bool constant_stride(const Expr& e, int64_t* out) {
  if (!constant(e)) return false;
  *out = *constant(e);
  return true;
}

// Where each of the 4 logical dimensions of a tensor lies in a value `base`
// (contiguous, dimensions `dims`): logical index i_k adds i_k * mult[k] to
// the coordinate of base dimension dim[k] (-1: a unit dimension), and
// offset[e] is added to coordinate e.
struct DimMap {
  int base = -1;                // the value read
  DimExprs dims;                // its dimensions
  int dim[kRank];               // base dimension of each logical one, or -1
  int64_t mult[kRank];          // its multiplier within that dimension
  std::vector<int64_t> offset;  // per base dimension

  // The flat view [offset, stride_0, .., stride_3], with `swap` exchanging
  // the last two logical dimensions; false if a stride it needs is known
  // only at run time.
  bool view(const Graph& g, bool swap, std::vector<int64_t>* v) const {
    DimExprs cs = contiguous_strides(g, dims);
    v->assign(kRank + 1, 0);
    for (size_t e = 0; e < dims.size(); e++) {
      int64_t st = 0;
      if (offset[e] && !constant_stride(cs[e], &st)) return false;
      (*v)[0] += offset[e] * st;
    }
    for (int k = 0; k < kRank; k++) {
      int64_t st = 0;
      if (dim[k] >= 0 && !constant_stride(cs[dim[k]], &st)) return false;
      (*v)[k + 1] = dim[k] < 0 ? 0 : mult[k] * st;
    }
    if (swap) std::swap((*v)[3], (*v)[4]);
    return true;
  }
};

// A value read as the logical [B, H, rows, cols] tensor: its own dimensions,
// right-aligned (a missing batch or head dimension has size 1).
DimMap identity_map(const Graph& g, int v) {
  DimMap m;
  m.base = v;
  m.dims = g.values[v].dim_exprs();
  m.offset.assign(m.dims.size(), 0);
  int r = (int)m.dims.size();
  for (int k = 0; k < kRank; k++) {
    int e = r - kRank + k;
    m.dim[k] = e >= 0 && !is_one(m.dims[e]) ? e : -1;
    m.mult[k] = 1;
  }
  return m;
}

// Groups of the output dimensions `cs` of a Reshape-like node that split one
// input dimension of `us` each (unit dimensions on either side aside; a run-
// time dimension only maps to the same one): to[d] is the input dimension
// of output dimension d and factor[d] its multiplier there. False for a
// merge of input dimensions (no single stride).
bool split_groups(const Graph& g, const DimExprs& us, const DimExprs& cs, std::vector<int>* to,
                  std::vector<int64_t>* factor) {
  to->assign(cs.size(), -1);
  factor->assign(cs.size(), 0);
  size_t j = 0;
  for (size_t e = 0; e < us.size(); e++) {
    if (is_one(us[e])) continue;
    while (j < cs.size() && is_one(cs[j])) j++;
    if (j == cs.size()) return false;
    if (!constant(us[e]) || !constant(cs[j])) {  // a run-time dimension: the same one on both sides
      if (!g.same_dims({us[e]}, {cs[j]})) return false;
      (*to)[j] = (int)e;
      (*factor)[j++] = 1;
      continue;
    }
    std::vector<size_t> group;
    int64_t prod = 1;
    while (j < cs.size() && prod < *constant(us[e])) {
      if (!constant(cs[j])) return false;
      if (*constant(cs[j]) != 1) {
        group.push_back(j);
        prod *= *constant(cs[j]);
      }
      j++;
    }
    if (prod != *constant(us[e])) return false;
    int64_t f = 1;
    for (size_t gi = group.size(); gi-- > 0;) {
      (*to)[group[gi]] = (int)e;
      (*factor)[group[gi]] = f;
      f *= *constant(cs[group[gi]]);
    }
  }
  for (; j < cs.size(); j++)
    if (!is_one(cs[j])) return false;
  return true;
}

// Moves `m` from node p's output (value m.base) to its input through a
// Transpose, a Reshape-like node that splits dimensions, or a Split; false
// (m unchanged) for anything else.
bool step_back(const Graph& g, const Node& p, DimMap& m) {
  if (p.inputs.empty() || p.inputs[0] < 0) return false;
  int u = p.inputs[0];
  const DimExprs us = g.values[u].dim_exprs();
  const DimExprs& cs = m.dims;
  DimMap n = m;
  n.base = u;
  n.dims = us;
  n.offset.assign(us.size(), 0);
  if (p.is(Op::Transpose)) {
    std::vector<int64_t> perm = p.attr_ints("perm", {});
    if (perm.empty())
      for (size_t i = us.size(); i-- > 0;) perm.push_back((int64_t)i);
    if (perm.size() != cs.size()) return false;
    for (size_t k = 0; k < cs.size(); k++) n.offset[perm[k]] = m.offset[k];
    for (int k = 0; k < kRank; k++)
      if (m.dim[k] >= 0) n.dim[k] = (int)perm[m.dim[k]];
  } else if (p.is(Op::Split)) {
    int64_t axis = p.attr_int("axis", 0);
    if (axis < 0) axis += (int64_t)us.size();
    if (axis < 0 || axis >= (int64_t)us.size() || us.size() != cs.size()) return false;
    int64_t start = 0;
    bool found = false;
    for (int o : p.outputs) {
      if (o == m.base) {
        found = true;
        break;
      }
      if (o < 0 || !constant(g.values[o].dim_exprs()[axis])) return false;
      start += *constant(g.values[o].dim_exprs()[axis]);
    }
    if (!found) return false;
    n.offset = m.offset;
    n.offset[axis] += start;
  } else if (p.traits().role == OpRole::Reshape) {
    std::vector<int> to;
    std::vector<int64_t> factor;
    if (!split_groups(g, us, cs, &to, &factor)) return false;
    for (size_t d = 0; d < cs.size(); d++) {
      if (to[d] < 0 && m.offset[d] != 0) return false;
      if (to[d] >= 0) n.offset[to[d]] += m.offset[d] * factor[d];
    }
    for (int k = 0; k < kRank; k++) {
      if (m.dim[k] < 0) continue;
      if (to[m.dim[k]] < 0) return false;
      n.dim[k] = to[m.dim[k]];
      n.mult[k] = m.mult[k] * factor[m.dim[k]];
    }
  } else {
    return false;
  }
  m = n;
  return true;
}

// The view of value v followed back as far as views go.
DimMap trace_back(const Graph& g, int v) {
  DimMap m = identity_map(g, v);
  while (m.base >= 0 && g.values[m.base].producer >= 0) {
    const Value& bv = g.values[m.base];
    if (bv.dtype != DType::F32) break;
    const Node& p = g.nodes[bv.producer];
    if (!p.guards.empty() || !step_back(g, p, m)) break;
  }
  return m;
}

// The base dimension holding logical dimension k of m, when it holds
// exactly that extent (multiplier 1): a run-time row count the kernel reads
// from its input's dimensions. -1 otherwise.
int extent_dim(const Graph& g, const DimMap& m, int k, const Expr& extent) {
  if (m.dim[k] < 0 || m.mult[k] != 1 || !g.same_dims({m.dims[m.dim[k]]}, {extent})) return -1;
  return m.dim[k];
}

bool f32(const Graph& g, int v) { return v >= 0 && g.values[v].dtype == DType::F32; }

// The batch dimensions of a MatMul operand (all but the last two).
DimExprs batch_of(const DimExprs& s) { return s.size() > 2 ? DimExprs(s.begin(), s.end() - 2) : DimExprs(); }

void set_ints(Node& n, const char* name, const std::vector<int64_t>& v) {
  n.attrs[name].kind = Attr::Kind::Ints;
  n.attrs[name].ints = v;
}

// The node producing v if it is an `op` node without guards whose output
// is read only by node `reader`, else -1.
int inner_producer(const Graph& g, const std::vector<int>& uses, int v, Op op, int reader) {
  int p = v >= 0 ? g.values[v].producer : -1;
  if (p < 0 || !g.nodes[p].is(op) || !g.nodes[p].guards.empty() || only_reader(g, uses, v) != reader) return -1;
  return p;
}

// Div(s, c) or Mul(s, c) / Mul(c, s) with c a scalar constant: the input s
// and the factor, or -1.
int scaled_input(const Graph& g, const Node& n, double* factor) {
  double c = 0;
  if (n.is(Op::Div) && scalar_input(g, n, 1, &c) && c != 0) {
    *factor = 1.0 / c;
    return n.inputs[0];
  }
  if (!n.is(Op::Mul)) return -1;
  int side = scalar_input(g, n, 1, &c) ? 0 : scalar_input(g, n, 0, &c) ? 1 : -1;
  if (side < 0) return -1;
  *factor = c;
  return n.inputs[side];
}

// The scores before the Softmax, followed back: [Add(., M)] [Div/Mul(., c)]
// MatMul(Q, Kt). Fills the nodes absorbed (reader order), the mask value
// (-1: none) and the scale; returns the MatMul node, or -1.
int match_scores(const Graph& g, const std::vector<int>& uses, int softmax, std::vector<int>& absorbed, int* mask,
                 double* scale) {
  int reader = softmax, s = g.nodes[softmax].inputs[0];
  *mask = -1;
  *scale = 1.0;
  // Whether value v is the scores (a MatMul, maybe scaled) read by `by`.
  auto qk_at = [&](int v, int by) {
    double f;
    int sc = -1;
    for (Op op : {Op::Div, Op::Mul})
      if (sc < 0) sc = inner_producer(g, uses, v, op, by);
    int x = sc >= 0 ? scaled_input(g, g.nodes[sc], &f) : v;
    return inner_producer(g, uses, x, Op::MatMul, sc >= 0 ? sc : by) >= 0;
  };
  int add = inner_producer(g, uses, s, Op::Add, reader);
  if (add >= 0 && g.nodes[add].inputs.size() == 2) {
    const Node& a = g.nodes[add];
    int side = qk_at(a.inputs[0], add) ? 0 : qk_at(a.inputs[1], add) ? 1 : -1;
    if (side < 0) return -1;
    *mask = a.inputs[1 - side];
    absorbed.push_back(add);
    reader = add;
    s = a.inputs[side];
  }
  for (Op op : {Op::Div, Op::Mul}) {
    int sc = inner_producer(g, uses, s, op, reader);
    double f = 1.0;
    int x = sc >= 0 ? scaled_input(g, g.nodes[sc], &f) : -1;
    if (x < 0) continue;
    *scale = f;
    absorbed.push_back(sc);
    reader = sc;
    s = x;
    break;
  }
  int qk = inner_producer(g, uses, s, Op::MatMul, reader);
  if (qk >= 0) absorbed.push_back(qk);
  return qk;
}

}  // namespace

bool pass_fuse_attention(Graph& g, PassContext& ctx) {
  if (!ctx.env.attention_kernel) return false;
  std::vector<int> uses = use_counts(g);
  NodeRemoval r(g);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    // Anchor: O = MatMul(P, V) with P = Softmax(S).
    const Node& pv = g.nodes[i];
    if (r.remove[i] || !pv.is(Op::MatMul) || pv.inputs.size() != 2 || pv.outputs.size() != 1 || !pv.guards.empty()) continue;
    int p = pv.inputs[0], o = pv.outputs[0], vv = pv.inputs[1];
    int softmax = inner_producer(g, uses, p, Op::Softmax, (int)i);
    if (softmax < 0 || !f32(g, p) || !f32(g, o) || !f32(g, vv)) continue;
    const Node& sm = g.nodes[softmax];
    const DimExprs ps = g.values[p].dim_exprs();
    int64_t rank = (int64_t)ps.size(), axis = sm.attr_int("axis", g.opset < 13 ? 1 : -1);
    if (rank < 2 || rank > kRank || (axis != -1 && axis != rank - 1)) continue;
    std::vector<int> absorbed = {softmax};
    int mask = -1;
    double scale = 1.0;
    int qk = match_scores(g, uses, softmax, absorbed, &mask, &scale);
    if (qk < 0) continue;
    int q = g.nodes[qk].inputs[0], kt = g.nodes[qk].inputs[1];
    if (!f32(g, q) || !f32(g, kt) || (mask >= 0 && !f32(g, mask))) continue;
    const DimExprs qs = g.values[q].dim_exprs(), ks = g.values[kt].dim_exprs(), vs = g.values[vv].dim_exprs();
    if ((int64_t)qs.size() != rank || ks.size() != qs.size() || vs.size() != qs.size()) continue;
    // Batch and head counts and the head widths are constants; only the
    // row and key counts may be known at run time alone.
    const Expr sq = qs[rank - 2], sk = ks[rank - 1];
    bool ok = g.same_dims(batch_of(qs), batch_of(ks)) && g.same_dims(batch_of(qs), batch_of(vs)) &&
              g.same_dims({qs.back()}, {ks[rank - 2]}) && g.same_dims({sk}, {vs[rank - 2]});
    for (const Expr& e : batch_of(qs)) ok &= constant(e) && *constant(e) >= 1;
    for (const Expr& e : {qs.back(), vs.back()}) ok &= constant(e) && *constant(e) >= 1 && *constant(e) <= kMaxHeadDim;
    // Run-time lengths fuse from 32 up only: the kernel over run-time
    // extents has a fixed cost (~0.07 ms a call on MiniLM's 12 heads, not
    // yet tracked down) that the plain operators beat on a few tokens.
    for (const Expr& e : {sq, sk}) ok &= constant(e) ? *constant(e) >= 1 : tir::bounds_of(e).min >= kMinRunTimeLength;
    // The scores and the result are exactly [batch.., Sq, Sk] and [batch.., Sq, Dv]:
    // a mask that broadcast them wider than Q, K and V is not this pattern.
    DimExprs want_p = batch_of(qs), want_o = batch_of(qs);
    want_p.insert(want_p.end(), {sq, sk});
    want_o.insert(want_o.end(), {sq, vs.back()});
    ok &= g.same_dims(ps, want_p) && g.same_dims(g.values[o].dim_exprs(), want_o);
    if (!ok) continue;
    // The mask broadcasts to the scores [.., Sq, Sk].
    const DimExprs md = mask >= 0 ? g.values[mask].dim_exprs() : DimExprs();
    bool broadcasts = md.size() <= ps.size();
    for (size_t d = 0; broadcasts && d < md.size(); d++)
      broadcasts = is_one(md[md.size() - 1 - d]) || g.same_dims({md[md.size() - 1 - d]}, {ps[ps.size() - 1 - d]});
    if (!broadcasts) continue;
    // Q, Kt and V where the projections wrote them; Kt [.., D, Sk] is K
    // [.., Sk, D] with its last two logical dimensions swapped.
    DimMap qm = trace_back(g, q), km = trace_back(g, kt), vm = trace_back(g, vv);
    std::vector<int64_t> qv, kv, vview;
    if (!qm.view(g, false, &qv) || !km.view(g, true, &kv) || !vm.view(g, false, &vview)) continue;
    // Run-time row and key counts: which input dimension holds each.
    int q_rows = -1, k_rows = -1;
    if (!constant(sq) && (q_rows = extent_dim(g, qm, 2, sq)) < 0) continue;
    if (!constant(sk) && (k_rows = extent_dim(g, km, 3, sk)) < 0) continue;
    // The result, written through the merge of the heads: [Transpose] [Reshape ...].
    int out = o, last = (int)i;
    DimExprs ostrides = contiguous_strides(g, g.values[o].dim_exprs());
    ostrides.insert(ostrides.begin(), (size_t)(kRank - rank), Expr(0));  // missing dimensions
    auto follow = [&](bool transpose) {
      int reader = only_reader(g, uses, out);
      if (reader < 0 || !g.nodes[reader].guards.empty() || g.nodes[reader].outputs.size() != 1) return false;
      const Node& n = g.nodes[reader];
      int w = n.outputs[0];
      if (!f32(g, w) || (transpose ? !n.is(Op::Transpose) : n.traits().role != OpRole::Reshape)) return false;
      if (transpose) {  // output dimension k is O's dimension perm[k]
        std::vector<int64_t> perm = n.attr_ints("perm", {});
        if ((int64_t)perm.size() != rank) return false;
        DimExprs ts = contiguous_strides(g, g.values[w].dim_exprs());
        for (int64_t k = 0; k < rank; k++) ostrides[kRank - rank + perm[k]] = ts[k];
      }
      absorbed.push_back(last);
      last = reader;
      out = w;
      return true;
    };
    follow(true);
    while (follow(false)) {
    }
    // [B, H, Sq, Sk, D, Dv] at their largest; a missing batch or head dimension is 1.
    const Shape &qb = g.values[q].shape, &kb = g.values[kt].shape, &vb = g.values[vv].shape;
    auto lead = [&](int k) { return k - kRank + rank >= 0 ? qb[k - kRank + rank] : 1; };
    std::vector<int64_t> dims = {lead(0), lead(1), qb[rank - 2], kb[rank - 1], qb[rank - 1], vb[rank - 1]};
    // A unit dimension's stride is 0, as in the input views; the others must be constants.
    const Expr logical[kRank] = {Expr(dims[0]), Expr(dims[1]), sq, vs.back()};
    std::vector<int64_t> ov(kRank + 1, 0);
    bool strided = true;
    for (int k = 0; k < kRank; k++)
      if (!is_one(logical[k])) strided &= constant_stride(ostrides[k], &ov[1 + k]);
    std::vector<int64_t> mv(kRank + 1, 0);
    DimExprs ms = contiguous_strides(g, md);
    for (size_t d = 0; d < md.size(); d++)
      if (!is_one(md[d])) strided &= constant_stride(ms[d], &mv[1 + kRank - md.size() + d]);
    if (!strided) continue;
    Node& at = g.nodes[last];
    std::string name = at.name;
    at = Node();
    at.op = "kiln.Attention";
    at.name = name;
    at.inputs = {qm.base, km.base, vm.base};
    if (mask >= 0) at.inputs.push_back(mask);
    at.outputs = {out};
    set_ints(at, "dims", dims);
    set_ints(at, "q", qv);
    set_ints(at, "k", kv);
    set_ints(at, "v", vview);
    if (q_rows >= 0) set_ints(at, "q_rows", {q_rows});
    if (k_rows >= 0) set_ints(at, "k_rows", {k_rows});
    set_ints(at, "out", ov);
    if (mask >= 0) set_ints(at, "mask", mv);
    at.attrs["scale"].kind = Attr::Kind::Float;
    at.attrs["scale"].f = scale;
    for (int k : absorbed) r.remove[k] = true;
    r.remove[last] = false;
    r.count++;
  }
  return r.finish(g, ctx, "attentions fused");
}

}  // namespace kiln::graph
