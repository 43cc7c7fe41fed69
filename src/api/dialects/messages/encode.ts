// GenerationEvents → Anthropic Message bodies and stream events, typed with the official SDK's types. The
// stream follows what the SDK's `messages.stream(...).finalMessage()` needs: an `event:` line on every
// frame (the SDK dispatches on it and drops data-only frames), one message_start, blocks indexed 0..n-1
// in order, a ping after the first block start, one signature_delta right before a thinking block stops,
// message_delta with output_tokens, message_stop last and no terminator. Both paths fold the events with
// one BlockBuilder, so a streamed reply and a collected one have the same blocks.

import type {
  Message, MessageDeltaUsage, RawContentBlockStartEvent, RawMessageStreamEvent, StopReason, TextBlock, ThinkingBlock, ToolUseBlock, Usage,
} from "@anthropic-ai/sdk/resources/messages";
import type {ApiError} from "../../../core/errors.ts";
import type {GenerationEvent, Timings, UsageCounts} from "../../../core/generation.ts";
import type {StreamEncoder} from "../../serve-generation.ts";
import {anthropicErrorBody} from "./errors.ts";
import {signReasoning} from "./signature.ts";
import {toolUseId} from "./tool-use-ids.ts";

export interface MessageIdentity {
  id: string;
  model: string;
  /** The request's stop_sequences: a stop string among them ends the reply with stop_reason "stop_sequence". */
  stopSequences: string[];
  /** thinking.display "omitted": thinking blocks carry the full signature but no text. */
  thinkingDisplay: "summarized" | "omitted";
}

type Block = TextBlock | ThinkingBlock | ToolUseBlock;
type Done = Extract<GenerationEvent, {type: "done"}>;
export type MessageWithTimings = Message & {timings: Timings};
/** What goes on the wire: the SDK's stream events, the ping it skips, and timings on message_delta. */
export type WireEvent = RawMessageStreamEvent | {type: "ping"} | (Extract<RawMessageStreamEvent, {type: "message_delta"}> & {timings: Timings});

/** Arguments as the object Anthropic's `input` is; a call cut off by max_tokens has no complete object, so {}. */
function parseInput(args: string): unknown {
  if (args.trim() === "") return {};
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

export class BlockBuilder {
  readonly blocks: Block[] = [];
  private open: Block | null = null;
  /** The open thinking block's whole reasoning (its text may be omitted; the signature never is). */
  private reasoning = "";
  private pinged = false;
  /** Tool call index → its block index, and its argument text so far. */
  private readonly callBlocks = new Map<number, number>();
  private readonly args = new Map<number, string>();

  constructor(private readonly display: "summarized" | "omitted") {}

  push(ev: GenerationEvent): WireEvent[] {
    switch (ev.type) {
      case "reasoning": {
        if (!ev.text) return [];
        const out = this.openBlock("thinking", () => ({type: "thinking", thinking: "", signature: ""}));
        this.reasoning += ev.text;
        if (this.display === "omitted") return out;
        (this.open as ThinkingBlock).thinking += ev.text;
        return [...out, {type: "content_block_delta", index: this.index, delta: {type: "thinking_delta", thinking: ev.text}}];
      }
      case "text": {
        if (!ev.text) return [];
        const out = this.openBlock("text", () => ({type: "text", text: "", citations: null}));
        (this.open as TextBlock).text += ev.text;
        return [...out, {type: "content_block_delta", index: this.index, delta: {type: "text_delta", text: ev.text}}];
      }
      case "tool_call_start": {
        const out = [...this.close(), ...this.start({type: "tool_use", id: toolUseId(ev.id), name: ev.name, input: {}, caller: {type: "direct"}})];
        this.callBlocks.set(ev.index, this.index);
        this.args.set(this.index, "");
        return out;
      }
      case "tool_call_args": {
        const index = this.callBlocks.get(ev.index);
        if (index === undefined || !ev.text) return [];
        this.args.set(index, this.args.get(index)! + ev.text);
        return [{type: "content_block_delta", index, delta: {type: "input_json_delta", partial_json: ev.text}}];
      }
      default:
        return [];
    }
  }

  /** Closes the last block; tool inputs become objects. */
  finish(): WireEvent[] {
    const out = this.close();
    for (const [index, text] of this.args) (this.blocks[index] as ToolUseBlock).input = parseInput(text);
    return out;
  }

  private get index(): number {
    return this.blocks.length - 1;
  }

  private openBlock(type: "thinking" | "text", make: () => Block): WireEvent[] {
    return this.open?.type === type ? [] : [...this.close(), ...this.start(make())];
  }

  private start(block: Block): WireEvent[] {
    this.blocks.push(block);
    this.open = block;
    // The start event gets its own copy: the block fills in as deltas arrive.
    const out: WireEvent[] = [{type: "content_block_start", index: this.index, content_block: {...block} as RawContentBlockStartEvent["content_block"]}];
    if (!this.pinged) out.push({type: "ping"});
    this.pinged = true;
    return out;
  }

  private close(): WireEvent[] {
    const block = this.open;
    if (!block) return [];
    this.open = null;
    const out: WireEvent[] = [];
    if (block.type === "thinking") {
      block.signature = signReasoning(this.reasoning);
      this.reasoning = "";
      out.push({type: "content_block_delta", index: this.index, delta: {type: "signature_delta", signature: block.signature}});
    }
    out.push({type: "content_block_stop", index: this.index});
    return out;
  }
}

export function stopOf(done: Done, stopSequences: readonly string[]): {stop_reason: StopReason; stop_sequence: string | null} {
  if (done.finishReason === "length") return {stop_reason: "max_tokens", stop_sequence: null};
  if (done.finishReason === "tool_calls") return {stop_reason: "tool_use", stop_sequence: null};
  if (typeof done.stoppedBy === "string" && stopSequences.includes(done.stoppedBy)) return {stop_reason: "stop_sequence", stop_sequence: done.stoppedBy};
  return {stop_reason: "end_turn", stop_sequence: null};
}

/** Anthropic counts cached prompt tokens apart: input_tokens is the part that was computed. */
export function messageUsage(u: UsageCounts): Usage {
  return {
    input_tokens: u.promptTokens - u.cachedTokens,
    cache_read_input_tokens: u.cachedTokens,
    cache_creation_input_tokens: 0,
    output_tokens: u.completionTokens,
    output_tokens_details: {thinking_tokens: u.reasoningTokens},
    cache_creation: null,
    inference_geo: null,
    server_tool_use: null,
    service_tier: null,
    speed: null,
  };
}

function shell(who: MessageIdentity, usage: Usage): Message {
  return {
    id: who.id, type: "message", role: "assistant", model: who.model, content: [],
    stop_reason: null, stop_sequence: null, stop_details: null, container: null, diagnostics: null, usage,
  };
}

export function messageBody(who: MessageIdentity, events: GenerationEvent[]): MessageWithTimings {
  const builder = new BlockBuilder(who.thinkingDisplay);
  let done: Done | undefined;
  for (const ev of events) {
    builder.push(ev);
    if (ev.type === "done") done = ev;
  }
  builder.finish();
  if (!done) throw new Error("generation ended without a done event");
  return {...shell(who, messageUsage(done.usage)), content: builder.blocks, ...stopOf(done, who.stopSequences), timings: done.timings};
}

/** `start`: the prompt's length and the part of it the cache served, known once the request has its region (message_start's usage). */
export function messageStreamEvents(who: MessageIdentity, start: {promptTokens: number; cachedTokens: number}): {push(ev: GenerationEvent): WireEvent[]} {
  const builder = new BlockBuilder(who.thinkingDisplay);
  let started = false;
  return {
    push(ev) {
      const out: WireEvent[] = [];
      if (!started) {
        started = true;
        out.push({type: "message_start", message: shell(who, {
          ...messageUsage({promptTokens: start.promptTokens, cachedTokens: start.cachedTokens, completionTokens: 0, reasoningTokens: 0}),
          output_tokens_details: null})});
      }
      if (ev.type !== "done") return [...out, ...builder.push(ev)];
      const u = messageUsage(ev.usage);
      const usage: MessageDeltaUsage = {output_tokens: u.output_tokens, input_tokens: u.input_tokens, cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: 0, output_tokens_details: u.output_tokens_details, server_tool_use: null};
      return [...out, ...builder.finish(),
        {type: "message_delta", delta: {...stopOf(ev, who.stopSequences), stop_details: null, container: null}, usage, timings: ev.timings},
        {type: "message_stop"}];
    },
  };
}

export function messageStreamEncoder(who: MessageIdentity, start: {promptTokens: number; cachedTokens: number}): StreamEncoder {
  const events = messageStreamEvents(who, start);
  return {
    frames: (ev) => events.push(ev).map((e) => ({data: e, event: e.type})),
    // The message id is the request's id too (routes.ts sends it as the request-id header).
    errorFrame: (err: ApiError) => anthropicErrorBody(err, who.id),
    // The SDK throws on a frame named `error` and silently drops a frame with no event name.
    errorFrames: (err: ApiError) => [{data: anthropicErrorBody(err, who.id), event: "error"}],
  };
}
