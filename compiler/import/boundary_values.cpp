#include "import/boundary_values.h"

#include <set>

#include "support/diagnostics.h"

namespace kiln {
namespace {

const std::string kKey = "kiln.composite:";  // + "in:" or "out:" + the name
const std::string kRangeKey = "kiln.range:";   // + the value's name; "LO HI NODE"

onnx::NodeProto construct(const std::string& output, const std::vector<std::string>& elements, int32_t dtype) {
  onnx::NodeProto c;
  c.set_op_type(elements.empty() ? "SequenceEmpty" : "SequenceConstruct");
  c.set_name(output + "/" + c.op_type());
  c.add_output(output);
  for (auto& e : elements) c.add_input(e);
  if (elements.empty()) {
    auto* a = c.add_attribute();
    a->set_name("dtype");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(dtype);
  }
  return c;
}

}  // namespace

std::string sequence_element_name(const std::string& sequence, size_t index) {
  return sequence + "[" + std::to_string(index) + "]";
}
std::string optional_presence_name(const std::string& optional) { return optional + ".present"; }
std::string optional_value_name(const std::string& optional) { return optional + ".value"; }

std::vector<std::string> CompositeRecord::element_names() const {
  std::vector<std::string> names;
  if (optional && !sequence) {
    if (!empty) names.push_back(optional_value_name(name));
    return names;
  }
  for (int64_t i = 0; i < count; i++) names.push_back(sequence_element_name(name, (size_t)i));
  return names;
}

void add_composite_record(onnx::ModelProto& model, const CompositeRecord& r) {
  auto* p = model.add_metadata_props();
  p->set_key(kKey + (r.output ? "out:" : "in:") + r.name);
  std::string kind = r.optional ? (r.empty ? "opt empty" : r.sequence ? "opt seq" : "opt tensor") : "seq";
  p->set_value(kind + (r.sequence ? " " + std::to_string(r.count) : std::string()));
}

void clear_composite_records(onnx::ModelProto& model) {
  auto* props = model.mutable_metadata_props();
  for (int i = props->size() - 1; i >= 0; i--)
    if (props->Get(i).key().rfind(kKey, 0) == 0 || props->Get(i).key().rfind(kRangeKey, 0) == 0)
      props->DeleteSubrange(i, 1);
}

void add_range_check(onnx::ModelProto& model, const RangeCheck& check) {
  auto* p = model.add_metadata_props();
  p->set_key(kRangeKey + check.value);
  p->set_value(std::to_string(check.lo) + " " + std::to_string(check.hi) + " " + check.node);
}

std::vector<RangeCheck> range_checks(const onnx::ModelProto& model) {
  std::vector<RangeCheck> checks;
  for (auto& p : model.metadata_props()) {
    if (p.key().rfind(kRangeKey, 0) != 0) continue;
    RangeCheck c;
    c.value = p.key().substr(kRangeKey.size());
    const std::string& v = p.value();
    size_t first = v.find(' '), second = first == std::string::npos ? first : v.find(' ', first + 1);
    internal_assert(second != std::string::npos) << "bad range record " << p.key();
    c.lo = std::stoll(v.substr(0, first));
    c.hi = std::stoll(v.substr(first + 1, second - first - 1));
    c.node = v.substr(second + 1);
    checks.push_back(c);
  }
  return checks;
}

std::vector<CompositeRecord> composite_records(const onnx::ModelProto& model) {
  std::vector<CompositeRecord> records;
  for (auto& p : model.metadata_props()) {
    if (p.key().rfind(kKey, 0) != 0) continue;
    CompositeRecord r;
    std::string rest = p.key().substr(kKey.size());
    r.output = rest.rfind("out:", 0) == 0;
    r.name = rest.substr(r.output ? 4 : 3);
    const std::string& v = p.value();
    r.optional = v.rfind("opt", 0) == 0;
    r.empty = v == "opt empty";
    r.sequence = v.rfind("seq", 0) == 0 || v.rfind("opt seq", 0) == 0;
    if (r.sequence) r.count = std::stoll(v.substr(v.rfind(' ') + 1));
    internal_assert(r.count >= 0) << "bad composite record " << p.key() << " = " << v;
    records.push_back(r);
  }
  return records;
}

void expand_composite_inputs(onnx::ModelProto& model, const std::map<std::string, int64_t>& lengths) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::set<std::string> taken;
  for (auto& t : g.initializer()) taken.insert(t.name());
  for (auto& i : g.input()) taken.insert(i.name());
  for (auto& n : g.node())
    for (auto& o : n.output()) taken.insert(o);
  auto fresh = [&](const std::string& name, const std::string& of) {
    user_assert(taken.insert(name).second) << "model input '" << of << "' would become tensor '" << name
                                           << "', but the model already has a value of that name";
    return name;
  };
  std::map<std::string, int64_t> unused = lengths;
  std::vector<onnx::ValueInfoProto> inputs;
  std::vector<onnx::NodeProto> constructs;
  std::vector<CompositeRecord> records;
  for (auto& in : g.input()) {
    const bool optional = in.type().has_optional_type();
    const onnx::TypeProto& held = optional ? in.type().optional_type().elem_type() : in.type();
    if ((!held.has_sequence_type() && !optional) || (optional && !held.has_sequence_type() && !held.has_tensor_type())) {
      user_assert(!lengths.count(in.name())) << "--sequence-length names '" << in.name() << "', which is no sequence input";
      user_assert(!optional) << "model input '" << in.name() << "' is an optional of neither a tensor nor a sequence";
      inputs.push_back(in);
      continue;
    }
    CompositeRecord r;
    r.name = in.name();
    r.optional = optional;
    r.sequence = held.has_sequence_type();
    if (optional) inputs.push_back(in);  // kept, typed, until its readers are rewritten
    const onnx::TypeProto* elem = &held;
    if (r.sequence) {
      auto it = lengths.find(in.name());
      user_assert(it != lengths.end()) << "model input '" << in.name() << "' is " << (optional ? "an optional " : "a ")
                                       << "sequence: give its number of tensors with --sequence-length " << in.name()
                                       << "=N (its elements become inputs " << sequence_element_name(in.name(), 0)
                                       << ", ...)";
      unused.erase(in.name());
      r.count = it->second;
      elem = &held.sequence_type().elem_type();
      user_assert(elem->has_tensor_type()) << "model input '" << in.name()
                                           << "' is a sequence of non-tensors, which kilnc does not support";
    } else {
      user_assert(!lengths.count(in.name())) << "--sequence-length names '" << in.name() << "', which is no sequence input";
    }
    std::vector<std::string> elements;
    for (auto& name : r.element_names()) {
      onnx::ValueInfoProto e;
      e.set_name(fresh(name, in.name()));
      *e.mutable_type() = *elem;
      inputs.push_back(e);
      elements.push_back(e.name());
    }
    if (r.sequence)  // NAME, or an optional's NAME.value, is the list of the elements
      constructs.push_back(construct(optional ? fresh(optional_value_name(in.name()), in.name()) : in.name(), elements,
                                     elem->tensor_type().elem_type()));
    if (optional) {
      onnx::ValueInfoProto p;
      p.set_name(fresh(optional_presence_name(in.name()), in.name()));
      p.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
      p.mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
      inputs.push_back(p);
    }
    records.push_back(r);
  }
  if (!unused.empty()) user_error << "--sequence-length names '" << unused.begin()->first << "', which is not a model input";
  if (records.empty()) return;
  g.clear_input();
  for (auto& in : inputs) *g.add_input() = std::move(in);
  std::vector<onnx::NodeProto> nodes(constructs.begin(), constructs.end());
  nodes.insert(nodes.end(), g.node().begin(), g.node().end());
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
  for (auto& r : records) add_composite_record(model, r);
}

}  // namespace kiln
