// The two Jinja engines a chat template can run on. @huggingface/jinja (JS, what transformers-style templates are
// written against) renders first; templates it cannot run (Kimi K2, Seed-OSS, Hermes 3, Apriel, MiniCPM 5 and
// others use filters, dict literals or calls it lacks) run on llama.cpp's own Jinja engine, which node-llama-cpp
// builds into its addon and which llama.cpp tests against these very templates. One template uses one engine for
// every render, chosen when the template is loaded (chat-template.ts).

import {compileTemplate, runTemplate, TemplateRenderError} from "./template-env.ts";

export interface TemplateRenderer {
  readonly engine: "js" | "native";
  /** Renders with `vars` as top-level variables; throws TemplateRenderError. */
  render(vars: Record<string, unknown>): string;
}

/** Compiles a template on llama.cpp's Jinja engine (engine/llama/internals.ts: nativeJinja); throws on a bad template. */
export type NativeJinjaFactory = (source: string) => {render(vars: Record<string, unknown>): string};

export function jsRenderer(source: string, origin: string): TemplateRenderer {
  const program = compileTemplate(source, origin);
  return {engine: "js", render: (vars) => runTemplate(program, vars)};
}

const NATIVE_PREFIX = /^AddonJinjaRenderer: failed to (?:compile|render) template: /;

export function nativeRenderer(factory: NativeJinjaFactory, source: string, origin: string): TemplateRenderer {
  let compiled: ReturnType<NativeJinjaFactory>;
  try {
    compiled = factory(source);
  } catch (err) {
    throw new TemplateRenderError(`chat template from ${origin} failed to parse (llama.cpp Jinja): ${nativeMessage(err)}`);
  }
  return {
    engine: "native",
    render: (vars) => {
      try {
        return compiled.render(withoutUndefined(vars));
      } catch (err) {
        const message = nativeMessage(err);
        // raise_exception's text comes last, after llama.cpp's "Jinja Exception: ".
        const raised = message.lastIndexOf("Jinja Exception: ");
        if (raised >= 0) throw new TemplateRenderError(message.slice(raised + "Jinja Exception: ".length).trim(), {raised: true});
        throw new TemplateRenderError(`chat template error: ${message}`);
      }
    },
  };
}

function nativeMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(NATIVE_PREFIX, "").trim();
}

/** The native converter refuses nothing but functions; undefined variables are simply not set. */
function withoutUndefined(vars: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(vars)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * The line a parse error points at, for a start-up message: the JS parser reports no positions, so the source
 * is parsed one more line at a time until the same error appears. null when no prefix reproduces it.
 */
export function parseErrorLine(source: string, origin: string): number | null {
  let full: string;
  try {
    compileTemplate(source, origin);
    return null;
  } catch (err) {
    full = (err as Error).message;
  }
  const lines = source.split("\n");
  for (let n = 1; n <= lines.length; n++) {
    try {
      compileTemplate(lines.slice(0, n).join("\n"), origin);
    } catch (err) {
      if ((err as Error).message === full) return n;
    }
  }
  return null;
}
