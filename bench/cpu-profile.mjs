// Preloaded into a benchmark's server process (NODE_OPTIONS=--import, which refuses --cpu-prof):
// profiles the whole process and writes $BENCH_PROFILE/server-PID.cpuprofile when it exits.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 200 });
session.post('Profiler.start');
process.on('exit', () => {
  // The in-thread inspector answers synchronously, so this completes before the process ends.
  session.post('Profiler.stop', (err, result) => {
    if (!err)
      writeFileSync(
        join(process.env.BENCH_PROFILE, `server-${process.pid}.cpuprofile`),
        JSON.stringify(result.profile),
      );
  });
});
