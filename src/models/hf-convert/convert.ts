// HF BERT folder → GGUF that llama.cpp loads as architecture `bert`. The GGUF is kept (beside the default
// checkpoint, or inside an own fine-tune's directory) with a record of the three checkpoint files' hashes;
// a later start reuses it while the hashes match and reconverts when they do not. A directory we cannot
// write is converted into a temp dir at every start.

import {randomBytes} from "node:crypto";
import {constants} from "node:fs";
import {access, mkdtemp, readFile, rename, rm, stat, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {basename, dirname, join} from "node:path";
import {statOrNull, type ProgressContext} from "../cache.ts";
import {writeGguf, type GgufTensor} from "../gguf-writer.ts";
import {startProgress, type ProgressReporter} from "../progress.ts";
import {bertMetadata, ggmlDims, mapBertTensorName, parseBertConfig, PoolingType, requiredBertTensors, type BertConfig} from "./bert.ts";
import {CHECKPOINT_FILES, hashCheckpoint} from "./fetch-folder.ts";
import {SafetensorsFile} from "./safetensors.ts";
import {buildBertVocab} from "./vocab.ts";

/** Bumped when the converter's output changes, so GGUFs written by an older svc are reconverted. */
export const CONVERTER_VERSION = 1;

export type CheckpointKind = "embedding" | "classifier";

export interface CheckpointInfo {
  config: BertConfig;
  kind: CheckpointKind;
  pooling: PoolingType;
}

/** What a folder holds and how it is served; throws a line saying what was found when it cannot be. */
export async function inspectCheckpoint(dir: string): Promise<CheckpointInfo> {
  const missing: string[] = [];
  for (const f of CHECKPOINT_FILES) if (!(await statOrNull(join(dir, f)))?.isFile()) missing.push(f);
  if (missing.length) {
    const adapter = (await statOrNull(join(dir, "adapter_config.json")))?.isFile() ? " (it holds a bare adapter: adapter_config.json)" : "";
    throw new Error(`found no ${missing.join(", ")}${adapter}; a checkpoint folder needs ${CHECKPOINT_FILES.join(", ")}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(dir, "config.json"), "utf8"));
  } catch {
    throw new Error("config.json is not valid JSON");
  }
  const config = parseBertConfig(raw);
  if (config.labels) return {config, kind: "classifier", pooling: PoolingType.RANK};
  return {config, kind: "embedding", pooling: await sentenceTransformersPooling(dir)};
}

/** sentence-transformers' pooling module (modules.json → <path>/config.json); plain BertModel → CLS like HF's pooler input. */
async function sentenceTransformersPooling(dir: string): Promise<PoolingType> {
  try {
    const modules = JSON.parse(await readFile(join(dir, "modules.json"), "utf8")) as {type?: string; path?: string}[];
    const pool = modules.find((m) => String(m.type).endsWith("Pooling"));
    if (!pool) return PoolingType.CLS;
    const c = JSON.parse(await readFile(join(dir, pool.path ?? "", "config.json"), "utf8")) as Record<string, unknown>;
    if (c.pooling_mode_mean_tokens || c.pooling_mode === "mean") return PoolingType.MEAN;
    if (c.pooling_mode_cls_token || c.pooling_mode === "cls") return PoolingType.CLS;
    throw new Error(`the sentence-transformers pooling in ${pool.path}/config.json is neither mean nor cls`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return PoolingType.CLS;
    throw e;
  }
}

/** Reads the folder and writes the GGUF to `out` (through a temp file: `out` is complete or absent). */
export async function convertCheckpoint(dir: string, out: string, info: CheckpointInfo, ctx: ProgressContext & {name: string}): Promise<void> {
  const classifier = info.kind === "classifier";
  const vocab = buildBertVocab(JSON.parse(await readFile(join(dir, "tokenizer.json"), "utf8")), info.config.vocabSize);
  const st = await SafetensorsFile.open(join(dir, "model.safetensors"));
  const tensors: GgufTensor[] = [];
  for (const hfName of st.tensors.keys()) {
    const name = mapBertTensorName(hfName, classifier);
    if (!name) continue;
    const shape = st.tensors.get(hfName)!.shape;
    tensors.push({name, dims: ggmlDims(shape), data: st.float32(hfName)});
  }
  const have = new Set(tensors.map((t) => t.name));
  const absent = requiredBertTensors(info.config, classifier).filter((n) => !have.has(n));
  if (absent.length) throw new Error(`model.safetensors lacks ${absent.slice(0, 4).join(", ")}${absent.length > 4 ? ` and ${absent.length - 4} more` : ""}`);
  const md = bertMetadata(info.config, vocab, {name: ctx.name, pooling: info.pooling});
  const part = `${out}.part-${process.pid}-${randomBytes(4).toString("hex")}`;
  // The writer knows the file's size once the header is laid out; the display starts with its first report.
  let reporter: ProgressReporter | null = null;
  try {
    await writeGguf(part, md, tensors, {onProgress: (done, total) => {
      reporter ??= startProgress({label: `converting ${ctx.name} to GGUF`, total, mode: ctx.progress, logger: ctx.logger});
      reporter.update(done);
    }});
    await rename(part, out);
    (reporter as ProgressReporter | null)?.finish();
  } catch (e) {
    (reporter as ProgressReporter | null)?.stop();
    await rm(part, {force: true});
    throw e;
  }
}

interface ConversionRecord {
  converter: number;
  pooling: number;
  files: Record<string, string | null>;
}

export const recordPath = (gguf: string) => `${gguf}.source.json`;

export interface EnsureOptions extends ProgressContext {
  /** Name written into the GGUF and shown in logs. */
  name: string;
  /** Where the kept GGUF goes when its directory is writable. */
  target: string;
}

export interface EnsureResult {
  path: string;
  info: CheckpointInfo;
  /** converted: written now and kept; reused: the kept one matched; temp: converted into a temp dir (read-only folder). */
  outcome: "converted" | "reused" | "temp";
  /** Removes a temp conversion (no-op for a kept one). */
  cleanup(): Promise<void>;
}

async function writable(dir: string): Promise<boolean> {
  try {
    await access(dir, constants.W_OK);
    // access() says yes to root on a read-only mount; a real write tells.
    const probe = join(dir, `.svc-write-probe-${process.pid}`);
    await writeFile(probe, "");
    await rm(probe, {force: true});
    return true;
  } catch {
    return false;
  }
}

/** The GGUF for a checkpoint folder: reused while the checkpoint's hashes match its record, else converted. */
export async function ensureConverted(dir: string, opts: EnsureOptions): Promise<EnsureResult> {
  const info = await inspectCheckpoint(dir);
  const files = await hashCheckpoint(dir, opts);
  const want: ConversionRecord = {converter: CONVERTER_VERSION, pooling: info.pooling, files};
  const noop = async () => undefined;
  const kept = await readRecord(opts.target);
  if (kept && JSON.stringify(kept) === JSON.stringify(want) && (await statOrNull(opts.target))?.isFile()) {
    opts.logger.info("converted model reused", {name: opts.name, path: opts.target, checkpoint: dir});
    return {path: opts.target, info, outcome: "reused", cleanup: noop};
  }
  const started = performance.now();
  if (await writable(dirname(opts.target))) {
    // The record goes first: a crash between the two leaves a record without its GGUF, which reconverts.
    await rm(recordPath(opts.target), {force: true});
    await convertCheckpoint(dir, opts.target, info, opts);
    await writeFile(recordPath(opts.target), JSON.stringify(want) + "\n");
    opts.logger.info("model converted", {name: opts.name, path: opts.target, checkpoint: dir, reason: kept ? "checkpoint changed" : "first start",
      ms: Math.round(performance.now() - started), bytes: (await stat(opts.target)).size});
    return {path: opts.target, info, outcome: "converted", cleanup: noop};
  }
  const tmp = await mkdtemp(join(tmpdir(), "svc-convert-"));
  const path = join(tmp, basename(opts.target));
  await convertCheckpoint(dir, path, info, opts);
  opts.logger.info("model converted into a temp dir (the checkpoint's directory is read-only; this repeats at every start)",
    {name: opts.name, path, checkpoint: dir, ms: Math.round(performance.now() - started)});
  return {path, info, outcome: "temp", cleanup: () => rm(tmp, {recursive: true, force: true})};
}

async function readRecord(gguf: string): Promise<ConversionRecord | null> {
  try {
    return JSON.parse(await readFile(recordPath(gguf), "utf8")) as ConversionRecord;
  } catch {
    return null;
  }
}
