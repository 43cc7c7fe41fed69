// Phase grammars of the tagged shape (MiniMax M3): `M<tool_call>\nM<invoke name="NAME">` then one parameter per phase,
// `M<KEY>VALUEM</KEY>` in any order, or the call's close `M</invoke>`; after a call, another `M<invoke name="NAME">`
// or the section's close `M</tool_call>` (M: the syntax's mark). Nothing is written between parameters; the layout
// newline after a call's close is the after phase's optional lead (see ../literals.ts).
//
// Values, as the template writes them: a string is raw text (it never holds the mark, so the first mark after it
// starts an end tag); numbers, integers and booleans are their JSON text; an object is its members as elements named
// after their keys, in the schema's order (each optional one may be left out); an array is its items, each in an
// `item` element. A value that may be null (the template leaves nulls out), a $ref or an unconstrained value cannot be
// written so: such a strict tool is served unenforced, saying why. A non-strict tool's parameters may nest elements to
// any depth (the names of an element's start and end tags are not matched by the grammar; the parser reads what it
// can).

import type {TaggedCallSyntax} from "../../core/call-syntax.ts";
import {SchemaError} from "../../grammar/errors.ts";
import {alt, cls, lit, opt, rep, seq, star, type Expr} from "../../grammar/gbnf.ts";
import {namePart} from "../../grammar/generate.ts";
import {WS, type ToolBuild} from "../../grammar/tool-build.ts";
import type {Node} from "../../grammar/normalize.ts";
import {afterOpener, optLit, splitTail} from "../literals.ts";

/** Element names as the model writes them (a parameter name with other characters cannot be written). */
export const ELEMENT_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** The literals, with the mark in front of each tag and the layout newlines split off. */
export function taggedPieces(s: TaggedCallSyntax) {
  const sectionOpen = s.mark + s.section.open;
  const close = splitTail(s.mark + s.close);
  return {
    sectionOpen,
    /** The text that opens the calls in free text. */
    opener: splitTail(sectionOpen).core,
    open: s.mark + s.open,
    close: close.core,
    /** Optional before the next call or the section's close. */
    afterLead: close.tail,
    sectionClose: s.mark + s.section.close,
  };
}

const toolName = (b: ToolBuild, names: string[]) => b.rule("tool-name", alt(...names.map(lit)));

export function taggedOpen(b: ToolBuild, s: TaggedCallSyntax, names: string[], fromReplyStart: boolean): Expr {
  const p = taggedPieces(s);
  if (fromReplyStart) return seq(WS, lit(p.sectionOpen + p.open), toolName(b, names), lit(s.nameEnd));
  const rest = afterOpener({section: {open: p.sectionOpen}, open: p.open}, p.opener);
  return seq(optLit(rest.lead), lit(rest.text), toolName(b, names), lit(s.nameEnd));
}

/** A value of `node` as nested elements (see the header); `path` names it in a refusal. */
function elementValue(b: ToolBuild, s: TaggedCallSyntax, node: Node, path: string): Expr {
  const refuse = (what: string): never => {
    throw new SchemaError(`schema: the parameter ${path} is ${what}, which strict tools do not enforce in this tool-call syntax ` +
      "(it writes values as nested elements)", "");
  };
  const raw = b.rawValue({key: path, node, required: true}, s.mark);
  if (raw !== null) return raw;
  switch (node.k) {
    case "number":
    case "integer":
    case "boolean":
      return b.gen.value(node, "scalar");
    case "lits":
      if (node.texts.some((t) => !/^[-0-9tf]/.test(t))) refuse("a list of values that are not all strings, numbers or booleans");
      return b.gen.value(node, "scalar");
    case "union":
      return alt(...node.alts.map((a) => elementValue(b, s, a, path)));
    case "object":
      return seq(...node.props.map((p) => {
        checkName(p.key);
        const el = element(s, p.key, elementValue(b, s, p.node, `${path}.${p.key}`));
        return p.required ? el : opt(el);
      }));
    case "array": {
      const item = element(s, s.item, elementValue(b, s, node.items, `${path}[]`));
      return rep(item, node.min, node.max);
    }
    case "null":
      return refuse("a value that may be null");
    case "ref":
      return refuse("a $ref");
    default:
      return refuse("an unconstrained value");
  }
}

/** `M<NAME>VALUEM</NAME>`. */
const element = (s: TaggedCallSyntax, name: string, value: Expr): Expr => seq(lit(`${s.mark}<${name}>`), value, lit(`${s.mark}</${name}>`));

function checkName(key: string): void {
  if (!ELEMENT_NAME.test(key)) {
    throw new SchemaError(`schema: the parameter name ${JSON.stringify(key)} cannot be written as an element name in this tool-call syntax`, "");
  }
}

/** One parameter not written yet, or the call's close once every required one is. */
export function taggedStrictArguments(b: ToolBuild, s: TaggedCallSyntax, written: string[]): Expr {
  const p = taggedPieces(s);
  const done = new Set(written);
  const left = b.props.filter((x) => !done.has(x.key));
  const params = left.map((x) => {
    checkName(x.key);
    return b.rule(`arg-${namePart(x.key, "key")}`, element(s, x.key, elementValue(b, s, x.node, JSON.stringify(x.key))));
  });
  const requiredLeft = left.filter((x) => x.required);
  return alt(...params, ...(requiredLeft.length === 0 ? [lit(p.close)] : []));
}

/** A non-strict tool: one parameter per phase with any name, whose content is text and nested elements. */
export function taggedAnyArguments(b: ToolBuild, s: TaggedCallSyntax): Expr {
  const p = taggedPieces(s);
  const name = b.rule("element-name", seq(cls("[A-Za-z_]"), star(cls("[A-Za-z0-9_.-]"))));
  const text = b.tagFree(s.mark);
  // CONTENT ::= TEXT (M<NAME> CONTENT M</NAME> TEXT)*
  const content = b.gen.ruleGroup(["element-content"], ([c]) => [
    seq(text, star(seq(lit(`${s.mark}<`), name, lit(">"), c!, lit(`${s.mark}</`), name, lit(">"), text))),
  ])[0]!;
  const param = seq(lit(`${s.mark}<`), name, lit(">"), content, lit(`${s.mark}</`), name, lit(">"));
  return alt(param, lit(p.close));
}

/** After a call: another call's opening ("more"), or the section's close ("end"). */
export function taggedAfter(b: ToolBuild, s: TaggedCallSyntax, more: boolean, names: string[]): Expr {
  const p = taggedPieces(s);
  const end = lit(p.sectionClose);
  const next = seq(lit(p.open), toolName(b, names), lit(s.nameEnd));
  return seq(optLit(p.afterLead), more ? alt(next, end) : end);
}
