import { errorMessage } from '../errors.js';

// PROFILE=1: the transmitter's CPU profile of a section crosses the control port to the receiver, which writes it
// into the run's folder beside its own (the transmitter may run on another host, with no access to that folder).
// POST /sections/:id/cpu-profile carries it gzipped, before the section's end, so that the end's output.log lines
// can name it.

/** Content type of POST /sections/:id/cpu-profile: the .cpuprofile's JSON, gzipped. */
export const CPU_PROFILE_CONTENT_TYPE = 'application/gzip';

/**
 * Largest body of POST /sections/:id/cpu-profile, gzipped: a profile sampled every millisecond gzips to about 150 KiB a
 * minute (18 KiB for TCP's 8 s section of 2,000 images), so hours of section fit; a larger one is refused (the
 * transmitter does not send it).
 */
export const CPU_PROFILE_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/** Largest profile once gunzipped: what the receiver inflates and parses at most, whatever the gzip says. */
export const CPU_PROFILE_MAX_BYTES = 256 * 1024 * 1024;

/**
 * Why `json` is not a V8 CPU profile (Chrome DevTools' Profile: an object with `nodes` and `samples` arrays), or
 * undefined when it is one: the receiver writes nothing else under a .cpuprofile name.
 */
export function cpuProfileProblem(json: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    return `not JSON: ${errorMessage(err)}`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'not a JSON object';
  const { nodes, samples } = parsed as { nodes?: unknown; samples?: unknown };
  if (!Array.isArray(nodes) || !Array.isArray(samples)) return 'not a CPU profile: no `nodes` and `samples` arrays';
  return undefined;
}
