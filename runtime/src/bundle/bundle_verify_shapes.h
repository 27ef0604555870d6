// Verification of a bundle's run-time dimensions (format minor 5,
// docs/dynamic-shapes.md): the shape symbols, the shape expressions (a
// stack machine's code, simulated here so evaluation never under- or
// overflows its stack), the tensors' dynamic dimensions, the dispatches'
// run-time workgroup counts and push constant symbols, and the constraints.
// Runs after the tensors and dispatches are verified (bundle_verify.cpp).
#ifndef KILN_BUNDLE_BUNDLE_VERIFY_SHAPES_H_
#define KILN_BUNDLE_BUNDLE_VERIFY_SHAPES_H_

#include "base/status.h"
#include "bundle/bundle_verify.h"

// Limits of the format's run-time dimensions.
#define KILN_BUNDLE_MAX_SYMBOLS 64           // shape symbols in a bundle (push constants of a kernel at most)
#define KILN_BUNDLE_MAX_SHAPE_EXPRS (1u << 20)
#define KILN_BUNDLE_MAX_SHAPE_STEPS 256      // steps of one shape expression
#define KILN_BUNDLE_MAX_SHAPE_STACK 32       // values on its stack at once
#define KILN_BUNDLE_MAX_SYMBOL_VALUE (1ll << 31)

// Sets view->dynamic when the bundle has shape symbols.
kiln_status_t kiln_bundle_verify_shapes(const kiln::fb::Bundle* bundle, kiln_bundle_view_t* view);

#endif  // KILN_BUNDLE_BUNDLE_VERIFY_SHAPES_H_
