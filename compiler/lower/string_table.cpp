// String tables in hand-written kernels (string_table.h).
#include "lower/string_table.h"

#include <cmath>
#include <cstring>

#include "support/diagnostics.h"

namespace kiln::lower::strings {

using namespace serial;  // NOLINT: the builders are this file's vocabulary

namespace {

const tir::Type kF64 = tir::Float(64);

Expr eq(const Expr& a, const Expr& b) { return tir::EQ::make(a, b); }
Expr eq(const Expr& a, int64_t b) { return tir::EQ::make(a, Expr(b)); }
Expr f64(double v) { return tir::make_const(kF64, v); }
Expr ch(char c) { return Expr((int64_t)(unsigned char)c); }
Expr flag(const Expr& cond) { return tir::select(cond, Expr(1), Expr(0)); }

// 10^k for k in [0, 22], exact in float64.
Expr pow10_f64(const Expr& k) {
  double p[23];
  p[0] = 1;
  for (int i = 1; i < 23; i++) p[i] = p[i - 1] * 10;  // exact through 10^22
  Expr r = f64(p[22]);
  for (int i = 21; i >= 0; i--) r = tir::select(eq(k, i), f64(p[i]), r);
  return r;
}

// 10^k for k in [0, 18] of type t (Index or UInt(64)).
Expr pow10_int(const Expr& k, tir::Type t) {
  int64_t p[19];
  p[0] = 1;
  for (int i = 1; i < 19; i++) p[i] = p[i - 1] * 10;
  Expr r = tir::make_const(t, (double)p[18]);
  for (int i = 17; i >= 0; i--) r = tir::select(eq(k, i), tir::make_const(t, (double)p[i]), r);
  return r;
}

// out = x * 10^e for x >= 0 (float64) and an Index e: one correctly rounded
// multiplication or division for |e| <= 22, a second rounding beyond
// (exponents past 422 give 0 or infinity; x = 0 gives NaN past 308: callers
// test for 0 first).
Stmt scale(const Expr& x, const Expr& e, const Local& out) {
  Local q("sc_q", kF64);
  Expr a = tir::select(e < Expr(0), Expr(0) - e, e), k = index_var("sc_k");
  Expr rest = tir::min(tir::max(a - Expr(22), Expr(0)), Expr(400)), p = pow10_f64(tir::min(a, Expr(22)));
  return allocate({q.b}, block({q.set(f64(1)), loop(k, rest, q.set(q.get() * f64(10))),
                                out.set(tir::select(e >= Expr(0), x * p * q.get(), x / p / q.get()))}));
}

// A float64 rounded to `from` and back, as the round trip compares it.
Expr round_to(const Expr& x, graph::DType from) {
  if (from == graph::DType::BF16) return tir::Call::make(tir::Intrinsic::F32ToBf16, {tir::cast(tir::Float(32), x)});
  return tir::cast(graph::dtype_to_tir(from), x);
}

bool is_float_type(graph::DType t) {
  return t == graph::DType::F32 || t == graph::DType::F16 || t == graph::DType::BF16;
}

Stmt put_text(const Writer& w, const char* s) {
  std::vector<Stmt> out;
  for (const char* p = s; *p; p++) out.push_back(w.put(*p));
  return block(out);
}

// Decimal digits of a magnitude a (UInt(64), below 10^19), most significant first.
Stmt put_digits(const Writer& w, const Expr& a) {
  const tir::Type u64 = tir::UInt(64);
  Expr count = Expr(1);
  double p = 1;
  for (int k = 1; k <= 18; k++) count = count + flag(a >= tir::make_const(u64, p *= 10));
  Expr n = index_var("dg_n"), t = index_var("dg_t");
  Expr digit = (a / pow10_int(n - Expr(1) - t, u64)) % tir::make_const(u64, 10);
  return tir::LetStmt::make(n, count, loop(t, n, w.put(tir::cast(tir::Index(), digit) + ch('0'))));
}

Stmt format_integer(const Expr& v, const Writer& w) {
  const tir::Type u64 = tir::UInt(64);
  Expr x = index_var("fi_x"), a = tir::Var::make(u64, "fi_a");
  // The magnitude negated in u64 (no signed overflow: INT64_MIN gives 2^63).
  Expr bits = tir::cast(u64, x);
  return tir::LetStmt::make(
      x, tir::cast(tir::Index(), v),
      tir::LetStmt::make(a, tir::select(x < Expr(0), tir::make_const(u64, 0) - bits, bits),
                         block({when(x < Expr(0), w.put('-')), put_digits(w, a)})));
}

// The shortest digits D (P of them, the first at decimal exponent E) that
// read back as a, a finite positive float64 holding a `from` value.
Stmt format_float(const Expr& v, graph::DType from, const Writer& w) {
  const int max_digits = from == graph::DType::F32 ? 9 : from == graph::DType::F16 ? 5 : 4;
  Expr x = tir::Var::make(kF64, "ff_x");
  Expr loaded = from == graph::DType::BF16 ? tir::Call::make(tir::Intrinsic::Bf16ToF32, {v}) : v;
  Local e("ff_e", tir::Index()), s("ff_s", kF64), found("ff_found", tir::Index()), D("ff_d", tir::Index()),
      P("ff_p", tir::Index()), E("ff_E", tir::Index()), back("ff_back", kF64), cand("ff_cand", tir::Index()),
      ce("ff_ce", tir::Index());
  Expr a = tir::Var::make(kF64, "ff_a");
  Expr neg = x < f64(0) || (eq(x, f64(0)) && f64(1) / x < f64(0));  // -0.0 too
  Expr k = index_var("ff_k");
  // The decimal exponent of a: by tens, then checked with one exact scaling.
  Stmt exponent = block({
      e.set(Expr(0)), s.set(a),
      loop(k, Expr(48), when(s.get() >= f64(10), block({s.set(s.get() / f64(10)), e.set(e.get() + Expr(1))}))),
      loop(k, Expr(48), when(s.get() < f64(1), block({s.set(s.get() * f64(10)), e.set(e.get() - Expr(1))}))),
      scale(a, Expr(0) - e.get(), s),
      when(s.get() >= f64(10), e.set(e.get() + Expr(1))),
      when(s.get() < f64(1), e.set(e.get() - Expr(1))),
  });
  // For p = 1, 2, ...: a rounded to p digits; the first that reads back wins.
  Expr p = index_var("ff_p");
  Stmt try_p = when(eq(found.get(), 0), block({
      scale(a, p - Expr(1) - e.get(), s),
      cand.set(tir::cast(tir::Index(), tir::Call::make(tir::Intrinsic::RoundEven, {s.get()}))), ce.set(e.get()),
      when(cand.get() >= pow10_int(p, tir::Index()), block({cand.set(cand.get() / Expr(10)), ce.set(e.get() + Expr(1))})),
      scale(tir::cast(kF64, cand.get()), ce.get() - p + Expr(1), back),
      when(eq(round_to(back.get(), from), round_to(a, from)) || eq(p, max_digits),
           block({found.set(Expr(1)), D.set(cand.get()), P.set(p), E.set(ce.get())})),
  }));
  Stmt shortest = block({found.set(Expr(0)), loop(p, Expr(1), Expr(max_digits), try_p),
                         loop(k, Expr(max_digits), when(P.get() > Expr(1) && eq(D.get() % Expr(10), 0),
                                                         block({D.set(D.get() / Expr(10)), P.set(P.get() - Expr(1))})))});
  // Digit at decimal exponent q (0 outside the P digits).
  auto digit = [&](const Expr& q) {
    Expr low = E.get() - P.get() + Expr(1);
    Expr d = (D.get() / pow10_int(tir::clamp(q - low, Expr(0), Expr(18)), tir::Index())) % Expr(10);
    return tir::select(q <= E.get() && q >= low, d, Expr(0)) + ch('0');
  };
  Expr t = index_var("ff_t"), top = tir::max(E.get(), Expr(0)), low = tir::min(E.get() - P.get() + Expr(1), Expr(-1));
  Stmt positional = block({loop(t, top + Expr(1), w.put(digit(top - t))), w.put('.'),
                           loop(t, Expr(0) - low, w.put(digit(Expr(-1) - t)))});
  Expr ae = tir::select(E.get() < Expr(0), Expr(0) - E.get(), E.get());
  Stmt scientific = block({w.put(digit(E.get())),
                           when(P.get() > Expr(1), block({w.put('.'), loop(t, Expr(1), P.get() - Expr(1), w.put(digit(E.get() - t)))})),
                           w.put('e'), w.put(tir::select(E.get() < Expr(0), ch('-'), ch('+'))),
                           when(ae >= Expr(100), w.put(ae / Expr(100) + ch('0'))),
                           w.put((ae / Expr(10)) % Expr(10) + ch('0')), w.put(ae % Expr(10) + ch('0'))});
  Expr is_nan = tir::NE::make(x, x), is_inf = eq(a, f64(INFINITY));
  Stmt finite = block({exponent, shortest,
                       // numpy compares the value, widened, with 1e-4 and 1e16 (float32's 1e-4 is below).
                       tir::IfThenElse::make(a >= f64(1e-4) && a < f64(1e16), positional, scientific)});
  Stmt body = block({
      when(is_nan, put_text(w, "NaN")),
      when(!is_nan && neg, w.put('-')),
      when(is_inf, put_text(w, "INF")),
      when(eq(a, f64(0)), put_text(w, "0.0")),
      when(!is_nan && !is_inf && a > f64(0), finite),
  });
  body = tir::LetStmt::make(x, tir::cast(kF64, loaded), tir::LetStmt::make(a, tir::select(x < f64(0), f64(0) - x, x), body));
  return allocate({e.b, s.b, found.b, D.b, P.b, E.b, back.b, cand.b, ce.b}, body);
}

}  // namespace

Expr offset(const tir::Buffer& t, const Expr& i) {
  Expr r = Expr(0);
  for (int b = 3; b >= 0; b--) r = r * Expr(256) + byte_at(t, i * Expr(4) + Expr(b));
  return r;
}

Stmt set_offset(const tir::Buffer& t, const Expr& i, const Expr& v) {
  std::vector<Stmt> s;
  for (int b = 0; b < 4; b++) {
    Expr pos = i * Expr(4) + Expr(b);
    Expr byte = tir::cast(tir::UInt(8), (v / Expr((int64_t)1 << (8 * b))) % Expr(256));
    s.push_back(when(pos < Expr(t->size), tir::Store::make(t, pos, byte)));
  }
  return block(s);
}

Expr byte_at(const tir::Buffer& t, const Expr& pos) {
  return tir::cast(tir::Index(), tir::Load::make(t, tir::clamp(pos, Expr(0), Expr(t->size - 1))));
}

Stmt Writer::put(const Expr& c) const {
  Expr pos = start + at.get();
  return block({when(pos < Expr(table->size), tir::Store::make(table, pos, tir::cast(tir::UInt(8), c))),
                at.set(at.get() + Expr(1))});
}

bool formats(graph::DType from) {
  using graph::DType;
  switch (from) {
    case DType::F32: case DType::F16: case DType::BF16:
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::U8: case DType::U16: case DType::U32:
      return true;
    default: return false;
  }
}

Stmt format_number(const Expr& v, graph::DType from, const Writer& w) {
  internal_assert(formats(from)) << "format_number of " << graph::dtype_name(from);
  return is_float_type(from) ? format_float(v, from, w) : format_integer(v, w);
}

Stmt parse_number(const tir::Buffer& t, const Expr& begin, const Expr& end, const Parsed& out) {
  Local state("pn_state", tir::Index()), mant("pn_mant", tir::Index()), dexp("pn_dexp", tir::Index()),
      eneg("pn_eneg", tir::Index()), ev("pn_ev", tir::Index()), digits("pn_digits", tir::Index()),
      mag("pn_mag", kF64), had_exp("pn_had_exp", tir::Index());
  const Local& neg = out.negative;
  const tir::Type u64 = tir::UInt(64);
  // The integer part in u64, saturating: past (2^64 - 1 - d) / 10 it stays at 2^64 - 1.
  Expr whole = out.magnitude.get(), limit = tir::IntImm::make(u64, 1844674407370955161);
  Expr j = index_var("pn_j"), st = index_var("pn_st"), c = index_var("pn_c"), m0 = index_var("pn_m");
  auto is = [&](char x) { return eq(c, ch(x)); };
  Expr digit = c >= ch('0') && c <= ch('9'), d = c - ch('0');
  Expr sign = is('+') || is('-'), blank = is(' ') || is('\t') || is('\n') || is('\r');
  // States: 0 start, 1 sign, 2 integer digits, 3 fraction, 4 'e', 5 exponent
  // sign, 6 exponent digits, 7 trailing blanks, 9 not a number. Each byte
  // takes one transition, decided on the state before it (st).
  Expr lead_blank = eq(st, 0) && blank, lead_sign = eq(st, 0) && sign;
  Expr mant_digit = st <= Expr(3) && digit, point = st <= Expr(2) && is('.');
  Expr exp_mark = (eq(st, 2) || eq(st, 3)) && (is('e') || is('E')) && digits.get() > Expr(0);
  Expr exp_sign = eq(st, 4) && sign, exp_digit = st >= Expr(4) && st <= Expr(6) && digit;
  Expr tail_blank = (eq(st, 2) || eq(st, 3) || eq(st, 6) || eq(st, 7)) && blank;
  Expr known = lead_blank || lead_sign || mant_digit || point || exp_mark || exp_sign || exp_digit || tail_blank;
  const int64_t kMantissaLimit = 100000000000000000;  // 10^17: later digits only move the exponent
  Expr kept = m0 < Expr(kMantissaLimit);
  Stmt per_byte = tir::LetStmt::make(st, state.get(), tir::LetStmt::make(c, byte_at(t, j), tir::LetStmt::make(m0, mant.get(), block({
      when(lead_sign, block({neg.set(flag(is('-'))), state.set(Expr(1))})),
      when(mant_digit && !eq(st, 3),
           out.magnitude.set(tir::select(whole < limit || (eq(whole, limit) && d <= Expr(5)),
                                         whole * tir::IntImm::make(u64, 10) + tir::cast(u64, d),
                                         tir::IntImm::make(u64, -1)))),
      when(mant_digit, block({mant.set(tir::select(kept, m0 * Expr(10) + d, m0)),
                              dexp.set(dexp.get() + tir::select(kept, Expr(0) - flag(eq(st, 3)), Expr(1) - flag(eq(st, 3)))),
                              digits.set(Expr(1)), state.set(tir::select(eq(st, 3), Expr(3), Expr(2)))})),
      when(point, state.set(Expr(3))),
      when(exp_mark, block({state.set(Expr(4)), had_exp.set(Expr(1))})),
      when(exp_sign, block({eneg.set(flag(is('-'))), state.set(Expr(5))})),
      when(exp_digit, block({ev.set(tir::min(ev.get() * Expr(10) + d, Expr(100000))), state.set(Expr(6))})),
      when(tail_blank, state.set(Expr(7))),
      when(!known, state.set(Expr(9))),
  }))));
  Expr s = state.get();
  Expr valid = digits.get() > Expr(0) && (eq(s, 2) || eq(s, 3) || eq(s, 6) || eq(s, 7));
  Expr exponent = dexp.get() + tir::select(eq(eneg.get(), 1), Expr(0) - ev.get(), ev.get());
  Expr number = tir::select(eq(mant.get(), 0), f64(0), mag.get());
  number = tir::select(eq(neg.get(), 1), f64(-1) * number, number);
  // "NaN", "INF", "Infinity" in any case, after an optional sign.
  Expr first = byte_at(t, begin), signed_word = end > begin && (eq(first, ch('+')) || eq(first, ch('-')));
  Expr w0 = begin + flag(signed_word), len = end - w0;
  auto lower = [&](int k) {
    Expr b = byte_at(t, w0 + tir::min(Expr(k), tir::max(len - Expr(1), Expr(0))));
    return tir::select(b >= ch('A') && b <= ch('Z'), b + Expr(32), b);
  };
  auto word = [&](const char* text) {
    Expr m = eq(len, (int64_t)strlen(text));
    for (int k = 0; text[k]; k++) m = m && eq(lower(k), ch(text[k]));
    return m;
  };
  Expr inf = tir::select(signed_word && eq(first, ch('-')), f64(-INFINITY), f64(INFINITY));
  Expr result = tir::select(word("nan"), f64(NAN),
                            tir::select(word("inf") || word("infinity"), inf, tir::select(valid, number, f64(NAN))));
  Stmt body = block({state.set(Expr(0)), neg.set(Expr(0)), mant.set(Expr(0)), dexp.set(Expr(0)), eneg.set(Expr(0)),
                     ev.set(Expr(0)), digits.set(Expr(0)), had_exp.set(Expr(0)),
                     out.magnitude.set(tir::IntImm::make(u64, 0)), loop(j, begin, end - begin, per_byte),
                     scale(tir::cast(kF64, mant.get()), exponent, mag), out.value.set(result),
                     out.plain.set(flag(valid && eq(had_exp.get(), 0)))});
  return allocate({state.b, mant.b, dexp.b, eneg.b, ev.b, digits.b, mag.b, had_exp.b}, body);
}

Stmt equal(const std::function<Expr(const Expr&)>& a_byte, const Expr& length, const tir::Buffer& b, const Expr& b_begin,
           const Expr& b_length, const Local& same) {
  Expr p = index_var("eq_p");
  return block({same.set(flag(eq(length, b_length))),
                when(eq(same.get(), 1), loop(p, length, when(tir::NE::make(a_byte(p), byte_at(b, b_begin + p)),
                                                             same.set(Expr(0)))))});
}

Expr to_lower(const Expr& c, const Expr& prev) {
  Expr ascii = c >= ch('A') && c <= ch('Z');
  // U+00C0..U+00DE but U+00D7 (x): C3 80..C3 9E -> C3 A0..C3 BE.
  Expr latin = eq(prev, 0xC3) && c >= Expr(0x80) && c <= Expr(0x9E) && !eq(c, 0x97);
  return tir::select(ascii || latin, c + Expr(32), c);
}

Expr to_upper(const Expr& c, const Expr& prev) {
  Expr ascii = c >= ch('a') && c <= ch('z');
  // U+00E0..U+00FE but U+00F7 (division sign): C3 A0..C3 BE -> C3 80..C3 9E.
  Expr latin = eq(prev, 0xC3) && c >= Expr(0xA0) && c <= Expr(0xBE) && !eq(c, 0xB7);
  return tir::select(ascii || latin, c - Expr(32), c);
}

}  // namespace kiln::lower::strings
