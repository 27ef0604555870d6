// The target description (target.h): parsing --target, host detection and
// the vector unit of a CPU, through LLVM's target registry (the MC layer:
// no code generation here).
#include "target/target.h"

#include <cstdio>

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>

#include <memory>
#include <sstream>

#include "support/diagnostics.h"

namespace kiln {

void initialize_llvm_targets() {
  static bool done = [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
    LLVMInitializeARMTargetInfo();
    LLVMInitializeARMTarget();
    LLVMInitializeARMTargetMC();
    LLVMInitializeARMAsmPrinter();
    return true;
  }();
  (void)done;
}

TargetSpec TargetSpec::host() {
  TargetSpec t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  std::string f;
  if (llvm::sys::getHostCPUFeatures(features)) {
    for (auto& kv : features) {
      if (!f.empty()) f += ",";
      f += (kv.second ? "+" : "-") + kv.first().str();
    }
  }
  t.features = f;
  return t;
}

bool TargetSpec::elf_objects() const { return !vulkan && llvm::Triple(triple).isOSBinFormatELF(); }

TargetSpec TargetSpec::vulkan_target() {
  TargetSpec t;
  t.vulkan = true;
  t.triple = "spirv-unknown-vulkan1.0";
  return t;
}

TargetSpec TargetSpec::parse(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  in >> word;
  if (word.empty() || word == "host") return host();
  if (word == "vulkan") {
    user_assert(!(in >> word)) << "target 'vulkan' takes no options (got '" << word << "')";
    return vulkan_target();
  }
  user_assert(word == "llvm") << "unknown target '" << text
                              << "'; use 'host', 'vulkan' or 'llvm -mtriple=... -mcpu=... -mattr=...'";
  TargetSpec t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = "generic";
  bool explicit_triple = false, explicit_cpu = false;
  while (in >> word) {
    if (word.rfind("-mtriple=", 0) == 0) {
      t.triple = word.substr(9);
      explicit_triple = true;
    } else if (word.rfind("-mcpu=", 0) == 0) {
      t.cpu = word.substr(6);
      explicit_cpu = true;
    } else if (word.rfind("-mattr=", 0) == 0) {
      t.features = word.substr(7);
    } else {
      user_error << "unknown target option '" << word << "' in '" << text << "'";
    }
  }
  if (!explicit_triple && !explicit_cpu) return host();
  return t;
}

std::string TargetSpec::tuning_key() const {
  if (vulkan || features.empty()) return str();
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : features) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  return triple + " cpu=" + cpu + " features#" + hex;
}

std::string TargetSpec::str() const {
  if (vulkan) return "vulkan (" + triple + ")";
  return triple + " cpu=" + cpu + (features.empty() ? "" : " features=" + features);
}

const char* int8_dot_name(Int8Dot d) {
  switch (d) {
    case Int8Dot::None: return "none";
    case Int8Dot::U8S8: return "u8s8";
    case Int8Dot::S8S8: return "s8s8";
  }
  return "?";
}

VectorInfo vector_info(const TargetSpec& spec) {
  if (spec.vulkan) return VectorInfo();
  initialize_llvm_targets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(spec.triple, error);
  user_assert(target) << "target triple '" << spec.triple << "' is not supported: " << error;
  std::unique_ptr<const llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
  user_assert(sti) << "LLVM has no subtarget description for " << spec.str();
  VectorInfo v;
  llvm::Triple triple(spec.triple);
  if (triple.isAArch64()) {
    v.lanes = 4, v.registers = 32;  // NEON: 32 x 128-bit
    v.byte_table = true;            // tbl/tbx over four registers
    if (sti->checkFeatures("+i8mm")) v.int8_dot = Int8Dot::U8S8;
    else if (sti->checkFeatures("+dotprod")) v.int8_dot = Int8Dot::S8S8;
  } else if (triple.isX86()) {
    if (sti->checkFeatures("+avx512f")) v.lanes = 16, v.registers = 32;
    else if (sti->checkFeatures("+avx")) v.lanes = 8, v.registers = 16;
    else v.lanes = 4, v.registers = 16;
    // vpdpbusd on zmm (AVX512-VNNI) or ymm (AVX-VNNI, or AVX512-VNNI with VL).
    if (v.lanes == 16 ? sti->checkFeatures("+avx512vnni")
                      : v.lanes == 8 && (sti->checkFeatures("+avxvnni") || sti->checkFeatures("+avx512vnni,+avx512vl")))
      v.int8_dot = Int8Dot::U8S8;
    v.byte_table = v.lanes == 16 && sti->checkFeatures("+avx512vbmi");
  } else if (triple.isARM()) {
    v.lanes = 4, v.registers = 16;  // NEON (q0-q15)
  }
  return v;
}

}  // namespace kiln
