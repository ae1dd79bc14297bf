import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // redis-server, docker-compose and chromium: one clear message when one is missing.
    globalSetup: ['tests/setup/tools.ts'],
    // Real sockets and child processes: each file in its own process, so one file's leftovers
    // cannot disturb another's handle counts.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
