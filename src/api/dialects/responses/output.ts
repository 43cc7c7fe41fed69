// GenerationEvents → Responses output items and the item events of a stream. One state machine serves
// both the streamed and the plain reply, so the two always hold the same items. Items are append-only:
// each opens at the next output_index and is closed (its done events) when the next item opens or the
// reply ends, which is what the openai SDK's stream accumulator demands. Order as the model writes it:
// a reasoning item (reasoning_text content, plus the same text as summary_text when the request set
// reasoning.summary), a message item, function_call items.

import type {
  ResponseFunctionCallArgumentsDoneEvent, ResponseFunctionToolCall, ResponseOutputItem, ResponseOutputMessage, ResponseOutputText,
  ResponseReasoningItem, ResponseStreamEvent,
} from "openai/resources/responses/responses";
import type {GenerationEvent} from "../../../core/generation.ts";
import {newId} from "./response-object.ts";

type Unsequenced<E> = E extends unknown ? Omit<E, "sequence_number"> : never;
/** An item-scoped stream event before the encoder numbers it. */
export type ItemEvent =
  | Unsequenced<Exclude<ResponseStreamEvent, {response: unknown} | {type: "error"}>>
  | (Unsequenced<ResponseFunctionCallArgumentsDoneEvent> & {name: string});

type Open =
  | {kind: "reasoning"; index: number; item: ResponseReasoningItem}
  | {kind: "message"; index: number; item: ResponseOutputMessage}
  | {kind: "call"; index: number; item: ResponseFunctionToolCall};

export interface OutputOptions {
  /** The request set reasoning.summary: the reasoning text is also the item's summary_text. */
  summary: boolean;
  /** Function name → namespace it was offered in. */
  namespaces: ReadonlyMap<string, string>;
}

const clone = <T>(v: T): T => structuredClone(v);

export class OutputBuilder {
  readonly output: ResponseOutputItem[] = [];
  private open: Open | null = null;
  /** The engine's tool-call index → output_index of its function_call item. */
  private readonly calls = new Map<number, number>();

  constructor(private readonly opts: OutputOptions) {}

  /** The item events one generation event makes (none for an empty piece or a progress event). */
  push(ev: GenerationEvent): ItemEvent[] {
    switch (ev.type) {
      case "reasoning":
        return ev.text ? this.reasoning(ev.text) : [];
      case "text":
        return ev.text ? this.text(ev.text) : [];
      case "tool_call_start":
        return this.callStart(ev.index, ev.id, ev.name);
      case "tool_call_args":
        return this.callArgs(ev.index, ev.text);
      default:
        return [];
    }
  }

  /** Closes the last item; a reply cut by the budget leaves its last item incomplete. */
  finish(incomplete: boolean): ItemEvent[] {
    return this.close(incomplete);
  }

  private reasoning(text: string): ItemEvent[] {
    const events: ItemEvent[] = [];
    let open = this.open;
    if (open?.kind !== "reasoning") {
      events.push(...this.close(false));
      const item: ResponseReasoningItem = {id: newId("rs"), type: "reasoning", summary: [], content: [], status: "in_progress"};
      open = {kind: "reasoning", index: this.add(item), item};
      this.open = open;
      const at = {item_id: item.id, output_index: open.index};
      events.push({type: "response.output_item.added", output_index: open.index, item: clone(item)});
      item.content!.push({type: "reasoning_text", text: ""});
      events.push({type: "response.content_part.added", ...at, content_index: 0, part: {type: "reasoning_text", text: ""}});
      if (this.opts.summary) {
        item.summary.push({type: "summary_text", text: ""});
        events.push({type: "response.reasoning_summary_part.added", ...at, summary_index: 0, part: {type: "summary_text", text: ""}});
      }
    }
    const {item, index} = open;
    const at = {item_id: item.id, output_index: index};
    item.content![0]!.text += text;
    events.push({type: "response.reasoning_text.delta", ...at, content_index: 0, delta: text});
    if (this.opts.summary) {
      item.summary[0]!.text += text;
      events.push({type: "response.reasoning_summary_text.delta", ...at, summary_index: 0, delta: text});
    }
    return events;
  }

  private text(text: string): ItemEvent[] {
    const events: ItemEvent[] = [];
    let open = this.open;
    if (open?.kind !== "message") {
      events.push(...this.close(false));
      const item: ResponseOutputMessage = {id: newId("msg"), type: "message", role: "assistant", status: "in_progress", content: []};
      open = {kind: "message", index: this.add(item), item};
      this.open = open;
      events.push({type: "response.output_item.added", output_index: open.index, item: clone(item)});
      const part: ResponseOutputText = {type: "output_text", text: "", annotations: [], logprobs: []};
      item.content.push(part);
      events.push({type: "response.content_part.added", item_id: item.id, output_index: open.index, content_index: 0, part: clone(part)});
    }
    (open.item.content[0] as ResponseOutputText).text += text;
    events.push({type: "response.output_text.delta", item_id: open.item.id, output_index: open.index, content_index: 0, delta: text, logprobs: []});
    return events;
  }

  private callStart(callIndex: number, callId: string, name: string): ItemEvent[] {
    const events = this.close(false);
    const namespace = this.opts.namespaces.get(name);
    const item: ResponseFunctionToolCall = {id: newId("fc"), type: "function_call", status: "in_progress", call_id: callId, name, arguments: "",
      ...(namespace !== undefined ? {namespace} : {})};
    const index = this.add(item);
    this.open = {kind: "call", index, item};
    this.calls.set(callIndex, index);
    events.push({type: "response.output_item.added", output_index: index, item: clone(item)});
    return events;
  }

  private callArgs(callIndex: number, text: string): ItemEvent[] {
    const index = this.calls.get(callIndex);
    if (index === undefined || !text) return [];
    const item = this.output[index] as ResponseFunctionToolCall;
    item.arguments += text;
    return [{type: "response.function_call_arguments.delta", item_id: item.id!, output_index: index, delta: text}];
  }

  private add(item: ResponseOutputItem): number {
    this.output.push(item);
    return this.output.length - 1;
  }

  /** The done events of the open item, which then holds its final text and status. */
  private close(incomplete: boolean): ItemEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = null;
    const events: ItemEvent[] = [];
    const at = {item_id: open.item.id!, output_index: open.index};
    switch (open.kind) {
      case "reasoning": {
        const text = open.item.content![0]!.text;
        events.push({type: "response.reasoning_text.done", ...at, content_index: 0, text});
        events.push({type: "response.content_part.done", ...at, content_index: 0, part: {type: "reasoning_text", text}});
        if (this.opts.summary) {
          events.push({type: "response.reasoning_summary_text.done", ...at, summary_index: 0, text});
          events.push({type: "response.reasoning_summary_part.done", ...at, summary_index: 0, part: {type: "summary_text", text}});
        }
        open.item.status = incomplete ? "incomplete" : "completed";
        break;
      }
      case "message": {
        const part = open.item.content[0] as ResponseOutputText;
        events.push({type: "response.output_text.done", ...at, content_index: 0, text: part.text, logprobs: []});
        events.push({type: "response.content_part.done", ...at, content_index: 0, part: clone(part)});
        open.item.status = incomplete ? "incomplete" : "completed";
        break;
      }
      case "call": {
        const done: Unsequenced<ResponseFunctionCallArgumentsDoneEvent> & {name: string} = {
          type: "response.function_call_arguments.done", ...at, arguments: open.item.arguments, name: open.item.name};
        events.push(done);
        // Cut by the budget, the arguments may be partial: say so rather than claim a complete call.
        open.item.status = incomplete ? "incomplete" : "completed";
        break;
      }
    }
    events.push({type: "response.output_item.done", output_index: open.index, item: clone(open.item)});
    return events;
  }
}
