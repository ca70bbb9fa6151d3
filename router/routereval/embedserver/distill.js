// Distils Universal Sentence Encoder lite into the router's static table, the
// way model2vec distils a sentence transformer (Tulkens and van Dongen 2024):
//
//  1. embed every SentencePiece piece of the model's vocabulary on its own
//     with the real model (the piece's id straight into the graph, so the
//     vector is the model's, not a re-tokenization's);
//  2. centre the vectors and keep their first D principal components (PCA);
//  3. weight each piece by SIF, a / (a + p), with p the piece's unigram
//     probability from the vocabulary itself (model2vec estimates p from
//     the rank by Zipf's law; a SentencePiece vocabulary carries it);
//  4. quantize each row to int8 with its own scale, and write it gzipped
//     with the vocabulary, which the router's tokenizer needs.
//
// At run time the router tokenizes a text with the same vocabulary (unigram
// Viterbi) and sums its pieces' rows. Usage:
//
//   node distill.js [--dims 256] [--sif 1e-4] [--out ../../model/use_lite.bin.gz]
//
// The output is deterministic for a given model, backend and options.
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { load } = require("./model");

function flag(name, def) {
  const i = process.argv.indexOf("--" + name);
  return i > 0 ? process.argv[i + 1] : def;
}

const dims = Number(flag("dims", 256));
const sif = Number(flag("sif", 1e-4));
const out = path.resolve(__dirname, flag("out", "../../model/use_lite.bin.gz"));
// Pieces 0–5 are <unk>, <s>, </s> and three spare ids: the tokenizer never
// emits the last five, and <unk> carries no meaning. They get zero rows.
const reserved = 6;

// jacobi returns the eigenvalues and eigenvectors (columns of v) of the
// symmetric n×n matrix a (row-major Float64Array, destroyed), by cyclic
// Jacobi rotations until the off-diagonal mass is negligible.
function jacobi(a, n) {
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q];
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) values[i] = a[i * n + i];
  return { values, vectors: v };
}

async function main() {
  const model = await load();
  const vocab = model.vocabulary;
  const n = vocab.length;
  const raw = [];
  for (let i = 0; i < n; i++) raw.push(null);
  const batch = 256;
  for (let i = reserved; i < n; i += batch) {
    const ids = [];
    for (let j = i; j < Math.min(n, i + batch); j++) ids.push(j);
    const rows = await model.embedIds(ids);
    rows.forEach((r, j) => (raw[ids[j]] = Float64Array.from(r)));
    process.stderr.write(`\rembedded ${Math.min(n, i + batch)}/${n} pieces`);
  }
  process.stderr.write("\n");
  const d = raw[reserved].length;
  const rawOut = flag("raw", "");
  if (rawOut) {
    // The model's own vectors, for experiments: n rows of d float32.
    const buf = Buffer.alloc(n * d * 4);
    for (let i = reserved; i < n; i++) for (let k = 0; k < d; k++) buf.writeFloatLE(raw[i][k], (i * d + k) * 4);
    fs.writeFileSync(rawOut, buf);
  }

  // PCA over the embedded pieces.
  const mean = new Float64Array(d);
  const m = n - reserved;
  for (let i = reserved; i < n; i++) for (let k = 0; k < d; k++) mean[k] += raw[i][k] / m;
  const cov = new Float64Array(d * d);
  for (let i = reserved; i < n; i++) {
    const x = raw[i].map((v, k) => v - mean[k]);
    for (let p = 0; p < d; p++) {
      const xp = x[p] / m;
      for (let q = p; q < d; q++) cov[p * d + q] += xp * x[q];
    }
  }
  for (let p = 0; p < d; p++) for (let q = 0; q < p; q++) cov[p * d + q] = cov[q * d + p];
  const { values, vectors } = jacobi(cov, d);
  const order = [...values.keys()].sort((x, y) => values[y] - values[x]).slice(0, Math.min(dims, d));
  const total = values.reduce((s, v) => s + v, 0);
  const kept = order.reduce((s, i) => s + values[i], 0);
  process.stderr.write(`PCA: ${order.length} of ${d} dimensions keep ${(100 * kept / total).toFixed(1)}% of the variance\n`);

  // SIF weights from the vocabulary's unigram probabilities.
  let z = 0;
  for (let i = reserved; i < n; i++) z += Math.exp(vocab[i][1]);

  const D = order.length;
  const parts = [];
  const head = Buffer.alloc(12);
  head.write("USE1", 0, "ascii");
  head.writeUInt32LE(n, 4);
  head.writeUInt32LE(D, 8);
  parts.push(head);
  for (let i = 0; i < n; i++) {
    const piece = Buffer.from(vocab[i][0], "utf8");
    const rec = Buffer.alloc(1 + piece.length + 4);
    rec.writeUInt8(piece.length, 0);
    piece.copy(rec, 1);
    rec.writeFloatLE(vocab[i][1], 1 + piece.length);
    parts.push(rec);
  }
  for (let i = 0; i < n; i++) {
    const row = new Float64Array(D);
    if (i >= reserved) {
      const w = sif / (sif + Math.exp(vocab[i][1]) / z);
      for (let c = 0; c < D; c++) {
        let s = 0;
        const e = order[c];
        for (let k = 0; k < d; k++) s += (raw[i][k] - mean[k]) * vectors[k * d + e];
        row[c] = s * w;
      }
    }
    let big = 0;
    for (const v of row) big = Math.max(big, Math.abs(v));
    const scale = big / 127;
    const rec = Buffer.alloc(4 + D);
    rec.writeFloatLE(scale, 0);
    for (let c = 0; c < D; c++) rec.writeInt8(scale > 0 ? Math.round(row[c] / scale) : 0, 4 + c);
    parts.push(rec);
  }
  const gz = zlib.gzipSync(Buffer.concat(parts), { level: 9 });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, gz);
  process.stderr.write(`wrote ${out}: ${n} pieces × ${D} dimensions, ${(gz.length / 1048576).toFixed(2)} MiB\n`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
