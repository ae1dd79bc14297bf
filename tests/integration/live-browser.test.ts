import { mkdtemp, readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followingReport } from '../../services/core/report/live-page.js';
import { livePageLibraries } from '../../services/shared/report-assets.js';
import { launchChromium } from '../helpers/browser.js';
import { openEventStream, type EventStream } from '../helpers/event-stream.js';
import { runTransmitter, startReceiver } from '../helpers/in-process.js';

// The receiver's live page (GET / during a run) in a real Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core) against a real run over loopback (both apps in this process): its
// charts grow between two looks (the round trips' and the transmitter's CPU among them), an open-loop
// run (RATE) shows its frame age and deadline columns, a section's last second is drawn as partial and
// its command lane (COMMAND_RATE) comes in at its end, a screenshot
// is drawn, and when the run ends it becomes the run's report without the test reloading it, and
// that report becomes the next run's live page when one starts, with no console error (a CSP
// violation is one). The screenshot stays in the test's temporary folder, whose path is printed.
// Nothing keeps it from the run: not 32 idle streams held by other clients, not a refused or
// dropped stream (it tries again, from the last event it has).

/** Slow enough to watch: two sections of 10 s each. */
const WATCHED_RUN = {
  TRANSPORTS: 'tcp,websocket',
  RATE: '20',
  IMAGE_COUNT: '200',
  IMAGE_SIZE: '10KB',
  WARMUP: '0',
};

let dir: string;
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium('the live page test');
  dir = await mkdtemp(path.join(os.tmpdir(), 'itb-live-'));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  console.log(`live page test files (screenshot live-mid-run.png) kept in ${dir}`);
});

/** A page that records its console errors and uncaught exceptions (CSP violations are console errors). */
async function watchedPage(colorScheme: 'light' | 'dark' = 'light'): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 }, colorScheme });
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, errors };
}

/** Points drawn so far on each line of each live chart, by chart and line. */
function pointsDrawn(page: Page): Promise<Record<string, number>> {
  return page.evaluate(() => {
    const charts = (
      window as unknown as { __charts: Record<string, { data: { datasets: { id: string; data: unknown[] }[] } }> }
    ).__charts;
    const points: Record<string, number> = {};
    for (const [name, chart] of Object.entries(charts))
      for (const ds of chart.data.datasets) points[`${name} ${ds.id}`] = ds.data.length;
    return points;
  });
}

/** The lines of `before` that have more points in `after`: a line that grew, not merely a new line. */
function linesGrown(before: Record<string, number>, after: Record<string, number>): string[] {
  return Object.keys(before).filter((line) => (after[line] ?? 0) > before[line]!);
}

/**
 * Waits until the line `id` of chart `chart` has a point (the round trips and the transmitter's load come with the
 * transmitter's batches, a second or so behind the first `second`).
 */
async function waitForLine(page: Page, chart: string, id: string): Promise<void> {
  await page.waitForFunction(
    ([chartName, lineId]) => {
      const charts = (
        window as unknown as { __charts: Record<string, { data: { datasets: { id: string; data: unknown[] }[] } }> }
      ).__charts;
      return (charts[chartName!]?.data.datasets.find((ds) => ds.id === lineId)?.data.length ?? 0) > 0;
    },
    [chart, id],
    { timeout: 10_000 },
  );
}

/** The relative luminance (0 black to 1 white) of the page's background. */
function backgroundLuminance(page: Page): Promise<number> {
  return page.evaluate(() => {
    const [r, g, b] = (getComputedStyle(document.documentElement).backgroundColor.match(/\d+/g) ?? []).map(Number);
    return (0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0)) / 255;
  });
}

describe('the live page in Chromium', () => {
  it("grows its charts mid-run, is drawn, becomes the report when the run ends, and the next run's live page when " +
    'that starts', async () => {
    const outputDir = path.join(dir, 'run');
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { ...WATCHED_RUN, COMMAND_RATE: '50' });
    const base = `http://127.0.0.1:${transmitterConfig.controlPort}`;
    const { page, errors } = await watchedPage();
    let events: EventStream | undefined;
    let run: ReturnType<typeof runTransmitter> | undefined;
    try {
      events = await openEventStream(transmitterConfig.controlPort);
      run = runTransmitter(transmitterConfig);
      // Mid-run: the first section has a second on the clock.
      await events.waitFor((all) => all.some((e) => e.event === 'second'));
      await page.goto(`${base}/`);
      await page.waitForFunction(
        () => {
          const charts = (window as unknown as { __charts?: Record<string, { data: { datasets: unknown[] } }> })
            .__charts;
          return charts !== undefined && (charts['live-mbps']?.data.datasets.length ?? 0) > 0;
        },
        undefined,
        { timeout: 10_000 },
      );
      const firstLook = await pointsDrawn(page);
      const firstState = await page.locator('#live-sections tbody tr').first().locator('td').nth(2).textContent();
      // At least one `second` a second: lines of the running section have grown 1.6 s later (looked at again
      // for up to 5 s more on a loaded machine; the section runs 10 s).
      await page.waitForTimeout(1600);
      let secondLook = await pointsDrawn(page);
      for (let tries = 0; tries < 10 && linesGrown(firstLook, secondLook).length === 0; tries++) {
        await page.waitForTimeout(500);
        secondLook = await pointsDrawn(page);
      }
      expect(Object.keys(firstLook).length).toBeGreaterThan(0);
      expect(linesGrown(firstLook, secondLook)).toContain('live-mbps tcp#1');
      expect(firstState).toMatch(/^(running|done)$/);
      expect(await page.locator('#live-status').textContent()).toMatch(/^Run in progress, started /);
      // The round trips have a line, and the CPU chart the transmitter's beside the receiver's.
      await waitForLine(page, 'live-round-trip', 'tcp#1:p50');
      await waitForLine(page, 'live-cpu', 'tcp#1:transmitter');
      expect(Object.keys(await pointsDrawn(page))).toContain('live-cpu tcp#1:receiver');
      // Under RATE: the frame age has its chart, its columns show and the one-way ones are named the time on the link;
      // the command lane's table waits for a section's end.
      await waitForLine(page, 'live-frame-age', 'tcp#1:p50');
      const shownHeads = await page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('#live-sections thead th')]
          .filter((th) => th.offsetParent !== null)
          .map((th) => th.textContent),
      );
      expect(shownHeads).toEqual(expect.arrayContaining(['Frame age p50', 'On the link p99', 'Late', 'Jitter p99']));
      expect(shownHeads).not.toContain('One-way p50');
      expect(await page.locator('figure:has(canvas[data-chart="live-frame-age"])').isVisible()).toBe(true);
      expect(await page.locator('#live-commands-card').isVisible()).toBe(false);

      const screenshot = path.join(dir, 'live-mid-run.png');
      const png = await page.screenshot({ path: screenshot, fullPage: true });
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      // Drawn: the throughput chart's canvas has line pixels on it (its background is transparent).
      const inked = await page.evaluate(() => {
        const canvas = document.querySelector('canvas[data-chart="live-mbps"]') as HTMLCanvasElement;
        const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        const colours = new Set<number>();
        let count = 0;
        for (let i = 3; i < pixels.length; i += 4)
          if (pixels[i]! > 0) {
            count++;
            colours.add((pixels[i - 3]! << 16) | (pixels[i - 2]! << 8) | pixels[i - 1]!);
          }
        return { count, colours: colours.size };
      });
      expect(inked.count).toBeGreaterThan(500);
      expect(inked.colours).toBeGreaterThan(3);

      // TCP's section ends (WebSocket's runs 10 s after it): its last second is a partial point, its lane a row.
      await page.waitForFunction(
        () => {
          const charts = (
            window as unknown as {
              __charts: Record<string, { data: { datasets: { id: string; data: { partial?: boolean }[] }[] } }>;
            }
          ).__charts;
          const points = charts['live-mbps']?.data.datasets.find((ds) => ds.id === 'tcp#1')?.data ?? [];
          return points.at(-1)?.partial === true;
        },
        undefined,
        { timeout: 30_000 },
      );
      const partial = await page.evaluate(() => {
        const charts = (
          window as unknown as {
            __charts: Record<string, { data: { datasets: { id: string; data: { partial?: boolean }[] }[] } }>;
          }
        ).__charts;
        const points = charts['live-mbps']!.data.datasets.find((ds) => ds.id === 'tcp#1')!.data;
        return { last: points.at(-1), before: points.slice(0, -1).filter((p) => p.partial === true).length };
      });
      expect(partial.before).toBe(0);
      expect((partial.last as { covered: number }).covered).toBeLessThan(1);
      const laneRow = page.locator('#live-commands tbody tr[data-section="tcp#1"]');
      await laneRow.waitFor({ state: 'attached', timeout: 10_000 });
      expect(await page.locator('#live-commands-card').isVisible()).toBe(true);
      expect(await laneRow.locator('td').nth(2).textContent()).toBe('behind');
      expect(await page.locator('#live-sections tbody tr[data-section="tcp#1"] td').nth(7).textContent()).toMatch(
        / ms$/,
      );

      const outcome = await run;
      expect(outcome.succeeded, outcome.summary).toBe(true);
      // The page reloads itself on run-end; the test never does.
      await page.waitForSelector('#itb-results', { state: 'attached', timeout: 20_000 });
      expect(await page.locator('#live-dashboard').count()).toBe(0);
      expect(page.url()).toBe(`${base}/`);
      expect(await page.content()).toContain('data-chart="time-over-run"');
      expect(errors).toEqual([]);

      // Left open on the report, the page turns into the next run's live page by itself (it asks GET /progress
      // every 5 s): a run of one section of 10 s, long enough to be seen in progress.
      run = runTransmitter({ ...transmitterConfig, transports: ['tcp'] });
      await page.waitForSelector('#live-dashboard', { state: 'attached', timeout: 20_000 });
      expect(await page.locator('#itb-results').count()).toBe(0);
      expect(await page.title()).toContain('· live');
      expect(page.url()).toBe(`${base}/`);
      const next = await run;
      expect(next.succeeded, next.summary).toBe(true);
      expect(next.report.sections.map((s) => s.transport)).toEqual(['tcp']);
      expect(errors).toEqual([]);
    } finally {
      events?.close();
      await page.close();
      // A failed look leaves the run going: it ends before its receiver closes.
      await run?.catch(() => undefined);
      await receiver.close();
    }
  }, 150_000);

  it("follows the system's dark theme on the live page and on the report", async () => {
    const outputDir = path.join(dir, 'dark');
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { ...WATCHED_RUN, RATE: '200' });
    const base = `http://127.0.0.1:${transmitterConfig.controlPort}`;
    const dark = await watchedPage('dark');
    const light = await watchedPage('light');
    try {
      // Before any run: the live page, waiting.
      for (const { page } of [dark, light]) await page.goto(`${base}/`);
      expect(await dark.page.locator('#live-dashboard').count()).toBe(1);
      expect(await backgroundLuminance(dark.page)).toBeLessThan(0.15);
      expect(await backgroundLuminance(light.page)).toBeGreaterThan(0.85);
      const outcome = await runTransmitter(transmitterConfig);
      expect(outcome.succeeded, outcome.summary).toBe(true);
      // Both reload into the report on run-end.
      for (const { page } of [dark, light])
        await page.waitForSelector('#itb-results', { state: 'attached', timeout: 20_000 });
      expect(await backgroundLuminance(dark.page)).toBeLessThan(0.15);
      expect(await backgroundLuminance(light.page)).toBeGreaterThan(0.85);
      expect([...dark.errors, ...light.errors]).toEqual([]);
    } finally {
      await dark.page.close();
      await light.page.close();
      await receiver.close();
    }
  }, 90_000);
});

describe('GET / at the end of a run', () => {
  it('serves the new report (with its follow script) to a request made the moment run-end arrives, never the live ' +
    'page again', async () => {
    const outputDir = path.join(dir, 'ordering');
    const { receiver, transmitterConfig } = await startReceiver(outputDir, { ...WATCHED_RUN, RATE: '200' });
    try {
      const events = await openEventStream(transmitterConfig.controlPort);
      const atEnd = events
        .waitFor((all) => all.some((e) => e.event === 'run-end'), 30_000)
        .then(() => fetch(`http://127.0.0.1:${transmitterConfig.controlPort}/`).then((r) => r.text()));
      const outcome = await runTransmitter(transmitterConfig);
      expect(outcome.succeeded, outcome.summary).toBe(true);
      const page = await atEnd;
      expect(page).not.toContain('id="live-dashboard"');
      // The file as written, with the script that follows the next run and the CSP that lets it ask GET /progress;
      // the file on disk has neither.
      const { followScript } = livePageLibraries();
      const onDisk = await readFile(path.join(outputDir, 'report.html'), 'utf8');
      expect(page).toBe(followingReport(onDisk, followScript));
      expect(page).not.toBe(onDisk);
      expect(onDisk).not.toContain(followScript);
      events.close();
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe("the receiver's memory with ten open pages", () => {
  /** The process's largest RSS while `work` runs, sampled every 100 ms, in MiB. */
  async function peakRssMiB(work: () => Promise<unknown>): Promise<number> {
    let peak = process.memoryUsage.rss();
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 100);
    try {
      await work();
    } finally {
      clearInterval(sampler);
    }
    return peak / 1048576;
  }

  it('grows by far less than 64 MiB with ten GET /events clients over a run', async () => {
    const env = { TRANSPORTS: 'tcp', DURATION: '4s', RATE: '200', IMAGE_SIZE: '10KB', WARMUP: '0' };
    const { receiver, transmitterConfig } = await startReceiver(path.join(dir, 'memory'), env);
    const port = transmitterConfig.controlPort;
    try {
      const startMiB = process.memoryUsage.rss() / 1048576;
      const withoutMiB = await peakRssMiB(() => runTransmitter(transmitterConfig));
      const clients = await Promise.all(Array.from({ length: 10 }, () => openEventStream(port)));
      const withMiB = await peakRssMiB(() => runTransmitter(transmitterConfig));
      await Promise.all(clients.map((c) => c.ended));
      // Each of the ten got the whole run, to its end.
      for (const client of clients) expect(client.events.at(-1)?.event).toBe('run-end');
      console.log(
        `receiver process RSS (receiver and transmitter in one process): ${startMiB.toFixed(1)} MiB before, ` +
          `peak ${withoutMiB.toFixed(1)} MiB over a 4 s run with no page open, ` +
          `peak ${withMiB.toFixed(1)} MiB over the same run with ten GET /events clients`,
      );
      expect(withMiB - withoutMiB).toBeLessThan(64);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

/** A connection from `localAddress` to 127.0.0.1:`port` that asks for GET /events and never reads a byte of it. */
function idleStream(port: number, localAddress: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => {
      socket.pause();
      socket.write('GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', () => resolve(socket));
    });
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

/** Waits until the live page shows a run in progress with a point on its throughput chart. */
async function showsTheRun(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const charts = (window as unknown as { __charts?: Record<string, { data: { datasets: { data: unknown[] }[] } }> })
        .__charts;
      const status = document.getElementById('live-status')?.textContent ?? '';
      return (
        status.startsWith('Run in progress, started ') &&
        (charts?.['live-mbps']?.data.datasets[0]?.data.length ?? 0) > 0
      );
    },
    undefined,
    { timeout: 20_000 },
  );
}

/** One section of 10 s: long enough to watch the page come back to it. */
const SHORT_RUN = { TRANSPORTS: 'tcp', RATE: '20', IMAGE_COUNT: '200', IMAGE_SIZE: '10KB', WARMUP: '0' };

describe('the live page when others crowd GET /events or its stream fails', () => {
  it('shows the run while 32 idle streams are held by clients of four other addresses', async () => {
    const { receiver, transmitterConfig } = await startReceiver(path.join(dir, 'crowd'), SHORT_RUN);
    const port = transmitterConfig.controlPort;
    const held: net.Socket[] = [];
    const { page, errors } = await watchedPage();
    let run: ReturnType<typeof runTransmitter> | undefined;
    try {
      for (const address of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'])
        for (let i = 0; i < 8; i++) held.push(await idleStream(port, address));
      run = runTransmitter(transmitterConfig);
      await page.goto(`http://127.0.0.1:${port}/`);
      await showsTheRun(page);
      const outcome = await run;
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await page.waitForSelector('#itb-results', { state: 'attached', timeout: 20_000 });
      expect(errors).toEqual([]);
    } finally {
      for (const socket of held) socket.destroy();
      await page.close();
      await run?.catch(() => undefined);
      await receiver.close();
    }
  }, 90_000);

  it('tries again after a 503 and after its stream drops, from the last event it had, and shows the run', async () => {
    const { receiver, transmitterConfig } = await startReceiver(path.join(dir, 'retry'), SHORT_RUN);
    const port = transmitterConfig.controlPort;
    const { page } = await watchedPage();
    const uncaught: string[] = [];
    page.on('pageerror', (error) => uncaught.push(error.message));
    // Every text the status line shows, in order.
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { __statuses: string[] }).__statuses = seen;
      document.addEventListener('DOMContentLoaded', () => {
        const status = document.getElementById('live-status');
        if (status === null) return;
        new MutationObserver(() => seen.push(status.textContent ?? '')).observe(status, {
          childList: true,
          characterData: true,
          subtree: true,
        });
      });
    });
    let events: EventStream | undefined;
    let run: ReturnType<typeof runTransmitter> | undefined;
    try {
      events = await openEventStream(port);
      const watched = events;
      // The first GET /events is refused; the second gets the run's first events and then ends, as a dropped stream
      // does; the rest reach the receiver.
      const asked: string[] = [];
      let firstEventsId = 0;
      await page.route('**/events*', async (route: Route) => {
        const url = new URL(route.request().url());
        asked.push(url.pathname + url.search);
        if (asked.length === 1) {
          await route.fulfill({ status: 503, headers: { 'retry-after': '10' }, body: 'full' });
          return;
        }
        if (asked.length === 2) {
          await watched.waitFor((all) => all.filter((e) => e.event === 'second').length >= 2);
          const first = watched.events.slice(0, watched.events.findIndex((e) => e.event === 'second') + 2);
          firstEventsId = first.at(-1)!.id;
          const body = first.map((e) => `id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
          await route.fulfill({ status: 200, contentType: 'text/event-stream', body: body.join('') });
          return;
        }
        await route.continue();
      });
      run = runTransmitter(transmitterConfig);
      await page.goto(`http://127.0.0.1:${port}/`);
      await showsTheRun(page);
      // Back on the receiver's stream: the section's line grows past what the ended stream gave.
      await page.waitForFunction(
        (had) => {
          const charts = (
            window as unknown as { __charts: Record<string, { data: { datasets: { id: string; data: unknown[] }[] } }> }
          ).__charts;
          return (charts['live-mbps']?.data.datasets.find((ds) => ds.id === 'tcp#1')?.data.length ?? 0) > had;
        },
        2,
        { timeout: 20_000 },
      );
      expect(asked.slice(0, 3)).toEqual(['/events', '/events', `/events?lastEventId=${firstEventsId}`]);
      // Nothing twice: the seconds drawn are 0, 1, 2... in order.
      const seconds = await page.evaluate(() => {
        const charts = (
          window as unknown as {
            __charts: Record<string, { data: { datasets: { id: string; data: { x: number }[] }[] } }>;
          }
        ).__charts;
        return charts['live-mbps']!.data.datasets.find((ds) => ds.id === 'tcp#1')!.data.map((p) => p.x);
      });
      expect(seconds).toEqual(seconds.map((_, i) => seconds[0]! + i));
      const statuses = await page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);
      expect(statuses.filter((s) => s.startsWith('Lost the connection to the receiver: trying again in ')).length).toBe(
        2,
      );
      expect(statuses).toContain('Connecting again to the receiver…');
      const outcome = await run;
      expect(outcome.succeeded, outcome.summary).toBe(true);
      await page.waitForSelector('#itb-results', { state: 'attached', timeout: 20_000 });
      expect(uncaught).toEqual([]);
    } finally {
      events?.close();
      await page.close();
      await run?.catch(() => undefined);
      await receiver.close();
    }
  }, 90_000);
});
