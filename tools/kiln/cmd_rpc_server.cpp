// kiln rpc-server [--port P] [--bind ADDR] [--token T] [--trusted-key HEX ...]
//                 [--max-message BYTES] [--idle-timeout S] [--io-timeout S]
// Measures bundles for a tuner (or `kiln bench --rpc`) over TCP: the device
// side of the measurement protocol (docs/rpc.md). One connection is served
// at a time, so measurements never overlap; each Run is measured in a child
// process (rpc_candidate.cpp), so a candidate that crashes or hangs is
// reported and the server goes on. Every message is size-limited and
// decoded with checks; a peer that stalls is dropped after a time-out.
// Listening beyond loopback requires a token: the server runs the machine
// code it is sent.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common.h"
#include "rpc_candidate.h"
#include "rpc_socket.h"

namespace kiln_tool {

namespace {

using kiln_rpc::ErrorCode;
using kiln_rpc::MessageType;
using kiln_rpc::ReadResult;

constexpr int kWriteTimeoutMs = 30000;
constexpr int kUnauthorizedDelayMs = 200;  // after a wrong token, before closing

enum ServerOption {
  kOptPort = 1000, kOptBind, kOptToken, kOptServerTrustedKey, kOptMaxMessage, kOptIdleTimeout,
  kOptIoTimeout, kOptServerHelp,
};

// The server's settings (from the command line).
struct ServerConfig {
  uint16_t port = 9190;                         // --port (0: any free port)
  std::string bind = "127.0.0.1";               // --bind
  std::string token;                            // --token or $KILN_RPC_TOKEN
  std::vector<uint8_t> trusted_keys;            // --trusted-key: 32 bytes each
  uint64_t max_run_payload = 256ull << 20;      // --max-message
  int idle_ms = 600000;                         // --idle-timeout: between requests
  int io_ms = 60000;                            // --io-timeout: one message's transfer
};

const char* Arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv)
  return "riscv64";
#else
  return "unknown";
#endif
}

// "[HH:MM:SS] peer: text" on stdout, flushed (the log a person or a test reads).
void Log(const std::string& peer, const std::string& text) {
  time_t now = time(nullptr);
  struct tm t;
  localtime_r(&now, &t);
  printf("[%02d:%02d:%02d] %s%s%s\n", t.tm_hour, t.tm_min, t.tm_sec, peer.c_str(),
         peer.empty() ? "" : ": ", text.c_str());
  fflush(stdout);
}

// Logs an error and writes it to the peer. False when the write failed
// (the connection is then closed: part of a frame may have gone out).
bool ReplyError(int fd, const std::string& peer, ErrorCode code, const std::string& message) {
  std::string why;
  Log(peer, std::string(kiln_rpc::ErrorCodeName((uint32_t)code)) + ": " + message);
  if (kiln_rpc::WriteError(fd, code, message, kWriteTimeoutMs, &why)) return true;
  Log(peer, "writing the error failed: " + why);
  return false;
}

std::string RunSummary(const kiln_rpc::RunRequest& r) {
  char text[160];
  snprintf(text, sizeof text, "run of a %zu-byte bundle, %u x %u runs, %u thread%s", r.bundle_size,
           r.repeats, r.number, r.threads, r.threads == 1 ? "" : "s");
  return text;
}

// The handshake: Hello with the right token. False: the connection is done.
bool Handshake(int fd, const std::string& peer, const ServerConfig& config) {
  kiln_rpc::Message m;
  std::string why;
  ReadResult got = kiln_rpc::ReadMessage(fd, config.io_ms, config.io_ms, 0, &m, &why);
  if (got == ReadResult::kClosed || got == ReadResult::kError) return false;
  if (got != ReadResult::kOk || m.header.type != (uint16_t)MessageType::kHello) {
    ReplyError(fd, peer, ErrorCode::kBadMessage,
               got == ReadResult::kOk || got == ReadResult::kTooLarge
                   ? "the first message must be Hello"
                   : why);
    return false;
  }
  kiln_rpc::Hello hello;
  if (!kiln_rpc::Decode(m.payload.data(), m.payload.size(), &hello, &why)) {
    ReplyError(fd, peer, ErrorCode::kBadMessage, "Hello: " + why);
    return false;
  }
  if (hello.protocol != kiln_rpc::kProtocolVersion) {
    ReplyError(fd, peer, ErrorCode::kBadMessage,
               "the client speaks protocol " + std::to_string(hello.protocol) + ", this server " +
                   std::to_string(kiln_rpc::kProtocolVersion));
    return false;
  }
  if (!config.token.empty() && !kiln_rpc::TokensEqual(hello.token, config.token)) {
    ReplyError(fd, peer, ErrorCode::kUnauthorized, "wrong or missing token");
    struct timespec t = {0, kUnauthorizedDelayMs * 1000000L};
    nanosleep(&t, nullptr);
    return false;
  }
  kiln_rpc::HelloReply reply;
  reply.kiln_version = kiln_version();
  reply.arch = Arch();
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  reply.cpu_count = cpus > 0 ? (uint32_t)cpus : 1;
  reply.max_run_payload = config.max_run_payload;
  std::vector<uint8_t> payload;
  kiln_rpc::Encode(reply, &payload);
  if (!kiln_rpc::WriteMessage(fd, MessageType::kHelloReply, payload, kWriteTimeoutMs, &why)) return false;
  Log(peer, "connected");
  return true;
}

// Serves one connection until it closes, misbehaves or idles out.
void Serve(int fd, int listener, const std::string& peer, const ServerConfig& config) {
  if (!Handshake(fd, peer, config)) return;
  kiln_model_load_options_t load_options;
  kiln_model_load_options_init(&load_options);
  load_options.trusted_public_keys = config.trusted_keys.empty() ? nullptr : config.trusted_keys.data();
  load_options.trusted_public_key_count = config.trusted_keys.size() / 32;
  for (;;) {
    kiln_rpc::Message m;
    std::string why;
    ReadResult got = kiln_rpc::ReadMessage(fd, config.idle_ms, config.io_ms, config.max_run_payload, &m, &why);
    switch (got) {
      case ReadResult::kOk: break;
      case ReadResult::kClosed: return Log(peer, "closed");
      case ReadResult::kError: return Log(peer, why);
      case ReadResult::kTooLarge: ReplyError(fd, peer, ErrorCode::kTooLarge, why); return;
      case ReadResult::kTimedOut: ReplyError(fd, peer, ErrorCode::kBadMessage, why + "; closing"); return;
      case ReadResult::kInvalid: ReplyError(fd, peer, ErrorCode::kBadMessage, why); return;
    }
    // The framing is intact from here: a bad request gets an error and the
    // connection stays.
    if (m.header.type != (uint16_t)MessageType::kRun) {
      if (!ReplyError(fd, peer, ErrorCode::kBadMessage, "expected Run, got message type " + std::to_string(m.header.type))) {
        return;
      }
      continue;
    }
    kiln_rpc::RunRequest request;
    if (!kiln_rpc::Decode(m.payload.data(), m.payload.size(), &request, &why)) {
      if (!ReplyError(fd, peer, ErrorCode::kBadMessage, "Run: " + why)) return;
      continue;
    }
    CandidateResult result;
    MeasureCandidate(request, load_options, {fd, listener}, &result);
    std::vector<uint8_t> payload;
    if (!result.ok) {
      if (!ReplyError(fd, peer, (ErrorCode)result.error.code, RunSummary(request) + ": " + result.error.message)) return;
      continue;
    }
    uint64_t best = *std::min_element(result.reply.repeat_ns.begin(), result.reply.repeat_ns.end());
    char text[64];
    snprintf(text, sizeof text, ": ok on %s, best %.4f ms", result.reply.device.c_str(), best / 1e6);
    Log(peer, RunSummary(request) + text);
    kiln_rpc::Encode(result.reply, &payload);
    if (!kiln_rpc::WriteMessage(fd, MessageType::kRunReply, payload, kWriteTimeoutMs, &why)) {
      return Log(peer, "writing the result failed: " + why);
    }
  }
}

bool ParseSeconds(const char* text, int* out_ms) {
  uint64_t seconds = 0;
  if (!ParseCount(text, 86400, &seconds) || seconds == 0) return false;
  *out_ms = (int)(seconds * 1000);
  return true;
}

}  // namespace

const CommandHelp kRpcServerHelp = {
    "rpc-server", "[--port P] [--bind ADDR] [--token T] [options]",
    "Measures bundles sent by a tuner or `kiln bench --rpc` over TCP (docs/rpc.md):\n"
    "each on pseudo-random inputs, in a child process with a time limit, so a\n"
    "candidate that crashes or hangs is reported as failed and the server goes on.\n"
    "One connection at a time. Prints \"listening on ADDR:PORT\" first, then a line\n"
    "per connection and measurement. It runs the machine code it receives: beyond\n"
    "loopback a token is required, and --trusted-key limits it to signed bundles.\n"};

int CmdRpcServer(int argc, char** argv) {
  ServerConfig config;
  if (const char* env = getenv("KILN_RPC_TOKEN")) config.token = env;
  using kiln_cli::Arity;
  const kiln_cli::OptionTable table = {
      {kOptPort, "--port", Arity::kValue, "P", "TCP port (default 9190; 0: any free port)"},
      {kOptBind, "--bind", Arity::kValue, "ADDR",
       "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every\n"
       "interface, which requires a token)"},
      {kOptToken, "--token", Arity::kValue, "T",
       "clients must present this token (default $KILN_RPC_TOKEN; at most 256 bytes)"},
      {kOptServerTrustedKey, "--trusted-key", Arity::kValue, "HEX",
       "run only bundles signed by this Ed25519 public key (64 hex digits;\n"
       "repeatable: any of them)"},
      {kOptMaxMessage, "--max-message", Arity::kValue, "BYTES",
       "the largest bundle message taken, e.g. 64M (default 256M)"},
      {kOptIdleTimeout, "--idle-timeout", Arity::kValue, "S",
       "close a connection that sends no request for S seconds (default 600)"},
      {kOptIoTimeout, "--io-timeout", Arity::kValue, "S",
       "close a connection whose message takes longer than S seconds to\n"
       "arrive, and one that does not shake hands in that time (default 60)"},
      {kOptServerHelp, "--help", Arity::kFlag, "", "print this help and exit"},
  };
  kiln_cli::Parser parser(argc, argv);
  for (;;) {
    const kiln_cli::Option* option = nullptr;
    const char* value = nullptr;
    std::string error;
    kiln_cli::Next next = parser.Read(table, &option, &value, &error);
    if (next == kiln_cli::Next::kEnd) break;
    if (next == kiln_cli::Next::kError) return UsageError("%s", error.c_str());
    if (next == kiln_cli::Next::kPositional) return UsageError("unexpected argument '%s'", value);
    uint64_t number = 0;
    switch (option->id) {
      case kOptServerHelp:
        PrintCommandHelp(kRpcServerHelp, table);
        return kExitOk;
      case kOptPort:
        if (!ParseCount(value, 65535, &number)) return UsageError("--port needs 0..65535");
        config.port = (uint16_t)number;
        break;
      case kOptBind:
        config.bind = value;
        break;
      case kOptToken:
        config.token = value;
        break;
      case kOptServerTrustedKey: {
        int result = ParseTrustedKey(value, &config.trusted_keys);
        if (result != kContinue) return result;
        break;
      }
      case kOptMaxMessage:
        if (!kiln_cli::ParseByteCount(value, &config.max_run_payload) ||
            config.max_run_payload > 0xffffffffull) {
          return UsageError("--max-message needs a byte count up to 4G, such as 64M");
        }
        break;
      case kOptIdleTimeout:
        if (!ParseSeconds(value, &config.idle_ms)) return UsageError("--idle-timeout needs 1..86400 seconds");
        break;
      case kOptIoTimeout:
        if (!ParseSeconds(value, &config.io_ms)) return UsageError("--io-timeout needs 1..86400 seconds");
        break;
    }
  }
  if (config.token.size() > kiln_rpc::kMaxTokenBytes) return UsageError("the token is longer than 256 bytes");
  if (config.token.empty() && !kiln_rpc::IsLoopback(config.bind.c_str())) {
    return UsageError("listening on %s (beyond loopback) needs --token or $KILN_RPC_TOKEN: the server "
                      "runs the code it is sent", config.bind.c_str());
  }
  signal(SIGPIPE, SIG_IGN);
  std::string why;
  uint16_t port = 0;
  int listener = kiln_rpc::Listen(config.bind.c_str(), config.port, &port, &why);
  if (listener < 0) return Fail("%s", why.c_str());
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  printf("listening on %s:%u (kiln %s, %s, %ld CPUs%s%s)\n", config.bind.c_str(), port, kiln_version(),
         Arch(), cpus, config.token.empty() ? "" : ", token required",
         config.trusted_keys.empty() ? "" : ", signed bundles only");
  fflush(stdout);
  for (;;) {
    std::string peer;
    int fd = kiln_rpc::Accept(listener, -1, &peer, &why);
    if (fd < 0) {  // e.g. out of descriptors: note it and wait a little
      Log("", "accept failed: " + why);
      struct timespec t = {0, 100 * 1000000L};
      nanosleep(&t, nullptr);
      continue;
    }
    Serve(fd, listener, peer, config);
    close(fd);
  }
}

}  // namespace kiln_tool
