// Parsing and running a chat template with @huggingface/jinja. We drive Environment/Interpreter
// ourselves instead of Template.render because that method pre-declares raise_exception and
// strftime_now and refuses to let callers redefine them, and we need raise_exception to surface as
// our own error type with the template's message untouched.
import {Environment, Interpreter, parse, tokenize} from "@huggingface/jinja";

/** A chat template could not be parsed or rendered; the message is safe to show to the client. */
export class TemplateRenderError extends Error {
  override name = "TemplateRenderError";
  /** The template itself refused the input (raise_exception), as opposed to the engine failing to run it. */
  readonly raised: boolean;
  /** Set when the template does not parse: the line (when found) and each engine's own error. */
  readonly parse?: {line: number | null; js: string; native: string | null};

  constructor(message: string, opts: {raised?: boolean; parse?: TemplateRenderError["parse"]} = {}) {
    super(message);
    this.raised = opts.raised === true;
    if (opts.parse) this.parse = opts.parse;
  }
}

type Program = ReturnType<typeof parse>;

/** Parses once; throws TemplateRenderError naming where the template came from. */
export function compileTemplate(source: string, origin: string): Program {
  try {
    // transformers renders chat templates with trim_blocks and lstrip_blocks on; templates are
    // written against that whitespace behaviour.
    return parse(tokenize(source, {lstrip_blocks: true, trim_blocks: true}));
  } catch (err) {
    throw new TemplateRenderError(`chat template from ${origin} failed to parse: ${errorText(err)}`, {parse: {line: null, js: errorText(err), native: null}});
  }
}

/** Names the template runtime defines itself; chat_template_kwargs may not replace them. */
const RUNTIME_NAMES = ["true", "false", "none", "True", "False", "None", "range", "namespace",
  "raise_exception", "strftime_now"];

/**
 * Renders with `vars` as top-level variables. `vars` must not contain runtime names (callers check
 * with isReservedName first, so a clash here is a bug, reported as such).
 */
export function runTemplate(program: Program, vars: Record<string, unknown>): string {
  const env = new Environment();
  const globals: Record<string, unknown> = {
    true: true, false: false, none: null, True: true, False: false, None: null,
    range: pyRange,
    raise_exception: (message: unknown) => {
      throw new TemplateRenderError(String(message ?? "chat template raised an exception"), {raised: true});
    },
    strftime_now: (format: unknown) => strftime(new Date(), String(format)),
  };
  for (const [name, value] of Object.entries(globals)) env.set(name, value);
  for (const [name, value] of Object.entries(vars)) {
    if (value !== undefined) env.set(name, value);
  }
  try {
    const out = new Interpreter(env).run(program);
    return typeof out.value === "string" ? out.value : String(out.value ?? "");
  } catch (err) {
    if (err instanceof TemplateRenderError) throw err;
    throw new TemplateRenderError(`chat template error: ${errorText(err)}`);
  }
}

export function isReservedName(name: string): boolean {
  return RUNTIME_NAMES.includes(name);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function pyRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error("range() step must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
  "September", "October", "November", "December"];

/**
 * Python's strftime in the C locale (what transformers' strftime_now gives), local time. Covers
 * the codes chat templates use, plus glibc's "%-d"-style unpadded forms (Llama 3.x uses them).
 */
export function strftime(date: Date, format: string): string {
  return format.replace(/%(-?)([a-zA-Z%])/g, (whole, unpadded: string, code: string) => {
    const pad = (n: number, width = 2) => (unpadded ? String(n) : String(n).padStart(width, "0"));
    const hour12 = date.getHours() % 12 === 0 ? 12 : date.getHours() % 12;
    // Calendar days in UTC so a daylight-saving change since 1 January cannot shift the count.
    const dayOfYear = (Date.UTC(date.getFullYear(), date.getMonth(), date.getDate()) -
      Date.UTC(date.getFullYear(), 0, 1)) / 86_400_000 + 1;
    switch (code) {
      case "Y": return String(date.getFullYear());
      case "y": return pad(date.getFullYear() % 100);
      case "m": return pad(date.getMonth() + 1);
      case "d": return pad(date.getDate());
      case "e": return String(date.getDate()).padStart(2, " ");
      case "H": return pad(date.getHours());
      case "I": return pad(hour12);
      case "M": return pad(date.getMinutes());
      case "S": return pad(date.getSeconds());
      case "p": return date.getHours() < 12 ? "AM" : "PM";
      case "j": return pad(dayOfYear, 3);
      case "A": return DAYS[date.getDay()]!;
      case "a": return DAYS[date.getDay()]!.slice(0, 3);
      case "B": return MONTHS[date.getMonth()]!;
      case "b": return MONTHS[date.getMonth()]!.slice(0, 3);
      case "%": return "%";
      default: return whole;
    }
  });
}
