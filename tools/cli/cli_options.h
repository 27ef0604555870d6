// One command-line convention for kilnc and every kiln subcommand: options
// are described by a table (name, whether it takes a value, help text) and
// parsed by one loop, so that every option behaves the same:
//   --name=value and --name value are the same (also -o=FILE and -o FILE);
//   a flag takes no value (--json=1 is an error);
//   an option whose value is optional takes it after '=', or as the next
//     word only when that word is one of the values it lists (so that
//     `--validation MODEL.kiln` leaves MODEL.kiln positional);
//   "--" ends the options; "-" and words not starting with '-' are positional.
// The same table prints --help, so the help lists every option there is.
// Plain C++17 and libc, no Kiln headers: kilnc (compiler/kilnc) and the kiln
// tool (tools/kiln) both build it.
#ifndef KILN_TOOLS_CLI_CLI_OPTIONS_H_
#define KILN_TOOLS_CLI_CLI_OPTIONS_H_

#include <stdint.h>

#include <string>
#include <vector>

namespace kiln_cli {

enum class Arity {
  kFlag,           // --name
  kValue,          // --name=V or --name V
  kOptionalValue,  // --name, --name=V, or --name V when V is one of `values`
};

struct Option {
  int id;                   // the caller's code for the option
  const char* name;         // "--threads", "-o"
  Arity arity;
  const char* metavar;      // the value's placeholder in --help ("N", "NAME=FILE.npy"); "" for flags
  const char* help;         // for --help; '\n' starts an indented continuation line
  // kOptionalValue: the words `--name WORD` takes as its value (nullptr-terminated).
  const char* const* values = nullptr;
};

using OptionTable = std::vector<Option>;

// What Parser::Next found.
enum class Next {
  kOption,      // *option and, unless a flag or an optional value was not given, *value
  kPositional,  // *value is the word; *option is nullptr
  kEnd,         // no more arguments
  kError,       // *error says what is wrong (an unknown option, a missing value, ...)
};

// Walks argv[0..argc) once, option by option.
class Parser {
 public:
  Parser(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Reads the next option or positional argument against `table`.
  Next Read(const OptionTable& table, const Option** option, const char** value, std::string* error);

 private:
  int argc_;
  char** argv_;
  int index_ = 0;
  bool options_ended_ = false;  // after "--"
};

// The table as --help lines: "  --name VALUE   help", aligned.
std::string FormatOptions(const OptionTable& table);

// A positive byte count: digits with an optional binary suffix K, M, G or T
// (4096, 512M, 4G). False when the text is not one or it overflows 64 bits.
bool ParseByteCount(const char* text, uint64_t* out);

}  // namespace kiln_cli

#endif  // KILN_TOOLS_CLI_CLI_OPTIONS_H_
