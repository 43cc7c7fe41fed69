// GenerationEvents → the Responses body, or its event stream. The stream is exactly what the openai
// SDK's `client.responses.stream()` accumulates without error: response.created, then
// response.in_progress, the item events (output.ts), and response.completed (or response.incomplete)
// carrying the full response with usage and timings; every event has an `event:` line named by its
// type and a sequence_number counting from 0. There is no [DONE] on this route.

import type {ResponseError} from "openai/resources/responses/responses";
import type {ApiError} from "../../../core/errors.ts";
import type {GenerationEvent} from "../../../core/generation.ts";
import {openAiErrorBody} from "../../error-body.ts";
import type {StreamEncoder} from "../../serve-generation.ts";
import {OutputBuilder, type ItemEvent, type OutputOptions} from "./output.ts";
import {finalResponse, type WireResponse} from "./response-object.ts";

type Done = Extract<GenerationEvent, {type: "done"}>;

type LifecycleEvent = {
  type: "response.created" | "response.in_progress" | "response.completed" | "response.incomplete" | "response.failed";
  response: WireResponse;
};

interface ErrorEvent {
  type: "error";
  code: string;
  message: string;
  param: string | null;
  /** The real API nests the error too; openai-node reads either, Vercel's schema wants the flat fields. */
  error: {type: string; code: string; message: string; param: string | null};
}

type Frame = {data: unknown; event: string};

export function responsesBody(shell: WireResponse, events: GenerationEvent[], opts: OutputOptions): WireResponse {
  const out = new OutputBuilder(opts);
  let done: Done | undefined;
  for (const ev of events) {
    if (ev.type === "done") done = ev;
    else out.push(ev);
  }
  if (!done) throw new Error("generation ended without a done event");
  out.finish(done.finishReason === "length");
  return finalResponse(shell, out.output, done);
}

/** The response.failed `error.code`: ours where we have one, else the nearest in OpenAI's list. */
function failureCode(err: ApiError): ResponseError["code"] {
  return (err.code ?? (err.status >= 500 ? "server_error" : "invalid_prompt")) as ResponseError["code"];
}

export function responsesStreamEncoder(shell: WireResponse, opts: OutputOptions): StreamEncoder {
  const out = new OutputBuilder(opts);
  let seq = 0;
  let started = false;
  const frame = (e: ItemEvent | LifecycleEvent | ErrorEvent): Frame => ({data: {...e, sequence_number: seq++}, event: e.type});
  const start = (): Frame[] => {
    if (started) return [];
    started = true;
    return [frame({type: "response.created", response: structuredClone(shell)}), frame({type: "response.in_progress", response: structuredClone(shell)})];
  };
  return {
    frames(ev) {
      const frames = start();
      if (ev.type !== "done") {
        for (const e of out.push(ev)) frames.push(frame(e));
        return frames;
      }
      const incomplete = ev.finishReason === "length";
      for (const e of out.finish(incomplete)) frames.push(frame(e));
      frames.push(frame({type: incomplete ? "response.incomplete" : "response.completed", response: finalResponse(shell, out.output, ev)}));
      return frames;
    },
    errorFrames(err) {
      const code = err.code ?? err.type;
      return [
        ...start(),
        frame({type: "error", code, message: err.message, param: err.param, error: {type: err.type, code, message: err.message, param: err.param}}),
        frame({type: "response.failed", response: {...shell, status: "failed", output: structuredClone(out.output),
          error: {code: failureCode(err), message: err.message}}}),
      ];
    },
    errorFrame(err) {
      return openAiErrorBody(err);
    },
  };
}

