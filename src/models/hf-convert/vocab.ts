// tokenizer.json (a WordPiece model, as BERT checkpoints ship it) → llama.cpp's "bert" vocabulary, the
// way convert_hf_to_gguf.py writes it: every id up to the model's vocab size, ids with no token as
// "[PAD<i>]" (unused), added special tokens as control tokens, and the "phantom space" spelling llama.cpp's
// WPM tokenizer matches against: a word-initial piece gets a leading U+2581, a "##" continuation loses
// its "##", control tokens stay as written.

/** gguf-py TokenType values. */
export const TokenType = {NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6} as const;

export interface BertVocab {
  tokens: string[];
  types: number[];
  /** Special token ids found in the tokenizer (absent ones left out). */
  special: {cls?: number; sep?: number; unk?: number; pad?: number; mask?: number};
}

interface TokenizerJson {
  model?: {type?: string; vocab?: Record<string, number>; unk_token?: string; continuing_subword_prefix?: string};
  added_tokens?: {id: number; content: string; special?: boolean}[];
  normalizer?: {type?: string; lowercase?: boolean} | null;
}

const PHANTOM_SPACE = "\u2581";

export function phantomSpelling(token: string, type: number, prefix = "##"): string {
  if (type === TokenType.CONTROL) return token;
  if (token.startsWith(prefix)) return token.slice(prefix.length);
  return PHANTOM_SPACE + token;
}

/** Refuses tokenizers the "bert" vocabulary cannot express, naming what was found. */
export function buildBertVocab(tokenizer: unknown, vocabSize: number | undefined): BertVocab {
  const t = tokenizer as TokenizerJson;
  const kind = t?.model?.type;
  if (kind !== "WordPiece" || !t.model?.vocab) {
    throw new Error(`tokenizer.json holds a ${kind ?? "unknown"} tokenizer; a BERT WordPiece tokenizer is needed`);
  }
  const byId = new Map<number, string>();
  for (const [tok, id] of Object.entries(t.model.vocab)) byId.set(id, tok);
  const added = new Map<number, {content: string; special: boolean}>();
  for (const a of t.added_tokens ?? []) {
    added.set(a.id, {content: a.content, special: a.special ?? false});
    if (!byId.has(a.id)) byId.set(a.id, a.content);
  }
  const maxId = Math.max(...byId.keys());
  const size = vocabSize ?? maxId + 1;
  if (maxId >= size) throw new Error(`tokenizer.json has token id ${maxId} but config.json's vocab_size is ${size}`);
  const prefix = t.model.continuing_subword_prefix ?? "##";
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < size; i++) {
    const tok = byId.get(i);
    if (tok === undefined) {
      tokens.push(`[PAD${i}]`);
      types.push(TokenType.UNUSED);
      continue;
    }
    const a = added.get(i);
    // As the reference converter: an added token is a control token when special (or looks like "[X]"/"<x>").
    const type = a ? (a.special || /^\[.*\]$|^<.*>$/.test(a.content) ? TokenType.CONTROL : TokenType.USER_DEFINED) : TokenType.NORMAL;
    tokens.push(phantomSpelling(tok, type, prefix));
    types.push(type);
  }
  const idOf = (s: string | undefined) => (s === undefined ? undefined : t.model!.vocab![s] ?? t.added_tokens?.find((a) => a.content === s)?.id);
  const special: BertVocab["special"] = {};
  const found = {cls: idOf("[CLS]"), sep: idOf("[SEP]"), unk: idOf(t.model.unk_token ?? "[UNK]"), pad: idOf("[PAD]"), mask: idOf("[MASK]")};
  for (const [k, v] of Object.entries(found)) if (v !== undefined) special[k as keyof BertVocab["special"]] = v;
  return {tokens, types, special};
}
