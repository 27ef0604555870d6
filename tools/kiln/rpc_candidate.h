// `kiln rpc-server`'s measurement of one Run request, in a child process: a
// candidate kernel that crashes, loops or corrupts memory takes only its own
// process down, and the server reports it and goes on.
#ifndef KILN_TOOLS_KILN_RPC_CANDIDATE_H_
#define KILN_TOOLS_KILN_RPC_CANDIDATE_H_

#include <vector>

#include "kiln/kiln.h"
#include "rpc_protocol.h"

namespace kiln_tool {

// What measuring a candidate gave.
struct CandidateResult {
  bool ok = false;                // true: `reply` holds the timings; false: `error` says why
  kiln_rpc::RunReply reply;       // the device and one mean per repeat
  kiln_rpc::ErrorReply error;     // load/run failures, crashes, time-outs
};

// Forks; the child loads `request.bundle` with `load_options`, fills its
// inputs with pseudo-random values, runs it request.warmup times, then
// request.repeats x request.number timed runs, and writes the result to a
// pipe. The parent waits at most request.timeout_ms for the child's result
// and exit, then kills its process group. `close_in_child`: descriptors the
// child closes first (the server's sockets).
void MeasureCandidate(const kiln_rpc::RunRequest& request,
                      const kiln_model_load_options_t& load_options,
                      const std::vector<int>& close_in_child, CandidateResult* out);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_RPC_CANDIDATE_H_
