// Text: TfIdfVectorizer over integer token ids (strings are not a runtime
// element type yet).
//
// Each row of X ([C] or [N, C] int32/int64 ids) is scanned for the n-grams
// of the pool (pool_int64s, grouped by length: ngram_counts[i] is where the
// (i+1)-grams start), n from min_gram_length to max_gram_length, the tokens
// of an n-gram max_skip_count + 1 apart at most (every gap from 1 to that;
// 1-grams once). Each occurrence of pool n-gram i adds 1 to output column
// ngram_indexes[i]; then mode TF keeps the count, IDF gives weights[i] where
// the count is not 0, TFIDF count * weights[i] (weights default to 1). A
// hand-written kernel, a workgroup per row; the pool and its columns and
// weights are constant buffers it loops over.
#include <algorithm>
#include <cstring>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "support/diagnostics.h"

namespace kiln::lower {

using namespace serial;  // NOLINT: the builders are this file's vocabulary

void lower_tfidf_vectorizer(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::DType xt = ctx.in_dtype(0);
  user_assert(xt == graph::DType::I32 || xt == graph::DType::I64)
      << n.describe() << ": kilnc supports TfIdfVectorizer on int32 and int64 token ids only (no string tensors yet)";
  const graph::Shape xs = ctx.in_shape(0), ys = ctx.out_shape(0);
  user_assert(xs.size() == 1 || xs.size() == 2) << n.describe() << ": X must be [C] or [N, C]";
  const int64_t rows = xs.size() == 2 ? xs[0] : 1, C = xs.back();
  const std::string mode = n.attr_string("mode", "");
  user_assert(mode == "TF" || mode == "IDF" || mode == "TFIDF") << n.describe() << ": mode must be TF, IDF or TFIDF";
  const int64_t min_n = n.attr_int("min_gram_length", 0), max_n = n.attr_int("max_gram_length", 0);
  const int64_t max_skip = n.attr_int("max_skip_count", 0);
  std::vector<int64_t> counts = n.attr_ints("ngram_counts", {}), indexes = n.attr_ints("ngram_indexes", {});
  std::vector<int64_t> pool = n.attr_ints("pool_int64s", {});
  std::vector<double> weights = n.has_attr("weights") ? n.attrs.at("weights").floats : std::vector<double>();
  user_assert(!n.has_attr("pool_strings")) << n.describe() << ": pool_strings needs string tensors, not supported yet";
  user_assert(min_n >= 1 && max_n >= min_n && max_skip >= 0 && (int64_t)counts.size() >= max_n)
      << n.describe() << ": needs 1 <= min_gram_length <= max_gram_length <= len(ngram_counts) and max_skip_count >= 0";
  // The pool's n-grams: per length, [first element, first n-gram index, how many).
  struct Section { int64_t element, index, count; };
  std::vector<Section> sections;
  int64_t ngrams = 0;
  for (size_t i = 0; i < counts.size(); i++) {
    int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : (int64_t)pool.size(), len = (int64_t)i + 1;
    user_assert(begin >= 0 && begin <= end && end <= (int64_t)pool.size() && (end - begin) % len == 0)
        << n.describe() << ": ngram_counts does not split pool_int64s into whole n-grams";
    sections.push_back({begin, ngrams, (end - begin) / len});
    ngrams += (end - begin) / len;
  }
  const int64_t cols = ys.back();
  user_assert((int64_t)indexes.size() == ngrams && (weights.empty() || (int64_t)weights.size() == ngrams))
      << n.describe() << ": ngram_indexes (and weights) need one entry per pool n-gram";
  for (int64_t c : indexes) user_assert(c >= 0 && c < cols) << n.describe() << ": an ngram_indexes entry is past the output";
  if (mode != "TF") {  // weighting counts in place needs one pool n-gram per column
    std::vector<int64_t> sorted = indexes;
    std::sort(sorted.begin(), sorted.end());
    user_assert(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
        << n.describe() << ": ngram_indexes must be distinct in " << mode << " mode";
  }
  user_assert(ys.size() == xs.size() && (xs.size() == 1 || ys[0] == rows)) << n.describe() << ": unexpected output shape";
  if (weights.empty()) weights.assign((size_t)ngrams, 1.0);
  // The pool, the columns and the weights as constant buffers.
  auto ints = [&](const std::string& what, const std::vector<int64_t>& v) {
    std::vector<uint8_t> b(std::max<size_t>(v.size(), 1) * 8, 0);
    if (!v.empty()) memcpy(b.data(), v.data(), v.size() * 8);
    return ctx.graph.add_constant(ctx.graph.unique_name(n.name + "." + what), graph::DType::I64,
                                  {(int64_t)std::max<size_t>(v.size(), 1)}, std::move(b));
  };
  std::vector<float> wf(weights.begin(), weights.end());
  std::vector<uint8_t> wb(std::max<size_t>(wf.size(), 1) * 4, 0);
  if (!wf.empty()) memcpy(wb.data(), wf.data(), wf.size() * 4);
  const int pool_v = ints("pool", pool), cols_v = ints("columns", indexes);
  const int weights_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".weights"), graph::DType::F32,
                                               {(int64_t)std::max<size_t>(wf.size(), 1)}, std::move(wb));
  const int in = ctx.input(0), out = ctx.output(0);
  const tir::Type f32 = tir::Float(32), i64 = tir::Int(64);
  ctx.emit_tir("tfidf", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
    tir::Buffer P = bind(pool_v, Access::Read), K = bind(cols_v, Access::Read), W = bind(weights_v, Access::Read);
    Expr row = index_var("row"), c = index_var("c"), i = index_var("i");
    auto y = [&](const Expr& col) { return row * Expr(cols) + col; };
    std::vector<tir::Stmt> body = {loop(c, Expr(cols), tir::Store::make(Y, y(c), tir::make_const(f32, 0)))};
    for (int64_t len = min_n; len <= max_n; len++) {
      const Section& s = sections[(size_t)len - 1];
      if (!s.count) continue;
      // Gaps past the row fit no n-gram: at most C of them (a huge max_skip_count costs nothing).
      const int64_t gaps = len == 1 ? 1 : std::min(max_skip, C) + 1;
      for (int64_t gap = 1; gap <= gaps; gap++) {
        const int64_t starts = C - (len - 1) * gap;
        if (starts <= 0) break;
        Expr start = index_var("start"), g = index_var("g");
        // Pool n-gram g matches the tokens at start, start + gap, ...
        Expr match;
        for (int64_t j = 0; j < len; j++) {
          Expr tok = tir::cast(i64, tir::Load::make(X, row * Expr(C) + start + Expr(j * gap)));
          Expr eq = tir::EQ::make(tok, tir::Load::make(P, Expr(s.element) + g * Expr(len) + Expr(j)));
          match = match.defined() ? (match && eq) : eq;
        }
        Expr col = tir::Load::make(K, Expr(s.index) + g);
        tir::Stmt add = tir::Store::make(Y, y(col), tir::Load::make(Y, y(col)) + tir::make_const(f32, 1));
        body.push_back(loop(start, Expr(starts), loop(g, Expr(s.count), when(match, add))));
      }
    }
    if (mode != "TF") {  // the counts become weights (IDF) or weighted counts (TFIDF)
      Expr col = tir::Load::make(K, i), count = tir::Load::make(Y, y(col)), w = tir::Load::make(W, i);
      Expr v = mode == "IDF" ? select(count > tir::make_const(f32, 0), w, tir::make_const(f32, 0)) : count * w;
      body.push_back(loop(i, Expr(ngrams), tir::Store::make(Y, y(col), v)));
    }
    return workgroups(row, rows, block(body));
  });
}

}  // namespace kiln::lower
