// A request's pictures, checked and placed before its prompt is built: each is decoded and checked (media/picture.ts),
// the engine says how many positions it takes, and it gets its id (core/media.ts). What a picture rules out is
// refused here, for every route alike: a schema (it would not be enforced) and logprobs.

import {invalidField} from "../core/errors.ts";
import type {GenerationRequest} from "../core/generation.ts";
import {mediaTokenId, type PromptMedia} from "../core/media.ts";
import type {Engine} from "../engine/index.ts";
import {readPicture} from "../media/picture.ts";

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
    const picture = await readPicture(input.bytes, input.field);
    const positions = await engine.media.positionsOf({...picture, field: input.field}, signal);
    out.push({png: picture.png, hash: picture.hash, width: picture.width, height: picture.height, field: input.field,
      id: mediaTokenId(picture.hash), tokens: positions});
  }
  return out;
}
