// Own fine-tunes named by directory in SVC_NPU_MODELS: config.json, model.safetensors, tokenizer.json.
// Which kind it serves follows the model it was tuned from; anything else is refused at start with a
// line saying what was found and what runs.

import {basename} from "node:path";
import type {SideModelDef} from "./registry.ts";

export async function inspectFineTune(dir: string): Promise<SideModelDef> {
  throw new Error(`SVC_NPU_MODELS: ${dir} (${basename(dir)}): own fine-tunes are not served by this build yet`);
}
