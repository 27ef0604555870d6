#!/usr/bin/env node
// Times an ONNX model with ONNX Runtime (onnxruntime-node, CPU execution
// provider), the counterpart of `kiln bench` for bench/run_bench.py.
//
//   node bench/ort_bench.js MODEL.onnx [--threads N] [--iterations K] [--warmup W]
//        [--ort-dir tests/ort]
//
// Session options: intraOpNumThreads = N, interOpNumThreads = 1,
// graphOptimizationLevel 'all', executionMode 'sequential', CPU EP.
// Every float input is filled once with seeded values in [-1, 1): the same
// generator (xorshift64*) and seed as `kiln bench`, so a model with one float
// input gets exactly kiln's input; integer inputs get [0, 10), bools 0/1. Symbolic
// dimensions are not supported (the benchmark models have static shapes).
// W untimed runs, then K timed runs of session.run(); each run is timed on its
// own with process.hrtime. The last line is
//   median_ms=X min_ms=Y mean_ms=Z iterations=K
// Exit status 0, or 1 with "ort_bench: error: ..." on stderr.
'use strict';

const path = require('path');

function fail(msg) {
  const e = new Error(msg);
  e.benchUserError = true;
  throw e;
}

function parseArgs(argv) {
  const opts = { model: null, threads: 1, iterations: 10, warmup: 2,
                 ortDir: path.join(__dirname, '..', 'tests', 'ort') };
  const count = (name, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) fail(`${name} needs an integer >= ${min}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--threads') opts.threads = count(a, argv[++i], 1);
    else if (a === '--iterations') opts.iterations = count(a, argv[++i], 1);
    else if (a === '--warmup') opts.warmup = count(a, argv[++i], 0);
    else if (a === '--ort-dir') {
      opts.ortDir = argv[++i];
      if (!opts.ortDir) fail('--ort-dir needs a folder');
    } else if (a.startsWith('-')) fail(`unknown option '${a}'`);
    else if (opts.model === null) opts.model = a;
    else fail(`unexpected argument '${a}'`);
  }
  if (opts.model === null) fail('missing MODEL.onnx');
  return opts;
}

// xorshift64*, the same generator and seed as `kiln bench` (tools/kiln/cmd_bench.cpp).
function makeRandom() {
  let state = 0x9E3779B97F4A7C15n;
  const mask = (1n << 64n) - 1n;
  return () => {
    state ^= state >> 12n;
    state = (state ^ (state << 25n)) & mask;
    state ^= state >> 27n;
    const r = (state * 2685821657736338717n) & mask;
    return Number(r >> 11n) / 9007199254740992.0;  // [0, 1)
  };
}

const TYPED = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int8: Int8Array,
  uint8: Uint8Array, bool: Uint8Array, int64: BigInt64Array,
};

function makeFeed(ort, name, meta, random) {
  if (!meta || !meta.isTensor) fail(`input '${name}' is not a tensor`);
  const dims = meta.shape.map((d) => {
    if (typeof d !== 'number' || d < 0) fail(`input '${name}' has a symbolic dimension '${d}'`);
    return d;
  });
  const Ctor = TYPED[meta.type];
  if (!Ctor) fail(`input '${name}' has unsupported type '${meta.type}'`);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Ctor(n);
  for (let i = 0; i < n; i++) {
    const u = random();
    if (meta.type === 'float32' || meta.type === 'float64') data[i] = 2 * u - 1;
    else if (meta.type === 'bool') data[i] = u < 0.5 ? 0 : 1;
    else if (meta.type === 'int64') data[i] = BigInt(Math.floor(u * 10));
    else data[i] = Math.floor(u * 10);
  }
  return new ort.Tensor(meta.type, data, dims);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : 0.5 * (s[m - 1] + s[m]);
}

async function main(argv) {
  if (argv.includes('-h') || argv.includes('--help')) {
    process.stdout.write('usage: node ort_bench.js MODEL.onnx [--threads N] [--iterations K] [--warmup W] ' +
                         '[--ort-dir DIR]\n');
    return 0;
  }
  const opts = parseArgs(argv);
  let ort;
  try {
    ort = require(path.resolve(opts.ortDir, 'node_modules', 'onnxruntime-node'));
  } catch (err) {
    fail(`cannot load onnxruntime-node from ${opts.ortDir} (${err.message.split('\n')[0]}); ` +
         "run 'tools/setup.sh --with-tests' or 'npm ci --ignore-scripts' in tests/ort");
  }
  let session;
  try {
    session = await ort.InferenceSession.create(opts.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
    });
  } catch (err) {
    fail(`cannot load model ${opts.model}: ${err.message}`);
  }
  const random = makeRandom();
  const feeds = {};
  const metadata = session.inputMetadata;
  session.inputNames.forEach((name, i) => {
    const meta = Array.isArray(metadata) ? metadata[i] : metadata[name];
    feeds[name] = makeFeed(ort, name, meta, random);
    process.stdout.write(`input ${name}: ${meta.type}[${meta.shape.join(', ')}]\n`);
  });
  let version = '?';
  try {
    version = require(path.resolve(opts.ortDir, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  } catch (err) { /* informational only */ }
  process.stdout.write(`onnxruntime-node ${version} threads=${opts.threads} ` +
                       `warmup=${opts.warmup} iterations=${opts.iterations}\n`);
  const run = async () => {
    try {
      return await session.run(feeds);
    } catch (err) {
      fail(`inference failed: ${err.message}`);
    }
  };
  for (let i = 0; i < opts.warmup; i++) await run();
  const times = [];
  for (let i = 0; i < opts.iterations; i++) {
    const start = process.hrtime.bigint();
    await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const min = Math.min(...times);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  process.stdout.write(`median_ms=${median(times).toFixed(4)} min_ms=${min.toFixed(4)} ` +
                       `mean_ms=${mean.toFixed(4)} iterations=${opts.iterations}\n`);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  }, (err) => {
    process.stderr.write(`ort_bench: error: ${err.benchUserError ? err.message : (err.stack || err)}\n`);
    process.exitCode = 1;
  });
}
