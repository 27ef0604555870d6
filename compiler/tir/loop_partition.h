// Loop partitioning: split a loop where its body's conditions change.
//
// Padding guards (select(0 <= h * s - p + kh, x[...], 0)) hold for every
// iteration except a few at each end of the loop. For each serial loop with
// a constant range, this pass finds, by simplifying the body at each value
// of the loop variable, the longest run of iterations whose body keeps the
// fewest conditions, and splits the loop into before / interior / after
// (when that run is at least half the loop).
// The simplifier then removes the guards from the interior copy, which is
// where almost all the work happens. Loops are visited outermost first, so
// both the row and the column loops of a convolution get partitioned.
// A workgroup loop (one iteration per workgroup) is not split but branched:
// if (interior) { body, simplified for the interior } else { body }.
#pragma once

#include "tir/ir.h"

namespace kiln::tir {

Stmt partition_loops(const Stmt& s);

}  // namespace kiln::tir
