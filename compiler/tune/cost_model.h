// The auto-tuner's learned cost model: gradient-boosted regression trees.
//
// The tuner measures a few schedule candidates, describes each by a fixed-width
// feature row (tile sizes, unroll factors, loop extents, ...), and fits this
// model to the measured costs so it can rank the unmeasured candidates and pick
// the next batch to measure (as AutoTVM does with XGBoost). Squared loss, exact
// greedy split search over each feature's sorted unique values, base
// prediction = mean target. Everything is deterministic: the same rows give the
// same trees and bit-identical predictions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::tune {

// Options of the boosted trees.
struct CostModelOptions {
  int trees = 64;              // boosting rounds
  int max_depth = 4;           // of each regression tree
  double learning_rate = 0.3;  // shrinkage per tree
  int min_leaf = 2;            // fewest training rows in a leaf
  uint64_t seed = 1;           // feature-threshold sampling / row subsampling, if any (none yet: the search is exact)
};

// Gradient-boosted regression trees (squared loss) over fixed-width feature rows:
// the tuner's cost model, trained online on measured candidates.
class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {});

  // Fits the model to `rows` (all the same width, finite values) and `targets`
  // (one per row); replaces any previous fit. Fewer than 2 rows: untrained.
  void fit(const std::vector<std::vector<double>>& rows, const std::vector<double>& targets);

  // Whether fit() has produced a model.
  bool trained() const;

  // The predicted target for one row (0 when untrained). Rows of another width are a programming error (assert).
  double predict(const std::vector<double>& row) const;

 private:
  // One node of a regression tree: a split, or (feature < 0) a leaf.
  struct Node {
    int feature = -1;      // column the split tests; -1 for a leaf
    double threshold = 0;  // rows with row[feature] <= threshold go left, the rest right
    int left = -1;         // index in Tree::nodes of the <= child
    int right = -1;        // index in Tree::nodes of the > child
    double value = 0;      // learning_rate * mean residual of the node's rows (added at a leaf)
  };
  // One boosting round's regression tree.
  struct Tree {
    std::vector<Node> nodes;  // nodes[0] is the root; children follow their parents
  };
  // The training rows reshaped for split search (defined in cost_model.cpp).
  struct Training;

  // Grows one tree on the current residuals; leaves each row's leaf in `node_of_row`.
  Tree grow_tree(const Training& data, const std::vector<double>& residual, std::vector<int>& node_of_row) const;

  CostModelOptions options_;  // as given to the constructor
  bool trained_ = false;      // whether fit() has produced a model
  size_t width_ = 0;          // features per row of the fit
  double base_ = 0;           // mean of the training targets
  std::vector<Tree> trees_;   // the boosting rounds, in order
};

// Spearman rank correlation of two equally long sequences (for tests and the tuner's log); 0 for fewer than 2 values.
// Ties get the average of the ranks they span; a sequence of all-equal values correlates 0 with anything.
double rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kiln::tune
