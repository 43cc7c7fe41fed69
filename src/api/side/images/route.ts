// POST /v1/images/generations (JSON), /v1/images/edits and /v1/images/variations (multipart), in OpenAI's images
// shape: {created, data: [{b64_json} | {url}], size, quality, output_format, background, usage}. The pictures come
// from the loaded image model (side-models/images/), `n` of them drawn one after another, picture i at seed + i.
// An edit's or variation's picture is cropped to a centred square, scaled to 512x512 and flattened onto white
// before the model sees it; the output is 512x512 whatever `size` says (the spec's rule).

import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import multipart from "@fastify/multipart";
import sharp from "sharp";
import {ApiError, invalidField} from "../../../core/errors.ts";
import {readPicture} from "../../../media/picture.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {Drawn, ImageRunner} from "../../../side-models/images/runner.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";
import {COMMON_FIELDS, DEFAULT_SIZE, IMAGE_SIZES, readImageOptions, readPrompt, refuseUnknown, type Fields, type ImageOptions} from "./fields.ts";

/** The spec's edit input limit. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
const MAX_FIELD_BYTES = 64 * 1024;
/** FLUX.2 reads a picture in patches of 16x16 pixels (an 8x autoencoder, then 2x2 patches): its image tokens. */
const PIXELS_PER_TOKEN = 16 * 16;
const EDIT_SIDE = 512;

const EDIT_FIELDS = [...COMMON_FIELDS, "image", "mask", "input_fidelity"];

interface Upload {
  fields: Fields;
  image: Buffer | null;
}

/** The form's parts: text fields, and the one picture (`image`, or `image[]` as the SDK sends a list). */
async function readForm(req: FastifyRequest): Promise<Upload> {
  if (!req.isMultipart()) throw invalidField("body", "must be multipart/form-data with an image file field");
  const fields: Fields = {};
  let image: Buffer | null = null;
  try {
    for await (const part of req.parts()) {
      const name = part.fieldname.replace(/\[\]$/, "");
      if (part.type === "file") {
        const buf = await part.toBuffer().catch((e: unknown) => {
          if ((e as {code?: string}).code === "FST_REQ_FILE_TOO_LARGE") return null;
          throw e;
        });
        if (name === "mask") throw invalidField("mask", "is not supported: an edit changes the whole picture; send the picture without a mask");
        if (name !== "image") throw invalidField(part.fieldname, "is not a file field of this route; send the picture as image");
        if (buf === null || part.file.truncated) throw invalidField("image", "is larger than 25 MiB");
        if (image) throw invalidField("image", "must be one picture; this route takes no more than one");
        image = buf;
      } else {
        if (part.valueTruncated) throw invalidField(part.fieldname, `is longer than ${MAX_FIELD_BYTES} bytes`);
        fields[name] = String(part.value);
      }
    }
  } catch (e) {
    if (e instanceof ApiError) throw e;
    // busboy's own errors are about the client's bytes: no boundary, a body cut short, a malformed header.
    throw invalidField("body", `is not valid multipart/form-data (${(e as Error).message}); send the picture as the image field of a multipart form`);
  }
  return {fields, image};
}

/** The picture as the model reads it: any of the five formats, cropped to a centred square, 512x512, on white. */
async function editPicture(image: Buffer | null): Promise<Buffer> {
  if (!image) throw invalidField("image", "is required: one picture (PNG, JPEG, WebP, GIF or BMP, up to 25 MiB)");
  const picture = await readPicture(image, "image");
  return sharp(picture.png).resize(EDIT_SIDE, EDIT_SIDE, {fit: "cover", position: "centre"}).png({compressionLevel: 1}).toBuffer();
}

function render(drawn: Drawn, opts: ImageOptions, inputPictureTokens: number): Record<string, unknown> {
  const outputTokens = drawn.pngs.length * (opts.width * opts.height) / PIXELS_PER_TOKEN;
  return {
    created: Math.floor(Date.now() / 1000),
    data: drawn.pngs.map((png) => {
      const b64 = png.toString("base64");
      return opts.responseFormat === "url" ? {url: `data:image/png;base64,${b64}`} : {b64_json: b64};
    }),
    background: "opaque",
    output_format: "png",
    quality: opts.quality ?? "auto",
    size: opts.size,
    usage: {
      input_tokens: drawn.prompt.tokens + inputPictureTokens,
      input_tokens_details: {text_tokens: drawn.prompt.tokens, image_tokens: inputPictureTokens},
      output_tokens: outputTokens,
      total_tokens: drawn.prompt.tokens + inputPictureTokens + outputTokens,
    },
    // svc's own: the seed picture 0 was drawn at (picture i at seed + i), to draw the same pictures again.
    seed: drawn.seed,
  };
}

export function registerImageRoutes(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  // Any name but one of the server's own reaches the loaded image model (spec: edits and variations; generations too,
  // since OpenAI clients send their own model names).
  const pick = (model: unknown): ImageRunner => {
    if (model === deps.main.identity.id) {
      const images = side.ofKind("image").map((r) => r.id).join(", ");
      throw invalidField("model", `${model} is the generation model; pictures are drawn by the image model (${images}) ` +
        "or any name that is not one of the server's own");
    }
    return side.pick<ImageRunner>("image", model, {anyName: (m) => m === undefined || typeof m === "string"});
  };
  const done = (what: string, body: Record<string, unknown>, started: number) => {
    deps.counters.images += (body.data as unknown[]).length;
    deps.logger.info("images", {route: what, n: (body.data as unknown[]).length, size: body.size, seed: body.seed,
      ms: Math.round(performance.now() - started)});
    return body;
  };

  app.post("/v1/images/generations", async (req, reply) => {
    const fields = req.body as Fields | null;
    if (!fields || typeof fields !== "object" || Array.isArray(fields)) throw invalidField("body", "must be a JSON object");
    refuseUnknown(fields, COMMON_FIELDS);
    const prompt = readPrompt(fields, true);
    const opts = readImageOptions(fields, IMAGE_SIZES);
    const runner = pick(fields.model);
    const started = performance.now();
    const drawn = await runner.draw({prompt, width: opts.width, height: opts.height, n: opts.n, seed: opts.seed, init: null,
      signal: hangUpSignal(req, reply).signal});
    return reply.send(done("generations", render(drawn, opts, 0), started));
  });

  // Multipart is parsed in this scope only; every other route keeps its JSON-only body parser.
  void app.register(async (scope) => {
    await scope.register(multipart, {limits: {fileSize: MAX_UPLOAD_BYTES, files: 4, fields: 32, fieldSize: MAX_FIELD_BYTES}, throwFileSizeLimit: true});
    const form = (mode: "edit" | "variation") => async (req: FastifyRequest, reply: FastifyReply) => {
      const {fields, image} = await readForm(req);
      // A variation's prompt is known, to be refused by readPrompt with what to do instead.
      refuseUnknown(fields, mode === "edit" ? EDIT_FIELDS : EDIT_FIELDS.filter((f) => f !== "input_fidelity"));
      if (fields.input_fidelity !== undefined && !["high", "low"].includes(String(fields.input_fidelity))) {
        throw invalidField("input_fidelity", "must be high or low");
      }
      const prompt = readPrompt(fields, mode === "edit");
      const opts = readImageOptions(fields, [DEFAULT_SIZE]);
      const runner = pick(fields.model);
      const init = await editPicture(image);
      const started = performance.now();
      const drawn = await runner.draw({prompt, width: EDIT_SIDE, height: EDIT_SIDE, n: opts.n, seed: opts.seed, init,
        signal: hangUpSignal(req, reply).signal});
      const encoded = runner.referenceSide(EDIT_SIDE);
      return reply.send(done(`${mode}s`, render(drawn, opts, (encoded * encoded) / PIXELS_PER_TOKEN), started));
    };
    // The body may hold one 25 MiB picture plus its fields; the server's JSON body limit does not apply here.
    scope.post("/v1/images/edits", {bodyLimit: 2 * MAX_UPLOAD_BYTES}, form("edit"));
    scope.post("/v1/images/variations", {bodyLimit: 2 * MAX_UPLOAD_BYTES}, form("variation"));
  });
}
