// The engine double's tokenizer: a handful of special tokens, then one token per UTF-8 byte.
//
// Ids: the special tokens come first (0 <|endoftext|>, 1 <|im_start|>, 2 <|im_end|>, 3 <think>, 4 </think>,
// 5 <tool_call>, 6 </tool_call>; the ChatML ids match SmolLM2's), then byte b is id BYTE_BASE + b, so the
// vocabulary has 263 ids. Any text round-trips; a character of several bytes is several tokens, so a reply
// streamed token by token really does split UTF-8 sequences (what the pipeline's incremental detokenizer is for).
//
// Like llama.cpp: special tokens are parsed from text only when `special` is true (otherwise their text is
// plain bytes); the three ChatML control tokens detokenize to nothing unless `special` is true, while
// <think>, </think>, <tool_call> and </tool_call> always read as their text (Qwen's added tokens behave so,
// and the reply parser must see them).

export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"] as const;
export const BYTE_BASE = SPECIAL_TOKENS.length;
export const VOCAB_SIZE = BYTE_BASE + 256;
export const ENDOFTEXT = 0;
export const IM_START = 1;
export const IM_END = 2;

/** Control tokens: no text unless detokenized with `special`. */
const CONTROL: ReadonlySet<number> = new Set([ENDOFTEXT, IM_START, IM_END]);
const SPECIAL_SPLIT = new RegExp(`(${SPECIAL_TOKENS.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`);
const encoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is text like any other, not a marker to drop.
const decoder = new TextDecoder("utf-8", {fatal: false, ignoreBOM: true});

export function isValidToken(token: number): boolean {
  return Number.isInteger(token) && token >= 0 && token < VOCAB_SIZE;
}

export function byteToken(byte: number): number {
  return BYTE_BASE + byte;
}

export function tokenize(text: string, opts: {special: boolean}): number[] {
  const out: number[] = [];
  const parts = opts.special ? text.split(SPECIAL_SPLIT) : [text];
  for (const part of parts) {
    const special = opts.special ? SPECIAL_TOKENS.indexOf(part as (typeof SPECIAL_TOKENS)[number]) : -1;
    if (special >= 0) out.push(special);
    else for (const b of encoder.encode(part)) out.push(BYTE_BASE + b);
  }
  return out;
}

/** The exact bytes a token stands for (a special token: its text). */
export function tokenBytes(token: number): Uint8Array {
  if (!isValidToken(token)) throw new RangeError(`token id ${token} is not in the double's vocabulary (0 to ${VOCAB_SIZE - 1})`);
  return token < BYTE_BASE ? encoder.encode(SPECIAL_TOKENS[token]!) : Uint8Array.of(token - BYTE_BASE);
}

/**
 * Tokens to text. The bytes are joined first and decoded once, so a sequence split across tokens decodes
 * whole, and an unfinished one ends in U+FFFD (as llama.cpp's detokenizer gives it). `context` changes
 * nothing here: byte tokens carry no word-start markers.
 */
export function detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string {
  const bytes: number[] = [];
  for (const t of tokens) {
    if (CONTROL.has(t) && !opts.special) continue;
    for (const b of tokenBytes(t)) bytes.push(b);
  }
  return decoder.decode(Uint8Array.from(bytes));
}
