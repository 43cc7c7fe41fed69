// The node-llama-cpp internals svc relies on (src/engine/llama/internals.ts), checked against the real
// library, so an upgrade that changes them fails here instead of silently mis-batching. The main model is the test
// model (support/test-model.ts: the default model's architecture, tokenizer and quantisations at a tiny size):
// nothing here needs a trained model's judgement, only its tokens, its KV and deterministic greedy decoding.

import assert from "node:assert/strict";
import {availableParallelism, homedir, tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {getLlama, InputLookupTokenPredictor, LlamaGrammarEvaluationState, type Llama, type LlamaContext, type LlamaModel, type Token} from "node-llama-cpp";
import {acceptGrammarToken, grammarAllows, isEndOfGeneration, attachTokenPredictor, detachTokenPredictor, copySequenceState, createEmbeddingsContext, grammarAcceptsText, pooledEmbedding, INTERNAL_MEMBERS, PINNED_NODE_LLAMA_CPP, queuedDecodes, sequenceIdOf, setNextBatchThreads, type QueuedDecodeView} from "../../src/engine/llama/internals.ts";
import {ensureConverted} from "../../src/models/hf-convert/convert.ts";
import {resolveModelFolder} from "../../src/models/hf-convert/fetch-folder.ts";
import {DEFAULT_EMBEDDING_SPEC} from "../../src/side-models/registry.ts";
import {createMemoryLogger} from "../../src/observability/log.ts";
import {testModelPath} from "../../support/test-model.ts";
import {mkdtempSync, readFileSync, rmSync} from "node:fs";


let llama: Llama;
let model: LlamaModel;

before(async () => {
  llama = await getLlama({gpu: false, build: "never", maxThreads: availableParallelism()});
  model = await llama.loadModel({modelPath: await testModelPath()});
});
after(async () => {
  await model?.dispose();
  await llama?.dispose();
});

describe("node-llama-cpp internals", () => {
  test("the installed version is the pinned one", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../node_modules/node-llama-cpp/package.json", import.meta.url), "utf8"));
    assert.equal(pkg.version, PINNED_NODE_LLAMA_CPP);
    const ours = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    assert.equal(ours.dependencies["node-llama-cpp"], PINNED_NODE_LLAMA_CPP, "package.json pins it exactly");
    assert.deepEqual([...INTERNAL_MEMBERS].sort(), ["LlamaContext._queuedDecodes[].sequenceId", "LlamaContext._queuedDecodes[].tokens",
      "LlamaContextSequence._sequenceId", "LlamaGrammar._testText (tests only)",
      "Llama._bindings.AddonSampler.acceptGrammarEvaluationStateToken", "Llama._bindings.AddonSampler.canBeNextTokenForGrammarEvaluationState",
      "LlamaGrammarEvaluationState._state",
      "LlamaContextSequence._copyStateFromOtherSequence", "LlamaModel.createContext({_embeddings})", "LlamaContext._ctx.getEmbedding",
      "LlamaContextSequence._tokenPredictor", "LlamaContextSequence._resetTokenPredictor", "LlamaContextSequence._tokenPredictorOwner",
      "LlamaContextSequence._abortTokenPredictor", "LlamaContext._idealThreads", "LlamaContext._threadSplitterConsumer._wantedThreads",
      "Llama._bindings.AddonJinjaRenderer", "LlamaModel._model.isEogToken",
      // checked in test/unit/engine/llama/engine-build-store.test.ts against the library's own code
      "llama/localBuilds/<name>/{Release/llama-addon.node,Release/_nlcBuildMetadata.json,buildDone.status}"].sort());
  });

  test("LlamaGrammar._testText tells whole-text matches", async () => {
    const grammar = await llama.createGrammar({grammar: 'root ::= "yes" | "no"'});
    assert.equal(grammarAcceptsText(grammar, "yes"), true);
    assert.equal(grammarAcceptsText(grammar, "no"), true);
    assert.equal(grammarAcceptsText(grammar, "yess"), false);
    assert.equal(grammarAcceptsText(grammar, "ye"), false);
  });

  test("acceptGrammarToken advances a grammar state by a placed token", async () => {
    const grammar = await llama.createGrammar({grammar: 'root ::= "{" "x"'});
    const brace = model.tokenize("{");
    assert.equal(brace.length, 1);
    const firstToken = async (accepted: boolean) => {
      const ctx = await model.createContext({contextSize: 256, flashAttention: false});
      try {
        const state = new LlamaGrammarEvaluationState({model, grammar});
        if (accepted) acceptGrammarToken(llama, state, brace[0]!);
        const gen = ctx.getSequence().evaluate(model.tokenize("Write:"), {temperature: 0, grammarEvaluationState: state});
        const {value} = await gen.next();
        await gen.return(undefined);
        return model.detokenize([value as Token]);
      } finally {
        await ctx.dispose();
      }
    };
    assert.equal(await firstToken(false), "{");
    assert.equal(await firstToken(true), "x");
  });

  test("grammarAllows tells whether a grammar state takes a token next, end of generation only once the grammar is complete", async () => {
    const grammar = await llama.createGrammar({grammar: 'root ::= "{" "x" "}"'});
    const [brace] = model.tokenize("{");
    const [x] = model.tokenize("x");
    const [close] = model.tokenize("}");
    const eog = model.tokens.eos!;
    const state = new LlamaGrammarEvaluationState({model, grammar});
    assert.deepEqual([brace, x, close, eog].map((t) => grammarAllows(llama, state, t!)), [true, false, false, false]);
    acceptGrammarToken(llama, state, brace!);
    assert.deepEqual([brace, x, close, eog].map((t) => grammarAllows(llama, state, t!)), [false, true, false, false]);
    acceptGrammarToken(llama, state, x!);
    acceptGrammarToken(llama, state, close!);
    assert.equal(grammarAllows(llama, state, eog), true, "complete: end of generation is allowed");
    assert.equal(grammarAllows(llama, state, x!), false);
  });

  test("copySequenceState copies a prefix into another sequence, and greedy decoding from it is unchanged", async () => {
    const ctx = await model.createContext({sequences: 2, contextSize: 512, batchSize: 64, flashAttention: false});
    try {
      const [a, b] = [ctx.getSequence(), ctx.getSequence()];
      const prompt = model.tokenize("<|im_start|>user\nName the planets of the solar system in order, please.<|im_end|>\n<|im_start|>assistant\n", true);
      const cut = prompt.length - 5;
      await a.evaluateWithoutGeneratingNewTokens(prompt.slice(0, cut));
      await a.evaluateWithoutGeneratingNewTokens([42, 43, 44] as Token[]);
      await copySequenceState(b, a, cut);
      assert.equal(b.nextTokenIndex, cut, "the copy is cut back to the prefix");
      assert.deepEqual(b.contextTokens, prompt.slice(0, cut), "the token mirror came along");
      const greedy = async (seq: typeof a) => {
        const out: number[] = [];
        for await (const t of seq.evaluate(prompt.slice(cut), {temperature: 0, seed: 1})) {
          out.push(t);
          if (out.length === 12) break;
        }
        return out;
      };
      const copied = await greedy(b);
      await a.eraseContextTokenRanges([{start: cut, end: a.nextTokenIndex}]);
      assert.deepEqual(copied, await greedy(a), "the copied KV decodes exactly like the original");
      await assert.rejects(copySequenceState(a, b, 10_000), /copying a region's state failed/);
    } finally {
      await ctx.dispose();
    }
  });

  test("a token predictor attached for one run drafts, verifies exactly, and leaves no drafted cell behind when detached", async () => {
    const ctx = await model.createContext({sequences: 2, contextSize: 512, batchSize: 64, flashAttention: true});
    const text = "- apples, 4\n- bread, 2 loaves\n- milk, 1 litre\n- eggs, 12\n- butter, 250 g\n- rice, 1 kg";
    const prompt = model.tokenize(`<|im_start|>user\nCopy this list exactly.\n\n${text}<|im_end|>\n<|im_start|>assistant\n`, true) as Token[];
    const N = 40;
    const greedy = async (seq: ReturnType<LlamaContext["getSequence"]>, input: Token[], n: number, stopWhen?: () => boolean) => {
      const out: Token[] = [];
      const gen = seq.evaluate(input, {temperature: 0, yieldEogToken: true});
      try {
        while (out.length < n) {
          const r = await gen.next();
          if (r.done) break;
          out.push(r.value);
          if (stopWhen?.()) break;
        }
      } finally {
        await gen.return(undefined);
      }
      return out;
    };
    try {
      const seq = ctx.getSequence();
      const reference = await greedy(seq, prompt, N);
      await seq.clearHistory();

      // The test model does not copy its prompt as a trained model would, so the lookup's input is the reply greedy
      // decoding writes: from the reply's second token on the lookup finds it there and drafts the rest, as it finds a
      // copying reply in its prompt.
      const lookup = new InputLookupTokenPredictor({patternLength: {min: 2}});
      lookup.updateInputTokens(reference);
      attachTokenPredictor(seq, lookup);
      assert.throws(() => attachTokenPredictor(seq, lookup), /already has a token predictor/);
      const before = seq.tokenPredictions.validated;
      // Stop right after a step whose draft was verified: the draft's KV cell is then in the state, unused.
      const head = await greedy(seq, prompt, N, () => seq.tokenPredictions.validated > before);
      assert.ok(seq.tokenPredictions.validated > before, "a draft was verified");
      assert.deepEqual(head, reference.slice(0, head.length), "drafted greedy output is plain greedy output");
      await detachTokenPredictor(seq);
      await detachTokenPredictor(seq); // a second detach is a no-op
      assert.equal(seq.tokenPredictor, undefined);
      assert.equal(seq.nextTokenIndex, prompt.length + head.length - 1, "the state holds the prompt and every generated token but the last");
      assert.deepEqual(seq.contextTokens, [...prompt, ...head.slice(0, -1)]);
      // The KV state itself holds exactly those cells: saved, it is as large as the same tokens evaluated plainly.
      // (A verified draft the run did not use keeps its cell, hidden from nextTokenIndex, unless detached.)
      const dir = mkdtempSync(join(tmpdir(), "svc-predictor-"));
      try {
        const drafted = await seq.saveStateToFile(join(dir, "a"));
        const other = ctx.getSequence();
        await other.evaluateWithoutGeneratingNewTokens([...prompt, ...head.slice(0, -1)]);
        const plain = await other.saveStateToFile(join(dir, "b"));
        await other.dispose();
        assert.equal(drafted.fileSize, plain.fileSize);
      } finally {
        rmSync(dir, {recursive: true, force: true});
      }
      // Continuing without the predictor from the last token gives the reference's rest: a drafted cell left at
      // the next position would change these numbers.
      const rest = await greedy(seq, [head.at(-1)!], N - head.length);
      assert.deepEqual([...head, ...rest], reference);
    } finally {
      await ctx.dispose();
    }
  });

  test("isEndOfGeneration is llama.cpp's end-of-generation set: the default model's <|im_end|> and <|endoftext|>, nothing else", () => {
    const ends: number[] = [];
    const vocab = (model.fileInfo.metadata.tokenizer.ggml as unknown as {tokens: string[]}).tokens.length;
    for (let t = 0; t < vocab; t++) if (isEndOfGeneration(model, t)) ends.push(t);
    assert.ok(ends.length >= 1 && ends.length <= 4, JSON.stringify(ends));
    assert.ok(ends.includes(model.tokens.eos!), "the EOS token ends a reply");
    for (const t of ends) assert.ok(model.isEogToken(t as never), `${t} is also the library's`);
  });

  test("sequences get ids 0..N-1 in order (LlamaContextSequence._sequenceId)", async () => {
    const ctx = await model.createContext({sequences: 3, contextSize: 256, flashAttention: false});
    try {
      const ids = [ctx.getSequence(), ctx.getSequence(), ctx.getSequence()].map(sequenceIdOf);
      assert.deepEqual(ids, [0, 1, 2]);
    } finally {
      await ctx.dispose();
    }
  });

  test("a batching strategy's items line up with _queuedDecodes (sequenceId and tokens)", async () => {
    const seen: {items: number[][]; queue: QueuedDecodeView[]}[] = [];
    let ctx: LlamaContext | undefined;
    ctx = await model.createContext({
      sequences: 2, contextSize: 256, flashAttention: false,
      batching: {itemPrioritizationStrategy: ({items}) => {
        const queue = queuedDecodes(ctx!).map((q) => ({sequenceId: q.sequenceId, tokens: [...q.tokens]}));
        seen.push({items: items.map((i) => [...i.tokens]), queue});
        return items.map((item) => ({item, processAmount: item.tokens.length}));
      }},
    });
    try {
      const [a, b] = [ctx.getSequence(), ctx.getSequence()];
      const ta = model.tokenize("Hello there, how are you?") as Token[];
      const tb = model.tokenize("A different prompt entirely.") as Token[];
      await Promise.all([a.evaluateWithoutGeneratingNewTokens(ta), b.evaluateWithoutGeneratingNewTokens(tb)]);
      assert.ok(seen.length >= 1);
      const all = seen.flatMap((s) => s.queue.map((q, i) => ({q, item: s.items[i]!})));
      for (const {q, item} of all) assert.deepEqual(q.tokens, item, "items[i] is built from _queuedDecodes[i]");
      const bySeq = new Map(all.map(({q}) => [q.sequenceId, q.tokens]));
      assert.deepEqual(bySeq.get(0), ta);
      assert.deepEqual(bySeq.get(1), tb);
    } finally {
      await ctx.dispose();
    }
  });
  test("setNextBatchThreads from a batching strategy decides the threads of that very batch", async () => {
    let ctx: LlamaContext | undefined;
    let next = 1;
    const used: number[] = [];
    ctx = await model.createContext({
      sequences: 1, contextSize: 256, flashAttention: true, threads: {ideal: 2, min: 1},
      batching: {itemPrioritizationStrategy: ({items}) => {
        setNextBatchThreads(ctx!, next);
        return items.map((item) => ({item, processAmount: item.tokens.length}));
      }},
    });
    try {
      const seq = ctx.getSequence();
      for (const [i, threads] of [1, 2, 1].entries()) {
        next = threads;
        await seq.evaluateWithoutGeneratingNewTokens(model.tokenize(` piece number ${i}`) as Token[]);
        used.push(ctx.currentThreads);
      }
      assert.deepEqual(used, [1, 2, 1]);
    } finally {
      await ctx.dispose();
    }
  });

  test("embeddings context: pooledEmbedding reads the pooled vector of sequence 0 only (why BERT inputs cannot share a decode)", async () => {
    const modelsDir = join(homedir(), ".cache", "svc", "models");
    const logger = createMemoryLogger();
    const folder = await resolveModelFolder(DEFAULT_EMBEDDING_SPEC, {modelsDir, logger, progress: "lines"});
    const gguf = await ensureConverted(folder.dir, {name: "nx3-embedding-0.6b", target: `${folder.dir}.gguf`, logger, progress: "lines"});
    const bert = await llama.loadModel({modelPath: gguf.path});
    const ctx = await createEmbeddingsContext(bert, {contextSize: 512, batchSize: 512, threads: 2, sequences: 2});
    try {
      const wrap = (t: string) => [bert.tokens.bos!, ...bert.tokenize(t), bert.tokens.sep!] as Token[];
      const a = wrap("The cat sits on the mat.");
      const b = wrap("Stock markets fell sharply on Monday.");
      const [s0, s1] = [ctx.getSequence(), ctx.getSequence()];
      await s0.evaluateWithoutGeneratingNewTokens(a);
      const alone = Array.from(pooledEmbedding(ctx, a.length));
      assert.equal(alone.length, 384);
      await s0.eraseContextTokenRanges([{start: 0, end: s0.nextTokenIndex}]);
      await s0.evaluateWithoutGeneratingNewTokens(a);
      assert.deepEqual(Array.from(pooledEmbedding(ctx, a.length)), alone, "the same tokens alone give the same bits");
      await s0.eraseContextTokenRanges([{start: 0, end: s0.nextTokenIndex}]);
      await s1.evaluateWithoutGeneratingNewTokens(b);
      await s1.eraseContextTokenRanges([{start: 0, end: s1.nextTokenIndex}]);
      await Promise.all([s0.evaluateWithoutGeneratingNewTokens(a), s1.evaluateWithoutGeneratingNewTokens(b)]);
      const shared = Array.from(pooledEmbedding(ctx, a.length + b.length));
      const cos = shared.reduce((x, v, i) => x + v * alone[i]!, 0) / Math.hypot(...shared) / Math.hypot(...alone);
      assert.ok(cos > 0.9999, "after a two-sequence decode the addon still hands back sequence 0's vector (there is no way to read sequence 1's)");
      assert.notDeepEqual(shared, alone, "and not bit-identical: sharing the decode changes sequence 0's floats on this CPU build");
    } finally {
      await ctx.dispose();
      await bert.dispose();
    }
  });
});
