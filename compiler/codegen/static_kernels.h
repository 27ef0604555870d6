// Static kernels (kilnc --kernels=static): for platforms that forbid mapping
// code at run time (iOS), the kernels are not put in the bundle as an ELF
// library but written as a relocatable object the application links, with
// a C header declaring the one function it exports. The bundle carries the
// kernels' hash; the runtime finds the registered library by it, so a bundle
// and an object from different compilations never meet (docs/deploy.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/kernel.h"
#include "target/target.h"

namespace kiln {

// MODEL: the output file's stem (directories and a ".kiln" extension
// dropped) made a C identifier suffix: anything but [A-Za-z0-9_] becomes '_'.
std::string static_library_name(const std::string& output_path);
// The function the object exports: KILN_STATIC_LIBRARY_SYMBOL_PREFIX + name.
std::string static_library_symbol(const std::string& name);
// The kernels' identity: XXH64 over the target and every kernel's name,
// parameters, workgroup counts and loop IR (never 0).
uint64_t static_kernel_hash(const std::vector<KernelDef>& kernels, const TargetSpec& target);
// The C header declaring `symbol` (for MODEL.kernels.h).
std::string static_library_header(const std::string& name, const std::string& model_path);

}  // namespace kiln
