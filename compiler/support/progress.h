// Progress reports of a compilation, for kilnc's progress line: the pipeline
// says what it is doing and, for work over a list, how far it is. A report
// is cheap (the receiver only records it); nothing is reported without a
// receiver.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace kiln {

// `step` is under way: `done` of `total` `unit` ("lowering", 120, 340,
// "nodes"); total 0 when the step is not counted.
using ProgressFn = std::function<void(const std::string& step, size_t done, size_t total, const char* unit)>;

inline void report_progress(const ProgressFn& progress, const std::string& step, size_t done = 0,
                            size_t total = 0, const char* unit = "") {
  if (progress) progress(step, done, total, unit);
}

}  // namespace kiln
