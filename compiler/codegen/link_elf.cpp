#include "codegen/link_elf.h"

#include <lld/Common/Driver.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "support/diagnostics.h"

namespace kiln {

namespace {
// Removes a temporary file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty()) llvm::sys::fs::remove(path);
  }
};
}  // namespace

std::string link_shared_object(const std::string& object, const TargetSpec& target) {
  static std::mutex lld_mutex;  // lld's driver keeps global state
  std::lock_guard<std::mutex> lock(lld_mutex);

  TempFile obj, so;
  int fd;
  internal_assert(!llvm::sys::fs::createTemporaryFile("kiln-kernels", "o", fd, obj.path)) << "cannot create a temp file";
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  internal_assert(!llvm::sys::fs::createTemporaryFile("kiln-kernels", "so", so.path)) << "cannot create a temp file";

  llvm::Triple triple(target.triple);
  std::string emulation;
  switch (triple.getArch()) {
    case llvm::Triple::x86_64: emulation = "elf_x86_64"; break;
    case llvm::Triple::aarch64: emulation = "aarch64linux"; break;
    case llvm::Triple::arm: emulation = "armelf_linux_eabi"; break;
    default: user_error << "linking kernels for '" << target.triple << "' is not supported yet";
  }
  // Segments of different permissions must not share a page at run time:
  // AArch64 systems may use 16 or 64 KiB pages, so align to 64 KiB there.
  const char* page = triple.getArch() == llvm::Triple::x86_64 ? "max-page-size=4096" : "max-page-size=65536";
  std::vector<const char*> args = {"ld.lld", "-m", emulation.c_str(), "-shared", "-z", "defs", "-z", "now", "-z", "relro",
                                   "-z", "noexecstack", "-z", page, "--hash-style=both",
                                   "--build-id=none", "--strip-all", "--no-undefined", "-o", so.path.c_str(),
                                   obj.path.c_str()};
  std::string out, err;
  llvm::raw_string_ostream out_os(out), err_os(err);
  bool ok = lld::elf::link(args, out_os, err_os, /*exitEarly=*/false, /*disableOutput=*/false);
  lld::CommonLinkerContext::destroy();
  internal_assert(ok) << "lld failed to link the kernel library: " << err_os.str();

  auto buf = llvm::MemoryBuffer::getFile(so.path);
  internal_assert(buf) << "cannot read the linked kernel library";
  return (*buf)->getBuffer().str();
}

}  // namespace kiln
