// POST /tokenize and POST /detokenize (llama.cpp server shapes).

import type {FastifyInstance} from "fastify";
import {z} from "zod";
import {invalidField} from "../../core/errors.ts";
import type {ServerDeps} from "../deps.ts";
import {parseBody} from "../fields/validate.ts";

const MAX_DETOKENIZE = 1 << 20;

export const tokenizeSchema = z.looseObject({
  content: z.string(),
  add_special: z.boolean().nullish(),
  parse_special: z.boolean().nullish(),
  with_pieces: z.boolean().nullish(),
});

export const detokenizeSchema = z.looseObject({
  tokens: z.array(z.number().int()).max(MAX_DETOKENIZE),
});

const strictUtf8 = new TextDecoder("utf-8", {fatal: true});

/** A piece is its text when its bytes are valid UTF-8, else the byte values (a partial character). */
function piece(bytes: Uint8Array): string | number[] {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return [...bytes];
  }
}

export function registerTokenizeRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const {engine} = deps.main;

  app.post("/tokenize", async (req) => {
    const body = parseBody(tokenizeSchema, req.body);
    let tokens = engine.tokenize(body.content, {special: body.parse_special ?? true});
    const bos = engine.info.bosToken;
    if ((body.add_special ?? false) && engine.info.prependBos && bos !== null && tokens[0] !== bos) tokens = [bos, ...tokens];
    if (!body.with_pieces) return {tokens};
    return {tokens: tokens.map((id) => ({id, piece: piece(engine.tokenBytes(id))}))};
  });

  app.post("/detokenize", async (req) => {
    const body = parseBody(detokenizeSchema, req.body);
    body.tokens.forEach((t, i) => {
      if (!engine.isValidToken(t)) throw invalidField(`tokens[${i}]`, `token id ${t} is not in the vocabulary (0 to ${engine.info.vocabSize - 1})`);
    });
    return {content: engine.detokenize(body.tokens, {special: true})};
  });
}
