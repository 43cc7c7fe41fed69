// The CTranslate2 Whisper → whisper.cpp ggml converter, without a real model: the model.bin reader, the
// tensor mapping on a tiny but complete WhisperSpec, the ggml file read back, the byte-level vocabulary,
// float → half rounding, the mel filterbank against OpenAI's, and the keep/reuse/reconvert rule.
//
// The model.bin files are written by an independent writer: a short Python script (struct.pack) following
// ctranslate2/specs/model_spec.py's layout, not by anything in src/.

import assert from "node:assert/strict";
import {execFileSync} from "node:child_process";
import {createHash} from "node:crypto";
import {mkdtemp, readdir, readFile, rm, stat, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {ensureWhisperGgml, WHISPER_CONVERTER_VERSION} from "../../../../src/models/whisper-convert/convert.ts";
import {Ct2Dtype, Ct2FormatError, readCt2, scalar} from "../../../../src/models/whisper-convert/ct2.ts";
import {floatToHalf, ggmlWhisperParts, WhisperConvertError, whisperHparams, whisperTensors, whisperVocab}
  from "../../../../src/models/whisper-convert/ggml-whisper.ts";
import {hzToMel, melFilters, melToHz, N_FFT} from "../../../../src/models/whisper-convert/mel-filters.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";

// ---------------------------------------------------------------------------------------------------------
// The independent model.bin writer.

/**
 * Reads {version, spec, revision, variables: [{name, dims, dtype, values, nbytes?}], aliases} as JSON on stdin,
 * writes model.bin to argv[1] as model_spec.py does (u32 version, string spec name, u32 revision, u32 count,
 * per variable: string name, u8 rank, u32 dims, u8 dtype id, u32 byte count, data; then u32 alias count and
 * (alias, target) string pairs; a string is u16 length including a NUL, the bytes, the NUL), and prints
 * {name: [data offset, data bytes]}.
 */
const CT2_WRITER = String.raw`
import json, struct, sys
spec = json.load(sys.stdin)
fmt = {0: 'f', 1: 'b', 2: 'h', 3: 'i', 4: 'e'}
out = bytearray()
def string(x):
    b = x.encode('utf-8')
    out.extend(struct.pack('<H', len(b) + 1))
    out.extend(b)
    out.extend(struct.pack('<B', 0))
out.extend(struct.pack('<I', spec['version']))
string(spec['spec'])
out.extend(struct.pack('<I', spec['revision']))
out.extend(struct.pack('<I', len(spec['variables'])))
where = {}
for v in spec['variables']:
    string(v['name'])
    out.extend(struct.pack('<B', len(v['dims'])))
    for d in v['dims']:
        out.extend(struct.pack('<I', d))
    out.extend(struct.pack('<B', v['dtype']))
    if v['dtype'] == 5:
        data = b''.join(struct.pack('<f', x)[2:4] for x in v['values'])
    else:
        data = struct.pack('<%d%s' % (len(v['values']), fmt[v['dtype']]), *v['values'])
    out.extend(struct.pack('<I', v.get('nbytes', len(data))))
    where[v['name']] = [len(out), len(data)]
    out.extend(data)
if spec['aliases'] is not None:
    out.extend(struct.pack('<I', len(spec['aliases'])))
    for alias, target in spec['aliases']:
        string(alias)
        string(target)
with open(sys.argv[1], 'wb') as f:
    f.write(out)
json.dump(where, sys.stdout)
`;

interface VarSpec {name: string; dims: number[]; dtype: number; values: number[]; nbytes?: number}
interface FileSpec {version?: number; spec?: string; revision?: number; variables: VarSpec[]; aliases?: [string, string][] | null}

/** Writes model.bin with the Python writer; returns where each variable's data sits in the file. */
function writeCt2(path: string, f: FileSpec): Map<string, [number, number]> {
  const input = JSON.stringify({version: f.version ?? 6, spec: f.spec ?? "WhisperSpec", revision: f.revision ?? 3, variables: f.variables,
    aliases: f.aliases === undefined ? [] : f.aliases});
  const out = execFileSync("python3", ["-c", CT2_WRITER, path], {input, encoding: "utf8"});
  return new Map(Object.entries(JSON.parse(out) as Record<string, [number, number]>));
}

let dir = "";
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "whisper-convert-"));
});
after(async () => {
  if (dir) await rm(dir, {recursive: true, force: true});
});

let fileNo = 0;
async function ct2(f: FileSpec): Promise<{buf: Buffer; where: Map<string, [number, number]>; path: string}> {
  const path = join(dir, `model-${fileNo++}.bin`);
  const where = writeCt2(path, f);
  return {buf: await readFile(path), where, path};
}

function refusal(fn: () => unknown, cls: new (...a: never[]) => Error): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    return err.message;
  }
  assert.fail("accepted");
}

// ---------------------------------------------------------------------------------------------------------
// 1. readCt2

describe("readCt2", () => {
  const small: FileSpec = {
    spec: "TestSpec", revision: 7,
    variables: [
      {name: "a/weight", dims: [2, 3], dtype: Ct2Dtype.FLOAT16, values: [1, 2, 3, -4, 0.5, 65504]},
      {name: "a/bias", dims: [3], dtype: Ct2Dtype.FLOAT32, values: [0.25, -1.5, 3e10]},
      {name: "q/weight", dims: [2, 2], dtype: Ct2Dtype.INT8, values: [-128, 127, 0, 5]},
      {name: "s16", dims: [2], dtype: Ct2Dtype.INT16, values: [-2, 300]},
      {name: "s32", dims: [1], dtype: Ct2Dtype.INT32, values: [-100000]},
      {name: "bf", dims: [2], dtype: Ct2Dtype.BFLOAT16, values: [1.5, -2]},
      {name: "heads8", dims: [], dtype: Ct2Dtype.INT8, values: [-3]},
      {name: "heads16", dims: [], dtype: Ct2Dtype.INT16, values: [20]},
      {name: "heads32", dims: [], dtype: Ct2Dtype.INT32, values: [123456]},
      {name: "scale", dims: [], dtype: Ct2Dtype.FLOAT32, values: [0.125]},
      {name: "half", dims: [], dtype: Ct2Dtype.FLOAT16, values: [2]},
    ],
    aliases: [["b/weight", "a/weight"], ["dangling", "no/such"]],
  };

  test("names, spec, revision, dims, dtypes and data", async () => {
    const {buf, where} = await ct2(small);
    const m = readCt2(buf);
    assert.equal(m.spec, "TestSpec");
    assert.equal(m.revision, 7);
    assert.deepEqual([...m.variables.keys()].filter((k) => k !== "b/weight"), small.variables.map((v) => v.name));
    for (const v of small.variables) {
      const got = m.variables.get(v.name)!;
      assert.deepEqual(got.dims, v.dims, v.name);
      assert.equal(got.dtype, v.dtype, v.name);
      const [off, len] = where.get(v.name)!;
      assert.ok(got.data.equals(buf.subarray(off, off + len)), v.name);
    }
    const w = m.variables.get("a/weight")!.data;
    assert.deepEqual([0, 1, 2, 3, 4, 5].map((i) => w.readUInt16LE(2 * i)), [0x3c00, 0x4000, 0x4200, 0xc400, 0x3800, 0x7bff]);
    const b = m.variables.get("a/bias")!.data;
    assert.deepEqual([0, 1, 2].map((i) => b.readFloatLE(4 * i)), [0.25, -1.5, Math.fround(3e10)]);
    assert.deepEqual([...m.variables.get("q/weight")!.data].map((x) => (x << 24) >> 24), [-128, 127, 0, 5]);
    assert.deepEqual([0, 1].map((i) => m.variables.get("s16")!.data.readInt16LE(2 * i)), [-2, 300]);
    assert.equal(m.variables.get("s32")!.data.readInt32LE(0), -100000);
    assert.deepEqual([0, 1].map((i) => m.variables.get("bf")!.data.readUInt16LE(2 * i)), [0x3fc0, 0xc000]);
  });

  test("an alias resolves to its target's variable; one naming no variable adds nothing", async () => {
    const m = readCt2((await ct2(small)).buf);
    assert.equal(m.variables.get("b/weight"), m.variables.get("a/weight"));
    assert.ok(m.variables.get("b/weight"));
    assert.equal(m.variables.has("dangling"), false);
  });

  test("a file without the alias table (ends after the variables) reads", async () => {
    const m = readCt2((await ct2({...small, aliases: null})).buf);
    assert.equal(m.variables.size, small.variables.length);
  });

  test("scalar() reads integer and float32 scalars, nothing else", async () => {
    const m = readCt2((await ct2(small)).buf);
    assert.equal(scalar(m.variables.get("heads8")), -3);
    assert.equal(scalar(m.variables.get("heads16")), 20);
    assert.equal(scalar(m.variables.get("heads32")), 123456);
    assert.equal(scalar(m.variables.get("scale")), 0.125);
    assert.equal(scalar(m.variables.get("half")), undefined);
    assert.equal(scalar(m.variables.get("s32")), undefined, "rank 1 is not a scalar");
    assert.equal(scalar(m.variables.get("missing")), undefined);
    assert.equal(scalar(undefined), undefined);
  });

  test("binary version 5 is refused, naming version 6", async () => {
    const msg = refusal(() => readCt2(Buffer.alloc(0)), Ct2FormatError);
    assert.match(msg, /truncated/);
    const {buf} = await ct2({...small, version: 5});
    const v5 = refusal(() => readCt2(buf), Ct2FormatError);
    assert.match(v5, /version 5/);
    assert.match(v5, /version 6/);
  });

  test("every truncation is refused as truncated (except a cut right before the optional alias table)", async () => {
    const {buf, where} = await ct2(small);
    const last = small.variables.at(-1)!.name;
    const aliasTable = where.get(last)![0] + where.get(last)![1];
    let refused = 0;
    for (let n = 0; n < buf.length; n++) {
      if (n === aliasTable) {
        assert.equal(readCt2(buf.subarray(0, n)).variables.size, small.variables.length);
        continue;
      }
      const msg = refusal(() => readCt2(buf.subarray(0, n)), Ct2FormatError);
      assert.match(msg, /truncated/, `cut at ${n}`);
      refused++;
    }
    assert.equal(refused, buf.length - 1);
  });

  test("a byte count that does not match the dims is refused", async () => {
    const {buf} = await ct2({spec: "X", variables: [{name: "w", dims: [2, 3], dtype: Ct2Dtype.FLOAT16, values: [1, 2, 3, 4, 5, 6], nbytes: 14}]});
    const msg = refusal(() => readCt2(buf), Ct2FormatError);
    assert.match(msg, /\bw\b/);
    assert.match(msg, /14 bytes for 2x3 of float16/);
    const {buf: short} = await ct2({spec: "X", variables: [{name: "w", dims: [4], dtype: Ct2Dtype.FLOAT32, values: [1, 2, 3]}]});
    assert.match(refusal(() => readCt2(short), Ct2FormatError), /12 bytes for 4 of float32/);
  });

  test("an unknown dtype id is refused", async () => {
    const {buf} = await ct2({spec: "X", variables: [{name: "w", dims: [2], dtype: Ct2Dtype.INT8, values: [1, 2]}]});
    // the dtype byte follows name (u16 + "w\0"), rank and one dim, at 4 + (2 + 2) + 4 + 4 + (2 + 2) + 1 + 4
    const copy = Buffer.from(buf);
    const at = 4 + 4 + 4 + 4 + 4 + 1 + 4;
    assert.equal(copy[at], Ct2Dtype.INT8);
    copy[at] = 9;
    assert.match(refusal(() => readCt2(copy), Ct2FormatError), /unknown dtype id 9/);
  });
});

// ---------------------------------------------------------------------------------------------------------
// 2./3. A tiny, complete WhisperSpec.

const N = 8;              // audio and text state
const ENC_HEADS = 2;
const DEC_HEADS = 4;      // differs from the encoder's so a swap shows
const MELS = 80;
const VOCAB = 60;
const ACTX = 4;
const TCTX = 6;           // differs from ACTX so a swap shows
const FF = 4 * N;

interface TinyVar {name: string; dims: number[]; id: number}

/**
 * The float variables of the tiny checkpoint, each with an id k (1..31 then -1..-31). Element values:
 * sign(k) * (|k| + r/64) with r the row (first axis) of a matrix or the index in a vector. Every value is exact in
 * float16 (at most 11 significant bits), so no two variables and no two rows of one variable hold the same bytes.
 */
function tinyVars(): TinyVar[] {
  const names: [string, number[]][] = [
    ["encoder/conv1/weight", [N, MELS, 3]], ["encoder/conv1/bias", [N]],
    ["encoder/conv2/weight", [N, N, 3]], ["encoder/conv2/bias", [N]],
    ["encoder/position_encodings/encodings", [ACTX, N]],
    ...layer("encoder/layer_0", false),
    ["encoder/layer_norm/gamma", [N]], ["encoder/layer_norm/beta", [N]],
    ["decoder/embeddings/weight", [VOCAB, N]],
    ["decoder/position_encodings/encodings", [TCTX, N]],
    ...layer("decoder/layer_0", true),
    ["decoder/layer_norm/gamma", [N]], ["decoder/layer_norm/beta", [N]],
  ];
  assert.ok(names.length <= 62);
  return names.map(([name, dims], i) => ({name, dims, id: i < 31 ? i + 1 : -(i - 30)}));

  function layer(p: string, cross: boolean): [string, number[]][] {
    return [
      [`${p}/self_attention/layer_norm/gamma`, [N]], [`${p}/self_attention/layer_norm/beta`, [N]],
      [`${p}/self_attention/linear_0/weight`, [3 * N, N]], [`${p}/self_attention/linear_0/bias`, [3 * N]],
      [`${p}/self_attention/linear_1/weight`, [N, N]], [`${p}/self_attention/linear_1/bias`, [N]],
      ...(cross ? [
        [`${p}/attention/layer_norm/gamma`, [N]], [`${p}/attention/layer_norm/beta`, [N]],
        [`${p}/attention/linear_0/weight`, [N, N]], [`${p}/attention/linear_0/bias`, [N]],
        [`${p}/attention/linear_1/weight`, [2 * N, N]], [`${p}/attention/linear_1/bias`, [2 * N]],
        [`${p}/attention/linear_2/weight`, [N, N]], [`${p}/attention/linear_2/bias`, [N]],
      ] as [string, number[]][] : []),
      [`${p}/ffn/layer_norm/gamma`, [N]], [`${p}/ffn/layer_norm/beta`, [N]],
      [`${p}/ffn/linear_0/weight`, [FF, N]], [`${p}/ffn/linear_0/bias`, [FF]],
      [`${p}/ffn/linear_1/weight`, [N, FF]], [`${p}/ffn/linear_1/bias`, [N]],
    ];
  }
}

const TINY = tinyVars();
const TINY_BY_NAME = new Map(TINY.map((v) => [v.name, v]));
const elemValue = (id: number, r: number) => Math.sign(id) * (Math.abs(id) + r / 64);
const rowLen = (dims: number[]) => (dims.length >= 2 ? dims.slice(1).reduce((a, b) => a * b, 1) : 1);
const count = (dims: number[]) => dims.reduce((a, b) => a * b, 1);

/** The value at flat index i of a tiny variable. */
function valueAt(v: TinyVar, i: number): number {
  return elemValue(v.id, Math.floor(i / rowLen(v.dims)));
}

function tinySpec(opts: {dtype?: number; override?: Record<string, number>; spec?: string} = {}): FileSpec {
  const variables: VarSpec[] = TINY.map((v) => ({name: v.name, dims: v.dims, dtype: opts.override?.[v.name] ?? opts.dtype ?? Ct2Dtype.FLOAT16,
    values: Array.from({length: count(v.dims)}, (_, i) => {
      const x = valueAt(v, i);
      return (opts.override?.[v.name] ?? opts.dtype) === Ct2Dtype.INT8 ? Math.trunc(x) : x;
    })}));
  variables.splice(5, 0, {name: "encoder/num_heads", dims: [], dtype: Ct2Dtype.INT16, values: [ENC_HEADS]});
  variables.push({name: "decoder/num_heads", dims: [], dtype: Ct2Dtype.INT32, values: [DEC_HEADS]});
  return {spec: opts.spec ?? "WhisperSpec", revision: 3, variables, aliases: [["decoder/projection/weight", "decoder/embeddings/weight"]]};
}

/** Every tensor whisper.cpp loads for 1 encoder + 1 decoder layer: its name, source, ggml type and shape (numpy order). */
interface Want {name: string; src: string; type: 0 | 1; shape: number[]; rows?: [number, number]}
function expectedTensors(): Want[] {
  const out: Want[] = [];
  const src = (s: string) => TINY_BY_NAME.get(s)!;
  const w = (name: string, s: string, rows?: [number, number]) => {
    const d = src(s).dims;
    out.push({name, src: s, type: 1, shape: rows ? [rows[1] - rows[0], ...d.slice(1)] : d, rows});
  };
  const f = (name: string, s: string, rows?: [number, number], shape?: number[]) => {
    const d = src(s).dims;
    out.push({name, src: s, type: 0, shape: shape ?? (rows ? [rows[1] - rows[0], ...d.slice(1)] : d), rows});
  };
  const lin = (name: string, s: string, rows?: [number, number], bias = true) => {
    w(`${name}.weight`, `${s}/weight`, rows);
    if (bias) f(`${name}.bias`, `${s}/bias`, rows);
  };
  const ln = (name: string, s: string) => {
    f(`${name}.weight`, `${s}/gamma`);
    f(`${name}.bias`, `${s}/beta`);
  };
  const attn = (b: string, s: string) => {
    ln(`${b}.attn_ln`, `${s}/layer_norm`);
    lin(`${b}.attn.query`, `${s}/linear_0`, [0, N]);
    lin(`${b}.attn.key`, `${s}/linear_0`, [N, 2 * N], false);
    lin(`${b}.attn.value`, `${s}/linear_0`, [2 * N, 3 * N]);
    lin(`${b}.attn.out`, `${s}/linear_1`);
  };
  const mlp = (b: string, s: string) => {
    ln(`${b}.mlp_ln`, `${s}/ffn/layer_norm`);
    lin(`${b}.mlp.0`, `${s}/ffn/linear_0`);
    lin(`${b}.mlp.2`, `${s}/ffn/linear_1`);
  };
  f("encoder.positional_embedding", "encoder/position_encodings/encodings");
  w("encoder.conv1.weight", "encoder/conv1/weight");
  f("encoder.conv1.bias", "encoder/conv1/bias", undefined, [N, 1]);
  w("encoder.conv2.weight", "encoder/conv2/weight");
  f("encoder.conv2.bias", "encoder/conv2/bias", undefined, [N, 1]);
  attn("encoder.blocks.0", "encoder/layer_0/self_attention");
  mlp("encoder.blocks.0", "encoder/layer_0");
  ln("encoder.ln_post", "encoder/layer_norm");
  f("decoder.positional_embedding", "decoder/position_encodings/encodings");
  w("decoder.token_embedding.weight", "decoder/embeddings/weight");
  attn("decoder.blocks.0", "decoder/layer_0/self_attention");
  ln("decoder.blocks.0.cross_attn_ln", "decoder/layer_0/attention/layer_norm");
  lin("decoder.blocks.0.cross_attn.query", "decoder/layer_0/attention/linear_0");
  lin("decoder.blocks.0.cross_attn.key", "decoder/layer_0/attention/linear_1", [0, N], false);
  lin("decoder.blocks.0.cross_attn.value", "decoder/layer_0/attention/linear_1", [N, 2 * N]);
  lin("decoder.blocks.0.cross_attn.out", "decoder/layer_0/attention/linear_2");
  mlp("decoder.blocks.0", "decoder/layer_0");
  ln("decoder.ln", "decoder/layer_norm");
  return out;
}

/** whisper.cpp's tensor names for one encoder and one decoder layer, written out by hand. */
const WHISPER_CPP_NAMES = (() => {
  const names = ["encoder.positional_embedding", "encoder.conv1.weight", "encoder.conv1.bias", "encoder.conv2.weight", "encoder.conv2.bias",
    "encoder.ln_post.weight", "encoder.ln_post.bias", "decoder.positional_embedding", "decoder.token_embedding.weight", "decoder.ln.weight",
    "decoder.ln.bias"];
  const common = ["attn_ln.weight", "attn_ln.bias", "attn.query.weight", "attn.query.bias", "attn.key.weight", "attn.value.weight",
    "attn.value.bias", "attn.out.weight", "attn.out.bias", "mlp_ln.weight", "mlp_ln.bias", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight",
    "mlp.2.bias"];
  const cross = ["cross_attn_ln.weight", "cross_attn_ln.bias", "cross_attn.query.weight", "cross_attn.query.bias", "cross_attn.key.weight",
    "cross_attn.value.weight", "cross_attn.value.bias", "cross_attn.out.weight", "cross_attn.out.bias"];
  for (const c of common) names.push(`encoder.blocks.0.${c}`);
  for (const c of [...common, ...cross]) names.push(`decoder.blocks.0.${c}`);
  return names;
})();

const EXPECTED_HPARAMS = {nVocab: VOCAB, nAudioCtx: ACTX, nAudioState: N, nAudioHead: ENC_HEADS, nAudioLayer: 1, nTextCtx: TCTX,
  nTextState: N, nTextHead: DEC_HEADS, nTextLayer: 1, nMels: MELS};

/** A decoder for float16 bits written here (not src's), for reading converted data back. */
function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

describe("whisperHparams and whisperTensors on a tiny WhisperSpec", () => {
  let tiny: {buf: Buffer; where: Map<string, [number, number]>};
  before(async () => {
    tiny = await ct2(tinySpec());
  });

  test("the hparams come from the checkpoint's shapes and head counts", () => {
    assert.deepEqual(whisperHparams(readCt2(tiny.buf)), EXPECTED_HPARAMS);
  });

  test("every whisper.cpp tensor name for 1+1 layers is present exactly once", () => {
    const m = readCt2(tiny.buf);
    const names = whisperTensors(m, whisperHparams(m)).map((t) => t.name);
    assert.equal(new Set(names).size, names.length, "no name twice");
    assert.deepEqual([...names].sort(), [...WHISPER_CPP_NAMES].sort());
    assert.ok(!names.includes("encoder.blocks.0.attn.key.bias"));
    assert.ok(!names.includes("decoder.blocks.0.cross_attn.key.bias"));
  });

  test("each tensor has its source rows, type and shape; matrices stay float16 byte for byte, vectors widen exactly", () => {
    const m = readCt2(tiny.buf);
    const got = new Map(whisperTensors(m, whisperHparams(m)).map((t) => [t.name, t]));
    for (const want of expectedTensors()) {
      const t = got.get(want.name);
      assert.ok(t, want.name);
      assert.equal(t.type, want.type, `${want.name} type`);
      assert.deepEqual(t.shape, want.shape, `${want.name} shape`);
      const v = TINY_BY_NAME.get(want.src)!;
      const [from, to] = want.rows ?? [0, v.dims[0]!];
      const rl = rowLen(v.dims);
      if (want.type === 1) {
        const [off] = tiny.where.get(want.src)!;
        assert.ok(t.data.equals(tiny.buf.subarray(off + from * rl * 2, off + to * rl * 2)), `${want.name} bytes`);
      } else {
        assert.equal(t.data.length, (to - from) * rl * 4, `${want.name} length`);
        for (let i = 0; i < (to - from) * rl; i++) {
          assert.equal(t.data.readFloatLE(4 * i), valueAt(v, from * rl + i), `${want.name}[${i}]`);
        }
      }
    }
  });

  test("the fused self-attention splits q | k | v by rows, the cross-attention k | v", () => {
    const m = readCt2(tiny.buf);
    const got = new Map(whisperTensors(m, whisperHparams(m)).map((t) => [t.name, t]));
    const id = (s: string) => TINY_BY_NAME.get(s)!.id;
    const firstRow = (name: string) => half(got.get(name)!.data.readUInt16LE(0));
    const lastRow = (name: string) => half(got.get(name)!.data.readUInt16LE(got.get(name)!.data.length - 2));
    for (const side of ["encoder", "decoder"]) {
      const k = id(`${side}/layer_0/self_attention/linear_0/weight`);
      assert.equal(firstRow(`${side}.blocks.0.attn.query.weight`), elemValue(k, 0));
      assert.equal(lastRow(`${side}.blocks.0.attn.query.weight`), elemValue(k, N - 1));
      assert.equal(firstRow(`${side}.blocks.0.attn.key.weight`), elemValue(k, N));
      assert.equal(lastRow(`${side}.blocks.0.attn.key.weight`), elemValue(k, 2 * N - 1));
      assert.equal(firstRow(`${side}.blocks.0.attn.value.weight`), elemValue(k, 2 * N));
      assert.equal(lastRow(`${side}.blocks.0.attn.value.weight`), elemValue(k, 3 * N - 1));
      const kb = id(`${side}/layer_0/self_attention/linear_0/bias`);
      assert.equal(got.get(`${side}.blocks.0.attn.query.bias`)!.data.readFloatLE(0), elemValue(kb, 0));
      assert.equal(got.get(`${side}.blocks.0.attn.value.bias`)!.data.readFloatLE(0), elemValue(kb, 2 * N));
      assert.equal(got.get(`${side}.blocks.0.attn.value.bias`)!.data.readFloatLE(4 * (N - 1)), elemValue(kb, 3 * N - 1));
    }
    const c = id("decoder/layer_0/attention/linear_1/weight");
    assert.equal(firstRow("decoder.blocks.0.cross_attn.key.weight"), elemValue(c, 0));
    assert.equal(lastRow("decoder.blocks.0.cross_attn.key.weight"), elemValue(c, N - 1));
    assert.equal(firstRow("decoder.blocks.0.cross_attn.value.weight"), elemValue(c, N));
    assert.equal(lastRow("decoder.blocks.0.cross_attn.value.weight"), elemValue(c, 2 * N - 1));
    const cb = id("decoder/layer_0/attention/linear_1/bias");
    assert.equal(got.get("decoder.blocks.0.cross_attn.value.bias")!.data.readFloatLE(0), elemValue(cb, N));
  });

  test("a float32 checkpoint converts to the same tensors as its float16 twin", async () => {
    const f32 = await ct2(tinySpec({dtype: Ct2Dtype.FLOAT32}));
    const a = readCt2(tiny.buf);
    const b = readCt2(f32.buf);
    const ta = whisperTensors(a, whisperHparams(a));
    const tb = whisperTensors(b, whisperHparams(b));
    assert.deepEqual(tb.map((t) => [t.name, t.type, t.shape]), ta.map((t) => [t.name, t.type, t.shape]));
    for (let i = 0; i < ta.length; i++) assert.ok(tb[i]!.data.equals(ta[i]!.data), ta[i]!.name);
  });

  test("an int8 weight is refused, naming int8 and float16", async () => {
    const {buf} = await ct2(tinySpec({override: {"encoder/layer_0/ffn/linear_0/weight": Ct2Dtype.INT8}}));
    const m = readCt2(buf);
    const msg = refusal(() => whisperTensors(m, whisperHparams(m)), WhisperConvertError);
    assert.match(msg, /int8/);
    assert.match(msg, /float16/);
    assert.match(msg, /encoder\/layer_0\/ffn\/linear_0\/weight/);
  });

  test("a spec other than WhisperSpec is refused", async () => {
    const {buf} = await ct2(tinySpec({spec: "TransformerSpec"}));
    const msg = refusal(() => whisperHparams(readCt2(buf)), WhisperConvertError);
    assert.match(msg, /TransformerSpec/);
    assert.match(msg, /WhisperSpec/);
  });

  test("a WhisperSpec missing a variable is refused, naming it", async () => {
    const spec = tinySpec();
    spec.variables = spec.variables.filter((v) => v.name !== "decoder/layer_0/attention/linear_2/bias");
    const {buf} = await ct2(spec);
    const m = readCt2(buf);
    const msg = refusal(() => whisperTensors(m, whisperHparams(m)), WhisperConvertError);
    assert.match(msg, /decoder\/layer_0\/attention\/linear_2\/bias/);
  });
});

/** An independent reader of whisper.cpp's ggml model file. */
function readGgml(buf: Buffer) {
  let at = 0;
  const i32 = () => ((at += 4), buf.readInt32LE(at - 4));
  const magic = buf.readUInt32LE(0);
  at = 4;
  const hparams = Array.from({length: 11}, i32);
  const nMel = i32();
  const nFft = i32();
  const filters = Array.from({length: nMel * nFft}, (_, i) => buf.readFloatLE(at + 4 * i));
  at += 4 * nMel * nFft;
  const nTokens = i32();
  const tokens: Buffer[] = [];
  for (let i = 0; i < nTokens; i++) {
    const len = buf.readUInt32LE(at);
    at += 4;
    tokens.push(buf.subarray(at, at + len));
    at += len;
  }
  const tensors: {name: string; type: number; ne: number[]; data: Buffer}[] = [];
  while (at < buf.length) {
    const nDims = i32();
    const nameLen = i32();
    const type = i32();
    const ne = Array.from({length: nDims}, i32);
    const name = buf.toString("utf8", at, at + nameLen);
    at += nameLen;
    const size = ne.reduce((a, b) => a * b, 1) * (type === 0 ? 4 : type === 1 ? 2 : NaN);
    assert.ok(at + size <= buf.length, `${name} runs past the end`);
    tensors.push({name, type, ne, data: buf.subarray(at, at + size)});
    at += size;
  }
  return {magic, hparams, nMel, nFft, filters, tokens, tensors};
}

describe("ggmlWhisperParts", () => {
  test("the file reads back: magic, hparams, filters, vocabulary, tensors with dims innermost first", async () => {
    const {buf} = await ct2(tinySpec());
    const m = readCt2(buf);
    const h = whisperHparams(m);
    const tensors = whisperTensors(m, h);
    const vocab = [Buffer.from("a"), Buffer.from(" the"), Buffer.alloc(0), Buffer.from([0xc3, 0xa9])];
    const file = Buffer.concat([...ggmlWhisperParts(h, vocab, tensors)]);
    const g = readGgml(file);
    assert.equal(g.magic, 0x67676d6c);
    assert.deepEqual(file.subarray(0, 4), Buffer.from("lmgg", "latin1"));
    assert.deepEqual(g.hparams, [VOCAB, ACTX, N, ENC_HEADS, 1, TCTX, N, DEC_HEADS, 1, MELS, 1]);
    assert.equal(g.nMel, 80);
    assert.equal(g.nFft, 201);
    assert.equal(1 + N_FFT / 2, 201);
    assert.deepEqual(g.filters, [...melFilters(80)]);
    assert.deepEqual(g.tokens.map((t) => [...t]), vocab.map((t) => [...t]));
    assert.equal(g.tensors.length, tensors.length);
    g.tensors.forEach((t, i) => {
      const src = tensors[i]!;
      assert.equal(t.name, src.name);
      assert.equal(t.type, src.type, t.name);
      assert.deepEqual(t.ne, [...src.shape].reverse(), t.name);
      assert.ok(t.data.equals(src.data), t.name);
    });
    const byName = new Map(g.tensors.map((t) => [t.name, t]));
    assert.deepEqual(byName.get("encoder.conv1.weight")!.ne, [3, MELS, N]);
    assert.deepEqual(byName.get("encoder.conv1.bias")!.ne, [1, N]);
    assert.deepEqual(byName.get("decoder.token_embedding.weight")!.ne, [N, VOCAB]);
    assert.deepEqual(byName.get("encoder.blocks.0.attn.key.weight")!.ne, [N, N]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// 4. whisperVocab

describe("whisperVocab", () => {
  test("byte-level spellings decode to their bytes", () => {
    const v = whisperVocab(["!", "hello", "Ġthe", "Ċ", "Ã©", "ĉ", "Ā", "ġ", "Ń", "<|endoftext|>"]);
    assert.deepEqual(v.map((b) => [...b]), [
      [0x21], [...Buffer.from("hello")], [...Buffer.from(" the")], [0x0a], [0xc3, 0xa9], [0x09], [0x00], [0x7f], [0xad],
    ]);
    assert.equal(Buffer.concat(v.slice(4, 5)).toString("utf8"), "é");
  });

  test("all 256 bytes decode as GPT-2's bytes_to_unicode spells them (computed by Python)", () => {
    const py = String.raw`
import json
bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
print(json.dumps({b: chr(c) for b, c in zip(bs, cs)}))
`;
    const table = JSON.parse(execFileSync("python3", ["-c", py], {encoding: "utf8"})) as Record<string, string>;
    assert.equal(Object.keys(table).length, 256);
    const bytes = Array.from({length: 256}, (_, b) => b);
    const v = whisperVocab([...bytes.map((b) => table[b]!), bytes.map((b) => table[b]!).join(""), "<|endoftext|>"]);
    assert.equal(v.length, 257);
    bytes.forEach((b) => assert.deepEqual([...v[b]!], [b], `byte ${b}`));
    assert.deepEqual([...v[256]!], bytes);
  });

  test("stops at <|endoftext|>; an empty line stays an empty token", () => {
    const v = whisperVocab(["a", "", "b", "<|endoftext|>", "<|startoftranscript|>", "<|en|>", ""]);
    assert.deepEqual(v.map((b) => b.toString("latin1")), ["a", "", "b"]);
    assert.deepEqual(whisperVocab(["<|endoftext|>"]), []);
  });

  test("no <|endoftext|> is an error; so is a character outside the byte-level alphabet", () => {
    assert.match(refusal(() => whisperVocab(["a", "b", ""]), WhisperConvertError), /no <\|endoftext\|>/);
    const msg = refusal(() => whisperVocab(["a", "x y", "<|endoftext|>"]), WhisperConvertError);
    assert.match(msg, /line 2/);
    assert.throws(() => whisperVocab(["€", "<|endoftext|>"]), WhisperConvertError);
  });
});

// ---------------------------------------------------------------------------------------------------------
// 5. floatToHalf against Python's struct 'e' (IEEE binary16, round half to even)

describe("floatToHalf", () => {
  test("matches Python's struct 'e' on ~2000 float32 values (subnormals, ties, overflow, NaN, ±0)", () => {
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    const fromBits = (b: number) => ((u32[0] = b >>> 0), f32[0]!);
    const bitsOf = (x: number) => ((f32[0] = x), u32[0]!);
    const values: number[] = [0, -0, Infinity, -Infinity, NaN, 1, -1, 0.1, 1 / 3, 65504, -65504, 65519, 65520, -65520, 65536, 1e10, -3e38,
      2 ** -14, 2 ** -24, -(2 ** -24), 2 ** -25, 2 ** -26, 2 ** -14 - 2 ** -24, 6e-8, 5.9e-8, 2 ** -149, 3.4028234663852886e38];
    values.push(fromBits(bitsOf(2 ** -25) + 1), fromBits(bitsOf(2 ** -25) - 1), fromBits(bitsOf(65520) - 1));
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    // exact ties and their float32 neighbours, across normal and subnormal halves
    for (let i = 0; i < 300; i++) {
      const h = Math.floor(rand() * 0x7bff);
      const lo = half(h), hi = half(h + 1);
      const mid = (lo + hi) / 2;
      const sign = rand() < 0.5 ? -1 : 1;
      assert.equal(Math.fround(mid), mid);
      values.push(sign * mid, sign * fromBits(bitsOf(mid) + 1), sign * fromBits(bitsOf(mid) - 1), sign * lo);
    }
    // random float32 bit patterns with exponents around binary16's range (2^-27 .. 2^17)
    while (values.length < 2000) {
      const exp = 100 + Math.floor(rand() * 45);
      const mant = Math.floor(rand() * 0x800000);
      values.push(fromBits(((rand() < 0.5 ? 1 : 0) << 31) | (exp << 23) | mant));
    }
    const py = String.raw`
import struct, sys
out = []
for line in sys.stdin.read().split():
    x = struct.unpack('<f', bytes.fromhex(line))[0]
    try:
        out.append(struct.pack('<e', x).hex())
    except OverflowError:
        out.append('overflow')
print(' '.join(out))
`;
    const input = values.map((x) => {
      const b = Buffer.alloc(4);
      b.writeFloatLE(x);
      return b.toString("hex");
    }).join("\n");
    const ref = execFileSync("python3", ["-c", py], {input, encoding: "utf8"}).trim().split(" ");
    assert.equal(ref.length, values.length);
    let overflows = 0, subnormals = 0;
    values.forEach((x, i) => {
      const got = floatToHalf(x);
      const want = ref[i]!;
      if (want === "overflow") {
        // Python refuses a finite value beyond binary16 after rounding; IEEE (and numpy) give ±inf
        overflows++;
        assert.equal(got, x < 0 ? 0xfc00 : 0x7c00, `${x}`);
        return;
      }
      const w = Buffer.from(want, "hex").readUInt16LE(0);
      if ((w & 0x7c00) === 0 && (w & 0x3ff) !== 0) subnormals++;
      assert.equal(got.toString(16), w.toString(16), `floatToHalf(${x})`);
    });
    assert.ok(overflows >= 5, `overflows ${overflows}`);
    assert.ok(subnormals >= 20, `subnormals ${subnormals}`);
    assert.equal(floatToHalf(-0), 0x8000);
    assert.equal(floatToHalf(NaN) & 0x7c00, 0x7c00);
    assert.notEqual(floatToHalf(NaN) & 0x3ff, 0);
  });
});

// ---------------------------------------------------------------------------------------------------------
// 6. The mel filterbank

// Reference: OpenAI's whisper/assets/mel_filters.npz, member mel_80.npy (float32, shape (80, 201)), from the
// openai-whisper 20250625 sdist (npz sha256 7450ae70723a5ef9d341e3cee628c7cb0177f36ce42c44b7ed2bf3325f0f6d4c).
// Per row: the sum of the row's 201 float32 weights (summed in float64) and the index of its largest weight
// (first on a tie), computed once with Python's zipfile and struct.
const REF_ROW_SUMS = [
  0.02486259490251541, 0.024862593738362193, 0.024862594436854124, 0.02486259490251541, 0.024862593971192837,
  0.024862593039870262, 0.024862593039870262, 0.024862593039870262, 0.024862593971192837, 0.02486259350553155,
  0.024862592574208975, 0.024862593971192837, 0.024862593330908567, 0.025880683213472366, 0.025835324078798294,
  0.02486259350553155, 0.024862593971192837, 0.024862593039870262, 0.024862593039870262, 0.024862593971192837,
  0.024862593971192837, 0.024862593039870262, 0.024862593039870262, 0.024862593039870262, 0.02486259490251541,
  0.024914436042308807, 0.025432823225855827, 0.0253476919606328, 0.025259895715862513, 0.025079278275370598,
  0.02481880784034729, 0.02449009846895933, 0.024103514850139618, 0.026483861031010747, 0.025296074687503278,
  0.02319991495460272, 0.026987506542354822, 0.023507524048909545, 0.026231922209262848, 0.02339493765612133,
  0.026664861012250185, 0.024523787666112185, 0.024640648858621716, 0.024950320017524064, 0.02511633245740086,
  0.02515684487298131, 0.025088174385018647, 0.02492496045306325, 0.024680318543687463, 0.025235229346435517,
  0.025129430112428963, 0.02478999237064272, 0.02489705220796168, 0.02539173001423478, 0.02483308466617018,
  0.024956808076240122, 0.024961331160739064, 0.024862290476448834, 0.025315728620626032, 0.02482376627449412,
  0.02510154154151678, 0.024853391194483265, 0.025032290490344167, 0.025084381486522034, 0.025026101153343916,
  0.02487219765316695, 0.0251194650772959, 0.024881786812329665, 0.025036489278136287, 0.025067550042876974,
  0.024991078593302518, 0.024901229866372887, 0.025078217964619398, 0.024990130099467933, 0.02496992688247701,
  0.02508481378754368, 0.0249231467169011, 0.02501575164933456, 0.025022621965035796, 0.024925339792389423,
];
const REF_ROW_ARGMAX = [
  1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 32, 33, 34, 36, 37,
  38, 40, 41, 43, 45, 46, 48, 50, 52, 54, 56, 59, 61, 63, 66, 68, 71, 74, 77, 80, 83, 86, 89, 93, 96, 100, 104, 108, 112, 117, 121, 126, 131,
  136, 142, 147, 153, 159, 165, 172, 178, 185, 192,
];

describe("melFilters", () => {
  test("80 rows of 201 bins whose sums and peaks match OpenAI's mel_80", () => {
    const f = melFilters(80);
    assert.equal(f.length, 80 * 201);
    assert.equal(REF_ROW_SUMS.length, 80);
    assert.equal(REF_ROW_ARGMAX.length, 80);
    for (let r = 0; r < 80; r++) {
      let sum = 0, best = -1, at = -1;
      for (let k = 0; k < 201; k++) {
        const v = f[r * 201 + k]!;
        assert.ok(v >= 0, `row ${r} bin ${k}`);
        sum += v;
        if (v > best) {
          best = v;
          at = k;
        }
      }
      assert.ok(Math.abs(sum - REF_ROW_SUMS[r]!) <= 1e-6 * REF_ROW_SUMS[r]!, `row ${r}: sum ${sum} vs ${REF_ROW_SUMS[r]}`);
      assert.equal(at, REF_ROW_ARGMAX[r], `row ${r} peak`);
    }
  });

  test("Slaney's scale: linear to 1 kHz (15 mel), 27 log steps per factor 6.4; hzToMel and melToHz invert", () => {
    assert.equal(hzToMel(0), 0);
    assert.ok(Math.abs(hzToMel(1000) - 15) < 1e-12);
    assert.ok(Math.abs(hzToMel(500) - 7.5) < 1e-12);
    assert.ok(Math.abs(hzToMel(6400) - 42) < 1e-12);
    assert.ok(Math.abs(melToHz(42) - 6400) < 1e-9);
    for (const hz of [0, 1, 50, 440, 999.999, 1000, 1000.001, 2500, 4000, 7999, 8000, 16000]) {
      const back = melToHz(hzToMel(hz));
      assert.ok(Math.abs(back - hz) <= 1e-9 * Math.max(1, hz), `${hz} → ${back}`);
    }
    for (let mel = 0; mel <= 50; mel += 0.37) {
      const back = hzToMel(melToHz(mel));
      assert.ok(Math.abs(back - mel) <= 1e-9 * Math.max(1, mel), `${mel} → ${back}`);
    }
    for (let hz = 0; hz < 8000; hz += 97) assert.ok(hzToMel(hz + 1) > hzToMel(hz), `increasing at ${hz}`);
  });
});

// ---------------------------------------------------------------------------------------------------------
// 7. ensureWhisperGgml: convert, reuse, reconvert

describe("ensureWhisperGgml", () => {
  const VOCAB_LINES = ["!", "a", "Ġthe", "Ċ", "Ã©", "<|endoftext|>", "<|startoftranscript|>", ""];
  const sha = async (p: string) => createHash("sha256").update(await readFile(p)).digest("hex");

  test("first call converts and records, second reuses, a changed vocabulary reconverts", async () => {
    const work = await mkdtemp(join(dir, "ensure-"));
    const {path: model} = await ct2(tinySpec());
    const vocabulary = join(work, "vocabulary.txt");
    await writeFile(vocabulary, VOCAB_LINES.join("\n"));
    const out = join(work, "out", "ggml-tiny.bin");
    const logger = createMemoryLogger();
    const ctx = {name: "tiny-whisper", logger, progress: "lines" as const};

    const first = await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx);
    assert.deepEqual(first, {path: out, outcome: "converted"});
    const record = JSON.parse(await readFile(`${out}.source.json`, "utf8"));
    assert.deepEqual(record, {converter: WHISPER_CONVERTER_VERSION, inputs: {[model]: await sha(model), [vocabulary]: await sha(vocabulary)}});
    const g = readGgml(await readFile(out));
    assert.deepEqual(g.hparams, [VOCAB, ACTX, N, ENC_HEADS, 1, TCTX, N, DEC_HEADS, 1, MELS, 1]);
    assert.deepEqual(g.tokens.map((t) => t.toString("latin1")), ["!", "a", " the", "\n", "\xc3\xa9"]);
    assert.deepEqual(g.tensors.map((t) => t.name).sort(), [...WHISPER_CPP_NAMES].sort());
    assert.ok(logger.lines.some((l) => l.includes("speech model converted") && l.includes("first start")));
    const mtime = (await stat(out)).mtimeMs;

    const second = await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx);
    assert.deepEqual(second, {path: out, outcome: "reused"});
    assert.equal((await stat(out)).mtimeMs, mtime);
    assert.ok(logger.lines.some((l) => l.includes("converted speech model reused")));

    await writeFile(vocabulary, ["!", "b", ...VOCAB_LINES.slice(2)].join("\n"));
    const third = await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx);
    assert.deepEqual(third, {path: out, outcome: "converted"});
    assert.ok(logger.lines.some((l) => l.includes("speech model converted") && l.includes("checkpoint or converter changed")));
    assert.deepEqual(readGgml(await readFile(out)).tokens.map((t) => t.toString("latin1")), ["!", "b", " the", "\n", "\xc3\xa9"]);
    assert.equal(JSON.parse(await readFile(`${out}.source.json`, "utf8")).inputs[vocabulary], await sha(vocabulary));
  });

  test("a missing output or an unreadable record reconverts; model.bin in parts converts to the same file", async () => {
    const work = await mkdtemp(join(dir, "ensure-"));
    const {path: model, buf} = await ct2(tinySpec());
    const vocabulary = join(work, "vocabulary.txt");
    await writeFile(vocabulary, VOCAB_LINES.join("\n"));
    const out = join(work, "ggml.bin");
    const ctx = {name: "tiny-whisper", logger: createMemoryLogger(), progress: "lines" as const};
    assert.equal((await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx)).outcome, "converted");
    const whole = await readFile(out);

    await rm(out);
    assert.equal((await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx)).outcome, "converted");
    await writeFile(`${out}.source.json`, "{not json");
    assert.equal((await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx)).outcome, "converted");
    assert.equal((await ensureWhisperGgml({modelParts: [model], vocabulary}, out, ctx)).outcome, "reused");

    const cut = Math.floor(buf.length / 3);
    const p1 = join(work, "model.bin.part1"), p2 = join(work, "model.bin.part2"), p3 = join(work, "model.bin.part3");
    await writeFile(p1, buf.subarray(0, cut));
    await writeFile(p2, buf.subarray(cut, 2 * cut));
    await writeFile(p3, buf.subarray(2 * cut));
    const out2 = join(work, "ggml-parts.bin");
    assert.equal((await ensureWhisperGgml({modelParts: [p1, p2, p3], vocabulary}, out2, ctx)).outcome, "converted");
    assert.ok((await readFile(out2)).equals(whole));
    assert.deepEqual(Object.keys(JSON.parse(await readFile(`${out2}.source.json`, "utf8")).inputs), [p1, p2, p3, vocabulary]);
  });

  test("a checkpoint that cannot be converted leaves neither output nor record", async () => {
    const work = await mkdtemp(join(dir, "ensure-"));
    const {path: model} = await ct2(tinySpec({override: {"decoder/layer_0/ffn/linear_1/weight": Ct2Dtype.INT8}}));
    const vocabulary = join(work, "vocabulary.txt");
    await writeFile(vocabulary, VOCAB_LINES.join("\n"));
    const out = join(work, "ggml.bin");
    await assert.rejects(ensureWhisperGgml({modelParts: [model], vocabulary}, out, {name: "q", logger: createMemoryLogger(), progress: "lines"}),
      (e: unknown) => e instanceof WhisperConvertError && /int8/.test(e.message));
    assert.deepEqual(await readdir(work), ["vocabulary.txt"]);
  });
});
