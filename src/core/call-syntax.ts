// How a model family writes tool calls, as data. A family file (src/templates/families/) fills one of these; the
// shape it names (src/syntax/<shape>/) builds from it the strict-tool grammars, the streaming reply parser and the
// writer of earlier calls, so what the parser reads and what the grammar lets the model write cannot drift apart.
//
// Literal pieces carry the family's canonical layout (its newlines): the grammar writes exactly that layout;
// the parsers compare markers with surrounding whitespace ignored, and treat a value's leading and trailing
// newline as layout only where the canonical form has one.

/** Calls written as JSON objects that hold the name and the arguments: Hermes `<tool_call>{...}</tool_call>`,
 * Nemotron `<TOOLCALL>[...]</TOOLCALL>`, Llama 3's bare `{"name", "parameters"}`, the generic form. */
export interface JsonCallSyntax {
  shape: "json";
  /** Opens the calls anywhere in content; null: calls only start the content (see `start`). */
  opener: string | null;
  /** With opener null: the JSON text that starts the calls where content starts, matched with JSON whitespace
   * between the pieces. `consumed`: the pieces are an envelope around the calls (the generic form's
   * `{"tool_calls": [`); otherwise they are the start of the first call object itself (Llama 3's `{"name"`). */
  start?: {pieces: readonly string[]; consumed: boolean};
  /** The calls sit in a JSON array (after the opener or the start); false: one object per opener. */
  list: boolean;
  /** Closes the region after the object or the array ("" = nothing; the generic form: `}`). */
  close: string;
  /** Keys the grammar writes; the parser also accepts the other spellings in `nameKeys` / `argsKeys`. */
  nameKey: string;
  argsKey: string;
  /** Command R: a running id (`"0"`, `"1"`, ...) under this key, first in each object. */
  idKey?: string;
  /** Apertus: each call object has one key, the tool's name, whose value is the arguments (`{"get_weather": {...}}`);
   * nameKey and argsKey are then only the parser's other spellings. */
  keyedByName?: boolean;
  /** Written between the opener and the object (Hermes: "\n"), and between the object and the close. */
  pad: string;
  /** Models trained on two forms write either inside the same opener (Qwen: Hermes JSON or XML after
   * <tool_call>): the parser reads this form too when the opener is followed by something other than JSON. */
  alsoReads?: XmlCallSyntax;
}

/** Calls written as a name in markup followed by a JSON arguments object: Mistral `[TOOL_CALLS]name[ARGS]{...}`,
 * DeepSeek, Kimi K2. */
export interface NamedCallSyntax {
  shape: "named";
  /** Wraps all calls of a reply (DeepSeek `<｜tool▁calls▁begin｜>`...); null: each call stands alone. `endsReply`: the
   * close is the model's end-of-generation token (Solar Open's <|calls|>): a grammar cannot write it, so after a call
   * the grammar offers another or nothing (the model ends the reply), as for Mistral; the parser reads it when shown. */
  section: {open: string; close: string; endsReply?: boolean} | null;
  /** Opens one call (inside the section, or in content without one). */
  open: string;
  /** Written before the name: "functions." (Kimi), "function<｜tool▁sep｜>" (DeepSeek R1). */
  namePrefix: string;
  /** Kimi: the name is followed by ":<index of the call>". */
  nameIndex: boolean;
  /** Mistral Small 3.2: an optional `[CALL_ID]<id>` after the name (read, never written). */
  idMarker?: string;
  /** Solar Open: a call id comes first, before the name, ended by this marker. The parser skips it; the grammar and
   * svc write the call's index as 10 digits (`leadIdOf`), the form the template asks for (10 lowercase letters or digits). */
  leadId?: string;
  /** Between the name and the arguments JSON. */
  nameEnd: string;
  /** After the arguments JSON: "\n```" (DeepSeek R1). */
  argsEnd: string;
  /** Closes one call ("" = the next call, the section's close or the end of the reply does). */
  close: string;
  /** Written between two calls. */
  separator: string;
}

/** Calls whose parameters are written one by one in markup, string values raw: Qwen3-Coder / Qwen3.5, Seed-OSS,
 * GLM 4.x, MiniMax M2, DeepSeek V3.2 (DSML). */
export interface XmlCallSyntax {
  shape: "xml";
  /** Wraps the calls of a reply (MiniMax `<minimax:tool_call>`); null: each call stands alone. */
  section: {open: string; close: string} | null;
  /** Before the name: "<tool_call>\n<function=", "<invoke name=\"", "<tool_call>". */
  open: string;
  /** After the name: ">\n", "\">\n", "\n". CALL_INDEX in it stands for the call's index, from 1 (Kimi K3). */
  nameEnd: string;
  /** Before a parameter's key: "<parameter=", "<parameter name=\"", "<arg_key>". */
  keyOpen: string;
  /** Between key and value: ">\n", "\">", "</arg_key>\n<arg_value>". DSML writes an attribute saying whether
   * the value is a string: then the string and the JSON form differ. VALUE_TYPE in the JSON form stands for the value's
   * JSON type name (Kimi K3's type attribute). */
  keyEnd: string | {string: string; json: string};
  /** After a value: "\n</parameter>\n", "</parameter>\n", "</arg_value>\n". */
  valueEnd: string;
  /** After the last parameter: "</function>\n</tool_call>", "</invoke>\n", "</tool_call>". */
  close: string;
  /** Written between two calls (outside a section: after one call's close, before the next open). */
  separator: string;
}

/** Calls written as Python function calls in one list, arguments as keywords: LFM2 / LFM2.5
 * `<|tool_call_start|>[get_weather(city="Paris", days=2)]<|tool_call_end|>`. Values are Python or JSON literals. */
export interface PythonicCallSyntax {
  shape: "pythonic";
  /** Before the list's `[` (the brackets, parentheses and `=` are the shape's own). */
  open: string;
  /** After the list's `]`. */
  close: string;
}

/** Calls whose parameters are elements named after them, nested values as nested elements (MiniMax M3): every tag is
 * written after `mark` (a special token), an array's items each in an `item` element, objects' members as elements named
 * after their keys, strings and numbers as text:
 *   M<tool_call>\nM<invoke name="get_weather">M<city>ParisM</city>M<days>2M</days>M</invoke>\nM</tool_call> */
export interface TaggedCallSyntax {
  shape: "tagged";
  /** Written before every tag. */
  mark: string;
  /** The tags around all of a reply's calls, written after `mark`: "<tool_call>\n", "</tool_call>". */
  section: {open: string; close: string};
  /** A call's opening up to its name, after `mark`: '<invoke name="'; after the name: '">'. */
  open: string;
  nameEnd: string;
  /** Closes a call, after `mark`: "</invoke>\n". */
  close: string;
  /** The element an array's items are written in. */
  item: string;
}

/** Replies as messages addressed to recipients, each `START TO RECIPIENT HEADEREND BODY END`; the first message's
 * START is the generation prompt's. The reasoning and content recipients' bodies are text; any other recipient is a
 * tool, whose body is a call in `body`'s syntax, or its arguments as one JSON object. Muse Glimmer's ATEM, and
 * Functionary v3.2 (`>>>get_weather\n{"city": "Paris"}`, `>>>all\nTEXT`):
 *   <|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">...<|eom|> */
export interface RecipientCallSyntax {
  shape: "recipients";
  /** Opens every message but the reply's first: "<|start|>assistant". */
  start: string;
  /** Before the recipient: " to=" ("": the recipient starts the header). */
  to: string;
  /** Ends the header: "<|message|>". */
  headerEnd: string;
  /** What ends a message besides the next one's START ([]: only that, or the end of the reply). */
  ends: readonly string[];
  /** The recipients whose bodies are reasoning ("self"; null: none) and content ("user", "all"). */
  reasoning: string | null;
  content: string;
  /** How a tool's message body writes the call: in an xml syntax, or "json", the arguments object alone. */
  body: XmlCallSyntax | "json";
}

/** A family whose replies need a parser of their own (gpt-oss harmony channels, Gemma 4's argument syntax). */
export interface CustomCallSyntax {
  shape: "custom";
  /** Names the parser in src/pipeline/reply/ and the grammar in src/grammar/ that implement it. */
  kind: "harmony" | "gemma4";
}

export type CallSyntax = JsonCallSyntax | NamedCallSyntax | XmlCallSyntax | PythonicCallSyntax | TaggedCallSyntax | RecipientCallSyntax
  | CustomCallSyntax;

/** In an xml syntax's nameEnd: the call's index, from 1 (Kimi K3: ` index="1"`). */
export const CALL_INDEX = "{index}";
/** In an xml syntax's JSON keyEnd: the value's JSON type name (Kimi K3: ` type="number"`). */
export const VALUE_TYPE = "{type}";
/** The names VALUE_TYPE takes (a string value has the string form of keyEnd). */
export const JSON_TYPE_NAMES = ["number", "boolean", "object", "array", "null"] as const;

/** The JSON type name of a parsed value. */
export function jsonTypeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

/** The id written before a call's name where the syntax has one (`NamedCallSyntax.leadId`): its index, as 10 digits. */
export function leadIdOf(index: number): string {
  return String(index).padStart(10, "0");
}

/** A reasoning block's markers. */
export interface ReasoningSyntax {
  open: string;
  close: string;
}
