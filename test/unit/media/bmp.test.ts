// BMP pictures (media/bmp.ts through readPicture): files written here by a tiny writer for every depth and
// header the reader takes, read back pixel by pixel; every variant it does not read, and every truncated or
// lying file, a 400 naming the field.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import sharp from "sharp";
import {readPicture, type PictureLimits} from "../../../src/media/picture.ts";
import {refusal} from "./refusal.ts";

const FIELD = "input[0].image";

interface BmpSpec {
  width: number;
  height: number;
  bits: number;
  topDown?: boolean;
  /** The info header's size (40 unless told). */
  header?: number;
  /** Default: bit fields (3) when masks are given, else none (0). */
  compression?: number;
  /** Written at byte 54: after a 40-byte header, inside a longer one. */
  masks?: number[];
  palette?: [number, number, number][];
  colorsUsed?: number;
  /** The stored value: a palette index, a packed 16- or 32-bit pixel, or 0xRRGGBB at 24 bits. */
  value: (x: number, y: number) => number;
}

function writeBmp(spec: BmpSpec): Buffer {
  const {width, height, bits} = spec;
  const header = spec.header ?? 40;
  const masks = spec.masks ?? [];
  const palette = spec.palette ?? [];
  const stride = Math.floor((bits * width + 31) / 32) * 4;
  const offset = 14 + header + (header === 40 ? masks.length * 4 : 0) + palette.length * 4;
  const file = Buffer.alloc(offset + stride * height);
  file.write("BM", 0, "latin1");
  file.writeUInt32LE(file.length, 2);
  file.writeUInt32LE(offset, 10);
  file.writeUInt32LE(header, 14);
  file.writeInt32LE(width, 18);
  file.writeInt32LE(spec.topDown ? -height : height, 22);
  file.writeUInt16LE(1, 26);
  file.writeUInt16LE(bits, 28);
  file.writeUInt32LE(spec.compression ?? (masks.length > 0 ? 3 : 0), 30);
  file.writeUInt32LE(stride * height, 34);
  file.writeUInt32LE(spec.colorsUsed ?? palette.length, 46);
  masks.forEach((mask, i) => file.writeUInt32LE(mask, 54 + i * 4));
  palette.forEach(([r, g, b], i) => file.set([b, g, r, 0], offset - palette.length * 4 + i * 4));
  for (let y = 0; y < height; y++) {
    const row = offset + stride * (spec.topDown ? y : height - 1 - y);
    for (let x = 0; x < width; x++) {
      const value = spec.value(x, y);
      if (bits <= 8) file[row + Math.floor((x * bits) / 8)]! |= value << (8 - bits * ((x % (8 / bits)) + 1));
      else if (bits === 16) file.writeUInt16LE(value, row + x * 2);
      else if (bits === 24) file.set([value & 0xff, (value >> 8) & 0xff, value >>> 16], row + x * 3);
      else file.writeUInt32LE(value >>> 0, row + x * 4);
    }
  }
  return file;
}

/** The picture's pixels as [r, g, b] rows. */
async function rgbRows(bmp: Buffer, limits?: PictureLimits): Promise<[number, number, number][][]> {
  const picture = await readPicture(bmp, FIELD, limits);
  assert.equal(picture.format, "bmp");
  const {data, info} = await sharp(picture.png).raw().toBuffer({resolveWithObject: true});
  assert.equal(info.channels, 3);
  return Array.from({length: info.height}, (_, y) =>
    Array.from({length: info.width}, (_, x) => [...data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3)] as [number, number, number]));
}

const rgb = (value: number): [number, number, number] => [value >>> 16, (value >> 8) & 0xff, value & 0xff];

describe("BMP depths and layouts", () => {
  test("24 bits, bottom-up and top-down, odd width (padded rows)", async () => {
    const colours = [[0xff0000, 0x00ff00, 0x0000ff], [0x123456, 0xfedcba, 0x808080]];
    const value = (x: number, y: number): number => colours[y]![x]!;
    const want = colours.map((row) => row.map(rgb));
    assert.deepEqual(await rgbRows(writeBmp({width: 3, height: 2, bits: 24, value})), want);
    assert.deepEqual(await rgbRows(writeBmp({width: 3, height: 2, bits: 24, value, topDown: true})), want);
  });

  test("1, 4 and 8 bits through the palette, leftmost pixel in the high bits", async () => {
    const two: [number, number, number][] = [[10, 20, 30], [240, 230, 220]];
    const one = await rgbRows(writeBmp({width: 10, height: 3, bits: 1, palette: two, value: (x, y) => (x + y) % 2}));
    assert.deepEqual(one, Array.from({length: 3}, (_, y) => Array.from({length: 10}, (_, x) => two[(x + y) % 2])));
    const sixteen = Array.from({length: 16}, (_, i): [number, number, number] => [i * 16, 255 - i * 16, i]);
    const four = await rgbRows(writeBmp({width: 5, height: 2, bits: 4, palette: sixteen, value: (x, y) => x + 5 * y, topDown: true}));
    assert.deepEqual(four, [0, 1].map((y) => [0, 1, 2, 3, 4].map((x) => sixteen[x + 5 * y])));
    const grey = Array.from({length: 256}, (_, i): [number, number, number] => [i, i, i]);
    const eight = await rgbRows(writeBmp({width: 3, height: 3, bits: 8, palette: grey, colorsUsed: 0, value: (x, y) => 10 * x + 50 * y}));
    assert.deepEqual(eight, [0, 1, 2].map((y) => [0, 1, 2].map((x) => grey[10 * x + 50 * y])));
  });

  test("16 bits: 5-5-5 without bit fields (top bit ignored), 5-6-5 and 1-5-5-5 with them", async () => {
    const plain = [0x7c00, 0x03e0, 0x001f, 0x4210, 0xffff];
    assert.deepEqual(await rgbRows(writeBmp({width: 5, height: 1, bits: 16, value: (x) => plain[x]!})),
      [[[255, 0, 0], [0, 255, 0], [0, 0, 255], [132, 132, 132], [255, 255, 255]]]);
    const wide = [0xf800, 0x07e0, 0x001f, 0x0400];
    assert.deepEqual(await rgbRows(writeBmp({width: 4, height: 1, bits: 16, masks: [0xf800, 0x07e0, 0x001f], value: (x) => wide[x]!})),
      [[[255, 0, 0], [0, 255, 0], [0, 0, 255], [0, 130, 0]]]);
    const alpha = [0x7c00, 0xfc00];
    const masks = [0x7c00, 0x03e0, 0x001f, 0x8000];
    assert.deepEqual(await rgbRows(writeBmp({width: 2, height: 1, bits: 16, header: 56, masks, value: (x) => alpha[x]!})),
      [[[255, 255, 255], [255, 0, 0]]], "alpha 0 is transparent: white");
  });

  test("32 bits: without bit fields the fourth byte is ignored; with an alpha mask it is alpha (flattened onto white)", async () => {
    const plain = [0x00ff0000, 0x80123456, 0];
    assert.deepEqual(await rgbRows(writeBmp({width: 3, height: 1, bits: 32, value: (x) => plain[x]!})),
      [[[255, 0, 0], [0x12, 0x34, 0x56], [0, 0, 0]]]);
    const argb = [0xff0000ff, 0x00ff0000, 0x80ff0000];
    const masks = [0xff0000, 0xff00, 0xff, 0xff000000];
    const v5 = await rgbRows(writeBmp({width: 3, height: 2, bits: 32, header: 124, masks, value: (x) => argb[x]!}));
    assert.deepEqual(v5[0]!.slice(0, 2), [[0, 0, 255], [255, 255, 255]]);
    const [r, g, b] = v5[1]![2]!;
    assert.ok(r === 255 && Math.abs(g - 127) <= 1 && g === b, `${r} ${g} ${b}`);
    const swapped = [0xff, 0xff00, 0xff0000, 0];
    for (const header of [108, 56, 52]) {
      assert.deepEqual(await rgbRows(writeBmp({width: 1, height: 1, bits: 32, header, masks: swapped.slice(0, header === 52 ? 3 : 4), value: () => 0x563412})),
        [[[0x12, 0x34, 0x56]]], `${header}-byte header`);
    }
    const alphaFields = writeBmp({width: 1, height: 1, bits: 32, compression: 6, masks, value: () => 0x00ff0000});
    assert.deepEqual(await rgbRows(alphaFields), [[[255, 255, 255]]], "BI_ALPHABITFIELDS: four masks after a 40-byte header");
  });

  test("a BMP and a PNG of the same pixels give the same PNG; the same BMP twice the same hash", async () => {
    const bmp = writeBmp({width: 3, height: 2, bits: 24, value: (x, y) => x * 0x400000 + y * 0x80});
    const [a, b] = [await readPicture(bmp, FIELD), await readPicture(bmp, FIELD)];
    assert.equal(a.hash, b.hash);
    const raw = Buffer.from((await rgbRows(bmp)).flat(2));
    const png = await sharp(raw, {raw: {width: 3, height: 2, channels: 3}}).png().toBuffer();
    assert.equal((await readPicture(png, FIELD)).hash, a.hash);
  });
});

describe("BMP refusals", () => {
  const base = {width: 4, height: 2, bits: 24, value: () => 0x102030};

  test("variants that are not read say so and what to send", async () => {
    const cases: [Buffer, RegExp][] = [
      [writeBmp({...base, bits: 8, compression: 1, palette: [[0, 0, 0]]}), /is a compressed BMP \(RLE\), which is not read; send PNG$/],
      [writeBmp({...base, bits: 4, compression: 2, palette: [[0, 0, 0]]}), /compressed BMP \(RLE\)/],
      [writeBmp({...base, compression: 4}), /wrapping a JPEG or PNG, which is not read; send the JPEG or PNG itself$/],
      [writeBmp({...base, header: 12}), /is a BMP with a 12-byte header, which is not read/],
      [writeBmp({...base, bits: 2, palette: [[0, 0, 0]]}), /is a BMP of 2 bits per pixel, which is not read/],
      [writeBmp({...base, masks: [0xff0000, 0xff00, 0xff]}), /is a BMP of 24 bits per pixel with bit fields, which is not read/],
    ];
    for (const [bytes, pattern] of cases) await assert.rejects(readPicture(bytes, FIELD), refusal(FIELD, pattern));
  });

  test("truncated or lying files are refused, never read past their end", async () => {
    const whole = writeBmp(base);
    const palette = writeBmp({...base, bits: 8, palette: Array.from({length: 256}, (): [number, number, number] => [1, 2, 3])});
    const offsetInside = Buffer.from(whole);
    offsetInside.writeUInt32LE(40, 10);
    const cases: [Buffer, RegExp][] = [
      [whole.subarray(0, 2), /could not be decoded as BMP: it is truncated: it needs 18 bytes up to the end of the header, the file has 2$/],
      [whole.subarray(0, 30), /it needs 54 bytes up to the end of the header, the file has 30$/],
      [whole.subarray(0, whole.length - 1), /it needs 78 bytes up to the end of the pixel rows, the file has 77$/],
      [palette.subarray(0, 100), /it needs 1078 bytes up to the end of the palette, the file has 100$/],
      [writeBmp({...base, bits: 32, masks: [0xff0000, 0xff00, 0xff]}).subarray(0, 60), /it needs 66 bytes up to the end of the bit masks/],
      [writeBmp({...base, compression: 9}), /could not be decoded as BMP: unknown compression 9$/],
      [writeBmp({...base, bits: 16, value: () => 0, masks: [0xf0f0, 0x0f00, 0x000f]}), /bit mask 0xf0f0 is not one run of bits/],
      [writeBmp({...base, bits: 16, value: () => 0, masks: [0x1f0000, 0x03e0, 0x001f]}), /bit mask 0x1f0000 is wider than its 16-bit pixels/],
      [writeBmp({...base, bits: 8, colorsUsed: 2, palette: [[0, 0, 0], [9, 9, 9]], value: (x) => x}), /pixel \(2, 0\) uses colour 2 of a 2-colour palette/],
      [offsetInside, /pixel data offset 40 lies inside its headers \(which end at 54\)/],
    ];
    for (const [bytes, pattern] of cases) await assert.rejects(readPicture(bytes, FIELD), refusal(FIELD, pattern), String(pattern));
  });

  test("sizes: zero or negative width, zero height, too large (checked before any pixel is read), at the edge", async () => {
    for (const [width, height] of [[0, 2], [-3, 2], [4, 0]] as const) {
      const bmp = writeBmp({...base, width: 1, height: 1});
      bmp.writeInt32LE(width, 18);
      bmp.writeInt32LE(height, 22);
      await assert.rejects(readPicture(bmp, FIELD), refusal(FIELD, new RegExp(`at least 1x1 pixels; this picture is ${width}x${height}$`)));
    }
    const huge = writeBmp({...base, width: 1, height: 1});
    huge.writeInt32LE(100_000, 18);
    huge.writeInt32LE(-100_000, 22);
    await assert.rejects(readPicture(huge, FIELD), refusal(FIELD, /at most 8192 pixels on each side; this picture is 100000x100000/));
    assert.equal((await rgbRows(writeBmp({...base, width: 10, height: 10}), {maxPixels: 100})).length, 10);
    await assert.rejects(readPicture(writeBmp({...base, width: 10, height: 11}), FIELD, {maxPixels: 100}),
      refusal(FIELD, /at most 100 pixels in all; this picture is 10x11 \(110\)/));
  });
});
