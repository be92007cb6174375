/**
 * The `semaphore` well: pure capacity (software licences, an external API's concurrency limit).
 * There is nothing to make or destroy; the controller's capacity accounting is the whole point.
 * No slot number is handed out: after a restart the well could not know which slots are taken.
 */
import type { InstanceRequest, Metadata, Well } from './well.js';

export class SemaphoreWell implements Well {
  readonly kind = 'semaphore';

  constructor(
    readonly type: string,
    readonly capacity: number,
  ) {}

  async create(_req: InstanceRequest): Promise<Metadata> {
    return {};
  }

  async destroy(_req: InstanceRequest, _metadata: Metadata | null): Promise<void> {}

  async close(): Promise<void> {}
}
