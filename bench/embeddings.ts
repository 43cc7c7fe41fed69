// Embedding throughput: 64 short texts through POST /v1/embeddings, batched (one request of 64 inputs, so
// 8 batch passes of 8) and one by one (64 requests of one input each), against one server, in one run.
// Prints embeddings per second for both and their ratio, and checks both gave the same vectors bit for bit.
//
//   npx tsx bench/embeddings.ts        (or: npm run bench:embeddings)

import {startServer} from "../support/server.ts";

const MODEL = "nx3-embedding-0.6b";
const SUBJECTS = ["The cat", "A young engineer", "The city council", "My neighbour", "A small bakery", "The orchestra", "Our team", "The old train"];
const VERBS = ["repaired", "painted", "discussed", "celebrated", "sold", "photographed", "explored", "cancelled"];
const TEXTS = Array.from({length: 64}, (_, i) => `${SUBJECTS[i % 8]} ${VERBS[Math.floor(i / 8)]} something new on day ${i + 1}.`);
const ROUNDS = 3;

async function main(): Promise<void> {
  const server = await startServer({SVC_NPU_MODELS: MODEL, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});
  try {
    const call = async (input: string | string[]) => {
      const res = await fetch(`${server.url}/v1/embeddings`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({model: MODEL, input, encoding_format: "float"})});
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      return ((await res.json()) as {data: {embedding: number[]}[]}).data.map((d) => d.embedding);
    };
    await call(TEXTS.slice(0, 8)); // warm-up
    let batchedMs = 0;
    let singleMs = 0;
    let batched: number[][] = [];
    let single: number[][] = [];
    // Alternate the two modes so a noisy neighbour on the machine hits both alike.
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      batched = await call(TEXTS);
      batchedMs += performance.now() - t;
      t = performance.now();
      single = [];
      for (const text of TEXTS) single.push(...(await call(text)));
      singleMs += performance.now() - t;
    }
    const same = JSON.stringify(batched) === JSON.stringify(single);
    const rate = (ms: number) => (TEXTS.length * ROUNDS) / (ms / 1000);
    console.log(`texts: ${TEXTS.length} short (${ROUNDS} rounds each way)`);
    console.log(`batched (one request, passes of 8): ${rate(batchedMs).toFixed(1)} embeddings/s`);
    console.log(`one by one (64 requests):           ${rate(singleMs).toFixed(1)} embeddings/s`);
    console.log(`ratio batched / one by one:         ${(rate(batchedMs) / rate(singleMs)).toFixed(2)}x`);
    console.log(`vectors identical bit for bit:       ${same ? "yes" : "NO"}`);
  } finally {
    await server.stop();
  }
}

void main();
