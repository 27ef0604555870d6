// Run-time dimensions of a bundle; see bundle_verify_shapes.h. Checks run
// in order: symbols need expressions, so expressions come first, then the
// symbols, tensors, dispatches and constraints that refer to them.
#include "bundle/bundle_verify_shapes.h"

#include "kiln_bundle_version.h"

namespace fb = kiln::fb;

#define KILN_NAME_FMT "%.64s"

static const char* kiln_shape_name(const flatbuffers::String* name) {
  return name ? name->c_str() : "<unnamed>";
}

// One expression: steps in range, operands valid, the stack never empty
// where a step pops, at most KILN_BUNDLE_MAX_SHAPE_STACK deep, one value at the end.
static kiln_status_t kiln_verify_shape_expr(const fb::ShapeExpr* expr, uint32_t index, uint32_t symbol_count) {
  const auto* code = expr->code();
  uint32_t steps = code ? code->size() : 0;
  if (steps == 0 || steps > KILN_BUNDLE_MAX_SHAPE_STEPS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: shape expression %u has %u steps (1 to %d)", index, steps,
                            KILN_BUNDLE_MAX_SHAPE_STEPS);
  }
  uint32_t depth = 0;
  for (uint32_t i = 0; i < steps; ++i) {
    const fb::ShapeInstr* step = code->Get(i);
    uint32_t pops = 0, pushes = 1;
    switch (step->op()) {
      case fb::ShapeOp::Const: break;
      case fb::ShapeOp::Symbol:
        if (step->operand() < 0 || (uint64_t)step->operand() >= symbol_count) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: shape expression %u, step %u: symbol %lld out of range (%u symbols)", index,
                                  i, (long long)step->operand(), symbol_count);
        }
        break;
      case fb::ShapeOp::Not: pops = 1; break;
      case fb::ShapeOp::Select: pops = 3; break;
      case fb::ShapeOp::Add: case fb::ShapeOp::Sub: case fb::ShapeOp::Mul: case fb::ShapeOp::Div:
      case fb::ShapeOp::Mod: case fb::ShapeOp::Min: case fb::ShapeOp::Max: case fb::ShapeOp::Lt:
      case fb::ShapeOp::Le: case fb::ShapeOp::Eq: case fb::ShapeOp::Ne: case fb::ShapeOp::And:
      case fb::ShapeOp::Or: pops = 2; break;
      default:
        return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: shape expression %u, step %u: unknown operation %u",
                                index, i, (unsigned)step->op());
    }
    if (depth < pops) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: shape expression %u, step %u: pops an empty stack", index,
                              i);
    }
    depth = depth - pops + pushes;
    if (depth > KILN_BUNDLE_MAX_SHAPE_STACK) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: shape expression %u needs a stack deeper than %d", index,
                              KILN_BUNDLE_MAX_SHAPE_STACK);
    }
  }
  if (depth != 1) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: shape expression %u leaves %u values (must leave 1)", index,
                            depth);
  }
  return NULL;
}

// Whether shape expression `expr` is exactly symbol `symbol`.
static bool kiln_shape_expr_is_symbol(const fb::ShapeExpr* expr, uint32_t symbol) {
  const auto* code = expr->code();
  return code && code->size() == 1 && code->Get(0)->op() == fb::ShapeOp::Symbol &&
         code->Get(0)->operand() == (int64_t)symbol;
}

// A data symbol (schema/bundle.fbs, Symbol): its source dispatch exists and
// writes its source tensor, an Arena int64 tensor with at least one element.
// Whether every data symbol `expr` uses is defined before dispatch `dispatch`
// runs (its source is an earlier dispatch); symbols are verified.
static bool kiln_shape_expr_known_at(const fb::Bundle* bundle, const fb::ShapeExpr* expr, int64_t dispatch) {
  const auto* code = expr->code();
  for (uint32_t i = 0; i < code->size(); ++i) {
    const fb::ShapeInstr* step = code->Get(i);
    if (step->op() != fb::ShapeOp::Symbol) continue;
    if (bundle->symbols()->Get((uint32_t)step->operand())->source_dispatch() >= dispatch) return false;
  }
  return true;
}

static kiln_status_t kiln_verify_data_symbol(const fb::Bundle* bundle, const fb::Symbol* symbol, uint32_t s) {
  const char* name = kiln_shape_name(symbol->name());
  uint32_t dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  if ((uint32_t)symbol->source_dispatch() >= dispatch_count || symbol->source_tensor() >= tensor_count) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: symbol %u ('" KILN_NAME_FMT "'): source dispatch %d or tensor %u out of range",
                            s, name, symbol->source_dispatch(), symbol->source_tensor());
  }
  const fb::Tensor* tensor = bundle->tensors()->Get(symbol->source_tensor());
  bool written = false;
  const auto* bindings = bundle->dispatches()->Get((uint32_t)symbol->source_dispatch())->bindings();
  for (uint32_t b = 0; bindings && b < bindings->size(); ++b) {
    const fb::Binding* binding = bindings->Get(b);
    written = written || (binding->tensor() == symbol->source_tensor() && binding->access() != fb::Access::Read);
  }
  if (!written || tensor->storage() != fb::Storage::Arena || tensor->dtype() != fb::DType::Int64 ||
      tensor->byte_size() < sizeof(int64_t) || tensor->dynamic_dims()) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: symbol %u ('" KILN_NAME_FMT "'): its source tensor %u must be a static Arena "
                            "int64 tensor its source dispatch %d writes",
                            s, name, symbol->source_tensor(), symbol->source_dispatch());
  }
  if (bundle->min_runtime_minor() < 6) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: data symbols need min_runtime_minor >= 6");
  }
  return NULL;
}

static kiln_status_t kiln_verify_symbols(const fb::Bundle* bundle, uint32_t symbol_count, uint32_t expr_count) {
  uint32_t input_count = bundle->inputs() ? bundle->inputs()->size() : 0;
  for (uint32_t s = 0; s < symbol_count; ++s) {
    const fb::Symbol* symbol = bundle->symbols()->Get(s);
    const char* name = kiln_shape_name(symbol->name());
    if (!symbol->name()) return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: symbol %u has no name", s);
    const bool data = symbol->source_dispatch() >= 0;
    if (symbol->min() < (data ? 0 : 1) || symbol->max() < symbol->min() ||
        symbol->max() > KILN_BUNDLE_MAX_SYMBOL_VALUE) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: symbol %u ('" KILN_NAME_FMT "'): range %lld..%lld (need 1 <= min <= max <= 2^31; "
                              "0 <= min for a data symbol)",
                              s, name, (long long)symbol->min(), (long long)symbol->max());
    }
    if (data) {
      KILN_RETURN_IF_ERROR(kiln_verify_data_symbol(bundle, symbol, s));
      continue;
    }
    if (symbol->source_dispatch() != -1) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: symbol %u ('" KILN_NAME_FMT "'): source dispatch %d",
                              s, name, symbol->source_dispatch());
    }
    if (symbol->input() >= input_count) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: symbol %u ('" KILN_NAME_FMT "'): input %u out of range "
                              "(%u inputs)", s, name, symbol->input(), input_count);
    }
    const fb::Tensor* tensor = bundle->tensors()->Get(bundle->inputs()->Get(symbol->input()));  // verified index
    const auto* dims = tensor->dynamic_dims();
    uint32_t rank = tensor->shape() ? tensor->shape()->size() : 0;
    int32_t e = dims && symbol->dim() < rank ? dims->Get(symbol->dim()) : -1;
    // The input's range at that dimension is the symbol's: set_input_shape
    // checks the input's, and the kernels assume the symbol's (they divide
    // by run-time extents without zero checks).
    const auto* least = tensor->min_shape();
    if (e < 0 || (uint32_t)e >= expr_count || !kiln_shape_expr_is_symbol(bundle->shape_exprs()->Get((uint32_t)e), s) ||
        kiln_bundle_dim(tensor->shape(), symbol->dim()) != symbol->max() || !least ||
        symbol->dim() >= least->size() || kiln_bundle_dim(least, symbol->dim()) != symbol->min()) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: symbol %u ('" KILN_NAME_FMT "'): dimension %u of input %u is not this symbol "
                              "with its range (min_shape and shape)",
                              s, name, symbol->dim(), symbol->input());
    }
  }
  return NULL;
}

static kiln_status_t kiln_verify_dynamic_tensors(const fb::Bundle* bundle, uint32_t expr_count, bool* any) {
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  for (uint32_t t = 0; t < tensor_count; ++t) {
    const fb::Tensor* tensor = bundle->tensors()->Get(t);
    const auto* dims = tensor->dynamic_dims();
    const auto* min_shape = tensor->min_shape();
    if (!dims && !min_shape) continue;
    const char* name = kiln_shape_name(tensor->name());
    uint32_t rank = tensor->shape() ? tensor->shape()->size() : 0;
    if (!dims || dims->size() != rank || tensor->storage() == fb::Storage::Constant ||
        (min_shape && min_shape->size() != rank)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): dynamic_dims and min_shape need one entry per "
                              "dimension, on an Arena or Dynamic tensor",
                              t, name);
    }
    *any = true;
    for (uint32_t d = 0; d < rank; ++d) {
      int32_t e = dims->Get(d);
      int64_t least = min_shape ? kiln_bundle_dim(min_shape, d) : 0;
      if (e < -1 || (e >= 0 && (uint32_t)e >= expr_count) || least < 0 || least > kiln_bundle_dim(tensor->shape(), d)) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: tensor %u ('" KILN_NAME_FMT "'): dimension %u: expression %d or least value "
                                "%lld out of range",
                                t, name, d, e, (long long)least);
      }
    }
  }
  return NULL;
}

static kiln_status_t kiln_verify_dynamic_dispatches(const fb::Bundle* bundle, uint32_t symbol_count,
                                                    uint32_t expr_count, bool* any) {
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    if (const auto* counts = dispatch->workgroup_count_exprs()) {
      *any = true;
      if (counts->size() != 3) {
        return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: dispatch %u: workgroup_count_exprs needs 3 entries", i);
      }
      for (uint32_t a = 0; a < 3; ++a) {
        int32_t e = counts->Get(a);
        if (e < -1 || (e >= 0 && (uint32_t)e >= expr_count)) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: dispatch %u: workgroup_count_exprs[%u] = %d out of range (%u expressions)",
                                  i, a, e, expr_count);
        }
        if (e >= 0 && !kiln_shape_expr_known_at(bundle, bundle->shape_exprs()->Get((uint32_t)e), (int64_t)i)) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: dispatch %u: workgroup_count_exprs[%u] uses a data symbol defined only "
                                  "by this dispatch or a later one",
                                  i, a);
        }
      }
    }
    // A tensor sized per run that the dispatch binds has its size before the
    // dispatch runs (its data symbols' sources ran earlier).
    for (uint32_t b = 0; dispatch->bindings() && b < dispatch->bindings()->size(); ++b) {
      const fb::Tensor* tensor = bundle->tensors()->Get(dispatch->bindings()->Get(b)->tensor());  // (verified)
      const auto* dims = tensor->storage() == fb::Storage::Dynamic ? tensor->dynamic_dims() : nullptr;
      for (uint32_t d = 0; dims && d < dims->size(); ++d) {
        const int32_t e = dims->Get(d);
        if (e >= 0 && (uint32_t)e < expr_count &&
            !kiln_shape_expr_known_at(bundle, bundle->shape_exprs()->Get((uint32_t)e), (int64_t)i)) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: dispatch %u: binding %u ('" KILN_NAME_FMT "', sized per run) uses a data "
                                  "symbol defined only by this dispatch or a later one",
                                  i, b, kiln_shape_name(tensor->name()));
        }
      }
    }
    if (const auto* symbols = dispatch->push_constant_symbols()) {
      *any = *any || symbols->size() > 0;
      if (symbols->size() > KILN_BUNDLE_MAX_PUSH_CONSTANTS ||
          (dispatch->push_constants() && dispatch->push_constants()->size() > 0)) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: dispatch %u: %u push constant symbols (at most %d, and no push constants "
                                "beside them)",
                                i, symbols->size(), KILN_BUNDLE_MAX_PUSH_CONSTANTS);
      }
      for (uint32_t k = 0; k < symbols->size(); ++k) {
        if (symbols->Get(k) >= symbol_count) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: dispatch %u: push constant symbol %u out of range (%u symbols)", i,
                                  symbols->Get(k), symbol_count);
        }
        if (bundle->symbols()->Get(symbols->Get(k))->source_dispatch() >= (int64_t)i) {
          return kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: dispatch %u: push constant symbol %u is a data symbol defined only by "
                                  "this dispatch or a later one",
                                  i, symbols->Get(k));
        }
      }
    }
  }
  return NULL;
}

kiln_status_t kiln_bundle_verify_shapes(const fb::Bundle* bundle, kiln_bundle_view_t* view) {
  uint32_t symbol_count = bundle->symbols() ? bundle->symbols()->size() : 0;
  uint32_t expr_count = bundle->shape_exprs() ? bundle->shape_exprs()->size() : 0;
  uint32_t constraint_count = bundle->shape_constraints() ? bundle->shape_constraints()->size() : 0;
  if (symbol_count > KILN_BUNDLE_MAX_SYMBOLS || expr_count > KILN_BUNDLE_MAX_SHAPE_EXPRS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: %u shape symbols and %u shape expressions (at most %d and %u)",
                            symbol_count, expr_count, KILN_BUNDLE_MAX_SYMBOLS, KILN_BUNDLE_MAX_SHAPE_EXPRS);
  }
  for (uint32_t e = 0; e < expr_count; ++e) {
    KILN_RETURN_IF_ERROR(kiln_verify_shape_expr(bundle->shape_exprs()->Get(e), e, symbol_count));
  }
  KILN_RETURN_IF_ERROR(kiln_verify_symbols(bundle, symbol_count, expr_count));
  bool any = expr_count > 0 || constraint_count > 0;
  KILN_RETURN_IF_ERROR(kiln_verify_dynamic_tensors(bundle, expr_count, &any));
  // A model input's dimensions come from the caller, before any dispatch runs.
  for (uint32_t i = 0; bundle->inputs() && i < bundle->inputs()->size(); ++i) {
    const auto* dims = bundle->tensors()->Get(bundle->inputs()->Get(i))->dynamic_dims();  // verified indices
    for (uint32_t d = 0; dims && d < dims->size(); ++d) {
      if (dims->Get(d) >= 0 && !kiln_shape_expr_known_at(bundle, bundle->shape_exprs()->Get((uint32_t)dims->Get(d)), 0)) {
        return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: input %u: dimension %u uses a data symbol", i, d);
      }
    }
  }
  KILN_RETURN_IF_ERROR(kiln_verify_dynamic_dispatches(bundle, symbol_count, expr_count, &any));
  for (uint32_t c = 0; c < constraint_count; ++c) {
    const fb::ShapeConstraint* constraint = bundle->shape_constraints()->Get(c);
    if (constraint->expr() >= expr_count || !constraint->message()) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: shape constraint %u: expression %u out of range (%u), or no message", c,
                              constraint->expr(), expr_count);
    }
  }
  if (any && symbol_count == 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: run-time dimensions without shape symbols");
  }
  if (symbol_count > 0 && bundle->min_runtime_minor() < 5) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: shape symbols need min_runtime_minor >= 5 (older runtimes would ignore them)");
  }
  view->dynamic = symbol_count > 0;
  return NULL;
}
