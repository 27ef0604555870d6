// `kilnc tune MODEL.onnx --log TUNE.jsonl [options]` (driver/tuner.h).
#pragma once

namespace kiln::kilnc {

// Runs `kilnc tune` on argv[1..argc) (argv[0] is "tune"); returns the exit status.
int run_tune(int argc, char** argv);

}  // namespace kiln::kilnc
