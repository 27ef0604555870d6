// Units for the measurement protocol's codecs (tools/rpc/rpc_protocol.h):
// every message round-trips, and every truncation, bad count and oversized
// claim of a reply is refused without reading or allocating past the payload
// (the server decodes its candidates' bytes with these, the client its
// server's). Linked into the compiler's unit tests, whose kilnc uses the client.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rpc_protocol.h"

namespace {

using namespace kiln_rpc;

std::vector<uint8_t> u32s(std::initializer_list<uint32_t> values) {
  std::vector<uint8_t> out;
  for (uint32_t v : values)
    for (int i = 0; i < 4; i++) out.push_back((uint8_t)(v >> (8 * i)));
  return out;
}

TEST_CASE("rpc: every message round-trips") {
  std::vector<uint8_t> bundle = {1, 2, 3, 4, 5};
  RunRequest run;
  run.warmup = 2;
  run.repeats = 3;
  run.number = 4;
  run.threads = 2;
  run.device = 1;
  run.timeout_ms = 5000;
  run.flags = kRunDispatchTimes;
  run.bundle = bundle.data();
  run.bundle_size = bundle.size();
  std::vector<uint8_t> bytes;
  Encode(run, &bytes);
  RunRequest back;
  std::string why;
  REQUIRE(Decode(bytes.data(), bytes.size(), &back, &why));
  CHECK(back.repeats == 3);
  CHECK(back.flags == kRunDispatchTimes);
  CHECK(std::vector<uint8_t>(back.bundle, back.bundle + back.bundle_size) == bundle);

  RunReply reply;
  reply.device = "cpu";
  reply.repeat_ns = {10, 20};
  reply.dispatches = 3;
  reply.dispatch_ns = {1, 2, 3, 4, 5, 6};
  bytes.clear();
  Encode(reply, &bytes);
  RunReply reply_back;
  REQUIRE(Decode(bytes.data(), bytes.size(), &reply_back, &why));
  CHECK(reply_back.dispatch_ns == reply.dispatch_ns);

  HelloReply hello;
  hello.kiln_version = "0.5.0";
  hello.arch = "aarch64";
  hello.cpu_count = 4;
  hello.max_run_payload = 1ull << 28;
  bytes.clear();
  Encode(hello, &bytes);
  HelloReply hello_back;
  REQUIRE(Decode(bytes.data(), bytes.size(), &hello_back, &why));
  CHECK(hello_back.max_run_payload == hello.max_run_payload);
  CHECK(hello_back.arch == "aarch64");
}

TEST_CASE("rpc: a reply's counts are checked against its bytes") {
  RunReply out;
  std::string why;
  CHECK_FALSE(Decode(nullptr, 0, &out, &why));                     // empty
  std::vector<uint8_t> zero = u32s({0, 0});                        // device "", count 0
  CHECK_FALSE(Decode(zero.data(), zero.size(), &out, &why));
  CHECK(why.find("count") != std::string::npos);
  std::vector<uint8_t> short_count = u32s({0});                    // no count at all
  CHECK_FALSE(Decode(short_count.data(), short_count.size(), &out, &why));
  std::vector<uint8_t> missing = u32s({0, 1000});                  // 1000 repeats, no times
  CHECK_FALSE(Decode(missing.data(), missing.size(), &out, &why));
  CHECK(out.repeat_ns.empty());                                    // nothing allocated for them
  std::vector<uint8_t> claim = u32s({0, 1, 7, 0, 1u << 20});       // 2^20 dispatch times claimed, none sent
  CHECK_FALSE(Decode(claim.data(), claim.size(), &out, &why));
  CHECK(out.dispatch_ns.empty());
  std::vector<uint8_t> over = u32s({0, 2, 7, 0, 7, 0, (1u << 20) / 2 + 1});  // over the 2^20 limit
  CHECK_FALSE(Decode(over.data(), over.size(), &out, &why));
  CHECK(why.find("dispatches") != std::string::npos);
}

TEST_CASE("rpc: headers are checked before a payload is read") {
  Header h;
  h.type = (uint16_t)MessageType::kRun;
  h.payload_size = 1000;
  uint8_t bytes[kHeaderSize];
  EncodeHeader(h, bytes);
  Header back;
  std::string why;
  bool too_large = false;
  CHECK(DecodeHeader(bytes, 1000, &back, &why, &too_large));
  CHECK_FALSE(DecodeHeader(bytes, 999, &back, &why, &too_large));
  CHECK(too_large);
  h.type = (uint16_t)MessageType::kRunReply;  // replies: their own limit, not the Run limit
  h.payload_size = (uint32_t)kMaxRunReplyPayload;
  EncodeHeader(h, bytes);
  CHECK(DecodeHeader(bytes, 0, &back, &why, &too_large));
  h.type = (uint16_t)MessageType::kError;
  h.payload_size = (uint32_t)kMaxSmallPayload + 1;
  EncodeHeader(h, bytes);
  CHECK_FALSE(DecodeHeader(bytes, 1u << 30, &back, &why, &too_large));
  h.type = 9;
  h.payload_size = 0;
  EncodeHeader(h, bytes);
  CHECK_FALSE(DecodeHeader(bytes, 0, &back, &why, &too_large));
  CHECK_FALSE(too_large);
  CHECK(why.find("unknown message type 9") != std::string::npos);
  bytes[0] ^= 1;
  CHECK_FALSE(DecodeHeader(bytes, 0, &back, &why, &too_large));
  CHECK(why.find("not a Kiln RPC message") != std::string::npos);
}

TEST_CASE("rpc: tokens compare by content and length") {
  CHECK(TokensEqual("sesame", "sesame"));
  CHECK_FALSE(TokensEqual("sesame", "sesamE"));
  CHECK_FALSE(TokensEqual("sesame", std::string("sesame\0x", 8)));
  CHECK_FALSE(TokensEqual("", "a"));
  CHECK_FALSE(TokensEqual(std::string("a\0", 2), "a"));
  CHECK(TokensEqual("", ""));
}

}  // namespace
