// Verification of Vulkan bundles; see bundle_verify_spirv.h.
#include "bundle/bundle_verify_spirv.h"

#include <string.h>

#include "base/checked_math.h"
#include "bundle/spirv_inspect.h"
#include "kiln_bundle_version.h"

namespace fb = kiln::fb;

#define KILN_NAME_FMT "%.64s"

// Libraries: known feature bits. SpirV and ElfSharedObject libraries may be
// mixed (heterogeneous bundles, since 0.3: the ELF kernels run on the host).
static kiln_status_t kiln_bundle_verify_spirv_libraries(const fb::Bundle* bundle, int* out_spirv) {
  uint32_t library_count = bundle->libraries() ? bundle->libraries()->size() : 0;
  uint32_t spirv = 0;
  for (uint32_t i = 0; i < library_count; ++i) {
    const fb::KernelLibrary* library = bundle->libraries()->Get(i);
    if (library->format() != fb::LibraryFormat::SpirV) continue;
    ++spirv;
    uint32_t known = (uint32_t)fb::VulkanFeature::ShaderInt64 | (uint32_t)fb::VulkanFeature::ShaderFloat64;
    uint32_t features = (uint32_t)library->vulkan_features();
    if (features & ~known) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: library %u: unknown vulkan_features bits 0x%x", i,
                              features & ~known);
    }
  }
  *out_spirv = spirv != 0;
  return NULL;
}

// One kernel's module: range inside its library, interface sizes.
static kiln_status_t kiln_bundle_verify_spirv_kernel(const fb::Bundle* bundle, uint32_t index,
                                                     const kiln_bundle_view_t* view) {
  const fb::Kernel* kernel = bundle->kernels()->Get(index);
  const fb::KernelLibrary* library = bundle->libraries()->Get(kernel->library());
  const char* name = kernel->name()->c_str();
  const fb::SpirvKernel* module = kernel->spirv();
  if (library->format() != fb::LibraryFormat::SpirV) {
    if (!module) return NULL;
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): has a SPIR-V module but its library is not SpirV",
                            index, name);
  }
  if (!module) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT "'): no SPIR-V module (spirv)",
                            index, name);
  }
  if (!kiln_is_aligned(module->offset(), 4) || !kiln_is_aligned(module->size(), 4) ||
      module->size() < KILN_BUNDLE_SPIRV_MIN_SIZE) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): SPIR-V module [%llu, +%llu) must start at a multiple of 4 "
                            "and have a size that is a multiple of 4 and at least %d",
                            index, name, (unsigned long long)module->offset(),
                            (unsigned long long)module->size(), KILN_BUNDLE_SPIRV_MIN_SIZE);
  }
  if (!kiln_range_within(module->offset(), module->size(), library->size())) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): SPIR-V module [%llu, +%llu) is outside its library's blob "
                            "(%llu bytes)",
                            index, name, (unsigned long long)module->offset(),
                            (unsigned long long)module->size(),
                            (unsigned long long)library->size());
  }
  const flatbuffers::String* entry = module->entry_point();
  if (entry && (entry->size() == 0 || entry->size() > KILN_BUNDLE_SPIRV_MAX_ENTRY_POINT ||
                strlen(entry->c_str()) != entry->size())) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): entry point name must have 1 to %d characters and no NUL",
                            index, name, KILN_BUNDLE_SPIRV_MAX_ENTRY_POINT);
  }
  const flatbuffers::Vector<uint32_t>* size = module->workgroup_size();
  if (!size || size->size() != 3) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): workgroup_size must have exactly 3 entries, has %u",
                            index, name, size ? size->size() : 0);
  }
  uint64_t invocations = 1;
  for (uint32_t d = 0; d < 3; ++d) {
    if (size->Get(d) == 0 || !kiln_mul_u64(invocations, size->Get(d), &invocations) ||
        invocations > 0xFFFFFFFFull) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: kernel %u ('" KILN_NAME_FMT
                              "'): workgroup_size (%u, %u, %u) must be >= 1 per dimension "
                              "and below 2^32 invocations",
                              index, name, size->Get(0), size->Get(1), size->Get(2));
    }
  }
  // The module itself (no device needed): framing, the entry point, and the
  // workgroup size the bundle states.
  if (view->data_segment) {
    kiln_spirv_info_t info;
    // Inside the library's blob, inside the data segment: offsets and size fit a size_t.
    kiln_status_t status = kiln_spirv_inspect(view->data_segment + library->offset() + module->offset(),
                                              (size_t)module->size(), entry ? entry->c_str() : NULL, &info);
    if (status) {
      return kiln_status_annotate(status, "bundle: kernel %u ('" KILN_NAME_FMT "')", index, name);
    }
    for (uint32_t d = 0; d < 3; ++d) {
      if (info.workgroup_size[d] != size->Get(d)) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: kernel %u ('" KILN_NAME_FMT
                                "'): the module's workgroup size (%u, %u, %u) is not the stated "
                                "(%u, %u, %u)",
                                index, name, info.workgroup_size[0], info.workgroup_size[1],
                                info.workgroup_size[2], size->Get(0), size->Get(1), size->Get(2));
      }
    }
  }
  if (module->binding_count() > KILN_BUNDLE_SPIRV_MAX_BINDINGS) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT "'): %u bindings (at most %d)",
                            index, name, module->binding_count(), KILN_BUNDLE_SPIRV_MAX_BINDINGS);
  }
  if (!kiln_is_aligned(module->push_constant_size(), 4) ||
      module->push_constant_size() > 4 * KILN_BUNDLE_MAX_PUSH_CONSTANTS) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: kernel %u ('" KILN_NAME_FMT
                            "'): push_constant_size %u must be a multiple of 4 and at most %d",
                            index, name, module->push_constant_size(),
                            4 * KILN_BUNDLE_MAX_PUSH_CONSTANTS);
  }
  return NULL;
}

// Whether `dispatch` binds `tensor` (with write access when `write`).
static int kiln_bundle_dispatch_binds(const fb::Dispatch* dispatch, uint32_t tensor, int write) {
  uint32_t count = dispatch->bindings() ? dispatch->bindings()->size() : 0;
  for (uint32_t b = 0; b < count; ++b) {
    const fb::Binding* binding = dispatch->bindings()->Get(b);
    if (binding->tensor() == tensor && (!write || binding->access() != fb::Access::Read)) return 1;
  }
  return 0;
}

// A host dispatch's copies: arena tensors it binds (uploads: that it writes).
static kiln_status_t kiln_bundle_verify_host_transfers(const fb::Bundle* bundle, uint32_t index,
                                                       const flatbuffers::Vector<uint32_t>* list,
                                                       const char* what, int write) {
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  const fb::Dispatch* dispatch = bundle->dispatches()->Get(index);
  for (uint32_t i = 0; list && i < list->size(); ++i) {
    uint32_t tensor = list->Get(i);
    if (tensor >= tensor_count || bundle->tensors()->Get(tensor)->storage() != fb::Storage::Arena ||
        !kiln_bundle_dispatch_binds(dispatch, tensor, write)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: %s[%u] = %u must be an arena tensor the "
                              "dispatch binds%s",
                              index, what, i, tensor, write ? " with write access" : "");
    }
  }
  return NULL;
}

// Dispatches of SpirV kernels bind what the module declares; only host
// dispatches of bundles with SpirV libraries list host copies.
static kiln_status_t kiln_bundle_verify_spirv_dispatch(const fb::Bundle* bundle, uint32_t index,
                                                       int spirv) {
  const fb::Dispatch* dispatch = bundle->dispatches()->Get(index);
  const fb::Kernel* kernel = bundle->kernels()->Get(dispatch->kernel());
  const fb::SpirvKernel* module = kernel->spirv();
  uint32_t downloads = dispatch->host_downloads() ? dispatch->host_downloads()->size() : 0;
  uint32_t uploads = dispatch->host_uploads() ? dispatch->host_uploads()->size() : 0;
  if (!module) {
    if (!spirv && downloads + uploads != 0) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: host_downloads/host_uploads in a bundle "
                              "without SpirV libraries",
                              index);
    }
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_host_transfers(bundle, index, dispatch->host_downloads(),
                                                           "host_downloads", 0));
    return kiln_bundle_verify_host_transfers(bundle, index, dispatch->host_uploads(),
                                             "host_uploads", 1);
  }
  if (downloads + uploads != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: dispatch %u: host_downloads/host_uploads on a SpirV kernel",
                            index);
  }
  uint32_t bindings = dispatch->bindings() ? dispatch->bindings()->size() : 0;
  uint32_t constants = dispatch->push_constants() ? dispatch->push_constants()->size() : 0;
  if (bindings != module->binding_count() || constants * 4 != module->push_constant_size()) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: dispatch %u: %u bindings and %u push-constant bytes, but "
                            "kernel %u ('" KILN_NAME_FMT "') declares %u and %u",
                            index, bindings, constants * 4, dispatch->kernel(),
                            kernel->name()->c_str(), module->binding_count(),
                            module->push_constant_size());
  }
  return NULL;
}

kiln_status_t kiln_bundle_verify_spirv(const fb::Bundle* bundle, kiln_bundle_view_t* view) {
  int spirv = 0;
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_spirv_libraries(bundle, &spirv));
  uint32_t kernel_count = bundle->kernels() ? bundle->kernels()->size() : 0;
  for (uint32_t i = 0; i < kernel_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_spirv_kernel(bundle, i, view));
  }
  uint32_t dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t i = 0; i < dispatch_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_spirv_dispatch(bundle, i, spirv));
  }
  if (!spirv) return NULL;
  // Storage buffer offsets: the largest minStorageBufferOffsetAlignment.
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  for (uint32_t i = 0; i < tensor_count; ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(i);
    if (!kiln_is_aligned(tensor->offset(), KILN_BUNDLE_VULKAN_ALIGNMENT)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT
                              "'): offset %llu is not a multiple of %d (required in bundles "
                              "with SpirV libraries)",
                              i, tensor->name()->c_str(), (unsigned long long)tensor->offset(),
                              KILN_BUNDLE_VULKAN_ALIGNMENT);
    }
  }
  view->spirv = 1;
  return NULL;
}
