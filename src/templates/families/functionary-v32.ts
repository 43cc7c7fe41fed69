// MeetKai Functionary v3.2 (Llama 3 based): a reply is messages `>>>RECIPIENT\nBODY`, `all` for the answer and a
// tool's name for a call whose body is its arguments as JSON. The generation prompt writes the first `>>>`, so the
// reply starts at a recipient, and strict calls are bound from the reply's first token (the content's recipient
// ends that phase with no call).
//   all\nLet me check.>>>get_weather\n{"city": "Paris"}

import type {RecipientCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const FUNCTIONARY_32_CALLS: RecipientCallSyntax = {
  shape: "recipients", start: ">>>", to: "", headerEnd: "\n", ends: [], reasoning: null, content: "all", body: "json",
};

export const functionaryV32: ModelFamily = {
  id: "functionary-v3.2",
  name: "Functionary v3.2 (>>>RECIPIENT messages)",
  matches: ({source}) => has(source, "<|start_header_id|>", ">>>all", "recipient"),
  reasoning: null,
  calls: FUNCTIONARY_32_CALLS,
  // A JSON answer is the content recipient's message.
  answerLeadIn: '"all\\n"',
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};
