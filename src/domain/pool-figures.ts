/** A factory or a resource type as the API shows it: capacity, what is in use, who waits. */
export interface PoolFigures {
  name: string;
  kind: string;
  capacity: number;
  inUse: number;
  waiting: number;
}
