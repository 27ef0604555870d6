#include "tir/ir_printer.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "tir/ir_visitor.h"

namespace kiln::tir {
namespace {

class Printer : public IRVisitor {
 public:
  std::ostringstream out;

  void print(const Expr& e) { visit_expr(e); }
  void print(const Stmt& s) { visit_stmt(s); }

 protected:
  int indent_ = 0;
  std::map<const ExprNode*, std::string> var_names_;
  std::map<std::string, int> name_uses_;

  void line() { out << std::string(indent_ * 2, ' '); }
  // Var names need not be unique; disambiguate by identity when printing.
  std::string name_of(const Var* v) {
    auto it = var_names_.find(v);
    if (it != var_names_.end()) return it->second;
    int n = name_uses_[v->name]++;
    std::string s = n == 0 ? v->name : v->name + "." + std::to_string(n);
    var_names_[v] = s;
    return s;
  }

  void visit(const IntImm* op) override {
    if (op->type.is_bool()) {
      out << (op->value ? "true" : "false");
    } else {
      out << op->value;
      if (op->type != Index()) out << "_" << op->type.str();
    }
  }
  void visit(const FloatImm* op) override {
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", op->value);
    out << buf << "f";
  }
  void visit(const Var* op) override { out << name_of(op); }
  void visit(const Cast* op) override {
    out << op->type.str() << "(";
    print(op->value);
    out << ")";
  }
  void binary(const Expr& a, const char* sym, const Expr& b) {
    out << "(";
    print(a);
    out << " " << sym << " ";
    print(b);
    out << ")";
  }
  void visit(const Add* op) override { binary(op->a, "+", op->b); }
  void visit(const Sub* op) override { binary(op->a, "-", op->b); }
  void visit(const Mul* op) override { binary(op->a, "*", op->b); }
  void visit(const Div* op) override { binary(op->a, "/", op->b); }
  void visit(const Mod* op) override { binary(op->a, "%", op->b); }
  void visit(const EQ* op) override { binary(op->a, "==", op->b); }
  void visit(const NE* op) override { binary(op->a, "!=", op->b); }
  void visit(const LT* op) override { binary(op->a, "<", op->b); }
  void visit(const LE* op) override { binary(op->a, "<=", op->b); }
  void visit(const And* op) override { binary(op->a, "&&", op->b); }
  void visit(const Or* op) override { binary(op->a, "||", op->b); }
  void visit(const BitAnd* op) override { binary(op->a, "&", op->b); }
  void visit(const BitOr* op) override { binary(op->a, "|", op->b); }
  void visit(const BitXor* op) override { binary(op->a, "^", op->b); }
  void call(const char* name, const std::vector<Expr>& args) {
    out << name << "(";
    for (size_t i = 0; i < args.size(); i++) {
      if (i) out << ", ";
      print(args[i]);
    }
    out << ")";
  }
  void visit(const Min* op) override { call("min", {op->a, op->b}); }
  void visit(const Max* op) override { call("max", {op->a, op->b}); }
  void visit(const Not* op) override {
    out << "!";
    print(op->a);
  }
  void visit(const BitNot* op) override {
    out << "~";
    print(op->a);
  }
  void visit(const Select* op) override { call("select", {op->cond, op->true_value, op->false_value}); }
  void visit(const Load* op) override {
    out << op->buffer->name << "[";
    print(op->index);
    out << "]";
  }
  void visit(const Call* op) override { call(intrinsic_name(op->op), op->args); }
  void visit(const Let* op) override {
    out << "(let " << name_of(op->var.as<Var>()) << " = ";
    print(op->value);
    out << " in ";
    print(op->body);
    out << ")";
  }

  void visit(const ProducerLoad* op) override {
    out << op->producer->name << "(";
    for (size_t i = 0; i < op->indices.size(); i++) {
      if (i) out << ", ";
      print(op->indices[i]);
    }
    out << ")";
  }
  void visit(const LetStmt* op) override {
    line();
    out << "let " << name_of(op->var.as<Var>()) << " = ";
    print(op->value);
    out << "\n";
    print(op->body);
  }
  void visit(const For* op) override {
    line();
    out << for_kind_name(op->kind) << " (" << name_of(op->var.as<Var>()) << ", ";
    print(op->min);
    out << ", ";
    print(op->extent);
    out << ") {\n";
    indent_++;
    print(op->body);
    indent_--;
    line();
    out << "}\n";
  }
  void visit(const Store* op) override {
    line();
    out << op->buffer->name << "[";
    print(op->index);
    out << "] = ";
    print(op->value);
    out << "\n";
  }
  void visit(const Prefetch* op) override {
    line();
    out << "prefetch " << op->buffer->name << "[";
    print(op->index);
    out << "]\n";
  }
  void visit(const IfThenElse* op) override {
    line();
    out << "if (";
    print(op->cond);
    out << ") {\n";
    indent_++;
    print(op->then_case);
    indent_--;
    if (op->else_case.defined()) {
      line();
      out << "} else {\n";
      indent_++;
      print(op->else_case);
      indent_--;
    }
    line();
    out << "}\n";
  }
  void visit(const Block* op) override {
    for (auto& s : op->stmts) print(s);
  }
  void visit(const Allocate* op) override {
    line();
    out << (op->scope == MemScope::Shared ? "allocate shared " : "allocate ") << op->buffer->name << "["
        << op->buffer->dtype.str() << " * " << op->buffer->size << "]\n";
    print(op->body);
  }
  void visit(const Barrier*) override {
    line();
    out << "barrier\n";
  }
};

}  // namespace

std::string to_string(const Expr& e) {
  Printer p;
  p.print(e);
  return p.out.str();
}
std::string to_string(const Stmt& s) {
  Printer p;
  p.print(s);
  return p.out.str();
}

}  // namespace kiln::tir
