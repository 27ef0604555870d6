// A small JSON reader (RFC 8259) for the traces `kiln inspect --profile`
// reads back and kilnc's tuning logs (kilnc tune): the whole text into a
// tree of values. Plain C++17, no Kiln headers (tools/cli is shared).
#ifndef KILN_TOOLS_CLI_JSON_READER_H_
#define KILN_TOOLS_CLI_JSON_READER_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln_cli {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;                                      // kString (UTF-8)
  std::vector<JsonValue> items;                            // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in order

  // The member named `key` of an object (the first one), or nullptr.
  const JsonValue* Find(const char* key) const;
};

// Parses `text` (one value, surrounded by white space only). False with
// *error ("at byte N: ...") when it is not JSON or nests deeper than 512.
bool ParseJson(const std::string& text, JsonValue* out, std::string* error);

}  // namespace kiln_cli

#endif  // KILN_TOOLS_CLI_JSON_READER_H_
