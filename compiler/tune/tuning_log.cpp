// Tuning logs (tuning_log.h): JSON lines through the shared JSON reader.
#include "tune/tuning_log.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "json_reader.h"  // tools/cli
#include "support/diagnostics.h"

namespace kiln::tune {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char hex[8];
      snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

// The record on line `line` of `path`; a user error when it is not one.
Record parse_record(const std::string& text, const std::string& path, size_t line) {
  kiln_cli::JsonValue v;
  std::string error;
  user_assert(kiln_cli::ParseJson(text, &v, &error)) << path << ":" << line << ": not JSON (" << error << ")";
  auto field = [&](const char* name, kiln_cli::JsonValue::Kind kind, bool required) -> const kiln_cli::JsonValue* {
    const kiln_cli::JsonValue* f = v.kind == kiln_cli::JsonValue::kObject ? v.Find(name) : nullptr;
    user_assert(f || !required) << path << ":" << line << ": a tuning record needs \"" << name << "\"";
    user_assert(!f || f->kind == kind || (f->kind == kiln_cli::JsonValue::kNull && !required))
        << path << ":" << line << ": \"" << name << "\" has the wrong type";
    return f && f->kind == kind ? f : nullptr;
  };
  auto integer = [&](const kiln_cli::JsonValue* f, const char* name) {
    user_assert(std::fabs(f->number) < 9e15 && f->number == std::floor(f->number))
        << path << ":" << line << ": \"" << name << "\" must be an integer";
    return (int64_t)f->number;
  };
  using K = kiln_cli::JsonValue;
  Record r;
  r.workload = field("workload", K::kString, true)->string;
  r.target = field("target", K::kString, true)->string;
  r.kiln = field("kiln", K::kString, true)->string;
  r.threads = integer(field("threads", K::kNumber, true), "threads");
  for (const auto& [name, value] : field("config", K::kObject, true)->members) {
    user_assert(value.kind == K::kNumber) << path << ":" << line << ": config \"" << name << "\" must be a number";
    r.config[name] = integer(&value, name.c_str());
  }
  const K* ns = field("ns", K::kNumber, false);
  r.ns = ns ? ns->number : -1;
  user_assert(r.ns < 0 || std::isfinite(r.ns)) << path << ":" << line << ": \"ns\" must be finite";
  if (const K* e = field("error", K::kString, false)) r.error = e->string;
  if (const K* m = field("model", K::kString, false)) r.model = m->string;
  if (const K* t = field("trial", K::kNumber, false)) r.trial = integer(t, "trial");
  if (const K* t = field("validated", K::kBool, false)) r.validated = t->boolean;
  return r;
}

}  // namespace

std::vector<Record> read_tuning_log(const std::string& path, bool missing_ok) {
  std::ifstream f(path);
  if (!f.good()) {
    user_assert(missing_ok) << "cannot read the tuning log '" << path << "'";
    return {};
  }
  std::vector<Record> records;
  std::string text;
  for (size_t line = 1; std::getline(f, text); line++) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    records.push_back(parse_record(text, path, line));
  }
  return records;
}

std::string record_json(const Record& r) {
  std::string out = "{\"workload\":" + quoted(r.workload) + ",\"target\":" + quoted(r.target) +
                    ",\"kiln\":" + quoted(r.kiln) + ",\"threads\":" + std::to_string(r.threads) + ",\"config\":{";
  bool first = true;
  for (const auto& [name, value] : r.config) {
    out += (first ? "" : ",") + quoted(name) + ":" + std::to_string(value);
    first = false;
  }
  char ns[64];
  snprintf(ns, sizeof ns, "%.0f", r.ns);
  out += std::string("},\"ns\":") + (r.ns < 0 ? "null" : ns);
  if (!r.error.empty()) out += ",\"error\":" + quoted(r.error);
  if (!r.model.empty()) out += ",\"model\":" + quoted(r.model);
  out += ",\"trial\":" + std::to_string(r.trial);
  return out + (r.validated ? ",\"validated\":true}" : "}");
}

std::map<std::string, Config> best_configs(const std::vector<Record>& records, const std::string& target,
                                           const std::string& kiln, int64_t threads,
                                           std::map<std::string, double>* out_ns) {
  std::map<std::string, Config> best;
  std::map<std::string, double> best_ns;
  auto matches = [&](const Record& r) {
    return r.ns >= 0 && r.target == target && r.kiln == kiln && (!threads || r.threads == threads);
  };
  std::set<std::string> validated;
  for (const Record& r : records)
    if (matches(r) && r.validated) validated.insert(r.workload);
  for (const Record& r : records) {
    if (!matches(r) || (validated.count(r.workload) && !r.validated)) continue;
    auto it = best_ns.find(r.workload);
    if (it != best_ns.end() && it->second <= r.ns) continue;
    best_ns[r.workload] = r.ns;
    best[r.workload] = r.config;
  }
  if (out_ns) *out_ns = best_ns;
  return best;
}

}  // namespace kiln::tune
