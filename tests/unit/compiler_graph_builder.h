// A small graph builder for compiler unit tests (graph passes, int8).
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::test {

using namespace kiln::graph;

// A small graph builder.
struct Builder {
  Graph g;
  int input(const std::string& name, Shape shape, DType dt = DType::F32) {
    Value v;
    v.name = name;
    v.dtype = dt;
    v.shape = std::move(shape);
    int i = g.add_value(std::move(v));
    g.inputs.push_back(i);
    return i;
  }
  int constant(const std::string& name, Shape shape, const std::vector<float>& x) {
    std::vector<uint8_t> b(x.size() * 4);
    if (!b.empty()) memcpy(b.data(), x.data(), b.size());  // an empty vector's data() may be null
    return g.add_constant(name, DType::F32, std::move(shape), std::move(b));
  }
  // A constant of any dtype from its values (converted; integers exact).
  int constant_of(const std::string& name, DType dt, Shape shape, const std::vector<double>& x) {
    std::vector<uint8_t> b(x.size() * dtype_size(dt));
    for (size_t i = 0; i < x.size(); i++) {
      if (dt == DType::F32) { float f = (float)x[i]; memcpy(b.data() + 4 * i, &f, 4); }
      else if (dt == DType::I32) { int32_t v = (int32_t)x[i]; memcpy(b.data() + 4 * i, &v, 4); }
      else if (dt == DType::I64) { int64_t v = (int64_t)x[i]; memcpy(b.data() + 8 * i, &v, 8); }
      else b[i] = dt == DType::I8 ? (uint8_t)(int8_t)x[i] : (uint8_t)x[i];
    }
    return g.add_constant(name, dt, std::move(shape), std::move(b));
  }
  int constant_i64(const std::string& name, const std::vector<int64_t>& x) {
    std::vector<uint8_t> b(x.size() * 8);
    if (!b.empty()) memcpy(b.data(), x.data(), b.size());
    return g.add_constant(name, DType::I64, {(int64_t)x.size()}, std::move(b));
  }
  // Adds node `op` with one output of `shape`; returns the output value.
  int node(const std::string& op, std::vector<int> ins, Shape shape, std::map<std::string, Attr> attrs = {},
           DType dt = DType::F32) {
    Value v;
    v.name = g.unique_name(op + "_out");
    v.dtype = dt;
    v.shape = std::move(shape);
    v.producer = (int)g.nodes.size();
    int o = g.add_value(std::move(v));
    Node n;
    n.op = op;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.inputs = std::move(ins);
    n.outputs = {o};
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return o;
  }
  void output(int v) { g.outputs.push_back(v); }
};

inline Attr ints(std::vector<int64_t> v) {
  Attr a;
  a.kind = Attr::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
inline Attr integer(int64_t v) {
  Attr a;
  a.kind = Attr::Kind::Int;
  a.i = v;
  return a;
}
inline Attr real(double v) {
  Attr a;
  a.kind = Attr::Kind::Float;
  a.f = v;
  return a;
}
inline Attr tensor(int v) {
  Attr a;
  a.kind = Attr::Kind::Tensor;
  a.tensor = v;
  return a;
}

}  // namespace kiln::test
