// From a PromptSpec to prompt tokens. Chat prompts are rendered through the model's own template; the
// template's text is tokenized with special markers parsed, the client's message text without, so a user
// who types "<|im_end|>" cannot forge a turn. Raw completions are tokenized exactly as sent, markers
// included (that is what the raw route promises).

import {invalidField, invalidRequest} from "../core/errors.ts";
import type {PromptSpec} from "../core/generation.ts";
import {splitAtMedia, type PromptMedia} from "../core/media.ts";
import type {Engine} from "../engine/index.ts";
import {TemplateRenderError, type ChatTemplate} from "../templates/chat-template.ts";

export interface BuiltPrompt {
  tokens: number[];
  /** The rendered text, for logs and debugging. */
  text: string | null;
  /**
   * Token positions where the client's texts (message contents) start and end. The prompt cache cuts
   * evaluation there, so a later prompt that shares a system message, or continues after a reply, can
   * resume exactly at that point (see engine/kv/region-memory.ts).
   */
  boundaries: number[];
  /**
   * Where earlier replies' texts lie: a client text that starts right after an assistant header. The model
   * decoded those tokens one at a time; when the engine matches reuse by row class it evaluates these spans
   * the same way, so a follow-up resumes past the reply without re-evaluating it (engine/kv/row-classes.ts).
   */
  replySpans: [number, number][];
}

/**
 * `field`: the body field the prompt came from (GenerationRequest.promptField), which refusals name.
 * `replyTokens`: the tokens an earlier reply of this server was decoded as, looked up by its text (see
 * GenerationPipeline). A model does not always write the tokens its tokenizer would make of its text; a client
 * text that sends such a reply back unchanged gets the tokens the model wrote, so the prompt repeats the kept
 * state and resumes past the reply.
 */
export function buildPrompt(spec: PromptSpec, engine: Engine, template: ChatTemplate | null, field: string,
  replyTokens?: (text: string) => readonly number[] | undefined, tools?: unknown[], media: readonly PromptMedia[] = []): BuiltPrompt {
  switch (spec.kind) {
    case "tokens": {
      spec.tokens.forEach((t, i) => {
        if (!engine.isValidToken(t)) throw invalidField(`${field}[${i}]`, `token id ${t} is not in the vocabulary (0 to ${engine.info.vocabSize - 1})`);
      });
      return {tokens: [...spec.tokens], text: null, boundaries: [], replySpans: []};
    }
    case "text":
      return {tokens: withBos(engine, engine.tokenize(spec.text, {special: true})), text: spec.text, boundaries: [], replySpans: []};
    case "chat": {
      if (!template) throw invalidRequest("this model has no chat template; use /v1/completions with a raw prompt");
      let rendered;
      try {
        rendered = template.render(spec.messages, {
          addGenerationPrompt: spec.addGenerationPrompt,
          continueFinalMessage: spec.continueFinalMessage,
          enableThinking: spec.enableThinking,
          reasoningEffort: spec.reasoningEffort,
          kwargs: spec.templateKwargs,
          tools,
        });
      } catch (err) {
        if (err instanceof TemplateRenderError) throw invalidRequest(`the model's chat template refused the conversation: ${err.message}`, field);
        throw err;
      }
      const tokens: number[] = [];
      const boundaries: number[] = [];
      const replySpans: [number, number][] = [];
      let afterHeader = false;
      for (const seg of rendered.segments) {
        if (seg.fromClient) {
          const start = tokens.length;
          tokens.push(...((afterHeader ? replyTokens?.(seg.text) : undefined) ?? clientTokens(engine, seg.text, media, field)));
          // A tool definition's strings are not where prompts depart from each other: no cut there.
          if (!seg.tool) boundaries.push(start, tokens.length);
          if (afterHeader && tokens.length > start) replySpans.push([start, tokens.length]);
        } else if (seg.text.length > 0) {
          tokens.push(...templateTokens(engine, seg.text, template.replyHeader, tokens.length, boundaries));
        }
        // An empty client text (a call turn's content) leaves the reply's start where it was.
        if (!(seg.fromClient && seg.text === "")) afterHeader = !seg.fromClient && template.replyHeader !== null && seg.text.endsWith(template.replyHeader);
      }
      const withStart = withBos(engine, tokens);
      const shift = withStart.length - tokens.length;
      return {tokens: withStart, text: rendered.text, boundaries: [...new Set(boundaries.map((b) => b + shift))],
        replySpans: replySpans.map(([a, b]) => [a + shift, b + shift])};
    }
  }
}

/**
 * A client text's tokens, each picture's marker in it replaced by the picture's run of positions. A prompt with
 * pictures goes to the engine as text with control tokens parsed (engine/remote/remote-media.ts), so there a client
 * text that spells a control token is refused rather than read as one.
 */
function clientTokens(engine: Engine, text: string, media: readonly PromptMedia[], field: string): number[] {
  if (media.length === 0) return engine.tokenize(text, {special: false});
  const out: number[] = [];
  for (const part of splitAtMedia(text)) {
    if (typeof part === "number") {
      const picture = media[part];
      if (!picture) throw invalidField(field, `names picture ${part + 1}, but the request holds ${media.length}`);
      for (let i = 0; i < picture.tokens; i++) out.push(picture.id);
      continue;
    }
    const tokens = engine.tokenize(part, {special: false});
    const parsed = engine.tokenize(part, {special: true});
    if (parsed.length !== tokens.length || parsed.some((t, i) => t !== tokens[i])) {
      throw invalidField(field, "holds text that spells one of the model's control tokens; on a request with a picture the engine reads " +
        "such text as the control token itself, so it is refused (remove it, or send the request without the picture)");
    }
    out.push(...tokens);
  }
  return out;
}

/**
 * Template text, tokenized whole, with a boundary right after each assistant header inside it: where an
 * earlier reply started. That reply was sealed with a cut there (the end of its prompt), so a prompt that
 * sends it back with reasoning or calls first (text that does not start at the header) still shares that
 * cut and resumes past it. Only where the split does not change the tokens.
 */
function templateTokens(engine: Engine, text: string, header: string | null, offset: number, boundaries: number[]): number[] {
  const whole = engine.tokenize(text, {special: true});
  if (!header) return whole;
  for (let at = text.indexOf(header); at >= 0; at = text.indexOf(header, at + 1)) {
    const end = at + header.length;
    if (end >= text.length) break;
    const head = engine.tokenize(text.slice(0, end), {special: true});
    const tail = engine.tokenize(text.slice(end), {special: true});
    if (head.length + tail.length === whole.length && head.every((t, i) => whole[i] === t) && tail.every((t, i) => whole[head.length + i] === t)) {
      boundaries.push(offset + head.length);
    }
  }
  return whole;
}

function withBos(engine: Engine, tokens: number[]): number[] {
  const {prependBos, bosToken} = engine.info;
  if (prependBos && bosToken !== null && tokens[0] !== bosToken) return [bosToken, ...tokens];
  return tokens;
}
