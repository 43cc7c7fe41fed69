// The compiler side of tool-call grammars: one phase grammar is built around the values of some tool
// parameters, so the parameter schema is normalised once (in tool-schema mode) and every value, every
// $ref target and every phase rule is made by ONE Generator. Sharing the generator is what keeps rule
// names apart: its allocator hands out every name, so a $defs entry called "xml-line" and our own
// "xml-line" rule cannot collide, and identical bodies share one rule. The budgets are the compiler's.
//
// Raw text (the xml shape's string parameters, Gemma's strings) is built here too: it is the one value
// language the JSON compiler has no notion of.

import {finishGrammar} from "./analyze.ts";
import {settings, type CompileOptions} from "./compile.ts";
import {invalid, SchemaError, seg} from "./errors.ts";
import {alt, classChar, cls, EMPTY, lit, ref, rep, seq, star, type Expr} from "./gbnf.ts";
import {Generator, JSON_NOTATION, namePart, type Notation} from "./generate.ts";
import {collectDefs, normalize, type NormContext, type Node, type Prop} from "./normalize.ts";

export type Settings = ReturnType<typeof settings>;

/** Settings for tool grammars: the caller's budgets, always in tool-schema mode. */
export function toolSettings(opts: CompileOptions = {}): Settings {
  return settings({...opts, toolSchema: true});
}

export class ToolBuild {
  readonly gen: Generator;
  /** The declared parameters in schema order; empty when built without a schema. */
  readonly props: Prop[] = [];
  private readonly nodes = new Map<string, {node: Node; path: string}>();
  private readonly s: Settings;
  private readonly tick: () => void;
  private readonly tooManyRules: (count: number) => never;

  /** How values are spelled (Gemma's tool calls have their own notation; JSON otherwise). */
  readonly notation: Notation;

  /** `parameters` null: a grammar with no parameter values (open, after-call, non-strict arguments).
   * `notation`: made once the build exists (its rules are this build's). */
  constructor(parameters: unknown, s: Settings, notation?: (b: ToolBuild) => Notation) {
    this.s = s;
    this.notation = notation ? notation(this) : JSON_NOTATION;
    const started = performance.now();
    this.tick = () => {
      if (performance.now() - started > s.maxMs) throw new SchemaError(`schema: compiling took longer than ${s.maxMs} ms`, "");
    };
    this.tooManyRules = (count: number): never => {
      throw new SchemaError(`schema: the grammar needs more than ${s.maxRules} rules (${count} so far)`, "");
    };
    let root: Node = {k: "any"};
    if (parameters !== null) {
      if (typeof parameters !== "object" || Array.isArray(parameters)) throw invalid("", "a strict tool's parameters must be an object schema");
      const defs = collectDefs(parameters);
      const ctx: NormContext = {root: parameters, defs, closedObjects: s.closedObjects, toolSchema: true,
        maxEnum: s.maxEnum, maxDepth: s.maxDepth, tick: this.tick};
      root = normalize(parameters, "", 0, ctx);
      for (const [id, def] of defs) this.nodes.set(id, {node: normalize(def.raw, def.path, 1, ctx), path: def.path});
      // `$ref: "#"` inside a parameter means the whole parameters object: a rule of its own here, since
      // the grammar's root is the phase, not that object.
      this.nodes.set("#", {node: root, path: ""});
      // A type list such as ["object", "null"] still describes the arguments by its object branch: the
      // arguments of a call are an object whatever else the schema allows.
      const object = root.k === "union" ? root.alts.find((a) => a.k === "object") : root;
      if (object?.k !== "object") throw invalid("", "a strict tool's parameters must be an object schema");
      this.props = object.props;
    }
    this.gen = new Generator({root, defs: this.nodes, maxRules: s.maxRules, tick: this.tick, tooManyRules: this.tooManyRules, notation: this.notation});
  }

  prop(key: string): Prop {
    const p = this.props.find((x) => x.key === key);
    if (p === undefined) throw new TypeError(`"${key}" is not a declared parameter`);
    return p;
  }

  /** A parameter's value as JSON (or in the build's notation), from the ordinary generator. */
  jsonValue(p: Prop): Expr {
    return this.gen.value(p.node, `param-${namePart(p.key, "key")}`);
  }

  /** Whether a parameter is written raw in the xml shape: its schema allows only strings. */
  isRaw(p: Prop): boolean {
    return this.stringOnly(p.node, new Set());
  }

  private stringOnly(node: Node, seen: Set<string>): boolean {
    switch (node.k) {
      case "string":
        return true;
      case "lits":
        return node.texts.every((t) => t.startsWith('"'));
      case "union":
        return node.alts.every((a) => this.stringOnly(a, seen));
      case "ref":
        // A recursion through strings only is nonsense; it is left to the JSON form, which reports it.
        if (seen.has(node.target)) return false;
        seen.add(node.target);
        return this.stringOnly(this.nodes.get(node.target)!.node, seen);
      default:
        return false;
    }
  }

  /** A parameter's value as raw text ended by `end` (a syntax's value end, see rawText) when its schema only
   * allows strings, else null (JSON then). */
  rawValue(p: Prop, end: string): Expr | null {
    return this.isRaw(p) ? this.raw(p.node, seg("properties") + seg(p.key), end) : null;
  }

  private raw(node: Node, path: string, end: string): Expr {
    switch (node.k) {
      case "string":
        return node.min === 0 && node.max === null ? this.rawText(end) : this.rawBounded(node.min, node.max, end);
      case "lits": {
        // A listed value that holds the value end cannot be written raw.
        const ok = node.texts.map((t) => JSON.parse(t) as string).filter((t) => rawWritable(t, end));
        if (ok.length === 0) throw invalid(path, `no listed value can be written as raw text (each holds ${JSON.stringify(rawStop(end))})`);
        return alt(...ok.map(lit));
      }
      case "union":
        return alt(...node.alts.map((a) => this.raw(a, path, end)));
      case "ref":
        return this.raw(this.nodes.get(node.target)!.node, path, end);
      default:
        throw new Error(`not a string-only schema: ${node.k}`);
    }
  }

  /**
   * Raw text of any length that `end` (the value end) cannot be found in before its own place, so the first
   * `end` after a value's start is its end. Two forms, by the syntax:
   * - `end` starts a line ("\n</parameter>", Qwen): no line of the text STARTS with the closing tag (mid-line
   *   it is fine). Stricter than "no line equal to it", and necessarily so: the phase must be complete exactly
   *   when "\n</parameter>" appears, so that text may never be a prefix of a longer value line either.
   * - `end` is a tag anywhere ("</parameter>", "</arg_value>", Gemma's `<|"|>`): the text never holds it.
   */
  rawText(end: string): Expr {
    if (!end.startsWith("\n")) return this.tagFree(end);
    const line = this.rawLine(0, null, end.slice(1));
    return this.gen.rule("xml-text", seq(line, star(seq(lit("\n"), line))));
  }

  /**
   * A raw string of min..max characters. Line form: one line (with newlines, "no line starts with the
   * closer" and a character count do not fit one repetition). Tag form: no character that starts the tag
   * (GBNF cannot count characters and exclude a many-character text at once).
   */
  rawBounded(min: number, max: number | null, end: string): Expr {
    if (end.startsWith("\n")) return this.rawLine(min, max, end.slice(1));
    const first = String.fromCodePoint(end.codePointAt(0)!);
    return this.gen.rule(`raw-${min}-${max ?? "inf"}`, rep(cls(`[^${classChar(first)}]`), min, max));
  }

  /**
   * One line (no newline) of min..max characters that does not start with `closer`. Lines shorter than the
   * closer are free; a longer line is closer-length characters that differ from the closer somewhere, then
   * the rest, so the count stays an ordinary repetition.
   */
  rawLine(min: number, max: number | null, closer: string): Expr {
    const any = cls("[^\\n]");
    const n = closer.length;
    const parts: Expr[] = [];
    if (min < n) parts.push(rep(any, min, max === null ? n - 1 : Math.min(max, n - 1)));
    if (max === null || max >= n) {
      const heads: Expr[] = [];
      for (let k = 0; k < n; k++) {
        heads.push(seq(lit(closer.slice(0, k)), cls(`[^${classChar(closer[k]!)}\\n]`), rep(any, n - 1 - k, n - 1 - k)));
      }
      const head = this.gen.rule("xml-head", alt(...heads));
      parts.push(seq(head, rep(any, Math.max(0, min - n), max === null ? null : max - n)));
    }
    return this.gen.rule(min === 0 && max === null ? "xml-line" : `xml-line-${min}-${max ?? "inf"}`, alt(...parts));
  }

  private readonly automata = new Map<string, Expr>();

  /**
   * Text in which `tag` never occurs and after which `tag` first occurs at its own place: the states of the
   * string-matching automaton for `tag` (state k: the text ends with the first k characters of the tag), as
   * right-recursive rules that read one character each. A state is a possible end only if reading the tag
   * from there first completes it at its last character (a tag that overlaps itself could complete earlier).
   */
  tagFree(tag: string): Expr {
    const hit = this.automata.get(tag);
    if (hit !== undefined) return hit;
    const t = Array.from(tag);
    const n = t.length;
    const chars = [...new Set(t)];
    const step = (k: number, c: string): number => {
      // The longest prefix of the tag that is a suffix of (first k characters + c).
      const seen = [...t.slice(0, k), c];
      for (let len = Math.min(n, seen.length); len > 0; len--) {
        if (seen.slice(seen.length - len).join("") === t.slice(0, len).join("")) return len;
      }
      return 0;
    };
    const ends = (k: number): boolean => {
      let state = k;
      for (let i = 0; i < n; i++) {
        state = step(state, t[i]!);
        if (state === n) return i === n - 1;
      }
      return false;
    };
    const refs = this.gen.ruleGroup(t.map((_, k) => `raw-state-${k}`), (states) =>
      t.map((_, k) => {
        const alts: Expr[] = [];
        const byTarget = new Map<number, string[]>();
        for (const c of chars) {
          const to = step(k, c);
          if (to === 0 || to === n) continue;
          byTarget.set(to, [...(byTarget.get(to) ?? []), c]);
        }
        // Every character that leads to no state but 0 (all but the tag's own, some of those too).
        const notZero = chars.filter((c) => step(k, c) !== 0);
        alts.push(seq(cls(`[^${notZero.map(classChar).join("")}]`), states[0]!));
        for (const [to, cs] of byTarget) alts.push(seq(cls(`[${cs.map(classChar).join("")}]`), states[to]!));
        if (ends(k)) alts.push(EMPTY);
        return alt(...alts);
      }),
    );
    this.automata.set(tag, refs[0]!);
    return refs[0]!;
  }

  rule(hint: string, body: Expr): Expr {
    return this.gen.rule(hint, body);
  }

  /** The grammar text with `root` as its root rule, checked as a compiled schema is. */
  finish(root: Expr): string {
    this.gen.setRoot(root);
    const gbnf = finishGrammar(this.gen, this.nodes, this.tooManyRules, this.s.maxRules);
    const bytes = Buffer.byteLength(gbnf, "utf8");
    if (bytes > this.s.maxGrammarBytes) throw new SchemaError(`schema: the grammar would be ${bytes} bytes (at most ${this.s.maxGrammarBytes})`, "");
    this.tick();
    return gbnf;
  }
}

/** What a raw value may not hold for the value end `end`: the closing tag at a line start, or the tag. */
function rawStop(end: string): string {
  return end.startsWith("\n") ? end.slice(1) : end;
}

/** True when `text` can be a raw value before `end` (see ToolBuild.rawText). */
export function rawWritable(text: string, end: string): boolean {
  if (!end.startsWith("\n")) return !(text + end).slice(0, -1).includes(end);
  const closer = end.slice(1);
  return !text.startsWith(closer) && !text.includes(end);
}

/** A whitespace-bounded reference to the shared `ws` primitive, for the phase rules. */
export const WS = ref("ws");
