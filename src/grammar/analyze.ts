// Checks on the finished rule set that only the whole grammar can answer, and its printing.
//
// Productivity: a rule is productive when some alternative uses only terminals and productive rules
// (least fixpoint). An unproductive rule is a recursion with no way out (a node that requires a child
// node): no finite JSON value matches, and the sampler would generate until the token budget ends.
// Left recursion: a rule that can reach itself before reading any character; llama.cpp refuses those
// grammars, so it is reported here with a message about the schema instead.

import {SchemaError} from "./errors.ts";
import {PRIMITIVES, refsOf, render, type Expr} from "./gbnf.ts";
import type {Generator} from "./generate.ts";

function productive(e: Expr, ok: ReadonlySet<string>): boolean {
  switch (e.t) {
    case "lit":
    case "cls":
      return true;
    case "ref":
      return ok.has(e.name);
    case "seq":
      return e.xs.every((x) => productive(x, ok));
    case "alt":
      return e.xs.some((x) => productive(x, ok));
    case "rep":
      return e.min === 0 || productive(e.x, ok);
  }
}

/** Rules that cannot derive any finite text, in the order given. */
export function unproductiveRules(rules: ReadonlyMap<string, Expr>): string[] {
  const ok = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, body] of rules) {
      if (!ok.has(name) && productive(body, ok)) {
        ok.add(name);
        changed = true;
      }
    }
  }
  return [...rules.keys()].filter((n) => !ok.has(n));
}

function nullable(e: Expr, empty: ReadonlySet<string>): boolean {
  switch (e.t) {
    case "lit":
      return e.s === "";
    case "cls":
      return false;
    case "ref":
      return empty.has(e.name);
    case "seq":
      return e.xs.every((x) => nullable(x, empty));
    case "alt":
      return e.xs.some((x) => nullable(x, empty));
    case "rep":
      return e.min === 0 || nullable(e.x, empty);
  }
}

/** Rules that can be reached from `e` before any character is read. */
function leftRefs(e: Expr, empty: ReadonlySet<string>, out: Set<string>): void {
  switch (e.t) {
    case "ref":
      out.add(e.name);
      return;
    case "seq":
      for (const x of e.xs) {
        leftRefs(x, empty, out);
        if (!nullable(x, empty)) return;
      }
      return;
    case "alt":
      for (const x of e.xs) leftRefs(x, empty, out);
      return;
    case "rep":
      leftRefs(e.x, empty, out);
      return;
    default:
      return;
  }
}

/** A rule on a left-recursive cycle, or null. */
export function leftRecursiveRule(rules: ReadonlyMap<string, Expr>): string | null {
  const empty = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, body] of rules) {
      if (!empty.has(name) && nullable(body, empty)) {
        empty.add(name);
        changed = true;
      }
    }
  }
  const edges = new Map<string, Set<string>>();
  for (const [name, body] of rules) {
    const out = new Set<string>();
    leftRefs(body, empty, out);
    edges.set(name, out);
  }
  // Depth-first search for a cycle; iterative so a long chain of rules cannot overflow the stack.
  const state = new Map<string, 1 | 2>(); // 1 = on the current path, 2 = done
  for (const start of rules.keys()) {
    if (state.has(start)) continue;
    const stack: [string, Iterator<string>][] = [[start, (edges.get(start) ?? new Set()).values()]];
    state.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const next = top[1].next();
      if (next.done) {
        state.set(top[0], 2);
        stack.pop();
        continue;
      }
      const s = state.get(next.value);
      if (s === 1) return next.value;
      if (s === undefined && edges.has(next.value)) {
        state.set(next.value, 1);
        stack.push([next.value, edges.get(next.value)!.values()]);
      }
    }
  }
  return null;
}

/** The grammar text: root first, then every reachable schema rule in order of first reference (a rule
 * is printed after the one that uses it), then the primitives it uses in a fixed order. Unreachable
 * rules are left out. */
export function printGrammar(rules: ReadonlyMap<string, Expr>): {text: string; count: number} {
  const all = new Map<string, Expr>(rules);
  for (const [name, body] of PRIMITIVES) all.set(name, body);
  const seen = new Set<string>(["root"]);
  const order: string[] = [];
  const queue = ["root"];
  // Breadth-first so sibling rules (the properties of one object) stay together.
  for (let i = 0; i < queue.length; i++) {
    const name = queue[i]!;
    order.push(name);
    for (const r of refsOf(all.get(name)!)) {
      if (seen.has(r)) continue;
      seen.add(r);
      queue.push(r);
    }
  }
  const schemaRules = order.filter((n) => !PRIMITIVES.has(n));
  const primitives = [...PRIMITIVES.keys()].filter((n) => seen.has(n));
  const names = [...schemaRules, ...primitives];
  return {text: names.map((n) => `${n} ::= ${render(all.get(n)!)}\n`).join(""), count: names.length};
}

/** Runs the whole-grammar checks on a generated rule set and prints it. `defs` gives each $ref target's
 * place in the schema, for the messages. */
export function finishGrammar(gen: Generator, defs: ReadonlyMap<string, {path: string}>, tooManyRules: (n: number) => never, maxRules: number): string {
  const all = new Map<string, Expr>(gen.rules);
  for (const [name, body] of PRIMITIVES) all.set(name, body);
  // A recursion is named by its $ref target: the rules in between have names the user never wrote.
  const targetOf = (rules: string[]) => {
    const targets = rules.map((r) => gen.ruleTarget.get(r)).filter((t): t is string => t !== undefined);
    return targets.find((t) => t !== "#") ?? targets[0] ?? "#";
  };
  const dead = unproductiveRules(all);
  if (dead.length > 0) {
    const target = targetOf(dead);
    throw new SchemaError(`schema: the recursion through "${target}" has no base case (no finite JSON value matches)`, defs.get(target)?.path ?? "");
  }
  const loop = leftRecursiveRule(all);
  if (loop !== null) {
    const target = targetOf([loop]);
    throw new SchemaError(`schema: "${target}" is defined as itself (a cycle of $ref or anyOf with nothing in between)`, defs.get(target)?.path ?? "");
  }
  const {text, count} = printGrammar(gen.rules);
  if (count > maxRules) tooManyRules(count);
  return text;
}
