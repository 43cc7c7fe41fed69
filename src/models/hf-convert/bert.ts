// How an HF BERT checkpoint maps onto llama.cpp's `bert` architecture, following convert_hf_to_gguf.py
// (conversion/bert.py) and the tensor names in llama-arch.cpp. Pure functions: config.json in, GGUF
// metadata and (HF name → GGUF name) out, so the mapping is unit-tested without a model.

import {gv, GgufType, type GgufMetadata} from "../gguf-writer.ts";
import type {BertVocab} from "./vocab.ts";

/** llama.cpp's llama_pooling_type values. */
export const PoolingType = {NONE: 0, MEAN: 1, CLS: 2, LAST: 3, RANK: 4} as const;
export type PoolingType = (typeof PoolingType)[keyof typeof PoolingType];

export interface BertConfig {
  architectures: string[];
  hiddenSize: number;
  layers: number;
  heads: number;
  intermediateSize: number;
  maxPositions: number;
  typeVocabSize: number;
  vocabSize: number;
  layerNormEps: number;
  /** Labels by class index, for a sequence classifier (BertForSequenceClassification); null otherwise. */
  labels: string[] | null;
  problemType: string | null;
}

const SUPPORTED_ARCHITECTURES = ["BertModel", "BertForSequenceClassification"];

/** Reads what the converter needs from config.json; refuses anything that is not a plain BERT, saying what it is. */
export function parseBertConfig(raw: unknown): BertConfig {
  const c = raw as Record<string, unknown>;
  const arch = Array.isArray(c.architectures) ? c.architectures.map(String) : [];
  const modelType = String(c.model_type ?? "unknown");
  if (modelType !== "bert" || !arch.some((a) => SUPPORTED_ARCHITECTURES.includes(a))) {
    throw new Error(`config.json describes ${arch.join(", ") || "no architecture"} (model_type ${modelType}); ` +
      `a BERT checkpoint (model_type bert: ${SUPPORTED_ARCHITECTURES.join(" or ")}) is needed`);
  }
  if (c.hidden_act !== undefined && c.hidden_act !== "gelu") {
    throw new Error(`config.json: hidden_act ${String(c.hidden_act)}; llama.cpp's bert runs gelu only`);
  }
  if (c.position_embedding_type !== undefined && c.position_embedding_type !== "absolute") {
    throw new Error(`config.json: position_embedding_type ${String(c.position_embedding_type)}; llama.cpp's bert runs absolute positions only`);
  }
  const num = (k: string): number => {
    const v = c[k];
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw new Error(`config.json: ${k} is missing or not a positive number`);
    return v;
  };
  let labels: string[] | null = null;
  if (arch.includes("BertForSequenceClassification")) {
    const map = c.id2label as Record<string, unknown> | undefined;
    if (!map || typeof map !== "object" || Object.keys(map).length === 0) throw new Error("config.json: a BertForSequenceClassification needs id2label");
    const n = Object.keys(map).length;
    labels = [];
    for (let i = 0; i < n; i++) {
      const l = map[String(i)];
      if (typeof l !== "string") throw new Error(`config.json: id2label has no label for class ${i} (its keys must be 0..${n - 1})`);
      labels.push(l);
    }
  }
  return {
    architectures: arch,
    hiddenSize: num("hidden_size"),
    layers: num("num_hidden_layers"),
    heads: num("num_attention_heads"),
    intermediateSize: num("intermediate_size"),
    maxPositions: num("max_position_embeddings"),
    typeVocabSize: typeof c.type_vocab_size === "number" ? c.type_vocab_size : 2,
    vocabSize: num("vocab_size"),
    layerNormEps: typeof c.layer_norm_eps === "number" ? c.layer_norm_eps : 1e-12,
    labels,
    problemType: typeof c.problem_type === "string" ? c.problem_type : null,
  };
}

/**
 * HF tensor name → GGUF name, or null for tensors llama.cpp does not use. `classifier` keeps the pooler
 * (dense + tanh on the CLS state) and the classification layer: llama.cpp's RANK pooling runs exactly
 * that head natively (llm_graph_context::build_pooling), so the class scores come out of the model.
 */
export function mapBertTensorName(hfName: string, classifier: boolean): string | null {
  let name = hfName.startsWith("bert.") ? hfName.slice(5) : hfName;
  if (name.endsWith(".gamma")) name = `${name.slice(0, -6)}.weight`;
  if (name.endsWith(".beta")) name = `${name.slice(0, -5)}.bias`;
  if (name === "embeddings.position_ids" || name.startsWith("cls.predictions") || name.startsWith("cls.seq_relationship")) return null;
  const fixed: Record<string, string> = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
  };
  const direct = fixed[name];
  if (direct) return direct;
  const pooler = /^pooler\.dense\.(weight|bias)$/.exec(name);
  if (pooler) return classifier ? `cls.${pooler[1]}` : null;
  const head = /^classifier\.(weight|bias)$/.exec(name);
  if (head) return classifier ? `cls.output.${head[1]}` : null;
  const m = /^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$/.exec(name);
  if (!m) return null;
  const [, layer, part, kind] = m;
  const parts: Record<string, string> = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
  };
  const gguf = parts[part!];
  return gguf ? `blk.${layer}.${gguf}.${kind}` : null;
}

/** Every GGUF tensor llama.cpp's bert loader requires (load_arch_tensors), to check a checkpoint is whole. */
export function requiredBertTensors(cfg: BertConfig, classifier: boolean): string[] {
  const names = ["token_embd.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"];
  for (let i = 0; i < cfg.layers; i++) {
    for (const p of ["attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up", "ffn_down", "layer_output_norm"]) {
      names.push(`blk.${i}.${p}.weight`);
    }
  }
  if (classifier) names.push("cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias");
  return names;
}

export interface BertMetadataOptions {
  name: string;
  pooling: PoolingType;
}

export function bertMetadata(cfg: BertConfig, vocab: BertVocab, opts: BertMetadataOptions): GgufMetadata {
  const md: GgufMetadata = new Map();
  md.set("general.architecture", gv.str("bert"));
  md.set("general.name", gv.str(opts.name));
  md.set("general.file_type", gv.u32(0)); // all F32
  md.set("bert.context_length", gv.u32(cfg.maxPositions));
  md.set("bert.embedding_length", gv.u32(cfg.hiddenSize));
  md.set("bert.feed_forward_length", gv.u32(cfg.intermediateSize));
  md.set("bert.block_count", gv.u32(cfg.layers));
  md.set("bert.attention.head_count", gv.u32(cfg.heads));
  md.set("bert.attention.layer_norm_epsilon", gv.f32(cfg.layerNormEps));
  md.set("bert.attention.causal", gv.bool(false));
  md.set("bert.pooling_type", gv.u32(opts.pooling));
  if (cfg.labels) {
    md.set("bert.classifier.output_labels", {type: GgufType.ARRAY, itemType: GgufType.STRING, value: cfg.labels});
  }
  md.set("tokenizer.ggml.model", gv.str("bert"));
  md.set("tokenizer.ggml.pre", gv.str("default"));
  md.set("tokenizer.ggml.tokens", {type: GgufType.ARRAY, itemType: GgufType.STRING, value: vocab.tokens});
  md.set("tokenizer.ggml.token_type", {type: GgufType.ARRAY, itemType: GgufType.INT32, value: vocab.types});
  md.set("tokenizer.ggml.token_type_count", gv.u32(cfg.typeVocabSize));
  const s = vocab.special;
  // llama.cpp's WPM vocabulary uses bos as [CLS] and sep as [SEP] (llama-vocab.cpp, tokenizer_model "bert").
  if (s.cls !== undefined) md.set("tokenizer.ggml.bos_token_id", gv.u32(s.cls));
  if (s.cls !== undefined) md.set("tokenizer.ggml.cls_token_id", gv.u32(s.cls));
  if (s.sep !== undefined) md.set("tokenizer.ggml.seperator_token_id", gv.u32(s.sep));
  if (s.unk !== undefined) md.set("tokenizer.ggml.unknown_token_id", gv.u32(s.unk));
  if (s.pad !== undefined) md.set("tokenizer.ggml.padding_token_id", gv.u32(s.pad));
  if (s.mask !== undefined) md.set("tokenizer.ggml.mask_token_id", gv.u32(s.mask));
  return md;
}

/** PyTorch shape [rows, cols] → ggml dims [cols, rows] (ne0 is the contiguous dimension; the bytes are the same). */
export function ggmlDims(shape: number[]): number[] {
  return [...shape].reverse();
}
