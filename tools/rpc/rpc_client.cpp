// The measurement protocol's client (rpc_client.h).
#include "rpc_client.h"

#include <unistd.h>

#include <vector>

#include "rpc_socket.h"

namespace kiln_rpc {

namespace {

// How long a reply may take beyond the candidate's own time limit (the
// server's fork, load and write-back).
constexpr int kReplySlackMs = 30000;
constexpr int kWriteTimeoutMs = 60000;

// A message of `type` in `m`'s payload decoded into *out, or the server's
// ErrorReply in *error. False with error->message when neither.
template <typename T>
bool Expect(const Message& m, MessageType type, T* out, ErrorReply* error) {
  std::string why;
  if (m.header.type == (uint16_t)type) {
    if (Decode(m.payload.data(), m.payload.size(), out, &why)) return true;
    error->code = 0;
    error->message = "invalid reply from the server: " + why;
    return false;
  }
  if (m.header.type == (uint16_t)MessageType::kError &&
      Decode(m.payload.data(), m.payload.size(), error, &why)) {
    return false;
  }
  error->code = 0;
  error->message = "unexpected reply from the server (message type " +
                   std::to_string(m.header.type) + ")";
  return false;
}

}  // namespace

Client::~Client() { Close(); }

void Client::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool Client::Open(const char* host_port, const std::string& token, int timeout_ms, std::string* why) {
  Close();
  std::string host;
  uint16_t port = 0;
  if (!ParseHostPort(host_port, &host, &port, why)) return false;
  if (token.size() > kMaxTokenBytes) return *why = "the token is longer than 256 bytes", false;
  fd_ = Connect(host.c_str(), port, timeout_ms, why);
  if (fd_ < 0) return false;
  Hello hello;
  hello.token = token;
  std::vector<uint8_t> payload;
  Encode(hello, &payload);
  Message reply;
  ErrorReply error;
  if (!WriteMessage(fd_, MessageType::kHello, payload, timeout_ms, why)) return Close(), false;
  if (ReadMessage(fd_, timeout_ms, timeout_ms, 0, &reply, why) != ReadResult::kOk) {
    *why = "no handshake reply from " + std::string(host_port) + (why->empty() ? "" : ": " + *why);
    return Close(), false;
  }
  if (!Expect(reply, MessageType::kHelloReply, &server_, &error)) {
    *why = error.code ? std::string("the server refused (") + ErrorCodeName(error.code) + "): " + error.message
                      : error.message;
    return Close(), false;
  }
  return true;
}

bool Client::Run(const RunRequest& request, RunReply* out, ErrorReply* error) {
  error->code = 0;
  if (fd_ < 0) return error->message = "not connected", false;
  std::vector<uint8_t> payload;
  Encode(request, &payload);
  if (payload.size() > server_.max_run_payload) {  // it would close the connection unread
    error->message = "the bundle (" + std::to_string(request.bundle_size) + " bytes) is larger than the server takes (" +
                     std::to_string(server_.max_run_payload) + " bytes in a message; its --max-message)";
    return false;
  }
  Message reply;
  std::string why;
  if (!WriteMessage(fd_, MessageType::kRun, payload, kWriteTimeoutMs, &why)) {
    error->message = "sending the bundle failed: " + why;
    return Close(), false;
  }
  int wait_ms = (int)request.timeout_ms + kReplySlackMs;
  ReadResult got = ReadMessage(fd_, wait_ms, kReplySlackMs, 0, &reply, &why);
  if (got != ReadResult::kOk) {
    error->message = got == ReadResult::kClosed ? "the server closed the connection" : "no reply: " + why;
    return Close(), false;
  }
  if (Expect(reply, MessageType::kRunReply, out, error)) return true;
  if (!error->code) Close();
  return false;
}

}  // namespace kiln_rpc
