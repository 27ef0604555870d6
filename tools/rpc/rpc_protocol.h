// The measurement protocol between a tuner (or `kiln bench --rpc`) and
// `kiln rpc-server` on the device: message framing, the five messages and
// their codecs. Plain C++17 and libc, no Kiln headers: the kiln tool and
// kilnc both build it. docs/rpc.md is the specification; this file is its
// one implementation, so a change here is a change of the protocol version.
//
// Every message is a 12-byte header followed by its payload:
//   u32 magic "KRPC" | u16 version | u16 type | u32 payload length
// then the payload's fields in order, little-endian; `bytes` fields are a
// u32 length followed by that many bytes. A decoder consumes the payload
// exactly: a field past its end or bytes left over make the message invalid.
#ifndef KILN_TOOLS_RPC_RPC_PROTOCOL_H_
#define KILN_TOOLS_RPC_RPC_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace kiln_rpc {

constexpr uint32_t kMagic = 0x4350524Bu;  // "KRPC" read as a little-endian u32
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kHeaderSize = 12;

// Limits every peer checks (docs/rpc.md, Limits).
constexpr size_t kMaxTokenBytes = 256;       // Hello.token
constexpr size_t kMaxTextBytes = 4096;       // names, versions, error messages
constexpr size_t kMaxSmallPayload = 65536;   // every message but Run
constexpr uint32_t kMaxWarmup = 1000;        // Run.warmup
constexpr uint32_t kMaxRepeats = 1000;       // Run.repeats
constexpr uint32_t kMaxNumber = 100000;      // Run.number
constexpr uint32_t kMaxThreads = 256;        // Run.threads
constexpr uint32_t kMaxTimeoutMs = 3600000;  // Run.timeout_ms (an hour)
constexpr uint32_t kMaxDispatchTimes = 1u << 20;  // RunReply: repeats x dispatches at most
// The largest RunReply payload: the device name, the repeats' and the
// dispatches' times at their limits.
constexpr size_t kMaxRunReplyPayload = 4 + kMaxTextBytes + 4 + 8 * kMaxRepeats + 4 + 8 * (size_t)kMaxDispatchTimes;

// Run.flags.
constexpr uint32_t kRunDispatchTimes = 1;  // also time every dispatch (kiln_session_set_profiling)

enum class MessageType : uint16_t {
  kHello = 1,       // client -> server, first on every connection
  kHelloReply = 2,  // server -> client: the handshake succeeded
  kRun = 3,         // client -> server: measure a bundle
  kRunReply = 4,    // server -> client: the measurement
  kError = 5,       // server -> client: a request failed
};

// ErrorReply.code.
enum class ErrorCode : uint32_t {
  kBadMessage = 1,    // framing or fields invalid (the server closes the connection
                      // when the framing itself was wrong)
  kUnauthorized = 2,  // wrong or missing token (the connection is closed)
  kTooLarge = 3,      // a payload above the server's limit (the connection is closed)
  kLoadFailed = 4,    // the runtime refused the bundle (its status message follows)
  kRunFailed = 5,     // the session failed to run (its status message follows)
  kCrashed = 6,       // the candidate's process died (a signal or an exit status)
  kTimedOut = 7,      // the candidate ran past Run.timeout_ms and was killed
  kInternal = 8,      // the server could not measure (fork, pipe): not the candidate's fault
};
// "bad message", "unauthorized", ...; "unknown" for other values.
const char* ErrorCodeName(uint32_t code);

// A message's header.
struct Header {
  uint32_t magic = kMagic;            // kMagic
  uint16_t version = kProtocolVersion;  // kProtocolVersion
  uint16_t type = 0;                  // a MessageType
  uint32_t payload_size = 0;          // bytes after the header
};
// The header's 12 bytes.
void EncodeHeader(const Header& header, uint8_t out[kHeaderSize]);
// Parses and checks a header: the magic, the version, a known type, and a
// payload of at most `max_run_payload` bytes for Run, kMaxRunReplyPayload
// for RunReply, kMaxSmallPayload for the others. False with *why (and
// *too_large for a size over the limit).
bool DecodeHeader(const uint8_t in[kHeaderSize], uint64_t max_run_payload, Header* out,
                  std::string* why, bool* too_large);

// Hello: u32 protocol version the client speaks | bytes token (may be empty).
struct Hello {
  uint32_t protocol = kProtocolVersion;  // the client's kProtocolVersion
  std::string token;                     // the server's --token, or empty
};
// HelloReply: u32 protocol | bytes kiln version | bytes arch | u32 cpu count |
// u64 max Run payload.
struct HelloReply {
  uint32_t protocol = kProtocolVersion;  // the server's kProtocolVersion
  std::string kiln_version;              // kiln_version() of the server's runtime
  std::string arch;                      // "x86_64", "aarch64", "arm" (the loader's names)
  uint32_t cpu_count = 0;                // online CPUs on the device
  uint64_t max_run_payload = 0;          // the largest Run payload the server takes
};
// Run: u32 warmup | u32 repeats | u32 number | u32 threads | u32 device |
// u32 vulkan_device | u32 timeout_ms | u32 flags | bytes bundle. The server
// loads the bundle, fills its inputs with pseudo-random values, runs it
// `warmup` times untimed, then `repeats` times `number` runs; each repeat's
// mean time is one result (and, with kRunDispatchTimes, each dispatch's).
struct RunRequest {
  uint32_t warmup = 1;          // untimed runs first (0..kMaxWarmup)
  uint32_t repeats = 1;         // results wanted (1..kMaxRepeats)
  uint32_t number = 1;          // runs per result, averaged (1..kMaxNumber)
  uint32_t threads = 1;         // the session's threads (1..kMaxThreads)
  uint32_t device = 0;          // kiln_device_kind_t: 0 the bundle's, 1 CPU, 2 Vulkan
  uint32_t vulkan_device = 0;   // 0: automatic; i + 1: physical device i
  uint32_t timeout_ms = 10000;  // load and every run together (1..kMaxTimeoutMs)
  uint32_t flags = 0;           // kRunDispatchTimes, or 0
  const uint8_t* bundle = nullptr;  // the bundle's bytes (not owned; the
  size_t bundle_size = 0;           // message's payload when decoded)
};
// RunReply: bytes device name | u32 count | u64 nanoseconds per run, for
// each repeat | u32 dispatches | u64 nanoseconds per run of each dispatch,
// for each repeat (repeat-major; dispatches is 0 without kRunDispatchTimes).
struct RunReply {
  std::string device;               // "cpu" or the Vulkan device's name
  std::vector<uint64_t> repeat_ns;  // one mean per repeat (Run.repeats of them)
  uint32_t dispatches = 0;          // dispatches timed (0: not asked)
  std::vector<uint64_t> dispatch_ns;  // [repeat * dispatches + d]: dispatch d's mean in that repeat
};
// Error: u32 code | bytes message.
struct ErrorReply {
  uint32_t code = 0;    // an ErrorCode
  std::string message;  // what failed, for a person
};

// Payload codecs. Encode appends the payload (no header); Decode checks
// every field and its limits and returns false with *why.
void Encode(const Hello& in, std::vector<uint8_t>* out);
void Encode(const HelloReply& in, std::vector<uint8_t>* out);
void Encode(const RunRequest& in, std::vector<uint8_t>* out);
void Encode(const RunReply& in, std::vector<uint8_t>* out);
void Encode(const ErrorReply& in, std::vector<uint8_t>* out);
bool Decode(const uint8_t* data, size_t size, Hello* out, std::string* why);
bool Decode(const uint8_t* data, size_t size, HelloReply* out, std::string* why);
bool Decode(const uint8_t* data, size_t size, RunRequest* out, std::string* why);
bool Decode(const uint8_t* data, size_t size, RunReply* out, std::string* why);
bool Decode(const uint8_t* data, size_t size, ErrorReply* out, std::string* why);

// Whether two tokens are equal, in time that depends only on the longer
// one's length (not on where they differ).
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace kiln_rpc

#endif  // KILN_TOOLS_RPC_RPC_PROTOCOL_H_
