// Pythonic calls (LFM2, LFM2.5): after the opener, a Python list of calls written as Python function calls, then the
// close marker:
//   <|tool_call_start|>[get_weather(city="Paris", days=2), get_time(tz='Europe/Paris')]<|tool_call_end|>
// Each call starts once its name and `(` are read; its arguments stream as JSON (./python-args.ts) and it ends at
// its `)`. Lenient where models slip: the brackets may be left out, and a missing close marker after the calls ends
// the region there (what follows is content again). Malformed text ends the open call as incomplete and is dropped
// up to the close marker, never shown.

import {type CallEmitter, type CallRegion, isJsonWs, partialMarkerLength, runSteps, STUCK} from "../reply/sink.ts";
import {PythonArgs} from "./python-args.ts";

/** A call's name and its `(`: tool name chars (and `.`), 1 to 64 of them, whitespace allowed around. */
const CALL_HEAD = /^[ \t\r\n]*([A-Za-z0-9_.-]{1,64})[ \t\r\n]*\(/;
/** Text that could still become a call's head with more. */
const HEAD_PREFIX = /^[ \t\r\n]*[A-Za-z0-9_.-]{0,64}[ \t\r\n]*$/;

/** open: before the list's `[` (or a first call without it); name: a call's head; after: past a call's `)`. */
type State = "open" | "name" | "args" | "after" | "close" | "junk";

export class PythonicCallsRegion implements CallRegion {
  ended = false;
  private state: State = "open";
  /** The calls sit in a `[...]` list (models that leave the brackets out write the calls bare). */
  private bracketed = false;
  private index: number | null = null;
  private args: PythonArgs | null = null;

  /** `close`: the marker that ends the calls (`<|tool_call_end|>` for LFM2). */
  constructor(private readonly calls: CallEmitter, private readonly close: string) {}

  feed(text: string, final: boolean): number {
    return runSteps(text, () => this.ended, (s) => this.step(s, final));
  }

  finish(): void {
    this.endCall(false);
    this.ended = true;
  }

  private step(s: string, final: boolean): number {
    switch (this.state) {
      case "open": {
        const ws = leadingWs(s);
        if (ws === s.length) return final ? this.to("junk", ws) : ws > 0 ? ws : STUCK;
        if (s[ws] === "[") {
          this.bracketed = true;
          return this.to("name", ws + 1);
        }
        return this.to("name", ws);
      }
      case "name":
        return this.head(s, final);
      case "args": {
        const args = this.args!;
        const [out, n] = args.push(s, final);
        if (out !== "") this.calls.args(this.index!, out);
        if (args.failed) {
          this.endCall(false);
          return this.to("junk", n);
        }
        if (args.done) {
          this.endCall(true);
          return this.to("after", n);
        }
        return n > 0 ? n : STUCK;
      }
      case "after":
        return this.afterCall(s, final);
      case "close":
        return this.closeMarker(s, final);
      case "junk": {
        // Dropped up to and including the close marker (with none, to the end of the generation).
        const at = this.close === "" ? -1 : s.indexOf(this.close);
        if (at >= 0) {
          this.ended = true;
          return at + this.close.length;
        }
        const n = s.length - (final ? 0 : partialMarkerLength(s, [this.close]));
        if (n > 0) return n;
        if (final) this.ended = true;
        return STUCK;
      }
    }
  }

  /** A call's name and `(`; in a list, a `]` instead ends it (an empty list, or one with a trailing comma). */
  private head(s: string, final: boolean): number {
    const m = CALL_HEAD.exec(s);
    if (m) {
      this.index = this.calls.start(m[1]!);
      this.args = new PythonArgs(this.close);
      this.calls.args(this.index, this.args.open());
      return this.to("args", m[0].length);
    }
    const ws = leadingWs(s);
    if (this.bracketed && s[ws] === "]") return this.to("close", ws + 1);
    if (!final && HEAD_PREFIX.test(s)) return STUCK;
    return this.to("junk", 0);
  }

  /** Past a call's `)`: a comma and the next call, the list's `]`, or the close marker. */
  private afterCall(s: string, final: boolean): number {
    const ws = leadingWs(s);
    const t = s.slice(ws);
    if (t.startsWith(",")) return this.to("name", ws + 1);
    if (this.bracketed && t.startsWith("]")) return this.to("close", ws + 1);
    if (this.close !== "" && t.startsWith(this.close)) {
      // A list whose `]` was left out still ends at the close marker.
      this.ended = true;
      return ws + this.close.length;
    }
    if (!final && (t === "" || this.close.startsWith(t))) return STUCK;
    if (this.bracketed && t !== "") return this.to("junk", ws);
    // Bare calls (or a list cut at the end) followed by something else: the calls are done; the rest is content.
    this.ended = true;
    return 0;
  }

  /** After the list's `]`: the close marker; when it is missing, what follows is content again. */
  private closeMarker(s: string, final: boolean): number {
    const ws = leadingWs(s);
    const t = s.slice(ws);
    if (this.close !== "" && t.startsWith(this.close)) {
      this.ended = true;
      return ws + this.close.length;
    }
    if (!final && (t === "" || this.close.startsWith(t))) return STUCK;
    this.ended = true;
    return 0;
  }

  private endCall(complete: boolean): void {
    if (this.index === null) return;
    const args = this.args;
    if (args && !args.done) {
      const rest = args.finish();
      if (rest !== "") this.calls.args(this.index, rest);
    }
    this.calls.end(this.index, complete);
    this.index = null;
    this.args = null;
  }

  private to(state: State, consumed: number): number {
    this.state = state;
    return consumed;
  }
}

function leadingWs(s: string): number {
  let i = 0;
  while (i < s.length && isJsonWs(s[i]!)) i++;
  return i;
}
