// Preloaded into the bench server (NODE_OPTIONS=--import …) when BENCH_SERVER_CPU_PROF=DIR is set:
// a CPU profile of the whole process, written to DIR when it exits. (node refuses --cpu-prof in
// NODE_OPTIONS, and the bench spawns the server through the tests' helper.)
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env.BENCH_SERVER_CPU_PROF;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  // An in-thread session answers synchronously, so this works in an exit handler.
  process.on('exit', () =>
    session.post('Profiler.stop', (err, r) => {
      if (!err) writeFileSync(join(dir, `server-${process.pid}.cpuprofile`), JSON.stringify(r.profile));
    }),
  );
}
