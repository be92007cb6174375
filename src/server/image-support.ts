/** Which targets' jobs may run in an OCI image on this server, judged once at its start. */
import type { Config } from '../config/schema.js';
import { imagesUnsupported } from '../config/targets.js';
import type { FactoryIsolation } from '../factories/isolation.js';
import { imageLayersDir, layersRefusal } from '../factories/worker-images.js';

/**
 * Per target whose jobs cannot run in an image, why (`refused`); and why no local factory's job
 * can (`layers`: where their layers would go, overlayfs cannot write), said at start.
 */
export function imageSupport(
  config: Config,
  dataDir: string,
  isolation: Map<string, FactoryIsolation>,
): { refused: Record<string, string>; layers?: string } {
  const layers = Object.values(config.factories).some((f) => f.kind === 'local')
    ? layersRefusal(imageLayersDir(config, dataDir))
    : undefined;
  return { refused: imagesRefused(config, isolation, layers), ...(layers ? { layers } : {}) };
}

/**
 * Per target whose jobs cannot run in an image, why: images run on a local factory's workers
 * and a slurm factory's agents, in namespaces of their own (agent/sandbox.ts): a local factory's
 * are known here; a Slurm node's agent says at the job's start if it has none.
 */
function imagesRefused(
  config: Config,
  isolation: Map<string, FactoryIsolation>,
  layers: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, t] of Object.entries(config.targets)) {
    const f = config.factories[t.factory];
    if (!f) continue;
    const unsupported = imagesUnsupported(t.factory, f);
    if (unsupported) out[name] = unsupported;
    else if (f.kind === 'local' && !isolation.get(t.factory)?.sandbox)
      out[name] =
        `its factory "${t.factory}" runs jobs without namespaces of their own (namespaces: off, or bubblewrap missing), which images need`;
    else if (f.kind === 'local' && layers) out[name] = layers;
  }
  return out;
}
