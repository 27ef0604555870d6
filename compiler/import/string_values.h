// String values: which operators may touch them, and how big each one's
// table is.
//
// A string tensor is a table of offsets and bytes (docs/bundle.md#string-tensors)
// whose bytes area the memory plan sizes at compile time, so the import
// gives every string value a capacity (graph::Value::string_bytes): a model
// input `bytes_per_element` times its elements (kilnc --string-bytes), a
// constant exactly its bytes, an operator's output the most that operator
// can write (string_output_bytes in the .cpp, one case per operator whose
// row carries kStrings). A string value read or written by any other
// operator is a user error naming the node.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace kiln {

void size_string_values(graph::Graph& g, int64_t bytes_per_element);

}  // namespace kiln
