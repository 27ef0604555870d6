// kilnc's version: bundles name it as their producer ("kilnc 0.1.0") and
// `kilnc --version` prints it.
#pragma once

namespace kiln {

constexpr const char kKilncVersion[] = "0.1.0";

}  // namespace kiln
