import { hostBusySigns, type HostBusySign, type HostLoad } from '../model/host-load.js';
import type { SectionResult } from '../model/section.js';
import { sectionTitle } from './wording.js';

// The host load's wording, which output.log's header and report.html's header share: one line of
// ranges over a run's sections, and a warning per figure that says the host was busy enough to move
// the times (model/host-load.ts holds the rule).

/** What these texts read of a section. */
export type HostLoadSection = Pick<SectionResult, 'hostLoad' | 'label' | 'baseline' | 'repeat'>;

/** Sections named in one warning before "and N more". */
const SECTIONS_NAMED = 4;

/** What a reader should do with a warning: the same words after each. */
const WHAT_IT_MEANS = 'When two runs disagree, look here first: their times moved with the host, not the transport.';

/** "0.42–1.85" of `values` × `scale` with `digits` decimals and `unit`; one value when both round alike; null: none. */
function rangeText(values: readonly (number | null)[], digits: number, scale = 1, unit = ''): string | null {
  const known = values.filter((v): v is number => v !== null);
  if (known.length === 0) return null;
  const low = (Math.min(...known) * scale).toFixed(digits);
  const high = (Math.max(...known) * scale).toFixed(digits);
  return `${low === high ? low : `${low}–${high}`}${unit}`;
}

/** Whose host the figures are: always the receiver's, and whether the transmitter's CPU is among them. */
function whoseHost(loads: readonly HostLoad[]): string {
  if (loads.every((l) => l.transmitterOnHost === true))
    return "the receiver's host, shared with the transmitter on one kernel";
  if (loads.every((l) => l.transmitterOnHost === false))
    return "the receiver's host only, the transmitter's (another kernel) not measured";
  return "the receiver's host, whether the transmitter shared it not known";
}

/**
 * The figures of `loads` as ranges: "1-minute load average 0.42–1.85, CPUs busy 45.0–88.0 %, …"; null when none was
 * read.
 */
function figuresText(loads: readonly HostLoad[]): string | null {
  const share = (of: (l: HostLoad) => number | null): string | null => rangeText(loads.map(of), 1, 100, ' %');
  const loadAverages = loads.flatMap((l) => [l.loadAverage1mStart, l.loadAverage1mEnd]);
  const others = loads.map((l) => l.otherProcessesCores);
  const figures = [
    ['1-minute load average', rangeText(loadAverages, 2)],
    ['CPUs busy', share((l) => l.hostBusyShare)],
    ['steal', share((l) => l.stealShare)],
    ['unaccounted', share((l) => l.unaccountedShare)],
    ['other processes', rangeText(others, 2, 1, ' cores')],
  ].flatMap(([name, text]) => (text === null ? [] : [`${name} ${text}`]));
  return figures.length === 0 ? null : figures.join(', ');
}

/**
 * The run's host load as one line after "Host load: ": the ranges over its sections' measured spans and whose host they
 * are; "not recorded" when no section has it (a file written before it, or no section measured).
 */
export function hostLoadRunText(sections: readonly HostLoadSection[]): string {
  const loads = sections.flatMap((s) => (s.hostLoad == null ? [] : [s.hostLoad]));
  if (loads.length === 0) return 'not recorded';
  const cores = loads.find((l) => l.cores !== null)?.cores;
  const figures = figuresText(loads);
  if (figures === null) return 'not available on this system (no /proc, no load average)';
  const over =
    loads.length === 1 ? "over the section's measured span" : `over ${loads.length} sections' measured spans`;
  return `${figures} (${whoseHost(loads)}${cores === undefined ? '' : `, ${cores} CPUs`}; ${over})`;
}

/** A section's host load on one line: "1-minute load average 0.42 → 0.55 on 2 CPUs, CPUs busy 45.0 %, …". */
export function hostLoadSectionText(load: HostLoad): string {
  const two = (value: number | null): string => value?.toFixed(2) ?? '-';
  const loadAverage =
    load.loadAverage1mStart === null && load.loadAverage1mEnd === null
      ? null
      : `1-minute load average ${two(load.loadAverage1mStart)} → ${two(load.loadAverage1mEnd)}` +
        (load.cores === null ? '' : ` on ${load.cores} CPUs`);
  const percent = (share: number | null): string => (share === null ? '-' : `${(share * 100).toFixed(1)} %`);
  const shares =
    load.spanMs === null
      ? null
      : `CPUs busy ${percent(load.hostBusyShare)}, steal ${percent(load.stealShare)}, unaccounted ` +
        `${percent(load.unaccountedShare)}, other processes ` +
        (load.otherProcessesCores === null ? '- (not told apart)' : `${load.otherProcessesCores.toFixed(2)} cores`) +
        ` over ${(load.spanMs / 1000).toFixed(3)} s`;
  const parts = [loadAverage, shares].filter((p): p is string => p !== null);
  return parts.length === 0 ? 'not available on this system' : parts.join(', ');
}

/** What a busy sign means, after the sections it was seen in. */
function signText(figure: HostBusySign['figure'], worst: HostBusySign, during: string): string {
  switch (figure) {
    case 'stolen':
      return (
        `up to ${(worst.value * 100).toFixed(1)} % of the CPUs' time was stolen (steal + unaccounted; this ` +
        `warns from ${worst.limit * 100} %) ${during}: the hypervisor ran something else while this guest's clock ` +
        `ran on, so the times hold waits no transport caused.`
      );
    case 'otherProcesses':
      return (
        `other processes used up to ${worst.value.toFixed(2)} of a core (this warns from ${worst.limit}) ` +
        `${during}: they ran on the CPUs this run wanted, so its images could wait for a core.`
      );
    case 'loadAverage':
      return (
        `the 1-minute load average reached ${worst.value.toFixed(2)} on ${worst.limit} CPUs ${during}: more tasks ` +
        `wanted a CPU than there were (this run's own among them: other processes could not be told apart).`
      );
  }
}

/**
 * One warning per figure that says the host was busy enough to move the run's times (model/host-load.ts's rule), each
 * naming the figure, its worst value, the sections and what it means; none when the host was quiet or not read.
 */
export function hostLoadWarnings(sections: readonly HostLoadSection[]): string[] {
  const withRepeats = sections.some((s) => s.repeat > 1);
  const seen = new Map<HostBusySign['figure'], { worst: HostBusySign; names: string[] }>();
  for (const section of sections) {
    if (section.hostLoad == null) continue;
    const name = sectionTitle(section) + (withRepeats ? ` repeat ${section.repeat}` : '');
    for (const sign of hostBusySigns(section.hostLoad)) {
      const known = seen.get(sign.figure);
      if (known === undefined) seen.set(sign.figure, { worst: sign, names: [name] });
      else {
        known.names.push(name);
        if (sign.value > known.worst.value) known.worst = sign;
      }
    }
  }
  return [...seen].map(([figure, { worst, names }]) => {
    const more = names.length - SECTIONS_NAMED;
    const during = `during ${names.slice(0, SECTIONS_NAMED).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
    return `HOST BUSY: ${signText(figure, worst, during)} ${WHAT_IT_MEANS}`;
  });
}
