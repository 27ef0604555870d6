// LLVM TargetMachines for kilnc's CPU targets (target_machine.h).
#include "codegen/target_machine.h"

#include <llvm/MC/TargetRegistry.h>
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
  auto* tm = target->createTargetMachine(spec.triple, spec.cpu, spec.features, options, llvm::Reloc::PIC_,
                                         llvm::CodeModel::Small, llvm::CodeGenOpt::Aggressive);
  user_assert(tm) << "LLVM could not create a target machine for " << spec.str();
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

}  // namespace kiln
