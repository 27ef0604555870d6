// Gradient-boosted regression trees for the auto-tuner's cost model.
//
// Each round fits a tree to the residuals (target - current prediction) and
// adds learning_rate * the leaf mean to every prediction. Trees grow level by
// level. A split maximizes the drop in squared error,
// nl * nr / n * (mean_l - mean_r)^2, over every boundary between two
// consecutive distinct values of a node's rows (threshold: their midpoint),
// with min_leaf rows on each side. Each level scores all open nodes at once,
// per feature in one of two exact ways:
//  - histogram: sum each node's residuals per distinct value of the feature
//    (one pass over the rows), then walk the values in order. Cheap for the
//    tuner's discrete features (tile sizes, factors, extents);
//  - sorted scan: walk the rows in the feature's presorted order, keeping a
//    running sum per node. Used when nodes * distinct values exceeds the rows
//    (mostly empty histogram bins cost more than they save).
// Both cost O(rows) per feature and level; nothing is re-sorted after fit().
#include "tune/cost_model.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace kiln::tune {

struct CostModel::Training {
  size_t rows = 0;                           // training rows
  size_t width = 0;                          // features per row
  std::vector<double> columns;               // columns[f * rows + r] = feature f of row r
  std::vector<std::vector<double>> values;   // per feature: its distinct values, ascending
  std::vector<std::vector<int>> bins;        // per feature, per row: index of the row's value in values[f]
  std::vector<std::vector<int>> order;       // per feature: row indices by ascending value
  std::vector<double> inverse;               // inverse[k] = 1.0 / k for k <= rows (gains without divisions)
};

namespace {

// Row count and residual sum of a node, a histogram bin, or the rows left of a threshold.
struct Stats {
  int count = 0;   // rows
  double sum = 0;  // sum of their residuals
};

// The best split found so far for one open node.
struct Split {
  double gain = 0;       // drop in squared error; must beat the tree's minimum gain
  int feature = -1;      // -1: no split found
  double threshold = 0;  // rows with value <= threshold go left
  Stats left;            // the rows that go left
};

// A threshold strictly between a < b (so b goes right), or a when none rounds between.
double midpoint(double a, double b) {
  double mid = a + (b - a) * 0.5;
  return mid >= a && mid < b ? mid : a;
}

// The drop in squared error from splitting `total` into `left` and the rest:
// nl * nr / n * (mean_l - mean_r)^2, or 0 when a side has under min_leaf rows.
inline double split_gain(const Stats& total, const Stats& left, int min_leaf, const double* inverse) {
  int right = total.count - left.count;
  if (left.count < min_leaf || right < min_leaf) return 0;
  double d = left.sum * inverse[left.count] - (total.sum - left.sum) * inverse[right];
  return double(left.count) * right * inverse[total.count] * d * d;
}

// The split search over one tree level: its open nodes ("slots") and their best splits so far.
struct LevelSearch {
  const std::vector<int>& slot_of_row;   // per row: index of its open node, -1 when in a finished leaf
  const std::vector<double>& residual;   // per row: target - current prediction
  const double* inverse;                 // inverse[k] = 1.0 / k
  const int min_leaf;                    // fewest rows on either side of a split
  std::vector<Stats> totals;             // per slot: all its rows
  std::vector<Split> best;               // per slot: best split so far

  // Histogram search on feature f: per slot, residual sums per distinct value.
  void search_histogram(int f, const std::vector<double>& values, const std::vector<int>& bins,
                        std::vector<Stats>& hist) {
    const size_t n_values = values.size();
    hist.assign(totals.size() * n_values, Stats{});
    for (size_t r = 0; r < slot_of_row.size(); ++r) {
      if (slot_of_row[r] < 0) continue;
      Stats& h = hist[slot_of_row[r] * n_values + bins[r]];
      h.count++;
      h.sum += residual[r];
    }
    for (size_t s = 0; s < totals.size(); ++s) {
      const Stats* h = &hist[s * n_values];
      const Stats total = totals[s];
      Stats left;
      size_t prev = 0;  // the last non-empty bin in left
      for (size_t v = 0; v < n_values && left.count < total.count; ++v) {
        if (h[v].count == 0) continue;
        double gain = split_gain(total, left, min_leaf, inverse);
        if (gain > best[s].gain) best[s] = Split{gain, f, midpoint(values[prev], values[v]), left};
        left.count += h[v].count;
        left.sum += h[v].sum;
        prev = v;
      }
    }
  }

  // Sorted-scan search on feature f (`column` its values per row, `order` its rows by value).
  void search_sorted(int f, const double* column, const std::vector<int>& order) {
    std::vector<Stats> left(totals.size());
    std::vector<double> last(totals.size());  // per slot: value of the last row added to left
    for (int r : order) {
      int s = slot_of_row[r];
      if (s < 0) continue;
      if (left[s].count > 0 && column[r] > last[s]) {
        double gain = split_gain(totals[s], left[s], min_leaf, inverse);
        if (gain > best[s].gain) best[s] = Split{gain, f, midpoint(last[s], column[r]), left[s]};
      }
      left[s].count++;
      left[s].sum += residual[r];
      last[s] = column[r];
    }
  }
};

}  // namespace

CostModel::CostModel(CostModelOptions options) : options_(options) {}

bool CostModel::trained() const { return trained_; }

CostModel::Tree CostModel::grow_tree(const Training& data, const std::vector<double>& residual,
                                     std::vector<int>& node_of_row) const {
  const size_t n = data.rows;
  Stats root{static_cast<int>(n), 0};
  for (double g : residual) root.sum += g;
  // A split must remove more than a tiny fraction of the squared error, so
  // rounding noise (e.g. of constant targets) never splits.
  const double mean = root.sum / root.count;
  double sse = 0;
  for (double g : residual) sse += (g - mean) * (g - mean);
  const Split no_split{1e-12 * sse, -1, 0, {}};

  const double rate = options_.learning_rate;
  Tree tree;
  tree.nodes.push_back(Node{-1, 0, -1, -1, rate * mean});
  std::fill(node_of_row.begin(), node_of_row.end(), 0);
  std::vector<int> open = {0};                  // tree nodes of this level, by slot
  std::vector<int> slot_of_row(n, 0);           // per row: slot of its node, -1 when in a finished leaf
  std::vector<Stats> totals = {root};           // per slot: the node's rows
  std::vector<Stats> hist;                      // reused histogram storage

  for (int depth = 0; depth < options_.max_depth && !open.empty(); ++depth) {
    LevelSearch search{slot_of_row, residual, data.inverse.data(), std::max(1, options_.min_leaf), totals,
                       std::vector<Split>(open.size(), no_split)};
    for (size_t f = 0; f < data.width; ++f) {
      const std::vector<double>& values = data.values[f];
      if (values.size() < 2) continue;  // a constant feature cannot split
      if (values.size() * open.size() <= n)
        search.search_histogram(static_cast<int>(f), values, data.bins[f], hist);
      else
        search.search_sorted(static_cast<int>(f), &data.columns[f * n], data.order[f]);
    }

    // Split the nodes that found a split; their children are the next level.
    std::vector<int> next;
    totals.clear();
    for (size_t s = 0; s < open.size(); ++s) {
      const Split& split = search.best[s];
      if (split.feature < 0) continue;
      Stats left = split.left;
      Stats right{search.totals[s].count - left.count, search.totals[s].sum - left.sum};
      int l = static_cast<int>(tree.nodes.size());
      tree.nodes.push_back(Node{-1, 0, -1, -1, rate * left.sum / left.count});
      tree.nodes.push_back(Node{-1, 0, -1, -1, rate * right.sum / right.count});
      Node& parent = tree.nodes[open[s]];
      parent.feature = split.feature;
      parent.threshold = split.threshold;
      parent.left = l;
      parent.right = l + 1;
      next.insert(next.end(), {l, l + 1});
      totals.insert(totals.end(), {left, right});
    }
    // Move each row of a split node to its child; the child's slot is its index in `next`.
    const int first_child = next.empty() ? 0 : next[0];
    for (size_t r = 0; r < n; ++r) {
      const Node& node = tree.nodes[node_of_row[r]];
      if (node.feature < 0) {
        slot_of_row[r] = -1;
        continue;
      }
      node_of_row[r] = data.columns[node.feature * n + r] <= node.threshold ? node.left : node.right;
      slot_of_row[r] = node_of_row[r] - first_child;
    }
    open = std::move(next);
  }
  return tree;
}

void CostModel::fit(const std::vector<std::vector<double>>& rows, const std::vector<double>& targets) {
  trained_ = false;
  trees_.clear();
  width_ = 0;
  base_ = 0;
  const size_t n = rows.size();
  assert(targets.size() == n);
  if (n < 2 || targets.size() != n) return;

  Training data;
  data.rows = n;
  data.width = rows[0].size();
  data.columns.resize(data.width * n);
  for (size_t r = 0; r < n; ++r) {
    // Broken preconditions assert; without assertions they leave the model untrained.
    bool valid = rows[r].size() == data.width && std::isfinite(targets[r]) &&
                 std::all_of(rows[r].begin(), rows[r].end(), [](double v) { return std::isfinite(v); });
    assert(valid);
    if (!valid) return;
    for (size_t f = 0; f < data.width; ++f) data.columns[f * n + r] = rows[r][f];
  }
  data.order.resize(data.width);
  data.values.resize(data.width);
  data.bins.resize(data.width);
  for (size_t f = 0; f < data.width; ++f) {
    std::vector<int>& order = data.order[f];
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    const double* x = &data.columns[f * n];
    std::stable_sort(order.begin(), order.end(), [x](int a, int b) { return x[a] < x[b]; });
    data.bins[f].resize(n);
    for (int r : order) {
      if (data.values[f].empty() || x[r] > data.values[f].back()) data.values[f].push_back(x[r]);
      data.bins[f][r] = static_cast<int>(data.values[f].size()) - 1;
    }
  }
  data.inverse.resize(n + 1, 0.0);
  for (size_t k = 1; k <= n; ++k) data.inverse[k] = 1.0 / static_cast<double>(k);

  width_ = data.width;
  for (size_t r = 0; r < n; ++r) base_ += targets[r];
  base_ /= static_cast<double>(n);
  std::vector<double> residual(n);
  for (size_t r = 0; r < n; ++r) residual[r] = targets[r] - base_;

  std::vector<int> node_of_row(n, 0);
  for (int t = 0; t < options_.trees; ++t) {
    Tree tree = grow_tree(data, residual, node_of_row);
    for (size_t r = 0; r < n; ++r) residual[r] -= tree.nodes[node_of_row[r]].value;
    bool split = tree.nodes.size() > 1;
    trees_.push_back(std::move(tree));
    // Without a split the residuals only shift by their (~0) mean, so no
    // later round could split either.
    if (!split) break;
  }
  trained_ = true;
}

double CostModel::predict(const std::vector<double>& row) const {
  if (!trained_) return 0;
  assert(row.size() == width_);
  if (row.size() != width_) return 0;  // without assertions
  double y = base_;
  for (const Tree& tree : trees_) {
    int i = 0;
    while (tree.nodes[i].feature >= 0) {
      const Node& node = tree.nodes[i];
      i = row[node.feature] <= node.threshold ? node.left : node.right;
    }
    y += tree.nodes[i].value;
  }
  return y;
}

namespace {

// 1-based ranks of `v`; equal values share the average of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&v](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && v[order[j]] == v[order[i]]) ++j;
    double avg = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // ranks i+1 .. j
    for (size_t k = i; k < j; ++k) rank[order[k]] = avg;
    i = j;
  }
  return rank;
}

}  // namespace

double rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  assert(a.size() == b.size());
  if (a.size() < 2 || a.size() != b.size()) return 0;
  std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  // Pearson correlation of the ranks (both have mean (n + 1) / 2).
  const double mean = (static_cast<double>(a.size()) + 1) / 2;
  double cov = 0, var_a = 0, var_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    var_a += (ra[i] - mean) * (ra[i] - mean);
    var_b += (rb[i] - mean) * (rb[i] - mean);
  }
  if (var_a == 0 || var_b == 0) return 0;
  return cov / std::sqrt(var_a * var_b);
}

}  // namespace kiln::tune
