#include "lower/op_lowering.h"

#include <algorithm>
#include <cctype>

#include "lower/schedules_gpu.h"
#include "support/diagnostics.h"
#include "te/lower.h"
#include "tir/inplace.h"
#include "tir/ir_printer.h"
#include "tir/simplify.h"
#include "tune/space.h"

namespace kiln::lower {

int OpContext::input(size_t i) const {
  user_assert(has_input(i)) << node().describe() << ": required input " << i << " is missing";
  return node().inputs[i];
}
bool OpContext::has_input(size_t i) const { return i < node().inputs.size() && node().inputs[i] >= 0; }

graph::Shape OpContext::static_shape(int v) const {
  const graph::Value& val = value(v);
  if (val.is_dynamic()) throw DynamicShapeError("value '" + val.name + "' has run-time dimensions " + graph::dims_str(val.dims));
  return val.shape;
}

te::Dims OpContext::dims_of(int v) const {
  graph::DimExprs d = value(v).dim_exprs();
  return te::Dims(d.begin(), d.end());
}
int OpContext::output(size_t i) const {
  internal_assert(i < node().outputs.size() && node().outputs[i] >= 0) << node().describe() << ": no output " << i;
  return node().outputs[i];
}

// "k<N>_<what>_<node name>", with the name made symbol-safe.
namespace {

// Adds graph value v as the next parameter of kernel k; returns its buffer.
tir::Buffer add_kernel_param(KernelDef& k, const graph::Graph& g, int v, Access access) {
  const graph::Value& val = g.values[v];
  auto b = tir::make_buffer(val.name, graph::dtype_to_tir(val.dtype), val.storage_elements(), (int)k.params.size());
  if (val.is_constant() && access == Access::Read) {
    auto c = std::make_shared<tir::BufferNode>(*b);
    c->constant = true;
    b = c;
  }
  k.params.push_back(b);
  k.param_values.push_back(v);
  k.access.push_back(access);
  return b;
}

// While alive, the tuning context (if any) names `kernel` as the one being
// scheduled, so that the knobs its schedule declares map it to their workload.
class SchedulingKernel {
 public:
  SchedulingKernel(tune::Tuning* tuning, const std::string& kernel) : tuning_(tuning) {
    if (tuning_) tuning_->current_kernel = kernel;
  }
  ~SchedulingKernel() {
    if (tuning_) tuning_->current_kernel.clear();
  }

 private:
  tune::Tuning* tuning_;  // null: no tuning context
};

}  // namespace

std::string OpContext::kernel_name(const std::string& what) {
  std::string safe;
  for (char c : node().name) safe += std::isalnum((unsigned char)c) ? c : '_';
  if (safe.size() > 48) safe = safe.substr(0, 48);
  return "k" + std::to_string(next_kernel_id_++) + "_" + what + "_" + safe;
}

te::Tensor OpContext::tensor_of(int value_index) {
  {  // a fused producer: read its formula
    auto p = state_->pending.find(value_index);
    if (p != state_->pending.end()) {
      fused_sources_.insert(fused_sources_.end(), p->second.sources.begin(), p->second.sources.end());
      return p->second.tensor;
    }
  }
  auto it = state_->placeholders.find(value_index);
  if (it != state_->placeholders.end()) return it->second;
  const graph::Value& v = value(value_index);
  if (!v.sym.empty() && !v.is_constant() && v.producer < 0) {
    // A symbolic constant (a shape computed from run-time dimensions): its
    // elements are formulas of the kernel's symbols, with no storage.
    return symbolic_tensor(v, v.name, dims_of(value_index));
  }
  te::Tensor t = te::placeholder(v.name, dims_of(value_index), graph::dtype_to_tir(v.dtype));
  state_->placeholders[value_index] = t;
  state_->bound[t.get()] = value_index;
  return t;
}

te::Tensor OpContext::in(size_t i) { return tensor_of(input(i)); }

graph::DType dtype_from_tir(tir::Type t) {
  switch (t.code) {
    case tir::TypeCode::Float: return t.bits == 64 ? graph::DType::F64 : t.bits == 16 ? graph::DType::F16 : graph::DType::F32;
    case tir::TypeCode::Int:
      return t.bits == 8 ? graph::DType::I8 : t.bits == 16 ? graph::DType::I16 : t.bits == 32 ? graph::DType::I32 : graph::DType::I64;
    case tir::TypeCode::UInt:
      return t.bits == 16 ? graph::DType::U16 : t.bits == 32 ? graph::DType::U32 : t.bits == 64 ? graph::DType::U64 : graph::DType::U8;
    case tir::TypeCode::Bool: return graph::DType::Bool;
  }
  return graph::DType::F32;
}

// One kernel: `t` scheduled and lowered into the storage of `out_value`.
void OpContext::emit_kernel(const te::Tensor& t, int out_value, const ScheduleFn& schedule) {
  const graph::Value& ov = value(out_value);
  tir::Type store_type = graph::dtype_to_tir(ov.dtype);
  te::Tensor src = t;
  if (t.dtype() != store_type) {  // e.g. a bool result stored as one byte
    internal_assert(t.dtype().is_bool() && ov.dtype == graph::DType::Bool)
        << node().describe() << ": formula of type " << t.dtype().str() << " for output of " << graph::dtype_name(ov.dtype);
    src = te::compute(t.name() + "_u8", t.dims(), [t, store_type](const Indices& i) { return tir::cast(store_type, t(i)); });
  }
  graph::DimExprs want = ov.dim_exprs();
  bool same = src.ndim() == want.size();
  for (size_t d = 0; same && d < want.size(); d++) same = tir::equal(tir::simplify(src.dims()[d]), tir::simplify(want[d]));
  internal_assert(same) << node().describe() << ": formula shape "
                        << graph::dims_str(graph::DimExprs(src.dims().begin(), src.dims().end()))
                        << " differs from output " << graph::dims_str(want);
  if (ov.elements() == 0) return;  // an empty tensor (or one empty at every run-time size): nothing to compute
  KernelDef k;
  std::string op;
  for (char c : node().op) op += (char)std::tolower((unsigned char)c);
  k.name = kernel_name(op);
  for (int n : fused_sources_)  // once each (a value read twice lists its sources twice)
    if (std::find(k.source_nodes.begin(), k.source_nodes.end(), n) == k.source_nodes.end()) k.source_nodes.push_back(n);
  k.source_nodes.push_back(node_index);
  auto add_param = [&](int v, Access access) { return add_kernel_param(k, graph, v, access); };
  tir::Buffer out = add_param(out_value, Access::Write);
  std::map<const te::TensorNode*, tir::Buffer> reads;
  auto buffer_of = [&](const te::TensorNode* n) -> tir::Buffer {
    auto b = state_->bound.find(n);
    if (b == state_->bound.end()) return nullptr;
    auto r = reads.find(n);
    if (r != reads.end()) return r->second;
    internal_assert(b->second != out_value) << node().describe() << ": a kernel reads its own output";
    return reads[n] = add_param(b->second, Access::Read);
  };
  // A scheduled reduction under an elementwise epilogue lowers with its own
  // schedule; anything else with the given (or default) schedule.
  te::Epilogue epilogue;
  te::Tensor anchor = src->kind == te::TensorNode::Kind::Reduce ? src : te::find_epilogue_anchor(src, &epilogue);
  auto rs = anchor.defined() ? state_->reduction_schedules.find(anchor.get()) : state_->reduction_schedules.end();
  if (state_->gpu) {  // the CPU schedules do not apply; a reduction keeps its epilogue
    te::Stage stage(anchor.defined() ? anchor : src);
    auto gs = anchor.defined() ? state_->gpu_reduction_schedules.find(anchor.get()) : state_->gpu_reduction_schedules.end();
    if (gs != state_->gpu_reduction_schedules.end()) {
      SchedulingKernel scheduling(state_->tuning, k.name);
      gs->second(stage);
    } else if (!(reduce_fits_shared_gpu(stage) && gpu_shared_memory() && schedule_reduce_shared_gpu(stage))) {
      default_gpu_schedule(stage);
    }
    te::Epilogue e = anchor.defined() ? epilogue : te::Epilogue();
    k.body = te::lower_stage(stage, out, buffer_of, Expr(0), e);
    // Shared memory needs the invocations to run together: a host fallback
    // gets the same loops without it (local loops run one after another).
    bool shares = !stage.shared_caches.empty();
    for (auto& l : stage.leaves) shares |= l->reduce && tir::is_local_loop(l->kind);
    if (shares) k.host_body = te::lower_stage(stage, out, buffer_of, Expr(0), e, /*host=*/true);
  } else if (!schedule && rs != state_->reduction_schedules.end()) {
    te::Stage stage(anchor);
    {
      SchedulingKernel scheduling(state_->tuning, k.name);
      rs->second(stage);
    }
    k.body = te::lower_stage(stage, out, buffer_of, Expr(0), epilogue);
  } else {
    te::Stage stage(src);
    if (schedule) schedule(stage);
    else te::default_cpu_schedule(stage);
    k.body = te::lower_stage(stage, out, buffer_of);
  }
  kernels.push_back(std::move(k));
}

void OpContext::schedule_reduction(const te::Tensor& r, const ScheduleFn& schedule) {
  internal_assert(r->kind == te::TensorNode::Kind::Reduce) << "schedule_reduction of a non-reduction";
  state_->reduction_schedules[r.get()] = schedule;
}

void OpContext::schedule_reduction_gpu(const te::Tensor& r, const ScheduleFn& schedule) {
  internal_assert(r->kind == te::TensorNode::Kind::Reduce) << "schedule_reduction_gpu of a non-reduction";
  state_->gpu_reduction_schedules[r.get()] = schedule;
}

te::Tensor OpContext::scan_state(const std::string& name, const te::Dims& dims, tir::Type dtype) {
  graph::Value v;
  v.name = graph.unique_name(node().name + "." + name);
  v.dtype = dtype_from_tir(dtype);
  v.producer = node_index;
  int id = graph.add_value(std::move(v));
  graph.set_dims(id, graph::DimExprs(dims.begin(), dims.end()));
  return tensor_of(id);
}

void OpContext::emit_scan(const Expr& steps, const std::vector<ScanState>& states) {
  KernelDef k;
  k.name = kernel_name("scan");
  k.source_nodes = {node_index};
  std::map<const te::TensorNode*, tir::Buffer> bufs;
  auto add_param = [&](int v, Access access) { return add_kernel_param(k, graph, v, access); };
  for (auto& s : states) bufs[s.tensor.get()] = add_param(state_->bound.at(s.tensor.get()), Access::ReadWrite);
  auto buffer_of = [&](const te::TensorNode* n) -> tir::Buffer {
    auto r = bufs.find(n);
    if (r != bufs.end()) return r->second;
    auto b = state_->bound.find(n);
    if (b == state_->bound.end()) return nullptr;
    return bufs[n] = add_param(b->second, Access::Read);
  };
  Expr t = tir::Var::make(tir::Index(), "t");
  std::vector<tir::Stmt> body;
  for (auto& s : states) {
    te::Tensor slice = s.step(t);
    te::Dims per_step;
    per_step.assign(s.tensor.dims().begin() + 1, s.tensor.dims().end());
    bool same = slice.ndim() == per_step.size();
    for (size_t d = 0; same && d < per_step.size(); d++) same = tir::equal(tir::simplify(slice.dims()[d]), tir::simplify(per_step[d]));
    internal_assert(same) << node().describe() << ": scan step shape mismatch";
    te::Stage stage(slice);  // serial loops: workgroups cannot nest in the time loop
    body.push_back(te::lower_stage(stage, bufs.at(s.tensor.get()), buffer_of, t * te::num_elements(per_step)));
  }
  k.body = tir::For::make(t, Expr(0), steps, tir::ForKind::Serial, tir::Block::make(body));
  kernels.push_back(std::move(k));
}

void OpContext::emit_tir(const std::string& what, const std::function<tir::Stmt(const BindFn&)>& body) {
  KernelDef k;
  k.name = kernel_name(what);
  k.source_nodes = {node_index};
  {
    SchedulingKernel scheduling(state_->tuning, k.name);  // (a hand-written kernel may declare knobs too)
    k.body = body([&](int v, Access access) { return add_kernel_param(k, graph, v, access); });
  }
  kernels.push_back(std::move(k));
}

void OpContext::set_output(size_t i, const te::Tensor& t, const ScheduleFn& schedule) {
  if (state_->fused.count(output(i)) && t.dtype() == graph::dtype_to_tir(value(output(i)).dtype)) {
    PendingTensor p{t, fused_sources_};
    p.sources.push_back(node_index);
    state_->pending[output(i)] = p;
    return;
  }
  emit_kernel(t, output(i), schedule);
}

te::Tensor OpContext::materialize(const te::Tensor& t, const ScheduleFn& schedule) {
  graph::Value v;
  v.name = graph.unique_name(node().name + "." + t.name());
  v.dtype = dtype_from_tir(t.dtype().is_bool() ? tir::UInt(8) : t.dtype());
  if (t.dtype().is_bool()) v.dtype = graph::DType::Bool;
  v.producer = node_index;
  int id = graph.add_value(std::move(v));
  graph.set_dims(id, graph::DimExprs(t.dims().begin(), t.dims().end()));
  emit_kernel(t, id, schedule);
  return tensor_of(id);
}

void OpContext::require_float32() const {
  for (int v : node().inputs)
    if (v >= 0) {
      user_assert(value(v).dtype == graph::DType::F32)
          << node().describe() << ": input '" << value(v).name << "' is " << graph::dtype_name(value(v).dtype)
          << "; kilnc supports this operator on float32 only so far";
    }
  for (int v : node().outputs)
    if (v >= 0) {
      user_assert(value(v).dtype == graph::DType::F32)
          << node().describe() << ": output '" << value(v).name << "' is " << graph::dtype_name(value(v).dtype)
          << "; kilnc supports this operator on float32 only so far";
    }
}

std::vector<Expr> spatial_pads(const OpContext& ctx, const te::Dims& in, const te::Dims& out,
                               const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations) {
  size_t k = kernel.size();
  std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  std::vector<Expr> pads(2 * k, Expr(0));
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> given = ctx.node().attr_ints("pads", std::vector<int64_t>(2 * k, 0));
    user_assert(given.size() == 2 * k) << ctx.node().describe() << ": 'pads' must have " << 2 * k << " entries";
    for (size_t i = 0; i < 2 * k; i++) {
      user_assert(given[i] >= 0) << ctx.node().describe() << ": negative pads are not supported";
      pads[i] = Expr(given[i]);
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < k; i++) {
      Expr total = tir::simplify(tir::max(Expr(0), (out[2 + i] - Expr(1)) * Expr(strides[i]) +
                                                       Expr((kernel[i] - 1) * dilations[i] + 1) - in[2 + i]));
      Expr small = tir::simplify(total / Expr(2)), large = tir::simplify(total - small);
      pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      pads[i + k] = tir::simplify(total - pads[i]);
    }
  } else {
    user_assert(auto_pad == "VALID") << ctx.node().describe() << ": unknown auto_pad '" << auto_pad << "'";
  }
  return pads;
}

std::vector<int64_t> static_pads(const std::vector<Expr>& pads) {
  std::vector<int64_t> r;
  for (auto& p : pads) r.push_back(static_extent(p, "a pad"));
  return r;
}

void OpContext::require_float() const {
  for (int v : node().inputs)
    if (v >= 0) {
      user_assert(value(v).dtype == graph::DType::F32 || value(v).dtype == graph::DType::F64)
          << node().describe() << ": input '" << value(v).name << "' is " << graph::dtype_name(value(v).dtype)
          << "; kilnc supports this operator on float32 and float64 only so far";
    }
}

bool dims_differ(const Expr& a, const Expr& b) {
  Expr d = tir::simplify(a - b);
  auto c = tir::as_const_int(d);
  return c && *c != 0;
}

int64_t static_extent(const Expr& e, const std::string& what) {
  Expr s = tir::simplify(e);  // held: as_const_int points into it
  auto c = tir::as_const_int(s);
  if (!c) throw DynamicShapeError(what + " has the run-time extent " + tir::to_string(e));
  return *c;
}

Indices broadcast_index(const te::Dims& in_dims, const Indices& out_idx) {
  internal_assert(in_dims.size() <= out_idx.size()) << "broadcast from a higher rank";
  size_t offset = out_idx.size() - in_dims.size();
  Indices r;
  for (size_t i = 0; i < in_dims.size(); i++) {
    auto c = tir::as_const_int(in_dims[i]);
    r.push_back(c && *c == 1 ? Expr(0) : out_idx[offset + i]);
  }
  return r;
}

Expr in_range(const Indices& idx, const te::Dims& lo, const te::Dims& hi) {
  Expr cond;
  for (size_t i = 0; i < idx.size(); i++) {
    Expr c = lo[i] <= idx[i] && idx[i] < hi[i];
    cond = cond.defined() ? (cond && c) : c;
  }
  return cond.defined() ? cond : tir::IntImm::make(tir::Bool(), 1);
}

te::Tensor symbolic_tensor(const graph::Value& v, const std::string& name, const te::Dims& dims) {
  std::vector<Expr> elems(v.sym.begin(), v.sym.end());
  tir::Type t = graph::dtype_to_tir(v.dtype);
  return te::compute(name, dims, [elems, t, dims](const Indices& i) {
    Expr flat = te::flat_index(dims, i);
    Expr r = tir::cast(t, elems.back());
    for (size_t k = elems.size() - 1; k-- > 0;) r = tir::select(tir::EQ::make(flat, Expr((int64_t)k)), tir::cast(t, elems[k]), r);
    return r;
  });
}

Expr wrap_index(Expr i, Expr extent) {
  i = tir::cast(tir::Index(), i);
  i = tir::select(i < Expr(0), i + extent, i);
  return tir::clamp(i, Expr(0), extent - Expr(1));
}

std::vector<int64_t> const_ints(OpContext& ctx, size_t input, const char* what) {
  const graph::Value& v = ctx.value(ctx.input(input));
  user_assert(v.is_constant()) << ctx.node().describe() << ": " << what
                               << " must be a compile-time constant (an initializer, or --freeze-input)";
  std::vector<int64_t> r;
  for (int64_t i = 0; i < v.elements(); i++) r.push_back(v.const_int_at(i));
  return r;
}

std::vector<Expr> int_exprs(OpContext& ctx, size_t input, const char* what) {
  const graph::Value& v = ctx.value(ctx.input(input));
  std::vector<Expr> r;
  if (!v.sym.empty()) return std::vector<Expr>(v.sym.begin(), v.sym.end());
  user_assert(v.is_constant()) << ctx.node().describe() << ": " << what
                               << " must be a compile-time constant, a shape computed from the inputs' dimensions, "
                                  "or an input given a range with --input-value";
  for (int64_t i = 0; i < v.elements(); i++) r.push_back(Expr(v.const_int_at(i)));
  return r;
}

tir::Type compute_type(graph::DType dt) { return dt == graph::DType::Bool ? tir::Bool() : graph::dtype_to_tir(dt); }

Expr scalar_input(OpContext& ctx, size_t i, tir::Type as) {
  const graph::Value& v = ctx.value(ctx.input(i));
  user_assert(v.elements() == 1) << ctx.node().describe() << ": input " << i << " must hold one element";
  if (v.is_constant()) return tir::make_const(as, v.const_at(0));
  te::Tensor s = ctx.in(i);
  return tir::cast(as, s(Indices(s.ndim(), Expr(0))));
}

Expr padded_read(const te::Tensor& t, const Indices& idx, Expr pad) {
  Indices clamped;
  te::Dims lo(std::vector<int64_t>(t.ndim(), 0));
  for (size_t i = 0; i < t.ndim(); i++) clamped.push_back(tir::clamp(idx[i], Expr(0), t.dims()[i] - Expr(1)));
  return tir::select(in_range(idx, lo, t.dims()), t(clamped), pad);
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  user_assert(axis >= 0 && axis < std::max<int64_t>(rank, 1))
      << ctx.node().describe() << ": axis " << axis << " is out of range for rank " << rank;
  return axis;
}

}  // namespace kiln::lower
