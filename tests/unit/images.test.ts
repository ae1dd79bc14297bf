import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode, ItbError } from '../../services/core/errors.js';
import { generatePng } from '../../services/core/model/png.js';
import { ASSET_PATH, ASSET_SIZE_BYTES, loadImage } from '../../services/shared/images.js';
import { projectPath } from '../../services/shared/paths.js';

const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'itb-images-'));
afterAll(() => rmSync(tmpDir, { recursive: true, force: true }));

async function imageError(promise: Promise<unknown>): Promise<ItbError> {
  const err: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ItbError);
  expect((err as ItbError).code).toBe(ErrorCode.image);
  return err as ItbError;
}

describe('loadImage', () => {
  it('reads IMAGE_PATH as it is, whatever the bytes, and ignores the size', async () => {
    const filePath = path.join(tmpDir, 'notes.bin');
    const bytes = Buffer.from([0, 1, 2, 3, 255, 254, 10, 13]);
    writeFileSync(filePath, bytes);
    const image = await loadImage({ imagePath: filePath, imageSizeBytes: 4_000_000 });
    expect(image.bytes.equals(bytes)).toBe(true);
    expect(image.description).toBe(`${filePath} (8 bytes, not a PNG)`);
  });

  it('describes a PNG at IMAGE_PATH by its dimensions', async () => {
    const filePath = path.join(tmpDir, 'picture.png');
    writeFileSync(filePath, generatePng(12_345, 9));
    const image = await loadImage({ imagePath: filePath, imageSizeBytes: undefined });
    expect(image.bytes.equals(generatePng(12_345, 9))).toBe(true);
    expect(image.description).toBe(`${filePath} (12,345 bytes, 63x64 PNG)`);
  });

  it.each([{ imageSizeBytes: undefined }, { imageSizeBytes: ASSET_SIZE_BYTES }])(
    'sends the sample asset when the size is $imageSizeBytes',
    async ({ imageSizeBytes }) => {
      expect(ASSET_PATH).toBe(projectPath('assets', 'sample.png'));
      const image = await loadImage({ imagePath: undefined, imageSizeBytes });
      expect(image.bytes.length).toBe(545_792);
      expect(image.bytes.equals(readFileSync(ASSET_PATH))).toBe(true);
      expect(image.description).toBe('assets/sample.png (545,792 bytes, 640x480 PNG)');
    },
  );

  it('generates a PNG of any other size, seed 1', async () => {
    const image = await loadImage({ imagePath: undefined, imageSizeBytes: 4_000_000 });
    expect(image.bytes.equals(generatePng(4_000_000, 1))).toBe(true);
    expect(image.description).toBe('generated PNG, seed 1 (4,000,000 bytes, 1154x1154)');
  });

  it('refuses a size too small to generate', async () => {
    await imageError(loadImage({ imagePath: undefined, imageSizeBytes: 10 }));
  });

  it('names the path and the OS reason when IMAGE_PATH is missing', async () => {
    const missing = path.join(tmpDir, 'no-such-picture.png');
    const err = await imageError(loadImage({ imagePath: missing, imageSizeBytes: undefined }));
    expect(err.message).toContain(missing);
    expect(err.message).toContain('ENOENT');
  });

  it('names the path and the OS reason when IMAGE_PATH is a folder', async () => {
    const err = await imageError(loadImage({ imagePath: tmpDir, imageSizeBytes: undefined }));
    expect(err.message).toContain(tmpDir);
    expect(err.message).toContain('EISDIR');
  });

  it('refuses an empty file', async () => {
    const empty = path.join(tmpDir, 'empty.png');
    writeFileSync(empty, Buffer.alloc(0));
    const err = await imageError(loadImage({ imagePath: empty, imageSizeBytes: undefined }));
    expect(err.message).toContain(empty);
  });
});
