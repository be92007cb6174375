/**
 * What this server does with a committed change (notices.ts): its controller port acts on it, and
 * the live streams hear of it. On a follower the port keeps its queue models and does nothing else:
 * the leader heard of the change from the unit's own transaction.
 */
import type { ControllerCommands, ControllerReadModel } from '../../controller/port.js';
import type { ChangeFeed } from './change-feed.js';
import { cancelEach, cancelTasks } from '../jobs/job-arrays.js';
import type { Notice, NoticeSubscriber } from './notices.js';

type Port = ControllerCommands & Pick<ControllerReadModel, 'isActive'>;

/** The controller port in use when a notice comes (it changes as leadership moves). */
export function controllerHears(port: () => Port): NoticeSubscriber {
  return async (n: Notice) => {
    const c = port();
    switch (n.kind) {
      case 'submitted':
        return c.jobSubmitted(n.record);
      case 'array-submitted':
        for (const record of n.records) await c.jobSubmitted(record);
        return;
      case 'cancel':
        return c.cancel(n.id, n.by);
      case 'array-cancel':
        return cancelTasks(c, n.taskIds, n.by);
      case 'queue':
        return c.queueChanged(n.name, n.queue);
      case 'weight':
        return c.setProjectWeight(n.project, n.weight);
      case 'access':
        return c.projectsChanged([n.access]);
      case 'project':
        return;
      case 'project-deleted':
        c.projectDeleted(n.project, n.archivedAs, n.jobIds);
        return cancelEach(c, n.jobIds, n.by);
    }
  };
}

/** The change feed the live streams read (api/stream-hub.ts). */
export function feedHears(changes: ChangeFeed): NoticeSubscriber {
  return (n: Notice) => {
    switch (n.kind) {
      case 'submitted':
      case 'array-submitted': {
        const head = n.kind === 'submitted' ? n.record : n.records[0]!;
        return changes.publish({
          kind: 'job',
          id: head.id,
          project: head.project,
          state: 'queued',
          reason: head.reason,
        });
      }
      case 'cancel':
        return changes.publish({
          kind: 'job',
          id: n.id,
          project: n.project,
          state: n.state,
          reason: `cancelled by ${n.by}`,
        });
      case 'queue':
        return changes.publish({ kind: 'queue', name: n.name });
      case 'project':
      case 'access':
      case 'project-deleted':
        return changes.publish({ kind: 'project', name: n.kind === 'access' ? n.access.name : n.project });
      case 'weight':
      case 'array-cancel':
        return;
    }
  };
}
