import { readFile } from 'node:fs/promises';
import { ErrorCode, ItbError, errorMessage } from '../core/errors.js';
import { describePng, generatePng, SAMPLE_ASSET_BYTES, SAMPLE_ASSET_PATH } from '../core/model/png.js';
import { projectPath } from './paths.js';

/** Where the bundled sample picture lives (made by `npm run make-asset`). */
export const ASSET_PATH: string = projectPath(SAMPLE_ASSET_PATH);
/** Exact size of assets/sample.png: 533.0 KiB. */
export const ASSET_SIZE_BYTES = SAMPLE_ASSET_BYTES;
/** Seed of generated images, fixed so every run and every transport sends the same bytes. */
export const GENERATED_IMAGE_SEED = 1;

const ASSET_DISPLAY_PATH = SAMPLE_ASSET_PATH;

/** Where the image comes from: IMAGE_PATH wins, else a size (undefined means the sample's). */
export interface ImageSource {
  imageSizeBytes: number | undefined;
  imagePath: string | undefined;
}

/** The image every transport sends, and a line saying what it is, for logs and reports. */
export interface LoadedImage {
  bytes: Buffer;
  description: string;
}

/**
 * Loads the image to send: the file at `imagePath` as it is; else the sample asset when no size is
 * asked or the asked size is the asset's; else a generated PNG of exactly `imageSizeBytes`.
 * Throws ITB_ERR_IMAGE when a file cannot be read or a size cannot be generated.
 */
export async function loadImage(source: ImageSource): Promise<LoadedImage> {
  if (source.imagePath !== undefined) {
    const bytes = await readImageFile(source.imagePath, 'IMAGE_PATH');
    return { bytes, description: describe(source.imagePath, bytes) };
  }
  if (source.imageSizeBytes === undefined || source.imageSizeBytes === ASSET_SIZE_BYTES) {
    const bytes = await readImageFile(ASSET_PATH, 'the sample image');
    if (bytes.length !== ASSET_SIZE_BYTES) {
      throw new ItbError(
        ErrorCode.image,
        `${ASSET_PATH} is ${formatBytes(bytes.length)} bytes, expected ${formatBytes(ASSET_SIZE_BYTES)}; run ` +
          `npm run make-asset to rebuild it`,
      );
    }
    return { bytes, description: describe(ASSET_DISPLAY_PATH, bytes) };
  }
  const bytes = generatePng(source.imageSizeBytes, GENERATED_IMAGE_SEED);
  const { width, height } = describePng(bytes);
  return {
    bytes,
    description: `generated PNG, seed ${GENERATED_IMAGE_SEED} (${formatBytes(bytes.length)} bytes, ${width}x${height})`,
  };
}

async function readImageFile(filePath: string, what: string): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await readFile(filePath);
  } catch (err) {
    throw new ItbError(ErrorCode.image, `cannot read ${what} ${filePath}: ${errorMessage(err)}`, { cause: err });
  }
  // Any bytes will do, but not none: an empty image times nothing.
  if (bytes.length === 0) throw new ItbError(ErrorCode.image, `${what} ${filePath} is empty`);
  return bytes;
}

/** "path (N bytes, WxH PNG)", or "path (N bytes, not a PNG)" for a file of other bytes. */
function describe(displayPath: string, bytes: Buffer): string {
  let kind: string;
  try {
    const { width, height } = describePng(bytes);
    kind = `${width}x${height} PNG`;
  } catch {
    kind = 'not a PNG';
  }
  return `${displayPath} (${formatBytes(bytes.length)} bytes, ${kind})`;
}

function formatBytes(sizeBytes: number): string {
  return sizeBytes.toLocaleString('en-US');
}
