/**
 * The `token` well: a berth API token limited to the job's project and valid only while the job
 * runs. By default it may only read that project (`access: read`); `access: submit` also lets it
 * submit and cancel jobs there. What each access allows is decided in service/tenancy/access.ts. The
 * well does not know the store; the server injects a TokenMinter that does.
 */
import { DEFAULT_PROJECT_TOKEN_ACCESS, type ProjectTokenAccess } from '../domain/project-token-access.js';
import { WellError, type InstanceRequest, type Metadata, type Well } from './well.js';

export interface TokenMinter {
  /**
   * Issues a token for `req.project` with `access` there, tied to `req.instanceId`; `url` is where
   * the API is served.
   */
  mint(req: InstanceRequest, access: ProjectTokenAccess): Promise<{ token: string; url: string }>;
  /**
   * Revokes the token of `req.instanceId`. Called with no metadata after a crash, so it must find
   * the token by instance id, and succeed when there is none (never minted, or already revoked).
   */
  revoke(req: InstanceRequest): Promise<void>;
}

export class TokenWell implements Well {
  readonly kind = 'token';

  constructor(
    readonly type: string,
    readonly capacity: number,
    private readonly minter: TokenMinter,
    /** From berth.yaml's `access`; the least (read only) unless widened there. */
    readonly access: ProjectTokenAccess = DEFAULT_PROJECT_TOKEN_ACCESS,
  ) {}

  async create(req: InstanceRequest): Promise<Metadata> {
    try {
      const { token, url } = await this.minter.mint(req, this.access);
      return { token, url, project: req.project };
    } catch (e) {
      throw this.wrap('cannot mint a token', e);
    }
  }

  async destroy(req: InstanceRequest, _metadata: Metadata | null): Promise<void> {
    try {
      await this.minter.revoke(req);
    } catch (e) {
      throw this.wrap('cannot revoke the token', e);
    }
  }

  async close(): Promise<void> {}

  private wrap(what: string, e: unknown): WellError {
    if (e instanceof WellError) return e;
    return new WellError(`token well "${this.type}": ${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
