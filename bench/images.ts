/**
 * images: jobs in OCI images (docs/IMAGES.md), each figure against a baseline measured in the
 * same run, from a real registry on 127.0.0.1 (Debian's docker-registry, images built here as the
 * tests build theirs: test/helpers/registry.ts).
 *
 * - What a cached image costs a job: submit → ended of a no-op job in an image this machine has,
 *   against the same job without one, one at a time, alternating (p50, p99).
 * - A cold pull: submit → running of a job whose image this machine lacks (its digest asked, the
 *   image fetched and unpacked, the job started), against skopeo's own copy of the same image
 *   into an OCI layout, and against that copy plus umoci's raw unpack (what berth does with it).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { pushImage, startRegistry } from '../test/helpers/registry.js';
import { quantile } from './flood.js';
import { fmt, get, post, startBenchServer, type BenchServer } from './lib.js';

export interface ImagesBenchResult {
  /** Submit → ended, ms, of no-op jobs without an image and in a cached one. */
  plainMs: number[];
  cachedMs: number[];
  /** The cold pulls, one per round. */
  pulls: { megabytes: number; berthS: number; skopeoS: number; skopeoUnpackS: number }[];
}

interface JobTimes {
  state: string;
  reason: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Submits `body` and waits for `until` of the job (polling every 2 ms); the wall time in ms. */
async function timed(s: BenchServer, body: unknown, until: 'running' | 'ended'): Promise<number> {
  const t0 = performance.now();
  const job = (await post(s.api, s.token, '/projects/bench/jobs', body)) as { id: number };
  for (;;) {
    const j = await get<JobTimes>(s.api, s.token, `/jobs/${job.id}`);
    if (j.state === 'failed' || j.state === 'cancelled')
      throw new Error(`job ${job.id} ${j.state}: ${j.reason}`);
    if (until === 'running' ? j.startedAt !== null : j.finishedAt !== null) return performance.now() - t0;
    await delay(2);
  }
}

const seconds = (run: () => void): number => {
  const t0 = performance.now();
  run();
  return (performance.now() - t0) / 1000;
};

export async function runImagesBench(jobs = 40, megabytes = 200, rounds = 2): Promise<ImagesBenchResult> {
  const work = mkdtempSync(join(tmpdir(), 'berth-bench-images-'));
  const registry = await startRegistry(work);
  let s: BenchServer | undefined;
  try {
    pushImage(work, registry, 'bench/small', '1', {});
    s = await startBenchServer('');
    await post(s.api, s.token, '/cluster-queues', { name: 'bench', quota: { jobs: 1_000_000 } });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const plain = { command: ['sh', '-c', ':'] };
    const image = { ...plain, image: `${registry.host}/bench/small:1` };
    await timed(s, image, 'ended'); // pulled once: cached from here on
    const plainMs: number[] = [];
    const cachedMs: number[] = [];
    for (let i = 0; i < jobs; i++) {
      plainMs.push(await timed(s, plain, 'ended'));
      cachedMs.push(await timed(s, image, 'ended'));
    }
    const pulls: ImagesBenchResult['pulls'] = [];
    for (let round = 0; round < rounds; round++) {
      // Random filler: a new digest each round, and bytes that do not compress.
      pushImage(work, registry, `bench/big${round}`, '1', { fillerMegabytes: megabytes });
      const ref = `${registry.host}/bench/big${round}:1`;
      const layout = join(work, `skopeo-${round}`);
      const skopeo = () =>
        seconds(() =>
          execFileSync('/usr/bin/skopeo', [
            'copy',
            '--quiet',
            '--src-tls-verify=false',
            `docker://${ref}`,
            `oci:${layout}:img`,
          ]),
        );
      const unpack = () =>
        seconds(() =>
          // Its one line about the rootfs is not the bench's to print.
          execFileSync(
            '/usr/bin/umoci',
            ['raw', 'unpack', '--image', `${layout}:img`, join(work, `rootfs-${round}`)],
            {
              stdio: 'ignore',
            },
          ),
        );
      // Whichever goes first reads the registry's files from disk: the order alternates by round.
      const berth = () => timed(s!, { ...plain, image: ref }, 'running');
      let berthMs: number;
      let skopeoS: number;
      let unpackS: number;
      if (round % 2 === 0) {
        berthMs = await berth();
        skopeoS = skopeo();
        unpackS = unpack();
      } else {
        skopeoS = skopeo();
        unpackS = unpack();
        berthMs = await berth();
      }
      pulls.push({ megabytes, berthS: berthMs / 1000, skopeoS, skopeoUnpackS: skopeoS + unpackS });
      rmSync(join(work, `rootfs-${round}`), { recursive: true, force: true });
      rmSync(layout, { recursive: true, force: true });
    }
    return { plainMs, cachedMs, pulls };
  } finally {
    await s?.stop();
    await registry.close();
    rmSync(work, { recursive: true, force: true });
  }
}

export function printImagesBench(r: ImagesBenchResult): void {
  const line = (name: string, ms: number[]) =>
    `  ${name}: p50 ${fmt(quantile(ms, 0.5), 1)} ms, p99 ${fmt(quantile(ms, 0.99), 1)} ms (${ms.length} jobs, one at a time)`;
  console.log(line('a no-op job, no image, submit → ended', r.plainMs));
  console.log(line('the same in a cached image         ', r.cachedMs));
  console.log(
    `  a cached image costs a job: +${fmt(quantile(r.cachedMs, 0.5) - quantile(r.plainMs, 0.5), 1)} ms at the median, +${fmt(quantile(r.cachedMs, 0.99) - quantile(r.plainMs, 0.99), 1)} ms at p99`,
  );
  for (const [i, p] of r.pulls.entries())
    console.log(
      `  cold pull ${i + 1}, ${p.megabytes} MB: berth submit → running ${fmt(p.berthS, 2)} s; skopeo copy alone ${fmt(p.skopeoS, 2)} s (ratio ${fmt(p.berthS / p.skopeoS, 2)}); skopeo copy + umoci raw unpack ${fmt(p.skopeoUnpackS, 2)} s (ratio ${fmt(p.berthS / p.skopeoUnpackS, 2)})`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) printImagesBench(await runImagesBench());
