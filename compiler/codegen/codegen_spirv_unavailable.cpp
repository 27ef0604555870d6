// The Vulkan target without glslang / SPIRV-Tools at build time.
#include "codegen/codegen_spirv.h"

#include "support/diagnostics.h"

namespace kiln {

bool spirv_codegen_available() { return false; }

size_t SpirvLibrary::cpu_kernel_count() const { return 0; }

SpirvLibrary compile_kernels_spirv(const std::vector<KernelDef>&, const SpirvOptions&) {
  user_error << "this kilnc was built without glslang and SPIRV-Tools, so it cannot compile for --target=vulkan "
                "(apt-get install glslang-dev spirv-tools, then reconfigure)";
}

}  // namespace kiln
