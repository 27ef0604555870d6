#include "lower/op_lowering.h"
namespace kiln::lower {
void register_quant_ops(std::map<std::string, OpLowering>&) {}
}
