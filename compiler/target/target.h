// The target description: the machine a bundle's kernels are compiled for,
// and what the schedules and graph passes need to know about its vector
// unit. The bottom layer of the compiler: every other layer may include it,
// it includes nothing of theirs (LLVM's target registry answers the
// questions about CPUs).
//
// `--target=host` (the default) detects the host's triple, CPU and features.
// `--target=llvm` with -mtriple/-mcpu/-mattr picks another, TVM-style:
//   --target="llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"
// `--target=vulkan` compiles SPIR-V compute shaders for a Vulkan 1.0 device
// (docs/vulkan.md).
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct TargetSpec {
  bool vulkan = false;   // SPIR-V for Vulkan; the LLVM fields below are then unused
  std::string triple;    // LLVM target triple ("spirv-unknown-vulkan1.0" for Vulkan)
  std::string cpu;       // LLVM CPU name ("generic" if none)
  std::string features;  // comma-separated LLVM features, e.g. "+avx2,+fma"

  // Whether LLVM writes ELF objects for it (Linux, Android, bare boards):
  // the runtime loads kernel libraries only as ELF; Apple's Mach-O targets
  // need static kernels (kilnc --kernels=static).
  bool elf_objects() const;

  static TargetSpec host();
  static TargetSpec vulkan_target();
  // Parses "host", "vulkan" or "llvm [-mtriple=T] [-mcpu=C] [-mattr=F]" (user error if malformed).
  static TargetSpec parse(const std::string& text);
  std::string str() const;
  // What tuning logs key measurements by (tune/tuning_log.h): the triple, the
  // CPU and a hash of the features ("x86_64-pc-linux-gnu cpu=znver4 features#1a2b...").
  std::string tuning_key() const;
};

// The int8 dot-product instruction of a target: four byte products summed
// into each 32-bit lane (docs/int8.md).
enum class Int8Dot : uint8_t {
  None,  // none: the dot product is widened to 32-bit multiplies and adds
  U8S8,  // unsigned x signed bytes: x86 AVX512-VNNI / AVX-VNNI vpdpbusd, AArch64 i8mm usdot
  S8S8,  // signed x signed bytes: AArch64 dotprod sdot
};

// What the CPU schedules and the layout pass need to know about a target's
// SIMD unit (for float32), and its int8 dot product.
struct VectorInfo {
  int lanes = 4;                  // float32 lanes of the widest vector register worth using
  int registers = 16;             // vector registers (accumulator budget of register tiles)
  Int8Dot int8_dot = Int8Dot::None;  // the int8 dot-product instruction (int8 kernels)
  bool byte_table = false;        // 256-byte tables looked up in registers (AVX512-VBMI vpermi2b, AArch64 tbl/tbx)
};
const char* int8_dot_name(Int8Dot d);
// Asks LLVM's subtarget description (so -mcpu alone is enough, e.g.
// -mcpu=skylake-avx512); the defaults for Vulkan. User error if LLVM does
// not know the target.
VectorInfo vector_info(const TargetSpec& spec);

// Registers the LLVM targets kilnc can generate code for (x86-64, AArch64,
// ARM) with LLVM's target registry; idempotent.
void initialize_llvm_targets();

}  // namespace kiln
