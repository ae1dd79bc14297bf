import { formatSize } from '../../config/size.js';
import { describeWarmup } from '../../model/warmup.js';
import type { HostFacts, RunReport } from '../report.js';
import { nodeDescription, peersText, sectionTitle } from '../wording.js';
import { durationImagesText, runImages } from '../images-sent.js';
import { hostLoadRunText, hostLoadWarnings } from '../host-load-text.js';
import { escapeHtml, formatDate, formatDuration } from './page.js';
import { failureReason, type RunView, type TransportView } from './views.js';

// The page's header: its title, each run's verdict, and the table of the runs' facts.

function hostText(host: HostFacts): string {
  return (
    `${host.hostname} · ${host.cpuModel}, ${host.cores} cores, ${formatSize(host.totalMemoryBytes)} ` +
    `· ${host.platform} ${host.kernel} · ${nodeDescription(host)}`
  );
}

function librariesText(hosts: RunReport['run']['hosts']): string {
  const names = [
    ...new Set([...Object.keys(hosts.receiver.libraries), ...Object.keys(hosts.transmitter.libraries)]),
  ].sort();
  if (names.length === 0) return '-';
  return names
    .map((name) => {
      const rx = hosts.receiver.libraries[name];
      const tx = hosts.transmitter.libraries[name];
      if (rx === tx || tx === undefined) return `${name} ${rx}`;
      if (rx === undefined) return `${name} ${tx}`;
      return `${name} ${rx} (transmitter ${tx})`;
    })
    .join(' · ');
}

/** Two kernels: how one-way times were put on one clock, and the largest error bound that left. */
function clockFact(report: RunReport): string {
  const bounds = report.sections.flatMap((s) => (s.oneWayClockErrorMs == null ? [] : [s.oneWayClockErrorMs]));
  const largest =
    bounds.length === 0
      ? ''
      : `: one-way figures within ± ${Math.max(...bounds).toFixed(3)} ms at most (Clock ± column)`;
  return (
    `different or unknown kernels: send times moved onto the receiver clock by the offset estimated before each ` +
    `section${largest}; the round trip (RTT) is on the transmitter clock alone, the clock-free figure`
  );
}

/** IMAGE_COUNT, or under DURATION the time and what each transport sent in it. */
function imagesPerTransportText(report: RunReport): string {
  const images = runImages(report.run, report.sections);
  return images.kind === 'count' ? String(images.imagesPerSection) : durationImagesText(images);
}

/** The first fact of the right-hand table of a lone run's facts: from here on the values are long. */
const RIGHT_HAND_FACTS_FROM = 'Repeat';

function factRows(view: RunView, transports: readonly TransportView[], withArrivalNotes: boolean): [string, string][] {
  const { run, finishedAt } = view.report;
  const took = formatDuration(run.startedAt, finishedAt);
  const titleOf = (key: string): string => transports.find((t) => t.key === key)?.title ?? key;
  const { transmitter, receiver } = run.hosts;
  const sameClock = transmitter.bootId !== null && transmitter.bootId === receiver.bootId;
  return [
    ['Date', `${formatDate(run.startedAt)}${took === null ? '' : ` (took ${took})`}`],
    [
      'Image',
      `${run.imageDescription}, ${formatSize(run.imageSizeBytes)} (` +
        run.imageSizeBytes.toLocaleString('en-US') +
        ` bytes)`,
    ],
    ['Images per transport', imagesPerTransportText(view.report)],
    ['Window', `${run.window} in flight`],
    [
      'Send schedule',
      run.config.ratePerSecond === undefined
        ? 'closed loop: the next image goes as soon as the window has room'
        : `open loop at RATE ` +
          run.config.ratePerSecond.toLocaleString('en-US') +
          ` images/s; an image due while WINDOW are in flight waits for a slot and goes late, its wait counted ` +
          `from its due time; MB/s is the load delivered, not a capacity`,
    ],
    ['Warm-up', describeWarmup(run.warmup)],
    [
      'Integrity',
      run.config.verify === false
        ? 'NOT VERIFIED (VERIFY=false): a corrupt image would count as intact'
        : 'size and checksum (XXH3-64 over 16 KiB, xxHash64 under) of every image, checked by the receiver after ' +
          'its ack, on the thread that stamps ' +
          'arrivals: bytes arriving during a hash are stamped after it (RX hashing %)',
    ],
    [
      RIGHT_HAND_FACTS_FROM,
      run.repeat > 1
        ? `${run.repeat}, interleaved: the transport order rotated each repeat (A B C, B C A, C A B, …); figures ` +
          `from each transport’s median COMPLETED repeat`
        : String(run.repeat),
    ],
    ['Transports', run.transports.map(titleOf).join(', ')],
    ['Transmitter host', hostText(transmitter)],
    ['Receiver host', hostText(receiver)],
    // Two runs' rows that differ are flagged: where two runs disagree, the host load is the first place to look.
    ['Host load', hostLoadRunText(view.report.sections)],
    ['Peers', peersText(run)],
    ['Link', run.config.link ?? 'not recorded'],
    ['Clock', sameClock ? 'one kernel: both sides share a monotonic clock' : clockFact(view.report)],
    ['Libraries', librariesText(run.hosts)],
    // When either of two runs has notes both get the row: the two-run table pairs rows by position.
    ...(withArrivalNotes
      ? [['Batched arrivals', run.arrivalNotes.length > 0 ? run.arrivalNotes.join(' · ') : 'none'] as [string, string]]
      : []),
  ];
}

/** One line on how a run went: every transport intact, or which failed (and why) and why the run stopped. */
function renderVerdict(view: RunView): string {
  const { report } = view;
  const failed = report.transports.filter((t) => !t.ok);
  const stopReason = report.stopReason ?? null;
  const prefix = view.name === '' ? '' : `${view.name}: `;
  if (stopReason === null && failed.length === 0 && report.sections.length > 0) {
    return (
      `<p class="verdict ok"><strong>${escapeHtml(prefix)}every transport delivered every image ` +
      `intact.</strong></p>`
    );
  }
  const headline = [
    ...(stopReason === null ? [] : ['run incomplete']),
    ...(failed.length === 0 ? [] : [`${failed.length} of ${report.transports.length} transports FAILED`]),
    ...(report.sections.length === 0 ? ['no section ran'] : []),
  ].join(', ');
  const details = [
    ...(stopReason === null ? [] : [stopReason]),
    ...failed.map((t) => `${sectionTitle(t)}: ${failureReason(t, report)}`),
  ];
  return (
    `<p class="verdict failed"><strong>${escapeHtml(prefix + headline)}</strong>` +
    (details.length > 0 ? ` <span class="details">${details.map(escapeHtml).join(' · ')}</span>` : '') +
    `</p>`
  );
}

/** A run's host-load warnings (host-load-text.ts), one line each under its verdict; '' when the host was quiet. */
function renderHostBusy(view: RunView): string {
  const prefix = view.name === '' ? '' : `${view.name}: `;
  return hostLoadWarnings(view.report.sections)
    .map((warning) => `\n<p class="verdict busy">${escapeHtml(prefix + warning)}</p>`)
    .join('');
}

/** The facts of one run in two side-by-side tables, or of two runs in one table, a column each. */
function renderFacts(views: readonly RunView[], transports: readonly TransportView[]): string {
  const withArrivalNotes = views.some((v) => v.report.run.arrivalNotes.length > 0);
  const rows = views.map((v) => factRows(v, transports, withArrivalNotes));
  const first = rows[0]!;
  if (views.length === 1) {
    const split = first.findIndex(([label]) => label === RIGHT_HAND_FACTS_FROM);
    const table = (part: [string, string][]): string =>
      `<table class="facts-table"><tbody>\n` +
      part
        .map(([label, value]) => `<tr><th scope="row">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`)
        .join('\n') +
      `\n</tbody></table>`;
    // Repeats, hosts, libraries and arrival notes are long: they go in the wider right-hand table.
    return `<div class="facts-grid">${table(first.slice(0, split))}${table(first.slice(split))}</div>`;
  }
  const body = first
    .map(([label], i) => {
      const values = rows.map((r) => r[i]![1]);
      const differs = new Set(values).size > 1;
      const flagged = differs && label !== 'Date';
      // A fact both runs share is written once, across both columns.
      const cells = differs
        ? values.map((v) => `<td>${escapeHtml(v)}</td>`).join('')
        : `<td colspan="${values.length}">${escapeHtml(values[0]!)}</td>`;
      return (
        `<tr${flagged ? ' class="differs"' : ''}><th scope="row">${escapeHtml(label)}` +
        (flagged ? ' <span class="tag">differs</span>' : '') +
        `</th>${cells}</tr>`
      );
    })
    .join('\n');
  const head =
    `<thead><tr><td></td>` + views.map((v) => `<th scope="col">${escapeHtml(v.name)}</th>`).join('') + `</tr></thead>`;
  return (
    `<table class="facts-table two-runs"><colgroup><col class="label-column"><col><col></colgroup>${head}` +
    `<tbody>\n${body}\n</tbody></table>`
  );
}

/** The page's header and the card of the runs' facts. */
export function renderHeader(views: readonly RunView[], transports: readonly TransportView[]): string {
  const subtitle =
    views.length === 1
      ? `Run of ${escapeHtml(formatDate(views[0]!.report.run.startedAt))}`
      : `Before (` +
        escapeHtml(formatDate(views[0]!.report.run.startedAt)) +
        `) against after (${escapeHtml(formatDate(views[1]!.report.run.startedAt))})`;
  return `<header class="page-header">
<h1>image-transfer-bench report</h1>
<p class="subtitle">${subtitle}</p>
${[...views].reverse().map(renderVerdict).join('\n')}${[...views].reverse().map(renderHostBusy).join('')}
</header>
<section class="card facts" aria-label="Run facts">
${renderFacts(views, transports)}
</section>`;
}
