// parseSideModels (SVC_NPU_MODELS): ids, `default`, `id=source`, own fine-tune paths, and every refusal
// that stops the start with a line saying what would work.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {DEFAULT_SIDE_IDS, ROUTE_OF_KIND, SIDE_MODELS, SideModelsSettingError, parseSideModels, type SideEntry} from "../../../src/side-models/registry.ts";
import {DEFAULT_SPEECH_SPEC} from "../../../src/side-models/speech/model-source.ts";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../../src/models/known-files.ts";

const ids = (entries: SideEntry[]) => entries.map((e) => (e.type === "id" ? e.def.id : `dir:${e.dir}`));

function refusal(value: string): string {
  try {
    parseSideModels(value);
  } catch (err) {
    assert.ok(err instanceof SideModelsSettingError, `expected SideModelsSettingError, got ${String(err)}`);
    return err.message;
  }
  assert.fail(`"${value}" was accepted`);
}

describe("parseSideModels", () => {
  test("unset or empty names nothing", () => {
    assert.deepEqual(parseSideModels(undefined), []);
    assert.deepEqual(parseSideModels(""), []);
    assert.deepEqual(parseSideModels(" , ,"), []);
  });

  test("an id gets its kind, default source and prompt format", () => {
    const [e] = parseSideModels("nx3.5-2b");
    assert.deepEqual(e, {type: "id", def: {id: "nx3.5-2b", kind: "small-generation", source: DEFAULT_MAIN_MODEL_SPEC, format: "chat"}});
  });

  test("several ids, spaces around commas, order kept", () => {
    assert.deepEqual(ids(parseSideModels(" decider-0.8b , nx3.5-2b,nx3-embedding-0.6b ")), ["decider-0.8b", "nx3.5-2b", "nx3-embedding-0.6b"]);
  });

  test("`default` names the default list; an id also named explicitly is not doubled", () => {
    assert.deepEqual(ids(parseSideModels("default")), [...DEFAULT_SIDE_IDS]);
    assert.deepEqual(ids(parseSideModels("default,decider-4b")), [...DEFAULT_SIDE_IDS, "decider-4b"]);
    assert.ok(!DEFAULT_SIDE_IDS.includes("decider-4b" as never), "the 4b models are not in the default list");
    // An id named before `default` keeps its place and `default` adds the rest.
    assert.deepEqual(ids(parseSideModels("nx3.5-2b,default")), ["nx3.5-2b", ...DEFAULT_SIDE_IDS.filter((i) => i !== "nx3.5-2b")]);
  });

  test("id=source points an id at another file and keeps its kind", () => {
    assert.deepEqual(parseSideModels("nx3.5-2b=/models/other.gguf"),
      [{type: "id", def: {...SIDE_MODELS["nx3.5-2b"], id: "nx3.5-2b", source: "/models/other.gguf"}}]);
    assert.deepEqual(parseSideModels("decider-0.8b = hf:org/repo/file.gguf"),
      [{type: "id", def: {...SIDE_MODELS["decider-0.8b"], id: "decider-0.8b", source: "hf:org/repo/file.gguf"}}]);
  });

  test("an absolute directory path is an own fine-tune (trailing slashes dropped)", () => {
    assert.deepEqual(parseSideModels("/models/my-classifier/"), [{type: "fine-tune", dir: "/models/my-classifier"}]);
    assert.deepEqual(ids(parseSideModels("nx3.5-2b,/models/a,/models/b")), ["nx3.5-2b", "dir:/models/a", "dir:/models/b"]);
  });

  test("an unknown id stops the start naming the known ids", () => {
    const msg = refusal("not-a-model");
    assert.match(msg, /"not-a-model" is not a side-model id/);
    for (const id of Object.keys(SIDE_MODELS)) assert.ok(msg.includes(id), `the line names ${id}`);
    assert.match(msg, /"default"/);
    assert.match(refusal("nx3.5-2b,NX3.5-2B"), /"NX3.5-2B" is not a side-model id/, "ids are case-sensitive");
    assert.match(refusal("relative/dir"), /"relative\/dir" is not a side-model id/, "only absolute paths are fine-tunes");
  });

  test("an id named twice is refused", () => {
    assert.match(refusal("nx3.5-2b,nx3.5-2b"), /"nx3.5-2b" is named twice/);
    assert.match(refusal("nx3.5-2b,nx3.5-2b=/x.gguf"), /"nx3.5-2b" is named twice/);
  });

  test("id= with no source is refused", () => {
    assert.match(refusal("nx3.5-2b="), /names no source after "="/);
  });

  test("embeddingnx-2 needs its model and projector as id=<model>+<projector>; without them it is refused saying so", () => {
    assert.match(refusal("embeddingnx-2"), /embeddingnx-2 has no default weights .*embeddingnx-2=<model\.gguf>\+<mmproj\.gguf>/);
    assert.match(refusal("nx3.5-2b,embeddingnx-2=/models/e.gguf"), /needs its model and the projector .*got "\/models\/e\.gguf"/);
    assert.match(refusal("embeddingnx-2=/models/e.gguf+"), /needs its model and the projector/);
    assert.deepEqual(parseSideModels("embeddingnx-2=hf:o/r/m.gguf+/p/mmproj.gguf"),
      [{type: "id", def: {id: "embeddingnx-2", kind: "embedding", source: "hf:o/r/m.gguf+/p/mmproj.gguf", format: "multimodal"}}]);
  });

  test("nximg2-klein-4b needs the folder of its weights as id=<folder>; without it it is refused saying so", () => {
    assert.match(refusal("nximg2-klein-4b"), /nximg2-klein-4b has no default weights .*nximg2-klein-4b=<folder> holding the FLUX\.2 klein/);
    assert.match(refusal("nximg2-klein-4b="), /names no source after "="/);
    assert.deepEqual(parseSideModels("nximg2-klein-4b=/models/klein"),
      [{type: "id", def: {id: "nximg2-klein-4b", kind: "image", source: "/models/klein", format: "flux2-klein"}}]);
    assert.equal(ROUTE_OF_KIND.image, "POST /v1/images/generations, or /v1/images/edits and /v1/images/variations (multipart)");
  });
});

describe("parseSideModels: speech ids", () => {
  test("nx3-asr-0.6b is a speech model with the default source", () => {
    assert.deepEqual(parseSideModels("nx3-asr-0.6b"),
      [{type: "id", def: {id: "nx3-asr-0.6b", kind: "speech", source: DEFAULT_SPEECH_SPEC, format: "whisper"}}]);
    assert.deepEqual(parseSideModels(" nx3-asr-1.7b "),
      [{type: "id", def: {id: "nx3-asr-1.7b", kind: "speech", source: DEFAULT_SPEECH_SPEC, format: "whisper"}}]);
    assert.equal(SIDE_MODELS["nx3-asr-0.6b"]!.unavailable, undefined);
    assert.match(ROUTE_OF_KIND.speech, /\/v1\/audio\/transcriptions/);
  });

  test("both speech ids at once are refused, asking to name one", () => {
    for (const value of ["nx3-asr-0.6b,nx3-asr-1.7b", "nx3-asr-1.7b, nx3-asr-0.6b", "nx3-asr-0.6b,default,nx3-asr-1.7b=/m"]) {
      const msg = refusal(value);
      assert.match(msg, /name one/, value);
      assert.ok(msg.includes("nx3-asr-0.6b") && msg.includes("nx3-asr-1.7b"), msg);
    }
  });

  test("the same speech id twice is refused as named twice", () => {
    assert.match(refusal("nx3-asr-0.6b,nx3-asr-0.6b"), /named twice/);
  });

  test("id=source keeps the source", () => {
    assert.deepEqual(parseSideModels("nx3-asr-1.7b=/some/path"),
      [{type: "id", def: {id: "nx3-asr-1.7b", kind: "speech", source: "/some/path", format: "whisper"}}]);
    assert.deepEqual(parseSideModels("nx3-asr-0.6b = hf:org/whisper-small-ct2 "),
      [{type: "id", def: {id: "nx3-asr-0.6b", kind: "speech", source: "hf:org/whisper-small-ct2", format: "whisper"}}]);
    assert.match(refusal("nx3-asr-0.6b="), /names no source/);
  });

  test("a speech id goes with the other side models; default names none", () => {
    const entries = parseSideModels("default,nx3-asr-0.6b");
    const speech = entries.filter((e) => e.type === "id" && e.def.kind === "speech");
    assert.equal(speech.length, 1);
    assert.ok(entries.length > 1);
    assert.ok(parseSideModels("default").every((e) => e.type === "id" && e.def.kind !== "speech"));
  });
});
