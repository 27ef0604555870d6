// A session's run-time dimensions; see session_shapes.h.
#include "exec/session_shapes.h"

#include <stdlib.h>
#include <string.h>

#include "base/address_space.h"
#include "base/allocator.h"
#include "base/checked_math.h"
#include "base/dtype.h"
#include "bundle/bundle_verify_shapes.h"

namespace fb = kiln::fb;

#define KILN_NAME_FMT "%.64s"

static const fb::Tensor* kiln_shapes_tensor(const kiln_model_t* model, uint32_t index) {
  return model->view.bundle->tensors()->Get(index);
}

// The bytes of `rank` dimensions `dims` of `dtype`, when the product and the
// bytes do not overflow and are at most 2^62 (a tensor sized per run has no
// compile-time bound to rely on).
static bool kiln_shapes_checked_bytes(uint32_t dtype, const int64_t* dims, uint32_t rank, uint64_t string_bytes,
                                      uint64_t* out_bytes) {
  uint64_t elements = 1;
  bool ok = true;
  for (uint32_t d = 0; ok && d < rank; ++d) ok = dims[d] >= 0 && kiln_mul_u64(elements, (uint64_t)dims[d], &elements);
  return ok && kiln_dtype_tensor_bytes(dtype, elements, string_bytes, out_bytes) && *out_bytes <= ((uint64_t)1 << 62);
}

kiln_status_t kiln_session_shapes_create(const kiln_model_t* model, kiln_session_shapes_t* shapes) {
  memset(shapes, 0, sizeof(*shapes));
  shapes->model = model;
  const fb::Bundle* bundle = model->view.bundle;
  shapes->symbol_count = bundle->symbols() ? bundle->symbols()->size() : 0;
  shapes->expr_count = bundle->shape_exprs() ? bundle->shape_exprs()->size() : 0;
  size_t dims = 0;  // bounded by the bundle's size
  for (size_t i = 0; i < model->input_count; ++i) dims += model->inputs[i].rank;
  for (size_t i = 0; i < model->output_count; ++i) dims += model->outputs[i].rank;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(shapes->symbol_count, &shapes->symbols));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(shapes->expr_count, &shapes->values));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(dims, &shapes->dims));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->input_count, &shapes->input_shapes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->input_count, &shapes->input_bytes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->output_count, &shapes->output_shapes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->output_count, &shapes->output_bytes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(shapes->expr_count, &shapes->expr_symbols));
  for (uint32_t s = 0; s < shapes->symbol_count; ++s)  // at most KILN_BUNDLE_MAX_SYMBOLS (64), verified
    if (bundle->symbols()->Get(s)->source_dispatch() >= 0) shapes->data_symbols |= 1ull << s;
  for (uint32_t e = 0; e < shapes->expr_count; ++e) {
    const auto* code = bundle->shape_exprs()->Get(e)->code();
    for (uint32_t i = 0; i < code->size(); ++i)
      if (code->Get(i)->op() == fb::ShapeOp::Symbol) shapes->expr_symbols[e] |= 1ull << code->Get(i)->operand();
  }
  int64_t* cursor = shapes->dims;
  for (size_t i = 0; i < model->input_count; ++i) {
    const kiln_tensor_info_t* input = &model->inputs[i];
    shapes->input_shapes[i] = cursor;
    // A Dynamic input (no bound: its largest is 2^31 a dimension) starts at its least.
    const int64_t* start = input->storage == KILN_STORAGE_DYNAMIC && input->min_shape ? input->min_shape : input->shape;
    if (input->rank) memcpy(cursor, start, input->rank * sizeof(int64_t));
    cursor += input->rank;
    shapes->input_bytes[i] = input->byte_size;
    if (input->storage == KILN_STORAGE_DYNAMIC) {
      uint64_t bytes = 0;
      if (!kiln_shapes_checked_bytes((uint32_t)input->dtype, start, input->rank, input->string_bytes, &bytes)) {
        return kiln_make_status(KILN_OUT_OF_MEMORY, "shapes: input '" KILN_NAME_FMT "' would need more than 2^62 "
                                "bytes at its least shape", input->name);
      }
      KILN_RETURN_IF_ERROR(kiln_size_from_u64(bytes, "an input's bytes", &shapes->input_bytes[i]));
    }
  }
  for (size_t i = 0; i < model->output_count; ++i) {
    shapes->output_shapes[i] = cursor;
    if (model->outputs[i].rank) memcpy(cursor, model->outputs[i].shape, model->outputs[i].rank * sizeof(int64_t));
    cursor += model->outputs[i].rank;
    shapes->output_bytes[i] = model->outputs[i].byte_size;
  }
  shapes->dirty = shapes->symbol_count > 0;
  return NULL;
}

void kiln_session_shapes_free(kiln_session_shapes_t* shapes) {
  free(shapes->symbols);
  free(shapes->values);
  free(shapes->dims);
  free(shapes->input_shapes);
  free(shapes->input_bytes);
  free(shapes->output_shapes);
  free(shapes->output_bytes);
  free(shapes->expr_symbols);
  memset(shapes, 0, sizeof(*shapes));
}

kiln_status_t kiln_session_shapes_set_input(kiln_session_shapes_t* shapes, size_t index, const int64_t* dims,
                                            uint32_t rank) {
  const kiln_tensor_info_t* input = &shapes->model->inputs[index];
  if (rank != input->rank) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input_shape: input '" KILN_NAME_FMT "' has rank %u, not %u",
                            input->name, input->rank, rank);
  }
  for (uint32_t d = 0; d < rank; ++d) {
    int64_t least = input->min_shape ? input->min_shape[d] : input->shape[d];
    if (dims[d] < least || dims[d] > input->shape[d]) {
      if (least == input->shape[d]) {
        return kiln_make_status(KILN_INVALID_ARGUMENT,
                                "set_input_shape: input '" KILN_NAME_FMT "' dimension %u is %lld; this bundle takes "
                                "only %lld there",
                                input->name, d, (long long)dims[d], (long long)least);
      }
      return kiln_make_status(KILN_INVALID_ARGUMENT,
                              "set_input_shape: input '" KILN_NAME_FMT "' dimension %u is %lld, outside the range "
                              "%lld..%lld this bundle was compiled for (kilnc --input-shape)",
                              input->name, d, (long long)dims[d], (long long)least, (long long)input->shape[d]);
    }
  }
  uint64_t bytes = 0;  // at most the input's byte_size: no overflow (a Dynamic input: checked here)
  if (input->storage == KILN_STORAGE_DYNAMIC) {
    if (!kiln_shapes_checked_bytes((uint32_t)input->dtype, dims, rank, input->string_bytes, &bytes)) {
      return kiln_make_status(KILN_OUT_OF_MEMORY, "set_input_shape: input '" KILN_NAME_FMT "' would need more than "
                              "2^62 bytes at that shape", input->name);
    }
    KILN_RETURN_IF_ERROR(kiln_size_from_u64(bytes, "set_input_shape: the input's bytes", NULL));
  } else {
    kiln_dtype_tensor_bytes((uint32_t)input->dtype, kiln_shape_elements(dims, rank), input->string_bytes, &bytes);
  }
  if (rank == 0) return NULL;  // a scalar has no shape to change (and `dims` may be NULL)
  if (memcmp(shapes->input_shapes[index], dims, rank * sizeof(int64_t)) == 0) return NULL;  // unchanged
  memcpy(shapes->input_shapes[index], dims, rank * sizeof(int64_t));
  shapes->input_bytes[index] = (size_t)bytes;
  shapes->dirty = shapes->symbol_count > 0;
  return NULL;
}

uint64_t kiln_shape_elements(const int64_t* dims, uint32_t rank) {
  uint64_t elements = 1;
  for (uint32_t d = 0; d < rank; ++d) elements *= (uint64_t)dims[d];
  return elements;
}

kiln_status_t kiln_shape_expr_eval(const fb::ShapeExpr* expr, const int64_t* symbols, int64_t* out_value) {
  int64_t stack[KILN_BUNDLE_MAX_SHAPE_STACK];
  uint32_t top = 0;  // the verifier simulated the stack: never under- or overflows
  const auto* code = expr->code();
  for (uint32_t i = 0; i < code->size(); ++i) {
    const fb::ShapeInstr* step = code->Get(i);
    fb::ShapeOp op = step->op();
    if (op == fb::ShapeOp::Const) {
      stack[top++] = step->operand();
      continue;
    }
    if (op == fb::ShapeOp::Symbol) {
      stack[top++] = symbols[step->operand()];
      continue;
    }
    if (op == fb::ShapeOp::Not) {
      stack[top - 1] = !stack[top - 1];
      continue;
    }
    if (op == fb::ShapeOp::Select) {
      int64_t f = stack[--top], t = stack[--top];
      stack[top - 1] = stack[top - 1] ? t : f;
      continue;
    }
    int64_t b = stack[--top], a = stack[top - 1], r = 0;
    bool ok = true;
    switch (op) {
      case fb::ShapeOp::Add: ok = !__builtin_add_overflow(a, b, &r); break;
      case fb::ShapeOp::Sub: ok = !__builtin_sub_overflow(a, b, &r); break;
      case fb::ShapeOp::Mul: ok = !__builtin_mul_overflow(a, b, &r); break;
      case fb::ShapeOp::Div:
      case fb::ShapeOp::Mod: {  // floor semantics, as the compiler's index arithmetic
        ok = b != 0 && !(a == INT64_MIN && b == -1);
        if (!ok) break;
        int64_t q = a / b;
        if (q * b != a && ((a < 0) != (b < 0))) q--;
        r = op == fb::ShapeOp::Div ? q : a - q * b;
        break;
      }
      case fb::ShapeOp::Min: r = a < b ? a : b; break;
      case fb::ShapeOp::Max: r = a > b ? a : b; break;
      case fb::ShapeOp::Lt: r = a < b; break;
      case fb::ShapeOp::Le: r = a <= b; break;
      case fb::ShapeOp::Eq: r = a == b; break;
      case fb::ShapeOp::Ne: r = a != b; break;
      case fb::ShapeOp::And: r = a && b; break;
      case fb::ShapeOp::Or: r = a || b; break;
      default: ok = false; break;
    }
    if (!ok) {
      return kiln_make_status(KILN_INVALID_ARGUMENT,
                              "shape expression: step %u overflows or divides by zero (%lld, %lld)", i, (long long)a,
                              (long long)b);
    }
    stack[top - 1] = r;
  }
  *out_value = stack[0];
  return NULL;
}

// The current size of tensor `tensor`'s dimension d.
static int64_t kiln_shapes_dim(const kiln_session_shapes_t* shapes, const fb::Tensor* tensor, uint32_t d) {
  const auto* dyn = tensor->dynamic_dims();
  int32_t e = dyn ? dyn->Get(d) : -1;
  return e >= 0 ? shapes->values[e] : kiln_bundle_dim(tensor->shape(), d);
}

kiln_status_t kiln_session_shapes_tensor_bytes(const kiln_session_shapes_t* shapes, uint32_t t, uint64_t* out_bytes,
                                               int* out_known) {
  const fb::Tensor* tensor = kiln_shapes_tensor(shapes->model, t);
  const auto* dyn = tensor->dynamic_dims();
  uint32_t rank = tensor->shape() ? tensor->shape()->size() : 0;
  *out_known = 0;
  *out_bytes = 0;
  for (uint32_t d = 0; dyn && d < rank; ++d)
    if (dyn->Get(d) >= 0 && (shapes->expr_symbols[dyn->Get(d)] & shapes->pending)) return NULL;  // not yet
  uint64_t elements = 1;
  bool ok = true;
  for (uint32_t d = 0; ok && d < rank; ++d) {
    int64_t dim = kiln_shapes_dim(shapes, tensor, d);
    ok = dim >= 0 && kiln_mul_u64(elements, (uint64_t)dim, &elements);
  }
  ok = ok && kiln_dtype_tensor_bytes((uint32_t)tensor->dtype(), elements, tensor->string_bytes(), out_bytes) &&
       *out_bytes <= ((uint64_t)1 << 62);
  if (!ok) {
    return kiln_make_status(KILN_OUT_OF_MEMORY,
                            "shapes: tensor %u ('" KILN_NAME_FMT "') would need more than 2^62 bytes at these sizes", t,
                            tensor->name() ? tensor->name()->c_str() : "");
  }
  *out_known = 1;
  return NULL;
}

// Every Arena tensor with run-time dimensions fits the bytes the memory plan
// gave it (a Dynamic one is sized by the backend: exec/backend.h); each
// output's current shape.
static kiln_status_t kiln_shapes_check_tensors(kiln_session_shapes_t* shapes) {
  const kiln_model_t* model = shapes->model;
  for (uint32_t t = 0; t < model->tensor_count; ++t) {
    const fb::Tensor* tensor = kiln_shapes_tensor(model, t);
    if (!tensor->dynamic_dims() || tensor->storage() == fb::Storage::Dynamic) continue;
    uint64_t elements = 1, bytes = 0;
    bool ok = true;
    for (uint32_t d = 0; ok && d < tensor->dynamic_dims()->size(); ++d) {
      int64_t dim = kiln_shapes_dim(shapes, tensor, d);
      ok = dim >= 0 && kiln_mul_u64(elements, (uint64_t)dim, &elements);
    }
    ok = ok && kiln_dtype_tensor_bytes((uint32_t)tensor->dtype(), elements, tensor->string_bytes(), &bytes);
    if (!ok || bytes > tensor->byte_size()) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "shapes: tensor %u ('" KILN_NAME_FMT "') would need %llu bytes at these input shapes, "
                              "more than the %llu its memory plan reserves",
                              t, tensor->name() ? tensor->name()->c_str() : "", (unsigned long long)bytes,
                              (unsigned long long)tensor->byte_size());
    }
  }
  for (size_t o = 0; o < model->output_count; ++o) {
    const fb::Tensor* tensor = kiln_shapes_tensor(model, model->outputs[o].index);
    const kiln_tensor_info_t* output = &model->outputs[o];
    for (uint32_t d = 0; d < output->rank; ++d) shapes->output_shapes[o][d] = kiln_shapes_dim(shapes, tensor, d);
    uint64_t bytes = 0;  // an Arena output: checked above, it fits (a string output: its largest table)
    // A Dynamic one may be past any size (a pending data symbol at 2^31):
    // then no buffer matches it and the backend refuses a view.
    if (!kiln_shapes_checked_bytes((uint32_t)output->dtype, shapes->output_shapes[o], output->rank,
                                   output->string_bytes, &bytes) || bytes > SIZE_MAX)
      bytes = SIZE_MAX;
    shapes->output_bytes[o] = (size_t)bytes;
  }
  return NULL;
}

// Evaluates the expressions that use a symbol of `mask` (every one: ~0).
static kiln_status_t kiln_shapes_eval(kiln_session_shapes_t* shapes, uint64_t mask) {
  const fb::Bundle* bundle = shapes->model->view.bundle;
  for (uint32_t e = 0; e < shapes->expr_count; ++e) {
    if (mask != ~0ull && !(shapes->expr_symbols[e] & mask)) continue;
    kiln_status_t status = kiln_shape_expr_eval(bundle->shape_exprs()->Get(e), shapes->symbols, &shapes->values[e]);
    if (status && (shapes->expr_symbols[e] & shapes->pending)) {
      // At a pending data symbol's largest value (with no bound: 2^31) a
      // product may overflow. Nothing reads it before the symbol is defined
      // (the dispatches that use it wait: exec/cpu_backend.cpp), and then it
      // is evaluated again.
      kiln_status_free(status);
      shapes->values[e] = 0;
      continue;
    }
    if (status) return kiln_status_annotate(status, "shapes: expression %u", e);
  }
  return NULL;
}

// The bundle's constraints that use a symbol of `mask` (every one: ~0), but
// those that wait for a pending data symbol.
static kiln_status_t kiln_shapes_check_constraints(const kiln_session_shapes_t* shapes, uint64_t mask) {
  const fb::Bundle* bundle = shapes->model->view.bundle;
  uint32_t constraint_count = bundle->shape_constraints() ? bundle->shape_constraints()->size() : 0;
  for (uint32_t c = 0; c < constraint_count; ++c) {
    const fb::ShapeConstraint* constraint = bundle->shape_constraints()->Get(c);
    uint64_t uses = shapes->expr_symbols[constraint->expr()];
    if ((mask != ~0ull && !(uses & mask)) || (uses & shapes->pending) || shapes->values[constraint->expr()]) continue;
    return kiln_make_status(KILN_INVALID_ARGUMENT, "shapes: %s do not fit the model: %.200s",
                            uses & shapes->data_symbols ? "the sizes this run computed" : "these input shapes",
                            constraint->message()->c_str());
  }
  return NULL;
}

void kiln_session_shapes_begin_run(kiln_session_shapes_t* shapes) {
  shapes->pending = shapes->data_symbols;
  const fb::Bundle* bundle = shapes->model->view.bundle;
  for (uint32_t s = 0; shapes->data_symbols && s < shapes->symbol_count; ++s)  // until its source runs
    if (shapes->data_symbols & (1ull << s)) shapes->symbols[s] = bundle->symbols()->Get(s)->max();
}

kiln_status_t kiln_session_shapes_define(kiln_session_shapes_t* shapes, uint32_t symbol, int64_t value) {
  const fb::Symbol* sym = shapes->model->view.bundle->symbols()->Get(symbol);
  if (value < sym->min() || value > sym->max()) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "shapes: '" KILN_NAME_FMT "' came out as %lld, outside the range %lld..%lld this bundle "
                            "was compiled for",
                            sym->name()->c_str(), (long long)value, (long long)sym->min(), (long long)sym->max());
  }
  shapes->symbols[symbol] = value;
  shapes->pending &= ~(1ull << symbol);
  // Only what uses this symbol changes: its expressions and constraints.
  KILN_RETURN_IF_ERROR(kiln_shapes_eval(shapes, 1ull << symbol));
  KILN_RETURN_IF_ERROR(kiln_shapes_check_constraints(shapes, 1ull << symbol));
  return kiln_shapes_check_tensors(shapes);
}

kiln_status_t kiln_session_shapes_resolve(kiln_session_shapes_t* shapes) {
  if (!shapes->dirty) return NULL;
  const kiln_model_t* model = shapes->model;
  const fb::Bundle* bundle = model->view.bundle;
  for (uint32_t s = 0; s < shapes->symbol_count; ++s) {  // each from the input dimension it names
    const fb::Symbol* symbol = bundle->symbols()->Get(s);
    const bool data = symbol->source_dispatch() >= 0;  // known only once its dispatch ran: its largest until then
    shapes->symbols[s] = data ? symbol->max() : shapes->input_shapes[symbol->input()][symbol->dim()];
  }
  shapes->pending = shapes->data_symbols;
  KILN_RETURN_IF_ERROR(kiln_shapes_eval(shapes, ~0ull));
  // Inputs sharing a symbol must agree.
  for (size_t i = 0; i < model->input_count; ++i) {
    const fb::Tensor* tensor = kiln_shapes_tensor(model, model->inputs[i].index);
    for (uint32_t d = 0; tensor->dynamic_dims() && d < model->inputs[i].rank; ++d) {
      int64_t want = kiln_shapes_dim(shapes, tensor, d);
      if (want != shapes->input_shapes[i][d]) {
        return kiln_make_status(KILN_INVALID_ARGUMENT,
                                "shapes: input '" KILN_NAME_FMT "' dimension %u is %lld, but the inputs that share it "
                                "make it %lld",
                                model->inputs[i].name, d, (long long)shapes->input_shapes[i][d], (long long)want);
      }
    }
  }
  KILN_RETURN_IF_ERROR(kiln_shapes_check_constraints(shapes, ~0ull));
  KILN_RETURN_IF_ERROR(kiln_shapes_check_tensors(shapes));
  shapes->dirty = 0;
  return NULL;
}
