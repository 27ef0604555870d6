// Text: string tensors (Cast and CastLike to and from string,
// StringNormalizer, StringConcat, StringSplit, Equal on strings) and
// TfIdfVectorizer over integer or string tokens.
//
// String kernels are serial, hand-written TIR over string tables
// (lower/string_table.h, docs/bundle.md#string-tensors) and run on the host
// CPU even in a Vulkan bundle (KernelDef::host_only).
//
// TfIdfVectorizer: each row of X ([C] or [N, C] int32/int64 ids; string
// tokens first become their positions among the pool's strings) is scanned for the n-grams
// of the pool (pool_int64s, grouped by length: ngram_counts[i] is where the
// (i+1)-grams start), n from min_gram_length to max_gram_length, the tokens
// of an n-gram max_skip_count + 1 apart at most (every gap from 1 to that;
// 1-grams once). Each occurrence of pool n-gram i adds 1 to output column
// ngram_indexes[i]; then mode TF keeps the count, IDF gives weights[i] where
// the count is not 0, TFIDF count * weights[i] (weights default to 1). A
// hand-written kernel, a workgroup per row; the pool and its columns and
// weights are constant buffers it loops over.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "lower/op_lowering.h"
#include "lower/serial_tir.h"
#include "lower/string_table.h"
#include "support/diagnostics.h"

namespace kiln::lower {

using namespace serial;  // NOLINT: the builders are this file's vocabulary
using graph::DType;

namespace {

const char* const kStringKernels = "string tables run on the CPU";

// A string's number (strings::parse_number) as stored in a `to` tensor:
// floats rounded from the float64; integers from the exact integer part of
// a plain decimal ("100.5" is 100), else the float64 truncated toward zero
// (NaN: 0), both saturated to the type; bool whether it is not 0.
Expr from_parsed(const strings::Parsed& p, DType to) {
  const Expr v = p.value.get();
  const tir::Type f64 = tir::Float(64), u64 = tir::UInt(64);
  if (to == DType::BF16) return tir::Call::make(tir::Intrinsic::F32ToBf16, {tir::cast(tir::Float(32), v)});
  const tir::Type t = graph::dtype_to_tir(to);
  if (t.is_float()) return tir::cast(t, v);
  if (to == DType::Bool) return tir::cast(t, tir::select(tir::NE::make(v, tir::make_const(f64, 0)), Expr(1), Expr(0)));
  const bool is_signed = t.is_int();
  // The type's range: [-2^(b-1), 2^(b-1) - 1] or [0, 2^b - 1] (as u64 bits: 2^64 - 1 is -1).
  const int64_t most = is_signed ? (int64_t)((1ull << (t.bits - 1)) - 1) : t.bits == 64 ? -1 : (int64_t)((1ull << t.bits) - 1);
  const Expr m = p.magnitude.get(), top = tir::IntImm::make(u64, most);
  Expr exact;  // from the integer part, in u64 bits
  Expr positive = tir::select(tir::LT::make(top, m), top, m);
  if (is_signed) {
    const Expr least = tir::IntImm::make(u64, most) + tir::IntImm::make(u64, 1);  // |minimum|, 2^(b-1)
    Expr negated = tir::select(tir::LT::make(least, m), least, m);
    exact = tir::select(tir::EQ::make(p.negative.get(), Expr(1)), tir::IntImm::make(u64, 0) - negated, positive);
  } else {
    exact = tir::select(tir::EQ::make(p.negative.get(), Expr(1)), tir::IntImm::make(u64, 0), positive);
  }
  // Other text (an exponent, NaN, INF) through the float64, within the range
  // (below 2^63 for the conversion through Index).
  const double lo = is_signed ? -std::ldexp(1.0, t.bits - 1) : 0;
  const double hi = std::min(is_signed ? std::ldexp(1.0, t.bits - 1) - 1 : std::ldexp(1.0, t.bits) - 1, 9223372036854774784.0);
  Expr f = tir::select(tir::NE::make(v, v), tir::make_const(f64, 0), tir::clamp(v, tir::make_const(f64, lo), tir::make_const(f64, hi)));
  Expr approx = tir::cast(u64, tir::cast(tir::Index(), f));
  return tir::cast(t, tir::select(tir::EQ::make(p.plain.get(), Expr(1)), exact, approx));
}

// ASCII and Latin-1 lowercase of a stopword, as strings::to_lower maps bytes.
std::string host_lower(const std::string& s) {
  std::string r = s;
  for (size_t i = 0; i < r.size(); i++) {
    unsigned char c = (unsigned char)r[i], prev = i ? (unsigned char)s[i - 1] : 0;
    if ((c >= 'A' && c <= 'Z') || (prev == 0xC3 && c >= 0x80 && c <= 0x9E && c != 0x97)) r[i] = (char)(c + 32);
  }
  return r;
}

// A string of a table: where its bytes start (a buffer position) and how
// many there are.
struct Span {
  Expr begin, length;
};
// body(s) with s string e of table t of n strings (bound to variables).
Stmt with_string(const tir::Buffer& t, const Expr& n, const Expr& e, const std::function<Stmt(const Span&)>& body) {
  Expr element = index_var("str_element"), begin = index_var("str_begin"), length = index_var("str_length");
  Expr first = strings::offset(t, element);
  return tir::LetStmt::make(element, e, tir::LetStmt::make(
      begin, strings::bytes_start(n) + first,
      tir::LetStmt::make(length, strings::offset(t, element + Expr(1)) - first, body({begin, length}))));
}

// The element of an input of dimensions `in` that numpy broadcasting reads
// for element i (row-major) of an output of dimensions `out`.
Expr broadcast_element(const te::Dims& out, const te::Dims& in, const Expr& i) {
  Indices idx(out.size());
  Expr rest = i;
  for (size_t d = out.size(); d-- > 0;) {
    idx[d] = d ? rest % out[d] : rest;
    rest = rest / out[d];
  }
  return te::flat_index(in, broadcast_index(in, idx));
}

// The length of the whitespace character at byte pos of t (a string
// ending at end), 0 where there is none: Python's str.isspace, as ONNX's
// reference splits (ASCII 9-13 and 28-32; U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 in UTF-8).
Expr whitespace_at(const tir::Buffer& t, const Expr& pos, const Expr& end) {
  auto is = [](const Expr& c, int64_t v) { return tir::EQ::make(c, Expr(v)); };
  auto in = [](const Expr& c, int64_t lo, int64_t hi) { return c >= Expr(lo) && c <= Expr(hi); };
  auto at = [&](int64_t k) { return strings::byte_at(t, pos + Expr(k)); };
  const Expr b0 = at(0), b1 = at(1), b2 = at(2);
  Expr one = in(b0, 9, 13) || in(b0, 28, 32);
  Expr two = pos + Expr(2) <= end && is(b0, 0xC2) && (is(b1, 0x85) || is(b1, 0xA0));
  Expr e2 = is(b0, 0xE2) && ((is(b1, 0x80) && (in(b2, 0x80, 0x8A) || is(b2, 0xA8) || is(b2, 0xA9) || is(b2, 0xAF))) ||
                             (is(b1, 0x81) && is(b2, 0x9F)));
  Expr three = pos + Expr(3) <= end && ((is(b0, 0xE1) && is(b1, 0x9A) && is(b2, 0x80)) || e2 ||
                                        (is(b0, 0xE3) && is(b1, 0x80) && is(b2, 0x80)));
  return tir::select(one, Expr(1), tir::select(two, Expr(2), tir::select(three, Expr(3), Expr(0))));
}

// Python's str.split of bytes [begin, end) of t, as ONNX's reference splits:
// with a delimiter, at each of its occurrences left to right (its bytes
// matched exactly; empty pieces kept, an empty string is one); without, at
// runs of whitespace (whitespace_at), dropping the runs at either end (an
// empty or blank string has no piece). At most maxsplit splits (negative:
// no limit); the rest of the string is the last piece (without whitespace
// splitting: its leading run dropped, its trailing one kept).
// piece(s, e) is the statement for each piece, bytes [s, e), in order.
Stmt split_pieces(const tir::Buffer& t, const Expr& begin, const Expr& end, const std::string& delimiter,
                  int64_t maxsplit, const std::function<Stmt(const Expr&, const Expr&)>& piece) {
  Local start("split_start", tir::Index()), next("split_next", tir::Index()), splits("split_count", tir::Index());
  auto emit = [&](const Expr& s, const Expr& e) {
    Expr ps = index_var("piece_begin"), pe = index_var("piece_end");
    return tir::LetStmt::make(ps, s, tir::LetStmt::make(pe, e, piece(ps, pe)));
  };
  const Stmt split = block({splits.set(splits.get() + Expr(1))});
  Expr p = index_var("split_p");
  const Expr past = p >= next.get();  // past the last delimiter or whitespace run
  if (!delimiter.empty()) {
    const int64_t d = (int64_t)delimiter.size();
    Expr match = past && p + Expr(d) <= end;
    for (int64_t j = 0; j < d; j++) {
      const int64_t byte = (unsigned char)delimiter[(size_t)j];
      match = match && tir::EQ::make(strings::byte_at(t, p + Expr(j)), Expr(byte));
    }
    if (maxsplit >= 0) match = match && splits.get() < Expr(maxsplit);
    Stmt at_p = when(match, block({emit(start.get(), p), start.set(p + Expr(d)), next.set(p + Expr(d)), split}));
    return allocate({start.b, next.b, splits.b}, block({start.set(begin), next.set(begin), splits.set(Expr(0)),
                                                        loop(p, begin, end - begin, at_p), emit(start.get(), end)}));
  }
  Local open("split_open", tir::Index()), last("split_last", tir::Index());  // in a piece; the last one
  Expr w = index_var("split_w");
  Expr is_last = maxsplit >= 0 ? tir::select(splits.get() >= Expr(maxsplit), Expr(1), Expr(0)) : Expr(0);
  Stmt begin_piece = block({start.set(p), open.set(Expr(1)), last.set(is_last)});
  Stmt end_piece = block({emit(start.get(), p), open.set(Expr(0)), split, next.set(p + w)});
  Stmt at_p = when(past, tir::LetStmt::make(w, whitespace_at(t, p, end), tir::IfThenElse::make(
      tir::EQ::make(open.get(), Expr(0)),
      tir::IfThenElse::make(tir::EQ::make(w, Expr(0)), begin_piece, next.set(p + w)),
      when(w > Expr(0) && tir::EQ::make(last.get(), Expr(0)), end_piece))));
  Stmt rest = when(tir::EQ::make(open.get(), Expr(1)), emit(start.get(), end));
  return allocate({start.b, next.b, splits.b, open.b, last.b},
                  block({open.set(Expr(0)), last.set(Expr(0)), next.set(begin), splits.set(Expr(0)),
                         loop(p, begin, end - begin, at_p), rest}));
}

}  // namespace

// Cast / CastLike with a string side: numbers to their text
// (strings::format_number), text to numbers (strings::parse_number), and
// string to string (the same table).
void lower_cast_string(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const DType from = ctx.in_dtype(0), to = ctx.value(ctx.output(0)).dtype;
  const int in = ctx.input(0), out = ctx.output(0);
  if (from == to) {
    ctx.aliases.push_back({out, in});
    return;
  }
  const Expr count = te::num_elements(ctx.in_dims(0));
  const graph::Value& x = ctx.value(in);
  user_assert(x.sym.empty() || x.is_constant() || x.producer >= 0)
      << n.describe() << ": kilnc does not spell a shape known only at run time as text; cast it to string "
      << "outside the model, or give the input static shapes";
  if (to == DType::String) {
    user_assert(strings::formats(from))
        << n.describe() << ": kilnc casts float32, float16, bfloat16 and integers up to 32 bits unsigned (64 signed) to "
        << "string, not " << graph::dtype_name(from) << "; cast to one of those first";
    ctx.emit_tir("cast_to_string", [&](const OpContext::BindFn& bind) {
      tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
      strings::Writer w{Y, strings::bytes_start(count)};
      Expr i = index_var("i");
      Stmt each = block({strings::format_number(tir::Load::make(X, i), from, w), strings::set_offset(Y, i + Expr(1), w.at.get())});
      return allocate({w.at.b}, block({w.at.set(Expr(0)), strings::set_offset(Y, Expr(0), Expr(0)), loop(i, count, each)}));
    });
  } else {
    ctx.emit_tir("cast_from_string", [&](const OpContext::BindFn& bind) {
      tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
      Expr i = index_var("i"), start = strings::bytes_start(count);
      strings::Parsed v;
      Stmt parse = strings::parse_number(X, start + strings::offset(X, i), start + strings::offset(X, i + Expr(1)), v);
      return loop(i, count, allocate(v.buffers(), block({parse, tir::Store::make(Y, i, from_parsed(v, to))})));
    });
  }
  ctx.kernels.back().host_only = kStringKernels;
}

// StringNormalizer: X [C] or [1, C] without its stopwords (compared exactly,
// or after lowercasing both with is_case_sensitive 0), each kept string
// lowercased or uppercased (case_change_action LOWER / UPPER; NONE keeps
// it), into Y [K] or [1, K]; K, a data symbol, is at least 1: when nothing
// is left Y holds one empty string. Case mapping covers ASCII and Latin-1
// letters (their UTF-8 length never changes); `locale` is not read.
void lower_string_normalizer(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == DType::String) << n.describe() << ": X must be a string tensor";
  const te::Dims x = ctx.in_dims(0);
  user_assert(x.size() == 1 || (x.size() == 2 && tir::as_const_int(x[0]) && *tir::as_const_int(x[0]) == 1))
      << n.describe() << ": X must be [C] or [1, C]";
  const std::string action = n.attr_string("case_change_action", "NONE");
  user_assert(action == "NONE" || action == "LOWER" || action == "UPPER")
      << n.describe() << ": case_change_action must be NONE, LOWER or UPPER, not '" << action << "'";
  const bool sensitive = n.attr_int("is_case_sensitive", 0) != 0;
  std::vector<std::string> stop = n.has_attr("stopwords") ? n.attrs.at("stopwords").strings : std::vector<std::string>();
  if (!sensitive)
    for (auto& w : stop) w = host_lower(w);
  int64_t stop_bytes = 0;
  std::vector<uint8_t> table = graph::string_table(stop, &stop_bytes);
  const int64_t table_size = (int64_t)table.size(), S = (int64_t)stop.size();
  const int stop_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".stopwords"), DType::U8, {table_size}, std::move(table));
  const int in = ctx.input(0), out = ctx.output(0), count = ctx.output(1);
  const Expr C = te::num_elements(x);
  ctx.emit_tir("string_normalizer", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write), K = bind(count, Access::Write);
    tir::Buffer W = bind(stop_v, Access::Read);
    Expr xs = strings::bytes_start(C), ws = strings::bytes_start(Expr(S));
    Local stopped("stopped", tir::Index()), same("same", tir::Index()), kept("kept", tir::Index());
    Expr i = index_var("i"), s = index_var("s"), p = index_var("p");
    Expr begin = index_var("begin"), end = index_var("end");
    auto mapped = [&](const Expr& pos, const std::string& how) {  // byte pos of X, case-changed
      Expr c = strings::byte_at(X, pos), prev = tir::select(pos > begin, strings::byte_at(X, pos - Expr(1)), Expr(0));
      return how == "LOWER" ? strings::to_lower(c, prev) : how == "UPPER" ? strings::to_upper(c, prev) : c;
    };
    // For string i (bound as [begin, end)): `body` with stopped = whether it is a stopword.
    auto with_string = [&](Stmt body) {
      Expr w0 = ws + strings::offset(W, s), wlen = strings::offset(W, s + Expr(1)) - strings::offset(W, s);
      auto x_byte = [&](const Expr& q) { return mapped(begin + q, sensitive ? "NONE" : "LOWER"); };
      Stmt compare = block({strings::equal(x_byte, end - begin, W, w0, wlen, same),
                            when(tir::EQ::make(same.get(), Expr(1)), stopped.set(Expr(1)))});
      return tir::LetStmt::make(begin, xs + strings::offset(X, i), tir::LetStmt::make(end, xs + strings::offset(X, i + Expr(1)),
          block({stopped.set(Expr(0)), loop(s, Expr(S), compare), body})));
    };
    Expr keep = tir::EQ::make(stopped.get(), Expr(0));
    Stmt count_pass = block({kept.set(Expr(0)), loop(i, C, with_string(when(keep, kept.set(kept.get() + Expr(1)))))});
    Expr k = index_var("k");
    strings::Writer w{Y, strings::bytes_start(k)};
    Stmt copy = loop(p, end - begin, w.put(mapped(begin + p, action)));
    Stmt write_pass = block({w.at.set(Expr(0)), kept.set(Expr(0)), strings::set_offset(Y, Expr(0), Expr(0)),
                             loop(i, C, with_string(when(keep, block({copy, kept.set(kept.get() + Expr(1)),
                                                                       strings::set_offset(Y, kept.get(), w.at.get())})))),
                             when(tir::EQ::make(kept.get(), Expr(0)), strings::set_offset(Y, Expr(1), Expr(0)))});
    Stmt body = block({count_pass, tir::LetStmt::make(k, tir::max(kept.get(), Expr(1)),
                                                      block({tir::Store::make(K, Expr(0), k), write_pass}))});
    return allocate({stopped.b, same.b, kept.b, w.at.b}, body);
  });
  ctx.kernels.back().host_only = kStringKernels;
}

// StringConcat: each string of X followed by the one of Y that numpy
// broadcasting pairs it with (bytes as they are: UTF-8 stays UTF-8).
void lower_string_concat(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == DType::String && ctx.in_dtype(1) == DType::String)
      << n.describe() << ": X and Y must be string tensors";
  const te::Dims a = ctx.in_dims(0), b = ctx.in_dims(1), y = ctx.out_dims(0);
  const Expr count = te::num_elements(y), na = te::num_elements(a), nb = te::num_elements(b);
  const int xa = ctx.input(0), xb = ctx.input(1), out = ctx.output(0);
  ctx.emit_tir("string_concat", [&](const OpContext::BindFn& bind) {
    tir::Buffer A = bind(xa, Access::Read), B = xb == xa ? A : bind(xb, Access::Read), Y = bind(out, Access::Write);
    strings::Writer w{Y, strings::bytes_start(count)};
    Expr i = index_var("i"), p = index_var("p"), q = index_var("q");
    Stmt each = with_string(A, na, broadcast_element(y, a, i), [&](const Span& sa) {
      return with_string(B, nb, broadcast_element(y, b, i), [&](const Span& sb) {
        return block({loop(p, sa.length, w.put(strings::byte_at(A, sa.begin + p))),
                      loop(q, sb.length, w.put(strings::byte_at(B, sb.begin + q))),
                      strings::set_offset(Y, i + Expr(1), w.at.get())});
      });
    });
    Stmt body = block({w.at.set(Expr(0)), strings::set_offset(Y, Expr(0), Expr(0)), loop(i, count, each)});
    return allocate({w.at.b}, body);
  });
  ctx.kernels.back().host_only = kStringKernels;
}

// Equal on string tensors (lower_compare hands it over): byte for byte,
// with numpy broadcasting.
void lower_equal_string(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(1) == DType::String) << n.describe() << ": both inputs must be string tensors";
  const te::Dims a = ctx.in_dims(0), b = ctx.in_dims(1), y = ctx.out_dims(0);
  const Expr count = te::num_elements(y), na = te::num_elements(a), nb = te::num_elements(b);
  const int xa = ctx.input(0), xb = ctx.input(1), out = ctx.output(0);
  const tir::Type stored = graph::dtype_to_tir(ctx.value(out).dtype);
  ctx.emit_tir("equal_string", [&](const OpContext::BindFn& bind) {
    tir::Buffer A = bind(xa, Access::Read), B = xb == xa ? A : bind(xb, Access::Read), Y = bind(out, Access::Write);
    Expr i = index_var("i");
    Local same("same", tir::Index());
    Stmt each = with_string(A, na, broadcast_element(y, a, i), [&](const Span& sa) {
      return with_string(B, nb, broadcast_element(y, b, i), [&](const Span& sb) {
        auto a_byte = [&](const Expr& p) { return strings::byte_at(A, sa.begin + p); };
        return block({strings::equal(a_byte, sa.length, B, sb.begin, sb.length, same),
                      tir::Store::make(Y, i, tir::cast(stored, same.get()))});
      });
    });
    return allocate({same.b}, loop(i, count, each));
  });
  ctx.kernels.back().host_only = kStringKernels;
}

// StringSplit: each string of X [...] cut into pieces (split_pieces: by the
// `delimiter`'s bytes, or at whitespace when it is empty or absent; at most
// `maxsplit` splits), into Y [..., K] padded with empty strings, and the
// count of each string's pieces into Z [...] (int64). K, the most pieces of
// any string, is a data symbol (import/infer_dims.cpp): a first kernel
// counts the pieces, writing Z and K; a second, sized by K, writes Y.
void lower_string_split(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == DType::String) << n.describe() << ": X must be a string tensor";
  const std::string delimiter = n.attr_string("delimiter", "");
  const int64_t maxsplit = n.attr_int("maxsplit", -1);
  const Expr N = te::num_elements(ctx.in_dims(0));
  // Outputs: Y, Z (-1 when absent), then K's source (import/infer_dims.cpp).
  internal_assert(n.outputs.size() == 3) << n.describe() << ": the import gave it no piece count";
  const int in = ctx.input(0), out = ctx.output(0), lengths = n.outputs[1], most = n.outputs[2];
  auto for_each_string = [&](const tir::Buffer& X, const std::function<Stmt(const Expr& i, const Span& s)>& body) {
    Expr i = index_var("i");
    return loop(i, N, with_string(X, N, i, [&](const Span& s) { return body(i, s); }));
  };
  ctx.emit_tir("string_split_count", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), K = bind(most, Access::Write);
    tir::Buffer L = lengths >= 0 ? bind(lengths, Access::Write) : nullptr;
    Local pieces("pieces", tir::Index()), largest("largest", tir::Index());
    auto one = [&](const Expr&, const Expr&) { return pieces.set(pieces.get() + Expr(1)); };
    Stmt count = for_each_string(X, [&](const Expr& i, const Span& s) {
      Stmt split = split_pieces(X, s.begin, s.begin + s.length, delimiter, maxsplit, one);
      std::vector<Stmt> each = {pieces.set(Expr(0)), split, largest.set(tir::max(largest.get(), pieces.get()))};
      if (L) each.push_back(tir::Store::make(L, i, pieces.get()));
      return block(each);
    });
    Stmt body = block({largest.set(Expr(0)), count, tir::Store::make(K, Expr(0), largest.get())});
    return allocate({pieces.b, largest.b}, body);
  });
  ctx.kernels.back().host_only = kStringKernels;
  const Expr K = ctx.out_dims(0).back();
  ctx.emit_tir("string_split", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write);
    strings::Writer w{Y, strings::bytes_start(N * K)};
    Local k("piece", tir::Index());
    Stmt write = for_each_string(X, [&](const Expr& i, const Span& s) {
      auto piece = [&](const Expr& begin, const Expr& end) {
        Expr q = index_var("q");
        return block({loop(q, end - begin, w.put(strings::byte_at(X, begin + q))), k.set(k.get() + Expr(1)),
                      strings::set_offset(Y, i * K + k.get(), w.at.get())});
      };
      Expr j = index_var("j");  // the padding: empty strings
      Stmt pad = loop(j, K, when(j >= k.get(), strings::set_offset(Y, i * K + j + Expr(1), w.at.get())));
      return block({k.set(Expr(0)), split_pieces(X, s.begin, s.begin + s.length, delimiter, maxsplit, piece), pad});
    });
    return allocate({w.at.b, k.b}, block({w.at.set(Expr(0)), strings::set_offset(Y, Expr(0), Expr(0)), write}));
  });
  ctx.kernels.back().host_only = kStringKernels;
}

// String tokens: each element of input 0, as its position in `vocabulary`
// (-1 when it is none of them), into a new int64 intermediate of its shape.
int token_ids(OpContext& ctx, const std::vector<std::string>& vocabulary) {
  const graph::Node& n = ctx.node();
  const graph::Value x = ctx.value(ctx.input(0));  // (a copy: add_value below may move the values)
  graph::Value ids;
  ids.name = ctx.graph.unique_name(n.name + ".ids");
  ids.dtype = DType::I64;
  ids.shape = x.shape;
  ids.producer = ctx.node_index;
  const int ids_v = ctx.graph.add_value(std::move(ids));
  int64_t bytes = 0;
  std::vector<uint8_t> table = graph::string_table(vocabulary, &bytes);
  const int64_t table_size = (int64_t)table.size(), V = (int64_t)vocabulary.size(), count = x.elements();
  const int vocab_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".vocabulary"), DType::U8, {table_size},
                                             std::move(table));
  const int in = ctx.input(0);
  ctx.emit_tir("token_ids", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), P = bind(vocab_v, Access::Read), Y = bind(ids_v, Access::Write);
    Expr i = index_var("i"), t = index_var("t");
    Expr xs = strings::bytes_start(Expr(count)), ps = strings::bytes_start(Expr(V));
    Expr begin = xs + strings::offset(X, i), length = strings::offset(X, i + Expr(1)) - strings::offset(X, i);
    Local same("same", tir::Index()), id("id", tir::Index());
    auto x_byte = [&](const Expr& q) { return strings::byte_at(X, begin + q); };
    Stmt match = block({strings::equal(x_byte, length, P, ps + strings::offset(P, t),
                                       strings::offset(P, t + Expr(1)) - strings::offset(P, t), same),
                        when(tir::EQ::make(same.get(), Expr(1)) && tir::EQ::make(id.get(), Expr(-1)), id.set(t))});
    return allocate({same.b, id.b}, loop(i, Expr(count), block({id.set(Expr(-1)), loop(t, Expr(V), match),
                                                                tir::Store::make(Y, i, id.get())})));
  });
  ctx.kernels.back().host_only = kStringKernels;
  return ids_v;
}

void lower_tfidf_vectorizer(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::DType xt = ctx.in_dtype(0);
  user_assert(xt == graph::DType::I32 || xt == graph::DType::I64 || xt == DType::String)
      << n.describe() << ": kilnc supports TfIdfVectorizer on int32, int64 and string tokens, not " << graph::dtype_name(xt);
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
  // String tokens: the pool becomes positions in its vocabulary (its
  // distinct strings), and X the same positions (token_ids).
  std::vector<std::string> vocabulary;
  user_assert((xt == DType::String) == n.has_attr("pool_strings") && !(n.has_attr("pool_strings") && n.has_attr("pool_int64s")))
      << n.describe() << ": string tokens need pool_strings, integer tokens pool_int64s";
  if (xt == DType::String) {
    std::map<std::string, int64_t> position;
    for (const std::string& token : n.attrs.at("pool_strings").strings) {
      auto it = position.emplace(token, (int64_t)vocabulary.size()).first;
      if (it->second == (int64_t)vocabulary.size()) vocabulary.push_back(token);
      pool.push_back(it->second);
    }
  }
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
  const int in = xt == DType::String ? token_ids(ctx, vocabulary) : ctx.input(0), out = ctx.output(0);
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
