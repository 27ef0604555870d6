// Gemm and MatMul (numpy semantics: 1-D promotion, broadcast batch dims),
// and Einsum.
//
// Einsum: every letter of the equation is a loop index; the output's letters
// (given after "->", else the ellipsis dims then the letters used once, in
// alphabetical order) index the output, the others are summed:
//   out[o] = sum over the summed letters of prod over inputs of in_k[letters of k].
// A letter repeated within one term reads a diagonal. "..." stands for the
// leading broadcast dims (right-aligned across inputs; size-1 dims broadcast).
#include <algorithm>
#include <cctype>
#include <map>

#include "lower/op_lowering.h"
#include "lower/schedules_cpu.h"
#include "lower/schedules_gpu.h"
#include "support/diagnostics.h"
#include "tir/ir_printer.h"

namespace kiln::lower {
namespace {

// B[k, j] of a weight matrix, packed or not: with kiln_packed_b=nb (set by
// the layout graph pass) B is stored as panels [N/nb, K, nb].
Expr weight_at(const te::Tensor& b, int64_t nb, const Expr& k, const Expr& j) {
  if (!nb) return b({k, j});
  return b({j / Expr(nb), k, j % Expr(nb)});
}

}  // namespace

// Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
void lower_gemm(OpContext& ctx) {
  ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor a = ctx.in(0), b = ctx.in(1);
  const te::Dims ys = ctx.out_dims(0);
  int64_t nb = n.attr_int("kiln_packed_b", 0);
  user_assert(a.ndim() == 2 && b.ndim() == (nb ? 3u : 2u)) << n.describe() << ": A and B must be 2-D";
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
  Expr K = ta ? a.dims()[0] : a.dims()[1];
  user_assert(!dims_differ(nb ? b.dims()[1] : tb ? b.dims()[1] : b.dims()[0], K)) << n.describe() << ": inner dimensions differ";
  tir::Type t = a.dtype();
  te::Tensor ab = te::reduce("gemm", ys, {K}, te::ReduceKind::Sum, t, [=](const Indices& o, const Indices& r) {
    Expr bv = tb ? b({o[1], r[0]}) : weight_at(b, nb, r[0], o[1]);
    return a(ta ? Indices{r[0], o[0]} : Indices{o[0], r[0]}) * bv;
  });
  VectorInfo target = ctx.vector();
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = std::string(ta ? "ta " : "") + (tb ? "tb" : nb ? "packed" : "");
  ctx.schedule_reduction(ab, [target, tuning, variant](te::Stage& s) { schedule_matmul_cpu(s, target, tuning, variant); });
  bool shared = ctx.gpu_shared_memory();
  ctx.schedule_reduction_gpu(ab, [a, b, shared, tuning, variant](te::Stage& s) {
    schedule_matmul_gpu(s, a, b, shared, tuning, variant);
  });
  te::Tensor c = ctx.has_input(2) ? ctx.in(2) : te::Tensor();
  user_assert(!c.defined() || c.ndim() <= 2) << n.describe() << ": C must be at most 2-D";
  ctx.set_output(0, te::compute("gemm_out", ys, [=](const Indices& o) {
    Expr v = alpha == 1.0 ? ab(o) : ab(o) * tir::make_const(t, alpha);
    if (c.defined() && beta != 0.0) {
      Expr cv = c(broadcast_index(c.dims(), o));
      v = v + (beta == 1.0 ? cv : cv * tir::make_const(t, beta));
    }
    return v;
  }));
}

void lower_matmul(OpContext& ctx) {
  // int32 too: MatMulInteger's exact fallback (graph/pass_quantize.cpp).
  if (ctx.in_dtype(0) != graph::DType::I32) ctx.require_float();
  const graph::Node& n = ctx.node();
  te::Tensor a = ctx.in(0), b = ctx.in(1);
  te::Dims as = a.dims(), bs = b.dims();
  const te::Dims ys = ctx.out_dims(0);
  int64_t nb = n.attr_int("kiln_packed_b", 0);
  if (nb) bs = {bs[1], bs[0] * bs[2]};  // panels [N/nb, K, nb] of a [K, N] matrix
  user_assert(!as.empty() && !bs.empty()) << n.describe() << ": inputs must be at least 1-D";
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), Expr(1));
  if (b_vec) bs.push_back(Expr(1));
  Expr K = as.back();
  user_assert(!dims_differ(bs[bs.size() - 2], K)) << n.describe() << ": inner dimensions " << tir::to_string(K) << " and "
                                                  << tir::to_string(bs[bs.size() - 2]) << " differ";
  size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  te::Dims a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  // The result in the promoted (batch..., M, N) form, then viewed as the output shape.
  te::Dims full(ys.begin(), ys.begin() + batch_rank);
  full.push_back(as[as.size() - 2]);
  full.push_back(bs.back());
  user_assert(!dims_differ(te::num_elements(full), te::num_elements(ys))) << n.describe() << ": unexpected output shape";
  te::Tensor mm = te::reduce("matmul", full, {K}, te::ReduceKind::Sum, a.dtype(), [=](const Indices& o, const Indices& r) {
    Indices batch(o.begin(), o.begin() + batch_rank);
    Indices ai = broadcast_index(a_batch, batch), bi = broadcast_index(b_batch, batch);
    ai.push_back(o[batch_rank]);
    ai.push_back(r[0]);
    bi.push_back(r[0]);
    bi.push_back(o[batch_rank + 1]);
    if (a_vec) ai = {r[0]};
    if (b_vec) bi = Indices(bi.begin(), bi.end() - 1);
    if (nb) return a(ai) * weight_at(b, nb, r[0], o[batch_rank + 1]);
    return a(ai) * b(bi);
  });
  VectorInfo target = ctx.vector();
  tune::Tuning* tuning = ctx.tuning();
  std::string variant = nb ? "packed" : "";
  ctx.schedule_reduction(mm, [target, tuning, variant](te::Stage& s) { schedule_matmul_cpu(s, target, tuning, variant); });
  bool shared = ctx.gpu_shared_memory();
  ctx.schedule_reduction_gpu(mm, [a, b, shared, tuning, variant](te::Stage& s) {
    schedule_matmul_gpu(s, a, b, shared, tuning, variant);
  });
  if (a_vec || b_vec) {  // a 1-D operand: drop the promoted unit dimension
    te::Tensor src = mm;
    mm = te::compute("matmul_view", ys, [=](const Indices& o) {
      Indices fi(o.begin(), o.begin() + batch_rank);
      fi.push_back(a_vec ? Expr(0) : o[batch_rank]);
      fi.push_back(b_vec ? Expr(0) : o[o.size() - 1]);
      return src(fi);
    });
  }
  ctx.set_output(0, mm);
}

void lower_einsum(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  std::string eq;
  for (char c : n.attr_string("equation", "")) if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  size_t nin = 0;
  for (size_t i = 0; i < n.inputs.size(); i++) nin += ctx.has_input(i) ? 1 : 0;
  user_assert(terms.size() == nin && nin == n.inputs.size())
      << n.describe() << ": the equation has " << terms.size() << " operands for " << n.inputs.size() << " inputs";
  // Ellipsis dims become the characters '0', '1', ... (right-aligned).
  auto valid = [](char c) { return std::isalpha((unsigned char)c) != 0; };
  int64_t ell = 0;
  std::vector<te::Tensor> ins;
  std::vector<std::string> labels;  // per input, one char per dim
  for (size_t k = 0; k < terms.size(); k++) {
    te::Tensor t = ctx.in(k);
    const std::string& term = terms[k];
    size_t dots = term.find("...");
    int64_t letters = (int64_t)term.size() - (dots == std::string::npos ? 0 : 3);
    int64_t e = dots == std::string::npos ? 0 : (int64_t)t.ndim() - letters;
    user_assert(e >= 0 && (dots != std::string::npos || letters == (int64_t)t.ndim()))
        << n.describe() << ": term '" << term << "' does not match input rank " << t.ndim();
    ell = std::max(ell, e);
    ins.push_back(t);
    labels.push_back(term);
  }
  user_assert(ell <= 10) << n.describe() << ": too many ellipsis dims";
  auto expand = [&](const std::string& term, int64_t e) {
    std::string r;
    size_t dots = term.find("...");
    for (size_t i = 0; i < term.size(); i++) {
      if (i == dots) {
        for (int64_t j = ell - e; j < ell; j++) r += (char)('0' + j);
        i += 2;
        continue;
      }
      user_assert(valid(term[i])) << n.describe() << ": bad character '" << term[i] << "' in the equation";
      r += term[i];
    }
    return r;
  };
  std::map<char, int64_t> extent, count;
  for (size_t k = 0; k < labels.size(); k++) {
    size_t dots = labels[k].find("...");
    int64_t letters = (int64_t)labels[k].size() - (dots == std::string::npos ? 0 : 3);
    labels[k] = expand(labels[k], (int64_t)ins[k].ndim() - letters);
    for (size_t d = 0; d < labels[k].size(); d++) {
      char c = labels[k][d];
      int64_t s = ins[k].shape()[d];
      auto it = extent.find(c);
      if (it == extent.end() || it->second == 1) extent[c] = s;
      else user_assert(s == 1 || s == it->second) << n.describe() << ": label '" << c << "' has sizes " << it->second << " and " << s;
      count[c]++;
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = expand(eq.substr(arrow + 2), ell);
  } else {
    for (int64_t j = 0; j < ell; j++) out += (char)('0' + j);
    for (auto& [c, cnt] : count)
      if (valid(c) && cnt == 1) out += c;
  }
  std::string summed;
  for (auto& [c, e] : extent) {
    (void)e;
    if (out.find(c) == std::string::npos) summed += c;
  }
  graph::Shape os, rshape;
  for (char c : out) {
    user_assert(extent.count(c)) << n.describe() << ": output label '" << c << "' appears in no input";
    os.push_back(extent[c]);
  }
  for (char c : summed) rshape.push_back(extent[c]);
  user_assert(os == ctx.out_shape(0)) << n.describe() << ": computed shape " << graph::shape_str(os) << " differs from "
                                      << graph::shape_str(ctx.out_shape(0));
  tir::Type t = ins[0].dtype();
  for (auto& i : ins) user_assert(i.dtype() == t) << n.describe() << ": inputs must share an element type";
  user_assert(!t.is_bool()) << n.describe() << ": bool inputs are not supported";
  auto product = [=](const Indices& o, const Indices& r) {
    std::map<char, Expr> at;
    for (size_t i = 0; i < out.size(); i++) at[out[i]] = o[i];
    for (size_t i = 0; i < summed.size(); i++) at[summed[i]] = r[i];
    Expr p;
    for (size_t k = 0; k < ins.size(); k++) {
      Indices ii;
      for (size_t d = 0; d < labels[k].size(); d++) ii.push_back(ins[k].shape()[d] == 1 ? Expr(0) : at.at(labels[k][d]));
      Expr v = ins[k](ii);
      p = p.defined() ? p * v : v;
    }
    return p;
  };
  if (rshape.empty()) {
    ctx.set_output(0, te::compute("einsum", os, [=](const Indices& o) { return product(o, {}); }));
  } else {
    ctx.set_output(0, te::reduce("einsum", os, rshape, te::ReduceKind::Sum, t, product));
  }
}

}  // namespace kiln::lower
