#!/usr/bin/python3
"""`kiln run` reads and writes every element type as .npy (issue 19): one model with an input
of each type, each concatenated with itself (data movement, exact for every type; bfloat16
through float32 and back, exact too); kilnc
compiles it, `kiln run` feeds seeded arrays of each type and the outputs must come back with
the same dtype, twice as many rows and equal values. A .npy of the wrong type is refused by
name. Strings (docs/bundle.md#string-tensors) go through an Identity model of their own (no
Concat of strings), on the CPU and, with --vulkan, in a Vulkan bundle: numpy unicode in, the
same strings out as '<U' (their longest length); a sequence of strings and an optional string
given as 'none' take the same files. The narrow types of 0.10 bundles (float8, float4e2m1, e8m0,
int4, uint4, int2, uint2: one byte an element, docs/bundle.md#narrow-element-types) go through
a Transpose model of their own (opset 25; onnx 1.12 has no names for them: their codes): .npy
'|V1' in ('|u1' and '|i1' for two), '|V1' out, byte for byte.

  dtypes_test.py dtypes --kilnc PATH --kiln PATH --source-root DIR --workdir DIR [--vulkan]
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

# numpy dtype -> ONNX element type: every type the runtime carries.
TYPES = {
    'float32': TensorProto.FLOAT, 'float16': TensorProto.FLOAT16, 'float64': TensorProto.DOUBLE,
    'int8': TensorProto.INT8, 'int16': TensorProto.INT16, 'int32': TensorProto.INT32, 'int64': TensorProto.INT64,
    'uint8': TensorProto.UINT8, 'uint16': TensorProto.UINT16, 'uint32': TensorProto.UINT32,
    'uint64': TensorProto.UINT64, 'bool': TensorProto.BOOL,
    'bfloat16': TensorProto.BFLOAT16,  # .npy '|V2': numpy has no bfloat16 (docs/tools.md)
}


def sample(rng, name):
    if name == 'bfloat16':  # float32's upper halves, extremes included
        bits = (rng.standard_normal((3, 4)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        bits[0, 0], bits[0, 1] = 0x7f7f, 0xff80  # the largest finite, -infinity
        return bits.view('V2')
    dt = np.dtype(name)
    if dt == np.bool_:
        return rng.integers(0, 2, (3, 4)).astype(np.bool_)
    if dt.kind == 'f':
        return rng.standard_normal((3, 4)).astype(dt)
    info = np.iinfo(dt)  # the type's whole range: its extremes included
    a = rng.integers(info.min, info.max, (3, 4), dtype=dt, endpoint=True)
    a[0, 0], a[0, 1] = info.min, info.max
    return a


def check_strings(args) -> bool:
    """y = Identity(x) of strings [3, 4]: `kiln run` reads numpy unicode and writes it back."""
    m = helper.make_model(helper.make_graph(
        [helper.make_node('Identity', ['x_string'], ['y_string'])], 'strings',
        [helper.make_tensor_value_info('x_string', TensorProto.STRING, [3, 4])],
        [helper.make_tensor_value_info('y_string', TensorProto.STRING, [3, 4])]),
        opset_imports=[helper.make_opsetid('', 13)])
    onnx.checker.check_model(m)
    model = os.path.join(args.workdir, 'strings.onnx')
    onnx.save(m, model)
    # Empty, ASCII, Latin-1, CJK, an emoji (4 UTF-8 bytes), an interior NUL.
    a = np.array([['', 'kiln', 'été', '中文'], ['\U0001f600', 'a\x00b', ' x ', 'ÀÉÎ'],
                  ['z' * 16, 'é' * 8, '\t', '€']])
    x = os.path.join(args.workdir, 'x_string.npy')
    np.save(x, a)
    ok = True
    for target in [[]] + ([['--target=vulkan']] if args.vulkan else []):
        name = 'vulkan' if target else 'cpu'
        bundle = os.path.join(args.workdir, 'strings_%s.kiln' % name)
        out = os.path.join(args.workdir, 'strings_out_' + name)
        device = ['--device', 'vulkan', '--validation'] if target else []
        proc = subprocess.run([args.kilnc, model, '-o', bundle] + target, capture_output=True, text=True)
        if proc.returncode == 0:
            proc = subprocess.run([args.kiln, 'run', bundle, '--input', 'x_string=' + x, '--output-dir', out] + device,
                                  capture_output=True, text=True)
        if proc.returncode != 0:
            print('string (%s): FAIL: %s' % (name, proc.stderr.strip()))
            ok = False
            continue
        got = np.load(os.path.join(out, 'y_string.npy'))
        good = got.dtype == np.dtype('<U16') and got.shape == a.shape and np.array_equal(got, a)
        print('%-8s %s -> %s %s (%s): %s' % ('string', a.shape, got.dtype, got.shape, name, 'PASS' if good else 'FAIL'))
        ok &= good
    ok &= check_string_composites(args)
    return ok


def check_string_composites(args) -> bool:
    """Strings in sequences and optionals (docs/sequences.md) take the same .npy files: a sequence
    of two string tensors through Identity (a folder in, a folder out), and an optional string
    input given as 'none' (a table of empty strings, never read)."""
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.STRING, [2]))
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.STRING, [2]))
    m = helper.make_model(helper.make_graph(
        [helper.make_node('Identity', ['xs'], ['ys']), helper.make_node('OptionalHasElement', ['o'], ['has'])],
        'string_composites', [helper.make_value_info('xs', seq), helper.make_value_info('o', opt)],
        [helper.make_value_info('ys', seq), helper.make_tensor_value_info('has', TensorProto.BOOL, [])]),
        opset_imports=[helper.make_opsetid('', 16)])
    onnx.checker.check_model(m)
    model, bundle = (os.path.join(args.workdir, 'string_composites' + e) for e in ('.onnx', '.kiln'))
    onnx.save(m, model)
    folder, out = os.path.join(args.workdir, 'xs'), os.path.join(args.workdir, 'string_composites_out')
    os.makedirs(folder)
    elements = [np.array(['a', 'bé']), np.array(['', '\U0001f600'])]
    for k, a in enumerate(elements):
        np.save(os.path.join(folder, '%d.npy' % k), a)
    proc = subprocess.run([args.kilnc, model, '-o', bundle, '--sequence-length', 'xs=2'], capture_output=True, text=True)
    if proc.returncode == 0:
        proc = subprocess.run([args.kiln, 'run', bundle, '--input', 'xs=' + folder, '--input', 'o=none',
                               '--output-dir', out], capture_output=True, text=True)
    good = proc.returncode == 0
    if good:
        got = [np.load(os.path.join(out, 'ys', '%d.npy' % k)) for k in range(2)]
        good = all(g.dtype.kind == 'U' and np.array_equal(g, a) for g, a in zip(got, elements)) and \
            not np.load(os.path.join(out, 'has.npy'))
    print('string sequence and optional (none): %s %s' % ('PASS' if good else 'FAIL', proc.stderr.strip()))
    return good


# ONNX's codes of the narrow types (onnx >= 1.20's TensorProto names; 1.12 has none), with
# codes to feed: finite values of each (what computing in float32 and back keeps) and the
# infinities and NaNs that survive it.
NARROW = {
    'float8e4m3fn': (17, list(range(0, 0x7F)) + [0x7F, 0xFF, 0x80, 0xFE]),
    'float8e4m3fnuz': (18, list(range(0, 0x80)) + [0x80, 0xFF]),
    'float8e5m2': (19, list(range(0, 0x7C)) + [0x7C, 0xFC, 0x7E, 0xFE]),
    'float8e5m2fnuz': (20, list(range(0, 0x80)) + [0x80, 0xFF]),
    'uint4': (21, list(range(16))),
    'int4': (22, [v & 0xFF for v in range(-8, 8)]),  # sign-extended bytes
    'float4e2m1': (23, list(range(16))),
    'float8e8m0': (24, list(range(256))),
    'uint2': (25, list(range(4))),
    'int2': (26, [v & 0xFF for v in range(-2, 2)]),
}


def check_narrow(args) -> bool:
    """y = Transpose(x) [3, 4] -> [4, 3] of each narrow type: `kiln run` reads '|V1' (also '|u1',
    '|i1') as the input's type and writes '|V1', the same bytes moved."""
    nodes, inputs, outputs = [], [], []
    for name, (code, _) in NARROW.items():
        nodes.append(helper.make_node('Transpose', ['x_' + name], ['y_' + name], perm=[1, 0]))
        inputs.append(helper.make_tensor_value_info('x_' + name, code, [3, 4]))
        outputs.append(helper.make_tensor_value_info('y_' + name, code, [4, 3]))
    m = helper.make_model(helper.make_graph(nodes, 'narrow', inputs, outputs), opset_imports=[helper.make_opsetid('', 25)])
    m.ir_version = 11  # (onnx 1.12's checker knows neither: not checked here; kilnc's is)
    model, bundle = (os.path.join(args.workdir, 'narrow' + e) for e in ('.onnx', '.kiln'))
    onnx.save(m, model)
    proc = subprocess.run([args.kilnc, model, '-o', bundle], capture_output=True, text=True)
    if proc.returncode != 0:
        print('narrow types: FAIL: kilnc: ' + proc.stderr.strip())
        return False
    rng = np.random.default_rng(62)
    feeds, arrays = [], {}
    for k, (name, (_, codes)) in enumerate(NARROW.items()):
        a = np.array(codes, dtype=np.uint8)[rng.integers(0, len(codes), 12)].reshape(3, 4)
        arrays[name] = a
        path = os.path.join(args.workdir, 'x_%s.npy' % name)
        # '|V1' (what ml_dtypes' arrays save as); int4 as '|i1', uint4 as '|u1'
        np.save(path, a.view(np.int8) if name == 'int4' else a if name == 'uint4' else a.view('V1'))
        feeds += ['--input', 'x_%s=%s' % (name, path)]
    out = os.path.join(args.workdir, 'narrow_out')
    proc = subprocess.run([args.kiln, 'run', bundle, '--output-dir', out] + feeds, capture_output=True, text=True)
    if proc.returncode != 0:
        print('narrow types: FAIL: kiln run: ' + proc.stderr.strip())
        return False
    ok = True
    for name, a in arrays.items():
        got = np.load(os.path.join(out, 'y_%s.npy' % name))
        good = got.dtype == np.dtype('V1') and got.shape == (4, 3) and got.tobytes() == np.ascontiguousarray(a.T).tobytes()
        print('%-14s %s -> %s %s: %s' % (name, a.shape, got.dtype, got.shape, 'PASS' if good else 'FAIL'))
        ok &= good
    # '|V1' is taken only for a narrow input: not for a float32 one.
    wrong = os.path.join(args.workdir, 'wrong_v1.npy')
    np.save(wrong, np.zeros((3, 4), np.uint8).view('V1'))
    proc = subprocess.run([args.kiln, 'run', os.path.join(args.workdir, 'dtypes.kiln')] +
                          ['--input', 'x_float32=' + wrong], capture_output=True, text=True)
    refused = proc.returncode == 1 and 'x_float32' in proc.stderr
    print("a '|V1' .npy for a float32 input: %s (%s)" % ('PASS' if refused else 'FAIL', proc.stderr.strip()))
    return ok and refused


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('check', choices=['dtypes'])
    p.add_argument('--kilnc', required=True)
    p.add_argument('--kiln', required=True)
    p.add_argument('--source-root', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--vulkan', action='store_true')
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    nodes, inputs, outputs = [], [], []
    for name, t in TYPES.items():
        nodes.append(helper.make_node('Concat', ['x_' + name, 'x_' + name], ['y_' + name], axis=0))
        inputs.append(helper.make_tensor_value_info('x_' + name, t, [3, 4]))
        outputs.append(helper.make_tensor_value_info('y_' + name, t, [6, 4]))
    m = helper.make_model(helper.make_graph(nodes, 'dtypes', inputs, outputs),
                          opset_imports=[helper.make_opsetid('', 13)])
    onnx.checker.check_model(m)
    model = os.path.join(args.workdir, 'dtypes.onnx')
    bundle = os.path.join(args.workdir, 'dtypes.kiln')
    onnx.save(m, model)
    proc = subprocess.run([args.kilnc, model, '-o', bundle], capture_output=True, text=True)
    if proc.returncode != 0:
        print('FAIL: kilnc: ' + proc.stderr)
        return 1
    rng = np.random.default_rng(19)
    feeds, arrays = [], {}
    for name in TYPES:
        arrays[name] = sample(rng, name)
        path = os.path.join(args.workdir, 'x_%s.npy' % name)
        np.save(path, arrays[name])
        feeds += ['--input', 'x_%s=%s' % (name, path)]
    out = os.path.join(args.workdir, 'out')
    proc = subprocess.run([args.kiln, 'run', bundle, '--output-dir', out] + feeds, capture_output=True, text=True)
    if proc.returncode != 0:
        print('FAIL: kiln run: ' + proc.stderr)
        return 1
    ok = True
    for name, a in arrays.items():
        got = np.load(os.path.join(out, 'y_%s.npy' % name))
        want = np.concatenate([a, a])
        good = got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
        print('%-8s %s -> %s %s: %s' % (name, a.shape, got.dtype, got.shape, 'PASS' if good else 'FAIL'))
        ok &= good
    # A .npy of another type than the input's is refused, naming the input.
    wrong = os.path.join(args.workdir, 'wrong.npy')
    np.save(wrong, arrays['uint32'].astype(np.int32))
    bad = [f if not f.startswith('x_uint32=') else 'x_uint32=' + wrong for f in feeds]
    proc = subprocess.run([args.kiln, 'run', bundle] + bad, capture_output=True, text=True)
    refused = proc.returncode == 1 and 'x_uint32' in proc.stderr and 'uint32' in proc.stderr
    print('an int32 .npy for a uint32 input: %s (%s)' % ('PASS' if refused else 'FAIL', proc.stderr.strip()))
    ok &= refused
    ok &= check_strings(args)
    ok &= check_narrow(args)
    print('dtypes: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
