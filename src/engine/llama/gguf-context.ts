// A GGUF's training context length, read from its header alone (no weights, no vocabulary): for an engine process
// svc starts itself (load-vision.ts), which must be given the context the in-process engine would have taken.

import {readGgufFileInfo} from "node-llama-cpp";

/** `<arch>.context_length`; null when the file does not say. */
export async function ggufTrainContext(modelPath: string): Promise<number | null> {
  const info = await readGgufFileInfo(modelPath, {readTensorInfo: false});
  const length = (info.architectureMetadata as {context_length?: unknown}).context_length;
  return typeof length === "number" && length > 0 ? length : null;
}
