#include "codegen/codegen_spirv.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "codegen/codegen_glsl.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

constexpr spv_target_env kEnv = SPV_ENV_VULKAN_1_0;

// The shader with line numbers, for error messages.
std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::ostringstream out;
  std::string l;
  for (int n = 1; std::getline(in, l); n++) out << n << ": " << l << "\n";
  return out.str();
}

// Marks the prelude's kiln_fdiv DontInline, so that the optimizer keeps it
// one function: inlined at every division it made a GridSample kernel's
// module 5 MB and its optimization take over a minute (the correctly
// rounded division is long, codegen_glsl.cpp). Found by its OpName (glslang
// names every function); the function control is OpFunction's third operand.
void keep_division_out_of_line(std::vector<uint32_t>& words) {
  constexpr uint32_t kOpName = 5, kOpFunction = 54, kDontInline = 0x2;
  std::vector<uint32_t> ids;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, op = words[i] & 0xFFFFu;
    if (count == 0 || i + count > words.size()) break;  // malformed: leave it to the validator
    if (op == kOpName && count >= 3) {
      const char* text = (const char*)&words[i + 2];
      size_t room = (count - 2) * 4;
      if (std::string(text, strnlen(text, room)).rfind("kiln_fdiv(", 0) == 0) ids.push_back(words[i + 1]);
    }
    if (op == kOpFunction && count >= 5 && std::find(ids.begin(), ids.end(), words[i + 2]) != ids.end())
      words[i + 3] |= kDontInline;
    i += count;
  }
}

std::vector<uint32_t> glsl_to_spirv(const std::string& name, const std::string& source) {
  static bool initialized = glslang::InitializeProcess();
  internal_assert(initialized) << "glslang failed to initialize";
  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_0);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_0);
  auto messages = (EShMessages)(EShMsgSpvRules | EShMsgVulkanRules);
  internal_assert(shader.parse(GetDefaultResources(), 450, false, messages))
      << "kernel " << name << ": glslang rejected the generated shader:\n" << shader.getInfoLog() << "\n" << numbered(source);
  glslang::TProgram program;
  program.addShader(&shader);
  internal_assert(program.link(messages)) << "kernel " << name << ": glslang link failed:\n" << program.getInfoLog();
  std::vector<uint32_t> words;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.disableOptimizer = true;  // SPIRV-Tools runs below
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), words, &logger, &options);
  internal_assert(!words.empty()) << "kernel " << name << ": no SPIR-V from glslang: " << logger.getAllMessages();
  keep_division_out_of_line(words);
  return words;
}

// Optimizes and validates; both failing is a bug in the generator.
std::vector<uint32_t> optimize_and_validate(const std::string& name, const std::vector<uint32_t>& words,
                                            const std::string& source) {
  std::string diagnostics;
  auto consumer = [&](spv_message_level_t, const char*, const spv_position_t& pos, const char* message) {
    diagnostics += "  at word " + std::to_string(pos.index) + ": " + message + "\n";
  };
  spvtools::Optimizer optimizer(kEnv);
  optimizer.SetMessageConsumer(consumer);
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> optimized;
  internal_assert(optimizer.Run(words.data(), words.size(), &optimized))
      << "kernel " << name << ": the SPIR-V optimizer failed:\n" << diagnostics << numbered(source);
  spvtools::SpirvTools tools(kEnv);
  tools.SetMessageConsumer(consumer);
  if (!tools.Validate(optimized)) {
    std::string text;
    tools.Disassemble(optimized, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES);
    internal_error << "kernel " << name << ": invalid SPIR-V:\n" << diagnostics << text;
  }
  return optimized;
}

}  // namespace

bool spirv_codegen_available() { return true; }

size_t SpirvLibrary::cpu_kernel_count() const {
  size_t n = 0;
  for (auto& k : kernels) n += !k.cpu_reason.empty();
  return n;
}

namespace {

std::string feature_names(uint32_t features) {
  std::string names;
  if (features & kGlslFeatureInt64) names += "shaderInt64";
  if (features & kGlslFeatureFloat64) names += std::string(names.empty() ? "" : ", ") + "shaderFloat64";
  return names;
}

}  // namespace

SpirvLibrary compile_kernels_spirv(const std::vector<KernelDef>& kernels, const SpirvOptions& options) {
  SpirvLibrary library;
  for (const KernelDef& k : kernels) {
    report_progress(options.progress, "compiling SPIR-V", library.kernels.size(), kernels.size(), "kernels");
    SpirvKernel out;
    out.binding_count = (uint32_t)k.params.size();
    if (!k.host_only.empty()) {
      out.cpu_reason = k.host_only;
      library.kernels.push_back(std::move(out));
      continue;
    }
    try {
      GlslKernel glsl = emit_glsl(k);
      if (options.glsl_out) *options.glsl_out += glsl.source;
      out.features = glsl.features;
      uint32_t missing = glsl.features & ~options.device_features;
      if (missing) {
        out.cpu_reason = "needs " + feature_names(missing);
      } else {
        out.words = optimize_and_validate(k.name, glsl_to_spirv(k.name, glsl.source), glsl.source);
        out.workgroup_size = glsl.workgroup_size;
        library.features |= glsl.features;
      }
    } catch (const InternalError& e) {  // the generator's limits: the CPU can still run it
      std::string what = e.what();
      out.cpu_reason = "GLSL/SPIR-V code generation failed: " + what.substr(0, what.find('\n'));
      out.words.clear();
    }
    library.kernels.push_back(std::move(out));
  }
  return library;
}

}  // namespace kiln
