/**
 * Artifacts: a running job's agent uploads them (job token, streamed); whoever may read the job's
 * logs lists and downloads them. A name may hold slashes (`results/a.csv`): the download's path
 * ends with it as it is (`/jobs/7/artifacts/results/a.csv`; percent-encoded slashes work too).
 */
import { Readable } from 'node:stream';
import { basename } from 'node:path/posix';
import { running, type ServiceContext } from '../../service/context.js';
import { jobArtifacts, openArtifact, uploadArtifact } from '../../service/jobs/artifacts.js';
import { JobParams } from '../job-schemas.js';
import { ArtifactListQuery, ArtifactParams, ArtifactQuery, UploadQuery } from '../artifact-schemas.js';
import { jobId } from './agent.js';
import type { Router } from './types.js';

const OCTETS = 'application/octet-stream';

/** `attachment; filename="a.csv"; filename*=UTF-8''a.csv` (RFC 6266), an ASCII fallback first. */
function attachment(name: string): string {
  const file = basename(name);
  const ascii = file.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file)}`;
}

export async function artifactRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['artifacts'];
  // The upload's body is handed over as the request stream, never buffered: only in this
  // context (a plugin of its own), so no other route takes octet streams.
  await api.register(async (agent: Router) => {
    agent.addContentTypeParser(OCTETS, (_req, payload, done) => done(null, payload));
    agent.post(
      '/job/self/artifacts',
      {
        config: { leader: 'only' },
        schema: {
          tags: ['agent'],
          summary:
            "Agent: keep a file of the job's run as an artifact (body application/octet-stream, streamed). 413 when it would take the run's artifacts past artifacts.maxBytesPerJob",
          querystring: UploadQuery,
        },
      },
      async (req, reply) => {
        const id = jobId(req.principal);
        const body = req.body instanceof Readable ? req.body : Readable.from([]);
        const declared = req.headers['content-length'];
        const length = declared === undefined ? undefined : Number(declared);
        const artifact = await uploadArtifact(running(ctx), id, req.query.name, body, length);
        return reply.status(201).send(artifact);
      },
    );
  });
  api.get(
    '/jobs/:id/artifacts',
    {
      schema: {
        tags,
        summary:
          "A job's artifacts, run by run, a page at a time: name, attempt, size, sha256, createdAt. X-Total-Count says how many the job has, X-Next-Cursor where the next page starts (absent on the last)",
        params: JobParams,
        querystring: ArtifactListQuery,
      },
    },
    async (req, reply) => {
      const page = await jobArtifacts(ctx, req.principal, req.params.id, req.query);
      void reply.header('x-total-count', String(page.total));
      if (page.nextCursor !== undefined) void reply.header('x-next-cursor', page.nextCursor);
      return page.artifacts;
    },
  );
  api.get(
    '/jobs/:id/artifacts/*',
    {
      schema: {
        tags,
        summary:
          "Download an artifact (application/octet-stream, as an attachment); the path ends with its name, slashes and all. Default: the latest run's",
        params: ArtifactParams,
        querystring: ArtifactQuery,
      },
    },
    async (req, reply) => {
      const { artifact, body } = await openArtifact(
        running(ctx),
        req.principal,
        req.params.id,
        req.params['*'],
        req.query.attempt,
      );
      return reply
        .header('content-type', OCTETS)
        .header('content-length', String(artifact.size))
        .header('content-disposition', attachment(artifact.name))
        .header('x-content-type-options', 'nosniff')
        .header('x-artifact-attempt', String(artifact.attempt))
        .header('x-artifact-sha256', artifact.sha256)
        .send(body);
    },
  );
}
