// The library's version and ABI number (kiln.h, "Versions"): compiled in, so
// a program can tell which libkiln it actually runs with.
#include "kiln/kiln.h"

const char* kiln_version(void) { return KILN_VERSION_STRING; }

uint32_t kiln_abi_version(void) { return KILN_ABI_VERSION; }
