// One Run request measured in a child process (rpc_candidate.h).
//
// The child writes one message to the pipe: u16 type (RunReply or Error),
// then its payload. The parent treats those bytes as untrusted (the candidate
// ran arbitrary code in that process) and decodes them with the protocol's
// checks; anything else, or no result, is reported from the child's exit.
#include "rpc_candidate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common.h"
#include "rpc_socket.h"

namespace kiln_tool {

namespace {

using kiln_rpc::ErrorCode;
using kiln_rpc::MessageType;

constexpr size_t kMaxChildOutput = 2 + kiln_rpc::kMaxRunReplyPayload;  // the type, then the largest reply

// The child's message: the type, then the payload.
std::vector<uint8_t> ChildMessage(MessageType type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(2 + payload.size());
  out[0] = (uint8_t)type;
  out[1] = (uint8_t)((uint16_t)type >> 8);
  if (!payload.empty()) memcpy(out.data() + 2, payload.data(), payload.size());
  return out;
}

std::vector<uint8_t> ChildError(ErrorCode code, const std::string& message) {
  kiln_rpc::ErrorReply error;
  error.code = (uint32_t)code;
  error.message = message;
  std::vector<uint8_t> payload;
  kiln_rpc::Encode(error, &payload);
  return ChildMessage(MessageType::kError, payload);
}

// The measurement itself (in the child).
std::vector<uint8_t> Measure(const kiln_rpc::RunRequest& request,
                             const kiln_model_load_options_t& load_options) {
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(request.bundle, request.bundle_size, load_options, &model);
  if (!status.ok()) return ChildError(ErrorCode::kLoadFailed, status.message());
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = request.threads;
  options.device = request.device;
  options.vulkan_device = request.vulkan_device;
  kiln::Session session;
  status = kiln::Session::Create(model, &options, &session);
  if (!status.ok()) return ChildError(ErrorCode::kRunFailed, status.message());
  CommandArgs no_files;  // every input pseudo-random, at its largest shape
  std::vector<NpyArray> inputs;
  std::vector<bool> given;
  if (PrepareInputs(model, no_files, &inputs, &given) != kExitOk) {
    return ChildError(ErrorCode::kRunFailed, "cannot make the model's inputs");
  }
  for (uint32_t i = 0; i < request.warmup && status.ok(); ++i) {
    status = SetInputs(&session, inputs);
    if (status.ok()) status = session.run();
  }
  kiln_rpc::RunReply reply;
  reply.device = session.device_name();
  bool per_dispatch = request.flags & kiln_rpc::kRunDispatchTimes;
  size_t dispatches = per_dispatch ? session.dispatch_count() : 0;
  if (dispatches > kiln_rpc::kMaxDispatchTimes / request.repeats) {
    return ChildError(ErrorCode::kRunFailed, "too many dispatches to time each (" + std::to_string(dispatches) + ")");
  }
  if (per_dispatch && status.ok()) status = session.set_profiling(true);
  reply.dispatches = (uint32_t)dispatches;
  std::vector<uint64_t> sums(dispatches);
  for (uint32_t r = 0; r < request.repeats && status.ok(); ++r) {
    uint64_t total = 0;
    std::fill(sums.begin(), sums.end(), 0);
    for (uint32_t n = 0; n < request.number && status.ok(); ++n) {
      status = SetInputs(&session, inputs);  // untimed, as in kiln bench
      uint64_t start = NowNs();
      if (status.ok()) status = session.run();
      total += NowNs() - start;
      for (size_t d = 0; d < dispatches && status.ok(); ++d) {
        uint64_t ns = 0;
        status = session.get_dispatch_profile(d, &ns);
        sums[d] += ns;
      }
    }
    reply.repeat_ns.push_back(total / request.number);
    for (uint64_t sum : sums) reply.dispatch_ns.push_back(sum / request.number);
  }
  if (!status.ok()) return ChildError(ErrorCode::kRunFailed, status.message());
  std::vector<uint8_t> payload;
  kiln_rpc::Encode(reply, &payload);
  return ChildMessage(MessageType::kRunReply, payload);
}

[[noreturn]] void RunChild(const kiln_rpc::RunRequest& request,
                           const kiln_model_load_options_t& load_options, int out_fd,
                           const std::vector<int>& close_in_child) {
  for (int fd : close_in_child) close(fd);
  setpgid(0, 0);  // its own process group: the parent kills it and anything it starts
#if defined(__linux__)
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // and it dies with the server (a hanging candidate included)
  if (getppid() == 1) _exit(4);      // the server died before that took effect
#endif
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::vector<uint8_t> message = Measure(request, load_options);
  for (size_t done = 0; done < message.size();) {
    ssize_t n = write(out_fd, message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    done += (size_t)n;
  }
  _exit(0);
}

void SleepMs(int ms) {
  struct timespec t = {0, (long)ms * 1000000L};
  nanosleep(&t, nullptr);
}

std::string SignalText(int signal) {
  const char* name = strsignal(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(", ") + name : std::string());
}

void SetError(CandidateResult* out, ErrorCode code, const std::string& message) {
  out->ok = false;
  out->error.code = (uint32_t)code;
  out->error.message = message;
}

// Decodes the child's bytes into *out; false when they are not a valid result.
bool DecodeChild(const std::vector<uint8_t>& bytes, const kiln_rpc::RunRequest& request,
                 CandidateResult* out) {
  if (bytes.size() < 2) return false;
  uint16_t type = (uint16_t)(bytes[0] | bytes[1] << 8);
  std::string why;
  if (type == (uint16_t)MessageType::kRunReply) {
    out->ok = kiln_rpc::Decode(bytes.data() + 2, bytes.size() - 2, &out->reply, &why) &&
              out->reply.repeat_ns.size() == request.repeats &&
              (out->reply.dispatches == 0 || (request.flags & kiln_rpc::kRunDispatchTimes));
    return out->ok;
  }
  if (type == (uint16_t)MessageType::kError &&
      kiln_rpc::Decode(bytes.data() + 2, bytes.size() - 2, &out->error, &why)) {
    uint32_t code = out->error.code;
    return code == (uint32_t)ErrorCode::kLoadFailed || code == (uint32_t)ErrorCode::kRunFailed;
  }
  return false;
}

}  // namespace

void MeasureCandidate(const kiln_rpc::RunRequest& request,
                      const kiln_model_load_options_t& load_options,
                      const std::vector<int>& close_in_child, CandidateResult* out) {
  int fds[2];
  if (pipe(fds) != 0) return SetError(out, ErrorCode::kInternal, std::string("pipe: ") + strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return SetError(out, ErrorCode::kInternal, std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(request, load_options, fds[1], close_in_child);
  }
  close(fds[1]);
  setpgid(pid, pid);  // also here, so the group exists before any kill
  uint64_t deadline = kiln_rpc::MonotonicMs() + request.timeout_ms;
  auto left_ms = [&]() {
    uint64_t now = kiln_rpc::MonotonicMs();
    return now >= deadline ? 0 : (int)(deadline - now);
  };
  // The result, until the child closes its end or the time is up.
  std::vector<uint8_t> bytes;
  bool timed_out = false, oversized = false;
  for (;;) {
    struct pollfd p = {fds[0], POLLIN, 0};
    int ready = poll(&p, 1, left_ms());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    uint8_t chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (bytes.size() + (size_t)n > kMaxChildOutput) {
      oversized = true;
      break;
    }
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  close(fds[0]);
  // Its exit, within what is left of the time: seen without reaping it
  // (WNOWAIT), so that its process group cannot have been reused when the
  // group is killed below (anything the candidate left running in it).
  while (!timed_out) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if ((rc == 0 && info.si_pid == pid) || (rc < 0 && errno != EINTR)) break;
    if (left_ms() == 0) {
      timed_out = true;
      break;
    }
    SleepMs(1);
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return SetError(out, ErrorCode::kTimedOut,
                    "the candidate ran past its time limit of " + std::to_string(request.timeout_ms) +
                        " ms and was killed");
  }
  if (WIFSIGNALED(wait_status)) {
    return SetError(out, ErrorCode::kCrashed,
                    "the candidate crashed (" + SignalText(WTERMSIG(wait_status)) + ")");
  }
  int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  if (code == 0 && !oversized && DecodeChild(bytes, request, out)) return;
  SetError(out, ErrorCode::kCrashed,
           "the candidate's process ended (exit status " + std::to_string(code) +
               ") without a valid result");
}

}  // namespace kiln_tool
