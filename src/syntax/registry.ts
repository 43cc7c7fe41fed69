// From a syntax to its shape: the one place that looks at `syntax.shape`. Every other module asks the shape.

import type {CallSyntax} from "../core/call-syntax.ts";
import {gemma4Shape} from "./gemma4/index.ts";
import {harmonyShape} from "./harmony/index.ts";
import {jsonShape} from "./json/index.ts";
import {namedShape} from "./named/index.ts";
import {pythonicShape} from "./pythonic/index.ts";
import {recipientsShape} from "./recipients/index.ts";
import type {CallShape} from "./shape.ts";
import {taggedShape} from "./tagged/index.ts";
import {xmlShape} from "./xml/index.ts";

const checked = new WeakSet<object>();

/** The shape that serves `syntax`, its data checked once (a malformed syntax is a programming error: TypeError). */
export function shapeOf(syntax: CallSyntax): CallShape {
  if (typeof syntax !== "object" || syntax === null) throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} is not a CallSyntax`);
  const shape = pick(syntax);
  if (!checked.has(syntax)) {
    shape.check(syntax);
    checked.add(syntax);
  }
  return shape;
}

function pick(syntax: CallSyntax): CallShape {
  switch (syntax.shape) {
    case "json":
      return jsonShape as CallShape;
    case "named":
      return namedShape as CallShape;
    case "xml":
      return xmlShape as CallShape;
    case "pythonic":
      return pythonicShape as CallShape;
    case "tagged":
      return taggedShape as CallShape;
    case "recipients":
      return recipientsShape as CallShape;
    case "custom":
      if (syntax.kind === "harmony") return harmonyShape as CallShape;
      if (syntax.kind === "gemma4") return gemma4Shape as CallShape;
      throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)}: unknown custom kind`);
    default:
      throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} has no known shape`);
  }
}

/** The texts that open a call in free text (the steering binds the open phase right after one). */
export const callOpeners = (syntax: CallSyntax): string[] => shapeOf(syntax).openers(syntax);

/** Whether calls are followed by an after-call phase: JSON lists, sections, and calls that nothing closes. */
export const hasAfterPhase = (syntax: CallSyntax): boolean => shapeOf(syntax).hasAfterPhase(syntax);

/** Why a syntax read from a template's renders cannot be served, or null: an edge its calls' parsers could not find
 * (an empty marker would match everywhere), else data its shape refuses. */
export function unusableSyntax(syntax: CallSyntax): string | null {
  const shape = pick(syntax);
  const missing = shape.missingEdge(syntax);
  if (missing !== null) return missing;
  try {
    shapeOf(syntax);
    return null;
  } catch (err) {
    if (err instanceof TypeError) return `the markers found do not make a usable syntax (${err.message})`;
    throw err;
  }
}

/** Checks a syntax's data (TypeError when malformed). */
export const checkSyntax = (syntax: CallSyntax): void => void shapeOf(syntax);
