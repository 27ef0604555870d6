// TCP for the measurement protocol: listening, connecting, and whole
// messages read and written against deadlines, so that a silent or slow peer
// costs a bounded wait. POSIX sockets and poll(); no Kiln headers.
#ifndef KILN_TOOLS_RPC_RPC_SOCKET_H_
#define KILN_TOOLS_RPC_RPC_SOCKET_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "rpc_protocol.h"

namespace kiln_rpc {

// Milliseconds on CLOCK_MONOTONIC.
uint64_t MonotonicMs();

// Whether `address` (a numeric IPv4 or IPv6 address, or "localhost") is a
// loopback address. Unparsable addresses are not.
bool IsLoopback(const char* address);

// A listening TCP socket on `address`:`port` (port 0: the system picks;
// *out_port is the port bound). Returns the descriptor, or -1 with *why.
int Listen(const char* address, uint16_t port, uint16_t* out_port, std::string* why);
// Waits up to `timeout_ms` (-1: forever) for a connection on `listener`:
// its descriptor (non-blocking: reads and writes wait in poll, against
// their deadlines), and the peer as "ADDR:PORT"; -2 on timeout, -1 with *why.
int Accept(int listener, int timeout_ms, std::string* peer, std::string* why);
// Connects to `host`:`port` (a name or numeric address) within `timeout_ms`.
// Returns the descriptor, or -1 with *why.
int Connect(const char* host, uint16_t port, int timeout_ms, std::string* why);
// Splits "HOST:PORT" (or "[V6]:PORT"). False with *why if malformed.
bool ParseHostPort(const char* text, std::string* host, uint16_t* port, std::string* why);

// What reading a message found.
enum class ReadResult {
  kOk,        // *out holds a message whose header passed DecodeHeader
  kClosed,    // the peer closed the connection before a header began
  kTimedOut,  // no header began within the idle time, or the message did not
              // complete within its time
  kTooLarge,  // the header announced a payload over the limit, or no memory for it (*why says so)
  kInvalid,   // a bad header, or the peer closed mid-message (*why says so)
  kError,     // the socket failed (*why)
};
// A received message.
struct Message {
  Header header;                 // its verified header
  std::vector<uint8_t> payload;  // header.payload_size bytes
};
// Reads one message from `fd`: waits up to `idle_ms` for its first byte, then
// up to `message_ms` for the rest. Run payloads may be up to `max_run_payload`
// bytes; the payload buffer grows as bytes arrive, not by the header's claim.
ReadResult ReadMessage(int fd, int idle_ms, int message_ms, uint64_t max_run_payload, Message* out,
                       std::string* why);
// Writes one message (header and payload) within `timeout_ms`. False with *why.
bool WriteMessage(int fd, MessageType type, const std::vector<uint8_t>& payload, int timeout_ms,
                  std::string* why);
// Encodes and writes an ErrorReply.
bool WriteError(int fd, ErrorCode code, const std::string& message, int timeout_ms, std::string* why);

}  // namespace kiln_rpc

#endif  // KILN_TOOLS_RPC_RPC_SOCKET_H_
