// The client side of the measurement protocol: connect, shake hands, ask a
// `kiln rpc-server` to measure bundles. Used by `kiln bench --rpc` (and by
// the tuner). No Kiln headers.
#ifndef KILN_TOOLS_RPC_RPC_CLIENT_H_
#define KILN_TOOLS_RPC_RPC_CLIENT_H_

#include <stdint.h>

#include <string>

#include "rpc_protocol.h"

namespace kiln_rpc {

// One connection to a server; closed by the destructor.
class Client {
 public:
  Client() = default;
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects to "HOST:PORT" and sends Hello with `token` (empty: none).
  // False with *why (the server's error message when it refused).
  bool Open(const char* host_port, const std::string& token, int timeout_ms, std::string* why);
  // What the server said of itself in the handshake.
  const HelloReply& server() const { return server_; }

  // Measures a bundle. True with *out; false with *error (the server's
  // ErrorReply, or code 0 when the connection failed: *error.message says
  // how; the connection is then closed).
  bool Run(const RunRequest& request, RunReply* out, ErrorReply* error);

 private:
  int fd_ = -1;        // the socket, -1 when closed
  HelloReply server_;  // from the handshake
  void Close();
};

}  // namespace kiln_rpc

#endif  // KILN_TOOLS_RPC_RPC_CLIENT_H_
