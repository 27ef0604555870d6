// TCP with deadlines for the measurement protocol (rpc_socket.h).
#include "rpc_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <new>

namespace kiln_rpc {

namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

// Milliseconds left until `deadline` (0 when past).
int Remaining(uint64_t deadline) {
  uint64_t now = MonotonicMs();
  return now >= deadline ? 0 : (int)(deadline - now > 0x7fffffff ? 0x7fffffff : deadline - now);
}

// Waits for `events` on `fd` until `deadline` (~0: forever): 1 ready, 0 timed out, -1 error.
int Wait(int fd, short events, uint64_t deadline) {
  for (;;) {
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, deadline == ~0ull ? -1 : Remaining(deadline));
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? -1 : n;
  }
}

enum class Got { kAll, kClosedAtStart, kClosedInside, kTimedOut, kError };

// Reads exactly `size` bytes into `out` before `deadline`.
Got ReadExactly(int fd, uint8_t* out, size_t size, uint64_t deadline, std::string* why) {
  size_t done = 0;
  while (done < size) {
    int ready = Wait(fd, POLLIN, deadline);
    if (ready < 0) return *why = Errno("poll"), Got::kError;
    if (ready == 0) return Got::kTimedOut;
    ssize_t n = recv(fd, out + done, size - done, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return *why = Errno("recv"), Got::kError;
    if (n == 0) return done == 0 ? Got::kClosedAtStart : Got::kClosedInside;
    done += (size_t)n;
  }
  return Got::kAll;
}

bool WriteAll(int fd, const uint8_t* data, size_t size, uint64_t deadline, std::string* why) {
  size_t done = 0;
  while (done < size) {
    int ready = Wait(fd, POLLOUT, deadline);
    if (ready <= 0) {
      *why = ready == 0 ? "timed out writing to the peer" : Errno("poll");
      return false;
    }
    ssize_t n = send(fd, data + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      *why = Errno("send");
      return false;
    }
    done += (size_t)n;
  }
  return true;
}

// Resolves `host` (numeric or a name) to socket addresses.
struct addrinfo* Resolve(const char* host, uint16_t port, bool passive, std::string* why) {
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  char service[8];
  snprintf(service, sizeof service, "%u", port);
  struct addrinfo* list = nullptr;
  int rc = getaddrinfo(host, service, &hints, &list);
  if (rc != 0) {
    *why = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    return nullptr;
  }
  return list;
}

std::string Describe(const struct sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (address->sa_family == AF_INET) {
    const struct sockaddr_in* a = (const struct sockaddr_in*)address;
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (address->sa_family == AF_INET6) {
    const struct sockaddr_in6* a = (const struct sockaddr_in6*)address;
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  return std::string(text) + ":" + std::to_string(port);
}

}  // namespace

uint64_t MonotonicMs() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

bool IsLoopback(const char* address) {
  if (!strcmp(address, "localhost")) return true;
  struct in_addr v4;
  if (inet_pton(AF_INET, address, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  struct in6_addr v6;
  if (inet_pton(AF_INET6, address, &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

int Listen(const char* address, uint16_t port, uint16_t* out_port, std::string* why) {
  struct addrinfo* list = Resolve(address, port, true, why);
  if (!list) return -1;
  int fd = -1;
  for (struct addrinfo* a = list; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      *why = Errno("socket");
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 8) != 0) {
      *why = Errno("bind/listen on ") + Describe(a->ai_addr);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) return -1;
  struct sockaddr_storage bound;
  socklen_t length = sizeof bound;
  getsockname(fd, (struct sockaddr*)&bound, &length);
  *out_port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6*)&bound)->sin6_port)
                                          : ntohs(((struct sockaddr_in*)&bound)->sin_port);
  return fd;
}

int Accept(int listener, int timeout_ms, std::string* peer, std::string* why) {
  int ready = Wait(listener, POLLIN, timeout_ms < 0 ? ~0ull : MonotonicMs() + (uint64_t)timeout_ms);
  if (ready < 0) return *why = Errno("poll"), -1;
  if (ready == 0) return -2;
  struct sockaddr_storage address;
  socklen_t length = sizeof address;
  int fd = accept4(listener, (struct sockaddr*)&address, &length, SOCK_CLOEXEC | SOCK_NONBLOCK);  // writes wait in poll, never in send
  if (fd < 0) return *why = Errno("accept"), -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *peer = Describe((struct sockaddr*)&address);
  return fd;
}

int Connect(const char* host, uint16_t port, int timeout_ms, std::string* why) {
  struct addrinfo* list = Resolve(host, port, false, why);
  if (!list) return -1;
  uint64_t deadline = MonotonicMs() + (uint64_t)timeout_ms;
  int fd = -1;
  for (struct addrinfo* a = list; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      *why = Errno("socket");
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int error = 0;
      socklen_t length = sizeof error;
      if (Wait(fd, POLLOUT, deadline) <= 0) {
        error = ETIMEDOUT;
      } else {
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      }
      rc = error ? -1 : 0;
      errno = error;
    }
    if (rc != 0) {
      *why = std::string("cannot connect to ") + Describe(a->ai_addr) + ": " + strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool ParseHostPort(const char* text, std::string* host, uint16_t* port, std::string* why) {
  std::string s = text;
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    *why = std::string("'") + text + "' is not HOST:PORT";
    return false;
  }
  *host = s.substr(0, colon);
  if (host->size() > 2 && (*host)[0] == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  char* end = nullptr;
  unsigned long value = strtoul(s.c_str() + colon + 1, &end, 10);
  if (*end || value == 0 || value > 65535) {
    *why = std::string("'") + text + "': the port must be 1..65535";
    return false;
  }
  *port = (uint16_t)value;
  return true;
}

ReadResult ReadMessage(int fd, int idle_ms, int message_ms, uint64_t max_run_payload, Message* out,
                       std::string* why) {
  uint8_t header[kHeaderSize];
  // The first byte within the idle time, then the whole message within its time.
  Got got = ReadExactly(fd, header, 1, MonotonicMs() + (uint64_t)idle_ms, why);
  if (got == Got::kClosedAtStart) return ReadResult::kClosed;
  if (got == Got::kTimedOut) return *why = "the peer sent nothing", ReadResult::kTimedOut;
  if (got == Got::kError) return ReadResult::kError;
  uint64_t deadline = MonotonicMs() + (uint64_t)message_ms;
  got = ReadExactly(fd, header + 1, kHeaderSize - 1, deadline, why);
  if (got == Got::kTimedOut) return *why = "the header did not arrive in time", ReadResult::kTimedOut;
  if (got == Got::kClosedAtStart || got == Got::kClosedInside) {
    return *why = "the peer closed the connection inside a header", ReadResult::kInvalid;
  }
  if (got == Got::kError) return ReadResult::kError;
  bool too_large = false;
  if (!DecodeHeader(header, max_run_payload, &out->header, why, &too_large)) {
    return too_large ? ReadResult::kTooLarge : ReadResult::kInvalid;
  }
  // Grow the buffer with the bytes that arrive (at most 1 MiB ahead of them),
  // so that a header's claim alone reserves no memory.
  out->payload.clear();
  size_t total = out->header.payload_size;
  while (out->payload.size() < total) {
    size_t chunk = total - out->payload.size();
    if (chunk > (1u << 20)) chunk = 1u << 20;
    size_t at = out->payload.size();
    try {
      out->payload.resize(at + chunk);
    } catch (const std::bad_alloc&) {
      out->payload = std::vector<uint8_t>();
      char text[128];
      snprintf(text, sizeof text, "no memory for a payload of %zu bytes", total);
      return *why = text, ReadResult::kTooLarge;
    }
    got = ReadExactly(fd, out->payload.data() + at, chunk, deadline, why);
    if (got == Got::kTimedOut) {
      char text[128];
      snprintf(text, sizeof text, "the payload did not arrive in time (%zu of %zu bytes)", at, total);
      return *why = text, ReadResult::kTimedOut;
    }
    if (got == Got::kClosedAtStart || got == Got::kClosedInside) {
      char text[128];
      snprintf(text, sizeof text, "the peer closed the connection inside a payload (%zu of %zu bytes)",
               at, total);
      return *why = text, ReadResult::kInvalid;
    }
    if (got == Got::kError) return ReadResult::kError;
  }
  return ReadResult::kOk;
}

bool WriteMessage(int fd, MessageType type, const std::vector<uint8_t>& payload, int timeout_ms,
                  std::string* why) {
  if (payload.size() > 0xffffffffu) return *why = "payload too large for the protocol", false;
  Header header;
  header.type = (uint16_t)type;
  header.payload_size = (uint32_t)payload.size();
  uint8_t bytes[kHeaderSize];
  EncodeHeader(header, bytes);
  uint64_t deadline = MonotonicMs() + (uint64_t)timeout_ms;
  return WriteAll(fd, bytes, kHeaderSize, deadline, why) &&
         WriteAll(fd, payload.data(), payload.size(), deadline, why);
}

bool WriteError(int fd, ErrorCode code, const std::string& message, int timeout_ms, std::string* why) {
  ErrorReply reply;
  reply.code = (uint32_t)code;
  reply.message = message;
  std::vector<uint8_t> payload;
  Encode(reply, &payload);
  return WriteMessage(fd, MessageType::kError, payload, timeout_ms, why);
}

}  // namespace kiln_rpc
