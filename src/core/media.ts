// Pictures in a prompt, from the dialect that reads them to the engine that evaluates them.
//
// A dialect puts a marker into the message text where each picture goes (mediaMarker) and lists the pictures'
// bytes on the request (MediaInput). The pipeline checks them (media/picture.ts), asks the engine how many
// positions each takes, and writes each picture into the prompt's tokens as a run of one negative id derived from
// its bytes (mediaTokenId): the prompt cache then keys a picture by its bytes like any other token, so a follow-up
// that repeats the same picture resumes past it and a different picture at the same place does not. Only an engine
// that reads pictures (EngineMedia) ever sees such ids.

/** A picture as the dialect decoded it from the body: its bytes, not yet checked, and the body field it came from. */
export interface MediaInput {
  bytes: Uint8Array;
  /** e.g. `messages[1].content[2].image_url.url`: every refusal of the picture names it. */
  field: string;
}

/** A checked picture, ready for the engine. */
export interface PromptPicture {
  /** PNG bytes, as the engine is given them. */
  png: Uint8Array;
  /** sha256 hex of `png`. */
  hash: string;
  width: number;
  height: number;
  field: string;
}

/** A picture placed in a prompt: its id (repeated `tokens` times) and its positions. */
export interface PromptMedia extends PromptPicture {
  id: number;
  tokens: number;
}

/**
 * Per process, unguessable: text a client sends cannot spell a marker, so only the dialect places pictures. The
 * private-use characters keep a template that trims or escapes content from touching the marker's inside.
 */
const NONCE = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(9)), (b) => b.toString(16).padStart(2, "0")).join("");
const MARKER = new RegExp(`\u{F8FF}svc-media-${NONCE}-(\\d+)\u{F8FF}`, "gu");

/** The marker for the request's `index`-th picture (its place in GenerationRequest.media). */
export function mediaMarker(index: number): string {
  return `\u{F8FF}svc-media-${NONCE}-${index}\u{F8FF}`;
}

/** Text split at its markers: strings, and the indexes of the pictures between them. */
export function splitAtMedia(text: string): (string | number)[] {
  const out: (string | number)[] = [];
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(Number(m[1]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** The text with each marker shown as `[picture N]` (1-based): what /apply-template shows, never the marker itself. */
export function showMedia(text: string): string {
  return text.replace(MARKER, (_, i: string) => `[picture ${Number(i) + 1}]`);
}

export function hasMediaMarker(text: string): boolean {
  MARKER.lastIndex = 0;
  const found = MARKER.test(text);
  MARKER.lastIndex = 0;
  return found;
}

/** Negative, so never a vocabulary token; from the picture's hash, so equal pictures give equal ids. */
export function mediaTokenId(hash: string): number {
  return -1 - (Number.parseInt(hash.slice(0, 8), 16) & 0x3fffffff);
}

export function isMediaToken(token: number): boolean {
  return token < 0;
}

/** What an engine that reads pictures offers the pipeline. */
export interface EngineMedia {
  vision: boolean;
  audio: boolean;
  /** Positions the picture takes in a prompt (its embeddings and any marker text the projector adds around them). */
  positionsOf(picture: PromptPicture, signal?: AbortSignal): Promise<number>;
}
