// The progress line of progress_line.h: reports only record the text; one
// thread draws it, so a long step with no report (LLVM's optimizer) still
// shows its elapsed time.
#include "kilnc/progress_line.h"

#include <cstdio>

namespace kiln {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {
  if (enabled_) thread_ = std::thread([this] { Run(); });
}

ProgressLine::~ProgressLine() { Finish(); }

ProgressFn ProgressLine::receiver() {
  if (!enabled_) return {};
  return [this](const std::string& step, size_t done, size_t total, const char* unit) {
    Report(step, done, total, unit);
  };
}

void ProgressLine::Report(const std::string& step, size_t done, size_t total, const char* unit) {
  std::string text = step;
  if (total) {
    text += " " + std::to_string(done) + "/" + std::to_string(total);
    if (unit && *unit) text += std::string(" ") + unit;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  text_ = std::move(text);
}

void ProgressLine::Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shown_) fprintf(stderr, "\r%*s\r", (int)shown_, "");  // the next redraw draws it again, below
  shown_ = 0;
  fprintf(stderr, "%s\n", line.c_str());
  fflush(stderr);
}

void ProgressLine::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Nothing for the first second: quick compilations stay quiet.
  if (wake_.wait_until(lock, start_ + std::chrono::seconds(1), [this] { return stop_; })) return;
  while (!stop_) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char elapsed[32];
    snprintf(elapsed, sizeof(elapsed), " (%.1f s)", seconds);
    std::string line = "[kilnc] " + text_ + elapsed;
    size_t width = line.size();
    if (width < shown_) line.append(shown_ - width, ' ');  // cover the longer line before
    fprintf(stderr, "\r%s", line.c_str());
    fflush(stderr);
    shown_ = width;
    wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
  }
}

void ProgressLine::Finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (shown_) {  // erase it: what follows (an error, the shell prompt) starts on a clean line
    fprintf(stderr, "\r%*s\r", (int)shown_, "");
    fflush(stderr);
    shown_ = 0;
  }
}

}  // namespace kiln
