// The compiler side of tool-call grammars: one phase grammar is built around the values of some tool
// parameters, so the parameter schema is normalised once (in tool-schema mode) and every value, every
// $ref target and every phase rule is made by ONE Generator. Sharing the generator is what keeps rule
// names apart: its allocator hands out every name, so a $defs entry called "xml-line" and our own
// "xml-line" rule cannot collide, and identical bodies share one rule. The budgets are the compiler's.
//
// Raw XML text (qwen-xml string parameters) is built here too: it is the one value language the JSON
// compiler has no notion of.

import {finishGrammar} from "./analyze.ts";
import {settings, type CompileOptions} from "./compile.ts";
import {invalid, SchemaError, seg} from "./errors.ts";
import {alt, classChar, cls, lit, ref, rep, seq, star, type Expr} from "./gbnf.ts";
import {Generator, namePart} from "./generate.ts";
import {collectDefs, normalize, type NormContext, type Node, type Prop} from "./normalize.ts";

export type Settings = ReturnType<typeof settings>;

/** What closes a parameter's value in qwen-xml, on a line of its own. */
export const XML_CLOSER = "</parameter>";

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

  /** `parameters` null: a grammar with no parameter values (open, after-call, non-strict arguments). */
  constructor(parameters: unknown, s: Settings) {
    this.s = s;
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
      const ctx: NormContext = {root: parameters, defs, closedObjects: s.closedObjects, toolSchema: true, maxEnum: s.maxEnum, maxDepth: s.maxDepth, tick: this.tick};
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
    this.gen = new Generator({root, defs: this.nodes, maxRules: s.maxRules, tick: this.tick, tooManyRules: this.tooManyRules});
  }

  prop(key: string): Prop {
    const p = this.props.find((x) => x.key === key);
    if (p === undefined) throw new TypeError(`"${key}" is not a declared parameter`);
    return p;
  }

  /** A parameter's value as JSON, from the ordinary generator. */
  jsonValue(p: Prop): Expr {
    return this.gen.value(p.node, `param-${namePart(p.key, "key")}`);
  }

  /** A parameter's value as raw XML text when its schema only allows strings, else null (JSON then). */
  rawValue(p: Prop): Expr | null {
    return this.raw(p.node, seg("properties") + seg(p.key), new Set());
  }

  private raw(node: Node, path: string, seen: Set<string>): Expr | null {
    switch (node.k) {
      case "string":
        return node.min === 0 && node.max === null ? this.rawText() : this.rawLine(node.min, node.max);
      case "lits": {
        if (!node.texts.every((t) => t.startsWith('"'))) return null;
        // A listed value that would write the closer on a line of its own cannot be written raw.
        const ok = node.texts.map((t) => JSON.parse(t) as string).filter(rawWritable);
        if (ok.length === 0) throw invalid(path, `no listed value can be written as raw XML text (each has a line starting with ${XML_CLOSER})`);
        return alt(...ok.map(lit));
      }
      case "union": {
        const alts = node.alts.map((a) => this.raw(a, path, seen));
        return alts.every((a) => a !== null) ? alt(...(alts as Expr[])) : null;
      }
      case "ref": {
        // A recursion through strings only is nonsense; it is left to the JSON form, which reports it.
        if (seen.has(node.target)) return null;
        seen.add(node.target);
        return this.raw(this.nodes.get(node.target)!.node, path, seen);
      }
      default:
        return null;
    }
  }

  /**
   * Raw text of any length and any number of lines, no line of which starts with the closer. Stricter
   * than "no line equal to the closer", and necessarily so: the phase must be complete exactly when
   * "\n</parameter>" appears, so that text may never be a prefix of a longer value line either.
   */
  rawText(): Expr {
    const line = this.rawLine(0, null);
    return this.gen.rule("xml-text", seq(line, star(seq(lit("\n"), line))));
  }

  /**
   * One line (no newline) of min..max characters that does not start with the closer. Lines shorter
   * than the closer are free; a longer line is 12 characters that differ from the closer somewhere,
   * then the rest, so the count stays an ordinary repetition. Bounded strings are one line in raw XML:
   * with newlines, "no line starts with the closer" and a character count do not fit one repetition.
   */
  rawLine(min: number, max: number | null): Expr {
    const any = cls("[^\\n]");
    const n = XML_CLOSER.length;
    const parts: Expr[] = [];
    if (min < n) parts.push(rep(any, min, max === null ? n - 1 : Math.min(max, n - 1)));
    if (max === null || max >= n) {
      const heads: Expr[] = [];
      for (let k = 0; k < n; k++) {
        heads.push(seq(lit(XML_CLOSER.slice(0, k)), cls(`[^${classChar(XML_CLOSER[k]!)}\\n]`), rep(any, n - 1 - k, n - 1 - k)));
      }
      const head = this.gen.rule("xml-head", alt(...heads));
      parts.push(seq(head, rep(any, Math.max(0, min - n), max === null ? null : max - n)));
    }
    return this.gen.rule(min === 0 && max === null ? "xml-line" : `xml-line-${min}-${max ?? "inf"}`, alt(...parts));
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

/** True when `text` can be a raw XML value: no line of it starts with the closer. */
export function rawWritable(text: string): boolean {
  return !text.startsWith(XML_CLOSER) && !text.includes("\n" + XML_CLOSER);
}

/** A whitespace-bounded reference to the shared `ws` primitive, for the phase rules. */
export const WS = ref("ws");
