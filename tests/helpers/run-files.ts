import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ImageRecord, SectionResult } from '../../services/core/model/section.js';
import { IMAGES_CSV_HEADER, LATEST_LINK } from '../../services/core/report/run-files.js';
import type { SinkRecord } from './fixtures.js';

// A run's files as the receiver writes them: each section's per-image CSV beside results.json in
// the run's folder (OUTPUT_DIR/runs/<stamp>-<id>, OUTPUT_DIR/latest once the run has ended), and
// output.log with each section's per-image lines streamed as the images arrived.

const STATUSES: readonly ImageRecord['status'][] = ['ok', 'corrupt', 'superseded', 'lost'];

/**
 * The lines of `section`'s CSV in the order they were written (records as they completed, the lost
 * last), times in whole ns. `runFolder` is the run's folder relative to `outputDir` (a RunFinish's
 * or RunOutcome's runFolder), `latest` unless given. Throws on a header or line out of shape.
 */
export async function readImageCsv(
  outputDir: string,
  section: Pick<SectionResult, 'imagesFile'>,
  runFolder: string = LATEST_LINK,
): Promise<SinkRecord[]> {
  if (section.imagesFile === null) throw new Error('the section names no per-image file');
  const file = path.join(outputDir, runFolder, section.imagesFile);
  const [header, ...lines] = (await readFile(file, 'utf8')).split('\n');
  if (header !== IMAGES_CSV_HEADER)
    throw new Error(`${file}: header ${JSON.stringify(header)}, not ${IMAGES_CSV_HEADER}`);
  if (lines.pop() !== '') throw new Error(`${file}: the last line is not ended`);
  const figure = (text: string | undefined, line: string): number | null => {
    if (text === '') return null;
    if (text === undefined || !/^-?\d+$/.test(text))
      throw new Error(`${file}: ${JSON.stringify(line)} has a figure that is not whole ns`);
    return Number(text);
  };
  return lines.map((line) => {
    const fields = line.split(',');
    const [image, status, oneWayNs, rttNs, dueLagNs] = fields;
    if (fields.length !== 5 || !/^[1-9]\d*$/.test(image!) || !STATUSES.includes(status as ImageRecord['status']))
      throw new Error(`${file}: ${JSON.stringify(line)} is not a record`);
    return {
      image: Number(image),
      status: status as ImageRecord['status'],
      oneWayNs: figure(oneWayNs, line),
      rttNs: figure(rttNs, line),
      dueLagNs: figure(dueLagNs, line),
    };
  });
}

/**
 * `section`'s per-image records from its CSV (see {@link readImageCsv}), in ms and sorted by image; an image listed
 * twice throws.
 */
export async function readImageRecords(
  outputDir: string,
  section: Pick<SectionResult, 'imagesFile'>,
  runFolder?: string,
): Promise<ImageRecord[]> {
  const lines = await readImageCsv(outputDir, section, runFolder);
  const records = lines
    .map(
      (l): ImageRecord => ({
        image: l.image,
        timeMs: l.oneWayNs === null ? null : l.oneWayNs / 1e6,
        rttMs: l.rttNs === null ? null : l.rttNs / 1e6,
        status: l.status,
      }),
    )
    .sort((a, b) => a.image - b.image);
  const twice = records.find((r, i) => i > 0 && records[i - 1]!.image === r.image);
  if (twice !== undefined) throw new Error(`image ${twice.image} is in ${section.imagesFile} twice`);
  return records;
}

/** One section of output.log: its heading, its per-image lines in the order written, and the lines after them. */
export interface LogSection {
  heading: string;
  imageLines: string[];
  footer: string[];
}

/** output.log's sections, in order (the header and the summary left out). */
export function logSections(log: string): LogSection[] {
  return log
    .split(/\n\n(?==== )/)
    .filter((block) => block.startsWith('=== ') && !block.startsWith('=== Summary'))
    .map((block) => {
      const [heading, ...rest] = block.replace(/\n+$/, '').split('\n');
      const imageLines = rest.filter((line) => line.startsWith('Image '));
      return { heading: heading!, imageLines, footer: rest.filter((line) => !line.startsWith('Image ')) };
    });
}
