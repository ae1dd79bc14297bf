import { describe, expect, it } from 'vitest';
import { cpuProfileProblem } from '../../services/core/control/cpu-profile.js';
import { cpuProfileFileName } from '../../services/core/report/run-files.js';
import { cpuProfilesText } from '../../services/core/report/text/section-lines.js';

// PROFILE=1's pure parts: the profiles' names in a run's folder, what the receiver takes for a profile, and
// output.log's line naming them.

describe('cpuProfileFileName', () => {
  it.each([
    ['tcp', 1, 1, 'receiver', 'profiles/tcp-receiver.cpuprofile'],
    ['tcp', 1, 1, 'transmitter', 'profiles/tcp-transmitter.cpuprofile'],
    ['grpc-connect', 2, 3, 'receiver', 'profiles/grpc-connect-repeat2-receiver.cpuprofile'],
    ['redis-kv', 3, 3, 'transmitter', 'profiles/redis-kv-repeat3-transmitter.cpuprofile'],
  ] as const)('names %s repeat %i of %i, the %s side: %s', (transport, repeat, repeats, side, expected) => {
    expect(cpuProfileFileName(transport, repeat, repeats, side)).toBe(expected);
  });

  it('gives every section and side of a repeated run a name of its own', () => {
    const names = ['tcp', 'zeromq'].flatMap((transport) =>
      [1, 2, 3].flatMap((repeat) =>
        (['receiver', 'transmitter'] as const).map((side) => cpuProfileFileName(transport, repeat, 3, side)),
      ),
    );
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('cpuProfileProblem', () => {
  it('takes what V8 writes: an object with nodes and samples', () => {
    expect(cpuProfileProblem('{"nodes":[],"startTime":1,"endTime":2,"samples":[],"timeDeltas":[]}')).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"nodes":', /^not JSON: /],
    ['an array', '[]', /^not a JSON object$/],
    ['null', 'null', /^not a JSON object$/],
    ['an object without samples', '{"nodes":[]}', /no `nodes` and `samples` arrays/],
    ['nodes that are not an array', '{"nodes":{},"samples":[]}', /no `nodes` and `samples` arrays/],
  ])('refuses %s', (_what, json, problem) => {
    expect(cpuProfileProblem(json)).toMatch(problem);
  });
});

describe('cpuProfilesText', () => {
  const howToRead =
    '(open in Chrome DevTools or speedscope; summary: node dist/scripts/tools/profile-summary.js <file>)';

  it('names both sides’ files and how to read them', () => {
    const cpuProfiles = {
      receiver: 'profiles/tcp-receiver.cpuprofile',
      transmitter: 'profiles/tcp-transmitter.cpuprofile',
    };
    expect(cpuProfilesText({ cpuProfiles })).toBe(
      `CPU profiles: profiles/tcp-receiver.cpuprofile, profiles/tcp-transmitter.cpuprofile ${howToRead}`,
    );
  });

  it('says which side has none', () => {
    const cpuProfiles = { receiver: null, transmitter: 'profiles/tcp-transmitter.cpuprofile' };
    expect(cpuProfilesText({ cpuProfiles })).toBe(
      `CPU profiles: no receiver profile, profiles/tcp-transmitter.cpuprofile ${howToRead}`,
    );
  });

  it('has no line when neither side profiled', () => {
    expect(cpuProfilesText({})).toBeUndefined();
  });
});
