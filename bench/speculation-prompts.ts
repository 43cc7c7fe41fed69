// The prompts of the speculation benches: the 20 of test/e2e/determinism.test.ts (turn 1) and five whose
// answer copies long stretches of the prompt, where prompt lookup has something to propose.

import type {TemplateMessage} from "../src/templates/chat-template.ts";

// The 20 determinism prompts (test/e2e/determinism.test.ts, turn 1).
const SYSTEM = "You are a concise assistant. Answer in two or three sentences.";
const TOPICS = ["tides", "rainbows", "sourdough", "magnets", "glaciers", "fireflies", "compost", "echoes", "lighthouses", "coral",
  "thunder", "yeast", "kites", "moss", "comets", "bridges", "owls", "clay", "fog", "bamboo"];
export const DETERMINISM_PROMPTS = TOPICS.map((t) => ({name: t, group: "det" as const,
  messages: [{role: "system", content: SYSTEM}, {role: "user", content: `Explain ${t} to a child.`}] as TemplateMessage[]}));

// Prompts whose answer copies long stretches of the prompt.
const CODE_PY = `def summarize(orders):
    total = 0
    count = 0
    for order in orders:
        if order["status"] != "paid":
            continue
        total += order["amount"]
        count += 1
    average = total / count if count else 0
    return {"total": total, "count": count, "average": average}`;
const CODE_JS = `function parseConfig(text) {
  const lines = text.split("\\n");
  const config = {};
  for (const line of lines) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const [key, value] = trimmed.split("=");
    config[key.trim()] = value.trim();
  }
  return config;
}`;
const JSON_CFG = `{
  "name": "inventory-service",
  "version": "2.4.1",
  "port": 3000,
  "database": {"host": "db.internal", "port": 5432, "user": "inventory"},
  "features": ["search", "export", "audit"],
  "logLevel": "info"
}`;
const PARAGRAPH = "The old mill stood at the edge of the village, where the river bent twice before reaching the sea. " +
  "Every morning the miller opened the heavy wooden doors, checked the stones, and listened to the water turning the great wheel. " +
  "Children from the school would stop by in the afternoon to watch the flour pour into the sacks.";
const LIST = "- apples, 4\n- bread, 2 loaves\n- milk, 1 litre\n- eggs, 12\n- butter, 250 g\n- rice, 1 kg\n- tomatoes, 6\n- cheese, 200 g";
export const COPY_PROMPTS = [
  {name: "py-rename", text: `Repeat this Python function exactly, but rename the variable total to amount_sum everywhere.\n\n${CODE_PY}`},
  {name: "js-fix", text: `Rewrite this JavaScript function with one change: skip lines that start with ";" as well as "#". Output the whole function.\n\n${CODE_JS}`},
  {name: "json-port", text: `Rewrite this JSON with "port": 3000 changed to "port": 8080. Output the whole JSON.\n\n${JSON_CFG}`},
  {name: "para-copy", text: `Copy this paragraph word for word.\n\n${PARAGRAPH}`},
  {name: "list-edit", text: `Repeat this shopping list, changing the number of eggs to 6.\n\n${LIST}`},
].map((p) => ({name: p.name, group: "copy" as const, messages: [{role: "user", content: p.text}] as TemplateMessage[]}));

