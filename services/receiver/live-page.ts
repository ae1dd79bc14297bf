import { sectionTitle } from '../core/report/wording.js';
import { formatSize } from '../core/config/size.js';
import type { RunProgress } from './session.js';

// The page GET / shows while a run is in progress (and before any run): plain HTML that reloads
// itself every 2 s, one row per section of the run, done or not. No script, nothing fetched.

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The live page for a run in progress, or the "no run yet" page when `progress` is undefined. */
export function renderLivePage(progress: RunProgress | undefined): string {
  const head = (title: string, refresh: boolean): string =>
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    (refresh ? '<meta http-equiv="refresh" content="2">' : '') +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">` +
    `<title>${escapeHtml(title)}</title><style>body{font:15px system-ui,sans-serif;margin:2rem;color:#222}` +
    `table{border-collapse:collapse}td,th{padding:.3rem .8rem;border-bottom:1px solid #ddd;text-align:left}` +
    `.ok{color:#176b2c}.failed{color:#b00020;font-weight:600}.running{color:#1a56a0}</style></head><body>`;
  if (progress === undefined) {
    return (
      `${head('image-transfer-bench', false)}<h1>image-transfer-bench</h1><p>No run has finished yet. Start the ` +
      `transmitter; this page shows its progress and then the report.</p></body></html>`
    );
  }
  const { info } = progress;
  const rows: string[] = [];
  for (let repeat = 1; repeat <= info.repeat; repeat++) {
    for (const transport of info.transports) {
      const done = progress.sections.find((s) => s.transport === transport && s.repeat === repeat);
      const open =
        progress.open?.transport === transport && progress.open.repeat === repeat ? progress.open : undefined;
      const name = escapeHtml(done ? sectionTitle(done) : (open?.label ?? transport));
      let state: string;
      if (done) {
        state = done.ok
          ? `<span class="ok">done: ${done.okCount}/${done.imageCount} intact</span>`
          : `<span class="failed">FAILED: ` +
            escapeHtml(done.failure ?? `${done.okCount}/${done.imageCount} intact`) +
            `</span>`;
      } else if (open) {
        state =
          `<span class="running">` +
          (open.warmingUp
            ? `warming up: ${open.warmupImages} images`
            : `${open.recorded}/${open.imageCount} images received`) +
          `</span>`;
      } else {
        state = 'waiting';
      }
      rows.push(
        `<tr><td>${name}</td><td>${info.repeat > 1 ? `${repeat}/${info.repeat}` : ''}</td><td>${state}</td></tr>`,
      );
    }
  }
  return (
    `${head('image-transfer-bench: run in progress', true)}<h1>Run in progress</h1>` +
    (`<p>Started ${escapeHtml(info.startedAt)}: ${info.imageCount} images of ` +
      escapeHtml(formatSize(info.imageSizeBytes)) +
      ` per transport, window ${info.window}. The report appears here when the run ends.</p>`) +
    `<table><thead><tr><th>Transport</th><th>Repeat</th><th>State</th></tr></thead><tbody>${rows.join('')}` +
    `</tbody></table></body></html>`
  );
}
