// LLVM TargetMachines for kilnc's CPU targets (target_machine.h).
#include "codegen/target_machine.h"

#include <llvm/ADT/Triple.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/ARMTargetParser.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include "support/diagnostics.h"

namespace kiln {

std::unique_ptr<llvm::TargetMachine> create_target_machine(const TargetSpec& spec) {
  internal_assert(!spec.vulkan) << "no LLVM target machine for the Vulkan target";
  initialize_llvm_targets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(spec.triple, error);
  user_assert(target) << "target triple '" << spec.triple << "' is not supported: " << error;
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Standard;  // fuse a * b + c where the IR allows (contract)
  // Normalized ("armv7a-linux-gnueabihf" -> "armv7a-unknown-linux-gnueabihf"):
  // LLVM reads a triple's parts by position, so without it the OS and the
  // environment are lost, and with them ARM's hard-float ABI (gnueabihf).
  const std::string triple = llvm::Triple::normalize(spec.triple);
  // LLVM's 32-bit Arm CPUs do not imply their FPU (clang adds it): without
  // this, -mcpu=cortex-a7 has no NEON and every vector is scalarized. The
  // CPU's default FPU comes first, so explicit features can override it.
  std::string features = spec.features;
  if (llvm::Triple(triple).isARM()) {
    std::vector<llvm::StringRef> fpu;
    llvm::ARM::getFPUFeatures(
        llvm::ARM::getDefaultFPU(spec.cpu, llvm::ARM::parseArch(llvm::Triple(triple).getArchName())), fpu);
    std::string defaults;
    for (llvm::StringRef f : fpu) defaults += (defaults.empty() ? "" : ",") + f.str();
    features = features.empty() ? defaults : defaults + "," + features;
  }
  auto* tm = target->createTargetMachine(triple, spec.cpu, features, options, llvm::Reloc::PIC_,
                                         llvm::CodeModel::Small, llvm::CodeGenOpt::Aggressive);
  user_assert(tm) << "LLVM could not create a target machine for " << spec.str();
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

}  // namespace kiln
