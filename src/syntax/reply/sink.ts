// Output plumbing shared by the parsers: a part list that merges neighbours, the call counter, and the
// marker search used for hold-back (text that could still become a marker is not released yet).

import type {ReplyPart} from "./parts.ts";

/** Collects the parts of one push; adjacent parts of the same kind (and call) are merged. */
export class PartSink {
  private parts: ReplyPart[] = [];

  add(part: ReplyPart): void {
    if ((part.kind === "reasoning" || part.kind === "content" || part.kind === "call_args") && part.text === "") return;
    const last = this.parts[this.parts.length - 1];
    if (last && last.kind === part.kind) {
      if ((last.kind === "reasoning" || last.kind === "content") && (part.kind === "reasoning" || part.kind === "content")) {
        last.text += part.text;
        return;
      }
      if (last.kind === "call_args" && part.kind === "call_args" && last.index === part.index) {
        last.text += part.text;
        return;
      }
    }
    this.parts.push({...part});
  }

  take(): ReplyPart[] {
    const out = this.parts;
    this.parts = [];
    return out;
  }
}

/** Numbers calls in order and counts the ones that closed properly. */
export class CallEmitter {
  private next = 0;
  completed = 0;
  /** Calls that ended without their syntax closing. */
  readonly incomplete = new Set<number>();

  /** The index the next call will get. */
  get count(): number {
    return this.next;
  }

  constructor(private readonly sink: PartSink) {}

  start(name: string): number {
    const index = this.next++;
    this.sink.add({kind: "call_start", index, name});
    return index;
  }

  args(index: number, text: string): void {
    this.sink.add({kind: "call_args", index, text});
  }

  end(index: number, complete: boolean): void {
    this.sink.add({kind: "call_end", index, complete});
    if (complete) this.completed++;
    else this.incomplete.add(index);
  }
}

/** Earliest complete occurrence of any marker (ties: the longer one). */
export function findMarker(buf: string, markers: readonly string[]): {at: number; marker: string} | null {
  let best: {at: number; marker: string} | null = null;
  for (const marker of markers) {
    const at = buf.indexOf(marker);
    if (at >= 0 && (best === null || at < best.at || (at === best.at && marker.length > best.marker.length))) {
      best = {at, marker};
    }
  }
  return best;
}

/** Length of the longest suffix of buf that is a proper prefix of some marker (it must be held back). */
export function partialMarkerLength(buf: string, markers: readonly string[]): number {
  let best = 0;
  for (const marker of markers) {
    for (let n = Math.min(marker.length - 1, buf.length); n > best; n--) {
      if (buf.endsWith(marker.slice(0, n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

export function isJsonWs(c: string): boolean {
  return c === " " || c === "\n" || c === "\r" || c === "\t";
}

/** A region step's result when its state needs more text to decide (otherwise: chars consumed, 0 only with a state change). */
export const STUCK = -1;

/** Runs a region's steps over `text` until it ends or a step is stuck; returns the chars consumed. */
export function runSteps(text: string, ended: () => boolean, step: (rest: string) => number): number {
  let pos = 0;
  while (!ended()) {
    const n = step(pos === 0 ? text : text.slice(pos));
    if (n === STUCK) break;
    pos += n;
  }
  return pos;
}

/** The text of a call syntax, once its opener was seen in the content. */
export interface CallRegion {
  /**
   * Consumes what it can decide of `text` (the parser keeps the rest and offers it again with more);
   * with `final` nothing more will come, so nothing needs holding.
   */
  feed(text: string, final: boolean): number;
  /** The syntax closed; text after it is content again. */
  readonly ended: boolean;
  /** Generation ended inside the region: close an open call best-effort. */
  finish(): void;
}
