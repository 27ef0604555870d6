// kilnc's progress line: on a terminal, a compilation that takes more than a
// second shows what it is doing on one line of stderr, rewritten in place
// ("[kilnc] lowering 120/340 nodes (1.4 s)") and erased when it ends. Not a
// terminal (a pipe, a file, a CI log): nothing is printed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

#include "support/progress.h"

namespace kiln {

class ProgressLine {
 public:
  // Shows the line only when `enabled` (kilnc: stderr is a terminal and no
  // dump or report writes to it).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();  // Finish()
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The receiver for CompileOptions::progress (empty when not enabled).
  ProgressFn receiver();
  // Stops the updates and erases the line, if it was shown.
  void Finish();
  // Prints `line` (a warning) on a line of its own, above the progress line.
  void Print(const std::string& line);

 private:
  void Report(const std::string& step, size_t done, size_t total, const char* unit);
  void Run();  // the thread: after the first second, redraws the line every 100 ms

  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string text_;      // the latest report, as the line shows it
  bool stop_ = false;
  size_t shown_ = 0;      // characters of the line last drawn (0: nothing shown)
  std::thread thread_;
};

}  // namespace kiln
