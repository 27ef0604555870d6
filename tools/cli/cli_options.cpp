// The option parser and --help formatter of cli_options.h.
#include "cli_options.h"

#include <string.h>

namespace kiln_cli {

namespace {

// The column where help texts start in FormatOptions.
constexpr size_t kHelpColumn = 30;

bool ListsValue(const char* const* values, const char* word) {
  for (; values && *values; ++values) {
    if (!strcmp(*values, word)) return true;
  }
  return false;
}

// "--name VALUE", "--name[=VALUE]" or "--name".
std::string Synopsis(const Option& option) {
  std::string text = option.name;
  if (option.arity == Arity::kValue) text += std::string(" ") + option.metavar;
  if (option.arity == Arity::kOptionalValue) text += std::string("[=") + option.metavar + "]";
  return text;
}

}  // namespace

Next Parser::Read(const OptionTable& table, const Option** option, const char** value,
                  std::string* error) {
  *option = nullptr;
  *value = nullptr;
  if (index_ >= argc_) return Next::kEnd;
  const char* arg = argv_[index_++];
  if (!options_ended_ && !strcmp(arg, "--")) {
    options_ended_ = true;
    return Read(table, option, value, error);
  }
  if (options_ended_ || arg[0] != '-' || arg[1] == '\0') {
    *value = arg;
    return Next::kPositional;
  }
  const char* eq = strchr(arg, '=');
  size_t name_length = eq ? (size_t)(eq - arg) : strlen(arg);
  const Option* found = nullptr;
  for (const Option& candidate : table) {
    if (strlen(candidate.name) == name_length && !strncmp(candidate.name, arg, name_length)) {
      found = &candidate;
      break;
    }
  }
  if (!found) {
    *error = std::string("unknown option '") + arg + "'";
    return Next::kError;
  }
  *option = found;
  switch (found->arity) {
    case Arity::kFlag:
      if (eq) {
        *error = std::string(found->name) + " takes no value (got '" + arg + "')";
        return Next::kError;
      }
      break;
    case Arity::kValue:
      if (eq) {
        *value = eq + 1;
      } else if (index_ < argc_) {
        *value = argv_[index_++];
      } else {
        *error = std::string(found->name) + " needs a value (" + found->metavar + ")";
        return Next::kError;
      }
      break;
    case Arity::kOptionalValue:
      if (eq) {
        *value = eq + 1;
      } else if (index_ < argc_ && ListsValue(found->values, argv_[index_])) {
        *value = argv_[index_++];
      }
      break;
  }
  return Next::kOption;
}

std::string FormatOptions(const OptionTable& table) {
  std::string out;
  for (const Option& option : table) {
    std::string line = "  " + Synopsis(option);
    if (line.size() + 2 > kHelpColumn) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kHelpColumn, ' ');
    for (const char* p = option.help; *p; ++p) {
      line += *p;
      if (*p == '\n') line += std::string(kHelpColumn, ' ');
    }
    out += line + "\n";
  }
  return out;
}

bool ParseByteCount(const char* text, uint64_t* out) {
  uint64_t value = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (value > (UINT64_MAX - 9) / 10) return false;
    value = value * 10 + (uint64_t)(*p - '0');
  }
  if (p == text || value == 0) return false;
  int shift = 0;
  if (*p) {
    shift = *p == 'K' ? 10 : *p == 'M' ? 20 : *p == 'G' ? 30 : *p == 'T' ? 40 : -1;
    if (shift < 0 || p[1] != '\0' || value > (UINT64_MAX >> shift)) return false;
  }
  *out = value << shift;
  return true;
}

}  // namespace kiln_cli
