/**
 * What replicas tell each other over PostgreSQL's LISTEN/NOTIFY (store/pg-bus.ts). Control
 * messages reach the leader, which applies them to its controller; every replica also re-reads
 * the store when the bus reconnects, so a message lost meanwhile only delays a change.
 */
import type { ChangeNotice } from '../service/live/change-feed.js';

export type { ControlMessage } from '../service/live/control.js';

/** To the leader: a committed change its controller must act on. */
export const CONTROL = 'berth_control';
/** Between all replicas: the change feed's notices, for every replica's live streams. */
export const CHANGES = 'berth_changes';
/** Leadership moved: a leader was elected or gave its lease up. */
export const LEADERSHIP = 'berth_leadership';
/** The leader published new live figures (`live_figures`). */
export const FIGURES = 'berth_figures';

/** A change notice as relayed: who sent it, so that a replica skips its own. */
export interface RelayedNotice {
  from: string;
  notice: ChangeNotice;
}

export type LeadershipMessage = { kind: 'elected' | 'resigned'; term: number; url: string; holder: string };
