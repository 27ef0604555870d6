// Warnings of a compilation (diagnostics.h): one sink per thread, set by a
// WarningScope; repeated messages reported once.
#include "support/diagnostics.h"

#include <cstdio>
#include <set>

namespace kiln {

struct WarningScope::State {
  WarningFn sink;               // where this scope's warnings go
  std::set<std::string> seen;   // what it reported already
};

namespace {
thread_local WarningScope::State* g_scope = nullptr;  // the innermost scope of this thread
}  // namespace

WarningScope::WarningScope(WarningFn sink) : previous_(g_scope), state_(new State{std::move(sink), {}}) {
  g_scope = state_;
}

WarningScope::~WarningScope() {
  g_scope = previous_;
  delete state_;
}

void report_warning(const std::string& message) {
  if (g_scope && !g_scope->seen.insert(message).second) return;
  if (g_scope && g_scope->sink) g_scope->sink(message);
  else std::fprintf(stderr, "kilnc: warning: %s\n", message.c_str());
}

}  // namespace kiln
