// Generated kernels run in the compiler's process (host_library.h).
#include "codegen/host_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "support/diagnostics.h"

namespace kiln {

HostLibrary::HostLibrary(const std::string& so, uint32_t abi_version) {
  const char* tmp = getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kilnc-kernels-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  user_assert(fd >= 0) << "cannot create a temporary file in " << path << " to run kernels at compile time";
  bool ok = write(fd, so.data(), so.size()) == (ssize_t)so.size();
  close(fd);
  if (ok) handle_ = dlopen(buf.data(), RTLD_NOW | RTLD_LOCAL);
  unlink(buf.data());
  internal_assert(ok && handle_) << "cannot load the kernel library: " << (ok ? dlerror() : "write failed");
  auto query = (kiln_kernel_library_query_fn_t)dlsym(handle_, KILN_KERNEL_LIBRARY_QUERY_SYMBOL);
  internal_assert(query) << "the kernel library has no " << KILN_KERNEL_LIBRARY_QUERY_SYMBOL;
  table_ = query(abi_version);
  if (!table_) {
    dlclose(handle_);
    handle_ = nullptr;
    internal_error << "the kernel library does not implement kernel ABI version " << abi_version;
  }
}

HostLibrary::~HostLibrary() {
  if (handle_) dlclose(handle_);
}

kiln_kernel_fn_t HostLibrary::kernel(const std::string& name) const {
  for (uint32_t i = 0; i < table_->kernel_count; i++)
    if (name == table_->kernel_names[i]) return table_->kernels[i];
  internal_error << "the kernel library has no kernel " << name;
  return nullptr;
}

int32_t HostLibrary::run(kiln_kernel_fn_t kernel, const std::array<uint32_t, 3>& count, std::vector<void*> bindings) {
  kiln_kernel_dispatch_state_t d = {};
  for (int a = 0; a < 3; a++) d.workgroup_count[a] = count[a];
  d.binding_count = (uint32_t)bindings.size();
  d.bindings = bindings.data();
  for (uint32_t z = 0; z < count[2]; z++)
    for (uint32_t y = 0; y < count[1]; y++)
      for (uint32_t x = 0; x < count[0]; x++) {
        kiln_kernel_workgroup_state_t w = {{x, y, z}, 0};
        int32_t rc = kernel(&d, &w);
        if (rc != 0) return rc;
      }
  return 0;
}

}  // namespace kiln
