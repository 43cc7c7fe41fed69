// A BMP reader, because sharp (libvips) reads no BMP at all. It turns the file into top-down RGB or RGBA
// bytes that sharp takes as raw input. Clients send BMP from screenshots and old tools; llama.cpp's stb_image
// reads it, so refusing it would be a regression for them.
//
// Read: BITMAPINFOHEADER and its successors (40, 52, 56, 108 and 124 bytes); 1, 4 and 8 bits per pixel through
// the palette; 16 bits (5-5-5 without bit fields, any masks with them); 24 bits; 32 bits (without bit fields
// the fourth byte is reserved and ignored, with them alpha is read when the alpha mask is set); rows bottom-up
// (positive height) or top-down (negative height), each padded to 4 bytes.
// Refused with a rule: RLE compression, embedded JPEG/PNG, the 12-byte OS/2 header, other depths.
// Every offset is checked against the file's length before it is read, so a truncated or lying file is a 400.

import {invalidField, type ApiError} from "../core/errors.ts";

export interface BmpHeader {
  width: number;
  height: number;
  /** Rows are stored top row first (a negative height in the file). */
  topDown: boolean;
  bitsPerPixel: number;
  /** Where the pixel rows start. */
  pixelOffset: number;
  /** 1, 4 and 8 bits: the colours as RGB triples. */
  palette: Uint8Array | null;
  /** 16 and 32 bits: red, green, blue and alpha masks (alpha 0: opaque). */
  masks: [number, number, number, number] | null;
}

export interface RawPixels {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

const FILE_HEADER = 14;
const INFO_HEADERS = new Set([40, 52, 56, 108, 124]);
const BI_RGB = 0;
const BI_RLE8 = 1;
const BI_RLE4 = 2;
const BI_BITFIELDS = 3;
const BI_JPEG = 4;
const BI_PNG = 5;
const BI_ALPHABITFIELDS = 6;
// Without bit fields a 16-bit pixel is x-5-5-5.
const MASKS_555: [number, number, number, number] = [0x7c00, 0x03e0, 0x001f, 0];

function corrupt(field: string, reason: string): ApiError {
  return invalidField(field, `could not be decoded as BMP: ${reason}`);
}

function need(bytes: Uint8Array, end: number, what: string, field: string): void {
  if (end > bytes.length) throw corrupt(field, `it is truncated: it needs ${end} bytes up to the end of ${what}, the file has ${bytes.length}`);
}

/** Reads and checks the headers, palette and masks; the pixel rows are not touched (their size is checked first by the caller). */
export function readBmpHeader(bytes: Uint8Array, field: string): BmpHeader {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  need(bytes, FILE_HEADER + 4, "the header", field);
  const pixelOffset = view.getUint32(10, true);
  const infoSize = view.getUint32(FILE_HEADER, true);
  if (!INFO_HEADERS.has(infoSize)) {
    throw invalidField(field, `is a BMP with a ${infoSize}-byte header, which is not read (40, 52, 56, 108 or 124 bytes are); send PNG`);
  }
  need(bytes, FILE_HEADER + infoSize, "the header", field);
  const width = view.getInt32(18, true);
  const rawHeight = view.getInt32(22, true);
  const bitsPerPixel = view.getUint16(28, true);
  const compression = view.getUint32(30, true);
  const colorsUsed = view.getUint32(46, true);
  let tableEnd = FILE_HEADER + infoSize;

  if (compression === BI_RLE8 || compression === BI_RLE4) throw invalidField(field, "is a compressed BMP (RLE), which is not read; send PNG");
  if (compression === BI_JPEG || compression === BI_PNG) {
    throw invalidField(field, "is a BMP wrapping a JPEG or PNG, which is not read; send the JPEG or PNG itself");
  }
  const bitFields = compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS;
  if (compression !== BI_RGB && !bitFields) throw corrupt(field, `unknown compression ${compression}`);
  if (bitFields ? bitsPerPixel !== 16 && bitsPerPixel !== 32 : ![1, 4, 8, 16, 24, 32].includes(bitsPerPixel)) {
    throw invalidField(field, `is a BMP of ${bitsPerPixel} bits per pixel${bitFields ? " with bit fields" : ""}, which is not read; send PNG`);
  }

  let masks: BmpHeader["masks"] = null;
  if (bitFields) {
    // The 40-byte header keeps its masks after it (three, or four for BI_ALPHABITFIELDS); later headers hold
    // red, green and blue at 40 and, from 56 bytes on, alpha at 52.
    const count = infoSize > 40 ? (infoSize >= 56 ? 4 : 3) : compression === BI_ALPHABITFIELDS ? 4 : 3;
    if (infoSize === 40) tableEnd += count * 4;
    need(bytes, FILE_HEADER + 40 + count * 4, "the bit masks", field);
    const at = (i: number): number => (i < count ? view.getUint32(FILE_HEADER + 40 + i * 4, true) : 0);
    masks = [at(0), at(1), at(2), at(3)];
    for (const mask of masks) checkMask(mask, bitsPerPixel, field);
  } else if (bitsPerPixel === 16) {
    masks = MASKS_555;
  } else if (bitsPerPixel === 32) {
    masks = [0xff0000, 0xff00, 0xff, 0];
  }

  let palette: Uint8Array | null = null;
  if (bitsPerPixel <= 8) {
    // A count past what the depth can index is a writer's slip: only the indexable entries are read.
    const entries = colorsUsed === 0 ? 1 << bitsPerPixel : Math.min(colorsUsed, 1 << bitsPerPixel);
    need(bytes, tableEnd + entries * 4, "the palette", field);
    palette = new Uint8Array(entries * 3);
    for (let i = 0; i < entries; i++) {
      const entry = tableEnd + i * 4; // stored blue, green, red, reserved
      palette[i * 3] = bytes[entry + 2]!;
      palette[i * 3 + 1] = bytes[entry + 1]!;
      palette[i * 3 + 2] = bytes[entry]!;
    }
    tableEnd += entries * 4;
  }
  if (pixelOffset < tableEnd) throw corrupt(field, `its pixel data offset ${pixelOffset} lies inside its headers (which end at ${tableEnd})`);
  return {width, height: Math.abs(rawHeight), topDown: rawHeight < 0, bitsPerPixel, pixelOffset, palette, masks};
}

function checkMask(mask: number, bitsPerPixel: number, field: string): void {
  if (bitsPerPixel === 16 && mask > 0xffff) throw corrupt(field, `bit mask 0x${mask.toString(16)} is wider than its 16-bit pixels`);
  if (mask === 0) return;
  const shifted = mask >>> trailingZeros(mask);
  if ((shifted & (shifted + 1)) !== 0) throw corrupt(field, `bit mask 0x${mask.toString(16)} is not one run of bits`);
}

function trailingZeros(mask: number): number {
  return mask === 0 ? 0 : 31 - Math.clz32(mask & -mask);
}

/** One colour channel out of a pixel by its mask, scaled to 0-255. */
function channelReader(mask: number): (pixel: number) => number {
  if (mask === 0) return () => 0;
  const shift = trailingZeros(mask);
  const max = mask >>> shift;
  return (pixel) => Math.round((((pixel & mask) >>> shift) * 255) / max);
}

/** Decodes the pixel rows into top-down RGB (RGBA when an alpha mask is set); the caller has checked the size first. */
export function readBmpPixels(bytes: Uint8Array, header: BmpHeader, field: string): RawPixels {
  const {width, height, bitsPerPixel, palette, masks} = header;
  const stride = Math.floor((bitsPerPixel * width + 31) / 32) * 4;
  const end = header.pixelOffset + stride * height;
  need(bytes, end, "the pixel rows", field);
  const channels = masks !== null && masks[3] !== 0 ? 4 : 3;
  const data = Buffer.alloc(width * height * channels);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [red, green, blue, alpha] = (masks ?? [0, 0, 0, 0]).map(channelReader) as [
    (p: number) => number, (p: number) => number, (p: number) => number, (p: number) => number,
  ];

  for (let y = 0; y < height; y++) {
    const row = header.pixelOffset + stride * (header.topDown ? y : height - 1 - y);
    let out = y * width * channels;
    for (let x = 0; x < width; x++, out += channels) {
      if (palette !== null) {
        const index = paletteIndex(bytes, row, x, bitsPerPixel);
        if (index * 3 >= palette.length) {
          throw corrupt(field, `pixel (${x}, ${y}) uses colour ${index} of a ${palette.length / 3}-colour palette`);
        }
        data[out] = palette[index * 3]!;
        data[out + 1] = palette[index * 3 + 1]!;
        data[out + 2] = palette[index * 3 + 2]!;
      } else if (bitsPerPixel === 24) {
        const at = row + x * 3;
        data[out] = bytes[at + 2]!;
        data[out + 1] = bytes[at + 1]!;
        data[out + 2] = bytes[at]!;
      } else {
        const pixel = bitsPerPixel === 16 ? view.getUint16(row + x * 2, true) : view.getUint32(row + x * 4, true);
        data[out] = red(pixel);
        data[out + 1] = green(pixel);
        data[out + 2] = blue(pixel);
        if (channels === 4) data[out + 3] = alpha(pixel);
      }
    }
  }
  return {data, width, height, channels};
}

function paletteIndex(bytes: Uint8Array, row: number, x: number, bitsPerPixel: number): number {
  if (bitsPerPixel === 8) return bytes[row + x]!;
  const perByte = 8 / bitsPerPixel;
  const byte = bytes[row + Math.floor(x / perByte)]!;
  // The leftmost pixel sits in the byte's high bits.
  const shift = 8 - bitsPerPixel * ((x % perByte) + 1);
  return (byte >> shift) & ((1 << bitsPerPixel) - 1);
}
