// Qwen2's tokenizer (Qwen3 uses the same vocabulary) as a byte-level BPE, read from a vocabulary-only GGUF: the
// image model counts and cuts its prompt with it (prompt.ts). node-llama-cpp can load such a file, but it first
// tries to estimate the missing weights' memory and logs two engine errors on every start; this reader needs only
// the file's token list and merges (read by models/gguf-tensors.ts). It is held to llama.cpp's own test vectors for the file
// (test/unit/side-models/images/qwen-tokenizer.test.ts).

import {readGgufHeader} from "../../models/gguf-tensors.ts";

/** Qwen2's pre-tokenizer (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2, the same as the Hugging Face tokenizer's). */
const PRE_TOKENIZER =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** GPT-2's byte-to-character map: every byte becomes a printable character, so merges are written as text. */
function byteAlphabet(): {encode: string[]; decode: Map<string, number>} {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const encode: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) encode[b] = String.fromCodePoint(printable(b) ? b : 256 + extra++);
  return {encode, decode: new Map(encode.map((c, b) => [c, b]))};
}

export class QwenTokenizer {
  private readonly alphabet = byteAlphabet();
  private readonly cache = new Map<string, number[]>();

  private constructor(private readonly ids: ReadonlyMap<string, number>, private readonly texts: readonly string[],
    private readonly ranks: ReadonlyMap<string, number>) {}

  static async load(path: string): Promise<QwenTokenizer> {
    const {strings} = await readGgufHeader(path, ["tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.pre"]);
    const tokens = strings.get("tokenizer.ggml.tokens");
    const merges = strings.get("tokenizer.ggml.merges");
    const pre = strings.get("tokenizer.ggml.pre");
    if (!Array.isArray(tokens) || !Array.isArray(merges)) throw new Error(`${path} holds no BPE vocabulary (tokenizer.ggml.tokens and merges)`);
    if (pre !== "qwen2") throw new Error(`${path} is not Qwen2's vocabulary (its pre-tokenizer is ${String(pre ?? "unset")})`);
    return new QwenTokenizer(new Map(tokens.map((s, i) => [s, i])), tokens, new Map(merges.map((m, i) => [m, i])));
  }

  /** The text's tokens, as plain text (a "<|im_end|>" typed in it is its characters, not the control token). */
  tokenize(text: string): number[] {
    const out: number[] = [];
    for (const [word] of text.matchAll(PRE_TOKENIZER)) {
      let ids = this.cache.get(word);
      if (!ids) {
        ids = this.word(word);
        if (this.cache.size < 50_000) this.cache.set(word, ids);
      }
      out.push(...ids);
    }
    return out;
  }

  /** The text of `tokens`; a character cut in half at the end is dropped. */
  detokenize(tokens: readonly number[]): string {
    const bytes: number[] = [];
    for (const id of tokens) for (const ch of this.texts[id] ?? "") bytes.push(this.alphabet.decode.get(ch) ?? 0x3f);
    return new TextDecoder().decode(new Uint8Array(bytes)).replace(/\uFFFD+$/, "");
  }

  /** One pre-tokenized word: its bytes as characters, then the lowest-ranked merge, again and again. */
  private word(word: string): number[] {
    let parts = [...new TextEncoder().encode(word)].map((b) => this.alphabet.encode[b]!);
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const rank = this.ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      const merged = parts[best]! + parts[best + 1]!;
      const next: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        if (i < parts.length - 1 && parts[i] === parts[best] && parts[i + 1] === parts[best + 1]) {
          next.push(merged);
          i++;
        } else {
          next.push(parts[i]!);
        }
      }
      parts = next;
    }
    return parts.map((p) => {
      const id = this.ids.get(p);
      if (id === undefined) throw new Error(`the Qwen2 vocabulary has no token for ${JSON.stringify(p)}`);
      return id;
    });
  }
}
