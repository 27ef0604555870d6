// Search spaces of the schedules, CPU and GPU (AutoTVM's define_knob): a schedule
// asks `Knobs` for each choice it makes -- a tile size, a loop order, a
// prefetch distance -- giving the values it could take and its own
// hand-written pick. Compiling records every workload's space; the tuner
// (driver/tuner.h) measures points of it and a tuning log (tune/tuning_log.h)
// brings the best back into later compilations. Without a tuning context the
// hand-written picks are used, so a schedule reads the same either way.
//
// A workload is a schedule applied to one loop nest: its key names the
// schedule, the element type, the extents of the output and reduction loops
// and how the nest reads memory ("conv2d_blocked f32 [1,8,28,28,16;4,3,3,16]
// s1x1 d1x1"), so every kernel of a model (and of other models) with that
// nest shares one space and one tuned point.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::tune {

// One choice of a schedule.
struct Knob {
  std::string name;              // e.g. "rows"
  std::vector<int64_t> options;  // the values it may take (distinct; the fallback among them)
  int64_t fallback = 0;          // the hand-written choice
  std::string only_if;           // it matters only when knob `only_if` is `only_if_value` (empty: always)
  int64_t only_if_value = 0;     // (its value then)
};

// A workload's space: its knobs in the order the schedule asked.
struct Space {
  std::string schedule;      // "matmul", "conv2d_blocked", ...
  std::vector<Knob> knobs;   // in declaration order (a knob may depend on earlier ones)
  double flops = 0;          // 2 x the loop nest's multiply-adds (for GFLOP/s)
  std::vector<int64_t> extents;  // the output then the reduction extents (cost-model features)
};

// A point of a space: knob name -> value. Knobs it does not name take their fallback.
using Config = std::map<std::string, int64_t>;

// One compilation's tuning context (CompileOptions::tuning).
struct Tuning {
  std::map<std::string, Config> apply;         // workload key -> the point to compile (others: fallbacks)
  std::map<std::string, Space> spaces;         // workload key -> its space, as the schedules declared it
  std::map<std::string, std::string> kernel_workload;  // kernel name -> workload key (kernels whose lowering declared knobs)
  std::vector<std::string> dispatch_kernels;   // the kernel of each dispatch, in order (one dispatch per kernel)
  std::string current_kernel;                  // set by lowering while a kernel's schedule (or body) is made
};

// The key of a loop nest: "SCHEDULE TYPE [OUT,...;RED,...]", then the
// schedule caller's `variant` when not empty (what else shapes the nest's
// memory accesses: a convolution's strides and dilations, a matrix
// product's transposed or packed operands).
std::string workload_key(const std::string& schedule, const std::string& dtype, const std::vector<int64_t>& out,
                         const std::vector<int64_t>& reduce, const std::string& variant = "");

// A convolution's `variant`: "s1x1 d1x1" for strides 1x1, dilations 1x1.
std::string conv_variant(const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations);

// A schedule's view of one workload. With a null context every get() returns its fallback.
class Knobs {
 public:
  Knobs(Tuning* tuning, const std::string& schedule, const std::string& dtype, const std::vector<int64_t>& out,
        const std::vector<int64_t>& reduce, const std::string& variant = "");
  // Declares knob `name` (options deduplicated; `fallback` is added when
  // missing) and returns the value to compile: the configured one when it is
  // among the options, else the fallback. `only_if`/`only_if_value`: the
  // knob matters only when that knob has that value (the tuner then counts
  // points differing in it as one; canonical()).
  int64_t get(const std::string& name, std::vector<int64_t> options, int64_t fallback,
              const std::string& only_if = "", int64_t only_if_value = 0);
  const std::string& key() const { return key_; }
  // Whether knob `name` is in this workload's space (declared earlier, in
  // this compile or by another part of it: the winograd graph pass).
  bool declared(const std::string& name) const;
  // Knobs declared from now on without an `only_if` of their own matter
  // only when knob `name` is `value` (a conv's direct-kernel knobs, when
  // its "winograd" knob may pick another algorithm).
  void guard(const std::string& name, int64_t value) {
    guard_ = name;
    guard_value_ = value;
  }

 private:
  Tuning* tuning_;    // null: fallbacks only
  std::string key_;   // the workload's key
  Space* space_ = nullptr;       // its recorded space (in tuning_->spaces)
  const Config* config_ = nullptr;  // the point to compile, if any
  std::string guard_;               // guard(): the knob later declarations depend on (empty: none)
  int64_t guard_value_ = 0;         // (its value then)
};

// `c` with every knob of `space` set (the fallback where `c` has none) and
// each knob that does not matter at this point (Knob::only_if) at its
// fallback: points that compile alike compare equal.
Config canonical(const Space& space, const Config& c);
// canonical(space, c) without the knobs that do not matter at that point (what a summary shows).
Config active(const Space& space, const Config& c);
// The number of points of a space (saturating at 2^62).
int64_t space_size(const Space& space);
// The divisors of n up to `limit`, ascending.
std::vector<int64_t> divisors(int64_t n, int64_t limit);

}  // namespace kiln::tune
