/** `GET /health`: the server is up, and which replica leads (one server alone always does). */
export interface Health {
  status: 'ok';
  version: string;
  /** Whether this server runs the scheduler (`leader`) or hands that to another (`follower`). */
  role: 'leader' | 'follower';
  /** The leader's term: grows by one at every election (1 for a server on SQLite). */
  term: number;
  /** Where the leader serves the API; null while none leads. */
  leader: string | null;
}
