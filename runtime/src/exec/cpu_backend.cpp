// The CPU backend (exec/backend.h) and its executor. Everything is bound at
// creation: the arena is allocated once, each dispatch gets its
// kiln_kernel_dispatch_state_t with final buffer pointers, and the worker
// threads (if any) are started, so a run is a loop over kernels that
// neither allocates nor locks — but for tensors sized per run (Dynamic
// slots), whose pages grow when a run needs more than an earlier one.
//
// With one thread the run is a flat loop on the calling thread. With N > 1
// each dispatch's workgroups (linearized with x fastest, as the serial loop
// visits them) are split into N contiguous ranges, worker w taking
// [total * w / N, total * (w + 1) / N); the pool's barrier ends the dispatch.
#include <stdlib.h>
#include <string.h>

#include "base/address_space.h"
#include "base/allocator.h"
#include "base/checked_math.h"
#include "base/clock.h"
#include "exec/backend.h"
#include "exec/thread_pool.h"

namespace fb = kiln::fb;

// One dispatch, ready to run.
typedef struct kiln_bound_dispatch_t {
  kiln_kernel_dispatch_state_t state;  // what the kernel sees (counts, bindings, constants)
  kiln_kernel_fn_t kernel;             // entry point
  uint32_t kernel_index;               // index into Bundle.kernels (for messages)
  int defines_symbols;                 // nonzero: the source of a data symbol (read after it runs)
  uint64_t data_needs;                 // data symbols its counts, push constants or Dynamic bindings use
} kiln_bound_dispatch_t;

// The bytes of one Dynamic slot (schema/bundle.fbs: a tensor sized per run,
// and its aliases), grown when a run needs more and kept for the next.
typedef struct kiln_cpu_slot_t {
  uint8_t* data;      // zeroed pages, page aligned; NULL until first sized
  size_t capacity;    // bytes in `data`
  uint32_t tensor;    // a tensor of the slot (for messages)
  uint64_t need;      // scratch of kiln_cpu_session_size_slots: the most its sized tensors need now (or it keeps)
  int known;          // scratch: nonzero when a tensor of the slot has a known size now
} kiln_cpu_slot_t;

// The CPU backend's session state.
typedef struct kiln_cpu_session_t {
  const kiln_model_t* model;            // must outlive the session
  uint8_t* arena;                       // every Arena tensor; zeroed pages (page aligned)
  size_t arena_size;                    // bytes in `arena`
  kiln_cpu_slot_t* slots;               // the Dynamic slots (slot_count)
  uint32_t slot_count;                  // 1 + the largest Dynamic tensor's slot; 0 without any
  uint32_t* binding_slot;               // per entry of `bindings`: 1 + its Dynamic slot, 0 if none
  uint64_t dynamic_limit;               // the most bytes the slots may take (max_arena_bytes less the arena)
  uint64_t dynamic_bytes;               // bytes the slots take now
  kiln_bound_dispatch_t* dispatches;    // in execution order
  uint32_t dispatch_count;              // entries in `dispatches`
  void** bindings;                      // storage for all dispatches' binding pointers
  size_t binding_total;                 // entries in `bindings`
  uint32_t* push_values;                // storage for all dispatches' push constants (shape symbols' values)
  uint32_t thread_count;                // threads running each dispatch (1: flat loop, no pool)
  kiln_thread_pool_t* pool;             // workers 1..thread_count-1; NULL when thread_count == 1
  int profiling;                        // nonzero: runs time every dispatch
  int profile_valid;                    // nonzero: the last run was made with profiling on
  uint64_t* dispatch_nanoseconds;       // dispatch_count entries: times of the last profiled run
} kiln_cpu_session_t;

// One dispatch being run by the pool: the task's context, on the stack of
// the thread calling kiln_session_run.
typedef struct kiln_parallel_dispatch_t {
  const kiln_bound_dispatch_t* dispatch;  // what to run
  uint64_t workgroup_total;               // x * y * z (< 2^32: verified, or checked by update_shapes)
  uint32_t worker_count;                  // ranges the workgroups are split into
  uint32_t failed;                        // 0; set to 1 (atomically) by the first failure
  int32_t failed_result;                  // the failing kernel's return value
  uint32_t failed_workgroup[3];           // the failing workgroup's id
  uint32_t failed_worker;                 // the worker that ran it
} kiln_parallel_dispatch_t;

static kiln_cpu_session_t* kiln_cpu_session(kiln_backend_state_t* state) {
  return (kiln_cpu_session_t*)state;
}

static const kiln_cpu_session_t* kiln_cpu_session(const kiln_backend_state_t* state) {
  return (const kiln_cpu_session_t*)state;
}

// The symbols expression `e` uses (none for -1), as bits.
static uint64_t kiln_cpu_expr_symbols(const fb::Bundle* bundle, int32_t e) {
  uint64_t bits = 0;
  const auto* code = e >= 0 ? bundle->shape_exprs()->Get((uint32_t)e)->code() : NULL;  // (verified: in range)
  for (uint32_t i = 0; code && i < code->size(); ++i)
    if (code->Get(i)->op() == fb::ShapeOp::Symbol) bits |= 1ull << code->Get(i)->operand();
  return bits;
}

// The bundle's data symbols (a kernel's count), as bits.
static uint64_t kiln_cpu_data_symbols(const fb::Bundle* bundle) {
  uint64_t bits = 0;
  for (uint32_t s = 0; bundle->symbols() && s < bundle->symbols()->size(); ++s)
    if (bundle->symbols()->Get(s)->source_dispatch() >= 0) bits |= 1ull << s;
  return bits;
}

static kiln_status_t kiln_cpu_session_bind(kiln_cpu_session_t* session) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  size_t total_bindings = 0, total_push = 0;  // bounded by the bundle size, so no overflow
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    total_bindings += dispatch->bindings() ? dispatch->bindings()->size() : 0;
    total_push += dispatch->push_constant_symbols() ? dispatch->push_constant_symbols()->size() : 0;
  }
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &session->dispatches));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(total_bindings, &session->bindings));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(total_bindings, &session->binding_slot));
  session->binding_total = total_bindings;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(total_push, &session->push_values));
  session->dispatch_count = count;
  // Dynamic slots (verified: each below the tensor count).
  for (uint32_t t = 0; t < session->model->tensor_count; ++t) {
    const fb::Tensor* tensor = bundle->tensors()->Get(t);
    if (tensor->storage() == fb::Storage::Dynamic && tensor->offset() + 1 > session->slot_count)
      session->slot_count = (uint32_t)tensor->offset() + 1;
  }
  KILN_RETURN_IF_ERROR(kiln_calloc_array(session->slot_count, &session->slots));
  for (uint32_t t = 0; t < session->model->tensor_count; ++t) {
    const fb::Tensor* tensor = bundle->tensors()->Get(t);
    if (tensor->storage() == fb::Storage::Dynamic) session->slots[tensor->offset()].tensor = t;
  }
  void** cursor = session->bindings;
  uint32_t* push = session->push_values;
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    kiln_bound_dispatch_t* bound = &session->dispatches[i];
    bound->kernel_index = dispatch->kernel();
    bound->kernel = session->model->kernels[dispatch->kernel()];
    uint32_t bound_count = kiln_model_bind_dispatch(session->model, i, session->arena, cursor, &bound->state);
    for (uint32_t b = 0; b < bound_count; ++b) {  // Dynamic tensors: bound once allocated (kiln_cpu_session_size_slots)
      const fb::Tensor* tensor = bundle->tensors()->Get(dispatch->bindings()->Get(b)->tensor());
      if (tensor->storage() != fb::Storage::Dynamic) continue;
      session->binding_slot[cursor - session->bindings + b] = (uint32_t)tensor->offset() + 1;
      for (uint32_t d = 0; d < tensor->dynamic_dims()->size(); ++d)  // (verified: present)
        bound->data_needs |= kiln_cpu_expr_symbols(bundle, tensor->dynamic_dims()->Get(d));
    }
    for (uint32_t a = 0; dispatch->workgroup_count_exprs() && a < 3; ++a)
      bound->data_needs |= kiln_cpu_expr_symbols(bundle, dispatch->workgroup_count_exprs()->Get(a));
    for (uint32_t k = 0; dispatch->push_constant_symbols() && k < dispatch->push_constant_symbols()->size(); ++k)
      bound->data_needs |= 1ull << dispatch->push_constant_symbols()->Get(k);  // (verified: < 64 symbols)
    bound->data_needs &= kiln_cpu_data_symbols(bundle);
    cursor += bound_count;
    for (uint32_t s = 0; bundle->symbols() && s < bundle->symbols()->size(); ++s)
      bound->defines_symbols |= bundle->symbols()->Get(s)->source_dispatch() == (int32_t)i;
    if (const auto* symbols = dispatch->push_constant_symbols()) {  // filled by update_shapes
      bound->state.push_constant_count = symbols->size();
      bound->state.push_constants = push;
      push += symbols->size();
    }
  }
  return NULL;
}

// The error for slots that need `bytes` in all, more than dynamic_limit
// allows; `s` is the slot asking (or the largest).
static kiln_status_t kiln_cpu_session_slots_too_big(const kiln_cpu_session_t* session, uint32_t s, uint64_t bytes) {
  const fb::Tensor* tensor = session->model->view.bundle->tensors()->Get(session->slots[s].tensor);
  return kiln_make_status(KILN_OUT_OF_MEMORY,
                          "session: the tensors sized per run need %llu bytes at these sizes (tensor '%.64s' the "
                          "largest or the one growing), and with the arena (%zu bytes) that is more than the limit "
                          "(kiln_session_options_t.max_arena_bytes)",
                          (unsigned long long)bytes, tensor->name() ? tensor->name()->c_str() : "", session->arena_size);
}

// Gives slot `s` exactly `bytes` (at least 1) of new zeroed pages, keeping
// the first bytes of its old ones (an input already written), and points
// every binding of the slot at them. The caller checked dynamic_limit.
static kiln_status_t kiln_cpu_session_resize_slot(kiln_cpu_session_t* session, uint32_t s, uint64_t bytes) {
  kiln_cpu_slot_t* slot = &session->slots[s];
  size_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_size_from_u64(bytes ? bytes : 1, "a tensor's bytes", &size));
  void* data = NULL;
  KILN_RETURN_IF_ERROR(kiln_pages_alloc(size, &data));
  if (slot->data) {
    memcpy(data, slot->data, slot->capacity < size ? slot->capacity : size);
    kiln_pages_free(slot->data, slot->capacity);
  }
  session->dynamic_bytes = session->dynamic_bytes - slot->capacity + size;
  slot->data = (uint8_t*)data;
  slot->capacity = size;
  for (size_t b = 0; b < session->binding_total; ++b)
    if (session->binding_slot[b] == s + 1) session->bindings[b] = slot->data;
  return NULL;
}

// Slot `s` with room for `bytes`: grown when it has less (a run-time size
// grew; kept for later runs), within dynamic_limit.
static kiln_status_t kiln_cpu_session_grow_slot(kiln_cpu_session_t* session, uint32_t s, uint64_t bytes) {
  kiln_cpu_slot_t* slot = &session->slots[s];
  if (bytes <= slot->capacity && slot->data) return NULL;
  const uint64_t others = session->dynamic_bytes - slot->capacity;
  if (bytes > session->dynamic_limit || others > session->dynamic_limit - bytes) {
    uint64_t total = 0;
    return kiln_cpu_session_slots_too_big(session, s, kiln_add_u64(others, bytes, &total) ? total : UINT64_MAX);
  }
  return kiln_cpu_session_resize_slot(session, s, bytes);
}

// Sizes every Dynamic slot whose dimensions are known now (exec/backend.h).
// What they need together is checked first, so a size beyond the limit
// changes nothing; slots kept larger by an earlier run give back their extra
// bytes when the rest would not fit otherwise.
static kiln_status_t kiln_cpu_session_size_slots(kiln_cpu_session_t* session, const kiln_session_shapes_t* shapes) {
  for (uint32_t s = 0; s < session->slot_count; ++s) {
    session->slots[s].need = 0;
    session->slots[s].known = 0;
  }
  const fb::Bundle* bundle = session->model->view.bundle;
  for (uint32_t t = 0; t < session->model->tensor_count; ++t) {  // each slot at the largest of its tensors
    const fb::Tensor* tensor = bundle->tensors()->Get(t);
    if (tensor->storage() != fb::Storage::Dynamic) continue;
    kiln_cpu_slot_t* slot = &session->slots[tensor->offset()];
    uint64_t bytes = 0;
    int known = 0;
    // A tensor waiting for a data symbol is not sized yet (nothing that
    // binds it runs before: kiln_cpu_session_run); an alias of it sized
    // later grows the slot, keeping its bytes.
    KILN_RETURN_IF_ERROR(kiln_session_shapes_tensor_bytes(shapes, t, &bytes, &known));
    slot->known |= known;
    if (known && bytes > slot->need) slot->need = bytes;
  }
  uint64_t exact = 0, kept = 0;  // bytes in all: each slot at its need; each at the larger of need and capacity
  uint32_t largest = 0;
  for (uint32_t s = 0; s < session->slot_count; ++s) {
    kiln_cpu_slot_t* slot = &session->slots[s];
    slot->need = slot->known ? (slot->need ? slot->need : 1) : slot->capacity;
    if (slot->need > session->slots[largest].need) largest = s;
    const uint64_t larger = slot->need > slot->capacity ? slot->need : slot->capacity;
    if (!kiln_add_u64(exact, slot->need, &exact)) exact = UINT64_MAX;
    if (!kiln_add_u64(kept, larger, &kept)) kept = UINT64_MAX;
  }
  if (exact > session->dynamic_limit) return kiln_cpu_session_slots_too_big(session, largest, exact);
  for (uint32_t s = 0; kept > session->dynamic_limit && s < session->slot_count; ++s) {
    kiln_cpu_slot_t* slot = &session->slots[s];
    if (slot->known && slot->capacity > slot->need) KILN_RETURN_IF_ERROR(kiln_cpu_session_resize_slot(session, s, slot->need));
  }
  for (uint32_t s = 0; s < session->slot_count; ++s)
    if (session->slots[s].known) KILN_RETURN_IF_ERROR(kiln_cpu_session_grow_slot(session, s, session->slots[s].need));
  return NULL;
}

// Where tensor `io` of the model's inputs or outputs is now.
static uint8_t* kiln_cpu_session_io_data(const kiln_cpu_session_t* session, const kiln_tensor_info_t* io) {
  if (io->storage == KILN_STORAGE_DYNAMIC) return session->slots[io->offset].data;
  return session->arena + io->offset;
}

// New shape values (exec/backend.h): each dispatch's run-time workgroup
// counts, at most the bundle's (the largest), their product within the load
// limit (kiln_model_load_options_t.max_workgroups, and 2^32 - 1: checked at
// load where the counts are bounded, here for bundles with tensors sized per
// run), and its symbols as push constants; the Dynamic slots' bytes.
static kiln_status_t kiln_cpu_session_update_shapes(kiln_backend_state_t* state, const kiln_session_shapes_t* shapes) {
  kiln_cpu_session_t* session = kiln_cpu_session(state);
  const fb::Bundle* bundle = session->model->view.bundle;
  const int64_t* symbols = shapes->symbols;
  const int64_t* values = shapes->values;
  KILN_RETURN_IF_ERROR(kiln_cpu_session_size_slots(session, shapes));
  for (uint32_t i = 0; i < session->dispatch_count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    kiln_bound_dispatch_t* bound = &session->dispatches[i];
    const auto* exprs = dispatch->workgroup_count_exprs();
    // Counts waiting for a data symbol are set once that is defined (the
    // dispatch runs after its source).
    bool waits = false;
    for (uint32_t a = 0; exprs && a < 3; ++a)
      waits |= exprs->Get(a) >= 0 && (shapes->expr_symbols[exprs->Get(a)] & shapes->pending);
    if (exprs && !waits) {
      uint64_t total = 1;
      for (uint32_t a = 0; a < 3; ++a) {
        int32_t e = exprs->Get(a);
        uint32_t most = dispatch->workgroup_count()->Get(a);
        int64_t n = e >= 0 ? values[e] : (int64_t)most;
        if (n < 0 || n > (int64_t)most) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "shapes: dispatch %u would run %lld workgroups along axis %u, more than its "
                                  "largest count %u",
                                  i, (long long)n, a, most);
        }
        // The largest counts may multiply past 2^32 where a dimension has no
        // bound (Dynamic tensors): each run's must not.
        total *= (uint64_t)n;  // (each < 2^32: no overflow before the check)
        const uint64_t limit = session->model->max_workgroups < 0xFFFFFFFFull ? session->model->max_workgroups
                                                                               : 0xFFFFFFFFull;
        if (total > limit) {
          return kiln_make_status(KILN_OUT_OF_MEMORY,
                                  "shapes: dispatch %u would run more than %llu workgroups at these sizes (2^32 - 1, "
                                  "or kiln_model_load_options_t.max_workgroups)",
                                  i, (unsigned long long)limit);
        }
        bound->state.workgroup_count[a] = (uint32_t)n;
      }
    }
    if (const auto* syms = dispatch->push_constant_symbols()) {
      uint32_t* push = (uint32_t*)bound->state.push_constants;  // this session's storage (bind above)
      for (uint32_t k = 0; k < syms->size(); ++k) push[k] = (uint32_t)symbols[syms->Get(k)];  // <= 2^31, verified
    }
  }
  return NULL;
}

// Starts the worker threads for thread_count > 1.
static kiln_status_t kiln_cpu_session_start_threads(kiln_cpu_session_t* session,
                                                    const kiln_session_options_t* options) {
  if (session->thread_count <= 1) return NULL;
  kiln_thread_pool_options_t pool_options;
  memset(&pool_options, 0, sizeof(pool_options));
  pool_options.thread_count = session->thread_count;
  pool_options.thread_init = options->thread_init;
  pool_options.thread_init_user_data = options->thread_init_user_data;
  return kiln_thread_pool_create(&pool_options, &session->pool);
}

static void kiln_cpu_session_free(kiln_backend_state_t* state) {
  kiln_cpu_session_t* session = kiln_cpu_session(state);
  if (!session) return;
  kiln_thread_pool_free(session->pool);  // joins the worker threads
  kiln_pages_free(session->arena, session->arena_size);
  for (uint32_t s = 0; session->slots && s < session->slot_count; ++s)
    kiln_pages_free(session->slots[s].data, session->slots[s].capacity);
  free(session->slots);
  free(session->binding_slot);
  free(session->dispatch_nanoseconds);
  free(session->dispatches);
  free(session->bindings);
  free(session->push_values);
  free(session);
}

static kiln_status_t kiln_cpu_session_create(const kiln_model_t* model,
                                             const kiln_session_options_t* options,
                                             kiln_session_load_stats_t* stats,
                                             kiln_backend_state_t** out_state) {
  kiln_cpu_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session));
  session->model = model;
  session->thread_count = options->thread_count > 1 ? options->thread_count : 1;
  session->arena_size = (size_t)model->view.arena_bytes;  // verified to fit (kiln_size_from_u64)
  const uint64_t max_arena = options->max_arena_bytes ? options->max_arena_bytes : KILN_DEFAULT_MAX_ARENA_BYTES;
  session->dynamic_limit = max_arena - session->arena_size;  // (session.cpp checked the arena against it)
  void* arena = NULL;
  uint64_t stage = kiln_now_nanoseconds();
  kiln_status_t status = kiln_pages_alloc(session->arena_size, &arena);
  stats->buffer_create_ns = kiln_nanoseconds_since(stage);
  session->arena = (uint8_t*)arena;
  stage = kiln_now_nanoseconds();
  if (!status) status = kiln_cpu_session_bind(session);
  stats->record_ns = kiln_nanoseconds_since(stage);
  if (!status) status = kiln_calloc_array(session->dispatch_count, &session->dispatch_nanoseconds);
  if (status) {
    kiln_cpu_session_free((kiln_backend_state_t*)session);
    return kiln_status_annotate(status, "session: creating (arena of %zu bytes)",
                                (size_t)model->view.arena_bytes);
  }
  stage = kiln_now_nanoseconds();
  status = kiln_cpu_session_start_threads(session, options);
  if (session->thread_count > 1) stats->thread_start_ns = kiln_nanoseconds_since(stage);
  if (status) {
    kiln_cpu_session_free((kiln_backend_state_t*)session);
    return kiln_status_annotate(status, "session: starting %u threads", options->thread_count);
  }
  *out_state = (kiln_backend_state_t*)session;
  return NULL;
}

static kiln_status_t kiln_cpu_session_write_input(kiln_backend_state_t* state,
                                                  const kiln_tensor_info_t* io, const void* data,
                                                  size_t size) {
  kiln_cpu_session_t* session = kiln_cpu_session(state);
  // A Dynamic input: its slot with room for the input's current shape (the run keeps it).
  if (io->storage == KILN_STORAGE_DYNAMIC) KILN_RETURN_IF_ERROR(kiln_cpu_session_grow_slot(session, (uint32_t)io->offset, size));
  if (size) memcpy(kiln_cpu_session_io_data(session, io), data, size);
  return NULL;
}

// Output `io`'s bytes now, `bytes` of them: a Dynamic output's slot must
// hold that many (a run sized it at these shapes).
static kiln_status_t kiln_cpu_session_output_data(const kiln_cpu_session_t* session, const kiln_tensor_info_t* io,
                                                  size_t bytes, const uint8_t** out_data) {
  const uint8_t* data = kiln_cpu_session_io_data(session, io);
  if (io->storage == KILN_STORAGE_DYNAMIC && bytes && (!data || session->slots[io->offset].capacity < bytes)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output '%.64s' has no value at these shapes yet (run first)",
                            io->name);
  }
  *out_data = data;
  return NULL;
}

static kiln_status_t kiln_cpu_session_read_output(kiln_backend_state_t* state,
                                                  const kiln_tensor_info_t* io, void* data) {
  const uint8_t* from = NULL;
  KILN_RETURN_IF_ERROR(kiln_status_annotate(
      kiln_cpu_session_output_data(kiln_cpu_session(state), io, io->byte_size, &from), "get_output"));
  if (io->byte_size) memcpy(data, from, io->byte_size);
  return NULL;
}

static kiln_status_t kiln_cpu_session_get_output_view(kiln_backend_state_t* state, size_t index, size_t byte_size,
                                                      const void** out_data) {
  const kiln_cpu_session_t* session = kiln_cpu_session(state);
  const uint8_t* data = NULL;
  KILN_RETURN_IF_ERROR(kiln_cpu_session_output_data(session, &session->model->outputs[index], byte_size, &data));
  *out_data = data;
  return NULL;
}

//===----------------------------------------------------------------------===//
// The executor
//===----------------------------------------------------------------------===//

// The status for a kernel that returned `result` at workgroup `id` on `worker`.
static kiln_status_t kiln_cpu_session_kernel_error(const kiln_cpu_session_t* session,
                                                   uint32_t dispatch_index, int32_t result,
                                                   const uint32_t id[3], uint32_t worker) {
  const kiln_bound_dispatch_t* dispatch = &session->dispatches[dispatch_index];
  const fb::Kernel* kernel = session->model->view.bundle->kernels()->Get(dispatch->kernel_index);
  return kiln_make_status(KILN_INTERNAL,
                          "run: dispatch %u (kernel '%.64s') failed with code %d "
                          "at workgroup (%u, %u, %u) on worker %u",
                          dispatch_index, kernel->name()->c_str(), result, id[0], id[1], id[2],
                          worker);
}

// One dispatch on the calling thread: workgroups serially in (z, y, x) order.
static kiln_status_t kiln_cpu_session_run_serial(const kiln_cpu_session_t* session,
                                                 uint32_t dispatch_index) {
  const kiln_bound_dispatch_t* dispatch = &session->dispatches[dispatch_index];
  uint32_t id[3];
  int32_t result = kiln_kernel_run_serial(dispatch->kernel, &dispatch->state, id);
  return result ? kiln_cpu_session_kernel_error(session, dispatch_index, result, id, 0) : NULL;
}

// The pool task: worker `worker_index` runs its contiguous range of
// workgroups. Stops early once any worker has failed.
static void kiln_parallel_dispatch_task(void* context, uint32_t worker_index) {
  kiln_parallel_dispatch_t* parallel = (kiln_parallel_dispatch_t*)context;
  const kiln_bound_dispatch_t* dispatch = parallel->dispatch;
  uint64_t total = parallel->workgroup_total;
  uint64_t begin = total * worker_index / parallel->worker_count;
  uint64_t end = total * (worker_index + 1) / parallel->worker_count;
  if (begin >= end) return;
  const uint32_t* count = dispatch->state.workgroup_count;
  kiln_kernel_workgroup_state_t workgroup;
  workgroup.worker_index = worker_index;
  workgroup.workgroup_id[0] = (uint32_t)(begin % count[0]);
  workgroup.workgroup_id[1] = (uint32_t)(begin / count[0] % count[1]);
  workgroup.workgroup_id[2] = (uint32_t)(begin / count[0] / count[1]);
  for (uint64_t i = begin; i < end; ++i) {
    if (__atomic_load_n(&parallel->failed, __ATOMIC_RELAXED)) return;
    int32_t result = dispatch->kernel(&dispatch->state, &workgroup);
    if (result != 0) {
      uint32_t expected = 0;
      if (__atomic_compare_exchange_n(&parallel->failed, &expected, 1, false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        // Read by the caller after the pool's barrier (release/acquire).
        parallel->failed_result = result;
        memcpy(parallel->failed_workgroup, workgroup.workgroup_id, sizeof(workgroup.workgroup_id));
        parallel->failed_worker = worker_index;
      }
      return;
    }
    if (++workgroup.workgroup_id[0] == count[0]) {
      workgroup.workgroup_id[0] = 0;
      if (++workgroup.workgroup_id[1] == count[1]) {
        workgroup.workgroup_id[1] = 0;
        ++workgroup.workgroup_id[2];
      }
    }
  }
}

// One dispatch on all the session's threads. A single workgroup runs on the
// calling thread without waking the pool.
static kiln_status_t kiln_cpu_session_run_parallel(kiln_cpu_session_t* session,
                                                   uint32_t dispatch_index) {
  const kiln_bound_dispatch_t* dispatch = &session->dispatches[dispatch_index];
  const uint32_t* count = dispatch->state.workgroup_count;
  uint64_t total = (uint64_t)count[0] * count[1] * count[2];
  if (total <= 1) return kiln_cpu_session_run_serial(session, dispatch_index);
  kiln_parallel_dispatch_t parallel;
  memset(&parallel, 0, sizeof(parallel));
  parallel.dispatch = dispatch;
  parallel.workgroup_total = total;
  parallel.worker_count = session->thread_count;
  kiln_thread_pool_run(session->pool, kiln_parallel_dispatch_task, &parallel);
  if (!parallel.failed) return NULL;
  return kiln_cpu_session_kernel_error(session, dispatch_index, parallel.failed_result,
                                       parallel.failed_workgroup, parallel.failed_worker);
}

// After dispatch `index`, a data symbol's source: each symbol it defines,
// then the dispatches' new counts and push constants. A source that ran no
// workgroups (a run-time If's branch not taken) wrote nothing: its symbols
// stay pending, and nothing that runs reads them.
static kiln_status_t kiln_cpu_session_define_symbols(kiln_cpu_session_t* session, uint32_t index,
                                                     kiln_session_shapes_t* shapes) {
  const uint32_t* count = session->dispatches[index].state.workgroup_count;
  if ((uint64_t)count[0] * count[1] * count[2] == 0) return NULL;
  const fb::Bundle* bundle = session->model->view.bundle;
  for (uint32_t s = 0; s < bundle->symbols()->size(); ++s) {
    const fb::Symbol* symbol = bundle->symbols()->Get(s);
    if (symbol->source_dispatch() != (int32_t)index) continue;
    // Verified: an Arena int64 tensor of at least 8 bytes, inside the arena.
    int64_t value = 0;
    memcpy(&value, session->arena + bundle->tensors()->Get(symbol->source_tensor())->offset(), sizeof(value));
    kiln_status_t status = kiln_session_shapes_define(shapes, s, value);
    if (status) return kiln_status_annotate(status, "run: after dispatch %u", index);
  }
  return kiln_cpu_session_update_shapes((kiln_backend_state_t*)session, shapes);
}

// The executor: dispatches in order; see the top of the file.
static kiln_status_t kiln_cpu_session_run(kiln_backend_state_t* state, kiln_session_shapes_t* shapes) {
  kiln_cpu_session_t* session = kiln_cpu_session(state);
  const int profiling = session->profiling;
  session->profile_valid = profiling;
  if (profiling) {
    memset(session->dispatch_nanoseconds, 0,
           session->dispatch_count * sizeof(*session->dispatch_nanoseconds));
  }
  for (uint32_t i = 0; i < session->dispatch_count; ++i) {
    // A dispatch whose sizes wait for a data symbol its source never defined
    // (a run-time If's branch not taken) does not run: its counts and slots
    // are not this run's.
    if (shapes && (session->dispatches[i].data_needs & shapes->pending)) continue;
    uint64_t start = profiling ? kiln_now_nanoseconds() : 0;
    kiln_status_t status = session->pool ? kiln_cpu_session_run_parallel(session, i)
                                         : kiln_cpu_session_run_serial(session, i);
    if (profiling) {
      uint64_t elapsed = kiln_now_nanoseconds() - start;
      session->dispatch_nanoseconds[i] = elapsed ? elapsed : 1;  // 0 means "not reached"
    }
    if (status) return status;
    if (session->dispatches[i].defines_symbols) {
      KILN_RETURN_IF_ERROR(kiln_cpu_session_define_symbols(session, i, shapes));
    }
  }
  return NULL;
}

static kiln_status_t kiln_cpu_session_set_profiling(kiln_backend_state_t* state, int enabled) {
  kiln_cpu_session(state)->profiling = enabled != 0;
  return NULL;
}

static const uint64_t* kiln_cpu_session_dispatch_profile(const kiln_backend_state_t* state) {
  const kiln_cpu_session_t* session = kiln_cpu_session(state);
  return session->profile_valid ? session->dispatch_nanoseconds : NULL;
}

static const char* kiln_cpu_session_device_name(const kiln_backend_state_t*) { return "cpu"; }

const kiln_backend_t kiln_cpu_backend = {
    kiln_cpu_session_create,
    kiln_cpu_session_free,
    kiln_cpu_session_write_input,
    kiln_cpu_session_read_output,
    kiln_cpu_session_get_output_view,
    kiln_cpu_session_run,
    kiln_cpu_session_set_profiling,
    kiln_cpu_session_dispatch_profile,
    kiln_cpu_session_device_name,
    NULL,  // get_pipeline_cache: none on the CPU
    kiln_cpu_session_update_shapes,
};
