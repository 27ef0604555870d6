// Links kernel object code into one position-independent ELF shared object
// with lld, in-process. The result has no undefined symbols (-z defs), no
// DT_NEEDED entries, binds everything at load (-z now), keeps relocated
// read-only data read-only afterwards (-z relro) and carries both hash tables
// so the runtime's ELF loader can look up kiln_kernel_library_query.
#pragma once

#include <string>

#include "target/target.h"

namespace kiln {

std::string link_shared_object(const std::string& object, const TargetSpec& target);

}  // namespace kiln
