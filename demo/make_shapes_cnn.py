#!/usr/bin/python3
"""Builds Kiln's demo model: a small CNN that tells circles, squares, triangles and crosses apart.

  /usr/bin/python3 demo/make_shapes_cnn.py [--out-dir demo] [--epochs N]

Procedurally generates 64x64 RGB images (random colours, positions, sizes,
rotations and noise), trains a ~25k-parameter CNN on the CPU (well under a
minute on two cores), prints its accuracy on held-out images, and writes:

  shapes_cnn.onnx          opset 13; input `input` float32 [1, 3, 64, 64] (RGB in [0, 1]),
                           output `logits` float32 [1, 4]
  labels.txt               one class name per line, in logit order
  example_triangle.npy     float32 [1, 3, 64, 64]: a generated triangle

Everything is seeded; run with Debian's /usr/bin/python3 (python3-torch, python3-onnx).
The outputs are committed, so the demo does not need PyTorch.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LABELS = ['circle', 'square', 'triangle', 'cross']
SIZE = 64


def draw(rng: np.random.Generator, label: int) -> np.ndarray:
    """One image, float32 [3, SIZE, SIZE] in [0, 1]."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) + 0.5
    r = rng.uniform(9.0, 20.0)                          # "radius" of the shape
    cx, cy = rng.uniform(r + 2, SIZE - r - 2, size=2)
    theta = rng.uniform(0, 2 * np.pi)
    c, s = np.cos(theta), np.sin(theta)
    u = (xx - cx) * c + (yy - cy) * s                   # rotated coordinates
    v = -(xx - cx) * s + (yy - cy) * c
    if label == 0:    # circle
        mask = u * u + v * v <= r * r
    elif label == 1:  # square
        h = r * 0.8
        mask = (np.abs(u) <= h) & (np.abs(v) <= h)
    elif label == 2:  # equilateral triangle with circumradius r
        mask = np.ones_like(u, dtype=bool)
        for k in range(3):
            phi = 2 * np.pi * k / 3
            nx, ny = np.cos(phi), np.sin(phi)           # outward normals; inradius r/2
            mask &= (u * nx + v * ny) <= r / 2
    else:             # cross
        w = r * 0.3
        mask = ((np.abs(u) <= r) & (np.abs(v) <= w)) | ((np.abs(u) <= w) & (np.abs(v) <= r))
    # Colours with enough contrast between shape and background.
    while True:
        bg = rng.uniform(0, 1, size=3)
        fg = rng.uniform(0, 1, size=3)
        if np.abs(fg - bg).sum() > 0.6:
            break
    img = np.where(mask[None], fg[:, None, None], bg[:, None, None])
    # Soft edges, shading and noise.
    img = img + rng.uniform(-0.1, 0.1) * (xx / SIZE - 0.5)[None]
    img = img + rng.normal(0, rng.uniform(0.02, 0.08), size=img.shape)
    return np.clip(img, 0, 1).astype(np.float32)


def make_dataset(rng: np.random.Generator, n: int):
    labels = rng.integers(0, len(LABELS), size=n)
    images = np.stack([draw(rng, int(l)) for l in labels])
    return images, labels.astype(np.int64)


class ShapesCNN(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 16, 32, 48, 64]
        self.convs = nn.ModuleList(nn.Conv2d(chans[i], chans[i + 1], 3, padding=1, bias=False)
                                   for i in range(len(chans) - 1))
        self.bns = nn.ModuleList(nn.BatchNorm2d(c) for c in chans[1:])
        self.fc = nn.Linear(chans[-1], len(LABELS))

    def forward(self, x):
        for conv, bn in zip(self.convs, self.bns):
            x = F.max_pool2d(F.relu(bn(conv(x))), 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def accuracy(model, images, labels) -> float:
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(images)).argmax(1).numpy()
    return float((pred == labels).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out-dir', default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument('--epochs', type=int, default=8)
    parser.add_argument('--train-size', type=int, default=4000)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)

    t0 = time.monotonic()
    train_x, train_y = make_dataset(rng, args.train_size)
    test_x, test_y = make_dataset(rng, 1000)
    print('generated %d training and %d test images in %.1f s'
          % (len(train_x), len(test_x), time.monotonic() - t0), flush=True)

    model = ShapesCNN()
    nparams = sum(p.numel() for p in model.parameters())
    print('ShapesCNN: %d parameters' % nparams)
    assert nparams < 100_000

    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = 32
    steps_per_epoch = (len(train_x) + batch - 1) // batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, epochs=args.epochs,
                                                steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(1)
    xs, ys = torch.from_numpy(train_x), torch.from_numpy(train_y)
    t0 = time.monotonic()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(xs), generator=gen)
        total = 0.0
        for i in range(steps_per_epoch):
            idx = perm[i * batch:(i + 1) * batch]
            x = xs[idx]
            if epoch % 2 == 1:
                x = torch.flip(x, dims=[3])  # cheap augmentation
            loss = F.cross_entropy(model(x), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * len(idx)
        print('epoch %d: loss %.4f, test accuracy %.1f%% (%.0f s)'
              % (epoch + 1, total / len(xs), 100 * accuracy(model, test_x, test_y), time.monotonic() - t0),
              flush=True)
    acc = accuracy(model, test_x, test_y)
    print('final test accuracy: %.1f%% on %d held-out images' % (100 * acc, len(test_x)))

    model.eval()
    os.makedirs(args.out_dir, exist_ok=True)
    onnx_path = os.path.join(args.out_dir, 'shapes_cnn.onnx')
    with torch.no_grad():
        torch.onnx.export(model, torch.zeros(1, 3, SIZE, SIZE), onnx_path, opset_version=13,
                          input_names=['input'], output_names=['logits'], do_constant_folding=True)
    with open(os.path.join(args.out_dir, 'labels.txt'), 'w') as f:
        f.write('\n'.join(LABELS) + '\n')

    # The example: the first generated triangle the model gets right with a clear margin.
    ex_rng = np.random.default_rng(2024)
    for _ in range(100):
        img = draw(ex_rng, LABELS.index('triangle'))[None]
        with torch.no_grad():
            p = torch.softmax(model(torch.from_numpy(img)), 1)[0]
        if int(p.argmax()) == LABELS.index('triangle') and float(p.max()) > 0.9:
            break
    np.save(os.path.join(args.out_dir, 'example_triangle.npy'), img.astype(np.float32))
    print('example_triangle.npy: p(triangle) = %.3f' % float(p[LABELS.index('triangle')]))
    for name in ('shapes_cnn.onnx', 'labels.txt', 'example_triangle.npy'):
        print('wrote %s (%d bytes)' % (os.path.join(args.out_dir, name),
                                       os.path.getsize(os.path.join(args.out_dir, name))))
    return 0 if acc >= 0.9 else 1


if __name__ == '__main__':
    sys.exit(main())
