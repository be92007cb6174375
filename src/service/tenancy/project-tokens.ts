/**
 * Mints the tokens the `token` well hands to jobs: limited to the job's project with the access
 * the well is configured with (read by default; what each allows is in access.ts), stored hashed
 * like every token, and deleted when the instance is destroyed — so it is valid only while the
 * job holds it.
 */
import { appendEvent } from '../../store/queries/events.js';
import { deleteTokensLabelled, insertToken } from '../../store/queries/tokens.js';
import type { InstanceRequest } from '../../wells/well.js';
import type { ServiceContext } from '../context.js';
import type { ProjectTokenAccess } from '../../domain/project-token-access.js';
import { hashToken, newToken } from '../../domain/tokens.js';

const label = (req: InstanceRequest) => `resource-instance:${req.instanceId}`;

export class ProjectTokenMinter {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly serverUrl: () => string,
  ) {}

  async mint(req: InstanceRequest, access: ProjectTokenAccess): Promise<{ token: string; url: string }> {
    const token = newToken('user');
    await this.ctx.store.transaction(async (db) => {
      const now = this.ctx.now();
      await insertToken(
        db,
        {
          hash: hashToken(token),
          userId: null,
          jobId: req.jobId,
          label: label(req),
          expiresAt: null,
          scope: req.project,
          access,
        },
        now,
      );
      await appendEvent(
        db,
        {
          subjectKind: 'job',
          subject: String(req.jobId),
          project: req.project,
          jobId: req.jobId,
          type: 'token-minted',
          message: `project token for ${req.project} (access: ${access}) made for resource ${req.type} (instance ${req.instanceId})`,
        },
        now,
      );
    });
    return { token, url: this.serverUrl() };
  }

  async revoke(req: InstanceRequest): Promise<void> {
    await this.ctx.store.transaction((db) => deleteTokensLabelled(db, label(req)));
  }
}
