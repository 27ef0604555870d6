// Units for the tuner's pieces below the search (compiler/tune/): the knobs
// a schedule declares and reads (space.h), the tuning log's lines and its
// choice of points (tuning_log.h), and the matmul schedule's space as a
// compilation records it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "support/diagnostics.h"
#include "te/schedule.h"
#include "lower/schedules_cpu.h"
#include "tune/space.h"
#include "tune/tuning_log.h"

namespace {

using namespace kiln;
using namespace kiln::tune;

TEST_CASE("tune: knobs without a context are the hand-written choices") {
  Knobs k(nullptr, "matmul", "f32", {128, 256}, {64});
  CHECK(k.key() == "matmul f32 [128,256;64]");
  CHECK(k.get("rows", {1, 2, 4}, 4) == 4);
  CHECK(k.get("order", {0, 1}, 7) == 7);  // even a fallback outside the options
}

TEST_CASE("tune: knobs record the space and apply a configured point") {
  Tuning t;
  t.current_kernel = "k3_matmul";
  {
    Knobs k(&t, "matmul", "f32", {1, 128, 256}, {64});
    CHECK(k.get("rows", {4, 1, 2, 2}, 8) == 8);  // no point configured: the fallback
    CHECK(k.get("k_block", {0, 32}, 0) == 0);
  }
  REQUIRE(t.spaces.count("matmul f32 [1,128,256;64]"));
  const Space& s = t.spaces.at("matmul f32 [1,128,256;64]");
  CHECK(s.schedule == "matmul");
  CHECK(s.flops == doctest::Approx(2.0 * 128 * 256 * 64));
  CHECK(s.extents == std::vector<int64_t>{1, 128, 256, 64});
  REQUIRE(s.knobs.size() == 2);
  CHECK(s.knobs[0].options == std::vector<int64_t>{1, 2, 4, 8});  // deduplicated, sorted, the fallback added
  CHECK(s.knobs[0].fallback == 8);
  CHECK(space_size(s) == 8);
  CHECK(t.kernel_workload.at("k3_matmul") == "matmul f32 [1,128,256;64]");

  t.apply["matmul f32 [1,128,256;64]"] = {{"rows", 2}, {"k_block", 5}};
  Knobs again(&t, "matmul", "f32", {1, 128, 256}, {64});
  CHECK(again.get("rows", {1, 2, 4}, 8) == 2);        // configured
  CHECK(again.get("k_block", {0, 32}, 0) == 0);      // 5 is not an option: the fallback
  CHECK(again.get("rows_outer", {0, 1}, 0) == 0);    // not configured
  CHECK(t.spaces.at("matmul f32 [1,128,256;64]").knobs.size() == 3);
}

TEST_CASE("tune: canonical points set idle knobs to their fallbacks") {
  Tuning t;
  Knobs k(&t, "conv2d_blocked", "f32", {1, 2, 8, 8, 16}, {1, 3, 3, 16});
  k.get("stream", {0, 1}, 0);
  k.get("tile_h", {1, 2, 4}, 2, "stream", 1);
  k.get("swap_bind", {0, 1}, 1, "stream", 0);
  const Space& s = t.spaces.begin()->second;
  CHECK(canonical(s, {}) == Config{{"stream", 0}, {"tile_h", 2}, {"swap_bind", 1}});
  // Streaming: swap_bind is idle; not streaming: tile_h is.
  CHECK(canonical(s, {{"stream", 1}, {"tile_h", 4}, {"swap_bind", 0}}) ==
        Config{{"stream", 1}, {"tile_h", 4}, {"swap_bind", 1}});
  CHECK(canonical(s, {{"stream", 0}, {"tile_h", 4}, {"swap_bind", 0}}) ==
        Config{{"stream", 0}, {"tile_h", 2}, {"swap_bind", 0}});
  // What a summary shows: the knobs that matter there.
  CHECK(active(s, {{"stream", 1}, {"tile_h", 4}, {"swap_bind", 0}}) == Config{{"stream", 1}, {"tile_h", 4}});
  CHECK(active(s, {}) == Config{{"stream", 0}, {"swap_bind", 1}});
}

TEST_CASE("tune: divisors and saturating space sizes") {
  CHECK(divisors(12, 5) == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(divisors(7, 100) == std::vector<int64_t>{1, 7});
  Space big;
  for (int i = 0; i < 80; i++) big.knobs.push_back({"k" + std::to_string(i), {0, 1, 2}, 0, "", 0});
  CHECK(space_size(big) == (int64_t(1) << 62));
}

TEST_CASE("tune: the matmul schedule declares its space and reads a point") {
  te::Tensor a = te::placeholder("a", {64, 96}, tir::Float(32));
  te::Tensor b = te::placeholder("b", {96, 128}, tir::Float(32));
  auto mm = [&] {
    return te::reduce("mm", {64, 128}, {96}, te::ReduceKind::Sum, tir::Float(32),
                      [&](const te::Indices& o, const te::Indices& r) { return a({o[0], r[0]}) * b({r[0], o[1]}); });
  };
  VectorInfo avx512{16, 32};
  Tuning t;
  te::Stage plain(mm());
  lower::schedule_matmul_cpu(plain, avx512, &t, "packed");
  REQUIRE(t.spaces.size() == 1);
  const Space& s = t.spaces.begin()->second;
  CHECK(t.spaces.begin()->first == "matmul f32 [64,128;96] packed");
  std::vector<std::string> names;
  for (const Knob& k : s.knobs) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"rows", "k_block", "rows_outer", "unroll"});
  // Another point gives another loop nest: rows 2 splits i by 2.
  t.apply[t.spaces.begin()->first] = {{"rows", 2}, {"k_block", 32}, {"rows_outer", 0}};
  te::Stage tuned(mm());
  lower::schedule_matmul_cpu(tuned, avx512, &t, "packed");
  int64_t plain_rows = 0, tuned_rows = 0;
  for (auto& r : plain.relations)
    if (r.kind == te::Relation::Kind::Split && r.parent == plain.axes[0]) plain_rows = r.factor;
  for (auto& r : tuned.relations)
    if (r.kind == te::Relation::Kind::Split && r.parent == tuned.axes[0]) tuned_rows = r.factor;
  CHECK(plain_rows == s.knobs[0].fallback);
  CHECK(tuned_rows == 2);
  CHECK(tuned.leaves.size() == plain.leaves.size() + 1);  // k split in blocks
  // Unroll depth 4: k in steps of 4, each unrolled (within the blocks of 32).
  t.apply[t.spaces.begin()->first] = {{"rows", 2}, {"k_block", 32}, {"rows_outer", 0}, {"unroll", 4}};
  te::Stage unrolled(mm());
  lower::schedule_matmul_cpu(unrolled, avx512, &t, "packed");
  CHECK(unrolled.leaves.size() == plain.leaves.size() + 2);
  bool step_unrolled = false;
  for (auto& l : unrolled.leaves) step_unrolled |= l->reduce && l->extent == 4 && l->kind == tir::ForKind::Unrolled;
  CHECK(step_unrolled);
}

std::string temp_file(const std::string& text) {
  char path[] = "/tmp/kiln_tune_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == (ssize_t)text.size());
  close(fd);
  return path;
}

Record record(const std::string& workload, double ns, int64_t rows, bool validated = false) {
  Record r;
  r.workload = workload;
  r.target = "x86_64 cpu=test";
  r.kiln = "0.1.0";
  r.threads = 1;
  r.config = {{"rows", rows}};
  r.ns = ns;
  r.validated = validated;
  return r;
}

TEST_CASE("tune: log records round-trip through JSON lines") {
  Record r = record("matmul f32 [1,\"q\"\\;2]", 1234, 4);
  r.model = "m.onnx";
  r.trial = 7;
  Record failed = record("conv", -1, 2);
  failed.error = "crashed (signal 11)\n";
  std::string path = temp_file(record_json(r) + "\n\n" + record_json(failed) + "\n");
  std::vector<Record> back = read_tuning_log(path, false);
  unlink(path.c_str());
  REQUIRE(back.size() == 2);
  CHECK(back[0].workload == r.workload);
  CHECK(back[0].config == r.config);
  CHECK(back[0].ns == 1234);
  CHECK(back[0].model == "m.onnx");
  CHECK(back[0].trial == 7);
  CHECK_FALSE(back[0].validated);
  CHECK(back[1].ns < 0);
  CHECK(back[1].error == failed.error);
  CHECK(read_tuning_log("/nonexistent/log.jsonl", true).empty());
  CHECK_THROWS_AS(read_tuning_log("/nonexistent/log.jsonl", false), UserError);
}

TEST_CASE("tune: a line that is not a record is named by file and line") {
  std::string good = record_json(record("w", 10, 1));
  for (const char* bad : {"{not json", "[1,2]", "{\"workload\":\"w\"}",
                          "{\"workload\":\"w\",\"target\":\"t\",\"kiln\":\"k\",\"threads\":1.5,\"config\":{},\"ns\":1}",
                          "{\"workload\":\"w\",\"target\":\"t\",\"kiln\":\"k\",\"threads\":1,\"config\":{\"a\":\"b\"},\"ns\":1}",
                          "{\"workload\":\"w\",\"target\":\"t\",\"kiln\":\"k\",\"threads\":1,\"config\":{},\"ns\":\"x\"}"}) {
    CAPTURE(bad);
    std::string path = temp_file(good + "\n" + bad + "\n");
    try {
      read_tuning_log(path, false);
      CHECK(false);
    } catch (const UserError& e) {
      CHECK(std::string(e.what()).find(path + ":2:") != std::string::npos);
    }
    unlink(path.c_str());
  }
}

TEST_CASE("tune: best_configs picks the fastest, by target, version and threads, validated first") {
  std::vector<Record> log = {record("a", 300, 1), record("a", 100, 2), record("a", 200, 4), record("b", 50, 8),
                             record("b", -1, 16)};
  Record other_target = record("a", 10, 32);
  other_target.target = "aarch64 cpu=cortex-a72";
  Record other_version = record("a", 10, 64);
  other_version.kiln = "0.0.9";
  Record two_threads = record("a", 10, 128);
  two_threads.threads = 2;
  log.insert(log.end(), {other_target, other_version, two_threads});
  std::map<std::string, double> ns;
  auto best = best_configs(log, "x86_64 cpu=test", "0.1.0", 1, &ns);
  CHECK(best.at("a").at("rows") == 2);
  CHECK(ns.at("a") == 100);
  CHECK(best.at("b").at("rows") == 8);
  CHECK(best_configs(log, "x86_64 cpu=test", "0.1.0", 0).at("a").at("rows") == 128);  // any thread count
  // A validated verdict outranks a faster single measurement.
  log.push_back(record("a", 150, 4, /*validated=*/true));
  CHECK(best_configs(log, "x86_64 cpu=test", "0.1.0", 1).at("a").at("rows") == 4);
  CHECK(best_configs(log, "riscv", "0.1.0", 1).empty());
}

}  // namespace
