// The HF → GGUF converter's pieces, without a model: the WordPiece vocabulary, the tensor mapping, the
// config checks, the safetensors reader, and the keep/reuse/reconvert rule on a tiny synthetic BERT.

import assert from "node:assert/strict";
import {mkdtemp, readFile, rm, stat, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {readGgufMetadata} from "../../../../src/models/gguf-writer.ts";
import {ggmlDims, mapBertTensorName, parseBertConfig, PoolingType, requiredBertTensors} from "../../../../src/models/hf-convert/bert.ts";
import {ensureConverted, inspectCheckpoint} from "../../../../src/models/hf-convert/convert.ts";
import {encodeSafetensors, halfToFloat, SafetensorsFile} from "../../../../src/models/hf-convert/safetensors.ts";
import {buildBertVocab, phantomSpelling, TokenType} from "../../../../src/models/hf-convert/vocab.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";

const BERT_CONFIG = {architectures: ["BertModel"], model_type: "bert", hidden_size: 8, num_hidden_layers: 1, num_attention_heads: 2,
  intermediate_size: 16, max_position_embeddings: 16, type_vocab_size: 2, vocab_size: 12, layer_norm_eps: 1e-12, hidden_act: "gelu"};

const TOKENIZER = {
  model: {type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
    vocab: {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "hello": 5, "world": 6, "##s": 7, "the": 8, ",": 9}},
  added_tokens: [0, 1, 2, 3, 4].map((id) => ({id, content: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"][id], special: true})),
};

/** A tiny, complete BERT checkpoint (random weights; conversion never runs it). */
function tinyWeights(classifier: boolean, seed = 1): Buffer {
  let s = seed;
  const rand = (n: number) => Float32Array.from({length: n}, () => ((s = (s * 16807) % 2147483647) / 2147483647) - 0.5);
  const h = 8, ff = 16;
  const p = classifier ? "bert." : "";
  const t: Record<string, {shape: number[]; data: Float32Array}> = {
    [`${p}embeddings.word_embeddings.weight`]: {shape: [12, h], data: rand(12 * h)},
    [`${p}embeddings.position_embeddings.weight`]: {shape: [16, h], data: rand(16 * h)},
    [`${p}embeddings.token_type_embeddings.weight`]: {shape: [2, h], data: rand(2 * h)},
    [`${p}embeddings.LayerNorm.weight`]: {shape: [h], data: rand(h)},
    [`${p}embeddings.LayerNorm.bias`]: {shape: [h], data: rand(h)},
    [`${p}pooler.dense.weight`]: {shape: [h, h], data: rand(h * h)},
    [`${p}pooler.dense.bias`]: {shape: [h], data: rand(h)},
  };
  const layer = `${p}encoder.layer.0.`;
  for (const [name, shape] of [["attention.self.query", [h, h]], ["attention.self.key", [h, h]], ["attention.self.value", [h, h]],
    ["attention.output.dense", [h, h]], ["attention.output.LayerNorm", [h]], ["intermediate.dense", [ff, h]], ["output.dense", [h, ff]],
    ["output.LayerNorm", [h]]] as const) {
    t[`${layer}${name}.weight`] = {shape: [...shape], data: rand(shape.reduce((a, b) => a * b, 1))};
    t[`${layer}${name}.bias`] = {shape: [shape[0]], data: rand(shape[0])};
  }
  if (classifier) {
    t["classifier.weight"] = {shape: [2, h], data: rand(2 * h)};
    t["classifier.bias"] = {shape: [2], data: rand(2)};
  }
  return encodeSafetensors(t);
}

const dirs: string[] = [];
async function checkpoint(classifier = false): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-hf-convert-"));
  dirs.push(dir);
  const config = classifier ? {...BERT_CONFIG, architectures: ["BertForSequenceClassification"], id2label: {0: "NO", 1: "YES"}} : BERT_CONFIG;
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(TOKENIZER));
  await writeFile(join(dir, "model.safetensors"), tinyWeights(classifier));
  return dir;
}
after(async () => {
  for (const d of dirs) await rm(d, {recursive: true, force: true});
});

describe("WordPiece vocabulary", () => {
  test("phantom-space spelling: word starts get U+2581, ## continuations lose ##, control tokens stay", () => {
    assert.equal(phantomSpelling("hello", TokenType.NORMAL), "\u2581hello");
    assert.equal(phantomSpelling("##s", TokenType.NORMAL), "s");
    assert.equal(phantomSpelling("[CLS]", TokenType.CONTROL), "[CLS]");
  });

  test("every id up to vocab_size, gaps as unused [PAD<i>], specials as control tokens with their ids", () => {
    const v = buildBertVocab(TOKENIZER, 12);
    assert.equal(v.tokens.length, 12);
    assert.deepEqual(v.tokens.slice(0, 10), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\u2581hello", "\u2581world", "s", "\u2581the", "\u2581,"]);
    assert.deepEqual(v.tokens.slice(10), ["[PAD10]", "[PAD11]"]);
    assert.deepEqual(v.types, [3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 5, 5]);
    assert.deepEqual(v.special, {cls: 2, sep: 3, unk: 1, pad: 0, mask: 4});
  });

  test("a non-WordPiece tokenizer and an id past vocab_size are refused, saying what was found", () => {
    assert.throws(() => buildBertVocab({model: {type: "BPE", vocab: {}}}, 10), /holds a BPE tokenizer; a BERT WordPiece tokenizer is needed/);
    assert.throws(() => buildBertVocab(TOKENIZER, 9), /token id 9 but config.json's vocab_size is 9/);
  });
});

describe("tensor mapping", () => {
  test("HF BERT names map to llama.cpp's bert names", () => {
    const cases: [string, string | null][] = [
      ["embeddings.word_embeddings.weight", "token_embd.weight"],
      ["bert.embeddings.position_embeddings.weight", "position_embd.weight"],
      ["embeddings.token_type_embeddings.weight", "token_types.weight"],
      ["embeddings.LayerNorm.gamma", "token_embd_norm.weight"],
      ["embeddings.LayerNorm.beta", "token_embd_norm.bias"],
      ["encoder.layer.3.attention.self.query.weight", "blk.3.attn_q.weight"],
      ["encoder.layer.3.attention.self.key.bias", "blk.3.attn_k.bias"],
      ["encoder.layer.3.attention.self.value.weight", "blk.3.attn_v.weight"],
      ["encoder.layer.3.attention.output.dense.weight", "blk.3.attn_output.weight"],
      ["encoder.layer.3.attention.output.LayerNorm.weight", "blk.3.attn_output_norm.weight"],
      ["encoder.layer.3.intermediate.dense.weight", "blk.3.ffn_up.weight"],
      ["encoder.layer.3.output.dense.bias", "blk.3.ffn_down.bias"],
      ["encoder.layer.3.output.LayerNorm.bias", "blk.3.layer_output_norm.bias"],
      ["embeddings.position_ids", null],
      ["cls.predictions.bias", null],
      ["pooler.dense.weight", null],
      ["classifier.weight", null],
    ];
    for (const [hf, gguf] of cases) assert.equal(mapBertTensorName(hf, false), gguf, hf);
  });

  test("a classifier keeps the pooler as cls and the head as cls.output (llama.cpp's RANK head)", () => {
    assert.equal(mapBertTensorName("bert.pooler.dense.weight", true), "cls.weight");
    assert.equal(mapBertTensorName("pooler.dense.bias", true), "cls.bias");
    assert.equal(mapBertTensorName("classifier.weight", true), "cls.output.weight");
    assert.equal(mapBertTensorName("classifier.bias", true), "cls.output.bias");
  });

  test("ggml dims are the PyTorch shape reversed", () => {
    assert.deepEqual(ggmlDims([30522, 384]), [384, 30522]);
    assert.deepEqual(ggmlDims([384]), [384]);
  });
});

describe("config checks", () => {
  test("a classifier needs id2label in order; other architectures are refused naming them", () => {
    const c = parseBertConfig({...BERT_CONFIG, architectures: ["BertForSequenceClassification"], id2label: {1: "B", 0: "A"}});
    assert.deepEqual(c.labels, ["A", "B"]);
    assert.throws(() => parseBertConfig({...BERT_CONFIG, architectures: ["BertForSequenceClassification"]}), /needs id2label/);
    assert.throws(() => parseBertConfig({...BERT_CONFIG, architectures: ["LlamaForCausalLM"], model_type: "llama"}),
      /describes LlamaForCausalLM \(model_type llama\); a BERT checkpoint/);
    assert.equal(requiredBertTensors(parseBertConfig(BERT_CONFIG), false).length, 4 + 8);
  });
});

describe("safetensors", () => {
  test("F32 round trip, F16 widening, and a truncated file refused", () => {
    const buf = encodeSafetensors({a: {shape: [2, 2], data: Float32Array.from([1, -2, 0.5, 3])}});
    assert.deepEqual(Array.from(SafetensorsFile.parse(buf).float32("a")), [1, -2, 0.5, 3]);
    assert.equal(halfToFloat(0x3c00), 1);
    assert.equal(halfToFloat(0xc000), -2);
    assert.equal(halfToFloat(0x0001), 2 ** -24);
    assert.throws(() => SafetensorsFile.parse(buf.subarray(0, buf.length - 1)), /truncated/);
  });
});

describe("keep, reuse, reconvert", () => {
  test("first start converts, the second reuses (file untouched), a changed checkpoint reconverts", async () => {
    const dir = await checkpoint();
    const target = join(dir, "out.gguf");
    const logger = createMemoryLogger();
    const first = await ensureConverted(dir, {name: "tiny", target, logger, progress: "lines"});
    assert.equal(first.outcome, "converted");
    assert.equal(first.info.kind, "embedding");
    const md = (await readGgufMetadata(target)).metadata;
    assert.equal(md.get("general.architecture")?.value, "bert");
    assert.equal(md.get("bert.pooling_type")?.value, PoolingType.CLS, "a plain BertModel pools the [CLS] state");
    const mtime = (await stat(target)).mtimeMs;
    const second = await ensureConverted(dir, {name: "tiny", target, logger, progress: "lines"});
    assert.equal(second.outcome, "reused");
    assert.equal((await stat(target)).mtimeMs, mtime);
    assert.ok(logger.lines.some((l) => l.includes("converted model reused")));
    await writeFile(join(dir, "model.safetensors"), tinyWeights(false, 2));
    const third = await ensureConverted(dir, {name: "tiny", target, logger, progress: "lines"});
    assert.equal(third.outcome, "converted");
    assert.ok(logger.lines.some((l) => l.includes("model converted") && l.includes("checkpoint changed")));
  });

  test("a classifier gets RANK pooling and its labels; a truncated checkpoint is refused", async () => {
    const dir = await checkpoint(true);
    const r = await ensureConverted(dir, {name: "clf", target: join(dir, "c.gguf"), logger: createMemoryLogger(), progress: "lines"});
    assert.equal(r.info.kind, "classifier");
    const md = (await readGgufMetadata(r.path)).metadata;
    assert.equal(md.get("bert.pooling_type")?.value, PoolingType.RANK);
    assert.deepEqual(md.get("bert.classifier.output_labels")?.value, ["NO", "YES"]);
    const size = (await stat(join(dir, "model.safetensors"))).size;
    await truncate(join(dir, "model.safetensors"), size - 100);
    await assert.rejects(ensureConverted(dir, {name: "clf", target: join(dir, "c.gguf"), logger: createMemoryLogger(), progress: "lines"}),
      /model.safetensors: tensor .* ends past the end of the file; the file is truncated/);
  });

  test("inspectCheckpoint names missing files and a bare adapter", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-hf-convert-"));
    dirs.push(dir);
    await writeFile(join(dir, "adapter_config.json"), "{}");
    await assert.rejects(inspectCheckpoint(dir), /found no config.json, model.safetensors, tokenizer.json \(it holds a bare adapter/);
    assert.ok((await readFile(join(dir, "adapter_config.json"), "utf8")) === "{}");
  });
});
