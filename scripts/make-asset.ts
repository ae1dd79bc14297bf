import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import {
  PADDING_CHUNK_TYPE,
  PNG_SIGNATURE,
  describePng,
  pngChunk,
  SAMPLE_ASSET_BYTES as ASSET_SIZE_BYTES,
  SAMPLE_ASSET_PATH,
} from '../services/core/model/png.js';
import { projectPath } from '../services/shared/paths.js';

const ASSET_PATH = projectPath(SAMPLE_ASSET_PATH);

// Draws assets/sample.png: a Mandelbrot view (Seahorse Valley) with smooth colour gradients, plus
// fine per-pixel noise so it compresses like a photograph rather than a diagram, then pads it to
// exactly ASSET_SIZE_BYTES. Deterministic: same bytes on every run with the same zlib.

const WIDTH = 640;
const HEIGHT = 480;
const CENTRE_RE = -0.7453;
const CENTRE_IM = 0.1127;
const VIEW_WIDTH = 0.0125; // in the complex plane
const MAX_ITERATIONS = 600;
/** Noise amplitude per channel, in levels either side: tuned so the picture weighs ~527 KiB, just under the budget. */
const NOISE_LEVELS = 1;
const NOISE_SEED = 0x1b5_5eed;

function main(): void {
  const rgb = drawMandelbrot();
  addNoise(rgb, NOISE_LEVELS, NOISE_SEED);
  const picture = encodePng(rgb, WIDTH, HEIGHT);

  const paddingBytes = ASSET_SIZE_BYTES - picture.length - 12; // 12: the padding chunk's own frame
  if (paddingBytes < 0) {
    throw new Error(
      `the picture encodes to ${picture.length} bytes, over the ${ASSET_SIZE_BYTES} byte budget: lower NOISE_LEVELS`,
    );
  }
  // The padding chunk goes before IEND, which must stay last.
  const iendBytes = 12;
  const asset = Buffer.concat([
    picture.subarray(0, picture.length - iendBytes),
    pngChunk(PADDING_CHUNK_TYPE, Buffer.alloc(paddingBytes)),
    picture.subarray(picture.length - iendBytes),
  ]);
  if (asset.length !== ASSET_SIZE_BYTES) throw new Error(`built ${asset.length} bytes, expected ${ASSET_SIZE_BYTES}`);

  mkdirSync(path.dirname(ASSET_PATH), { recursive: true });
  writeFileSync(ASSET_PATH, asset);
  const { width, height } = describePng(asset);
  console.log(
    `wrote ${ASSET_PATH}: ${asset.length} bytes, ${width}x${height} PNG (${picture.length} bytes of ` +
      `picture, ${paddingBytes} bytes of padding)`,
  );
}

/** RGB samples of the Mandelbrot view, coloured by smoothed escape time; the set itself is near-black navy. */
function drawMandelbrot(): Uint8Array {
  const rgb = new Uint8Array(WIDTH * HEIGHT * 3);
  const step = VIEW_WIDTH / WIDTH;
  for (let y = 0; y < HEIGHT; y++) {
    const ci = CENTRE_IM + (HEIGHT / 2 - y) * step;
    for (let x = 0; x < WIDTH; x++) {
      const cr = CENTRE_RE + (x - WIDTH / 2) * step;
      let zr = 0;
      let zi = 0;
      let n = 0;
      while (n < MAX_ITERATIONS && zr * zr + zi * zi < 256) {
        const t = zr * zr - zi * zi + cr;
        zi = 2 * zr * zi + ci;
        zr = t;
        n++;
      }
      const at = (y * WIDTH + x) * 3;
      if (n === MAX_ITERATIONS) {
        rgb[at] = 8;
        rgb[at + 1] = 6;
        rgb[at + 2] = 20;
        continue;
      }
      // Continuous escape count, so colour bands blend instead of stepping.
      const smooth = n + 1 - Math.log2(Math.log2(zr * zr + zi * zi) / 2);
      const t = Math.sqrt(smooth / MAX_ITERATIONS);
      // Cosine palette, four cycles over the escape range, each channel a little out of phase:
      // pale cream and cyan far out, copper and blues along the filaments.
      const phase = 4 * t;
      rgb[at] = channel(0.5 + 0.5 * Math.cos(2 * Math.PI * phase));
      rgb[at + 1] = channel(0.5 + 0.5 * Math.cos(2 * Math.PI * (phase + 0.1)));
      rgb[at + 2] = channel(0.5 + 0.5 * Math.cos(2 * Math.PI * (phase + 0.2)));
    }
  }
  return rgb;
}

function channel(level: number): number {
  return Math.max(0, Math.min(255, Math.round(level * 255)));
}

/** Adds uniform noise of ±levels to every sample, from a seeded mulberry32. */
function addNoise(rgb: Uint8Array, levels: number, seed: number): void {
  let state = seed >>> 0;
  for (let i = 0; i < rgb.length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let r = Math.imul(state ^ (state >>> 15), state | 1);
    r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
    const unit = ((r ^ (r >>> 14)) >>> 0) / 2 ** 32;
    const noise = Math.floor(unit * (2 * levels + 1)) - levels;
    rgb[i] = Math.max(0, Math.min(255, rgb[i]! + noise));
  }
}

/** A plain 8-bit RGB PNG: Paeth filter on every row, zlib at its default level. */
function encodePng(rgb: Uint8Array, width: number, height: number): Buffer {
  const stride = width * 3;
  const filtered = Buffer.alloc(height * (stride + 1));
  for (let y = 0; y < height; y++) {
    const out = y * (stride + 1);
    filtered[out] = 4; // Paeth
    for (let i = 0; i < stride; i++) {
      const here = y * stride + i;
      const left = i >= 3 ? rgb[here - 3]! : 0;
      const up = y > 0 ? rgb[here - stride]! : 0;
      const upLeft = i >= 3 && y > 0 ? rgb[here - stride - 3]! : 0;
      filtered[out + 1 + i] = (rgb[here]! - paeth(left, up, upLeft)) & 0xff;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', zlib.deflateSync(filtered)),
    pngChunk('IEND', new Uint8Array(0)),
  ]);
}

/** The PNG spec's Paeth predictor: whichever neighbour is closest to left + up - upLeft. */
function paeth(left: number, up: number, upLeft: number): number {
  const estimate = left + up - upLeft;
  const toLeft = Math.abs(estimate - left);
  const toUp = Math.abs(estimate - up);
  const toUpLeft = Math.abs(estimate - upLeft);
  if (toLeft <= toUp && toLeft <= toUpLeft) return left;
  return toUp <= toUpLeft ? up : upLeft;
}

main();
