// Preloaded into a benchmark's server process (NODE_OPTIONS=--import …, which refuses --cpu-prof)
// when BENCH_PROFILE=DIR is set: a CPU profile of the whole process, written to
// DIR/server-PID.cpuprofile when it exits. Read it with `node bench/cpu-top.mjs FILE`.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env.BENCH_PROFILE;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
  // An in-thread session answers synchronously, so this completes in an exit handler.
  process.on('exit', () =>
    session.post('Profiler.stop', (err, r) => {
      if (!err) writeFileSync(join(dir, `server-${process.pid}.cpuprofile`), JSON.stringify(r.profile));
    }),
  );
}
