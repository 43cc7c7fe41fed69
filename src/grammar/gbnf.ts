// A small GBNF expression tree and its printer. Rules are built as trees, not strings, because the
// compiler has to analyse them afterwards (productivity, left recursion) and because printing in one
// place keeps the escaping and the parenthesising right everywhere.

export type Expr =
  | {t: "lit"; s: string} // literal text, unescaped; "" is the empty sequence
  | {t: "cls"; src: string} // a character class exactly as GBNF spells it, e.g. [0-9]
  | {t: "ref"; name: string}
  | {t: "seq"; xs: Expr[]}
  | {t: "alt"; xs: Expr[]}
  | {t: "rep"; x: Expr; min: number; max: number | null}; // max null = unbounded

/** llama.cpp refuses a repetition count above 2000 (and silently drops a larger maximum), and refuses
 * a repeated group whose own sub-rules times the count exceed 2000; see `rep` and `fitRepeats`. */
export const MAX_REPEAT = 2000;

export const EMPTY: Expr = {t: "lit", s: ""};
export const lit = (s: string): Expr => ({t: "lit", s});
export const cls = (src: string): Expr => ({t: "cls", src});
export const ref = (name: string): Expr => ({t: "ref", name});

/** A sequence, flattened, with empty parts dropped and adjacent literals joined (`"\"a\"" ":"` reads
 * better as `"\"a\":"` and is the same language). */
export function seq(...parts: Expr[]): Expr {
  const xs: Expr[] = [];
  for (const p of parts) {
    for (const x of p.t === "seq" ? p.xs : [p]) {
      if (x.t === "lit" && x.s === "") continue;
      const last = xs[xs.length - 1];
      if (x.t === "lit" && last?.t === "lit") xs[xs.length - 1] = lit(last.s + x.s);
      else xs.push(x);
    }
  }
  if (xs.length === 0) return EMPTY;
  return xs.length === 1 ? xs[0]! : {t: "seq", xs};
}

/** Alternatives, flattened, with repeated single symbols dropped (an ambiguous grammar makes the sampler
 * carry more parse stacks for nothing). Composite alternatives are not compared: printing each one to
 * compare would make nested alternations quadratic, and those repeats do not occur in practice. */
export function alt(...parts: Expr[]): Expr {
  const xs: Expr[] = [];
  const seen = new Set<string>();
  for (const p of parts) {
    for (const x of p.t === "alt" ? p.xs : [p]) {
      const id = x.t === "lit" ? "l" + x.s : x.t === "ref" ? "r" + x.name : x.t === "cls" ? "c" + x.src : null;
      if (id !== null && seen.has(id)) continue;
      if (id !== null) seen.add(id);
      xs.push(x);
    }
  }
  return xs.length === 1 ? xs[0]! : {t: "alt", xs};
}

/** x{min,max}, kept within what llama.cpp's parser accepts (no count above MAX_REPEAT): a larger
 * minimum is split into exact chunks (x{2000} x{2000} x{m}); a larger maximum is split as x{min}
 * x{0,max-min} while max-min fits, and otherwise left open, which is what the engine would do silently
 * anyway. Large repeated groups are dealt with later, by `fitRepeats`. */
export function rep(x: Expr, min: number, max: number | null): Expr {
  if (max !== null && max <= 0) return EMPTY;
  if (min === 1 && max === 1) return x;
  const one = (lo: number, hi: number | null): Expr => (lo === 1 && hi === 1 ? x : {t: "rep", x, min: lo, max: hi});
  const chunks: Expr[] = [];
  while (min > MAX_REPEAT) {
    chunks.push(one(MAX_REPEAT, MAX_REPEAT));
    min -= MAX_REPEAT;
    if (max !== null) max -= MAX_REPEAT;
  }
  if (max !== null && max > MAX_REPEAT) {
    if (max - min > MAX_REPEAT) max = null;
    else {
      if (min > 0) chunks.push(one(min, min));
      chunks.push(one(0, max - min));
      return seq(...chunks);
    }
  }
  if (!(min === 0 && max === 0)) chunks.push(one(min, max));
  return seq(...chunks);
}

export const opt = (x: Expr): Expr => rep(x, 0, 1);
export const star = (x: Expr): Expr => rep(x, 0, null);

/** GBNF literal: quotes and backslashes escaped, \n \t \r by name, other controls as \xHH; the rest as is. */
export function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + cp.toString(16).toUpperCase().padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}

/** One character inside a GBNF class: letters and digits as is, everything else by code, so no
 * character can be read as `]`, `^`, `-` or an escape. */
export function classChar(ch: string): string {
  if (/^[a-zA-Z0-9]$/.test(ch)) return ch;
  const cp = ch.codePointAt(0)!;
  if (cp <= 0xff) return "\\x" + cp.toString(16).toUpperCase().padStart(2, "0");
  if (cp <= 0xffff) return "\\u" + cp.toString(16).toUpperCase().padStart(4, "0");
  return "\\U" + cp.toString(16).toUpperCase().padStart(8, "0");
}

function suffix(min: number, max: number | null): string {
  if (min === 0 && max === 1) return "?";
  if (min === 0 && max === null) return "*";
  if (min === 1 && max === null) return "+";
  if (max === null) return `{${min},}`;
  return min === max ? `{${min}}` : `{${min},${max}}`;
}

/** Prints an expression. Alternatives are parenthesised by the sequence or repetition around them, so a
 * rule body that is an alternation prints bare. */
export function render(e: Expr): string {
  switch (e.t) {
    case "lit":
      return quote(e.s);
    case "cls":
      return e.src;
    case "ref":
      return e.name;
    case "seq":
      return e.xs.map((x) => (x.t === "alt" ? `( ${render(x)} )` : render(x))).join(" ");
    case "alt":
      return e.xs.map((x) => render(x)).join(" | ");
    case "rep": {
      const inner = e.x.t === "seq" || e.x.t === "alt" || e.x.t === "rep" || (e.x.t === "lit" && e.x.s === "")
        ? `( ${render(e.x)} )`
        : render(e.x);
      return inner + suffix(e.min, e.max);
    }
  }
}

/** The rules every grammar may use, by name. Only those a grammar references are printed. */
const CHAR = cls('[^"\\\\\\x00-\\x1F]');
const HEX = cls("[0-9a-fA-F]");
const DIGIT = cls("[0-9]");
const INT = seq(opt(lit("-")), alt(lit("0"), seq(cls("[1-9]"), rep(DIGIT, 0, 15))));

export const PRIMITIVES: ReadonlyMap<string, Expr> = new Map<string, Expr>([
  // Bounded whitespace: one space, or a newline and at most one space or tab. At most two characters
  // per gap means at most two whitespace-only tokens in a row (the spec's bound) by construction, so the
  // sampler needs no per-step token bias for it (a bias that changes between steps makes the native
  // sampler rebuild its chain, which cost about 7% of decode speed).
  ["ws", opt(alt(lit(" "), seq(lit("\n"), opt(cls("[ \\t]")))))],
  ["value", alt(ref("object"), ref("array"), ref("string"), ref("number"), ref("boolean"), ref("null"))],
  ["object", seq(lit("{"), ref("ws"), opt(seq(ref("member"), star(seq(lit(","), ref("ws"), ref("member"))), ref("ws"))), lit("}"))],
  ["member", seq(ref("string"), lit(":"), ref("ws"), ref("value"))],
  ["array", seq(lit("["), ref("ws"), opt(seq(ref("value"), star(seq(lit(","), ref("ws"), ref("value"))), ref("ws"))), lit("]"))],
  ["string", seq(lit('"'), star(ref("char")), lit('"'))],
  // Any character but `"`, `\` and controls, or one JSON escape; an escape counts as one character.
  ["char", alt(CHAR, seq(lit("\\"), alt(cls('["\\\\/bfnrt]'), seq(lit("u"), rep(HEX, 4, 4)))))],
  // Digit runs are bounded so that a number always ends: 16 integer digits, 16 decimals, 3 exponent digits.
  ["integer", INT],
  ["number", seq(ref("integer"), opt(seq(lit("."), rep(DIGIT, 1, 16))), opt(seq(cls("[eE]"), opt(cls("[-+]")), rep(DIGIT, 1, 3))))],
  ["boolean", alt(lit("true"), lit("false"))],
  ["null", lit("null")],
  // Extra-key names are spelled canonically (as JSON.stringify writes them) so that excluding the listed
  // keys is exact: one spelling per name, see keys.ts.
  ["key-char", alt(CHAR, ref("key-esc"))],
  ["key-esc", seq(lit("\\"), alt(cls('["\\\\bfnrt]'), seq(lit("u00"), alt(seq(lit("0"), cls("[0-7bef]")), seq(lit("1"), cls("[0-9a-f]"))))))],
]);

/** Rule names the compiler never gives to a schema-derived rule. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(["root", ...PRIMITIVES.keys()]);

/** The rule names an expression refers to, in order of appearance. */
export function refsOf(e: Expr, out: string[] = []): string[] {
  if (e.t === "ref") out.push(e.name);
  else if (e.t === "seq" || e.t === "alt") for (const x of e.xs) refsOf(x, out);
  else if (e.t === "rep") refsOf(e.x, out);
  return out;
}

/** How many symbols llama.cpp's parser creates while reading `e` inside a group: one per nested group,
 * one per optional step of each repetition, and one per rule name mentioned there for the first time. */
function generated(e: Expr): number {
  switch (e.t) {
    case "lit":
    case "cls":
      return 0;
    case "ref":
      return 1; // a rule name the parser has not seen yet gets its id here; counted as if always new
    case "seq":
      return e.xs.reduce((n, x) => n + (x.t === "alt" ? 1 + generated(x) : generated(x)), 0);
    case "alt":
      return e.xs.reduce((n, x) => n + generated(x), 0);
    case "rep":
      return (isGroup(e.x) ? groupCost(e.x) : 0) + (e.max === null ? 1 : e.max - e.min);
  }
}

const isGroup = (x: Expr) => x.t === "seq" || x.t === "alt" || x.t === "rep" || (x.t === "lit" && x.s === "");
/** llama.cpp's count for a repeated unit: 1 for a symbol, 1 + what it creates inside for a group. */
const groupCost = (x: Expr) => (isGroup(x) ? 1 + generated(x) : 1);

/** Rewrites `e` so that no repetition trips llama.cpp's "rules times repetitions" limit: a repeated
 * group that is too big is moved into a rule of its own (`hoist` names it), which costs 1. */
export function fitRepeats(e: Expr, hoist: (unit: Expr) => string): Expr {
  switch (e.t) {
    case "seq":
      return {t: "seq", xs: e.xs.map((x) => fitRepeats(x, hoist))};
    case "alt":
      return {t: "alt", xs: e.xs.map((x) => fitRepeats(x, hoist))};
    case "rep": {
      let x = fitRepeats(e.x, hoist);
      const total = e.max !== null && e.max > 0 ? e.max : Math.max(e.min, 1);
      if (isGroup(x) && groupCost(x) * total > MAX_REPEAT) x = ref(hoist(x));
      return {...e, x};
    }
    default:
      return e;
  }
}
