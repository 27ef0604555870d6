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
// Conditions: float32; static shapes; heads at most 256 wide; 2 to 4 dimensions with equal batch
// dimensions on Q, K and V; c a scalar constant; M float32 and numpy-
// broadcastable to the scores; S, P and the merge's intermediate values read
// only inside the pattern and not model outputs; no run-time If guards.
// The kernel has a CPU and a GPU form (lower/ops_attention.cpp); the pass
// runs where PassEnvironment::attention_kernel says the kernel pays (CPU
// targets, and Vulkan with --vulkan-shared-memory=on).
#include "graph/passes.h"

namespace kiln::graph {

namespace {

constexpr int kRank = 4;  // logical dimensions: batch, head, row, column
// The kernel's scratch grows with the head width (a transposed key block of
// D x 2 vectors at least): wider heads keep the plain operators.
constexpr int64_t kMaxHeadDim = 256;

// Row-major strides of a shape.
std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Where each of the 4 logical dimensions of a tensor lies in a value `base`
// (contiguous, shape `shape`): logical index i_k adds i_k * mult[k] to the
// coordinate of base dimension dim[k] (-1: a unit dimension), and offset[e]
// is added to coordinate e.
struct DimMap {
  int base = -1;                // the value read
  Shape shape;                  // its shape
  int dim[kRank];               // base dimension of each logical one, or -1
  int64_t mult[kRank];          // its multiplier within that dimension
  std::vector<int64_t> offset;  // per base dimension

  // The flat view: [offset, stride_0, .., stride_3].
  std::vector<int64_t> view() const {
    std::vector<int64_t> cs = contiguous_strides(shape), v(kRank + 1, 0);
    for (size_t e = 0; e < shape.size(); e++) v[0] += offset[e] * cs[e];
    for (int k = 0; k < kRank; k++) v[k + 1] = dim[k] < 0 ? 0 : mult[k] * cs[dim[k]];
    return v;
  }
};

// A value read as the logical [B, H, rows, cols] tensor: its own dimensions,
// right-aligned (a missing batch or head dimension has size 1).
DimMap identity_map(const Graph& g, int v) {
  DimMap m;
  m.base = v;
  m.shape = g.values[v].shape;
  m.offset.assign(m.shape.size(), 0);
  int r = (int)m.shape.size();
  for (int k = 0; k < kRank; k++) {
    int e = r - kRank + k;
    m.dim[k] = e >= 0 && m.shape[e] != 1 ? e : -1;
    m.mult[k] = 1;
  }
  return m;
}

// Moves `m` from node p's output (value m.base) to its input through a
// Transpose, a Reshape-like node that splits dimensions, or a Split; false
// (m unchanged) for anything else.
bool step_back(const Graph& g, const Node& p, DimMap& m) {
  if (p.inputs.empty() || p.inputs[0] < 0) return false;
  int u = p.inputs[0];
  const Shape& us = g.values[u].shape;
  const Shape& cs = m.shape;
  DimMap n = m;
  n.base = u;
  n.shape = us;
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
      if (o < 0) return false;
      start += g.values[o].shape[axis];
    }
    if (!found) return false;
    n.offset = m.offset;
    n.offset[axis] += start;
  } else if (p.traits().role == OpRole::Reshape) {
    // Groups of output dimensions that split one input dimension (unit
    // dimensions on either side aside): coordinate c of output dimension d
    // adds c * (product of the group's later dimensions) to its input one.
    std::vector<int> to(cs.size(), -1);
    std::vector<int64_t> factor(cs.size(), 0);
    size_t j = 0;
    for (size_t e = 0; e < us.size(); e++) {
      if (us[e] == 1) continue;
      std::vector<size_t> group;
      int64_t prod = 1;
      while (j < cs.size() && prod < us[e]) {
        if (cs[j] != 1) {
          group.push_back(j);
          prod *= cs[j];
        }
        j++;
      }
      if (prod != us[e]) return false;  // a merge of input dimensions: no single stride
      int64_t f = 1;
      for (size_t gi = group.size(); gi-- > 0;) {
        to[group[gi]] = (int)e;
        factor[group[gi]] = f;
        f *= cs[group[gi]];
      }
    }
    for (size_t d = 0; d < cs.size(); d++) {
      if (cs[d] == 1 && m.offset[d] != 0) return false;
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
    if (bv.is_dynamic() || bv.dtype != DType::F32) break;
    const Node& p = g.nodes[bv.producer];
    if (!p.guards.empty() || !step_back(g, p, m)) break;
  }
  return m;
}

bool static_f32(const Graph& g, int v) {
  return v >= 0 && g.values[v].dtype == DType::F32 && !g.values[v].is_dynamic();
}

// The batch dimensions of a MatMul operand (all but the last two).
Shape batch_of(const Shape& s) { return s.size() > 2 ? Shape(s.begin(), s.end() - 2) : Shape(); }

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
    if (softmax < 0 || !static_f32(g, p) || !static_f32(g, o) || !static_f32(g, vv)) continue;
    const Node& sm = g.nodes[softmax];
    const Shape& ps = g.values[p].shape;
    int64_t rank = (int64_t)ps.size(), axis = sm.attr_int("axis", g.opset < 13 ? 1 : -1);
    if (rank < 2 || rank > kRank || (axis != -1 && axis != rank - 1)) continue;
    std::vector<int> absorbed = {softmax};
    int mask = -1;
    double scale = 1.0;
    int qk = match_scores(g, uses, softmax, absorbed, &mask, &scale);
    if (qk < 0) continue;
    int q = g.nodes[qk].inputs[0], kt = g.nodes[qk].inputs[1];
    if (!static_f32(g, q) || !static_f32(g, kt) || (mask >= 0 && !static_f32(g, mask))) continue;
    const Shape &qs = g.values[q].shape, &ks = g.values[kt].shape, &vs = g.values[vv].shape;
    if ((int64_t)qs.size() != rank || ks.size() != qs.size() || vs.size() != qs.size()) continue;
    if (batch_of(qs) != batch_of(ks) || batch_of(qs) != batch_of(vs) || qs.back() != ks[ks.size() - 2] ||
        ks.back() != vs[vs.size() - 2] || qs.back() > kMaxHeadDim || vs.back() > kMaxHeadDim)
      continue;
    // The mask broadcasts to the scores [.., Sq, Sk].
    Shape mask_shape = mask >= 0 ? g.values[mask].shape : Shape();
    bool broadcasts = mask_shape.size() <= ps.size();
    for (size_t d = 0; broadcasts && d < mask_shape.size(); d++) {
      int64_t m = mask_shape[mask_shape.size() - 1 - d];
      broadcasts = m == 1 || m == ps[ps.size() - 1 - d];
    }
    if (!broadcasts) continue;
    // Q, Kt and V where the projections wrote them; Kt [.., D, Sk] is K
    // [.., Sk, D] with its last two logical dimensions swapped.
    DimMap qm = trace_back(g, q), km = trace_back(g, kt), vm = trace_back(g, vv);
    std::vector<int64_t> kv = km.view();
    std::swap(kv[3], kv[4]);
    // The result, written through the merge of the heads: [Transpose] [Reshape ...].
    int out = o, last = (int)i;
    std::vector<int64_t> ov = contiguous_strides(g.values[o].shape);
    ov.insert(ov.begin(), (size_t)(kRank - rank) + 1, 0);  // the offset, then missing dimensions
    auto follow = [&](bool transpose) {
      int reader = only_reader(g, uses, out);
      if (reader < 0 || !g.nodes[reader].guards.empty() || g.nodes[reader].outputs.size() != 1) return false;
      const Node& n = g.nodes[reader];
      int w = n.outputs[0];
      if (!static_f32(g, w) || (transpose ? !n.is(Op::Transpose) : n.traits().role != OpRole::Reshape)) return false;
      if (transpose) {  // output dimension k is O's dimension perm[k]
        std::vector<int64_t> perm = n.attr_ints("perm", {});
        if ((int64_t)perm.size() != rank) return false;
        std::vector<int64_t> ts = contiguous_strides(g.values[w].shape);
        for (int64_t k = 0; k < rank; k++) ov[1 + kRank - rank + perm[k]] = ts[k];
      }
      absorbed.push_back(last);
      last = reader;
      out = w;
      return true;
    };
    follow(true);
    while (follow(false)) {
    }
    // [B, H, Sq, Sk, D, Dv]; a missing batch or head dimension is 1.
    auto lead = [&](int k) { return k - kRank + rank >= 0 ? qs[k - kRank + rank] : 1; };
    for (int k = 0; k < kRank; k++)  // a unit dimension's stride is 0, as in the input views
      if ((k == 0 ? lead(0) : k == 1 ? lead(1) : k == 2 ? qs[rank - 2] : vs[rank - 1]) == 1) ov[1 + k] = 0;
    std::vector<int64_t> mv(kRank + 1, 0);
    std::vector<int64_t> ms = contiguous_strides(mask_shape);
    for (size_t d = 0; d < mask_shape.size(); d++)
      if (mask_shape[d] != 1) mv[1 + kRank - mask_shape.size() + d] = ms[d];
    std::vector<int64_t> dims = {lead(0), lead(1), qs[rank - 2], ks[rank - 1], qs[rank - 1], vs[rank - 1]};
    Node& at = g.nodes[last];
    std::string name = at.name;
    at = Node();
    at.op = "kiln.Attention";
    at.name = name;
    at.inputs = {qm.base, km.base, vm.base};
    if (mask >= 0) at.inputs.push_back(mask);
    at.outputs = {out};
    set_ints(at, "dims", dims);
    set_ints(at, "q", qm.view());
    set_ints(at, "k", kv);
    set_ints(at, "v", vm.view());
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
