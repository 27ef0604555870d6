#!/usr/bin/python3
"""Seed corpora for the fuzz harnesses (tests/fuzz/*.cpp), generated, never committed.

    make_corpus.py OUT_DIR [--kilnc PATH] [--kiln PATH] [--seed N]

Writes OUT_DIR/<harness>/ for each harness:
  fuzz_onnx_import  small onnx.helper models (Add, Conv+Relu, MatMul+Softmax,
                    a Shape->Gather->Concat->Reshape chain, opset 6, Constant
                    and Clip, sequence and optional inputs and outputs with a
                    Scan, string tensors, ONNX Runtime's com.microsoft QLinear* / QGemm)
                    and demo/shapes_cnn.onnx;
  fuzz_bundle       bundles kilnc compiles from them (CPU, --target=vulkan,
                    one signed with a fresh Ed25519 key), each behind the mode
                    bytes fuzz_bundle.cpp reads (0 as is, 1 rehash, 2/3 trusted keys);
  fuzz_elf          the ELF kernel libraries of the CPU bundles (x86_64), and
                    tests/cross_target/reloc_kernels.c built for aarch64 and
                    armhf where those cross compilers exist;
  fuzz_spirv        the SPIR-V modules of the Vulkan bundles;
  fuzz_npy          .npy files numpy writes: several dtypes and shapes,
                    format versions 1.0, 2.0 and 3.0, Fortran order, big-endian.
Library blobs are found with `kiln inspect --json` (offset and size in the
data segment, which ends the unsigned file). Deterministic for a given
--seed (except the signing key, which is made fresh). Needs Debian's
/usr/bin/python3 (onnx, numpy) and openssl.
"""
import argparse
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPIRV_MAGIC = struct.pack("<I", 0x07230203)


def model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_corpus")
    m.ir_version = 7 if opset >= 7 else 3
    return m


def value(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def onnx_models(rng):
    """name -> ModelProto: small models covering the importer's paths."""
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")
    m = numpy_helper.from_array(rng.standard_normal((5, 7)).astype(np.float32), "m")
    models = {
        "add": model([helper.make_node("Add", ["a", "b"], ["c"])],
                     [value("a", [2, 3]), value("b", [2, 3])], [value("c", [2, 3])]),
        "conv_relu": model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
                            helper.make_node("Relu", ["y"], ["z"])],
                           [value("x", [1, 3, 9, 11])], [value("z", [1, 4, 5, 6])], [w, b]),
        "matmul_softmax": model([helper.make_node("MatMul", ["x", "m"], ["y"]),
                                 helper.make_node("Softmax", ["y"], ["z"], axis=-1)],
                                [value("x", [3, 5])], [value("z", [3, 7])], [m]),
        "shape_chain": model([
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
            helper.make_node("Unsqueeze", ["d0", "ax"], ["d0u"]),
            helper.make_node("Concat", ["d0u", "minus1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["y"])],
            [value("x", [2, 3, 4])], [value("y", [2, 12])],
            [numpy_helper.from_array(np.array(0, np.int64), "i0"),
             numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]),
        "opset6_relu": model([helper.make_node("Relu", ["x"], ["y"])],
                             [value("x", [4, 5])], [value("y", [4, 5])], opset=6),
        "constant_clip": model([
            helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.array(-0.5, np.float32))),
            helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.array(0.75, np.float32))),
            helper.make_node("Clip", ["x", "lo", "hi"], ["y"]),
            helper.make_node("Transpose", ["y"], ["z"], perm=[1, 0])],
            [value("x", [3, 2])], [value("z", [2, 3])]),
        # An If on a constant condition: kilnc inlines the taken branch (import/inline_if.cpp).
        "constant_if": model([
            helper.make_node("If", ["cond"], ["y"], name="pick",
                             then_branch=helper.make_graph(
                                 [helper.make_node("Mul", ["x", "k"], ["t"])], "then", [], [value("t", [2, 3])],
                                 [numpy_helper.from_array(np.array(2.0, np.float32), "k")]),
                             else_branch=helper.make_graph(
                                 [helper.make_node("Neg", ["x"], ["e"])], "else", [], [value("e", [2, 3])]))],
            [value("x", [2, 3])], [value("y", [2, 3])], [numpy_helper.from_array(np.array(True), "cond")]),
        # Sequences and optionals at the boundary, and a Scan unrolled (docs/sequences.md):
        # bundles with a composites table (compiled with --sequence-length xs=2).
        "sequences": model([
            helper.make_node("SequenceInsert", ["xs", "t"], ["ys"]),
            helper.make_node("OptionalHasElement", ["o"], ["has"]),
            helper.make_node("Identity", ["o"], ["oo"]),
            helper.make_node("Scan", ["t0", "t"], ["fin", "run"], num_scan_inputs=1,
                             body=helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"]),
                                                     helper.make_node("Identity", ["s2"], ["p"])], "body",
                                                    [value("s", []), value("e", [])], [value("s2", []), value("p", [])]))],
            [helper.make_value_info("xs", helper.make_sequence_type_proto(
                helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
             helper.make_value_info("o", helper.make_optional_type_proto(
                 helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
             value("t", [3]), value("t0", [])],
            [helper.make_value_info("ys", helper.make_sequence_type_proto(
                helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
             value("has", [], TensorProto.BOOL),
             helper.make_value_info("oo", helper.make_optional_type_proto(
                 helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
             value("fin", []), value("run", [3])], opset=16),
    }
    # String tensors (docs/bundle.md#string-tensors): a string constant, a
    # string input, text to numbers and back, StringNormalizer.
    models["strings"] = model([
        helper.make_node("StringNormalizer", ["s"], ["n"], case_change_action="LOWER", stopwords=["b"]),
        helper.make_node("Cast", ["c"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["f"], ["t"], to=TensorProto.STRING)],
        [value("s", [3], TensorProto.STRING)],
        [value("n", ["k"], TensorProto.STRING), value("t", [2], TensorProto.STRING)],
        [helper.make_tensor("c", TensorProto.STRING, [2], [b"1.5", b"-2e3"])], opset=17)
    for name, m in models.items():
        onnx.checker.check_model(m)
    # ONNX Runtime's quantized contrib operators (domain com.microsoft),
    # which kilnc expands at import (import/contrib_ops.cpp); Python's
    # checker does not know the domain, kilnc checks after the expansion.
    u8 = TensorProto.UINT8
    scalar = lambda name, v, dt=np.float32: numpy_helper.from_array(np.array(v, dt), name)
    contrib = model([
        helper.make_node("QLinearAdd", ["a", "s", "z", "b", "s", "z", "s2", "z"], ["c"], domain="com.microsoft"),
        helper.make_node("QLinearConcat", ["s2", "z", "c", "s2", "z", "a", "s", "z"], ["d"], axis=1,
                         domain="com.microsoft"),
        helper.make_node("QLinearGlobalAveragePool", ["d", "s2", "z", "s", "z"], ["e"], channels_last=0,
                         domain="com.microsoft"),
        helper.make_node("QGemm", ["f", "s", "z", "w8", "s", "z8", "bias", "s2", "z"], ["g"], transB=1,
                         domain="com.microsoft")],
        [value("a", [1, 2, 3, 3], u8), value("b", [1, 2, 3, 3], u8), value("f", [2, 4], u8)],
        [value("e", [1, 4, 1, 1], u8), value("g", [2, 3], u8)],
        [scalar("s", 0.05), scalar("s2", 0.1), scalar("z", 128, np.uint8), scalar("z8", 0, np.int8),
         numpy_helper.from_array(rng.integers(-127, 128, (3, 4)).astype(np.int8), "w8"),
         numpy_helper.from_array(rng.integers(-1000, 1000, (3,)).astype(np.int32), "bias")])
    contrib.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    models["qoperator_contrib"] = contrib
    return models


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def compile_bundle(kilnc, onnx_path, out_path, extra):
    """The bundle's bytes; None for a Vulkan bundle a kilnc without the Vulkan target refuses."""
    result = subprocess.run([kilnc, onnx_path, "-o", out_path] + extra, capture_output=True, text=True)
    if result.returncode != 0 and "--target=vulkan" in extra and "vulkan" in result.stderr.lower():
        print(f"make_corpus: warning: no Vulkan seeds ({result.stderr.strip()})", file=sys.stderr)
        return None
    if result.returncode != 0:
        sys.exit(f"make_corpus: kilnc {os.path.basename(onnx_path)} {' '.join(extra)} failed:\n{result.stderr}")
    with open(out_path, "rb") as f:
        return f.read()


def library_blobs(kiln, bundle_path, data):
    """(format, bytes) of each library blob of an unsigned bundle."""
    info = json.loads(subprocess.run([kiln, "inspect", "--json", bundle_path], check=True,
                                     capture_output=True, text=True).stdout)
    segment = len(data) - info["data_segment_bytes"]  # the data segment ends the file
    return [(lib["format"], data[segment + lib["offset"]:segment + lib["offset"] + lib["size"]])
            for lib in info["libraries"]]


def spirv_modules(blob):
    """The modules of a SPIR-V library blob: each starts with the magic word."""
    starts = [i for i in range(0, len(blob) - 3, 4) if blob[i:i + 4] == SPIRV_MAGIC]
    return [blob[s:e] for s, e in zip(starts, starts[1:] + [len(blob)])]


def npy_files(rng):
    """name -> .npy bytes."""
    files = {}
    shapes = [(), (0,), (5,), (2, 3), (1, 2, 3, 2)]
    for dtype in ["<f4", "<f2", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "|b1"]:
        for shape in shapes:
            array = (rng.standard_normal(shape) * 10).astype(dtype)
            buffer = io.BytesIO()
            np.save(buffer, array)
            files[f"{dtype[1:]}_{'x'.join(map(str, shape)) or 'scalar'}.npy"] = buffer.getvalue()
    for version in [(1, 0), (2, 0), (3, 0)]:
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, rng.standard_normal((3, 4)).astype(np.float32), version=version)
        files[f"v{version[0]}_f4.npy"] = buffer.getvalue()
    for name, array in [("fortran", np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32))),
                        ("bigendian", rng.standard_normal((4,)).astype(">f4")),
                        ("unsupported_u2", np.arange(6, dtype=np.uint16)),
                        ("unicode", np.array([["a", "été", ""], ["x" * 9, "€", "z"]])),
                        ("unicode_be", np.array(["ab", "c"], dtype=">U2")),
                        ("bytes", np.array([b"ab", b"", b"xyz"]))]:
        buffer = io.BytesIO()
        np.save(buffer, array)
        files[name + ".npy"] = buffer.getvalue()
    return files


def cross_elf_libraries(work):
    """(arch mode byte, bytes) of the relocation test library built for aarch64 and armhf."""
    out = []
    source = os.path.join(ROOT, "tests", "cross_target", "reloc_kernels.c")
    flags = ["-shared", "-fPIC", "-nostdlib", "-O2", "-fno-stack-protector",
             "-fno-tree-loop-distribute-patterns", "-Wl,-z,now", "-I" + os.path.join(ROOT, "schema")]
    for mode, cc in [(1, "aarch64-linux-gnu-gcc"), (2, "arm-linux-gnueabihf-gcc")]:
        if not shutil.which(cc) or not os.path.exists(source):
            continue
        for style in ["both", "gnu"]:
            path = os.path.join(work, f"{cc}_{style}.so")
            if subprocess.run([cc] + flags + [f"-Wl,--hash-style={style}", "-o", path, source]).returncode == 0:
                with open(path, "rb") as f:
                    out.append((mode, f.read()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--kilnc", default="/work/main/build/compiler/kilnc")
    parser.add_argument("--kiln", default="/work/main/build/tools/kiln/kiln")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    out = args.out
    work = tempfile.mkdtemp(prefix="kiln_corpus_")
    try:
        # ONNX models.
        models = onnx_models(rng)
        onnx_paths = {}
        for name, m in models.items():
            path = os.path.join(work, name + ".onnx")
            onnx.save(m, path)
            onnx_paths[name] = path
        onnx_paths["shapes_cnn"] = os.path.join(ROOT, "demo", "shapes_cnn.onnx")
        for name, path in onnx_paths.items():
            with open(path, "rb") as f:
                write(os.path.join(out, "fuzz_onnx_import", name + ".onnx"), f.read())

        # Bundles, and the blobs inside them.
        key = os.path.join(work, "key.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", key], check=True,
                       capture_output=True)
        builds = [("add", []), ("conv_relu", []), ("matmul_softmax", []), ("shapes_cnn", []),
                  ("sequences", ["--sequence-length", "xs=2"]), ("strings", []),
                  ("add", ["--target=vulkan"]), ("conv_relu", ["--target=vulkan"]),
                  ("matmul_softmax", ["--target=vulkan"])]
        elf_count = spirv_count = 0
        for name, extra in builds:
            tag = name + ("_vulkan" if "--target=vulkan" in extra else "")
            bundle_path = os.path.join(work, tag + ".kiln")
            data = compile_bundle(args.kilnc, onnx_paths[name], bundle_path, extra)
            if data is None:
                continue
            for mode in [0, 1]:
                write(os.path.join(out, "fuzz_bundle", f"{tag}_mode{mode}.kiln"), bytes([mode]) + data)
            for fmt, blob in library_blobs(args.kiln, bundle_path, data):
                if fmt == "elf" and blob[:4] == b"\x7fELF":
                    write(os.path.join(out, "fuzz_elf", f"{tag}_{elf_count}.so"), b"\x00" + blob)
                    elf_count += 1
                elif fmt == "spirv":
                    for module in spirv_modules(blob):
                        write(os.path.join(out, "fuzz_spirv", f"{tag}_{spirv_count}.spv"), b"\x00" + module)
                        write(os.path.join(out, "fuzz_spirv", f"{tag}_{spirv_count}_main.spv"), b"\x01" + module)
                        spirv_count += 1
        for name, extra in [("add", []), ("add", ["--target=vulkan"])]:
            tag = name + "_signed" + ("_vulkan" if "--target=vulkan" in extra else "")
            data = compile_bundle(args.kilnc, onnx_paths[name], os.path.join(work, tag + ".kiln"),
                                  extra + ["--sign-key=" + key])
            if data is None:
                continue
            for mode in [0, 2, 3]:
                write(os.path.join(out, "fuzz_bundle", f"{tag}_mode{mode}.kiln"), bytes([mode]) + data)
        for i, (mode, blob) in enumerate(cross_elf_libraries(work)):
            write(os.path.join(out, "fuzz_elf", f"cross_{i}.so"), bytes([mode]) + blob)

        # .npy files.
        for name, data in npy_files(rng).items():
            write(os.path.join(out, "fuzz_npy", name), data)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for harness in sorted(os.listdir(out)):
        print(f"make_corpus: {harness}: {len(os.listdir(os.path.join(out, harness)))} seeds")


if __name__ == "__main__":
    main()
