import type { SideCost } from '../../model/cost.js';
import type { SectionResult } from '../../model/section.js';
import { mib, percent } from './format.js';

// output.log's lines of what a section cost its sides, what hashing took from the receiver, and how full the window
// stayed.

/**
 * What hashing took from the receiver's one thread, the one that stamps arrivals: it runs after
 * each ack, but a stamp can still wait behind it (verifier.ts), so the line says by how much.
 */
export function verificationText(section: SectionResult): string {
  const share =
    section.verifyBusyShare == null
      ? ''
      : `: ${percent(section.verifyBusyShare)} of its busy time in the span, which images queued behind it wait ` +
        `for when the window is full`;
  const longest =
    section.verifyLongestRunMs == null ? '' : ` (longest run ${section.verifyLongestRunMs.toFixed(3)} ms)`;
  return (
    `${(section.verifyMs ?? 0).toFixed(1)} ms hashing the recorded images, each after its ack, on the receiver ` +
    `thread that stamps arrivals${share}; ` +
    `bytes that arrive during a hash are stamped after it${longest}; VERIFY=false measures without`
  );
}

/** A side's cost line: CPU, per image, memory and event-loop use; "not measured" without one. */
export function costLine(side: string, cost: SideCost | null): string {
  if (cost === null) return `${side}: not measured`;
  const loop = cost.eventLoopUtilization === null ? '' : `, event loop ${percent(cost.eventLoopUtilization)} busy`;
  const memory =
    cost.eventLoopUtilization === null
      ? `RSS ${mib(cost.peakRssBytes)} MiB (larger of its two readings)`
      : `peak RSS ${mib(cost.peakRssBytes)} MiB`;
  return (
    `${side}: CPU ${cost.cpuMs.toFixed(1)} ms (user ${cost.cpuUserMs.toFixed(1)}, ` +
    `system ${cost.cpuSystemMs.toFixed(1)}), ${cost.cpuMsPerImage.toFixed(3)} ms/image, ${memory}${loop}`
  );
}

/** "15.8 of 16 images in flight on average …": the window's occupancy by Little's law, and what it does not show. */
export function windowText(
  section: Pick<SectionResult, 'littleRatio' | 'meanInFlight' | 'clients' | 'window'>,
): string {
  const capacity = section.clients * section.window;
  const inFlight = section.meanInFlight ?? (section.littleRatio ?? 0) * capacity;
  const of = section.clients > 1 ? `CLIENTS × WINDOW = ${capacity}` : `WINDOW = ${capacity}`;
  return (
    `${inFlight.toFixed(2)} images in flight on average of ${of} (` +
    (100 * (section.littleRatio ?? 0)).toFixed(1) +
    ` % full, by Little's law from the round trips; it shows the window stayed full, not that the times are right)`
  );
}

/**
 * PROFILE=1: "CPU profiles: profiles/tcp-receiver.cpuprofile, profiles/tcp-transmitter.cpuprofile (…)", the files
 * relative to the run's folder and how to read them, a side without one named so; undefined when neither profiled.
 */
export function cpuProfilesText(section: Pick<SectionResult, 'cpuProfiles'>): string | undefined {
  const profiles = section.cpuProfiles;
  if (profiles === undefined) return undefined;
  const files = (['receiver', 'transmitter'] as const).map((side) => profiles[side] ?? `no ${side} profile`);
  return (
    `CPU profiles: ${files.join(', ')} (open in Chrome DevTools or speedscope; summary: ` +
    `node dist/scripts/tools/profile-summary.js <file>)`
  );
}
