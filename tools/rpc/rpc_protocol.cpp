// The protocol's framing and payload codecs (rpc_protocol.h, docs/rpc.md).
#include "rpc_protocol.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

namespace kiln_rpc {

namespace {

void PutU32(uint32_t v, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = (uint8_t)(v >> (8 * i));
}

// Appends fields to a payload.
struct Writer {
  std::vector<uint8_t>* out;  // the payload being written
  void U32(uint32_t v) {
    uint8_t b[4];
    PutU32(v, b);
    out->insert(out->end(), b, b + 4);
  }
  void U64(uint64_t v) {
    U32((uint32_t)v);
    U32((uint32_t)(v >> 32));
  }
  void Bytes(const void* data, size_t size) {
    U32((uint32_t)size);
    const uint8_t* p = (const uint8_t*)data;
    out->insert(out->end(), p, p + size);
  }
  void Text(const std::string& s) { Bytes(s.data(), s.size()); }
};

// Reads fields from a payload; the first failure sticks and says why.
struct Reader {
  const uint8_t* data;   // the payload
  size_t size;           // its bytes
  size_t at = 0;         // the next field's offset
  std::string* why;      // where a failure is explained
  bool ok = true;        // false after the first failure

  bool Fail(const char* field, const char* what) {
    if (ok) {
      char text[160];
      snprintf(text, sizeof text, "field '%s' %s (payload of %zu bytes)", field, what, size);
      *why = text;
    }
    ok = false;
    return false;
  }
  bool U32(const char* field, uint32_t* v) {
    if (!ok) return false;
    if (size - at < 4) return Fail(field, "runs past the end");
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= (uint32_t)data[at + i] << (8 * i);
    at += 4;
    return true;
  }
  bool U64(const char* field, uint64_t* v) {
    uint32_t lo = 0, hi = 0;
    if (!U32(field, &lo) || !U32(field, &hi)) return false;
    *v = ((uint64_t)hi << 32) | lo;
    return true;
  }
  // A length-prefixed field of at most `max` bytes, in place.
  bool Bytes(const char* field, size_t max, const uint8_t** p, size_t* n) {
    uint32_t length = 0;
    if (!U32(field, &length)) return false;
    if (length > max) return Fail(field, "is longer than its limit");
    if (size - at < length) return Fail(field, "runs past the end");
    *p = data + at;
    *n = length;
    at += length;
    return true;
  }
  bool Text(const char* field, size_t max, std::string* s) {
    const uint8_t* p = nullptr;
    size_t n = 0;
    if (!Bytes(field, max, &p, &n)) return false;
    s->assign((const char*)p, n);
    return true;
  }
  // A u32 in [lo, hi].
  bool Bounded(const char* field, uint32_t lo, uint32_t hi, uint32_t* v) {
    if (!U32(field, v)) return false;
    if (*v < lo || *v > hi) {
      char what[64];
      snprintf(what, sizeof what, "is %u, outside %u..%u", *v, lo, hi);
      return Fail(field, what);
    }
    return true;
  }
  // Every byte consumed.
  bool Done() {
    if (ok && at != size) return Fail("(end)", "is followed by unread bytes");
    return ok;
  }
};

}  // namespace

const char* ErrorCodeName(uint32_t code) {
  switch ((ErrorCode)code) {
    case ErrorCode::kBadMessage: return "bad message";
    case ErrorCode::kUnauthorized: return "unauthorized";
    case ErrorCode::kTooLarge: return "too large";
    case ErrorCode::kLoadFailed: return "load failed";
    case ErrorCode::kRunFailed: return "run failed";
    case ErrorCode::kCrashed: return "crashed";
    case ErrorCode::kTimedOut: return "timed out";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

void EncodeHeader(const Header& header, uint8_t out[kHeaderSize]) {
  PutU32(header.magic, out);
  out[4] = (uint8_t)header.version;
  out[5] = (uint8_t)(header.version >> 8);
  out[6] = (uint8_t)header.type;
  out[7] = (uint8_t)(header.type >> 8);
  PutU32(header.payload_size, out + 8);
}

bool DecodeHeader(const uint8_t in[kHeaderSize], uint64_t max_run_payload, Header* out,
                  std::string* why, bool* too_large) {
  *too_large = false;
  Reader r{in, kHeaderSize, 0, why};
  uint32_t version_and_type = 0;
  r.U32("magic", &out->magic);
  r.U32("version", &version_and_type);
  r.U32("payload_size", &out->payload_size);
  out->version = (uint16_t)version_and_type;
  out->type = (uint16_t)(version_and_type >> 16);
  char text[160];
  if (out->magic != kMagic) {
    snprintf(text, sizeof text, "not a Kiln RPC message (magic 0x%08x)", out->magic);
  } else if (out->version != kProtocolVersion) {
    snprintf(text, sizeof text, "protocol version %u; this side speaks %u", out->version,
             kProtocolVersion);
  } else if (out->type < (uint16_t)MessageType::kHello || out->type > (uint16_t)MessageType::kError) {
    snprintf(text, sizeof text, "unknown message type %u", out->type);
  } else {
    uint64_t limit = out->type == (uint16_t)MessageType::kRun        ? max_run_payload
                     : out->type == (uint16_t)MessageType::kRunReply ? kMaxRunReplyPayload
                                                                      : kMaxSmallPayload;
    if (out->payload_size <= limit) return true;
    *too_large = true;
    snprintf(text, sizeof text, "a payload of %u bytes is over the limit of %llu", out->payload_size,
             (unsigned long long)limit);
  }
  *why = text;
  return false;
}

void Encode(const Hello& in, std::vector<uint8_t>* out) {
  Writer w{out};
  w.U32(in.protocol);
  w.Text(in.token);
}

void Encode(const HelloReply& in, std::vector<uint8_t>* out) {
  Writer w{out};
  w.U32(in.protocol);
  w.Text(in.kiln_version);
  w.Text(in.arch);
  w.U32(in.cpu_count);
  w.U64(in.max_run_payload);
}

void Encode(const RunRequest& in, std::vector<uint8_t>* out) {
  Writer w{out};
  w.U32(in.warmup);
  w.U32(in.repeats);
  w.U32(in.number);
  w.U32(in.threads);
  w.U32(in.device);
  w.U32(in.vulkan_device);
  w.U32(in.timeout_ms);
  w.U32(in.flags);
  w.Bytes(in.bundle, in.bundle_size);
}

void Encode(const RunReply& in, std::vector<uint8_t>* out) {
  Writer w{out};
  w.Text(in.device);
  w.U32((uint32_t)in.repeat_ns.size());
  for (uint64_t ns : in.repeat_ns) w.U64(ns);
  w.U32(in.dispatches);
  for (uint64_t ns : in.dispatch_ns) w.U64(ns);
}

void Encode(const ErrorReply& in, std::vector<uint8_t>* out) {
  Writer w{out};
  w.U32(in.code);
  w.Text(in.message.size() > kMaxTextBytes ? in.message.substr(0, kMaxTextBytes) : in.message);
}

bool Decode(const uint8_t* data, size_t size, Hello* out, std::string* why) {
  Reader r{data, size, 0, why};
  r.U32("protocol", &out->protocol);
  r.Text("token", kMaxTokenBytes, &out->token);
  return r.Done();
}

bool Decode(const uint8_t* data, size_t size, HelloReply* out, std::string* why) {
  Reader r{data, size, 0, why};
  r.U32("protocol", &out->protocol);
  r.Text("kiln_version", kMaxTextBytes, &out->kiln_version);
  r.Text("arch", kMaxTextBytes, &out->arch);
  r.U32("cpu_count", &out->cpu_count);
  r.U64("max_run_payload", &out->max_run_payload);
  return r.Done();
}

bool Decode(const uint8_t* data, size_t size, RunRequest* out, std::string* why) {
  Reader r{data, size, 0, why};
  r.Bounded("warmup", 0, kMaxWarmup, &out->warmup);
  r.Bounded("repeats", 1, kMaxRepeats, &out->repeats);
  r.Bounded("number", 1, kMaxNumber, &out->number);
  r.Bounded("threads", 1, kMaxThreads, &out->threads);
  r.Bounded("device", 0, 2, &out->device);
  r.Bounded("vulkan_device", 0, 1u << 20, &out->vulkan_device);
  r.Bounded("timeout_ms", 1, kMaxTimeoutMs, &out->timeout_ms);
  r.Bounded("flags", 0, kRunDispatchTimes, &out->flags);
  r.Bytes("bundle", SIZE_MAX, &out->bundle, &out->bundle_size);  // bounded by the payload
  return r.Done();
}

bool Decode(const uint8_t* data, size_t size, RunReply* out, std::string* why) {
  Reader r{data, size, 0, why};
  uint32_t count = 0;
  r.Text("device", kMaxTextBytes, &out->device);
  if (!r.Bounded("count", 1, kMaxRepeats, &count)) return false;
  // Each list's bytes must be there before it is allocated.
  if ((size - r.at) / 8 < count) return r.Fail("repeat_ns", "runs past the end");
  out->repeat_ns.assign(count, 0);
  for (uint64_t& ns : out->repeat_ns) r.U64("repeat_ns", &ns);
  if (!r.Bounded("dispatches", 0, kMaxDispatchTimes / count, &out->dispatches)) return false;
  if ((size - r.at) / 8 < (size_t)count * out->dispatches) return r.Fail("dispatch_ns", "runs past the end");
  out->dispatch_ns.assign((size_t)count * out->dispatches, 0);
  for (uint64_t& ns : out->dispatch_ns) r.U64("dispatch_ns", &ns);
  return r.Done();
}

bool Decode(const uint8_t* data, size_t size, ErrorReply* out, std::string* why) {
  Reader r{data, size, 0, why};
  r.U32("code", &out->code);
  r.Text("message", kMaxTextBytes, &out->message);
  return r.Done();
}

bool TokensEqual(const std::string& a, const std::string& b) {
  size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? (unsigned char)a[i] : 0;
    unsigned char y = i < b.size() ? (unsigned char)b[i] : 0;
    diff |= (unsigned)(x ^ y);
  }
  return diff == 0;
}

}  // namespace kiln_rpc
