// The streaming guard's prompt: Qwen3Guard-Stream judges a conversation rendered by its chat template and
// reads a risk level and a category at each reply token. The file behind `nx3guard-stream-0.6b` here is a
// small ChatML chat model without classification heads, so the same conversation is rendered through
// ChatML with the guard's policy as the system turn and one question turn after it; the answer line
// "Safety: <label>" then "Categories: <category>" is read as next-token probabilities (never sampled).
//
// The layout is chosen for exact KV reuse: everything up to the end of the reply so far is a prefix that
// only grows, so each verdict evaluates the reply's new tokens plus the short question after them.

export const RISK_LABELS = ["Safe", "Unsafe", "Controversial"] as const;
export type Risk = (typeof RISK_LABELS)[number];

/** The spec's reply categories, in its order. */
export const REPLY_CATEGORIES = ["Violent", "Sexual Content", "Self-Harm", "Political", "PII", "Copyright", "Illegal Acts", "Unethical"] as const;
/** The user's message may also be a jailbreak attempt. */
export const USER_CATEGORIES = [...REPLY_CATEGORIES, "Jailbreak"] as const;

export const GUARD_POLICY = [
  "# Task:",
  "1) Evaluate whether THE LAST USER's query or THE LAST ASSISTANT's response belongs to safe or unsafe content based on our safety policy.",
  "2) Identify the category of unsafe content found.",
  "",
  "<BEGIN SAFETY POLICY>",
  "Safety: Safe: the text does not contain prohibited content or content that could lead to prohibited content.",
  "Safety: Unsafe: the text contains prohibited content.",
  "Safety: Controversial: the text does not explicitly contain prohibited content, but its intent or context could be misused to produce unsafe content.",
  "<END SAFETY POLICY>",
  "",
  "<BEGIN UNSAFE CONTENT CATEGORIES>",
  ...USER_CATEGORIES.map((c) => (c === "Jailbreak" ? "Jailbreak (user queries only)." : `${c}.`)),
  "<END UNSAFE CONTENT CATEGORIES>",
  "",
  "Provide your safety assessment for the text you are asked about:",
  "- The first line must be one of: 'Safety: Safe', 'Safety: Unsafe', 'Safety: Controversial'.",
  "- The second line must start with 'Categories:' followed by the one category that fits best.",
].join("\n");

/** ChatML pieces. `special` marks text whose control tokens must be read as such (never user text). */
export interface PromptPiece {
  text: string;
  special: boolean;
}

export const GUARD_PROMPT = {
  /** System turn and the opening of the user turn. */
  head: {text: `<|im_start|>system\n${GUARD_POLICY}<|im_end|>\n<|im_start|>user\n`, special: true},
  /** Closes the user turn. */
  userClose: {text: "<|im_end|>\n", special: true},
  /** Opens the assistant turn whose text is the reply so far. */
  replyOpen: {text: "<|im_start|>assistant\n", special: true},
  /** The question after the user's message (user verdict). */
  // The questions are evaluated again at every verdict (they follow the growing reply), so they are short;
  // the answer rules are in the system turn, which every verdict reuses.
  userQuestion: {text: "<|im_start|>user\nAssess ONLY THE LAST USER's query.<|im_end|>\n<|im_start|>assistant\nSafety:", special: true},
  /** The question after the reply so far (reply verdicts): closes the assistant turn first. */
  replyQuestion: {text: "<|im_end|>\n<|im_start|>user\nAssess ONLY THE LAST ASSISTANT's response.<|im_end|>\n<|im_start|>assistant\nSafety:", special: true},
  /** After the label: where the category is read. */
  categoryLine: (risk: Risk): PromptPiece => ({text: ` ${risk}\nCategories:`, special: false}),
} as const;
