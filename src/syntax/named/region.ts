// Calls written as a name in markup followed by a JSON arguments value (the `named` CallSyntax):
//   Mistral     [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}          (an optional [CALL_ID]id before [ARGS])
//   DeepSeek    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   DeepSeek R1 ...<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{...}\n```<｜tool▁call▁end｜>...
//   Kimi K2     <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{...}<|tool_call_end|>...
// The name is announced once its end marker arrives; the arguments stream as the model writes them. A syntax
// with no close marker (Mistral) ends a call with its arguments; the next call's opener starts a new region.
// Malformed syntax is dropped up to the call's (or section's) close, never shown; with no close marker to
// skip to, the text after the break is content again.

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {JsonValueStream} from "../reply/json-stream.ts";
import {type CallEmitter, type CallRegion, findMarker, isJsonWs, partialMarkerLength, runSteps, STUCK} from "../reply/sink.ts";

/** A name longer than this without its end marker is not a name. */
const MAX_NAME = 256;

type State = "expectCall" | "leadId" | "name" | "id" | "argsStart" | "args" | "argsEnd" | "close" | "junk";

export interface NamedMarkers {
  section: {open: string; close: string} | null;
  open: string;
  namePrefix: string;
  nameIndex: boolean;
  idMarker: string | null;
  leadId: string | null;
  nameEnd: string;
  argsEnd: string;
  close: string;
}

export function namedMarkers(s: NamedCallSyntax): NamedMarkers {
  return {
    section: s.section ? {open: s.section.open.trim(), close: s.section.close.trim()} : null,
    open: s.open.trim(),
    namePrefix: s.namePrefix.trim(),
    nameIndex: s.nameIndex,
    idMarker: s.idMarker ?? null,
    leadId: s.leadId?.trim() ?? null,
    nameEnd: s.nameEnd.trim(),
    argsEnd: s.argsEnd.trim(),
    close: s.close.trim(),
  };
}

export class NamedCallsRegion implements CallRegion {
  ended = false;
  private state: State;
  private readonly inSection: boolean;
  private index: number | null = null;
  private value: JsonValueStream | null = null;
  private argsDone = false;

  /** `opener`: the section's open marker, or a call's own open marker (a call without the section around it). */
  constructor(private readonly calls: CallEmitter, private readonly m: NamedMarkers, opener: string) {
    this.inSection = m.section !== null && opener === m.section.open;
    this.state = this.inSection ? "expectCall" : this.callStart();
  }

  feed(text: string, final: boolean): number {
    return runSteps(text, () => this.ended, (s) => this.step(s, final));
  }

  finish(): void {
    if (this.index !== null) {
      // A syntax without a close marker ends a call with its arguments; any other call cut short is incomplete.
      const complete = this.argsDone && this.m.close === "";
      this.endCall(complete);
    }
    this.ended = true;
  }

  private step(s: string, final: boolean): number {
    switch (this.state) {
      case "expectCall": {
        const markers = [this.m.open, this.m.section!.close];
        const hit = findMarker(s, markers);
        if (hit) {
          if (hit.marker === this.m.section!.close) this.ended = true;
          else this.state = this.callStart();
          return hit.at + hit.marker.length;
        }
        return drop(s, final ? 0 : partialMarkerLength(s, markers));
      }
      case "leadId": {
        // Solar Open's call id before the name: skipped (svc gives the call its own id).
        const at = s.indexOf(this.m.leadId!);
        if (at < 0) return !final && s.length <= MAX_NAME ? STUCK : this.to("junk", 0);
        return /[\s<>{}"]/.test(s.slice(0, at)) ? this.to("junk", 0) : this.to("name", at + this.m.leadId!.length);
      }
      case "name":
        return this.nameStep(s, final);
      case "id": {
        const at = s.indexOf(this.m.nameEnd);
        if (at >= 0) return this.to("argsStart", at + this.m.nameEnd.length);
        return drop(s, final ? 0 : partialMarkerLength(s, [this.m.nameEnd]));
      }
      case "argsStart": {
        let i = 0;
        while (i < s.length && isJsonWs(s[i]!)) i++;
        if (i === s.length) return final ? this.broken(i) : i === 0 ? STUCK : i;
        if (s[i] !== "{") return this.broken(i);
        this.value = new JsonValueStream();
        return this.to("args", i);
      }
      case "args": {
        const value = this.value!;
        const r = value.push(s);
        if (r.out !== "") this.calls.args(this.index!, r.out);
        if (value.failed) return this.broken(r.consumed);
        if (value.done) {
          this.argsDone = true;
          return this.to("argsEnd", r.consumed);
        }
        return r.consumed > 0 ? r.consumed : STUCK;
      }
      case "argsEnd":
        return this.optionalTag(s, final, this.m.argsEnd, "close");
      case "close": {
        if (this.m.close === "") {
          this.endCall(true);
          this.ended = true;
          return 0;
        }
        const n = this.optionalTag(s, final, this.m.close, null);
        if (n === STUCK) return STUCK;
        return n;
      }
      case "junk": {
        const markers = [this.m.close, ...(this.m.section ? [this.m.section.close] : [])].filter((x) => x !== "");
        if (markers.length === 0) {
          this.ended = true;
          return 0;
        }
        const hit = findMarker(s, markers);
        if (hit) {
          if (this.inSection && hit.marker !== this.m.section!.close) this.state = "expectCall";
          else this.ended = true;
          return hit.at + hit.marker.length;
        }
        return drop(s, final ? 0 : partialMarkerLength(s, markers));
      }
    }
  }

  /**
   * Skips whitespace and `tag` if it comes next (a missing one is tolerated). next null: the tag is the call's
   * close, after which the section expects another call or the region ends.
   */
  private optionalTag(s: string, final: boolean, tag: string, next: State | null): number {
    const t = s.trimStart();
    const ws = s.length - t.length;
    let consumed = 0;
    if (tag !== "") {
      if (t.startsWith(tag)) consumed = ws + tag.length;
      else if (!final && tag.startsWith(t)) return STUCK;
    }
    if (next !== null) return this.to(next, consumed);
    this.endCall(consumed > 0);
    if (this.inSection) this.state = "expectCall";
    else this.ended = true;
    return consumed;
  }

  private callStart(): State {
    return this.m.leadId !== null ? "leadId" : "name";
  }

  private nameStep(s: string, final: boolean): number {
    const ends = [this.m.nameEnd, ...(this.m.idMarker ? [this.m.idMarker] : [])];
    const hit = findMarker(s, ends);
    if (!hit) {
      if (!final && s.length <= MAX_NAME) return STUCK;
      return this.to("junk", 0);
    }
    let name = s.slice(0, hit.at).trim();
    if (this.m.namePrefix !== "" && name.startsWith(this.m.namePrefix)) name = name.slice(this.m.namePrefix.length).trim();
    if (this.m.nameIndex) name = name.replace(/:\d+$/, "");
    if (name === "" || /[\s<>{}"]/.test(name)) return this.to("junk", hit.at);
    this.index = this.calls.start(name);
    this.argsDone = false;
    return this.to(hit.marker === this.m.nameEnd ? "argsStart" : "id", hit.at + hit.marker.length);
  }

  /** The arguments broke (or never started as an object): what was written is closed, the rest dropped. */
  private broken(consumed: number): number {
    if (this.index !== null) this.endCall(false);
    return this.to("junk", consumed);
  }

  private endCall(complete: boolean): void {
    if (this.index === null) return;
    if (this.value === null) this.calls.args(this.index, "{}");
    else if (!this.value.done) this.calls.args(this.index, this.value.finish());
    this.calls.end(this.index, complete);
    this.index = null;
    this.value = null;
  }

  private to(state: State, consumed: number): number {
    this.state = state;
    return consumed;
  }
}

function drop(s: string, keep: number): number {
  const n = s.length - keep;
  return n > 0 ? n : STUCK;
}
