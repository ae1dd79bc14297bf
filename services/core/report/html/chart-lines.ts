import type { SectionResult } from '../../model/section.js';
import type { BeforeStyle, LineDataset, SectionDrawing, SectionLine } from './chart-types.js';
import { withAlpha, type RunView, type TransportView } from './views.js';

// Line charts' datasets: one per figure of a transport in a run, styled by run, with the legend
// saying what a transport lacks or draws from a failed repeat.

/** The tag on a line chart for a transport drawn from a failed repeat. */
export const FAILED_SHOWN = 'FAILED repeat shown';

/**
 * What a chart lacks of a transport: per run, why it draws nothing (null where it draws); the
 * run is named when only some runs lack it.
 */
export function noDataSuffix(views: readonly RunView[], missing: readonly (string | null)[]): string {
  const reasons = [...new Set(missing.filter((m): m is string => m !== null))];
  return reasons
    .map((reason) => {
      const runs = views.filter((_, i) => missing[i] === reason);
      return views.length === 1 || runs.length === views.length
        ? reason
        : `${reason} ${runs.map((v) => v.role).join(', ')}`;
    })
    .join('; ');
}

/** "FAILED repeat shown" (with the run, when only one of two is) for the runs drawn from a failed repeat. */
export function failedShownSuffix(views: readonly RunView[], failed: readonly boolean[]): string {
  if (!failed.some(Boolean)) return '';
  if (views.length === 1 || failed.every(Boolean)) return FAILED_SHOWN;
  return `${FAILED_SHOWN} ${views[failed.indexOf(true)]!.role}`;
}

/** A line chart's datasets: each transport's lines (`drawingOf` its drawn section) in each run, latest on top. */
export function lineDatasets(
  views: readonly RunView[],
  transports: readonly TransportView[],
  drawingOf: (section: SectionResult) => SectionDrawing,
  beforeStyle: BeforeStyle,
): LineDataset[] {
  const datasets: LineDataset[] = [];
  for (const t of transports) {
    const drawings = t.perRun.map((r) => (r?.drawn === undefined ? undefined : drawingOf(r.drawn)));
    const has = drawings.map((d) => d?.lines.some((line) => line.points.some((p) => p.y !== null)) ?? false);
    const missing = drawings.map((d, i) => (has[i] ? null : (d?.missing ?? 'no data')));
    // Only a failed repeat that draws something needs the tag; one with no points is plain "no data".
    const failed = t.perRun.map((r, i) => has[i]! && r !== undefined && r.median === undefined);
    const suffix = [noDataSuffix(views, missing), failedShownSuffix(views, failed)].filter(Boolean).join('; ');
    const legendLabel = suffix === '' ? t.title : `${t.title} (${suffix})`;
    // The latest run first: Chart.js draws the first dataset on top.
    for (let i = views.length - 1; i >= 0; i--) {
      const view = views[i]!;
      if (t.perRun[i] === undefined) continue;
      const drawing = drawings[i];
      // A section with nothing to draw still gets a line: its legend entry says why.
      const lines: readonly SectionLine[] =
        drawing === undefined || drawing.lines.length === 0 ? [{ figure: '', points: [] }] : drawing.lines;
      const before = view.role === 'before';
      const faint = before && beforeStyle === 'faint';
      const drawn = t.perRun[i]!.drawn;
      // The tooltip names the failed repeat, so a reader hovering a point cannot take it for a result.
      const failedNote =
        failed[i] && drawn !== undefined
          ? view.report.run.repeat > 1
            ? ` (FAILED repeat ${drawn.repeat})`
            : ' (FAILED)'
          : '';
      const name = before ? `${t.title} · before` : view.role === 'after' ? `${t.title} · after` : t.title;
      const lineColor = before ? withAlpha(t.color, faint ? 0.45 : 0.6) : t.color;
      const bandColor = withAlpha(t.color, before ? 0.07 : 0.14);
      for (const line of lines) {
        const points = line.points;
        const radius =
          line.band !== undefined ? 0 : points.length <= 60 ? (before ? 2 : 2.5) : points.length <= 300 ? 1.2 : 0;
        datasets.push({
          label: `${name}${line.figure === '' ? '' : ` ${line.figure}`}${failedNote}`,
          legendLabel,
          transport: t.key,
          run: view.role,
          color: t.color,
          figure: line.figure,
          hasData: has[i]!,
          anyData: has.some(Boolean),
          missing: missing[i] ?? null,
          failedRepeat: failed[i]!,
          data: points,
          ...(drawing?.bucketSeconds === undefined
            ? {}
            : { bucketSeconds: line.windows?.seconds ?? drawing.bucketSeconds, spanSeconds: drawing.spanSeconds ?? 0 }),
          ...(line.windows === undefined
            ? {}
            : { windowSeconds: line.windows.seconds, windowUpperBound: line.windows.upperBound }),
          borderColor: line.band !== undefined ? bandColor : lineColor,
          backgroundColor: line.band !== undefined ? bandColor : lineColor,
          pointBackgroundColor: before && !faint ? '#ffffff' : lineColor,
          borderWidth: line.band !== undefined ? 0 : before ? (faint ? 1.25 : 1.5) : line.dash !== undefined ? 1.5 : 2,
          borderDash: line.dash ?? (before && !faint ? [6, 4] : []),
          fill: line.band === 'max' ? '-1' : false,
          pointRadius: radius,
          pointStyle: 'circle',
          pointHoverRadius: line.band !== undefined ? 0 : 4,
          spanGaps: false,
          tension: 0,
        });
      }
    }
  }
  return datasets;
}
