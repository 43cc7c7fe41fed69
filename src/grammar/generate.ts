// Step two: the normalised tree becomes GBNF rules. Values are written with no whitespace around them;
// whitespace (the bounded `ws` rule) goes only after `{`, `[`, `,`, `:` and before `}`, `]`. Rule names
// come from where the value is in the schema (`address-city`, `tags-item`, `node` for `#/$defs/node`),
// so a grammar can be read next to its schema; composite values get rules, scalars are written inline.

import {SchemaError} from "./errors.ts";
import {alt, EMPTY, fitRepeats, lit, opt, ref, render, rep, RESERVED_NAMES, seq, star, type Expr} from "./gbnf.ts";
import {stringExcept} from "./keys.ts";
import type {Node, Prop} from "./normalize.ts";

/** How values are spelled. JSON everywhere but in Gemma 4's tool calls, which have their own notation
 * (src/syntax/gemma4/grammar.ts): the walk over the schema and the member logic are the same, the leaves differ. */
export interface Notation {
  /** Whitespace after `{ [ , :` and before `} ]`. */
  readonly ws: Expr;
  /** Any value; any string; one member (any key, any value) of an object open to more. */
  any(): Expr;
  string(): Expr;
  member(): Expr;
  /** The body of a string of min..max characters. */
  boundedString(min: number, max: number | null): Expr;
  /** A listed (enum/const) value given as canonical JSON, as written; null when it cannot be written. */
  literal(json: string): string | null;
  /** A listed member's key as written before its colon. */
  key(k: string): string;
  /** The key of an extra member: any key but `keys` (none listed: any key). */
  extraKey(keys: string[]): Expr;
}

export const JSON_NOTATION: Notation = {
  ws: ref("ws"),
  any: () => ref("value"),
  string: () => ref("string"),
  member: () => ref("member"),
  // Length counts characters of the content; `char` is one character or one escape.
  boundedString: (min, max) => seq(lit('"'), rep(ref("char"), min, max), lit('"')),
  literal: (json) => json,
  key: (k) => JSON.stringify(k),
  extraKey: (keys) => (keys.length === 0 ? ref("string") : stringExcept(keys)),
};

export interface GenContext {
  root: Node;
  defs: ReadonlyMap<string, {node: Node; path: string}>;
  maxRules: number;
  /** Throws when the time budget is spent. */
  tick(): void;
  /** Throws the "too many rules" error. */
  tooManyRules(count: number): never;
  /** Default JSON. */
  notation?: Notation;
}

/** A name part from a key: runs of anything but letters and digits become one dash (GBNF names allow
 * only [a-zA-Z0-9-]); shortened so deep paths stay readable. */
export function namePart(key: string, fallback: string): string {
  return key.replace(/[^a-zA-Z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 32) || fallback;
}

/** The name of a child value: the root's children drop the "root-" prefix (`address`, not `root-address`). */
const child = (hint: string, part: string) => (hint === "root" ? part : `${hint}-${part}`);

interface Item {
  kv: Expr;
  required: boolean;
  repeat: boolean; // the extra keys: any number of them, after the listed ones
  part: string;
}

export class Generator {
  /** Rule bodies by name; the printed order is decided by printGrammar (analyze.ts), not by insertion. */
  readonly rules = new Map<string, Expr>();
  /** Rule name of each $ref target that was reached, and back. */
  readonly targetRule = new Map<string, string>();
  readonly ruleTarget = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  private readonly used = new Set<string>(RESERVED_NAMES);
  private readonly n: Notation;
  private readonly comma: (x: Expr) => Expr;

  constructor(private readonly ctx: GenContext) {
    const n = (this.n = ctx.notation ?? JSON_NOTATION);
    this.comma = (x) => seq(lit(","), n.ws, x);
  }

  run(): void {
    this.targetRule.set("#", "root");
    this.ruleTarget.set("root", "#");
    this.set("root", this.body(this.ctx.root, "root"));
  }

  // Tool-call grammars (tool-build.ts) write their own root around parameter values. These three give
  // them this generator's naming, so no rule of theirs can collide with a rule made for a value.

  /** The expression of one value (e.g. a tool parameter's), with the rules it needs. */
  value(node: Node, hint: string): Expr {
    return this.expr(node, hint);
  }

  /** A reference to a rule for `body`: a new name from `hint`, or the rule that already has this body. */
  rule(hint: string, body: Expr): Expr {
    return ref(this.define(hint, body));
  }

  /** Rules that refer to each other (the states of an automaton): names are taken first, then `bodies`
   * gets their references. Not shared by body: a state's body names the others. */
  ruleGroup(hints: readonly string[], bodies: (refs: Expr[]) => Expr[]): Expr[] {
    const names = hints.map((h) => this.allocate(h));
    const refs = names.map(ref);
    bodies(refs).forEach((body, i) => this.set(names[i]!, body));
    return refs;
  }

  /** The root rule, in place of `run`. */
  setRoot(body: Expr): void {
    this.set("root", body);
  }

  private allocate(hint: string): string {
    const base = hint.replace(/[^a-zA-Z0-9-]/g, "-") || "rule";
    let name = base;
    for (let i = 2; this.used.has(name); i++) name = `${base}-${i}`;
    this.used.add(name);
    return name;
  }

  private set(name: string, body: Expr): void {
    this.ctx.tick();
    this.rules.set(name, fitRepeats(body, (unit) => this.define(`${name}-part`, unit)));
    if (this.rules.size > this.ctx.maxRules) this.ctx.tooManyRules(this.rules.size);
  }

  /** A rule for `body`; an existing rule with the same body is reused (same text, same language). */
  private define(hint: string, body: Expr): string {
    const text = render(body);
    const same = this.byBody.get(text);
    if (same !== undefined) return same;
    const name = this.allocate(hint);
    this.byBody.set(text, name);
    this.set(name, body);
    return name;
  }

  /** The rule of a $ref target, made on first use. Its name is taken before its body is built, so a
   * recursive reference inside the body finds it. */
  private targetRef(target: string): Expr {
    let name = this.targetRule.get(target);
    if (name === undefined) {
      const def = this.ctx.defs.get(target)!;
      const last = target.slice(target.lastIndexOf("/") + 1).replace(/~1/g, "/").replace(/~0/g, "~");
      name = this.allocate(namePart(last, "def"));
      this.targetRule.set(target, name);
      this.ruleTarget.set(name, target);
      this.rules.set(name, EMPTY); // placeholder until the body is built
      this.set(name, this.body(def.node, name));
    }
    return ref(name);
  }

  /** The value as an expression: scalars inline (or a shared primitive rule), composites as a rule. */
  private expr(node: Node, hint: string): Expr {
    switch (node.k) {
      case "any":
        return this.n.any();
      case "number":
      case "integer":
      case "boolean":
      case "null":
        return ref(node.k);
      case "string":
        if (node.min === 0 && node.max === null) return this.n.string();
        // Named by its bounds, not its place: every string with the same bounds shares one rule.
        return ref(this.define(`string-${node.min}-${node.max ?? "inf"}`, this.body(node, hint)));
      case "lits": {
        const texts = this.literals(node.texts);
        return texts.length === 1 ? lit(texts[0]!) : ref(this.define(hint, alt(...texts.map(lit))));
      }
      case "ref":
        return this.targetRef(node.target);
      default:
        return ref(this.define(hint, this.body(node, hint)));
    }
  }

  /** The value's defining expression, for a rule of its own. */
  private body(node: Node, hint: string): Expr {
    switch (node.k) {
      case "string":
        return this.n.boundedString(node.min, node.max);
      case "lits":
        return alt(...this.literals(node.texts).map(lit));
      case "union":
        return alt(...node.alts.map((a, i) => this.expr(a, `${hint}-${i}`)));
      case "array":
        return this.array(node.items, node.min, node.max, hint);
      case "object":
        return this.object(node.props, node.extra, hint);
      default:
        return this.expr(node, hint);
    }
  }

  /** Listed values as this notation writes them; those it cannot write are left out (JSON writes all). */
  private literals(texts: string[]): string[] {
    const out = texts.map((t) => this.n.literal(t)).filter((t): t is string => t !== null);
    if (out.length === 0) throw new SchemaError(`schema: no listed value (${texts.join(", ")}) can be written in this notation`, "");
    return out;
  }

  private array(items: Node, min: number, max: number | null, hint: string): Expr {
    const WS = this.n.ws;
    if (max === 0) return seq(lit("["), WS, lit("]"));
    let item = this.expr(items, child(hint, "item"));
    // The item is repeated; a rule reference keeps the repetition cheap for llama.cpp's parser.
    if (item.t !== "ref") item = ref(this.define(child(hint, "item"), item));
    const more = rep(this.comma(item), Math.max(min - 1, 0), max === null ? null : max - 1);
    const list = seq(item, more, WS);
    return min === 0 ? seq(lit("["), WS, opt(list), lit("]")) : seq(lit("["), WS, list, lit("]"));
  }

  private object(props: Prop[], extra: Node | null, hint: string): Expr {
    const items: Item[] = props.map((p) => {
      const value = this.expr(p.node, child(hint, namePart(p.key, "key")));
      return {kv: seq(lit(this.n.key(p.key) + ":"), this.n.ws, value), required: p.required, repeat: false, part: namePart(p.key, "key")};
    });
    if (extra !== null) items.push({kv: this.extraRule(props, extra, hint), required: false, repeat: true, part: "extra"});
    return this.members(items, hint);
  }

  /** One extra key and its value. Key names exclude the listed keys (see keys.ts). */
  private extraRule(props: Prop[], extra: Node, hint: string): Expr {
    if (props.length === 0 && extra.k === "any") return this.n.member();
    const key = props.length === 0 ? this.n.extraKey([]) : ref(this.define(child(hint, "extra-key"), this.n.extraKey(props.map((p) => p.key))));
    return ref(this.define(child(hint, "extra"), seq(key, lit(":"), this.n.ws, this.expr(extra, child(hint, "extra-value")))));
  }

  /**
   * The members in order: every required one, any optional ones, then the extras, with exactly one
   * comma between two members. Once the first required member is written the rest is a plain sequence
   * (`"," ws kv` or `( "," ws kv )?`). Before it, the first member written decides where the list
   * starts, so there is one alternative per possible first member; what may follow member j-1 is a rule
   * (`<object>-after-<key>`) so each remainder is written once rather than once per alternative.
   */
  private members(items: Item[], hint: string): Expr {
    const WS = this.n.ws;
    const comma = this.comma;
    const open = seq(lit("{"), WS);
    if (items.length === 0) return seq(open, lit("}"));
    const n = items.length;
    const first = (it: Item) => (it.repeat ? seq(it.kv, star(comma(it.kv))) : it.kv);
    const follow = (it: Item) => (it.repeat ? star(comma(it.kv)) : it.required ? comma(it.kv) : opt(comma(it.kv)));
    const firstRequired = items.findIndex((it) => it.required);
    const r = firstRequired === -1 ? n : firstRequired;
    if (r === 0) return seq(open, first(items[0]!), ...items.slice(1).map(follow), WS, lit("}"));
    const rest: (Expr | undefined)[] = [];
    const restFrom = (j: number): Expr => {
      if (j >= n) return EMPTY;
      if (rest[j] === undefined) {
        // After the first required member (j > r) nothing decides anything any more: one flat sequence.
        const body = j > r ? seq(...items.slice(j).map(follow)) : seq(follow(items[j]!), restFrom(j + 1));
        rest[j] = ref(this.define(`${hint}-after-${items[j - 1]!.part}`, body));
      }
      return rest[j]!;
    };
    const starts: Expr[] = [];
    for (let j = 0; j <= Math.min(r, n - 1); j++) starts.push(seq(first(items[j]!), restFrom(j + 1)));
    const list = alt(...starts);
    return r < n ? seq(open, list, WS, lit("}")) : seq(open, opt(seq(list, WS)), lit("}"));
  }
}
