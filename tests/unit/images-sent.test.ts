import { describe, expect, it } from 'vitest';
import { resultsSchemaErrors } from '../../scripts/lib/results-schema.js';
import { MAX_IMAGE_COUNT } from '../../services/core/config/config.js';
import { renderHtmlReport } from '../../services/core/report/html-report.js';
import {
  durationImagesText,
  plannedImageCount,
  runImages,
  runImagesPhrase,
  runImagesSoFar,
  type SentFields,
} from '../../services/core/report/images-sent.js';
import { buildRunReport, renderResultsJson, type RunReport } from '../../services/core/report/report.js';
import { reportLibraries } from '../../services/shared/report-assets.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// A run's image count as every output states it: IMAGE_COUNT, or under DURATION what was sent.

const DURATION_20S = { durationMs: 20_000 };
const RUN = { imageCount: 10, transports: ['tcp', 'grpc'], repeat: 2 };
const LABELS: Record<string, string> = { tcp: 'TCP', grpc: 'gRPC', redis: 'Redis' };
const sent = (transport: string, imageCount: number): SentFields => ({
  transport,
  label: LABELS[transport]!,
  imageCount,
});

describe('plannedImageCount', () => {
  it.each([
    [10, undefined, 10],
    [10, null, 10],
    [10, 20_000, null],
  ])('IMAGE_COUNT %s with DURATION %s: %s', (imageCount, durationMs, expected) => {
    expect(plannedImageCount(imageCount, durationMs)).toBe(expected);
  });
});

describe('runImages and its words', () => {
  it('gives IMAGE_COUNT without DURATION, whatever the sections sent', () => {
    const images = runImages({ ...RUN, config: {} }, [sent('tcp', 3)]);
    expect(images).toEqual({ kind: 'count', imagesPerSection: 10 });
    expect(runImagesPhrase(images, '533.0 KiB')).toBe('10 images of 533.0 KiB');
  });

  it.each<[string, SentFields[], string]>([
    ['no section ended', [], 'for 20s'],
    [
      'every section sent as many',
      [sent('tcp', 600), sent('grpc', 600), sent('tcp', 600)],
      'for 20s (600 sent per transport)',
    ],
    [
      'the sections sent different counts',
      [sent('tcp', 5000), sent('grpc', 1198), sent('tcp', 5000), sent('grpc', 1200)],
      'for 20s (sent: TCP 5,000, gRPC 1,198–1,200)',
    ],
    // A refused section in a file written before it counted none held the plan's cap.
    ['a section was refused', [sent('tcp', 600), sent('grpc', MAX_IMAGE_COUNT)], 'for 20s (sent: TCP 600, gRPC 0)'],
  ])('under DURATION when %s', (_name, sections, expected) => {
    // IMAGE_COUNT's unused default in a file written before is ignored: DURATION is read first.
    for (const imageCount of [null, 10]) {
      const images = runImages({ ...RUN, imageCount, config: DURATION_20S }, sections);
      expect(images.kind).toBe('duration');
      if (images.kind !== 'duration') return;
      expect(durationImagesText(images)).toBe(expected);
      expect(runImagesPhrase(images, '533.0 KiB')).toBe(`533.0 KiB images ${expected}`);
    }
  });

  it('lists the transports in the run order, then any not in it', () => {
    const images = runImages({ ...RUN, config: DURATION_20S }, [sent('grpc', 1), sent('tcp', 2), sent('redis', 3)]);
    expect(images).toEqual({
      kind: 'duration',
      durationMs: 20_000,
      sent: [
        { transport: 'tcp', label: 'TCP', fewest: 2, most: 2 },
        { transport: 'grpc', label: 'gRPC', fewest: 1, most: 1 },
        { transport: 'redis', label: 'Redis', fewest: 3, most: 3 },
      ],
    });
  });
});

describe('runImagesSoFar (GET /progress)', () => {
  it('plans IMAGE_COUNT × REPEAT × transports, or under DURATION counts what was sent and recorded so far', () => {
    expect(runImagesSoFar({ ...RUN, config: {} }, [sent('tcp', 10)], 4)).toBe(40);
    expect(runImagesSoFar({ ...RUN, imageCount: null, config: DURATION_20S }, [sent('tcp', 600)], 0)).toBe(600);
    expect(
      runImagesSoFar(
        { ...RUN, imageCount: null, config: DURATION_20S },
        [sent('tcp', 600), sent('grpc', MAX_IMAGE_COUNT)],
        250,
      ),
    ).toBe(850);
  });
});

/** A report of TCP and gRPC whose sections sent `counts` (in that order) under DURATION=20s. */
function durationReport(counts: [number, number]): RunReport {
  const report = fixtureReport([
    fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP', baseline: true }), [1, 1]),
    fixtureSection(fixturePlan({ transport: 'grpc', label: 'gRPC', sectionId: 2 }), [1, 1]),
  ]);
  return {
    ...report,
    run: { ...report.run, imageCount: 10, config: { ...report.run.config, durationMs: 20_000 } },
    sections: report.sections.map((s, i) => ({ ...s, durationMs: 20_000, imageCount: counts[i]! })),
  };
}

describe('a DURATION run in results.json and report.html', () => {
  it('holds no run-level count in results.json, however the run info was given, and passes the schema', () => {
    const given = durationReport([600, 600]);
    const built = buildRunReport(given.run, given.sections, null);
    expect(built.run.imageCount).toBeNull();
    expect(resultsSchemaErrors(JSON.parse(renderResultsJson(built)))).toEqual([]);
    // Without DURATION the count stays.
    const counted = fixtureReport([fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1, 1, 1])]);
    expect(buildRunReport(counted.run, counted.sections, null).run.imageCount).toBe(3);
  });

  it('says in the header of report.html what each transport sent in the time, never IMAGE_COUNT', () => {
    const row = (report: RunReport): string | undefined =>
      renderHtmlReport([report], reportLibraries()).match(
        /<th scope="row">Images per transport<\/th><td>([^<]*)<\/td>/,
      )?.[1];
    expect(row(durationReport([600, 600]))).toBe('for 20s (600 sent per transport)');
    expect(row(durationReport([5000, 1200]))).toBe('for 20s (sent: TCP 5,000, gRPC 1,200)');
    expect(row(fixtureReport([fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1, 1, 1])]))).toBe('3');
  });
});
