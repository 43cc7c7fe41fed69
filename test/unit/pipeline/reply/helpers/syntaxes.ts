// The three call syntaxes the older reply tests name, as the family data they now are.
import type {CallSyntax} from "../../../../../src/core/call-syntax.ts";
import {GENERIC_CALLS} from "../../../../../src/templates/families/generic.ts";
import {HERMES_CALLS} from "../../../../../src/templates/families/hermes.ts";
import {QWEN_XML_CALLS} from "../../../../../src/templates/families/qwen3-coder.ts";

export type SyntaxName = "hermes" | "qwen-xml" | "generic";

export const SYNTAXES: Record<SyntaxName, CallSyntax> = {"hermes": HERMES_CALLS, "qwen-xml": QWEN_XML_CALLS, "generic": GENERIC_CALLS};

export function syntaxOf(name: SyntaxName | null | undefined): CallSyntax | null {
  return name ? SYNTAXES[name] : null;
}
