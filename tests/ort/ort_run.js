#!/usr/bin/env node
// Reference runner for Kiln's end-to-end tests: runs an ONNX model with
// ONNX Runtime (onnxruntime-node, CPU execution provider) and writes every
// output as OUT_DIR/<output name>.npy, with the same file naming as
// `kiln run` ('/' in a name becomes '_').
//
//   node ort_run.js MODEL.onnx OUT_DIR NAME=IN.npy [NAME=IN.npy ...]
//
// Exit status: 0 on success; 1 with "ort_run: error: ..." on stderr otherwise.
// Install the dependency first: `npm ci --ignore-scripts` in this directory
// (tools/setup.sh --with-tests does it).
'use strict';

const fs = require('fs');
const path = require('path');

function fail(msg) {
  const e = new Error(msg);
  e.kilnUserError = true;
  throw e;
}

// ---------------------------------------------------------------------------
// .npy reading and writing (format versions 1.0/2.0/3.0 read, 1.0 written;
// little-endian, C order only).

const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

// descr -> ORT tensor type, element size, typed-array constructor
const NPY_DTYPES = {
  '<f4': { ort: 'float32', size: 4, Array: Float32Array },
  '<f8': { ort: 'float64', size: 8, Array: Float64Array },
  '<i8': { ort: 'int64', size: 8, Array: BigInt64Array },
  '<i4': { ort: 'int32', size: 4, Array: Int32Array },
  '|i1': { ort: 'int8', size: 1, Array: Int8Array },
  '<i1': { ort: 'int8', size: 1, Array: Int8Array },
  '|u1': { ort: 'uint8', size: 1, Array: Uint8Array },
  '<u1': { ort: 'uint8', size: 1, Array: Uint8Array },
  '|b1': { ort: 'bool', size: 1, Array: Uint8Array },
};
const ORT_TO_DESCR = {
  float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4',
  int8: '|i1', uint8: '|u1', bool: '|b1',
};

function parseNpyHeader(header, file) {
  // e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) {
    fail(`${file}: malformed .npy header: ${JSON.stringify(header.trim())}`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0)
    .map((s) => {
      if (!/^\d+$/.test(s)) fail(`${file}: bad dimension '${s}' in .npy shape`);
      return Number(s);
    });
  return { descr: descr[1], fortranOrder: fortran[1] === 'True', dims };
}

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (err) {
    fail(`cannot read ${file}: ${err.message}`);
  }
  if (buf.length < 10 || !buf.subarray(0, 6).equals(NPY_MAGIC)) {
    fail(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) fail(`${file}: truncated .npy header`);
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    fail(`${file}: unsupported .npy format version ${major}.${buf[7]}`);
  }
  if (headerStart + headerLen > buf.length) fail(`${file}: truncated .npy header`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', headerStart, headerStart + headerLen);
  const { descr, fortranOrder, dims } = parseNpyHeader(header, file);
  const dt = NPY_DTYPES[descr];
  if (!dt) {
    fail(`${file}: unsupported .npy dtype '${descr}' (supported: float32, float64, int64, ` +
         'int32, int8, uint8, bool; little-endian)');
  }
  if (fortranOrder && dims.filter((d) => d > 1).length > 1) {
    fail(`${file}: Fortran-order arrays are not supported (save with np.ascontiguousarray)`);
  }
  const count = dims.reduce((a, b) => a * b, 1);
  const dataStart = headerStart + headerLen;
  const expected = count * dt.size;
  if (buf.length - dataStart !== expected) {
    fail(`${file}: data size ${buf.length - dataStart} bytes does not match shape ` +
         `[${dims.join(', ')}] of ${descr} (${expected} bytes)`);
  }
  // Copy into a fresh, aligned ArrayBuffer (typed arrays need alignment).
  const ab = new ArrayBuffer(expected);
  new Uint8Array(ab).set(buf.subarray(dataStart, dataStart + expected));
  return { type: dt.ort, dims, data: new dt.Array(ab) };
}

function writeNpy(file, type, dims, data) {
  const descr = ORT_TO_DESCR[type];
  if (!descr) fail(`cannot write output of type '${type}' as .npy`);
  const shapeStr = dims.length === 0 ? '()' :
    dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // Pad so that magic(6)+version(2)+len(2)+header+'\n' is a multiple of 64.
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  if (header.length > 65535) fail('npy header too long');
  const pre = Buffer.alloc(10);
  NPY_MAGIC.copy(pre, 0);
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let bytes;
  if (type === 'bool') {
    bytes = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  } else {
    bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), bytes]));
}

function sanitizeName(name) {
  return name.replace(/\//g, '_');
}

// ---------------------------------------------------------------------------

async function main(argv) {
  if (argv.length < 2 || argv.includes('-h') || argv.includes('--help')) {
    process.stderr.write('usage: node ort_run.js MODEL.onnx OUT_DIR NAME=IN.npy [NAME=IN.npy ...]\n');
    return argv.length < 2 ? 1 : 0;
  }
  const [modelPath, outDir, ...inputArgs] = argv;

  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (err) {
    fail(`cannot load onnxruntime-node (${err.message.split('\n')[0]}); ` +
         `run 'npm ci --ignore-scripts' in ${__dirname} or 'tools/setup.sh --with-tests'`);
  }
  if (!fs.existsSync(modelPath)) fail(`model not found: ${modelPath}`);

  const feeds = {};
  for (const arg of inputArgs) {
    const eq = arg.indexOf('=');
    if (eq <= 0) fail(`bad input argument '${arg}' (expected NAME=FILE.npy)`);
    const name = arg.slice(0, eq);
    const t = readNpy(arg.slice(eq + 1));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }

  let session;
  try {
    session = await ort.InferenceSession.create(modelPath, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      // Exact int8 products on x86-64 hosts without VNNI (the option
      // session.x64quantprecision; decision 64): otherwise ONNX Runtime's u8s8
      // kernels saturate int16 pair sums there and a quantized model's
      // reference drifts several steps.
      extra: { session: { x64quantprecision: '1' } },
    });
  } catch (err) {
    fail(`cannot load model ${modelPath}: ${err.message}`);
  }
  for (const name of Object.keys(feeds)) {
    if (!session.inputNames.includes(name)) {
      fail(`model has no input '${name}' (model inputs: ${session.inputNames.join(', ')})`);
    }
  }
  for (const name of session.inputNames) {
    if (!(name in feeds)) fail(`missing input '${name}' (model inputs: ${session.inputNames.join(', ')})`);
  }

  let results;
  try {
    results = await session.run(feeds);
  } catch (err) {
    fail(`inference failed: ${err.message}`);
  }
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    const file = path.join(outDir, sanitizeName(name) + '.npy');
    writeNpy(file, t.type, t.dims, t.data);
    process.stdout.write(`${name}: ${t.type}[${t.dims.join(', ')}] -> ${file}\n`);
  }
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  }, (err) => {
    process.stderr.write(`ort_run: error: ${err.kilnUserError ? err.message : (err.stack || err)}\n`);
    process.exitCode = 1;
  });
}

module.exports = { readNpy, writeNpy, sanitizeName };
