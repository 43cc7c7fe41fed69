// Start-time checks of the replicas in SVC_ENGINE: each must answer, serve a model whose vocabulary is the one
// svc reads locally (the same token ids for the same text, specials included), and all must serve the same
// model and chat template. A replica that differs would answer the same token ids with another model's
// meaning; it is refused before the server listens, naming the URL.

import {createHash} from "node:crypto";
import {replicaApi} from "./llama-server-api.ts";

/** A replica that cannot serve: the composition root turns it into a start error naming the URL. */
export class ReplicaSetupError extends Error {
  override readonly name = "ReplicaSetupError";
}

/** Text that exercises the tokenizer: spaces, digits, punctuation, non-Latin text, an emoji and a chat-template special. */
export const TOKENIZER_PROBE = "Hello, world! 12345 ünïcödé — 東京 🚀\n\tcode: x = f(y) <|im_start|>user";

export interface ReplicaIdentity {
  url: string;
  slots: number;
  contextSize: number;
  build: string | null;
  templateSha256: string | null;
  vocabSize: number;
  params: number | null;
  /** What its projector reads (--mmproj); both false without one. */
  modalities: {vision: boolean; audio: boolean};
  /** The text that stands for a picture in its prompts; null without a projector. */
  mediaMarker: string | null;
}

export interface LocalModel {
  vocabSize: number;
  tokenize(text: string): number[];
}

export async function inspectReplica(url: string, local: LocalModel): Promise<ReplicaIdentity> {
  let props;
  try {
    props = await replicaApi.props(url);
  } catch (err) {
    throw new ReplicaSetupError(`SVC_ENGINE: ${url} cannot be reached or is not a llama-server (${(err as Error).message}); ` +
      "start llama-server there, or fix the URL");
  }
  if (!Number.isInteger(props.total_slots) || props.total_slots < 1 || !props.default_generation_settings?.n_ctx) {
    throw new ReplicaSetupError(`SVC_ENGINE: ${url}/props does not describe llama-server slots (total_slots, default_generation_settings.n_ctx)`);
  }
  const meta = await replicaApi.modelMeta(url).catch(() => null);
  const vocabSize = meta?.n_vocab ?? local.vocabSize;
  if (vocabSize !== local.vocabSize) {
    throw new ReplicaSetupError(`SVC_ENGINE: ${url} serves a model with ${vocabSize} tokens, SVC_MODEL has ${local.vocabSize}; ` +
      "run the replicas on the GGUF SVC_MODEL names");
  }
  const theirs = await replicaApi.tokenize(url, TOKENIZER_PROBE);
  const ours = local.tokenize(TOKENIZER_PROBE);
  if (theirs.length !== ours.length || theirs.some((t, i) => t !== ours[i])) {
    throw new ReplicaSetupError(`SVC_ENGINE: ${url} tokenizes differently from SVC_MODEL (${theirs.length} against ${ours.length} tokens for the same text); ` +
      "run the replicas on the GGUF SVC_MODEL names");
  }
  return {url, slots: props.total_slots, contextSize: props.default_generation_settings.n_ctx, build: props.build_info ?? null,
    templateSha256: props.chat_template ? createHash("sha256").update(props.chat_template).digest("hex") : null, vocabSize, params: meta?.n_params ?? null,
    modalities: {vision: props.modalities?.vision === true, audio: props.modalities?.audio === true}, mediaMarker: props.media_marker ?? null};
}

/** Every replica serves the same model and template as the first; throws naming the one that does not. */
export function checkSameModel(replicas: readonly ReplicaIdentity[]): void {
  const [first, ...rest] = replicas;
  for (const r of rest) {
    if (r.params !== first!.params) {
      throw new ReplicaSetupError(`SVC_ENGINE: ${r.url} serves another model than ${first!.url} (${r.params} against ${first!.params} parameters); ` +
        "every replica must serve the same GGUF");
    }
    if (r.templateSha256 !== first!.templateSha256) {
      throw new ReplicaSetupError(`SVC_ENGINE: ${r.url} has another chat template than ${first!.url} ` +
        `(sha256 ${r.templateSha256?.slice(0, 12) ?? "none"} against ${first!.templateSha256?.slice(0, 12) ?? "none"}); ` +
        "start every replica with the same GGUF and template options");
    }
  }
}
