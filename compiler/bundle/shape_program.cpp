#include "bundle/shape_program.h"

#include "bundle_generated.h"
#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/simplify.h"

namespace kiln {
namespace {

constexpr size_t kMaxSteps = 256;  // the runtime's limits (exec/shape_program.h)
constexpr int kMaxStack = 32;

uint8_t op(fb::ShapeOp o) { return static_cast<uint8_t>(o); }

// Postfix code for e; `depth` tracks the stack the runtime will need.
void encode(const tir::Expr& e, std::vector<ShapeStep>& out, int depth, int* most) {
  using tir::NodeType;
  *most = std::max(*most, depth + 1);
  auto binary = [&](const tir::Expr& a, const tir::Expr& b, fb::ShapeOp o) {
    encode(a, out, depth, most);
    encode(b, out, depth + 1, most);
    out.push_back({op(o), 0});
  };
  switch (e->node_type) {
    case NodeType::IntImm: out.push_back({op(fb::ShapeOp::Const), e.as<tir::IntImm>()->value}); return;
    case NodeType::Var: {
      auto* v = e.as<tir::Var>();
      internal_assert(v->symbol >= 0) << "shape expression " << tir::to_string(e) << " uses loop variable " << v->name;
      out.push_back({op(fb::ShapeOp::Symbol), v->symbol});
      return;
    }
    case NodeType::Cast: {  // integer <-> bool widths: the value is the same
      auto* c = e.as<tir::Cast>();
      internal_assert(!c->type.is_float() && !c->value.type().is_float()) << "float in shape expression " << tir::to_string(e);
      encode(c->value, out, depth, most);
      return;
    }
    case NodeType::Add: return binary(e.as<tir::Add>()->a, e.as<tir::Add>()->b, fb::ShapeOp::Add);
    case NodeType::Sub: return binary(e.as<tir::Sub>()->a, e.as<tir::Sub>()->b, fb::ShapeOp::Sub);
    case NodeType::Mul: return binary(e.as<tir::Mul>()->a, e.as<tir::Mul>()->b, fb::ShapeOp::Mul);
    case NodeType::Div: return binary(e.as<tir::Div>()->a, e.as<tir::Div>()->b, fb::ShapeOp::Div);
    case NodeType::Mod: return binary(e.as<tir::Mod>()->a, e.as<tir::Mod>()->b, fb::ShapeOp::Mod);
    case NodeType::Min: return binary(e.as<tir::Min>()->a, e.as<tir::Min>()->b, fb::ShapeOp::Min);
    case NodeType::Max: return binary(e.as<tir::Max>()->a, e.as<tir::Max>()->b, fb::ShapeOp::Max);
    case NodeType::LT: return binary(e.as<tir::LT>()->a, e.as<tir::LT>()->b, fb::ShapeOp::Lt);
    case NodeType::LE: return binary(e.as<tir::LE>()->a, e.as<tir::LE>()->b, fb::ShapeOp::Le);
    case NodeType::EQ: return binary(e.as<tir::EQ>()->a, e.as<tir::EQ>()->b, fb::ShapeOp::Eq);
    case NodeType::NE: return binary(e.as<tir::NE>()->a, e.as<tir::NE>()->b, fb::ShapeOp::Ne);
    case NodeType::And: return binary(e.as<tir::And>()->a, e.as<tir::And>()->b, fb::ShapeOp::And);
    case NodeType::Or: return binary(e.as<tir::Or>()->a, e.as<tir::Or>()->b, fb::ShapeOp::Or);
    case NodeType::Not:
      encode(e.as<tir::Not>()->a, out, depth, most);
      out.push_back({op(fb::ShapeOp::Not), 0});
      return;
    case NodeType::Select: {
      auto* s = e.as<tir::Select>();
      encode(s->cond, out, depth, most);
      encode(s->true_value, out, depth + 1, most);
      encode(s->false_value, out, depth + 2, most);
      out.push_back({op(fb::ShapeOp::Select), 0});
      return;
    }
    default: internal_error << "shape expression " << tir::to_string(e) << " has a " << tir::node_type_name(e->node_type);
  }
}

}  // namespace

uint32_t ShapeProgram::add(const tir::Expr& e) {
  tir::Expr s = tir::simplify(e);
  std::string key = tir::to_string(s);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  std::vector<ShapeStep> code;
  int most = 0;
  encode(s, code, 0, &most);
  internal_assert(code.size() <= kMaxSteps && most <= kMaxStack)
      << "shape expression " << key << " needs " << code.size() << " steps and a stack of " << most
      << " (the runtime allows " << kMaxSteps << " and " << kMaxStack << ")";
  uint32_t index = (uint32_t)exprs_.size();
  exprs_.push_back(std::move(code));
  index_[key] = index;
  return index;
}

}  // namespace kiln
