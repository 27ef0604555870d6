// String values' capacities (string_values.h).
#include "import/string_values.h"

#include <algorithm>
#include <string>

#include "support/diagnostics.h"

namespace kiln {
namespace {

using graph::DType;

// The operators that take or give strings, from the operator table.
std::string string_operators() {
  std::string names;
  for (const graph::OpTraits& t : graph::op_table())
    if (t.strings()) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

// The bytes area node n's string output `out` needs at most.
int64_t string_output_bytes(const graph::Graph& g, const graph::Node& n, int out) {
  const graph::Value& in = g.values[(size_t)n.inputs.at(0)];
  const graph::Value& o = g.values[(size_t)out];
  switch (n.traits().op) {
    case graph::Op::Cast:
    case graph::Op::CastLike:
      // A number's text, or the same strings.
      return in.dtype == DType::String ? in.string_bytes : o.elements() * graph::kNumberTextBytes;
    case graph::Op::StringConcat: {
      // Each string of either input as often as broadcasting repeats it:
      // output / input elements with static shapes, else at most every
      // output element.
      const int64_t kPast = int64_t(1) << 40;  // past any table (saturated: the caller refuses it)
      int64_t bytes = 0;
      for (int i : n.inputs) {
        const graph::Value& x = g.values[(size_t)i];
        user_assert(x.dtype == DType::String) << n.describe() << ": both inputs must be string tensors";
        const bool fixed = !x.is_dynamic() && !o.is_dynamic() && x.elements() > 0;
        const int64_t times = fixed ? o.elements() / x.elements() : o.elements();
        bytes += x.string_bytes && times > kPast / x.string_bytes ? kPast : x.string_bytes * times;
      }
      return bytes;
    }
    case graph::Op::MlLabelEncoder: {
      // One of its values or its default per element: at most the longest
      // string of its attributes ("_Unused", the default default_string, at least).
      const int64_t kPast = int64_t(1) << 40;  // past any table (saturated: the caller refuses it)
      int64_t longest = 7;
      for (const auto& [name, a] : n.attrs) {
        std::vector<std::string> texts = a.strings;
        if (a.kind == graph::Attr::Kind::String) texts.push_back(a.s);
        if (a.kind == graph::Attr::Kind::Tensor && g.values[(size_t)a.tensor].dtype == DType::String)
          texts = graph::table_strings(*g.values[(size_t)a.tensor].data, g.values[(size_t)a.tensor].elements());
        for (const std::string& t : texts) longest = std::max(longest, (int64_t)t.size());
      }
      return o.elements() > kPast / longest ? kPast : o.elements() * longest;
    }
    default:
      // Identity, the reshapes (the same table), StringNormalizer (it drops
      // strings and changes letters within their length) and StringSplit
      // (its pieces are parts of its input's strings, the padding empty).
      user_assert(in.dtype == DType::String) << n.describe() << ": input 0 must be a string tensor";
      return in.string_bytes;
  }
}

}  // namespace

void size_string_values(graph::Graph& g, int64_t bytes_per_element) {
  const int64_t kLimit = (1ll << 32) - 1;  // a table's offsets are u32
  for (int i : g.inputs) {
    graph::Value& v = g.values[(size_t)i];
    if (v.dtype != DType::String) continue;
    const int64_t n = v.elements();
    user_assert(n <= kLimit / bytes_per_element)
        << "string model input '" << v.name << "' would need " << n << " x " << bytes_per_element
        << " bytes; string tensors hold less than 4 GiB: lower --string-bytes";
    v.string_bytes = n * bytes_per_element;
  }
  for (const graph::Node& n : g.nodes) {
    bool strings = false;
    for (int v : n.inputs) strings |= v >= 0 && g.values[(size_t)v].dtype == DType::String;
    for (int v : n.outputs) strings |= v >= 0 && g.values[(size_t)v].dtype == DType::String;
    if (!strings) continue;
    user_assert(n.traits().strings())
        << n.describe() << ": kilnc supports string tensors in " << string_operators()
        << " only; compute this part of the model before or after it, outside the model";
    for (int v : n.outputs) {
      if (v < 0 || g.values[(size_t)v].dtype != DType::String) continue;
      const int64_t bytes = string_output_bytes(g, n, v);
      user_assert(bytes <= kLimit) << n.describe() << ": its string output would need " << bytes
                                   << " bytes; string tensors hold less than 4 GiB";
      g.values[(size_t)v].string_bytes = bytes;
    }
  }
}

}  // namespace kiln
