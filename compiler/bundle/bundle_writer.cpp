#include "bundle/bundle_writer.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <llvm/Support/xxhash.h>

#include "bundle/shape_program.h"
#include "bundle_generated.h"
#include "codegen/codegen_glsl.h"
#include "kiln_bundle_version.h"
#include "support/diagnostics.h"
#include "support/version.h"
#include "tir/simplify.h"

namespace kiln {
namespace {

constexpr uint64_t kAlign = KILN_BUNDLE_ALIGNMENT;
uint64_t align_up(uint64_t x, uint64_t alignment = kAlign) { return (x + alignment - 1) / alignment * alignment; }
static_assert((uint32_t)fb::VulkanFeature::ShaderInt64 == kGlslFeatureInt64, "feature bits");
static_assert((uint32_t)fb::VulkanFeature::ShaderFloat64 == kGlslFeatureFloat64, "feature bits");

// What goes where: tensor table and data segment layout (independent of the
// FlatBuffer's own size).
struct Layout {
  std::vector<int> tensor_values;           // tensor index -> value index
  std::map<int, uint32_t> tensor_of;        // value index -> tensor index
  std::vector<uint64_t> tensor_offset;      // per tensor: arena or data-segment offset
  std::vector<bool> tensor_is_const;        // per tensor
  std::vector<bool> tensor_is_dynamic;      // per tensor: Storage::Dynamic (offset: its slot)
  std::vector<std::pair<const std::vector<uint8_t>*, uint64_t>> blobs;  // data segment pieces
  std::vector<uint64_t> library_offset;     // per kernel library blob
  uint64_t constant_bytes = 0, segment_size = 0;
};

Layout make_layout(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan,
                   const std::vector<const std::string*>& libraries) {
  Layout l;
  std::map<const std::vector<uint8_t>*, uint64_t> data_offset;
  uint64_t cursor = 0;
  auto add = [&](int v) {
    if (v < 0 || l.tensor_of.count(v)) return;
    const graph::Value& val = g.values[v];
    bool is_const = val.is_constant();
    bool is_dynamic = !is_const && plan.dynamic_slot[v] >= 0;
    if (!is_const && !is_dynamic && plan.offset[v] < 0) return;  // no storage: not listed
    uint64_t offset;
    if (is_const) {
      auto it = data_offset.find(val.data.get());
      if (it == data_offset.end()) {
        it = data_offset.emplace(val.data.get(), cursor).first;
        l.blobs.push_back({val.data.get(), cursor});
        cursor = align_up(cursor + val.data->size(), plan.alignment);
      }
      offset = it->second;
    } else {
      offset = is_dynamic ? (uint64_t)plan.dynamic_slot[v] : (uint64_t)plan.offset[v];
    }
    l.tensor_of[v] = (uint32_t)l.tensor_values.size();
    l.tensor_values.push_back(v);
    l.tensor_offset.push_back(offset);
    l.tensor_is_const.push_back(is_const);
    l.tensor_is_dynamic.push_back(is_dynamic);
  };
  for (int v : g.inputs) add(v);
  for (int v : g.outputs) add(v);
  for (auto& k : p.kernels)
    for (int v : k.param_values) add(v);
  // Graph-only tensors (for inspection) that have storage; constants only if already stored.
  for (auto& n : g.nodes) {
    for (int v : n.inputs)
      if (v >= 0 && !g.values[v].is_constant()) add(v);
    for (int v : n.outputs)
      if (v >= 0 && !g.values[v].is_constant()) add(v);
  }
  l.constant_bytes = cursor;
  for (const std::string* lib : libraries) {
    cursor = align_up(cursor);
    l.library_offset.push_back(cursor);
    cursor += lib->size();
  }
  l.segment_size = cursor;
  return l;
}

fb::DType to_fb(graph::DType t) { return static_cast<fb::DType>(static_cast<uint8_t>(t)); }

// The library blobs of a bundle: [SpirV][ELF] (a Vulkan bundle with
// kernels always has its SpirV library, even with every kernel on the
// host: it still runs in a Vulkan session; the ELF only when non-empty);
// static kernels have no blob (their library entry comes last).
struct Libraries {
  std::string spirv, elf;
  bool vulkan = false;                     // a Vulkan bundle: the SpirV library is there
  const StaticKernels* statics = nullptr;  // CPU kernels linked into the application
  std::vector<uint64_t> spirv_offsets;  // per kernel: its module's offset in `spirv`
  bool has_cpu() const { return !elf.empty() || statics; }
  std::vector<const std::string*> blobs() const {
    std::vector<const std::string*> r;
    if (vulkan) r.push_back(&spirv);
    if (!elf.empty()) r.push_back(&elf);
    return r;
  }
};

// Per dispatch: the tensors to copy around host dispatches (heterogeneous bundles).
void plan_host_copies(const graph::Graph& g, const LoweredProgram& p, const Layout& l, const std::vector<bool>& on_host,
                      std::vector<std::vector<uint32_t>>* downloads, std::vector<std::vector<uint32_t>>* uploads) {
  std::vector<std::vector<std::pair<int64_t, uint64_t>>> ranges(p.kernels.size());
  std::vector<std::vector<bool>> writes(p.kernels.size());
  std::vector<std::vector<uint32_t>> tensors(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const KernelDef& k = p.kernels[i];
    for (size_t j = 0; j < k.params.size(); j++) {
      uint32_t t = l.tensor_of.at(k.param_values[j]);
      tensors[i].push_back(t);
      ranges[i].push_back({l.tensor_is_const[t] ? -1 : (int64_t)l.tensor_offset[t],
                           g.values[l.tensor_values[t]].byte_size()});
      writes[i].push_back(k.access[j] != Access::Read);
    }
  }
  HostTransfers h = host_transfers(on_host, ranges, writes);
  downloads->assign(p.kernels.size(), {});
  uploads->assign(p.kernels.size(), {});
  for (size_t i = 0; i < p.kernels.size(); i++) {
    for (size_t j : h.downloads[i]) (*downloads)[i].push_back(tensors[i][j]);
    for (size_t j : h.uploads[i]) (*uploads)[i].push_back(tensors[i][j]);
  }
}

std::vector<uint8_t> build_flatbuffer(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan,
                                      const Libraries& libs, const TargetSpec& target, const Layout& l,
                                      uint64_t segment_offset, const SpirvLibrary* spirv) {
  flatbuffers::FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(true);  // fixed-size fields: the FlatBuffer's size must not depend on their values

  ShapeProgram shapes;  // run-time dimensions (bundles with shape symbols)
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  bool narrow = false;  // a tensor of 0.10's narrow types (float8, int4, ...)
  bool sized_per_run = false;  // a tensor of 0.10's Storage::Dynamic
  for (size_t t = 0; t < l.tensor_values.size(); t++) {
    const graph::Value& v = g.values[l.tensor_values[t]];
    narrow |= graph::is_narrow(v.dtype);
    sized_per_run |= l.tensor_is_dynamic[t];
    std::vector<int32_t> dynamic_dims;
    std::vector<int64_t> min_shape;
    if (v.is_dynamic() && !l.tensor_is_const[t])
      for (auto& d : v.dims) {
        bool fixed = tir::as_const_int(d) != nullptr;
        dynamic_dims.push_back(fixed ? -1 : (int32_t)shapes.add(d));
        min_shape.push_back(fixed ? *tir::as_const_int(d) : std::max<int64_t>(tir::bounds_of(d).min, 0));
      }
    const fb::Storage storage = l.tensor_is_const[t]     ? fb::Storage::Constant
                                : l.tensor_is_dynamic[t] ? fb::Storage::Dynamic
                                                         : fb::Storage::Arena;
    tensors.push_back(fb::CreateTensorDirect(b, v.name.c_str(), to_fb(v.dtype), &v.shape, storage, l.tensor_offset[t],
                                             l.tensor_is_dynamic[t] ? 0 : v.byte_size(),
                                             dynamic_dims.empty() ? nullptr : &dynamic_dims,
                                             min_shape.empty() ? nullptr : &min_shape,
                                             v.dtype == graph::DType::String ? (uint64_t)v.string_bytes : 0));
  }
  auto indices = [&](const std::vector<int>& values) {
    std::vector<uint32_t> r;
    for (int v : values) {
      auto it = l.tensor_of.find(v);
      if (it != l.tensor_of.end()) r.push_back(it->second);
    }
    return r;
  };
  std::vector<uint32_t> inputs = indices(g.inputs), outputs = indices(g.outputs);

  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  for (auto& n : g.nodes) {
    std::vector<flatbuffers::Offset<fb::Attribute>> attrs;
    for (auto& [name, a] : n.attrs) attrs.push_back(fb::CreateAttributeDirect(b, name.c_str(), a.str().c_str()));
    std::vector<uint32_t> ins = indices(n.inputs), outs = indices(n.outputs);
    nodes.push_back(fb::CreateNodeDirect(b, n.name.c_str(), n.op.c_str(), &attrs, &ins, &outs));
  }
  auto memory = fb::CreateMemoryPlan(b, plan.arena_bytes, (uint32_t)plan.alignment);
  std::vector<flatbuffers::Offset<fb::KernelLibrary>> libraries;
  // A model without kernels (all constant or aliases) has no library.
  uint32_t spirv_index = 0, elf_index = libs.vulkan ? 1 : 0;
  if (libs.vulkan)
    libraries.push_back(fb::CreateKernelLibraryDirect(b, fb::LibraryFormat::SpirV, target.triple.c_str(),
                                                      target.cpu.c_str(), target.features.c_str(),
                                                      l.library_offset.at(spirv_index), libs.spirv.size(),
                                                      static_cast<fb::VulkanFeature>(spirv->features)));
  if (libs.has_cpu()) {
    TargetSpec host = spirv ? TargetSpec::host() : target;  // a Vulkan bundle's CPU kernels run on the host
    if (libs.statics)
      libraries.push_back(fb::CreateKernelLibraryDirect(b, fb::LibraryFormat::StaticLinked, host.triple.c_str(),
                                                        host.cpu.c_str(), host.features.c_str(), 0, 0,
                                                        fb::VulkanFeature::NONE, libs.statics->kernel_hash,
                                                        libs.statics->symbol.c_str()));
    else
      libraries.push_back(fb::CreateKernelLibraryDirect(b, fb::LibraryFormat::ElfSharedObject, host.triple.c_str(),
                                                        host.cpu.c_str(), host.features.c_str(),
                                                        l.library_offset.at(elf_index), libs.elf.size(),
                                                        fb::VulkanFeature::NONE));
  }
  const bool mixed = libs.vulkan && libs.has_cpu();
  std::vector<bool> on_host(p.kernels.size(), !spirv);
  for (size_t i = 0; spirv && i < p.kernels.size(); i++) on_host[i] = !spirv->kernels.at(i).cpu_reason.empty();
  std::vector<std::vector<uint32_t>> downloads(p.kernels.size()), uploads(p.kernels.size());
  if (mixed) plan_host_copies(g, p, l, on_host, &downloads, &uploads);

  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  std::vector<flatbuffers::Offset<fb::Dispatch>> dispatches;
  uint32_t elf_ordinal = 0;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const KernelDef& k = p.kernels[i];
    flatbuffers::Offset<fb::SpirvKernel> module = 0;
    if (!on_host[i]) {
      const SpirvKernel& sk = spirv->kernels.at(i);
      std::vector<uint32_t> size(sk.workgroup_size.begin(), sk.workgroup_size.end());
      module = fb::CreateSpirvKernelDirect(b, libs.spirv_offsets.at(i), sk.words.size() * 4, sk.entry_point.c_str(),
                                           &size, sk.binding_count, sk.push_constant_size);
      kernels.push_back(fb::CreateKernelDirect(b, k.name.c_str(), spirv_index, (uint32_t)i, module));
    } else {
      kernels.push_back(fb::CreateKernelDirect(b, k.name.c_str(), elf_index, elf_ordinal++, module));
    }
    std::vector<uint32_t> wg(k.workgroup_count.begin(), k.workgroup_count.end());
    std::vector<fb::Binding> bindings;
    for (size_t j = 0; j < k.params.size(); j++) {
      auto it = l.tensor_of.find(k.param_values[j]);
      internal_assert(it != l.tensor_of.end()) << "kernel " << k.name << " binds a tensor with no storage";
      bindings.emplace_back(it->second, static_cast<fb::Access>(k.access[j]));
    }
    std::vector<uint32_t> push_constants;
    std::vector<uint32_t> sources(k.source_nodes.begin(), k.source_nodes.end());
    std::vector<int32_t> wg_exprs;
    for (auto& e : k.workgroup_dynamic)
      if (e.defined()) wg_exprs.assign(3, -1);
    if (k.predicate.defined()) wg_exprs.assign(3, -1);
    for (size_t a = 0; a < 3 && !wg_exprs.empty(); a++)
      if (k.workgroup_dynamic[a].defined()) wg_exprs[a] = (int32_t)shapes.add(k.workgroup_dynamic[a]);
    if (k.predicate.defined()) {  // a run-time If's branch: 0 workgroups (skipped) when not taken
      tir::Expr x = k.workgroup_dynamic[0].defined() ? k.workgroup_dynamic[0] : tir::Expr((int64_t)k.workgroup_count[0]);
      wg_exprs[0] = (int32_t)shapes.add(tir::simplify(x * k.predicate));
    }
    std::vector<uint32_t> symbols(k.symbols.begin(), k.symbols.end());
    dispatches.push_back(fb::CreateDispatchDirect(b, (uint32_t)i, &wg, &bindings, &push_constants, &sources,
                                                  mixed ? &downloads[i] : nullptr, mixed ? &uploads[i] : nullptr,
                                                  wg_exprs.empty() ? nullptr : &wg_exprs,
                                                  symbols.empty() ? nullptr : &symbols));
  }
  // The symbols, each set by the first model input dimension that is
  // exactly it, or (a data symbol) by the dispatch writing its source.
  std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
  bool data_symbols = false;
  for (size_t s = 0; s < g.symbols.size(); s++) {
    const graph::Symbol& sym = g.symbols[s];
    if (sym.source_value >= 0) {
      int32_t source = -1;
      for (size_t i = 0; i < p.kernels.size() && source < 0; i++)
        for (size_t j = 0; j < p.kernels[i].params.size(); j++)
          if (p.kernels[i].param_values[j] == sym.source_value && p.kernels[i].access[j] != Access::Read) source = (int32_t)i;
      internal_assert(source >= 0 && l.tensor_of.count(sym.source_value))
          << "data symbol " << sym.name << ": no kernel writes its source";
      symbols.push_back(fb::CreateSymbolDirect(b, sym.name.c_str(), sym.lo, sym.hi, 0, 0, source,
                                               l.tensor_of.at(sym.source_value)));
      data_symbols = true;
      continue;
    }
    int64_t input = -1, dim = -1;
    for (size_t i = 0; i < g.inputs.size() && input < 0; i++) {
      const graph::Value& v = g.values[g.inputs[i]];
      for (size_t d = 0; d < v.dims.size() && input < 0; d++)
        if (auto* var = v.dims[d].as<tir::Var>(); var && var->symbol == (int)s) input = (int64_t)i, dim = (int64_t)d;
    }
    internal_assert(input >= 0) << "shape symbol " << sym.name << " is no model input's dimension";
    symbols.push_back(fb::CreateSymbolDirect(b, sym.name.c_str(), sym.lo, sym.hi, (uint32_t)input, (uint32_t)dim));
  }
  std::vector<flatbuffers::Offset<fb::ShapeConstraint>> constraints;
  for (auto& c : g.constraints) {
    uint32_t e = shapes.add(c.cond);
    constraints.push_back(fb::CreateShapeConstraintDirect(b, e, c.message.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::ShapeExpr>> exprs;
  for (auto& code : shapes.exprs()) {
    std::vector<fb::ShapeInstr> steps;
    for (auto& st : code) steps.emplace_back(static_cast<fb::ShapeOp>(st.op), st.operand);
    exprs.push_back(fb::CreateShapeExprDirect(b, &steps));
  }
  // Sequence and optional inputs and outputs: information only, no min_runtime_minor.
  std::vector<flatbuffers::Offset<fb::Composite>> composites;
  for (auto& c : g.composites) {
    std::vector<uint32_t> elements(c.elements.begin(), c.elements.end());
    composites.push_back(fb::CreateCompositeDirect(
        b, c.name.c_str(), c.optional ? fb::CompositeKind::Optional : fb::CompositeKind::Sequence, c.output,
        &elements, c.optional ? c.presence : -1, c.optional && c.sequence));
  }
  const bool dynamic = !g.symbols.empty();
  std::string producer = std::string("kilnc ") + kKilncVersion;
  // A CPU bundle needs nothing of 0.2 (the Vulkan fields): 0.1 runtimes can
  // run it; a Vulkan bundle needs 0.2, a heterogeneous one 0.3, one with
  // static kernels 0.4.
  // Run-time dimensions need 0.5, sizes a kernel computes (data symbols) 0.6.
  // A Vulkan bundle with every kernel on the host has an empty SpirV library: 0.9.
  // A tensor of a narrow type (float8, float4e2m1, e8m0, int4, uint4, int2, uint2): 0.10.
  uint16_t min_runtime_minor = narrow || sized_per_run ? 10 : libs.vulkan && libs.spirv.empty() ? 9 : data_symbols ? 6 : dynamic ? 5 : libs.statics ? 4 : mixed ? 3 : libs.vulkan ? 2 : 1;
  auto root = fb::CreateBundleDirect(b, KILN_BUNDLE_VERSION_MAJOR, KILN_BUNDLE_VERSION_MINOR, min_runtime_minor,
                                     producer.c_str(), &tensors, &inputs, &outputs, &nodes, memory, &libraries,
                                     &kernels, &dispatches, segment_offset, l.segment_size,
                                     /*content_hash=*/~0ull,  // placeholder, patched in write_bundle
                                     dynamic ? &symbols : nullptr, dynamic ? &exprs : nullptr,
                                     dynamic ? &constraints : nullptr, composites.empty() ? nullptr : &composites);
  fb::FinishSizePrefixedBundleBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace

HostTransfers host_transfers(const std::vector<bool>& on_host,
                             const std::vector<std::vector<std::pair<int64_t, uint64_t>>>& ranges,
                             const std::vector<std::vector<bool>>& writes) {
  HostTransfers h;
  h.downloads.resize(on_host.size());
  h.uploads.resize(on_host.size());
  std::vector<std::pair<uint64_t, uint64_t>> host_valid;  // [begin, end) the host copy holds this run
  auto holds = [&](uint64_t begin, uint64_t end) {
    for (auto& [b, e] : host_valid)
      if (b <= begin && end <= e) return true;
    return false;
  };
  for (size_t i = 0; i < on_host.size(); i++) {
    for (size_t j = 0; j < ranges[i].size(); j++) {
      if (ranges[i][j].first < 0 || ranges[i][j].second == 0) continue;  // constants: read in place
      uint64_t begin = (uint64_t)ranges[i][j].first, end = begin + ranges[i][j].second;
      if (!on_host[i]) {  // a device write makes the host's copy of those bytes stale
        if (writes[i][j])
          host_valid.erase(std::remove_if(host_valid.begin(), host_valid.end(),
                                          [&](auto& r) { return r.first < end && begin < r.second; }),
                           host_valid.end());
        continue;
      }
      // Written ranges are downloaded too: the kernel may write only part of
      // them (the whole range is uploaded after it).
      if (!holds(begin, end)) {
        h.downloads[i].push_back(j);
        host_valid.push_back({begin, end});
      }
      if (writes[i][j]) h.uploads[i].push_back(j);
    }
  }
  return h;
}

std::string write_bundle(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan,
                         const std::string& cpu_library, const TargetSpec& target, BundleStats* stats,
                         const SpirvLibrary* spirv, const StaticKernels* static_kernels) {
  Libraries libs;
  libs.statics = static_kernels;
  internal_assert(!static_kernels || cpu_library.empty()) << "static kernels and a CPU library";
  if (spirv) {
    libs.vulkan = !spirv->kernels.empty();  // no kernels at all: no library (as for the CPU)
    for (auto& k : spirv->kernels) {
      libs.spirv_offsets.push_back(libs.spirv.size());
      libs.spirv.append(reinterpret_cast<const char*>(k.words.data()), k.words.size() * 4);
    }
    internal_assert((cpu_library.empty() && !static_kernels) == (spirv->cpu_kernel_count() == 0))
        << "CPU kernels without a CPU library";
  }
  libs.elf = cpu_library;
  std::vector<const std::string*> blobs = libs.blobs();
  Layout l = make_layout(g, p, plan, blobs);
  // The segment offset depends on the FlatBuffer's size, which (with forced
  // defaults) does not depend on the offset's value: build, measure, rebuild.
  std::vector<uint8_t> fb = build_flatbuffer(g, p, plan, libs, target, l, ~0ull, spirv);
  uint64_t segment_offset = align_up(fb.size());
  fb = build_flatbuffer(g, p, plan, libs, target, l, segment_offset, spirv);
  internal_assert(align_up(fb.size()) == segment_offset) << "bundle FlatBuffer size changed between builds";

  std::string out(segment_offset + l.segment_size, '\0');
  memcpy(out.data(), fb.data(), fb.size());
  for (auto& [data, offset] : l.blobs)
    if (!data->empty()) memcpy(out.data() + segment_offset + offset, data->data(), data->size());
  uint64_t kernel_bytes = 0;
  for (size_t i = 0; i < blobs.size(); i++) {
    memcpy(out.data() + segment_offset + l.library_offset[i], blobs[i]->data(), blobs[i]->size());
    kernel_bytes += blobs[i]->size();
  }
  // content_hash: XXH64 of the file with the field read as zero (see bundle.fbs).
  auto* root = fb::GetSizePrefixedBundle(out.data());
  const uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(root)->GetAddressOf(fb::Bundle::VT_CONTENT_HASH);
  internal_assert(field) << "content_hash was not stored";
  size_t field_offset = (size_t)(field - reinterpret_cast<const uint8_t*>(out.data()));
  memset(out.data() + field_offset, 0, 8);
  uint64_t hash = llvm::xxHash64(llvm::StringRef(out.data(), out.size()));
  memcpy(out.data() + field_offset, &hash, 8);  // little-endian host (FlatBuffers' wire order)
  if (stats) {
    stats->constant_bytes = l.constant_bytes;
    stats->kernel_bytes = kernel_bytes;
    stats->total_bytes = out.size();
  }
  return out;
}

}  // namespace kiln
