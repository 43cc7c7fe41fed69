// Converts a CTranslate2 Whisper checkpoint (model.bin, possibly split into parts, and vocabulary.txt) to
// the ggml file whisper.cpp loads, and keeps it: a record beside the output names the converter version and
// the inputs' hashes, and a later start reuses the file while both match.

import {randomBytes} from "node:crypto";
import {mkdir, open, readFile, rename, rm, stat, writeFile} from "node:fs/promises";
import {dirname} from "node:path";
import {hashFile, statOrNull, type ProgressContext} from "../cache.ts";
import {startProgress} from "../progress.ts";
import {readCt2} from "./ct2.ts";
import {ggmlWhisperParts, whisperHparams, whisperTensors, whisperVocab, type WhisperHparams} from "./ggml-whisper.ts";

/** Bumped when the output changes, so files written by an older svc are reconverted. */
export const WHISPER_CONVERTER_VERSION = 1;

export interface Ct2Checkpoint {
  /** model.bin, or its parts in order (joined byte for byte). */
  modelParts: string[];
  vocabulary: string;
}

/** Reads the checkpoint and writes the ggml file to `out` through a temp file (complete or absent). */
export async function convertCt2Whisper(src: Ct2Checkpoint, out: string, ctx: ProgressContext & {name: string}): Promise<WhisperHparams> {
  const model = readCt2(Buffer.concat(await Promise.all(src.modelParts.map((p) => readFile(p)))));
  const h = whisperHparams(model);
  const vocab = whisperVocab((await readFile(src.vocabulary, "utf8")).split("\n"));
  const tensors = whisperTensors(model, h);
  const parts = [...ggmlWhisperParts(h, vocab, tensors)];
  const total = parts.reduce((a, b) => a + b.length, 0);
  await mkdir(dirname(out), {recursive: true});
  const part = `${out}.part-${process.pid}-${randomBytes(4).toString("hex")}`;
  const reporter = startProgress({label: `converting ${ctx.name} to ggml`, total, mode: ctx.progress, logger: ctx.logger});
  const fh = await open(part, "wx");
  try {
    let done = 0;
    for (const p of parts) {
      await fh.write(p);
      done += p.length;
      reporter.update(done);
    }
    await fh.close();
    await rename(part, out);
    reporter.finish();
  } catch (e) {
    reporter.stop();
    await fh.close().catch(() => undefined);
    await rm(part, {force: true});
    throw e;
  }
  return h;
}

interface Record {
  converter: number;
  inputs: {[file: string]: string};
}

const recordPath = (out: string) => `${out}.source.json`;

/** The ggml file for a checkpoint: reused while the record matches, else converted now. */
export async function ensureWhisperGgml(src: Ct2Checkpoint, out: string,
  ctx: ProgressContext & {name: string}): Promise<{path: string; outcome: "converted" | "reused"}> {
  const inputs: {[file: string]: string} = {};
  for (const f of [...src.modelParts, src.vocabulary]) inputs[f] = await hashFile(f, ctx);
  const want: Record = {converter: WHISPER_CONVERTER_VERSION, inputs};
  let kept: Record | null = null;
  try {
    kept = JSON.parse(await readFile(recordPath(out), "utf8")) as Record;
  } catch {
    kept = null;
  }
  if (kept && JSON.stringify(kept) === JSON.stringify(want) && (await statOrNull(out))?.isFile()) {
    ctx.logger.info("converted speech model reused", {name: ctx.name, path: out});
    return {path: out, outcome: "reused"};
  }
  const started = performance.now();
  // The record goes after the file: a crash between the two leaves a file without a record, which reconverts.
  await rm(recordPath(out), {force: true});
  await convertCt2Whisper(src, out, ctx);
  await writeFile(recordPath(out), JSON.stringify(want) + "\n");
  ctx.logger.info("speech model converted", {name: ctx.name, path: out, ms: Math.round(performance.now() - started), bytes: (await stat(out)).size,
    reason: kept ? "checkpoint or converter changed" : "first start"});
  return {path: out, outcome: "converted"};
}
