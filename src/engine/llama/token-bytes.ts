// The exact bytes of a token, from the vocabulary text stored in the GGUF (public metadata). The engine
// library can only detokenize to a JS string, which turns a partial UTF-8 sequence into U+FFFD; logprobs
// `bytes` and /tokenize pieces need the real bytes.
// - byte-level BPE ("gpt2" tokenizer model): each character maps back to one byte (GPT-2's byte/unicode table).
// - SentencePiece ("llama"): "<0xAB>" is a raw byte, "▁" is a space, the rest is UTF-8 text.

const encoder = new TextEncoder();

let gpt2Decoder: Map<number, number> | undefined;

/** GPT-2's table: printable bytes stand for themselves, the others are shifted to U+0100 and up. */
function gpt2ByteDecoder(): Map<number, number> {
  if (gpt2Decoder) return gpt2Decoder;
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map<number, number>();
  for (const b of printable) map.set(b, b);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) map.set(256 + shifted++, b);
  }
  gpt2Decoder = map;
  return map;
}

export type VocabKind = "gpt2" | "llama" | "other";

export function tokenTextToBytes(text: string, kind: VocabKind, isSpecial: boolean): Uint8Array {
  if (isSpecial) return encoder.encode(text);
  if (kind === "gpt2") {
    const table = gpt2ByteDecoder();
    const out: number[] = [];
    for (const ch of text) {
      const b = table.get(ch.codePointAt(0)!);
      if (b === undefined) return encoder.encode(text); // not byte-level after all: fall back to the text
      out.push(b);
    }
    return Uint8Array.from(out);
  }
  if (kind === "llama") {
    const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
    if (m) return Uint8Array.of(parseInt(m[1]!, 16));
    return encoder.encode(text.replaceAll("\u2581", " "));
  }
  return encoder.encode(text);
}
