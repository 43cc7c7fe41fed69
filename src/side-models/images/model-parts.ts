// The image model's three parts, found in the folder `nximg2-klein-4b=<dir>` names: the FLUX.2 klein diffusion
// transformer, its Qwen3 text encoder and the FLUX.2 autoencoder, each as its publisher ships it (safetensors or
// GGUF, under any file name). They are told apart by their tensors, as stable-diffusion.cpp tells them apart, so a
// folder holding the wrong file stops the start here, naming what each file is, rather than deep in the engine.

import {open, readdir, stat} from "node:fs/promises";
import {join} from "node:path";
import {ggufTensorShapes} from "../../models/gguf-tensors.ts";

export interface ImageParts {
  diffusion: string;
  textEncoder: string;
  vae: string;
}

export type PartKind = keyof ImageParts;

export class ImagePartsError extends Error {
  override readonly name = "ImagePartsError";
}

/** What a file was found to be: a part, or a description of what it is instead. */
export type FileVerdict = {part: PartKind; what: string} | {part: null; what: string};

/** Prefixes single-file checkpoints put before a part's own names (ComfyUI's, diffusers-style bundles). */
const PREFIXES = ["model.diffusion_model.", "diffusion_model.", "first_stage_model.", "vae.", "text_encoders.qwen3_4b.transformer.",
  "text_encoder.", "model."];

function strip(name: string): string {
  for (const p of PREFIXES) if (name.startsWith(p)) return name.slice(p.length);
  return name;
}

/** Reads the tensor names and shapes of a .safetensors or .gguf file (headers only). */
export async function tensorNames(path: string): Promise<Map<string, number[]>> {
  const fd = await open(path, "r");
  try {
    const head = Buffer.alloc(8);
    await fd.read(head, 0, 8, 0);
    if (head.toString("latin1", 0, 4) === "GGUF") return await ggufTensorShapes(path);
    const length = Number(head.readBigUInt64LE(0));
    const size = (await fd.stat()).size;
    if (length <= 1 || 8 + length > size || length > 256 * 1024 * 1024) throw new ImagePartsError(`${path} is neither GGUF nor safetensors`);
    const header = Buffer.alloc(length);
    await fd.read(header, 0, length, 8);
    let json: Record<string, {shape?: number[]}>;
    try {
      json = JSON.parse(header.toString("utf8")) as Record<string, {shape?: number[]}>;
    } catch {
      throw new ImagePartsError(`${path}: the safetensors header is not JSON`);
    }
    return new Map(Object.entries(json).filter(([k]) => k !== "__metadata__").map(([k, v]) => [k, v.shape ?? []]));
  } finally {
    await fd.close().catch(() => undefined);
  }
}

/** Which part a file is, from its tensor names (prefixes stripped), as stable-diffusion.cpp decides. */
export function classify(names: ReadonlyMap<string, number[]>): FileVerdict {
  const plain = new Map([...names].map(([k, v]) => [strip(k), v]));
  const has = (n: string) => plain.has(n);
  const any = (re: RegExp) => [...plain.keys()].some((k) => re.test(k));
  if (any(/^double_blocks\.\d+\./)) {
    if (!has("double_stream_modulation_img.lin.weight")) return {part: null, what: "a FLUX.1 diffusion model (FLUX.2 klein is served)"};
    if (any(/^single_blocks\.47\./)) return {part: null, what: "a FLUX.2 dev diffusion model (FLUX.2 klein is served)"};
    return {part: "diffusion", what: "the FLUX.2 klein diffusion model"};
  }
  if (has("embed_tokens.weight") || has("token_embd.weight")) {
    const qwen3 = any(/^layers\.0\.self_attn\.q_norm\.weight$/) || any(/^blk\.0\.attn_q_norm\.weight$/);
    if (qwen3) return {part: "textEncoder", what: "a Qwen3 text encoder"};
    return {part: null, what: "a language model that is not Qwen3 (the text encoder must be Qwen3)"};
  }
  if (has("decoder.conv_in.weight")) {
    // FLUX.2's autoencoder has 32 latent channels (FLUX.1's has 16): the decoder's first convolution reads them.
    const latent = plain.get("decoder.conv_in.weight")?.[1];
    if (latent !== undefined && latent !== 32) return {part: null, what: `an autoencoder with ${latent} latent channels (FLUX.2's has 32)`};
    return {part: "vae", what: "the FLUX.2 autoencoder"};
  }
  if (any(/^(encoder|decoder)\.layers\.\d+\./) || any(/^taesd_(en|de)coder\./)) return {part: "vae", what: "a tiny FLUX.2 autoencoder (TAEF2)"};
  return {part: null, what: "not a part of an image model"};
}

const MODEL_FILE = /\.(safetensors|sft|gguf)$/i;

/** The three parts in `dir`; an ImagePartsError naming what was found when one is missing, doubled or unknown. */
export async function findImageParts(id: string, dir: string): Promise<ImageParts & {found: string[]}> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) {
    throw new ImagePartsError(`SVC_NPU_MODELS: ${id}=${dir}: ${st ? "is a file" : "does not exist"}; give the folder that holds ` +
      "the FLUX.2 klein diffusion model, its Qwen3 text encoder and the FLUX.2 autoencoder (safetensors or GGUF)");
  }
  const parts: Partial<Record<PartKind, string>> = {};
  const found: string[] = [];
  for (const name of (await readdir(dir)).filter((n) => MODEL_FILE.test(n)).sort()) {
    const path = join(dir, name);
    let verdict: FileVerdict;
    try {
      verdict = classify(await tensorNames(path));
    } catch (e) {
      verdict = {part: null, what: `unreadable (${(e as Error).message})`};
    }
    found.push(`${name}: ${verdict.what}`);
    if (!verdict.part) continue;
    if (parts[verdict.part]) {
      throw new ImagePartsError(`SVC_NPU_MODELS: ${id}: ${dir} holds two files for ${verdict.what} (${parts[verdict.part]} and ${path}); keep one`);
    }
    parts[verdict.part] = path;
  }
  const missing = (["diffusion", "textEncoder", "vae"] as const).filter((k) => !parts[k]);
  if (missing.length) {
    const names = {diffusion: "the FLUX.2 klein diffusion model", textEncoder: "the Qwen3 text encoder", vae: "the FLUX.2 autoencoder"};
    throw new ImagePartsError(`SVC_NPU_MODELS: ${id}: ${dir} lacks ${missing.map((k) => names[k]).join(" and ")}; ` +
      `found ${found.length ? found.join("; ") : "no .safetensors or .gguf file"}`);
  }
  return {diffusion: parts.diffusion!, textEncoder: parts.textEncoder!, vae: parts.vae!, found};
}
