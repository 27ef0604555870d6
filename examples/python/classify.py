#!/usr/bin/env python3
"""Classifies an image with Kiln from Python: compiles the demo model with
kiln.compile (or loads a bundle), runs it on the demo image and prints the
top class (docs/python.md).

    python examples/python/classify.py                      # compiles demo/shapes_cnn.onnx
    python examples/python/classify.py --bundle demo.kiln   # an existing bundle
    python examples/python/classify.py --save demo.kiln     # compile, keep the bundle

Needs the package (pip install ., or PYTHONPATH=build/python) and numpy.
"""

import argparse
import os
import sys

import numpy as np

import kiln

DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "demo")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onnx", default=os.path.join(DEMO, "shapes_cnn.onnx"), help="ONNX model to compile")
    parser.add_argument("--bundle", help="a compiled bundle to load instead of compiling --onnx")
    parser.add_argument("--save", help="write the compiled bundle here")
    parser.add_argument("--image", default=os.path.join(DEMO, "example_triangle.npy"),
                        help="the input, a .npy array of the model's input shape")
    parser.add_argument("--labels", default=os.path.join(DEMO, "labels.txt"), help="class names, one a line")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=3, help="how many classes to list")
    args = parser.parse_args(argv)

    if args.bundle:
        bundle = args.bundle
    else:
        bundle = kiln.compile(args.onnx, args.save)  # bytes, or the path it was written to
    with open(args.labels) as f:
        labels = [line.strip() for line in f if line.strip()]
    image = np.load(args.image)

    try:
        with kiln.Model.load(bundle) as model, model.session(threads=args.threads) as session:
            scores = session.run({model.inputs[0].name: image})[model.outputs[0].name]
    except kiln.Error as e:
        print("classify.py: %s (%s)" % (e, e.code), file=sys.stderr)
        return 1

    scores = scores.reshape(-1)
    order = np.argsort(-scores)
    print("top class: %s" % labels[order[0]])
    for i in order[:args.top]:
        print("  %-10s %8.3f" % (labels[i], scores[i]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
