import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // Real sockets and child processes: each file in its own process, so one file's leftovers
    // cannot disturb another's handle counts.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
