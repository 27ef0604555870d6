# Stands in for Debian's torch in the TVM venv (bench/tvm_bench.py's hide_torch puts this folder
# first on PYTHONPATH): TVM imports torch when it can, only for DLPack exchange with it, and then
# tries to JIT-compile an extension at every start of every MetaSchedule worker (seconds each);
# and Debian's torch registers older ONNX protobuf descriptors that break the venv's onnx.
raise ImportError('torch is hidden from TVM by bench/tvm_hidden (bench/tvm_bench.py)')
