// Ed25519 verification, written from RFC 8032 sections 5.1.3 (decoding) and
// 5.1.7 (verify).
//
// Field elements mod p = 2^255 - 19 are 16 signed 64-bit limbs of 16 bits
// each (value = sum limb[i] * 2^(16 i)). Products of two elements have 31
// columns; column 16 + i folds into column i times 38, since 2^256 = 38
// (mod p). Limbs stay below 2^20 in magnitude between operations, so every
// column sum stays below 2^50: no overflow anywhere. Points are in extended
// twisted Edwards coordinates (X : Y : Z : T), x = X/Z, y = Y/Z, x y = T/Z,
// added with one unified formula (Hisil, Wong, Carter, Dawson 2008) that is
// also used for doubling: complete on this curve, so no special cases.
#include "base/ed25519.h"

#include <string.h>

namespace {

static_assert((-65537LL >> 16) == -2, "arithmetic right shift of negative values");

struct Fe {
  int64_t v[16];  // limbs of 16 bits, signed between operations
};

struct Point {
  Fe x, y, z, t;  // extended coordinates
};

// Little-endian exponents and the group order L.
const uint8_t kPMinus2[32] = {0xeb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
const uint8_t kPMinus5Over8[32] = {0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f};
const uint8_t kPMinus1Over4[32] = {0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f};
const uint8_t kOrderL[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                             0xa2, 0xde, 0xf9, 0xde, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10};
// The base point B's encoding: y = 4/5, x even.
const uint8_t kBaseEncoded[32] = {0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
                                  0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
                                  0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66};

//===--- Field arithmetic mod p ------------------------------------------===//

Fe FeSmall(int64_t value) {
  Fe r;
  memset(&r, 0, sizeof(r));
  r.v[0] = value;
  return r;
}

// Moves each limb's bits above 16 into the next limb (the top one's, times
// 38, into limb 0). Limbs end in [0, 2^16) except limb 0, which may exceed
// it by the folded carry; a second pass settles it.
void FeCarry(Fe* a) {
  for (int i = 0; i < 16; ++i) {
    int64_t carry = a->v[i] >> 16;  // floor division, negative values too
    a->v[i] -= carry * 65536;
    if (i < 15) {
      a->v[i + 1] += carry;
    } else {
      a->v[0] += 38 * carry;
    }
  }
}

Fe FeAdd(const Fe& a, const Fe& b) {
  Fe r;
  for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] + b.v[i];
  return r;
}

Fe FeSub(const Fe& a, const Fe& b) {
  Fe r;
  for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] - b.v[i];
  return r;
}

Fe FeMul(const Fe& a, const Fe& b) {
  int64_t columns[31] = {0};
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) columns[i + j] += a.v[i] * b.v[j];
  }
  Fe r;
  for (int i = 0; i < 15; ++i) r.v[i] = columns[i] + 38 * columns[i + 16];
  r.v[15] = columns[15];
  FeCarry(&r);
  FeCarry(&r);
  return r;
}

Fe FeSquare(const Fe& a) { return FeMul(a, a); }

// a^e for a little-endian 255-bit exponent (square and multiply).
Fe FePow(const Fe& a, const uint8_t exponent[32]) {
  Fe r = FeSmall(1);
  for (int bit = 254; bit >= 0; --bit) {
    r = FeSquare(r);
    if ((exponent[bit / 8] >> (bit % 8)) & 1) r = FeMul(r, a);
  }
  return r;
}

Fe FeInvert(const Fe& a) { return FePow(a, kPMinus2); }  // Fermat: a^(p-2)

// The canonical 32-byte little-endian encoding (the value reduced below p).
void FePack(const Fe& a, uint8_t out[32]) {
  Fe t = a;
  FeCarry(&t);
  FeCarry(&t);
  FeCarry(&t);  // now every limb is in [0, 2^16): 0 <= t < 2^256 = 2p + 38
  for (int round = 0; round < 2; ++round) {  // subtract p while t >= p
    Fe m;
    int64_t borrow = 0;
    for (int i = 0; i < 16; ++i) {
      int64_t p_limb = i == 0 ? 0xffed : i == 15 ? 0x7fff : 0xffff;
      int64_t d = t.v[i] - p_limb - borrow;
      borrow = d < 0;
      m.v[i] = d + (borrow ? 65536 : 0);
    }
    if (!borrow) t = m;
  }
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = (uint8_t)t.v[i];
    out[2 * i + 1] = (uint8_t)(t.v[i] >> 8);
  }
}

// The low 255 bits of `in` (the caller checks the encoding is canonical).
Fe FeUnpack(const uint8_t in[32]) {
  Fe r;
  for (int i = 0; i < 16; ++i) r.v[i] = in[2 * i] | ((int64_t)in[2 * i + 1] << 8);
  r.v[15] &= 0x7fff;
  return r;
}

bool FeEqual(const Fe& a, const Fe& b) {
  uint8_t pa[32], pb[32];
  FePack(a, pa);
  FePack(b, pb);
  return memcmp(pa, pb, 32) == 0;
}

bool FeIsOdd(const Fe& a) {
  uint8_t packed[32];
  FePack(a, packed);
  return packed[0] & 1;
}

//===--- The curve -x^2 + y^2 = 1 + d x^2 y^2 -------------------------------===//

struct Curve {
  Fe d;          // -121665 / 121666
  Fe d2;         // 2 d
  Fe sqrt_m1;    // a square root of -1: 2^((p - 1) / 4)
};

Curve MakeCurve() {
  Curve c;
  c.d = FeMul(FeSmall(-121665), FeInvert(FeSmall(121666)));
  c.d2 = FeAdd(c.d, c.d);
  c.sqrt_m1 = FePow(FeSmall(2), kPMinus1Over4);
  return c;
}

Point PointAdd(const Curve& c, const Point& p, const Point& q) {
  Fe a = FeMul(FeSub(p.y, p.x), FeSub(q.y, q.x));
  Fe b = FeMul(FeAdd(p.y, p.x), FeAdd(q.y, q.x));
  Fe cc = FeMul(FeMul(p.t, c.d2), q.t);
  Fe zz = FeMul(p.z, q.z);
  Fe d = FeAdd(zz, zz);
  Fe e = FeSub(b, a), f = FeSub(d, cc), g = FeAdd(d, cc), h = FeAdd(b, a);
  Point r;
  r.x = FeMul(e, f);
  r.y = FeMul(g, h);
  r.t = FeMul(e, h);
  r.z = FeMul(f, g);
  return r;
}

Point PointNegate(const Point& p) {
  Point r = p;
  r.x = FeSub(FeSmall(0), p.x);
  r.t = FeSub(FeSmall(0), p.t);
  return r;
}

// RFC 8032 5.1.3: a point from its encoding; false if it is not one (y not
// below p, x^2 not a square, or x = 0 with the sign bit set).
bool PointDecode(const Curve& c, const uint8_t in[32], Point* out) {
  Fe y = FeUnpack(in);
  uint8_t canonical[32];
  FePack(y, canonical);
  canonical[31] |= in[31] & 0x80;
  if (memcmp(canonical, in, 32) != 0) return false;  // y >= p
  Fe y2 = FeSquare(y);
  Fe u = FeSub(y2, FeSmall(1));
  Fe v = FeAdd(FeMul(c.d, y2), FeSmall(1));
  // x = u v^3 (u v^7)^((p - 5) / 8), then fix up by sqrt(-1) if needed.
  Fe v3 = FeMul(FeSquare(v), v);
  Fe v7 = FeMul(FeSquare(v3), v);
  Fe x = FeMul(FeMul(u, v3), FePow(FeMul(u, v7), kPMinus5Over8));
  Fe vx2 = FeMul(v, FeSquare(x));
  if (!FeEqual(vx2, u)) {
    if (!FeEqual(vx2, FeSub(FeSmall(0), u))) return false;
    x = FeMul(x, c.sqrt_m1);
  }
  const bool sign = in[31] >> 7;
  if (FeEqual(x, FeSmall(0)) && sign) return false;
  if (FeIsOdd(x) != sign) x = FeSub(FeSmall(0), x);
  out->x = x;
  out->y = y;
  out->z = FeSmall(1);
  out->t = FeMul(x, y);
  return true;
}

// Whether [8]p is the neutral element (x = 0, y = z): p has order 1, 2, 4
// or 8. Nobody holds a private key for such a key, and under a cofactorless
// check it accepts forged signatures (R = neutral, S = 0), so it is refused.
bool PointHasSmallOrder(const Curve& c, Point p) {
  for (int i = 0; i < 3; ++i) p = PointAdd(c, p, p);
  return FeEqual(p.x, FeSmall(0)) && FeEqual(p.y, p.z);
}

void PointEncode(const Point& p, uint8_t out[32]) {
  Fe z_inverse = FeInvert(p.z);
  Fe x = FeMul(p.x, z_inverse);
  Fe y = FeMul(p.y, z_inverse);
  FePack(y, out);
  out[31] |= (uint8_t)(FeIsOdd(x) << 7);
}

// [a]P + [b]Q for 256-bit little-endian scalars (Straus: one doubling chain).
Point DoubleScalarMultiply(const Curve& c, const uint8_t a[32], const Point& p, const uint8_t b[32],
                           const Point& q) {
  const Point sum = PointAdd(c, p, q);
  Point r;
  r.x = FeSmall(0);
  r.y = FeSmall(1);
  r.z = FeSmall(1);
  r.t = FeSmall(0);  // the neutral element
  for (int bit = 255; bit >= 0; --bit) {
    r = PointAdd(c, r, r);
    const bool take_p = (a[bit / 8] >> (bit % 8)) & 1;
    const bool take_q = (b[bit / 8] >> (bit % 8)) & 1;
    if (take_p && take_q) {
      r = PointAdd(c, r, sum);
    } else if (take_p) {
      r = PointAdd(c, r, p);
    } else if (take_q) {
      r = PointAdd(c, r, q);
    }
  }
  return r;
}

//===--- Scalars mod L --------------------------------------------------------===//

// Whether the 32-byte little-endian `s` is below L.
bool ScalarIsCanonical(const uint8_t s[32]) {
  for (int i = 31; i >= 0; --i) {
    if (s[i] != kOrderL[i]) return s[i] < kOrderL[i];
  }
  return false;  // equal to L
}

// The 64-byte little-endian `wide` mod L, by binary long division: the
// remainder r < L < 2^253 doubles and takes the next bit, and L is
// subtracted whenever r reaches it. Slow (512 steps) and obviously right.
void ScalarReduce(const uint8_t wide[64], uint8_t out[32]) {
  uint32_t order[8], r[8] = {0};
  for (int i = 0; i < 8; ++i) {
    order[i] = (uint32_t)kOrderL[4 * i] | (uint32_t)kOrderL[4 * i + 1] << 8 |
               (uint32_t)kOrderL[4 * i + 2] << 16 | (uint32_t)kOrderL[4 * i + 3] << 24;
  }
  for (int bit = 511; bit >= 0; --bit) {
    for (int i = 7; i > 0; --i) r[i] = (r[i] << 1) | (r[i - 1] >> 31);  // r < 2^254: no loss
    r[0] = (r[0] << 1) | ((wide[bit / 8] >> (bit % 8)) & 1);
    bool at_least_l = true;  // r >= L ?
    for (int i = 7; i >= 0; --i) {
      if (r[i] != order[i]) {
        at_least_l = r[i] > order[i];
        break;
      }
    }
    if (!at_least_l) continue;
    uint64_t borrow = 0;
    for (int i = 0; i < 8; ++i) {
      uint64_t d = (uint64_t)r[i] - order[i] - borrow;
      r[i] = (uint32_t)d;
      borrow = (d >> 32) & 1;
    }
  }
  for (int i = 0; i < 8; ++i) {
    for (int k = 0; k < 4; ++k) out[4 * i + k] = (uint8_t)(r[i] >> (8 * k));
  }
}

}  // namespace

void kiln_ed25519_verify_begin(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                               const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                               kiln_sha512_t* sha) {
  kiln_sha512_init(sha);
  kiln_sha512_update(sha, signature, 32);  // R
  kiln_sha512_update(sha, public_key, 32);  // A
}

bool kiln_ed25519_verify_final(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                               const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                               kiln_sha512_t* sha) {
  uint8_t digest[KILN_SHA512_BYTES], k[32];
  kiln_sha512_final(sha, digest);
  const uint8_t* s = signature + 32;
  if (!ScalarIsCanonical(s)) return false;
  const Curve curve = MakeCurve();
  Point a, base;
  if (!PointDecode(curve, public_key, &a) || PointHasSmallOrder(curve, a)) return false;
  if (!PointDecode(curve, kBaseEncoded, &base)) return false;  // cannot fail
  ScalarReduce(digest, k);
  // R' = [S]B - [k]A; valid when R' encodes to the signature's R (which
  // also rejects non-canonical encodings of R).
  uint8_t r_check[32];
  PointEncode(DoubleScalarMultiply(curve, s, base, k, PointNegate(a)), r_check);
  return memcmp(r_check, signature, 32) == 0;
}

bool kiln_ed25519_verify(const uint8_t signature[KILN_ED25519_SIGNATURE_BYTES],
                         const uint8_t public_key[KILN_ED25519_PUBLIC_KEY_BYTES],
                         const uint8_t* message, size_t size) {
  kiln_sha512_t sha;
  kiln_ed25519_verify_begin(signature, public_key, &sha);
  if (size) kiln_sha512_update(&sha, message, size);
  return kiln_ed25519_verify_final(signature, public_key, &sha);
}
