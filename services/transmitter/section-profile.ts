import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Logger } from 'pino';
import { formatSize } from '../core/config/size.js';
import { CPU_PROFILE_BODY_LIMIT_BYTES } from '../core/control/cpu-profile.js';
import { errorMessage } from '../core/errors.js';
import { CpuProfileRecording } from '../shared/cpu-profile.js';
import type { Peer } from './peers.js';

// PROFILE=1 on the transmitter: a CPU profile of each section, from just before the receivers open it to just before
// its end is sent, which then goes gzipped to every receiver over the control port (the transmitter may be on another
// host than the run's folder). A profile that cannot be taken or sent is logged and lost: it never fails a section.

const gzipped = promisify(gzip);

/**
 * Starts this process's CPU profile of a section of `transport` when `enabled` (PROFILE=1); undefined when not, or when
 * the inspector refused (logged).
 */
export async function startSectionProfile(
  enabled: boolean,
  transport: string,
  log: Logger,
): Promise<CpuProfileRecording | undefined> {
  if (!enabled) return undefined;
  try {
    return await CpuProfileRecording.start();
  } catch (err) {
    log.warn({ transport, err: errorMessage(err) }, 'CPU profile not started: the section runs without one');
    return undefined;
  }
}

/**
 * Stops `recording` (nothing when undefined or already stopped) and sends the profile, gzipped, to each of `peers` for
 * section `sectionId`; a profile over CPU_PROFILE_BODY_LIMIT_BYTES gzipped, or one a receiver refuses, is logged and
 * left out. Never rejects; each request is bounded by the control client's timeouts.
 */
export async function sendSectionProfile(
  recording: CpuProfileRecording | undefined,
  peers: readonly Peer[],
  sectionId: number,
  log: Logger,
): Promise<void> {
  if (recording === undefined) return;
  let body: Buffer;
  try {
    const profile = await recording.stop();
    if (profile === undefined) return;
    body = await gzipped(profile);
  } catch (err) {
    log.warn({ sectionId, err: errorMessage(err) }, 'CPU profile not taken');
    return;
  }
  if (body.byteLength > CPU_PROFILE_BODY_LIMIT_BYTES) {
    log.warn(
      { sectionId, gzippedBytes: body.byteLength, limitBytes: CPU_PROFILE_BODY_LIMIT_BYTES },
      `CPU profile not sent: ${formatSize(body.byteLength)} gzipped, over the control port's ` +
        `${formatSize(CPU_PROFILE_BODY_LIMIT_BYTES)} for one`,
    );
    return;
  }
  await Promise.all(
    peers.map((peer) =>
      peer.control
        .cpuProfile(sectionId, body)
        .catch((err: unknown) =>
          log.warn({ sectionId, receiver: peer.index, err: errorMessage(err) }, 'CPU profile not delivered'),
        ),
    ),
  );
}
