// Start-time checks of SVC_ENGINE replicas against scripted llama-server answers over real HTTP: a replica
// that tokenizes differently, has another vocabulary size or is not a llama-server is refused naming its URL;
// replicas with another model or template than the first are refused.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {checkSameModel, inspectReplica, ReplicaSetupError, TOKENIZER_PROBE, type ReplicaIdentity} from "../../src/engine/remote/remote-identity.ts";
import {scriptedServer, type ScriptedServer} from "./scripted-http.ts";

const local = {vocabSize: 100, tokenize: (text: string) => [...text].map((ch) => ch.charCodeAt(0) % 100)};

let answers: {props: unknown; models: unknown; tokens: (text: string) => number[]; status?: number};
let server: ScriptedServer;
let url = "";

before(async () => {
  server = await scriptedServer((path, body, res) => {
    res.writeHead(answers.status ?? 200, {"content-type": "application/json"});
    if (path === "/props") res.end(JSON.stringify(answers.props));
    else if (path === "/v1/models") res.end(JSON.stringify(answers.models));
    else if (path === "/tokenize") res.end(JSON.stringify({tokens: answers.tokens(JSON.parse(body).content)}));
    else res.end("{}");
  });
  url = server.url;
});
after(() => server.close());

const good = () => ({props: {total_slots: 3, default_generation_settings: {n_ctx: 4096}, chat_template: "{{ messages }}", build_info: "b1-x"},
  models: {data: [{meta: {n_vocab: 100, n_params: 135}}]}, tokens: local.tokenize});

describe("inspectReplica", () => {
  test("a replica like the local model: slots, context, build and template hash", async () => {
    answers = good();
    const id = await inspectReplica(url, local);
    assert.deepEqual({...id, templateSha256: id.templateSha256?.length}, {url, slots: 3, contextSize: 4096, build: "b1-x", templateSha256: 64, vocabSize: 100, params: 135,
      modalities: {vision: false, audio: false}, mediaMarker: null});
  });
  test("another tokenization of the probe text is refused, naming the URL and both counts", async () => {
    answers = {...good(), tokens: (text) => local.tokenize(text).slice(1)};
    await assert.rejects(inspectReplica(url, local), (err: Error) => err instanceof ReplicaSetupError &&
      err.message === `SVC_ENGINE: ${url} tokenizes differently from SVC_MODEL (${[...TOKENIZER_PROBE].length - 1} against ${[...TOKENIZER_PROBE].length} tokens for the same text); run the replicas on the GGUF SVC_MODEL names`);
    answers = {...good(), tokens: (text) => local.tokenize(text).map((t, i) => (i === 3 ? t + 1 : t))};
    await assert.rejects(inspectReplica(url, local), /tokenizes differently/);
  });
  test("another vocabulary size is refused", async () => {
    answers = {...good(), models: {data: [{meta: {n_vocab: 30522}}]}};
    await assert.rejects(inspectReplica(url, local), new RegExp(`${url.replace(/[.]/g, "\\.")} serves a model with 30522 tokens, SVC_MODEL has 100`));
  });
  test("not a llama-server (no slots in /props, or an error status) is refused", async () => {
    answers = {...good(), props: {hello: 1}};
    await assert.rejects(inspectReplica(url, local), /does not describe llama-server slots/);
    answers = {...good(), status: 404};
    await assert.rejects(inspectReplica(url, local), new RegExp(`${url.replace(/[.]/g, "\\.")} cannot be reached or is not a llama-server`));
  });
});

describe("checkSameModel", () => {
  const id = (over: Partial<ReplicaIdentity>): ReplicaIdentity =>
    ({url: "http://a:1", slots: 2, contextSize: 2048, build: null, templateSha256: "aa", vocabSize: 100, params: 135,
      modalities: {vision: false, audio: false}, mediaMarker: null, ...over});
  test("same model and template pass; another parameter count or template is refused naming the replica", () => {
    checkSameModel([id({}), id({url: "http://b:2", slots: 4})]);
    assert.throws(() => checkSameModel([id({}), id({url: "http://b:2", params: 360})]), /http:\/\/b:2 serves another model than http:\/\/a:1 \(360 against 135 parameters\)/);
    assert.throws(() => checkSameModel([id({}), id({url: "http://b:2", templateSha256: "bb"})]), /http:\/\/b:2 has another chat template than http:\/\/a:1/);
  });
});
