// A request's pictures, checked and placed before its prompt is built: each is decoded and checked (media/picture.ts),
// the engine says how many positions it takes, and it gets its id (core/media.ts). What a picture rules out is
// refused here, for every route alike: a schema (it would not be enforced) and logprobs.

import {createHash} from "node:crypto";
import {invalidField} from "../core/errors.ts";
import type {GenerationRequest} from "../core/generation.ts";
import {mediaTokenId, type PromptMedia} from "../core/media.ts";
import type {Engine} from "../engine/index.ts";
import {readPicture, type Picture} from "../media/picture.ts";

/**
 * Pictures already checked, by the sha256 of the bytes the client sent: a conversation sends its pictures again on
 * every turn, and decoding and re-encoding one costs more than the rest of the request's own work.
 */
const CHECKED = new Map<string, Picture>();
const CHECKED_MAX = 64;

async function checkedPicture(bytes: Uint8Array, field: string): Promise<Picture> {
  const key = createHash("sha256").update(bytes).digest("hex");
  const known = CHECKED.get(key);
  if (known) {
    CHECKED.delete(key);
    CHECKED.set(key, known);
    return known;
  }
  const picture = await readPicture(bytes, field);
  if (CHECKED.size >= CHECKED_MAX) CHECKED.delete(CHECKED.keys().next().value!);
  CHECKED.set(key, picture);
  return picture;
}

const NO_TOWER = "is a picture, but this server has no vision tower loaded (start it with SVC_MMPROJ naming the model's projector); send text only";

export async function preparePictures(req: GenerationRequest, engine: Engine, signal?: AbortSignal): Promise<PromptMedia[]> {
  const inputs = req.media ?? [];
  if (inputs.length === 0) return [];
  if (!engine.media?.vision) throw invalidField(inputs[0]!.field, NO_TOWER);
  if (req.responseFormat) {
    throw invalidField(req.responseFormat.field, "cannot be used on a request with a picture: a schema is not enforced on one (send the picture without it)");
  }
  if (req.logprobs) throw invalidField("logprobs", "cannot be used on a request with a picture");
  const out: PromptMedia[] = [];
  for (const input of inputs) {
    const picture = await checkedPicture(input.bytes, input.field);
    const positions = await engine.media.positionsOf({...picture, field: input.field}, signal);
    out.push({png: picture.png, hash: picture.hash, width: picture.width, height: picture.height, field: input.field,
      id: mediaTokenId(picture.hash), tokens: positions});
  }
  return out;
}
