// Units for the auto-tuner's cost model (gradient-boosted trees): it learns a
// known nonlinear function, ranks a noisy tile-size response well, handles
// degenerate data (untrained, constant targets, constant feature), is
// deterministic, and rank_correlation averages the ranks of ties.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tune/cost_model.h"

using kiln::tune::CostModel;
using kiln::tune::CostModelOptions;
using kiln::tune::rank_correlation;

namespace {

// splitmix64: a portable deterministic generator (std distributions differ between libraries).
struct Rng {
  uint64_t state;  // advances by the golden-ratio increment per draw
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

double step_plus_square(double x0, double x1) { return (x0 > 3 ? 2.0 : 0.0) + x1 * x1; }

// A made-up kernel cost over (tile_x, tile_y, tile_k, unroll, vector width):
// a sweet spot per tile dimension, a register-spill cliff, a bonus for unrolling.
double tile_cost(const std::vector<double>& f) {
  double tx = std::log2(f[0]), ty = std::log2(f[1]), tk = std::log2(f[2]);
  double cost = 0.5 * (tx - 4) * (tx - 4) + 0.3 * (ty - 3) * (ty - 3) + std::fabs(tk - 2);
  if (tx + ty > 8) cost += 3;        // spills
  if (f[3] > 0) cost -= 0.5;         // unrolled
  cost -= 0.2 * std::log2(f[4]);     // wider vectors help a little
  return cost;
}

std::vector<double> random_tile(Rng& rng) {
  return {double(1 << rng.below(7)), double(1 << rng.below(7)), double(1 << rng.below(6)), double(rng.below(2)),
          double(1 << rng.below(4))};
}

}  // namespace

TEST_CASE("cost model: fits a step plus a square and generalizes to held-out points") {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i <= 24; ++i)
    for (int j = 0; j <= 20; ++j) {
      double x0 = 0.25 * i, x1 = -2 + 0.2 * j;
      rows.push_back({x0, x1});
      y.push_back(step_plus_square(x0, x1));
    }
  CostModel model;
  model.fit(rows, y);
  REQUIRE(model.trained());

  // Held out: off-grid points, away from the step's unseen gap (3, 3.25).
  Rng rng{7};
  double sq = 0, worst = 0, var = 0;
  const int tests = 500;
  for (int t = 0; t < tests;) {
    double x0 = rng.uniform(0, 6), x1 = rng.uniform(-1.9, 1.9);
    if (x0 > 3 && x0 < 3.25) continue;
    double truth = step_plus_square(x0, x1), err = model.predict({x0, x1}) - truth;
    sq += err * err;
    worst = std::max(worst, std::fabs(err));
    var += (truth - 2.3) * (truth - 2.3);  // spread around roughly the mean, for scale
    ++t;
  }
  double rmse = std::sqrt(sq / tests);
  MESSAGE("held-out rmse " << rmse << ", worst " << worst << ", target spread " << std::sqrt(var / tests));
  CHECK(rmse < 0.2);  // predicting the mean: ~1.5
  CHECK(worst < 0.75);
}

TEST_CASE("cost model: fits the same function from continuous (all-distinct) features") {
  // Distinct values make most levels use the sorted scan instead of histograms.
  Rng rng{5};
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i < 800; ++i) {
    rows.push_back({rng.uniform(0, 6), rng.uniform(-2, 2), rng.uniform(0, 1)});  // the last is noise
    y.push_back(step_plus_square(rows.back()[0], rows.back()[1]));
  }
  CostModel model;
  model.fit(rows, y);
  double sq = 0;
  const int tests = 400;
  for (int t = 0; t < tests; ++t) {
    double x0 = rng.uniform(0, 6), x1 = rng.uniform(-1.9, 1.9);
    double err = model.predict({x0, x1, rng.uniform(0, 1)}) - step_plus_square(x0, x1);
    sq += err * err;
  }
  double rmse = std::sqrt(sq / tests);
  MESSAGE("held-out rmse " << rmse);
  CHECK(rmse < 0.15);
}

TEST_CASE("cost model: splits between adjacent doubles") {
  // No midpoint lies strictly between them: the threshold is the lower value, and <= goes left.
  double a = 1.0, b = std::nextafter(1.0, 2.0);
  CostModel model(CostModelOptions{1, 1, 1.0, 1, 1});
  model.fit({{a}, {a}, {b}, {b}}, {0, 0, 10, 10});
  CHECK(model.predict({a}) == doctest::Approx(0.0));
  CHECK(model.predict({b}) == doctest::Approx(10.0));
  CHECK(model.predict({0.5}) == doctest::Approx(0.0));
  CHECK(model.predict({1.5}) == doctest::Approx(10.0));
}

TEST_CASE("cost model: ranks a noisy tile-size response") {
  Rng rng{42};
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i < 400; ++i) {
    rows.push_back(random_tile(rng));
    y.push_back(tile_cost(rows.back()) + rng.uniform(-0.3, 0.3));  // measurement noise
  }
  CostModel model;
  model.fit(rows, y);
  std::vector<double> predicted, truth;
  for (int i = 0; i < 300; ++i) {
    std::vector<double> row = random_tile(rng);
    predicted.push_back(model.predict(row));
    truth.push_back(tile_cost(row));
  }
  double rho = rank_correlation(predicted, truth);
  MESSAGE("spearman(predicted, truth) = " << rho);
  CHECK(rho > 0.9);
}

TEST_CASE("cost model: untrained predicts 0") {
  CostModel model;
  CHECK_FALSE(model.trained());
  CHECK(model.predict({1.0, 2.0}) == 0.0);
  model.fit({{1.0, 2.0}}, {5.0});  // one row is too few
  CHECK_FALSE(model.trained());
  CHECK(model.predict({1.0, 2.0}) == 0.0);
  model.fit({{1.0}, {2.0}, {3.0}}, {1.0, 2.0, 3.0});
  CHECK(model.trained());
  model.fit({}, {});  // a new fit replaces the old one, even an empty one
  CHECK_FALSE(model.trained());
  CHECK(model.predict({1.0}) == 0.0);
}

TEST_CASE("cost model: constant targets predict the constant") {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i < 50; ++i) {
    rows.push_back({double(i), double(i % 7)});
    y.push_back(0.1);
  }
  CostModel model;
  model.fit(rows, y);
  REQUIRE(model.trained());
  for (double x : {-5.0, 0.0, 13.5, 100.0}) CHECK(model.predict({x, x}) == doctest::Approx(0.1).epsilon(1e-12));
}

TEST_CASE("cost model: a constant feature is never split on") {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i < 60; ++i) {
    double x = i / 10.0;
    rows.push_back({4.0, x});
    y.push_back(std::sin(x));
  }
  CostModel model;
  model.fit(rows, y);
  for (double x : {0.35, 1.55, 3.05, 4.45, 5.55}) {
    double p = model.predict({4.0, x});
    CHECK(std::fabs(p - std::sin(x)) < 0.1);
    // Without a split on feature 0 its value cannot matter.
    CHECK(model.predict({-100.0, x}) == p);
    CHECK(model.predict({100.0, x}) == p);
  }
}

TEST_CASE("cost model: options bound the trees") {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 0; i < 8; ++i) {
    rows.push_back({double(i)});
    y.push_back(double((i * 5) % 8));
  }
  SUBCASE("one deep tree at rate 1 interpolates distinct rows") {
    CostModel model(CostModelOptions{1, 8, 1.0, 1, 1});
    model.fit(rows, y);
    for (size_t i = 0; i < rows.size(); ++i) CHECK(model.predict(rows[i]) == doctest::Approx(y[i]));
  }
  SUBCASE("min_leaf larger than half the rows forbids every split") {
    CostModel model(CostModelOptions{16, 4, 0.5, 5, 1});
    model.fit(rows, y);
    for (const auto& row : rows) CHECK(model.predict(row) == doctest::Approx(3.5));
  }
  SUBCASE("depth 0 and zero trees give the mean") {
    CostModel stumps(CostModelOptions{16, 0, 0.5, 1, 1});
    CostModel none(CostModelOptions{0, 4, 0.5, 1, 1});
    stumps.fit(rows, y);
    none.fit(rows, y);
    CHECK(stumps.predict({2.0}) == doctest::Approx(3.5));
    CHECK(none.predict({2.0}) == 3.5);
  }
}

TEST_CASE("cost model: fits are deterministic and replace the previous fit") {
  Rng rng{3};
  std::vector<std::vector<double>> a_rows, b_rows;
  std::vector<double> a_y, b_y;
  for (int i = 0; i < 200; ++i) {
    a_rows.push_back(random_tile(rng));
    a_y.push_back(tile_cost(a_rows.back()) + rng.uniform(-0.3, 0.3));
    b_rows.push_back(random_tile(rng));
    b_y.push_back(-tile_cost(b_rows.back()));
  }
  CostModel first, second, refit;
  first.fit(a_rows, a_y);
  second.fit(a_rows, a_y);
  refit.fit(b_rows, b_y);
  refit.fit(a_rows, a_y);
  for (int i = 0; i < 100; ++i) {
    std::vector<double> row = random_tile(rng);
    double p = first.predict(row);
    CHECK(second.predict(row) == p);  // bit-identical
    CHECK(refit.predict(row) == p);
  }
}

TEST_CASE("rank_correlation: reversal, ties, degenerate inputs") {
  CHECK(rank_correlation({1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}) == doctest::Approx(-1.0));
  CHECK(rank_correlation({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}) == doctest::Approx(1.0));
  CHECK(rank_correlation({1, 4, 9, 16}, {1, 2, 3, 4}) == doctest::Approx(1.0));  // only order matters
  // Ties get average ranks: reversing a sequence with a tie is still exactly -1 ...
  CHECK(rank_correlation({1, 2, 2, 3}, {3, 2, 2, 1}) == doctest::Approx(-1.0));
  CHECK(rank_correlation({2, 2, 1, 3}, {2, 2, 3, 1}) == doctest::Approx(-1.0));
  // ... and ranks {1, 2.5, 2.5, 4} against {1, 2, 3, 4} give 4.5 / sqrt(4.5 * 5).
  CHECK(rank_correlation({1, 2, 2, 3}, {1, 2, 3, 4}) == doctest::Approx(4.5 / std::sqrt(22.5)));
  CHECK(rank_correlation({}, {}) == 0.0);
  CHECK(rank_correlation({1}, {2}) == 0.0);
  CHECK(rank_correlation({7, 7, 7}, {1, 2, 3}) == 0.0);  // no spread, no correlation
}

TEST_CASE("cost model: fit time at 2000 rows x 30 features") {
  Rng rng{11};
  std::vector<std::vector<double>> rows(2000, std::vector<double>(30));
  std::vector<double> y;
  for (auto& row : rows) {
    for (double& v : row) v = double(rng.below(64));  // tile-like integer features
    y.push_back(row[0] * row[1] / 64 + (row[2] > 32 ? 10 : 0) + rng.uniform(-1, 1));
  }
  CostModel model;
  auto start = std::chrono::steady_clock::now();
  model.fit(rows, y);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("fit 2000 x 30, 64 trees of depth 4: " << ms << " ms");  // printed, not asserted: builds and machines vary
  std::vector<double> predicted;
  for (const auto& row : rows) predicted.push_back(model.predict(row));
  CHECK(rank_correlation(predicted, y) > 0.9);
}
