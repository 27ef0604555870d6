// Runs generated kernels in the compiler's own process: a linked kernel
// library (link_elf.h) for the host is written to a temporary file, opened
// with dlopen and its kernels run over their workgroup grids one workgroup
// after another. The compiler's one way to execute what it generated: the
// evaluator of constant subgraphs (driver/evaluate.h) and the unit tests use
// it. (The runtime's executor, libkiln, is the way to run bundles.)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln_kernel_abi.h"

namespace kiln {

class HostLibrary {
 public:
  // Loads `so`, a shared object linked for the host, and asks it for the
  // kernel table of `abi_version`. Throws InternalError when it cannot be
  // loaded or has no table for that version (UserError when no temporary
  // file can be created in $TMPDIR or /tmp).
  explicit HostLibrary(const std::string& so, uint32_t abi_version = KILN_KERNEL_ABI_VERSION);
  ~HostLibrary();
  HostLibrary(const HostLibrary&) = delete;
  HostLibrary& operator=(const HostLibrary&) = delete;

  // The library's kernel table.
  const kiln_kernel_library_t& table() const { return *table_; }
  // Kernel `name`; InternalError if the library has none of that name.
  kiln_kernel_fn_t kernel(const std::string& name) const;
  // Runs `kernel` over the workgroup grid `count` with `bindings`, serially
  // (x fastest, as the runtime's serial loop); returns the first nonzero
  // value a workgroup returned (0 when all succeeded).
  static int32_t run(kiln_kernel_fn_t kernel, const std::array<uint32_t, 3>& count, std::vector<void*> bindings);

 private:
  void* handle_ = nullptr;                        // from dlopen
  const kiln_kernel_library_t* table_ = nullptr;  // from kiln_kernel_library_query
};

}  // namespace kiln
