// Search spaces of the CPU schedules (space.h).
#include "tune/space.h"

#include <algorithm>

namespace kiln::tune {

std::string workload_key(const std::string& schedule, const std::string& dtype, const std::vector<int64_t>& out,
                         const std::vector<int64_t>& reduce, const std::string& variant) {
  std::string key = schedule + " " + dtype + " [";
  for (size_t i = 0; i < out.size(); i++) key += (i ? "," : "") + std::to_string(out[i]);
  key += ";";
  for (size_t i = 0; i < reduce.size(); i++) key += (i ? "," : "") + std::to_string(reduce[i]);
  return key + "]" + (variant.empty() ? "" : " " + variant);
}

std::string conv_variant(const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  auto join = [](const std::vector<int64_t>& v) {
    std::string text;
    for (size_t i = 0; i < v.size(); i++) text += (i ? "x" : "") + std::to_string(v[i]);
    return text;
  };
  return "s" + join(strides) + " d" + join(dilations);
}

Knobs::Knobs(Tuning* tuning, const std::string& schedule, const std::string& dtype, const std::vector<int64_t>& out,
             const std::vector<int64_t>& reduce, const std::string& variant)
    : tuning_(tuning), key_(workload_key(schedule, dtype, out, reduce, variant)) {
  if (!tuning_) return;
  auto [it, fresh] = tuning_->spaces.try_emplace(key_);
  space_ = &it->second;
  if (fresh) {
    space_->schedule = schedule;
    double mac = 1;
    for (int64_t e : out) mac *= (double)e;
    for (int64_t e : reduce) mac *= (double)e;
    space_->flops = 2 * mac;
    space_->extents = out;
    space_->extents.insert(space_->extents.end(), reduce.begin(), reduce.end());
  }
  if (!tuning_->current_kernel.empty()) tuning_->kernel_workload[tuning_->current_kernel] = key_;
  auto a = tuning_->apply.find(key_);
  if (a != tuning_->apply.end()) config_ = &a->second;
}

int64_t Knobs::get(const std::string& name, std::vector<int64_t> options, int64_t fallback,
                   const std::string& only_if, int64_t only_if_value) {
  if (std::find(options.begin(), options.end(), fallback) == options.end()) options.push_back(fallback);
  std::sort(options.begin(), options.end());
  options.erase(std::unique(options.begin(), options.end()), options.end());
  if (!space_) return fallback;
  if (only_if.empty() && !guard_.empty()) return get(name, options, fallback, guard_, guard_value_);
  auto known = std::find_if(space_->knobs.begin(), space_->knobs.end(), [&](const Knob& k) { return k.name == name; });
  if (known == space_->knobs.end()) space_->knobs.push_back({name, options, fallback, only_if, only_if_value});
  if (config_) {
    auto c = config_->find(name);
    if (c != config_->end() && std::binary_search(options.begin(), options.end(), c->second)) return c->second;
  }
  return fallback;
}

bool Knobs::declared(const std::string& name) const {
  if (!space_) return false;
  return std::any_of(space_->knobs.begin(), space_->knobs.end(), [&](const Knob& k) { return k.name == name; });
}

namespace {

// `c` completed and canonical (canonical()); `idle_out` gets the knobs that do not matter at this point.
Config complete(const Space& space, const Config& c, std::vector<std::string>* idle_out) {
  Config full;
  for (const Knob& k : space.knobs) {
    auto it = c.find(k.name);
    full[k.name] = it != c.end() ? it->second : k.fallback;
  }
  // In declaration order, so that a knob that depends on an idle knob is idle too.
  std::vector<std::string> idle;
  for (const Knob& k : space.knobs) {
    if (k.only_if.empty() || !full.count(k.only_if)) continue;
    bool over = std::find(idle.begin(), idle.end(), k.only_if) != idle.end();
    if (over || full[k.only_if] != k.only_if_value) {
      full[k.name] = k.fallback;
      idle.push_back(k.name);
    }
  }
  if (idle_out) *idle_out = idle;
  return full;
}

}  // namespace

Config canonical(const Space& space, const Config& c) { return complete(space, c, nullptr); }

Config active(const Space& space, const Config& c) {
  std::vector<std::string> idle;
  Config full = complete(space, c, &idle);
  for (const std::string& name : idle) full.erase(name);
  return full;
}

int64_t space_size(const Space& space) {
  int64_t n = 1;
  for (const Knob& k : space.knobs) {
    int64_t m = (int64_t)k.options.size();
    n = n > (int64_t(1) << 62) / std::max<int64_t>(m, 1) ? (int64_t(1) << 62) : n * m;
  }
  return n;
}

std::vector<int64_t> divisors(int64_t n, int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= std::min(n, limit); d++)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace kiln::tune
