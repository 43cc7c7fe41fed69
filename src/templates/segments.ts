// Which characters of a rendered prompt came from the client. Searching the rendered text for each
// message's content is ambiguous (content "user" also matches the "<|im_start|>user" header, and a
// misplaced span would split a real turn marker into plain text), so instead the prompt is rendered a
// second time with every client string wrapped in per-render random markers; the markers say exactly
// where client text landed. When the template rewrote content (trim, split, ...) the marked rendering
// differs from the real one and the two are aligned character by character.
import {alignChars} from "./align.ts";

export interface Segment {
  text: string;
  fromClient: boolean;
  /**
   * Client text from the request's tool definitions (names, descriptions, schema strings): tokenized as client
   * text like the rest, but not a place where a later prompt departs from this one, so the prompt's evaluation
   * plan does not cut at it (a tools block of many short strings would otherwise be cut into pieces too small
   * for llama.cpp's tiled attention).
   */
  tool?: boolean;
}

/** Per character: not client text, client text, client text of a tool definition. */
const CLIENT = 1;
const TOOL = 2;

/** Marker-wrapped rendering with markers removed, plus a client flag per character (CLIENT or TOOL). */
export interface LocatedText {
  text: string;
  client: Uint8Array;
}

export class Markers {
  private readonly ids = new Map<string, number>();
  private readonly pattern: RegExp;

  constructor(private readonly nonce: string) {
    this.pattern = new RegExp(`SVCM${nonce}([OC])(\\d+)Z`, "g");
  }

  /**
   * Wraps one client string. Whitespace-only strings are left alone: they cannot hold a special
   * token, and wrapping would make `{% if content %}` true for empty content and change the
   * rendering. Equal strings share an id so template comparisons between them still hold.
   */
  readonly wrap = (text: string): string => this.wrapAs(text, CLIENT);

  /**
   * Wraps one string of a tool definition: client text that is not a cut boundary (Segment.tool). Its marker is
   * the same as `wrap` gives the same string, so template comparisons between the two still hold; a string
   * wrapped both ways (a tool's name that is also a call's name in the history) is a tool string everywhere, so
   * the tools block cuts the same in every request of a conversation, before and after its first call.
   */
  readonly wrapTool = (text: string): string => this.wrapAs(text, TOOL);

  /** Per id: CLIENT or TOOL. */
  private readonly kinds = new Map<number, number>();

  private wrapAs(text: string, kind: number): string {
    if (!/\S/.test(text)) return text;
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(text, id);
    }
    this.kinds.set(id, this.kinds.get(id) === TOOL ? TOOL : kind);
    return `SVCM${this.nonce}O${id}Z${text}SVCM${this.nonce}C${id}Z`;
  }

  locate(marked: string): LocatedText {
    interface Event {pos: number; open: boolean; id: number; kind: number}
    const events: Event[] = [];
    let text = "";
    let last = 0;
    for (const m of marked.matchAll(this.pattern)) {
      text += marked.slice(last, m.index);
      last = m.index + m[0].length;
      const id = Number(m[2]);
      events.push({pos: text.length, open: m[1] === "O", id, kind: this.kinds.get(id) ?? CLIENT});
    }
    text += marked.slice(last);

    const client = new Uint8Array(text.length);
    // A tool string nested in ordinary client text (or the other way round) is client text: CLIENT wins there.
    const mark = (from: number, to: number, kind: number) => {
      for (let i = from; i < to; i++) if (client[i] !== CLIENT) client[i] = kind;
    };
    const openAt = new Map<number, number[]>();
    events.forEach((e, i) => {
      const stack = openAt.get(e.id) ?? [];
      openAt.set(e.id, stack);
      if (e.open) {
        stack.push(i);
        return;
      }
      const opener = stack.pop();
      // A close without its open means the template cut the string (e.g. split on "</think>"):
      // the client part starts somewhere after the previous marker, so all of that is client.
      mark(opener !== undefined ? events[opener]!.pos : (events[i - 1]?.pos ?? 0), e.pos, e.kind);
    });
    // An open without its close: likewise, client up to the next marker or the end.
    for (const stack of openAt.values()) {
      for (const i of stack) mark(events[i]!.pos, events[i + 1]?.pos ?? text.length, events[i]!.kind);
    }
    return {text, client};
  }
}

/**
 * Segments of `text` (the real rendering). `located` is the marker-located rendering, or null when
 * that rendering failed, in which case everything is marked as client text (safe, if degraded).
 * Characters of `text` the alignment cannot match are client text too: they are not known to be
 * template output.
 */
export function buildSegments(text: string, located: LocatedText | null): Segment[] {
  let client: Uint8Array;
  if (located === null) {
    client = new Uint8Array(text.length).fill(CLIENT);
  } else if (located.text === text) {
    client = located.client;
  } else {
    const map = alignChars(text, located.text);
    client = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) {
      const j = map[i]!;
      client[i] = j < 0 ? CLIENT : located.client[j]!;
    }
  }
  // Never cut between the halves of a surrogate pair (possible only in the aligned case).
  for (let i = 1; i < text.length; i++) {
    if (client[i] !== client[i - 1] && /[\uDC00-\uDFFF]/.test(text[i]!) && /[\uD800-\uDBFF]/.test(text[i - 1]!)) {
      client[i] = client[i - 1] = CLIENT;
    }
  }
  const segments: Segment[] = [];
  let start = 0;
  for (let i = 1; i <= text.length; i++) {
    if (i === text.length || client[i] !== client[start]) {
      const c = client[start];
      segments.push(c === TOOL ? {text: text.slice(start, i), fromClient: true, tool: true} : {text: text.slice(start, i), fromClient: c === CLIENT});
      start = i;
    }
  }
  return segments;
}
