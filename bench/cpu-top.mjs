// Top self-time functions of a .cpuprofile: node bench/cpu-top.mjs FILE [N]
import { readFileSync } from 'node:fs';

const [file, n = '30'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const dt = new Map();
for (let i = 0; i < profile.samples.length; i++)
  dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
const self = new Map();
let total = 0;
for (const [id, us] of dt) {
  const { callFrame: f } = byId.get(id);
  const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + us);
  total += us;
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(n));
console.log(`total ${(total / 1e6).toFixed(2)} s`);
for (const [key, us] of rows)
  console.log(
    `${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`,
  );
