// Static kernels (kiln_static_library_register, kilnc --kernels=static): the
// unit tests' add/scale kernels (data/runtime_kernels.c) are compiled into
// this test program and registered, and a bundle whose library is
// StaticLinked runs them without mapping any code. Also the registry's and
// the verifier's rules. (tests/static_kernels runs real models this way.)
#include <doctest/doctest.h>
#include <string.h>

#include <string>
#include <vector>

#include "exec/model.h"
#include "kiln/kiln.hpp"
#include "kiln_kernel_abi.h"
#include "runtime_bundle_builder.h"

extern "C" const kiln_kernel_library_t* kiln_kernel_library_query(uint32_t abi_version);  // runtime_kernels.c

namespace {

namespace fb = kiln::fb;
using namespace kiln_test;

constexpr uint64_t kHash = 0x5eedc0de12345678ull;
const kiln_static_library_t kAddScale = {KILN_KERNEL_ABI_VERSION, 0, kHash, "add_scale", kiln_kernel_library_query};

// AddScaleBundle with its kernels linked into the application instead.
TestBundle StaticAddScaleBundle(uint64_t hash) {
  TestBundle b = AddScaleBundle();
  b.data.resize(1024);  // the constants only: no blob
  b.libraries = {{fb::LibraryFormat::StaticLinked, 0, 0, hash, "kiln_static_library_add_scale"}};
  b.min_runtime_minor = 4;
  return b;
}

std::string LoadError(const TestBundle& b, kiln_status_code_t* out_code) {
  std::vector<uint8_t> bytes = b.Build();
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(bytes.data(), bytes.size(), &model);
  *out_code = status.code();
  return status.ok() ? "" : status.message();
}

TEST_CASE("static kernels: registration rules, load before and after, run, mismatches") {
  CHECK(kiln::Status(kiln_static_library_register(nullptr)).code() == KILN_INVALID_ARGUMENT);
  kiln_static_library_t other_abi = kAddScale;
  other_abi.abi_version = KILN_KERNEL_ABI_VERSION + 1;
  kiln::Status abi(kiln_static_library_register(&other_abi));
  CHECK(abi.code() == KILN_UNSUPPORTED);
  CHECK(std::string(abi.message()).find("kernel ABI version 2, this runtime speaks 1") != std::string::npos);
  kiln_static_library_t no_hash = kAddScale;
  no_hash.kernel_hash = 0;
  CHECK(kiln::Status(kiln_static_library_register(&no_hash)).code() == KILN_INVALID_ARGUMENT);

  // Not registered yet: the load fails naming the function to register.
  kiln_status_code_t code = KILN_OK;
  std::string message = LoadError(StaticAddScaleBundle(kHash), &code);
  CHECK(code == KILN_NOT_FOUND);
  CHECK(message.find("kiln_static_library_register(kiln_static_library_add_scale())") != std::string::npos);

  REQUIRE(kiln::Status(kiln_static_library_register(&kAddScale)).ok());
  CHECK(kiln::Status(kiln_static_library_register(&kAddScale)).ok());  // again: a no-op

  std::vector<uint8_t> bytes = StaticAddScaleBundle(kHash).Build();
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadMemory(bytes.data(), bytes.size(), &model);
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(model.get()->libraries[0].module.base == nullptr);  // no code mapped
  kiln_library_info_t library;
  kiln_library_info_init(&library);
  REQUIRE(kiln::Status(kiln_model_get_library_info(model.get(), 0, &library)).ok());
  CHECK(library.format == KILN_LIBRARY_FORMAT_STATIC);
  CHECK(library.kernel_hash == kHash);
  CHECK(std::string(library.static_symbol) == "kiln_static_library_add_scale");
  kiln::Session session;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = 2;
  status = kiln::Session::Create(model, &options, &session);
  REQUIRE_MESSAGE(status.ok(), status.message());
  std::vector<float> a(kAddScaleElements), out(kAddScaleElements, -1.0f);
  for (int i = 0; i < kAddScaleElements; ++i) a[i] = (float)(i % 5) - 2.0f;
  REQUIRE(session.set_input(0, a.data(), a.size() * 4).ok());
  status = session.run();
  REQUIRE_MESSAGE(status.ok(), status.message());
  REQUIRE(session.get_output(0, out.data(), out.size() * 4).ok());
  for (int i = 0; i < kAddScaleElements; ++i) CHECK(out[i] == (a[i] + 0.5f * (float)i) * 2.0f);

  // The same model from another compilation (another hash): a clear error.
  message = LoadError(StaticAddScaleBundle(kHash + 1), &code);
  CHECK(code == KILN_NOT_FOUND);
  CHECK(message.find("different compilations") != std::string::npos);
}

TEST_CASE("static kernels: the verifier's rules for StaticLinked libraries") {
  kiln_status_code_t code = KILN_OK;
  TestBundle with_blob = StaticAddScaleBundle(kHash);
  with_blob.libraries[0].size = 64;
  with_blob.data.resize(1024 + 64);
  with_blob.libraries[0].offset = 1024;
  CHECK(LoadError(with_blob, &code).find("static kernels need offset 0, size 0") != std::string::npos);
  CHECK(code == KILN_INVALID_BUNDLE);
  TestBundle old_minor = StaticAddScaleBundle(kHash);
  old_minor.min_runtime_minor = 3;
  CHECK(LoadError(old_minor, &code).find("min_runtime_minor >= 4") != std::string::npos);
  TestBundle no_hash = StaticAddScaleBundle(0);
  CHECK(LoadError(no_hash, &code).find("a kernel hash") != std::string::npos);
  TestBundle no_symbol = StaticAddScaleBundle(kHash);
  no_symbol.libraries[0].static_symbol.clear();
  CHECK(LoadError(no_symbol, &code).find("a symbol") != std::string::npos);
  // A verify-only load of a static bundle needs no registration (tools).
  std::vector<uint8_t> bytes = StaticAddScaleBundle(0x77).Build();
  kiln::Model model;
  CHECK(kiln::Model::LoadMemory(bytes.data(), bytes.size(), &model, KILN_MODEL_LOAD_VERIFY_ONLY).ok());
}

}  // namespace
