// Pictures from requests (media/picture.ts): base64 and data URLs in, one deterministic 8-bit RGB PNG out, and
// every bad input a 400 naming the field. The pictures are made here with sharp, so the pixels are known.

import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {describe, test} from "node:test";
import sharp, {type Color, type Sharp} from "sharp";
import {embeddingSize, fitForEmbedding, pictureBytes, readPicture, type Picture} from "../../../src/media/picture.ts";
import {refusal} from "./refusal.ts";

const FIELD = "messages[0].content[1].image_url.url";
const MIB = 1024 * 1024;

function solid(width: number, height: number, background: Color, channels: 3 | 4 = 3): Sharp {
  return sharp({create: {width, height, channels, background}});
}

/** A horizontal red ramp over a fixed green and blue, so every column differs. */
function gradient(width: number, height: number): Sharp {
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set([Math.round((x * 255) / (width - 1)), 100, 50], (y * width + x) * 3);
  }
  return sharp(data, {raw: {width, height, channels: 3}});
}

async function pixels(picture: Picture): Promise<{data: Buffer; channels: number; depth: string | undefined}> {
  const meta = await sharp(picture.png).metadata();
  const {data, info} = await sharp(picture.png).raw().toBuffer({resolveWithObject: true});
  return {data, channels: info.channels, depth: meta.depth};
}

describe("pictureBytes", () => {
  const png = Buffer.from("89504e470d0a1a0a", "hex");
  const b64 = png.toString("base64");

  test("a data URL of any image type, one with no media type, bare base64 and wrapped base64 give the bytes", () => {
    for (const source of [`data:image/png;base64,${b64}`, `data:image/jpeg;base64,${b64}`, `data:;base64,${b64}`,
      `DATA:Image/PNG;charset=x;BASE64,${b64}`, ` \n data:image/png;base64,${b64}`, b64, `${b64.slice(0, 4)}\n${b64.slice(4, 8)}\r\n ${b64.slice(8)}`]) {
      assert.deepEqual(Buffer.from(pictureBytes(source, FIELD, 1000)), png, source);
    }
    assert.deepEqual(Buffer.from(pictureBytes("AAE", FIELD, 1000)), Buffer.from([0, 1]), "padding is optional");
  });

  test("no URL is ever fetched: every other scheme is refused", () => {
    for (const source of ["https://example.com/a.png", "http://127.0.0.1/a.png", "file:///etc/passwd", "ftp://x/y", " s3://b/k"]) {
      assert.throws(() => pictureBytes(source, FIELD, 1000), refusal(FIELD, /no URL is ever fetched/), source);
    }
  });

  test("a data URL that is not base64 or not an image is refused", () => {
    assert.throws(() => pictureBytes("data:image/png,%89PNG", FIELD, 1000), refusal(FIELD, /not base64/));
    assert.throws(() => pictureBytes(`data:text/plain;base64,${b64}`, FIELD, 1000), refusal(FIELD, /text\/plain, not image\/\*/));
  });

  test("invalid base64 is refused: characters outside the alphabet, a wrong length, misplaced padding, nothing", () => {
    for (const source of ["abc$", "ab-_", "abcde", "ab=c", "abc==", "data:image/png;base64,AA AA!"]) {
      assert.throws(() => pictureBytes(source, FIELD, 1000), refusal(FIELD, /not valid base64/), source);
    }
    for (const source of ["", "data:image/png;base64,", " \n "]) {
      assert.throws(() => pictureBytes(source, FIELD, 1000), refusal(FIELD, /must not be empty/), JSON.stringify(source));
    }
  });

  test("the base64 limit: exactly the limit passes, one character more is refused, naming the limit in MiB", () => {
    assert.equal(pictureBytes("AAAAAAAA", FIELD, 8).length, 6);
    assert.equal(pictureBytes("data:image/png;base64,AAAAAAAA", FIELD, 8).length, 6, "the data URL's prefix is not counted");
    assert.throws(() => pictureBytes("AAAAAAAAA", FIELD, 8), refusal(FIELD, /8 characters\); this one has 9/));
    const limit = 20 * MIB;
    assert.equal(pictureBytes("A".repeat(limit), FIELD, limit).length, limit * 0.75);
    assert.throws(() => pictureBytes("A".repeat(limit + 1), FIELD, limit), refusal(FIELD, /at most 20 MiB of base64/));
  });
});

describe("readPicture", () => {
  test("a PNG: its size, format and exact pixels, as 8-bit RGB", async () => {
    const picture = await readPicture(await gradient(5, 3).png().toBuffer(), FIELD);
    assert.equal(picture.format, "png");
    assert.deepEqual([picture.width, picture.height], [5, 3]);
    const {data, channels, depth} = await pixels(picture);
    assert.equal(channels, 3);
    assert.equal(depth, "uchar");
    assert.deepEqual([...data.subarray(0, 15)], [0, 100, 50, 64, 100, 50, 128, 100, 50, 191, 100, 50, 255, 100, 50]);
  });

  test("lossless WebP and GIF keep their pixels; JPEG stays close", async () => {
    const webp = await readPicture(await gradient(5, 2).webp({lossless: true}).toBuffer(), FIELD);
    assert.equal(webp.format, "webp");
    assert.deepEqual([...(await pixels(webp)).data.subarray(0, 6)], [0, 100, 50, 64, 100, 50]);
    const gif = await readPicture(await solid(3, 2, {r: 255, g: 0, b: 0}).gif().toBuffer(), FIELD);
    assert.equal(gif.format, "gif");
    assert.deepEqual([...(await pixels(gif)).data.subarray(0, 3)], [255, 0, 0]);
    const jpeg = await readPicture(await solid(16, 8, {r: 30, g: 140, b: 220}).jpeg({quality: 95}).toBuffer(), FIELD);
    assert.equal(jpeg.format, "jpeg");
    assert.deepEqual([jpeg.width, jpeg.height], [16, 8]);
    const [r, g, b] = (await pixels(jpeg)).data;
    for (const [got, want] of [[r!, 30], [g!, 140], [b!, 220]] as const) assert.ok(Math.abs(got - want) <= 3, `${got} vs ${want}`);
  });

  test("transparency is flattened onto white; grey and 16-bit pictures come out as 8-bit RGB", async () => {
    const clear = await readPicture(await solid(2, 2, {r: 255, g: 0, b: 0, alpha: 0}, 4).png().toBuffer(), FIELD);
    assert.deepEqual([...(await pixels(clear)).data.subarray(0, 3)], [255, 255, 255]);
    const half = await readPicture(await solid(2, 2, {r: 255, g: 0, b: 0, alpha: 0.5}, 4).png().toBuffer(), FIELD);
    const [r, g, b] = (await pixels(half)).data;
    assert.equal(r, 255);
    assert.ok(Math.abs(g! - 127) <= 1 && g === b, `${g} ${b}`);
    const grey = await readPicture(await solid(2, 2, {r: 90, g: 90, b: 90}).greyscale().png().toBuffer(), FIELD);
    assert.deepEqual([...(await pixels(grey)).data.subarray(0, 4)], [90, 90, 90, 90]);
    assert.equal((await pixels(grey)).channels, 3);
    const deep = await readPicture(await solid(2, 2, {r: 10, g: 200, b: 30}).toColourspace("rgb16").png().toBuffer(), FIELD);
    assert.deepEqual((await sharp(deep.png).metadata()).depth, "uchar");
    assert.deepEqual([...(await pixels(deep)).data.subarray(0, 3)], [10, 200, 30]);
  });

  test("an animation gives its first frame; EXIF orientation is applied", async () => {
    const frames = Buffer.concat([Buffer.alloc(4 * 2 * 3, 0), Buffer.alloc(4 * 2 * 3, 255)]);
    const animated = await sharp(frames, {raw: {width: 4, height: 4, channels: 3, pageHeight: 2}}).gif().toBuffer();
    assert.equal((await sharp(animated).metadata()).pages, 2);
    const first = await readPicture(animated, FIELD);
    assert.deepEqual([first.width, first.height], [4, 2]);
    assert.deepEqual([...(await pixels(first)).data.subarray(0, 3)], [0, 0, 0]);
    const webp = await sharp(frames, {raw: {width: 4, height: 4, channels: 3, pageHeight: 2}}).webp({lossless: true}).toBuffer();
    assert.equal((await sharp(webp).metadata()).pages, 2);
    const firstWebp = await readPicture(webp, FIELD);
    assert.deepEqual([firstWebp.width, firstWebp.height, (await pixels(firstWebp)).data[0]], [4, 2, 0]);
    const rotated = await gradient(4, 2).jpeg().withMetadata({orientation: 6}).toBuffer();
    const upright = await readPicture(rotated, FIELD);
    assert.deepEqual([upright.width, upright.height], [2, 4]);
  });

  test("deterministic: the same bytes give the same PNG and hash; other pixels another hash", async () => {
    const input = await gradient(40, 30).jpeg().toBuffer();
    const [a, b] = [await readPicture(input, FIELD), await readPicture(Buffer.from(input), FIELD)];
    assert.deepEqual(Buffer.from(a.png), Buffer.from(b.png));
    assert.equal(a.hash, b.hash);
    assert.equal(a.hash, createHash("sha256").update(a.png).digest("hex"));
    const other = await readPicture(await gradient(40, 31).jpeg().toBuffer(), FIELD);
    assert.notEqual(other.hash, a.hash);
    const metadata = await sharp(a.png).metadata();
    assert.equal(metadata.exif, undefined, "no metadata is kept");
    assert.equal(metadata.icc, undefined);
  });

  test("what is not PNG, JPEG, WebP, GIF or BMP is refused, SVG and TIFF included", async () => {
    const tiff = await solid(2, 2, "#000").tiff().toBuffer();
    for (const bytes of [Buffer.from("hello"), Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), tiff, Buffer.alloc(0)]) {
      await assert.rejects(readPicture(bytes, FIELD), refusal(FIELD, /is not a PNG, JPEG, WebP, GIF or BMP picture$/));
    }
  });

  test("corrupt or truncated data is refused naming the format and a short reason", async () => {
    const png = await gradient(32, 32).png().toBuffer();
    const jpeg = await gradient(64, 64).jpeg().toBuffer();
    const cases: [Buffer, RegExp][] = [
      [png.subarray(0, 40), /could not be decoded as PNG: \S/],
      [png.subarray(0, png.length - 20), /could not be decoded as PNG: \S/],
      [jpeg.subarray(0, jpeg.length - 100), /could not be decoded as JPEG: \S/],
      [Buffer.from("GIF89a garbage"), /could not be decoded as GIF: \S/],
      [Buffer.from("RIFF\0\0\0\0WEBPxxxx"), /could not be decoded as WebP: \S/],
    ];
    for (const [bytes, pattern] of cases) {
      await assert.rejects(readPicture(bytes, FIELD), (err: unknown) => {
        refusal(FIELD, pattern)(err);
        assert.ok(!(err as Error).message.includes("\n"), "one line");
        return true;
      });
    }
  });

  test("size limits at the edge: per side and in all", async () => {
    const square = await solid(10, 10, "#123456").png().toBuffer();
    assert.equal((await readPicture(square, FIELD, {maxPixels: 100})).width, 10);
    const wider = await solid(11, 10, "#123456").png().toBuffer();
    await assert.rejects(readPicture(wider, FIELD, {maxPixels: 100}), refusal(FIELD, /at most 100 pixels in all; this picture is 11x10 \(110\)/));
    assert.equal((await readPicture(wider, FIELD, {maxSide: 11})).width, 11);
    await assert.rejects(readPicture(wider, FIELD, {maxSide: 10}), refusal(FIELD, /at most 10 pixels on each side; this picture is 11x10/));
  });
});

describe("fitForEmbedding", () => {
  const blocks = (size: {width: number; height: number}): number => (size.width / 48) * (size.height / 48);

  test("the rounding: nearest multiple of 48 within 280 blocks (2,520 squares of 16x16), else scaled down and floored", () => {
    assert.deepEqual(embeddingSize(960, 672), {width: 960, height: 672}, "exactly 2,520 squares stays");
    assert.deepEqual(embeddingSize(1, 1), {width: 48, height: 48});
    assert.deepEqual(embeddingSize(72, 71), {width: 96, height: 48}, "half rounds up, under half down");
    assert.deepEqual(embeddingSize(10000, 48), {width: 9984, height: 48}, "208 blocks: only rounded");
    assert.deepEqual(embeddingSize(20000, 10), {width: 13440, height: 48}, "the long side gets what the clamped one leaves");
    assert.deepEqual(embeddingSize(960, 720), {width: 912, height: 672}, "300 blocks scale to 19x14");
    assert.deepEqual(embeddingSize(803, 803), {width: 768, height: 768}, "rounding up would pass 280 blocks");
    assert.deepEqual(embeddingSize(4000, 3000), {width: 912, height: 672});
    for (const [w, h] of [[1, 8192], [8192, 8192], [7, 5000], [6000, 4000], [1000, 999], [13441, 1], [100000, 100000]] as const) {
      const size = embeddingSize(w, h);
      assert.ok(size.width % 48 === 0 && size.height % 48 === 0 && size.width >= 48 && size.height >= 48, `${w}x${h}`);
      assert.ok(blocks(size) <= 280, `${w}x${h} gave ${size.width}x${size.height}`);
    }
  });

  test("a picture is resized into a new PNG with its own hash; one that fits is returned as it is", async () => {
    const dot = await readPicture(await solid(1, 1, {r: 200, g: 10, b: 10}).png().toBuffer(), FIELD);
    const fitted = await fitForEmbedding(dot);
    assert.deepEqual([fitted.width, fitted.height, fitted.format], [48, 48, "png"]);
    assert.equal(fitted.hash, createHash("sha256").update(fitted.png).digest("hex"));
    assert.notEqual(fitted.hash, dot.hash);
    const {data, channels} = await pixels(fitted);
    assert.equal(channels, 3);
    assert.deepEqual([...data.subarray(data.length - 3)], [200, 10, 10]);
    assert.equal((await fitForEmbedding(dot)).hash, fitted.hash, "deterministic");
    const exact = await readPicture(await solid(960, 672, "#fff").png().toBuffer(), FIELD);
    assert.equal(await fitForEmbedding(exact), exact);
    const strip = await readPicture(await solid(10000, 48, "#0f0").png().toBuffer(), FIELD, {maxSide: 10000});
    assert.deepEqual([(await fitForEmbedding(strip)).width, (await fitForEmbedding(strip)).height], [9984, 48]);
  });
});
