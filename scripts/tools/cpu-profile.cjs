// Profiles the process that preloads it, as `node --cpu-prof` would, where that flag cannot be given:
// NODE_OPTIONS refuses --cpu-prof, and `npm start` spawns its services with flags of its own. Each
// node process started with NODE_OPTIONS="--require <this file>" writes a .cpuprofile into
// CPU_PROFILE_DIR (required) as it exits, named by its script (receiver-main-<pid>);
// scripts/tools/profile-summary.ts reads them.
const { Session } = require('node:inspector');
const { mkdirSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const dir = process.env.CPU_PROFILE_DIR;
if (dir === undefined || dir === '') throw new Error('cpu-profile.cjs: set CPU_PROFILE_DIR to where profiles go');
mkdirSync(dir, { recursive: true });
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.start');
// A local session answers synchronously, so the profile is written even from an 'exit' listener.
process.on('exit', () => {
  session.post('Profiler.stop', (err, result) => {
    if (err !== null) return;
    const script = process.argv[1] ?? 'node';
    const name = `${path.basename(path.dirname(script))}-${path.basename(script, '.js')}-${process.pid}`;
    writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(result.profile));
  });
});
