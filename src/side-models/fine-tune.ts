// Own fine-tunes named by directory in SVC_NPU_MODELS: config.json, model.safetensors, tokenizer.json.
// Which kind it serves follows the model it was tuned from; anything else is refused at start with a
// line saying what was found and what runs. Only BERT checkpoints convert here (the embedder and sequence
// classifiers); the conversion itself happens when the runner loads (kept in the directory, see
// models/hf-convert/convert.ts).

import {basename} from "node:path";
import {inspectCheckpoint} from "../models/hf-convert/convert.ts";
import {statOrNull} from "../models/cache.ts";
import type {SideModelDef} from "./registry.ts";

export const FINE_TUNES_THAT_RUN = "what runs: a BERT sequence classifier (BertForSequenceClassification with id2label, served on POST /classify) " +
  "or a BERT embedder (BertModel / sentence-transformers, served on POST /v1/embeddings), each as config.json, model.safetensors and tokenizer.json";

export class FineTuneError extends Error {
  override readonly name = "FineTuneError";
}

export async function inspectFineTune(dir: string): Promise<SideModelDef> {
  const id = basename(dir);
  const st = await statOrNull(dir);
  if (!st?.isDirectory()) throw new FineTuneError(`SVC_NPU_MODELS: ${dir}: found ${st ? "a file, not a directory" : "nothing there"}; ${FINE_TUNES_THAT_RUN}`);
  try {
    const info = await inspectCheckpoint(dir);
    return {id, kind: info.kind, source: dir, format: "bert"};
  } catch (e) {
    throw new FineTuneError(`SVC_NPU_MODELS: ${dir}: ${(e as Error).message}; ${FINE_TUNES_THAT_RUN}`);
  }
}
