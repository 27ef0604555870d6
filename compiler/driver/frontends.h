// The frontends kilnc reads models with (frontend/frontend.h), and which one
// reads a given file.
#pragma once

#include <string>
#include <vector>

#include "frontend/frontend.h"

namespace kiln {

// Every frontend, in the order they are asked.
const std::vector<const Frontend*>& frontends();

// The first frontend that recognizes `bytes`; ONNX when none does (its
// parser then says what is wrong with the file).
const Frontend& frontend_for(const std::string& bytes);

}  // namespace kiln
