// A session's run-time dimensions (docs/dynamic-shapes.md): the current
// shape of every model input and output, the values of the shape symbols
// and of every shape expression of the bundle (schema/bundle.fbs), for
// bundles compiled with dimension ranges. Everything is allocated when the
// session is created; changing shapes and running allocate nothing.
//
// An input starts at its largest shape (its kiln_tensor_info_t.shape); a
// Dynamic one (sized per run, schema/bundle.fbs) at its least.
// kiln_session_set_input_shape checks a new shape against the input's
// ranges at once; resolving (before the next run, or when an output's
// shape is asked for) takes each symbol from its input dimension, checks
// that inputs sharing a symbol agree and that the bundle's constraints
// hold, evaluates every expression, checks that no tensor would outgrow
// the room the memory plan gave it, and hands the values to the backend
// (workgroup counts, kernels' push constants).
#ifndef KILN_EXEC_SESSION_SHAPES_H_
#define KILN_EXEC_SESSION_SHAPES_H_

#include <stddef.h>
#include <stdint.h>

#include "exec/model.h"

typedef struct kiln_session_shapes_t {
  const kiln_model_t* model;  // the session's model
  uint32_t symbol_count;      // Bundle.symbols
  uint32_t expr_count;        // Bundle.shape_exprs
  int64_t* symbols;           // symbol_count current values
  int64_t* values;            // expr_count current values of the shape expressions
  int64_t* dims;              // every input's then every output's current dimensions
  int64_t** input_shapes;     // per input: its dimensions, inside `dims`
  size_t* input_bytes;        // per input: its current byte size (a string input: its largest table)
  int64_t** output_shapes;    // per output: its dimensions, inside `dims`
  size_t* output_bytes;       // per output: its current byte size (a string output: its largest table)
  int dirty;                  // input shapes changed since the last successful resolve
  uint64_t* expr_symbols;     // per expression: bit s set when it uses symbol s (at most 64 symbols)
  uint64_t data_symbols;      // bit s set for each data symbol (a kernel's count, schema/bundle.fbs Symbol)
  uint64_t pending;           // bit s set for each data symbol the current run has not defined yet
} kiln_session_shapes_t;

// Sets up `shapes` for `model`: every input at its largest shape (a
// Dynamic one at its least; for a
// bundle without symbols, the static shapes, never dirty).
kiln_status_t kiln_session_shapes_create(const kiln_model_t* model, kiln_session_shapes_t* shapes);
void kiln_session_shapes_free(kiln_session_shapes_t* shapes);

// Sets input `index`'s shape (`rank` dimensions): static dimensions must
// equal the bundle's, run-time ones lie within their range.
kiln_status_t kiln_session_shapes_set_input(kiln_session_shapes_t* shapes, size_t index, const int64_t* dims,
                                            uint32_t rank);

// The element count of `rank` dimensions, each within a tensor's verified
// largest shape (so the product does not overflow; not for a Dynamic
// tensor, whose largest shape has no such bound).
uint64_t kiln_shape_elements(const int64_t* dims, uint32_t rank);

// Evaluates `expr` with the current symbols: KILN_INVALID_ARGUMENT when the
// arithmetic overflows or divides by zero.
kiln_status_t kiln_shape_expr_eval(const kiln::fb::ShapeExpr* expr, const int64_t* symbols, int64_t* out_value);

// Resolves the current input shapes (see above); a no-op when not dirty.
// Data symbols stand at their maximum, and constraints that use them wait
// for kiln_session_shapes_define.
kiln_status_t kiln_session_shapes_resolve(kiln_session_shapes_t* shapes);

// Tensor `tensor`'s current bytes (*out_known 0 while a dimension waits
// for a pending data symbol): for Dynamic tensors (schema/bundle.fbs),
// whose size only the run gives; overflow-checked (KILN_OUT_OF_MEMORY past
// 2^62 bytes).
kiln_status_t kiln_session_shapes_tensor_bytes(const kiln_session_shapes_t* shapes, uint32_t tensor,
                                               uint64_t* out_bytes, int* out_known);

// Data symbols (bundles of minor 6): a run begins with every data symbol
// pending; the backend calls kiln_session_shapes_define right after each
// one's source dispatch with the value it wrote. Defining checks the range,
// re-evaluates every expression, checks the constraints whose data symbols
// are all defined now and the tensors' room, and recomputes the outputs'
// shapes. Neither allocates.
void kiln_session_shapes_begin_run(kiln_session_shapes_t* shapes);
kiln_status_t kiln_session_shapes_define(kiln_session_shapes_t* shapes, uint32_t symbol, int64_t value);

#endif  // KILN_EXEC_SESSION_SHAPES_H_
