// Pictures on llama-server replicas run with --mmproj. llama-server reads a picture only inside a prompt given as
// text, `{prompt_string, multimodal_data}`, where its media marker stands for each picture in order; so a prompt
// that holds pictures (runs of one negative id per picture: core/media.ts) is sent as its detokenized text with
// the marker in place of each run. The replica tokenizes that text as it would any template text (control tokens
// parsed), which is why the pipeline refuses client text that spells a control token on such a request.
//
// How many positions a picture takes depends on the projector (a fixed count for Gemma 3, the picture's size for
// Qwen2.5-VL), so it is asked of a replica: its count_tokens with the picture, less the same message without it;
// llama-server counts pictures there without encoding them. Counts are remembered per picture.

import {isMediaToken, type EngineMedia, type PromptMedia, type PromptPicture} from "../../core/media.ts";
import {EngineBusyError} from "../errors.ts";
import {replicaApi, ReplicaRefusedError, ReplicaUnreachableError} from "./llama-server-api.ts";

export interface MediaReplica {
  url: string;
  up: boolean;
  mediaMarker: string | null;
}

const REMEMBERED = 1024;

export class RemoteMedia implements EngineMedia {
  private readonly counts = new Map<string, number>();
  private readonly baselines = new Map<string, number>();

  constructor(readonly vision: boolean, readonly audio: boolean, private readonly replicas: () => readonly MediaReplica[]) {}

  async positionsOf(picture: PromptPicture, signal?: AbortSignal): Promise<number> {
    const known = this.counts.get(picture.hash);
    if (known !== undefined) return known;
    const replica = this.replicas().find((r) => r.up) ?? this.replicas()[0]!;
    const count = (content: unknown) => replicaApi.countTokens(replica.url, [{role: "user", content}], signal).catch((err: Error) => {
      // A replica that is down or still loading (a restart): the request may be retried, as when no slot is free.
      if (err instanceof ReplicaUnreachableError || (err instanceof ReplicaRefusedError && err.status === 503)) {
        throw new EngineBusyError(`no engine replica is answering to count the picture's positions (${err.message}); retry later`, 2);
      }
      throw err;
    });
    const baseline = this.baselines.get(replica.url) ?? await count("");
    this.baselines.set(replica.url, baseline);
    const withPicture = await count([{type: "image", source: {type: "base64", media_type: "image/png", data: Buffer.from(picture.png).toString("base64")}}]);
    const positions = withPicture - baseline;
    if (positions < 1) throw new Error(`${replica.url} counts no positions for a picture (${withPicture} with it, ${baseline} without)`);
    if (this.counts.size >= REMEMBERED) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(picture.hash, positions);
    return positions;
  }
}

export interface PromptText {
  detokenize(tokens: readonly number[]): string;
  /** The BOS id the replica writes itself at the start of a text prompt (its vocabulary adds one), or null. */
  autoBos: number | null;
}

/**
 * The `prompt` of a /completion body: the token ids as they are, or, when the prompt holds pictures, its text with
 * the replica's marker for each picture and the pictures' bytes in order.
 */
export function promptField(prompt: readonly number[], media: ReadonlyMap<number, PromptMedia> | undefined, marker: string | null,
  text: PromptText): readonly number[] | {prompt_string: string; multimodal_data: string[]} {
  if (!prompt.some(isMediaToken)) return prompt;
  if (!media || marker === null) throw new Error("a prompt with pictures reached a replica that does not read them");
  let parts = "";
  const data: string[] = [];
  let at = prompt[0] === text.autoBos ? 1 : 0;
  while (at < prompt.length) {
    const token = prompt[at]!;
    if (isMediaToken(token)) {
      const picture = media.get(token);
      if (!picture) throw new Error(`a prompt names picture ${token}, which the request does not hold`);
      parts += marker;
      data.push(Buffer.from(picture.png).toString("base64"));
      at += picture.tokens;
      continue;
    }
    let end = at;
    while (end < prompt.length && !isMediaToken(prompt[end]!)) end++;
    parts += text.detokenize(prompt.slice(at, end));
    at = end;
  }
  return {prompt_string: parts, multimodal_data: data};
}
