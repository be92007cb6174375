/**
 * Pure parsing of what Slurm's CLI prints (22.05): hostlists, time strings, and squeue records in
 * the delimited format that SQUEUE_FORMAT asks for. No processes here; slurm-cli.ts runs them.
 */

/** One job as squeue reports it. */
export interface SlurmJob {
  /** Slurm's job id (for array jobs "123_4"). */
  id: string;
  name: string;
  /** PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ... */
  state: string;
  /** Why it is in that state: None, Resources, Priority, JobHeldUser, PartitionNodeLimit, ... */
  reason: string;
  /** Allocated hostnames, expanded (n[1-3] -> n1, n2, n3); empty while pending. */
  nodes: string[];
  /** Seconds until its time limit; null for no limit, unknown, or a job that has ended. */
  timeLeftSeconds: number | null;
  /** Once ended: the batch script's exit status, or null when a signal ended it. */
  exitCode: number | null;
  /** Once ended: the signal that ended the batch script, if one did. */
  exitSignal: number | null;
}

/** States after which the job runs no more (squeue keeps showing them for MinJobAge seconds). */
const ENDED_STATES = new Set([
  'BOOT_FAIL',
  'CANCELLED',
  'COMPLETED',
  'DEADLINE',
  'FAILED',
  'NODE_FAIL',
  'OUT_OF_MEMORY',
  'PREEMPTED',
  'REVOKED',
  'TIMEOUT',
]);

export const isEndedState = (state: string): boolean => ENDED_STATES.has(state);

/** Between fields: a control character no field but the name can hold. */
export const FIELD_SEP = '\x1f';
/** After each record (squeue adds '\n'): lets a name hold even a newline. */
export const RECORD_SEP = '\x1e';

/**
 * squeue's --Format fields, in the order parseSqueue reads them. Width 0 means "as wide as needed"
 * (a width truncates, and no width pads to 20); the name comes last so that anything in it, even
 * FIELD_SEP, ends up in the name. exit_code is the raw wait status (768 = exit 3, 15 = SIGTERM).
 */
const FIELDS = ['JobID', 'State', 'Reason', 'NodeList', 'TimeLeft', 'exit_code', 'Name'] as const;

export const SQUEUE_FORMAT = FIELDS.map(
  (f, i) => `${f}:0${i === FIELDS.length - 1 ? RECORD_SEP : FIELD_SEP}`,
).join(',');

/** Parses squeue's output for SQUEUE_FORMAT into jobs. */
export function parseSqueue(stdout: string): SlurmJob[] {
  const records = stdout.split(`${RECORD_SEP}\n`);
  const rest = records.pop();
  if (rest !== undefined && rest.trim() !== '') throw new Error(`squeue: unterminated record ${quote(rest)}`);
  return records.map(parseRecord);
}

function parseRecord(record: string): SlurmJob {
  const parts = record.split(FIELD_SEP);
  const fixed = FIELDS.length - 1;
  if (parts.length < FIELDS.length) throw new Error(`squeue: malformed record ${quote(record)}`);
  const [id = '', state = '', reason = '', nodeList = '', timeLeft = '', status = ''] = parts;
  const ended = isEndedState(state);
  const exit = ended ? decodeWaitStatus(status) : { exitCode: null, exitSignal: null };
  return {
    id,
    name: parts.slice(fixed).join(FIELD_SEP),
    state,
    reason,
    nodes: expandHostlist(nodeList),
    // An ended job still shows its limit: meaningless, so null.
    timeLeftSeconds: ended ? null : timeLeftOf(timeLeft),
    ...exit,
  };
}

/**
 * slurmctld gives a job without a time limit an end time one year after its start, and squeue
 * then shows that (364-23:59:59 and less) instead of UNLIMITED for some moments: no job asks
 * berth for a year, so anything that long is no limit.
 */
const NO_LIMIT_SECONDS = 364 * 86_400;

function timeLeftOf(text: string): number | null {
  const seconds = parseSlurmTime(text);
  return seconds === null || seconds >= NO_LIMIT_SECONDS ? null : seconds;
}

/** A wait(2) status as Slurm stores it: exit status in the high byte, signal in the low bits. */
export function decodeWaitStatus(text: string): { exitCode: number | null; exitSignal: number | null } {
  if (!/^\d+$/.test(text)) return { exitCode: null, exitSignal: null };
  const status = Number(text);
  const signal = status & 0x7f;
  return signal === 0
    ? { exitCode: (status >> 8) & 0xff, exitSignal: null }
    : { exitCode: null, exitSignal: signal };
}

/**
 * Seconds in a Slurm time string, by Slurm's own grammar: "minutes", "minutes:seconds",
 * "hours:minutes:seconds", "days-hours", "days-hours:minutes", "days-hours:minutes:seconds".
 * squeue prints only the last three colon forms ("4:05" is 4 min 5 s); a bare "4" is 4 minutes.
 * null for UNLIMITED, INFINITE, NOT_SET, INVALID (a negative value), empty or unparsable text.
 */
export function parseSlurmTime(text: string): number | null {
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(text.trim());
  if (!m) return null;
  const [, days, a = '0', b, c] = m;
  const n = (s: string | undefined): number => (s === undefined ? 0 : Number(s));
  if (days !== undefined) return n(days) * 86_400 + n(a) * 3600 + n(b) * 60 + n(c);
  if (c !== undefined) return n(a) * 3600 + n(b) * 60 + n(c);
  if (b !== undefined) return n(a) * 60 + n(b);
  return n(a) * 60;
}

/** More hosts than any real allocation: a guard against a malformed range like n[1-999999999]. */
const MAX_HOSTS = 100_000;

/**
 * Expands a Slurm hostlist: "n[1-3]" -> n1 n2 n3, "n[1,3-4],m5" -> n1 n3 n4 m5, "node[01-03]"
 * keeps the zero padding (the width of the range's lower bound, as Slurm does). Several bracket
 * groups in one name multiply out. Empty text (a pending job) is no hosts.
 */
export function expandHostlist(list: string): string[] {
  const hosts = splitTopLevel(list.trim()).flatMap(expandHost);
  if (hosts.length > MAX_HOSTS) throw new Error(`hostlist: more than ${MAX_HOSTS} hosts in ${quote(list)}`);
  return hosts;
}

/** Splits at commas outside brackets. */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(list.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw new Error(`hostlist: unbalanced brackets in ${quote(list)}`);
  }
  if (depth !== 0) throw new Error(`hostlist: unbalanced brackets in ${quote(list)}`);
  parts.push(list.slice(start));
  return parts.filter((p) => p !== '');
}

/** One host expression: literal text and bracket groups, multiplied out left to right. */
function expandHost(expr: string): string[] {
  let names = [''];
  for (const [, literal, group] of expr.matchAll(/([^[]+)|\[([^\]]*)\]/g)) {
    const pieces = literal !== undefined ? [literal] : expandGroup(group ?? '', expr);
    names = names.flatMap((prefix) => pieces.map((p) => prefix + p));
    if (names.length > MAX_HOSTS) throw new Error(`hostlist: more than ${MAX_HOSTS} hosts in ${quote(expr)}`);
  }
  return names;
}

/** The inside of one bracket group: "1,3-4" or "01-03". */
function expandGroup(group: string, expr: string): string[] {
  return group.split(',').flatMap((item) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(item);
    if (!m) throw new Error(`hostlist: bad range ${quote(item)} in ${quote(expr)}`);
    const [, lo = '', hi = lo] = m;
    const from = Number(lo);
    const to = Number(hi);
    if (to < from) throw new Error(`hostlist: descending range ${quote(item)} in ${quote(expr)}`);
    if (to - from >= MAX_HOSTS) throw new Error(`hostlist: more than ${MAX_HOSTS} hosts in ${quote(expr)}`);
    return Array.from({ length: to - from + 1 }, (_, k) => String(from + k).padStart(lo.length, '0'));
  });
}

const quote = (s: string): string => JSON.stringify(s.length > 200 ? `${s.slice(0, 200)}…` : s);
