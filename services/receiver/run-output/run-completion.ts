import { createReadStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { decodeFrameHeader, encodeFrameHeader } from '../../core/wire/frame.js';
import { renderHtmlReport, type HtmlReportLibraries } from '../../core/report/html-report.js';
import { buildRunReport, renderResultsJson, type RunReport } from '../../core/report/report.js';
import { CLAIM_FILE, OUTPUT_FILES, RUN_IN_PROGRESS, WRITER_FILE } from '../../core/report/run-files.js';
import { renderImageLine, renderOutputLogEnd, renderSectionFooter } from '../../core/report/text/output-log.js';
import type { SectionPlan, SectionResult } from '../../core/model/section.js';
import { SectionRecorder } from '../../core/model/recorder.js';
import type { WarmupOutcome } from '../../core/model/warmup.js';
import { writeFileAtomic } from '../../shared/files.js';
import { AppendFile } from './append-file.js';
import { type OpenSnapshot, pointLatestAt } from './run-folder.js';

// A run whose receiver died mid-section, completed from what its folder holds: the sections that ended as they are,
// the open one rebuilt from its per-image CSV and failed with the reason given, then the summary, results.json and
// report.html, as the receiver would have written them at the end. The next receiver on the OUTPUT_DIR does it for
// every abandoned run (./abandoned-runs.ts); npm start does it, through ../complete-run.ts, for a receiver it saw die.

/** True when `dir` holds a run whose results.json says it never ended (its receiver died). */
export async function unfinishedRun(dir: string): Promise<boolean> {
  const text = await readFile(path.join(dir, OUTPUT_FILES.results), 'utf8').catch(() => undefined);
  if (text === undefined) return false;
  try {
    return (JSON.parse(text) as RunReport).stopReason === RUN_IN_PROGRESS;
  } catch {
    return false;
  }
}

/**
 * Completes a run whose receiver died (`reason` says how): the sections that ended stay as they
 * are; the one open is rebuilt from its per-image CSV (each image that arrived, its verdict, its
 * one-way time and round trip) and fails with `reason`, the images not in it counted lost; then
 * the summary, results.json and report.html are written and `latest` points at the run. Returns
 * the report, or undefined when `dir` holds no unfinished run.
 */
export async function completeRun(
  baseDir: string,
  dir: string,
  reason: string,
  libraries: HtmlReportLibraries,
): Promise<RunReport | undefined> {
  if (!(await unfinishedRun(dir))) return undefined;
  const snapshot = JSON.parse(await readFile(path.join(dir, OUTPUT_FILES.results), 'utf8')) as RunReport & OpenSnapshot;
  const sections = [...snapshot.sections];
  const log = await AppendFile.reopen(path.join(dir, OUTPUT_FILES.log));
  const open = snapshot.openSection;
  if (open !== undefined) {
    const result = await rebuildSection(path.join(dir, open.imagesFile), open.plan, open.warmedUp, reason, log);
    const recorded = { ...result, imagesFile: open.imagesFile };
    log.write(`\n${renderSectionFooter(recorded)}\n\n`);
    sections.push(recorded);
  }
  const report = buildRunReport(snapshot.run, sections, reason);
  log.write(renderOutputLogEnd(report));
  await log.close();
  await writeFileAtomic(path.join(dir, OUTPUT_FILES.results), renderResultsJson(report));
  await writeFileAtomic(path.join(dir, OUTPUT_FILES.report), renderHtmlReport([report], libraries));
  await pointLatestAt(baseDir, dir);
  // Ended now: it names no writer, and no sweep looks at it again.
  await rm(path.join(dir, WRITER_FILE), { force: true });
  await rm(path.join(dir, CLAIM_FILE), { force: true });
  return report;
}

// The open section's record from its CSV: each line replayed through a recorder (so the figures
// are computed as for any section), the lost ones appended to the CSV and output.log. The span
// (first stamp to last arrival) is not in the CSV: the section's MB/s and total are unknown.
async function rebuildSection(
  csvPath: string,
  plan: SectionPlan,
  warmedUp: WarmupOutcome | null,
  reason: string,
  log: AppendFile,
): Promise<SectionResult> {
  const csv = await AppendFile.reopen(csvPath);
  const twoClocks = plan.clock?.applied === true;
  // The images in the CSV are replayed for the figures only; what the recorder adds is the lost.
  const recorder = new SectionRecorder(
    { ...plan, clock: null },
    {
      arrived() {},
      recorded(image, status) {
        if (status !== 'lost') return;
        csv.write(`${image},lost,,,\n`);
        log.write(`${renderImageLine(image, null, status, twoClocks)}\n`);
      },
    },
  );
  const first = warmedUp?.images;
  let arrived = 0;
  if (warmedUp !== null && first !== undefined) {
    recorder.beginRecording(warmedUp, 0n);
    const lines = createInterface({ input: createReadStream(csvPath), crlfDelay: Infinity });
    for await (const line of lines) {
      const [imageText, status, oneWay, rtt, lag] = line.split(',');
      const image = Number(imageText);
      if (
        !Number.isInteger(image) ||
        image < 1 ||
        (status !== 'ok' && status !== 'corrupt') ||
        oneWay === undefined ||
        oneWay === ''
      )
        continue;
      const seq = first + image - 1;
      const header = decodeFrameHeader(
        encodeFrameHeader({
          sectionId: plan.sectionId,
          seq,
          sizeBytes: plan.imageSizeBytes,
          checksum: 0n,
          sentAtNs: 0n,
        }),
        plan.imageSizeBytes,
      );
      recorder.record(header, BigInt(Math.round(Number(oneWay))));
      recorder.verified(seq, status === 'ok');
      arrived++;
      if (rtt !== undefined && rtt !== '')
        recorder.roundTrips(
          Float64Array.of(image, Number(rtt), lag === undefined || lag === '' ? Number.NaN : Number(lag)),
        );
    }
  }
  // Under DURATION what was sent is known only to the transmitter: at least every image its file names.
  const result = recorder.result(`${reason}; got ${arrived} images (those in its per-image file)`, {
    imagesSent: recorder.highestRecordedImage,
  });
  await csv.close();
  return {
    ...result,
    clock: plan.clock,
    totalMs: null,
    throughputMBps: null,
    imagesPerSecond: null,
    throughputIndicative: true,
  };
}
