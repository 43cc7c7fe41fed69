// Classifier throughput: 100 single-token classifications sharing a ~500-token system message, with the
// prompt cache on (each item reuses the system message a region already holds) and off (every prompt is
// evaluated in full). Prints items per second for both and their ratio, measured in one run. Also checks
// that both runs chose the same label for every item (the cache never changes an answer).
//
//   npx tsx bench/classifier.ts        (or: npm run bench:classifier)

import {availableParallelism} from "node:os";
import {startServer, type RunningServer} from "../support/server.ts";

const ITEMS = 100;
const RULES = [
  "You are a careful sentiment classifier for short reviews of products, films, restaurants and hotels.",
  "Read the review and answer with exactly one word: positive, negative or neutral.",
  "Positive means the reviewer liked the thing, enjoyed the experience, or would recommend it to a friend.",
  "Negative means the reviewer disliked the thing, regrets the purchase, complains, or warns others away.",
  "Neutral means the review is mixed, purely factual, or shows no clear feeling in either direction.",
  "Sarcasm counts as the feeling it hides, not the words it uses; judge what the reviewer means.",
  "Ignore spelling mistakes, capital letters and punctuation; they do not change the sentiment.",
  "A review that praises one part and attacks another is neutral unless one side clearly dominates.",
  "Facts about delivery dates, sizes, colours or prices are neutral unless the reviewer reacts to them.",
  "Do not explain your answer, do not add punctuation, and do not repeat the review.",
];
// About 500 tokens: the rules, then worked examples.
const EXAMPLES = Array.from({length: 17}, (_, i) =>
  `Example ${i + 1}: "${["Great", "Awful", "Plain"][i % 3]} ${["phone", "film", "hotel", "pizza"][i % 4]}, ${["I would buy it again", "never again", "it exists"][i % 3]}." Answer: ${["positive", "negative", "neutral"][i % 3]}.`);
const SYSTEM = [...RULES, ...EXAMPLES].join(" ");
const OPENERS = ["I loved", "I hated", "I received", "We enjoyed", "We regret", "They delivered"];
const THINGS = ["this phone", "the film", "our hotel room", "the pizza", "this jacket", "the concert", "the charger"];
const ENDINGS = ["and it was wonderful.", "and it was a waste of money.", "on a Tuesday.", "with the family.", "but the staff were rude.", "in a blue box."];
const reviews = Array.from({length: ITEMS}, (_, i) => `${OPENERS[i % 6]} ${THINGS[i % 7]} ${ENDINGS[(i * 5) % 6]} (${i})`);

function request(review: string) {
  return {
    messages: [{role: "system", content: SYSTEM}, {role: "user", content: `Review: ${review}`}, {role: "assistant", content: "Sentiment:"}],
    continue_final_message: true, add_generation_prompt: false, max_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 5,
  };
}

async function run(cache: boolean): Promise<{itemsPerSecond: number; labels: string[]; cachedShare: number; promptTokens: number; systemTokens: number}> {
  const server: RunningServer = await startServer({SVC_PARALLEL: "1", SVC_PROMPT_CACHE: cache ? "1" : "0", SVC_LOG_LEVEL: "info"});
  try {
    const post = async (body: unknown) => {
      const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify(body), signal: AbortSignal.timeout(120_000)});
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    const tok = await fetch(`${server.url}/tokenize`, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({content: SYSTEM})});
    const systemTokens = ((await tok.json()) as {tokens: number[]}).tokens.length;
    await post(request("warm-up review")); // loads pages and JIT paths; with the cache on it also holds the system message
    const labels: string[] = [];
    let cached = 0;
    let prompt = 0;
    const t0 = performance.now();
    for (const review of reviews) {
      const body = await post(request(review));
      labels.push(body.choices[0].message.content);
      cached += body.usage.prompt_tokens_details.cached_tokens;
      prompt += body.usage.prompt_tokens;
    }
    const seconds = (performance.now() - t0) / 1000;
    return {itemsPerSecond: ITEMS / seconds, labels, cachedShare: cached / prompt, promptTokens: prompt / ITEMS, systemTokens};
  } finally {
    await server.stop();
  }
}

const off = await run(false);
const on = await run(true);
const agree = on.labels.filter((l, i) => l === off.labels[i]).length;
console.log("svc classifier benchmark");
console.log(`machine: ${availableParallelism()} cores, node ${process.version}; ${ITEMS} items, one region, max_tokens 1, temperature 0, top_logprobs 5`);
console.log(`prompt: ${on.promptTokens.toFixed(0)} tokens per item on average: a ${on.systemTokens}-token system message plus a short review`);
console.log("");
console.log("                      items/s   cached share of prompt tokens");
console.log(`cache off             ${off.itemsPerSecond.toFixed(2).padStart(7)}   ${(100 * off.cachedShare).toFixed(1)}%`);
console.log(`cache on (warm)       ${on.itemsPerSecond.toFixed(2).padStart(7)}   ${(100 * on.cachedShare).toFixed(1)}%`);
console.log(`ratio warm / off      ${(on.itemsPerSecond / off.itemsPerSecond).toFixed(2).padStart(7)}`);
console.log(`same label cold and warm: ${agree}/${ITEMS}`);
