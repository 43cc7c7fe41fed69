// embeddingnx-2's source: `<model>+<projector>`, each a path or model source as for SVC_MODEL (read when
// SVC_NPU_MODELS is parsed, so a source that names one file stops the start before anything loads).

/** A source that does not name the model and its projector. */
export class MultimodalSourceError extends Error {
  override readonly name = "MultimodalSourceError";
}

/** `<model>+<projector>`. */
export function splitMultimodalSource(id: string, source: string): {model: string; projector: string} {
  const plus = source.lastIndexOf("+");
  const model = plus < 0 ? "" : source.slice(0, plus).trim();
  const projector = plus < 0 ? "" : source.slice(plus + 1).trim();
  if (!model || !projector) {
    throw new MultimodalSourceError(`SVC_NPU_MODELS: ${id} needs its model and the projector that reads pictures and sound, ` +
      `as ${id}=<model.gguf>+<mmproj.gguf> (each a path or model source as for SVC_MODEL)${source ? `; got "${source}"` : ""}`);
  }
  return {model, projector};
}
