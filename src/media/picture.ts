// Pictures in requests: base64 text in, checked PNG bytes out. The PNG is what a llama.cpp child reads (its
// stb_image takes PNG/JPEG/GIF/BMP with 3 channels), so every picture becomes one 8-bit RGB PNG whatever the
// client sent, and every way a picture can be bad is a 400 naming the field and the rule, never a 500.

import {createHash} from "node:crypto";
import sharp, {type Sharp} from "sharp";
import {invalidField, isApiError} from "../core/errors.ts";
import {readBmpHeader, readBmpPixels} from "./bmp.ts";

export type PictureFormat = "png" | "jpeg" | "webp" | "gif" | "bmp";

export interface Picture {
  /**
   * PNG bytes of the picture as the model should see it: first frame only, EXIF orientation applied,
   * transparency flattened onto white, RGB (no alpha), 8-bit. The same input bytes always give the same bytes.
   */
  png: Uint8Array;
  width: number;
  height: number;
  /** The format the client sent. */
  format: PictureFormat;
  /** sha256 hex of `png` (the prompt cache keys a picture by it). */
  hash: string;
}

export interface PictureLimits {
  /** Longest side in pixels (default 8192). */
  maxSide?: number;
  /** Most pixels in all (default 40 megapixels). */
  maxPixels?: number;
}

export const DEFAULT_MAX_SIDE = 8192;
export const DEFAULT_MAX_PIXELS = 40_000_000;

const MIB = 1024 * 1024;
const NO_FETCH = "must be a base64 data URL or bare base64; no URL is ever fetched";
// A data URL: optional media type and parameters, then the payload after the first comma.
const DATA_URL = /^data:([^,]*),/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const WHITESPACE = /[\t\n\f\r ]+/g;
// The standard alphabet (a data URL's), padding optional; base64url's - and _ are refused, not guessed at.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The bytes of a request's picture `url`: a data URL (`data:image/png;base64,...`, any image/* media type or
 * none; the real format is sniffed from the bytes later) or bare base64. Any other scheme is refused, nothing
 * is fetched. The limit counts the base64 text as sent (whitespace included), so it bounds the work done here.
 */
export function pictureBytes(source: string, field: string, maxBase64Chars: number): Uint8Array {
  let payload = source.trimStart();
  const dataUrl = DATA_URL.exec(payload);
  if (dataUrl !== null) {
    const [mediaType = "", ...params] = dataUrl[1]!.split(";").map((part) => part.trim().toLowerCase());
    if (!params.includes("base64")) throw invalidField(field, `${NO_FETCH} (this data URL is not base64)`);
    if (mediaType !== "" && !mediaType.startsWith("image/")) {
      throw invalidField(field, `must be a picture: its data URL says ${mediaType}, not image/*`);
    }
    payload = payload.slice(dataUrl[0].length);
  } else if (SCHEME.test(payload)) {
    throw invalidField(field, NO_FETCH);
  }
  if (payload.length > maxBase64Chars) {
    const mib = Number((maxBase64Chars / MIB).toPrecision(3));
    throw invalidField(field, `must be at most ${mib} MiB of base64 (${maxBase64Chars} characters); this one has ${payload.length}`);
  }
  const text = payload.replace(WHITESPACE, "");
  if (text === "") throw invalidField(field, "must not be empty: it holds no base64 picture data");
  if (!BASE64.test(text) || text.length % 4 === 1 || (text.endsWith("=") && text.length % 4 !== 0)) {
    throw invalidField(field, `${NO_FETCH}; this is not valid base64 (characters outside A-Z a-z 0-9 + / =, or a wrong length)`);
  }
  return Buffer.from(text, "base64");
}

/** The format by its magic bytes; sharp is only ever given what is sniffed here (never SVG, TIFF, HEIF, ...). */
function sniffFormat(bytes: Uint8Array): PictureFormat | null {
  const starts = (...magic: number[]): boolean => magic.every((byte, i) => bytes[i] === byte);
  const ascii = (at: number, text: string): boolean => [...text].every((ch, i) => bytes[at + i] === ch.charCodeAt(0));
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "png";
  if (starts(0xff, 0xd8, 0xff)) return "jpeg";
  if (ascii(0, "GIF87a") || ascii(0, "GIF89a")) return "gif";
  if (ascii(0, "RIFF") && ascii(8, "WEBP")) return "webp";
  if (ascii(0, "BM")) return "bmp";
  return null;
}

/** Decodes and checks a picture's bytes; see `Picture` for what comes out. */
export async function readPicture(bytes: Uint8Array, field: string, limits: PictureLimits = {}): Promise<Picture> {
  const maxSide = limits.maxSide ?? DEFAULT_MAX_SIDE;
  const maxPixels = limits.maxPixels ?? DEFAULT_MAX_PIXELS;
  const format = sniffFormat(bytes);
  if (format === null) throw invalidField(field, "is not a PNG, JPEG, WebP, GIF or BMP picture");
  const label = format === "jpeg" ? "JPEG" : format === "webp" ? "WebP" : format.toUpperCase();
  const checkSize = (width: number, height: number): void => checkDimensions(width, height, field, maxSide, maxPixels);
  try {
    // failOn "error": corrupt and truncated data are refused, a mere warning (some real JPEGs carry harmless ones) is not.
    // limitInputPixels backs the check below in case a header lies about the size.
    const options = {failOn: "error", limitInputPixels: maxPixels} as const;
    let image: Sharp;
    if (format === "bmp") {
      const header = readBmpHeader(bytes, field);
      checkSize(header.width, header.height);
      const raw = readBmpPixels(bytes, header, field);
      image = sharp(raw.data, {...options, raw: {width: raw.width, height: raw.height, channels: raw.channels}});
    } else {
      // The header alone, without the pixel limit, so that the check below names the size and the limit.
      const meta = await sharp(bytes, {limitInputPixels: false}).metadata();
      if (meta.format !== format) throw invalidField(field, `could not be decoded as ${label}: its content is not ${label}`);
      checkSize(meta.width, meta.height);
      image = sharp(bytes, options); // page 0 only: an animation's first frame
    }
    const out = await pngOf(image.autoOrient());
    return {png: out.png, width: out.width, height: out.height, format, hash: hashOf(out.png)};
  } catch (err) {
    if (isApiError(err)) throw err;
    throw invalidField(field, `could not be decoded as ${label}: ${shortReason(err)}`);
  }
}

function checkDimensions(width: number, height: number, field: string, maxSide: number, maxPixels: number): void {
  if (!(width >= 1 && height >= 1)) throw invalidField(field, `must be at least 1x1 pixels; this picture is ${width}x${height}`);
  if (width > maxSide || height > maxSide) {
    throw invalidField(field, `must be at most ${maxSide} pixels on each side; this picture is ${width}x${height}`);
  }
  if (width * height > maxPixels) {
    throw invalidField(field, `must be at most ${maxPixels} pixels in all; this picture is ${width}x${height} (${width * height})`);
  }
}

/** libvips' message cut to its first cause, without the prefixes naming its loaders. */
function shortReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const first = message.replace(/^Input buffer has corrupt header:\s*/, "").split("\n")[0]!;
  const reason = first.replace(/^[\w.]+:\s*/, "").trim();
  return reason === "" ? "its header is corrupt" : reason.slice(0, 120);
}

function hashOf(png: Uint8Array): string {
  return createHash("sha256").update(png).digest("hex");
}

/**
 * The one PNG encoding every picture gets: alpha flattened onto white, sRGB, 8 bits, 3 channels, metadata
 * stripped (sharp keeps none unless asked), and fixed zlib settings, so equal pixels give equal bytes. The fastest
 * deflate level: the PNG only crosses loopback to the engine, and level 6 took twice as long (12 against 6 ms for
 * a 320x240 picture) to save 15% of its size.
 */
async function pngOf(image: Sharp): Promise<{png: Uint8Array; width: number; height: number}> {
  const {data, info} = await image
    .flatten({background: {r: 255, g: 255, b: 255}})
    .toColourspace("srgb")
    .png({compressionLevel: 1, adaptiveFiltering: false, palette: false, progressive: false})
    .toBuffer({resolveWithObject: true});
  return {png: data, width: info.width, height: info.height};
}

// The multimodal embedding model takes at most 2,520 squares of 16x16 pixels with each side a multiple of 48:
// counted in 48x48 blocks (9 squares each), at most 280 blocks.
const BLOCK = 48;
const MAX_BLOCKS = 2520 / ((BLOCK / 16) * (BLOCK / 16));

/**
 * The size (in pixels) a picture of `width` x `height` is resized to for the embedding model, as Qwen2-VL's
 * smart_resize does it in blocks of 48: each side is rounded to the nearest multiple of 48 (half up, at least
 * 48); when that passes 280 blocks, the picture is scaled so that it would cover exactly 280 blocks keeping its
 * shape, each side rounded down to a multiple of 48 (at least 48), and a side beside a clamped one is cut to what
 * the budget leaves (a 20000x10 strip becomes 280 blocks by 1, 13440x48).
 */
export function embeddingSize(width: number, height: number): {width: number; height: number} {
  let across = Math.max(1, Math.round(width / BLOCK));
  let down = Math.max(1, Math.round(height / BLOCK));
  if (across * down > MAX_BLOCKS) {
    const scale = Math.sqrt((MAX_BLOCKS * BLOCK * BLOCK) / (width * height));
    across = Math.max(1, Math.floor((width * scale) / BLOCK));
    down = Math.max(1, Math.floor((height * scale) / BLOCK));
    across = Math.min(across, Math.floor(MAX_BLOCKS / down));
    down = Math.min(down, Math.floor(MAX_BLOCKS / across));
  }
  return {width: across * BLOCK, height: down * BLOCK};
}

/** The picture resized for the multimodal embedding model (see `embeddingSize`); unchanged when it already fits. */
export async function fitForEmbedding(picture: Picture): Promise<Picture> {
  const size = embeddingSize(picture.width, picture.height);
  if (size.width === picture.width && size.height === picture.height) return picture;
  // fill: the rounding changes the shape a little, and the model needs the exact size.
  const out = await pngOf(sharp(picture.png).resize(size.width, size.height, {fit: "fill"}));
  return {png: out.png, width: out.width, height: out.height, format: picture.format, hash: hashOf(out.png)};
}
