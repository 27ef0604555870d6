#!/usr/bin/python3
"""String tensors end to end (issue 19, docs/bundle.md#string-tensors, decision 54): one model
normalizes a string input (StringNormalizer: UPPER, case-insensitive stopwords, Latin-1 letters),
spells a float32 input as text and reads it back, and parses a string input into float32; another
concatenates, splits (at whitespace, at a delimiter) and compares strings (opset 20); `kiln
run` reads and writes numpy unicode (.npy `<U`). Expected values are numpy's and Python's. Then
what kilnc and the runtime refuse: an operator that does not take strings, float64 to string,
an input larger than --string-bytes allows, and a stopword list that removes everything (one
empty string).

  strings_test.py strings --kilnc PATH --kiln PATH --source-root DIR --workdir DIR [--vulkan]
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

import tools_common


def save_model(path, nodes, inputs, outputs, opset=17):
    m = helper.make_model(helper.make_graph(nodes, os.path.basename(path), inputs, outputs),
                          opset_imports=[helper.make_opsetid('', opset)])
    if opset <= onnx.defs.onnx_opset_version():  # Debian's onnx 1.12 checks opsets up to 17
        onnx.checker.check_model(m)
    onnx.save(m, path)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main() -> int:
    args = tools_common.parse_args(['strings'])
    w = args.workdir
    results = []

    def check(what, good, detail=''):
        print('%-66s %s%s' % (what, 'PASS' if good else 'FAIL', (' (%s)' % detail) if detail and not good else ''))
        results.append(good)

    # StringNormalizer (CPU only: its output size is a data symbol, which Vulkan bundles refuse)
    # and the casts (CPU, and Vulkan as host dispatches).
    norm_model, cast_model = os.path.join(w, 'norm.onnx'), os.path.join(w, 'casts.onnx')
    save_model(norm_model, [helper.make_node('StringNormalizer', ['words'], ['norm'], case_change_action='UPPER',
                                             is_case_sensitive=0, stopwords=['the', 'ÉTÉ'])],
               [helper.make_tensor_value_info('words', TensorProto.STRING, [6])],
               [helper.make_tensor_value_info('norm', TensorProto.STRING, ['k'])])
    # -x on the device (a Vulkan bundle is then heterogeneous), its text and the text read back on the host.
    save_model(cast_model, [
        helper.make_node('Neg', ['x'], ['negated']),
        helper.make_node('Cast', ['negated'], ['text'], to=TensorProto.STRING),
        helper.make_node('Cast', ['text'], ['back'], to=TensorProto.FLOAT),
        helper.make_node('Cast', ['numbers'], ['parsed'], to=TensorProto.FLOAT),
        helper.make_node('Cast', ['int_text'], ['ints'], to=TensorProto.INT64),
        helper.make_node('Cast', ['int_text'], ['bytes'], to=TensorProto.UINT8),
        helper.make_node('Cast', ['i64'], ['i64_text'], to=TensorProto.STRING),
    ], [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 5]),
        helper.make_tensor_value_info('numbers', TensorProto.STRING, [7]),
        helper.make_tensor_value_info('int_text', TensorProto.STRING, [8]),
        helper.make_tensor_value_info('i64', TensorProto.INT64, [4])],
       [helper.make_tensor_value_info('text', TensorProto.STRING, [2, 5]),
        helper.make_tensor_value_info('back', TensorProto.FLOAT, [2, 5]),
        helper.make_tensor_value_info('parsed', TensorProto.FLOAT, [7]),
        helper.make_tensor_value_info('ints', TensorProto.INT64, [8]),
        helper.make_tensor_value_info('bytes', TensorProto.UINT8, [8]),
        helper.make_tensor_value_info('i64_text', TensorProto.STRING, [4])])
    words = np.array(['The', 'café', 'été', 'crème', 'THE', 'naïve'])
    x = np.array([[0.1, -2.5, 1e-5, 3.4028235e38, 100.0], [1 / 3, -0.0, 7.0, 1e16, 12345.678]], np.float32)
    numbers = np.array(['1.5', ' -2e3 ', 'NaN', '-INF', 'abc', '0.1', '1e-45'])
    # Integers read exactly (not through a float64), saturated to the type; "100.5" is 100.
    int_text = np.array(['9223372036854775807', '-9223372036854775808', '100.5', '-7.9', '1e3',
                         '99999999999999999999', 'x', '9007199254740993'])
    i64 = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -42], np.int64)
    for name, a in (('words', words), ('x', x), ('numbers', numbers), ('int_text', int_text), ('i64', i64)):
        np.save(os.path.join(w, name + '.npy'), a)

    def compile_and_run(model, name, target, feeds):
        bundle, out = os.path.join(w, name + '.kiln'), os.path.join(w, name + '_out')
        proc = run([args.kilnc, model, '-o', bundle] + target)
        if proc.returncode == 0:
            device = ['--device', 'vulkan', '--validation'] if target else []
            inputs = []
            for f in feeds:
                inputs += ['--input', '%s=%s' % (f, os.path.join(w, f + '.npy'))]
            proc = run([args.kiln, 'run', bundle, '--output-dir', out] + inputs + device)
        if proc.returncode != 0:
            check('%s: kilnc and kiln run' % name, False, proc.stderr.strip())
            return None
        return out

    out = compile_and_run(norm_model, 'norm', [], ['words'])
    info = json.loads(run([args.kiln, 'inspect', '--json', os.path.join(w, 'norm.kiln')]).stdout or '{}')
    norm_info = (info.get('outputs') or [{}])[0]
    check('kiln inspect --json: a run-time count as shape and min_shape, the capacity',
          norm_info.get('shape') == [6] and norm_info.get('min_shape') == [1] and norm_info.get('string_bytes') == 6 * 64,
          repr(norm_info))
    if out:
        norm = np.load(os.path.join(out, 'norm.npy'))
        check('StringNormalizer drops stopwords in any case, uppercases Latin-1',
              norm.dtype.kind == 'U' and list(norm) == ['CAFÉ', 'CRÈME', 'NAÏVE'], repr(norm))
    targets = [[]] + ([['--target=vulkan']] if args.vulkan else [])
    for target in targets:
        name = 'vulkan' if target else 'cpu'
        out = compile_and_run(cast_model, 'casts_' + name, target, ['x', 'numbers', 'int_text', 'i64'])
        if not out:
            continue
        text = np.load(os.path.join(out, 'text.npy'))
        want = np.array([[str(v) for v in row] for row in -x])  # numpy's shortest text of each float32
        check('%s: float32 to string is numpy\'s str of each value' % name,
              text.shape == x.shape and np.array_equal(text, want), repr(text))
        back = np.load(os.path.join(out, 'back.npy'))
        check('%s: the text reads back to the same float32s' % name,
              np.array_equal(back, -x) and not np.signbit(back[1, 1]) and np.signbit(back[0, 0]), repr(back))
        parsed = np.load(os.path.join(out, 'parsed.npy'))
        want = np.array([1.5, -2000.0, np.nan, -np.inf, np.nan, 0.1, 1e-45], np.float32)
        check('%s: text to float32 (blanks, NaN, -INF, not a number)' % name,
              np.array_equal(parsed, want, equal_nan=True), repr(parsed))
        ints, small = np.load(os.path.join(out, 'ints.npy')), np.load(os.path.join(out, 'bytes.npy'))
        big, least = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        check('%s: text to int64 exactly, saturated' % name,
              ints.tolist() == [big, least, 100, -7, 1000, big, 0, 9007199254740993], repr(ints))
        check('%s: text to uint8, saturated' % name, small.tolist() == [255, 0, 100, 0, 255, 255, 0, 255], repr(small))
        i64_text = np.load(os.path.join(out, 'i64_text.npy'))
        check('%s: int64 to text (INT64_MIN too)' % name, list(i64_text) == [str(v) for v in i64], repr(i64_text))

    # TfIdfVectorizer over string tokens: unigrams a, b, c and the bigram (a, b), counted per row.
    tfidf = os.path.join(w, 'tfidf.onnx')
    save_model(tfidf, [helper.make_node('TfIdfVectorizer', ['tokens'], ['counts'], mode='TF', min_gram_length=1,
                                        max_gram_length=2, max_skip_count=0, ngram_counts=[0, 3],
                                        ngram_indexes=[0, 1, 2, 3], pool_strings=['a', 'b', 'c', 'a', 'b'])],
               [helper.make_tensor_value_info('tokens', TensorProto.STRING, [2, 4])],
               [helper.make_tensor_value_info('counts', TensorProto.FLOAT, [2, 4])])
    np.save(os.path.join(w, 'tokens.npy'), np.array([['a', 'b', 'a', 'c'], ['c', 'x', 'a', 'b']]))
    out = compile_and_run(tfidf, 'tfidf', [], ['tokens'])
    if out:
        counts = np.load(os.path.join(out, 'counts.npy'))
        check('TfIdfVectorizer counts string unigrams and bigrams',
              np.array_equal(counts, np.array([[2, 1, 1, 1], [1, 1, 1, 1]], np.float32)), repr(counts))

    # Opset 20's string operators: StringConcat (broadcast), StringSplit at whitespace (Unicode's too,
    # as Python's str.split) and at a multi-byte delimiter with maxsplit (the piece counts are data
    # symbols), Equal on strings. Expected values are Python's.
    ops20 = os.path.join(w, 'ops20.onnx')
    save_model(ops20, [helper.make_node('StringConcat', ['texts', 'suffix'], ['joined']),
                       helper.make_node('StringSplit', ['texts'], ['words', 'word_counts']),
                       helper.make_node('StringSplit', ['texts'], ['parts', 'part_counts'], delimiter='→',
                                        maxsplit=1),
                       helper.make_node('Equal', ['texts', 'suffix'], ['same'])],
               [helper.make_tensor_value_info('texts', TensorProto.STRING, [5]),
                helper.make_tensor_value_info('suffix', TensorProto.STRING, [1])],
               [helper.make_tensor_value_info('joined', TensorProto.STRING, [5]),
                helper.make_tensor_value_info('words', TensorProto.STRING, [5, None]),
                helper.make_tensor_value_info('word_counts', TensorProto.INT64, [5]),
                helper.make_tensor_value_info('parts', TensorProto.STRING, [5, None]),
                helper.make_tensor_value_info('part_counts', TensorProto.INT64, [5]),
                helper.make_tensor_value_info('same', TensorProto.BOOL, [5])], opset=20)
    s = ['a\u3000b  c\u2029', '', ' x→y→z ', '!', 'été\u00a0fin\u0085→']
    np.save(os.path.join(w, 'texts.npy'), np.array(s))
    np.save(os.path.join(w, 'suffix.npy'), np.array(['!']))
    out = compile_and_run(ops20, 'ops20', [], ['texts', 'suffix'])
    if out:
        def padded(pieces):
            most = max(len(p) for p in pieces)
            return [p + [''] * (most - len(p)) for p in pieces], [len(p) for p in pieces]
        got = {k: np.load(os.path.join(out, k + '.npy')) for k in
               ('joined', 'words', 'word_counts', 'parts', 'part_counts', 'same')}
        check('StringConcat broadcasts the suffix', got['joined'].tolist() == [v + '!' for v in s], repr(got['joined']))
        words, counts = padded([v.split() for v in s])
        check('StringSplit at whitespace runs (Unicode\'s too), padded',
              got['words'].tolist() == words and got['word_counts'].tolist() == counts, repr(got['words']))
        parts, counts = padded([v.split('→', 1) for v in s])
        check('StringSplit at a multi-byte delimiter, maxsplit 1',
              got['parts'].tolist() == parts and got['part_counts'].tolist() == counts, repr(got['parts']))
        check('Equal on strings, broadcast', got['same'].tolist() == [v == '!' for v in s], repr(got['same']))

    # Everything removed: one empty string.
    empty = os.path.join(w, 'empty.onnx')
    save_model(empty, [helper.make_node('StringNormalizer', ['s'], ['y'], stopwords=['a'], is_case_sensitive=1)],
               [helper.make_tensor_value_info('s', TensorProto.STRING, [3])],
               [helper.make_tensor_value_info('y', TensorProto.STRING, ['k'])])
    np.save(os.path.join(w, 's.npy'), np.array(['a', 'a', 'a']))
    bundle = os.path.join(w, 'empty.kiln')
    proc = run([args.kilnc, empty, '-o', bundle])
    proc = proc if proc.returncode else run([args.kiln, 'run', bundle, '--input', 's=' + os.path.join(w, 's.npy'),
                                             '--output-dir', os.path.join(w, 'empty_out')])
    y = np.load(os.path.join(w, 'empty_out', 'y.npy')) if proc.returncode == 0 else None
    check('every string a stopword: one empty string', y is not None and list(y) == [''], proc.stderr.strip())

    # A table larger than --string-bytes allows is refused, naming the flag.
    small = os.path.join(w, 'small.kiln')
    proc = run([args.kilnc, empty, '-o', small, '--string-bytes', '2'])
    np.save(os.path.join(w, 'long.npy'), np.array(['aaaa', 'bbbb', 'cc']))
    proc = proc if proc.returncode else run([args.kiln, 'run', small, '--input', 's=' + os.path.join(w, 'long.npy')])
    check('an input past its capacity names --string-bytes',
          proc.returncode != 0 and '--string-bytes' in proc.stderr, proc.stderr.strip())

    # What kilnc refuses, naming the node.
    concat = os.path.join(w, 'concat.onnx')
    save_model(concat, [helper.make_node('Concat', ['a', 'b'], ['y'], axis=0, name='join')],
               [helper.make_tensor_value_info('a', TensorProto.STRING, [2]),
                helper.make_tensor_value_info('b', TensorProto.STRING, [2])],
               [helper.make_tensor_value_info('y', TensorProto.STRING, [4])])
    proc = run([args.kilnc, concat, '-o', os.path.join(w, 'concat.kiln')])
    check('Concat of strings: a user error naming the node and the operators',
          proc.returncode == 1 and "'join'" in proc.stderr and 'StringNormalizer' in proc.stderr, proc.stderr.strip())
    double = os.path.join(w, 'double.onnx')
    save_model(double, [helper.make_node('Cast', ['a'], ['y'], to=TensorProto.STRING, name='spell')],
               [helper.make_tensor_value_info('a', TensorProto.DOUBLE, [2])],
               [helper.make_tensor_value_info('y', TensorProto.STRING, [2])])
    proc = run([args.kilnc, double, '-o', os.path.join(w, 'double.kiln')])
    check('float64 to string: a user error saying what to cast to',
          proc.returncode == 1 and "'spell'" in proc.stderr and 'float64' in proc.stderr, proc.stderr.strip())

    failed = results.count(False)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
