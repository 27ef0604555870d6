// ONNX Runtime's attention contrib operators (Attention, QAttention,
// MultiHeadAttention, GroupQueryAttention) and RotaryEmbedding, as standard
// operators: the heads split with Reshape/Transpose, softmax(Q K^T scale +
// M) V (the form the fuse-attention graph pass recognizes), M the sum of the
// masks written as ONNX Runtime's CPU kernels build them (contrib_ops.h
// lists the forms).
#include <cmath>

#include "import/contrib_builder.h"
#include "support/diagnostics.h"

namespace kiln::contrib {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

// [B, S, N * H] -> [B, N, S, H]
std::string to_heads(Builder& b, const std::string& x, int64_t heads) {
  return b.transpose(b.reshape(x, std::vector<int64_t>{0, 0, heads, -1}), {0, 2, 1, 3});
}

// [B, N, S, H] -> [B, S, N * H], written as `out`.
void merge_heads(Builder& b, const std::string& x, const std::string& out) {
  b.op("Reshape", {b.transpose(x, {0, 2, 1, 3}), b.i64s({0, 0, -1})}, {}, out);
}

// x [B, Nkv, T, H] with each head repeated `group` times -> [B, heads, T, H]
// (every dimension spelled out: T may be known only at run time).
std::string repeat_heads(Builder& b, const std::string& x, int64_t heads, int64_t group) {
  if (group == 1) return x;
  std::string e = b.op("Expand", {b.unsqueeze(x, {2}), b.i64s({1, 1, group, 1, 1})});
  return b.reshape(e, b.concat({b.dim(x, 0), b.i64s({heads}), b.dim(x, 2), b.dim(x, 3)}, 0));
}

struct Scores {
  std::vector<std::string> bias;  // added to Q K^T scale before the softcap
  std::vector<std::string> mask;  // added after it
  float scale = 0;                // 0: 1 / sqrt(head size)
  float softcap = 0;
  std::string sink;  // [N]: a logit per head the softmax also normalizes over
};

std::string sum(Builder& b, const std::vector<std::string>& terms) {
  std::string s;
  for (const auto& t : terms) s = s.empty() ? t : b.op("Add", {s, t});
  return s;
}

// softmax(q k^T scale + bias [softcap] + mask) v for q [B, N, S, H], k [B, N, T, H], v [B, N, T, Hv].
std::string attend(Builder& b, const std::string& q, const std::string& k, const std::string& v, const Scores& sc) {
  std::string scale = sc.scale != 0 ? b.f32(sc.scale)
                                    : b.op("Reciprocal", {b.op("Sqrt", {b.cast(b.dim_scalar(q, 3), kFloat)})});
  std::string s = b.op("Mul", {b.op("MatMul", {q, b.transpose(k, {0, 1, 3, 2})}), scale});
  std::vector<std::string> terms = sc.bias;
  if (sc.softcap > 0) {
    if (!terms.empty()) s = b.op("Add", {s, sum(b, terms)});
    std::string c = b.f32(sc.softcap);
    s = b.op("Mul", {b.op("Tanh", {b.op("Div", {s, c})}), c});
    terms.clear();
  }
  terms.insert(terms.end(), sc.mask.begin(), sc.mask.end());
  if (!terms.empty()) s = b.op("Add", {s, sum(b, terms)});
  if (sc.sink.empty()) return b.op("MatMul", {b.op("Softmax", {s}, {Attr::i("axis", -1)}), v});
  // The sink as one more column: softmax over [s, sink], then the sink's column dropped.
  std::string col = b.op("Expand", {b.reshape(sc.sink, std::vector<int64_t>{1, -1, 1, 1}),
                                    b.concat({b.slice_c(b.op("Shape", {s}), {0}, {3}, {0}), b.i64s({1})}, 0)});
  std::string p = b.op("Softmax", {b.concat({s, col}, 3)}, {Attr::i("axis", -1)});
  p = b.slice(p, b.i64s({0}), b.dim(s, 3), b.i64s({3}));
  return b.op("MatMul", {p, v});
}

// ONNX Runtime's key padding / mask_index as an additive mask broadcastable
// to [B, N, S, T]: 1-D key lengths (B) or end and start positions (2B), 2-D
// [B, T] and 3-D [B, S, T] masks of 0 (hidden) and 1, 4-D [B, 1, M, M] masks
// read at rows P..P+S and columns 0..T. `batch` is a value whose dimension 0
// is B; S, T and P (the past length) scalars.
std::string padding_mask(Builder& b, const std::string& mask, const std::string& batch, const std::string& S,
                         const std::string& T, const std::string& P, float filter) {
  int r = b.rank(mask, "the mask");
  std::string m = b.cast(mask, kInt64);
  auto bias = [&](const std::string& hidden) { return b.op("Where", {hidden, b.f32(filter), b.f32(0.0f)}); };
  if (r == 1) {
    std::string bn = b.dim(batch, 0);
    int64_t len = b.static_dim(mask, 0), bs = b.static_dim(batch, 0);
    if (len > 0 && bs > 0 && len != bs && len != 2 * bs)
      b.refuse("a 1-D mask of " + std::to_string(len) + " elements for batch " + std::to_string(bs),
               "it takes key lengths (B) and end/start positions (2B)");
    std::string ends = b.slice(m, b.i64s({0}), bn, b.i64s({0}));
    std::string ext = b.concat({m, b.op("Sub", {ends, ends})}, 0);  // (2B) or (B) + zeros
    std::string starts = b.slice(ext, bn, b.op("Mul", {bn, b.i64s({2})}), b.i64s({0}));
    std::string t = b.iota(T);
    std::string past_end = b.op("Not", {b.op("Less", {t, b.unsqueeze(ends, {1})})});
    std::string before = b.op("Less", {t, b.unsqueeze(starts, {1})});
    return b.unsqueeze(bias(b.op("Or", {past_end, before})), {1, 2});
  }
  if (r == 2 || r == 3) {
    std::string hidden = b.op("Not", {b.op("Greater", {m, b.i64(0)})});
    return b.unsqueeze(bias(hidden), r == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1});
  }
  if (r == 4) {
    std::string p1 = b.unsqueeze(P, {0}), t1 = b.unsqueeze(T, {0});
    std::string rows = b.slice(m, b.concat({p1, b.i64s({0})}, 0),
                               b.concat({b.op("Add", {p1, b.unsqueeze(S, {0})}), t1}, 0), b.i64s({2, 3}));
    return bias(b.op("Not", {b.op("Greater", {rows, b.i64(0)})}));
  }
  b.refuse("a mask of rank " + std::to_string(r));
}

// ONNX Runtime's causal mask of Attention and MultiHeadAttention: query row s
// hides keys t > P + s, except the last row (its CPU kernel's loop stops
// before it; for self-attention it hides nothing there anyway). [S, T].
std::string causal_mask(Builder& b, const std::string& S, const std::string& T, const std::string& P) {
  std::string s = b.unsqueeze(b.iota(S), {1});
  std::string hidden = b.op("Greater", {b.iota(T), b.op("Add", {s, P})});
  hidden = b.op("And", {hidden, b.op("Less", {s, b.op("Sub", {S, b.i64(1)})})});
  return b.op("Where", {hidden, b.f32(kLowest), b.f32(0.0f)});
}

// Attention and QAttention after the input projection: qkv [B, S, hq + hk + hv].
void fused_qkv_attention(Builder& b, const std::string& qkv, int mask_in, int past_in, int bias_in) {
  int64_t heads = b.attr_i("num_heads", 0);
  b.check(heads > 0, "attribute num_heads must be positive");
  if (b.attr_i("do_rotary", 0) != 0) b.refuse("do_rotary=1");
  if (b.attr_i("past_present_share_buffer", 0) != 0) b.refuse("past_present_share_buffer=1");
  std::vector<int64_t> sizes = b.attr_ints("qkv_hidden_sizes");
  std::string q, k, v;
  if (sizes.empty()) {
    std::string x = b.reshape(qkv, std::vector<int64_t>{0, 0, 3, heads, -1});
    auto part = [&](int64_t i) { return b.transpose(b.gather(x, b.i64(i), 2), {0, 2, 1, 3}); };
    q = part(0), k = part(1), v = part(2);
  } else {
    b.check(sizes.size() == 3, "qkv_hidden_sizes must have 3 elements");
    for (int64_t s : sizes) b.check(s > 0 && s % heads == 0, "qkv_hidden_sizes must be multiples of num_heads");
    std::vector<std::string> parts = b.split(qkv, 2, sizes);
    q = to_heads(b, parts[0], heads), k = to_heads(b, parts[1], heads), v = to_heads(b, parts[2], heads);
  }
  std::string P = b.i64(0);
  if (b.has(past_in)) {  // [2, B, N, P, H]
    std::string past = b.in(past_in);
    P = b.dim_scalar(past, 3);
    k = b.concat({b.gather(past, b.i64(0), 0), k}, 2);
    v = b.concat({b.gather(past, b.i64(1), 0), v}, 2);
  }
  if (b.wants(1)) b.rename(b.concat({b.unsqueeze(k, {0}), b.unsqueeze(v, {0})}, 0), b.out(1));
  Scores sc;
  sc.scale = b.attr_f("scale", 0.0f);
  std::string S = b.dim_scalar(q, 2), T = b.dim_scalar(k, 2);
  if (b.has(mask_in))
    sc.bias.push_back(padding_mask(b, b.in(mask_in), qkv, S, T, P, b.attr_f("mask_filter_value", -10000.0f)));
  if (b.attr_i("unidirectional", 0) != 0) sc.bias.push_back(causal_mask(b, S, T, P));
  if (bias_in >= 0 && b.has(bias_in)) sc.bias.push_back(b.in(bias_in));
  merge_heads(b, attend(b, q, k, v, sc), b.out(0));
}

void expand_mha(Builder& b) {
  // (query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, past_sequence_length,
  //  cache_indirection) -> (output, present_key, present_value, qk)
  int64_t heads = b.attr_i("num_heads", 0);
  b.check(heads > 0, "attribute num_heads must be positive");
  b.refuse_input(8, "past_sequence_length (a shared past/present buffer)");
  b.refuse_input(9, "cache_indirection (beam search)");
  b.refuse_output(3, "qk");
  std::string query = b.need(0, "query");
  b.require_float(query, "query");
  int rq = b.rank(query, "query");
  std::string q, k, v, P = b.i64(0);
  bool has_bias = b.has(3);
  if (rq == 5) {  // packed QKV [B, S, N, 3, H]
    b.check(!b.has(1) && !b.has(2), "a packed QKV query takes no key and value");
    if (has_bias) b.refuse("a bias with packed QKV");
    auto part = [&](int64_t i) { return b.transpose(b.gather(query, b.i64(i), 3), {0, 2, 1, 3}); };
    q = part(0), k = part(1), v = part(2);
  } else {
    b.check(rq == 3, "query must be 3-D [B, S, hidden] or packed 5-D [B, S, N, 3, H]");
    std::string key = b.need(1, "key");
    int rk = b.rank(key, "key");
    std::string hq;
    if (has_bias) {
      hq = b.dim(query, 2);
      query = b.op("Add", {query, b.slice(b.in(3), b.i64s({0}), hq, b.i64s({0}))});
    }
    q = to_heads(b, query, heads);
    if (rk == 5) {  // packed KV [B, L, N, 2, H]
      b.check(!b.has(2), "a packed KV key takes no value");
      if (has_bias) b.refuse("a bias with packed KV");
      k = b.transpose(b.gather(key, b.i64(0), 3), {0, 2, 1, 3});
      v = b.transpose(b.gather(key, b.i64(1), 3), {0, 2, 1, 3});
    } else if (rk == 4) {  // already projected and split into heads: [B, N, L, H] (the bias is the query's only)
      k = key, v = b.need(2, "value");
      b.check(!b.has(6) && !b.has(7), "key and value in [B, N, L, H] take no past_key and past_value");
    } else {
      b.check(rk == 3, "key must be 3-D, 4-D [B, N, L, H] or packed 5-D");
      std::string value = b.need(2, "value");
      if (has_bias) {
        std::string hk = b.op("Add", {hq, b.dim(key, 2)});
        key = b.op("Add", {key, b.slice(b.in(3), hq, hk, b.i64s({0}))});
        value = b.op("Add", {value, b.slice(b.in(3), hk, b.i64s({INT64_MAX}), b.i64s({0}))});
      }
      k = to_heads(b, key, heads), v = to_heads(b, value, heads);
    }
  }
  if (b.has(6) || b.has(7)) {
    b.check(b.has(6) && b.has(7), "past_key and past_value must be given together");
    P = b.dim_scalar(b.in(6), 2);
    k = b.concat({b.in(6), k}, 2);
    v = b.concat({b.in(7), v}, 2);
  }
  b.rename(k, b.out(1));
  b.rename(v, b.out(2));
  Scores sc;
  sc.scale = b.attr_f("scale", 0.0f);
  std::string S = b.dim_scalar(q, 2), T = b.dim_scalar(k, 2);
  if (b.has(4)) sc.bias.push_back(padding_mask(b, b.in(4), q, S, T, P, b.attr_f("mask_filter_value", -10000.0f)));
  if (b.attr_i("unidirectional", 0) != 0) sc.bias.push_back(causal_mask(b, S, T, P));
  if (b.has(5)) sc.bias.push_back(b.in(5));
  merge_heads(b, attend(b, q, k, v, sc), b.out(0));
}

// Rotary embedding of x [.., S, .., H] (the last dimension rotated): cos and
// sin [.., half] broadcastable against x's leading dimensions; rotates the
// first 2 * half elements of the last dimension (half: a constant when > 0,
// else `half_v`, a [1] tensor), the rest (when `rest`) passed on.
std::string rotate(Builder& b, const std::string& x, const std::string& cos, const std::string& sin, bool interleaved,
                   int64_t half, const std::string& half_v, bool rest) {
  std::string h = half > 0 ? b.i64s({half}) : half_v;
  std::string h2 = half > 0 ? b.i64s({2 * half}) : b.op("Mul", {half_v, b.i64s({2})});
  std::string last = b.i64s({-1});
  std::string x1, x2;
  if (interleaved) {
    x1 = b.slice(x, b.i64s({0}), h2, last, b.i64s({2}));
    x2 = b.slice(x, b.i64s({1}), h2, last, b.i64s({2}));
  } else {
    x1 = b.slice(x, b.i64s({0}), h, last);
    x2 = b.slice(x, h, h2, last);
  }
  std::string real = b.op("Sub", {b.op("Mul", {x1, cos}), b.op("Mul", {x2, sin})});
  std::string imag = b.op("Add", {b.op("Mul", {x2, cos}), b.op("Mul", {x1, sin})});
  std::string y;
  if (interleaved) {
    y = b.concat({b.unsqueeze(real, {-1}), b.unsqueeze(imag, {-1})}, -1);
    y = b.reshape(y, b.concat({b.slice(b.op("Shape", {x1}), b.i64s({0}), b.i64s({-1}), b.i64s({0})), h2}, 0));
  } else {
    y = b.concat({real, imag}, -1);
  }
  if (rest) y = b.concat({y, b.slice(x, h2, b.i64s({INT64_MAX}), last)}, -1);
  return y;
}

void expand_gqa(Builder& b) {
  // (query, key, value, past_key, past_value, seqlens_k, total_sequence_length, cos_cache, sin_cache,
  //  position_ids, attention_bias, head_sink) -> (output, present_key, present_value, output_qk)
  int64_t heads = b.attr_i("num_heads", 0), kv_heads = b.attr_i("kv_num_heads", 0);
  b.check(heads > 0 && kv_heads > 0 && heads % kv_heads == 0,
          "num_heads and kv_num_heads must be positive, num_heads a multiple of kv_num_heads");
  if (b.attr_i("qk_output", 0) != 0) b.refuse("qk_output");
  b.refuse_output(3, "output_qk");
  std::string query = b.need(0, "query");
  b.require_float(query, "query");
  std::string q, k, v;
  int64_t width = b.static_dim(query, 2), head_size = -1;
  if (!b.has(1)) {  // packed [B, S, (N + 2 Nkv) H]
    b.check(!b.has(2), "a packed query takes no value");
    std::string x = b.reshape(query, std::vector<int64_t>{0, 0, heads + 2 * kv_heads, -1});
    std::vector<std::string> parts = b.split(x, 2, {heads, kv_heads, kv_heads});
    q = b.transpose(parts[0], {0, 2, 1, 3}), k = b.transpose(parts[1], {0, 2, 1, 3});
    v = b.transpose(parts[2], {0, 2, 1, 3});
    if (width > 0) head_size = width / (heads + 2 * kv_heads);
  } else {
    q = to_heads(b, query, heads), k = to_heads(b, b.in(1), kv_heads), v = to_heads(b, b.need(2, "value"), kv_heads);
    if (width > 0) head_size = width / heads;
  }
  std::string S = b.dim_scalar(q, 2);
  std::string seqlens = b.cast(b.need(5, "seqlens_k"), kInt64);
  std::string total = b.cast(b.need(6, "total_sequence_length"), kInt64);
  // The first prompt (S == total_sequence_length) has no past; otherwise
  // batch b's past is seqlens_k[b] + 1 - S tokens long.
  std::string first = b.op("Equal", {S, total});
  std::string past_len = b.op("Where", {first, b.i64(0), b.op("Sub", {b.op("Add", {seqlens, b.i64(1)}), S})});
  std::string pb = b.unsqueeze(past_len, {1});                 // [B, 1]
  // (Ranges enter integer arithmetic as [1, n]: ONNX's data propagation
  // rejects a 1-D [n] against [B, 1].)
  std::string pos = b.op("Add", {pb, b.unsqueeze(b.iota(S), {0})});  // [B, S]
  if (b.attr_i("do_rotary", 0) != 0) {
    std::string cos = b.need(7, "cos_cache"), sin = b.need(8, "sin_cache");
    std::string rp = b.has(9) ? b.in(9) : pos;
    int64_t half = b.static_dim(cos, 1);
    bool rest = half > 0 && head_size > 0 && 2 * half < head_size;
    std::string c = b.unsqueeze(b.gather(cos, rp, 0), {1}), s = b.unsqueeze(b.gather(sin, rp, 0), {1});
    bool inter = b.attr_i("rotary_interleaved", 0) != 0;
    std::string hv = half > 0 ? std::string() : b.dim(cos, 1);
    q = rotate(b, q, c, s, inter, half, hv, rest);
    k = rotate(b, k, c, s, inter, half, hv, rest);
  }
  if (b.has(3) || b.has(4)) {
    // present = past[:past_len] | new | zeros, per batch: the new rows go
    // at each batch's own past length.
    b.check(b.has(3) && b.has(4), "past_key and past_value must be given together");
    std::string P = b.dim_scalar(b.in(3), 2);
    std::string kc = b.concat({b.in(3), k}, 2), vc = b.concat({b.in(4), v}, 2);
    std::string L = b.dim_scalar(kc, 2);
    std::string t = b.unsqueeze(b.iota(L), {0});  // [1, L]
    std::string from_new = b.op("Min", {b.op("Add", {b.op("Sub", {t, pb}), P}), b.op("Sub", {L, b.i64(1)})});
    std::string idx = b.op("Where", {b.op("Less", {t, pb}), t, from_new});      // [B, L]
    std::string valid = b.op("Less", {t, b.op("Add", {pb, S})});                 // [B, L]
    std::string idx4 = b.op("Expand", {b.unsqueeze(idx, {1, 3}), b.op("Shape", {kc})});
    std::string valid4 = b.unsqueeze(valid, {1, 3});
    auto place = [&](const std::string& c) {
      return b.op("Where", {valid4, b.op("GatherElements", {c, idx4}, {Attr::i("axis", 2)}), b.f32(0.0f)});
    };
    k = place(kc), v = place(vc);
  }
  b.rename(k, b.out(1));
  b.rename(v, b.out(2));
  Scores sc;
  sc.scale = b.attr_f("scale", 0.0f);
  sc.softcap = b.attr_f("softcap", 0.0f);
  std::string t = b.iota(b.dim_scalar(k, 2));
  std::string p3 = b.unsqueeze(pos, {2});  // [B, S, 1]
  std::string hidden = b.op("Greater", {t, p3});
  int64_t window = b.attr_i("local_window_size", -1);
  // ONNX Runtime 1.30: the window is the last `window` keys, the current one
  // included (1.23 read one key more).
  if (window > 0) hidden = b.op("Or", {hidden, b.op("Not", {b.op("Greater", {t, b.op("Sub", {p3, b.i64(window)})})})});
  sc.mask.push_back(b.unsqueeze(b.op("Where", {hidden, b.f32(kLowest), b.f32(0.0f)}), {1}));
  if (b.has(10)) sc.bias.push_back(b.in(10));
  if (b.has(11))
    sc.sink = b.in(11);
  else if (b.attr_i("smooth_softmax", 0) == 1)
    sc.sink = b.f32s(std::vector<float>(heads, 0.0f), {heads});
  int64_t group = heads / kv_heads;
  merge_heads(b, attend(b, q, repeat_heads(b, k, heads, group), repeat_heads(b, v, heads, group), sc), b.out(0));
}

void expand_rotary(Builder& b) {
  // (input [B, S, hidden] or [B, N, S, H], position_ids [B, S] or [1] (a start), cos_cache, sin_cache)
  std::string x = b.need(0, "input");
  b.require_float(x, "input");
  if (b.attr_i("is_packed_batching", 0) != 0) b.refuse("is_packed_batching=1");
  if (b.attr("scale") && b.attr_f("scale", 1.0f) != 1.0f) b.refuse("scale != 1");
  std::string cos = b.need(2, "cos_cache"), sin = b.need(3, "sin_cache");
  int r = b.rank(x, "input");
  b.check(r == 3 || r == 4, "input must be 3-D or 4-D");
  int64_t heads = b.attr_i("num_heads", 0), rd = b.attr_i("rotary_embedding_dim", 0);
  if (rd > 0) b.check(heads > 0 || r == 4, "rotary_embedding_dim needs num_heads");
  std::string S = b.dim_scalar(x, r == 3 ? 1 : 2);
  std::string pid = b.need(1, "position_ids");
  std::string pos = pid;  // [B, S], or a start [1]: start + 0..S-1
  if (b.rank(pid, "position_ids") == 1) pos = b.unsqueeze(b.op("Add", {b.iota(S), b.gather(pid, b.i64(0), 0)}), {0});
  int64_t half = rd > 0 ? rd / 2 : b.static_dim(cos, 1);
  std::string hv = half > 0 ? std::string() : b.dim(cos, 1);
  std::string c = b.gather(cos, pos, 0), s = b.gather(sin, pos, 0);  // [B, S, cache width]
  if (rd > 0) c = b.slice_c(c, {0}, {half}, {2}), s = b.slice_c(s, {0}, {half}, {2});
  std::string x4;
  int64_t head_size = -1;
  if (r == 4) {
    x4 = x;
    head_size = b.static_dim(x, 3);
    c = b.unsqueeze(c, {1}), s = b.unsqueeze(s, {1});
  } else {
    if (heads > 0) {
      x4 = b.reshape(x, std::vector<int64_t>{0, 0, heads, -1});
      int64_t hidden = b.static_dim(x, 2);
      if (hidden > 0) head_size = hidden / heads;
    } else {  // the head size is the cache's rotation width
      x4 = b.reshape(x, b.concat({b.i64s({0, 0, -1}), b.op("Mul", {b.dim(cos, 1), b.i64s({2})})}, 0));
    }
    c = b.unsqueeze(c, {2}), s = b.unsqueeze(s, {2});
  }
  bool rest = rd > 0 && head_size != 2 * half;
  std::string y = rotate(b, x4, c, s, b.attr_i("interleaved", 0) != 0, half, hv, rest);
  if (r == 4)
    b.rename(y, b.out(0));
  else
    b.op("Reshape", {y, b.op("Shape", {x})}, {}, b.out(0));
}

}  // namespace

bool expand_attention(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "Attention") {  // (input, weights, bias, mask_index, past, attention_bias, past_sequence_length)
    std::string x = b.need(0, "input");
    b.require_float(x, "input");
    b.refuse_input(6, "past_sequence_length (a shared past/present buffer)");
    std::string qkv = b.op("MatMul", {x, b.need(1, "weights")});
    if (b.has(2)) qkv = b.op("Add", {qkv, b.in(2)});
    fused_qkv_attention(b, qkv, 3, 4, 5);
    return true;
  }
  if (op == "QAttention") {
    // (input, weight, bias, input_scale, weight_scale, mask_index, input_zero_point, weight_zero_point, past)
    std::string scale = b.op("Mul", {b.need(3, "input_scale"), b.need(4, "weight_scale")});
    std::string qkv = b.integer_matmul(b.need(0, "input"), b.need(1, "weight"), b.in(6), b.in(7), scale,
                                       b.need(2, "bias"));
    fused_qkv_attention(b, qkv, 5, 8, -1);
    return true;
  }
  if (op == "MultiHeadAttention") {
    expand_mha(b);
    return true;
  }
  if (op == "GroupQueryAttention") {
    expand_gqa(b);
    return true;
  }
  if (op == "RotaryEmbedding") {
    expand_rotary(b);
    return true;
  }
  return false;
}

}  // namespace kiln::contrib
