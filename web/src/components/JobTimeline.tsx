/**
 * A job's attempts on a time axis (a small Gantt chart): per attempt, a row with its wait in the
 * queue (from submission, or from the end of the attempt before, to admission), its start (from
 * admission to the start of its run: resources and a worker), and its run, coloured by how it
 * ended. Built from the job's timeline (`GET /jobs/{id}/events`), which the page reads again at
 * every change of the job; while the job is unfinished, its open bar grows with the clock.
 *
 * Plain SVG rather than the chart library: uPlot draws series of points over x, and a bar from
 * one time to another per row would need a custom path builder; here each bar is an element with
 * its own title and data attributes, which screen readers and tests can read, for no bundle cost.
 */
import { useLayoutEffect, useRef, useState } from 'react';
import '../charts.css';
import { formatDuration } from '../format.js';
import { useNow } from '../hooks.js';
import { isFinished, type JobEvent, type JobState } from '../types.js';
import { Section } from './Section.js';

/** How an attempt ended, or where it stands. */
type Outcome =
  'retried' | 'requeued' | 'succeeded' | 'failed' | 'cancelled' | 'running' | 'starting' | 'waiting';

export interface AttemptSpan {
  attempt: number;
  /** Epoch ms: when it began to wait (submission, or the end of the attempt before). */
  queued: number;
  admitted: number | null;
  started: number | null;
  ended: number | null;
  outcome: Outcome;
}

const ENDINGS: Record<string, Outcome> = {
  retrying: 'retried',
  requeued: 'requeued',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** The attempts of a job, from its events in order. */
export function attemptSpans(events: JobEvent[]): AttemptSpan[] {
  const spans: AttemptSpan[] = [];
  let current: AttemptSpan | null = null;
  for (const e of events) {
    const at = Date.parse(e.at);
    if (e.type === 'submitted') {
      current = { attempt: 1, queued: at, admitted: null, started: null, ended: null, outcome: 'waiting' };
      continue;
    }
    if (!current) continue;
    if (e.type === 'admitted' && current.admitted === null) current.admitted = at;
    else if (e.type === 'started' && current.started === null) current.started = at;
    const ending = ENDINGS[e.type];
    if (ending) {
      spans.push({ ...current, ended: at, outcome: ending });
      const again = ending === 'retried' || ending === 'requeued';
      current = again
        ? {
            attempt: current.attempt + 1,
            queued: at,
            admitted: null,
            started: null,
            ended: null,
            outcome: 'waiting',
          }
        : null;
    }
  }
  if (current) {
    const outcome = current.started !== null ? 'running' : current.admitted !== null ? 'starting' : 'waiting';
    spans.push({ ...current, outcome });
  }
  return spans;
}

/** "0.4s", "12s", "3m 4s". */
function span(ms: number): string {
  return ms < 10_000 ? `${(Math.max(0, ms) / 1000).toFixed(1).replace(/\.0$/, '')}s` : formatDuration(ms);
}

const OUTCOME_TEXT: Record<Outcome, string> = {
  retried: 'failed, retried',
  requeued: 'evicted, requeued',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  running: 'running',
  starting: 'getting resources or a worker',
  waiting: 'waiting in the queue',
};

/** One attempt in words: "Attempt 1: waited 2s, started in 0.3s, ran 1.2s, failed, retried." */
function describe(s: AttemptSpan, now: number): string {
  const parts = [`waited ${span((s.admitted ?? s.ended ?? now) - s.queued)}`];
  if (s.admitted !== null) parts.push(`started in ${span((s.started ?? s.ended ?? now) - s.admitted)}`);
  if (s.started !== null) parts.push(`ran ${span((s.ended ?? now) - s.started)}`);
  return `Attempt ${s.attempt}: ${parts.join(', ')}; ${OUTCOME_TEXT[s.outcome]}.`;
}

const TICK_STEPS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
].map((s) => s * 1000);

const LABEL_W = 84;
const ROW_H = 26;
const BAR_H = 14;
const AXIS_H = 34;
const MIN_TICK_PX = 90;

function Gantt({ spans, now }: { spans: AttemptSpan[]; now: number }) {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(600);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(280, el.clientWidth));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const t0 = spans[0]?.queued ?? now;
  const t1 = Math.max(t0 + 1000, ...spans.map((s) => s.ended ?? now));
  const plotW = width - LABEL_W - 12;
  const x = (t: number) => LABEL_W + ((t - t0) / (t1 - t0)) * plotW;
  const step = TICK_STEPS.find((s) => (s / (t1 - t0)) * plotW >= MIN_TICK_PX) ?? 86_400_000;
  const ticks: number[] = [];
  for (let t = 0; t <= t1 - t0; t += step) ticks.push(t);
  const height = spans.length * ROW_H + AXIS_H;
  const bar = (
    part: string,
    cls: string,
    from: number,
    to: number,
    row: number,
    title: string,
    outcome?: Outcome,
  ) => (
    <rect
      data-part={part}
      data-outcome={outcome}
      className={cls}
      x={x(from)}
      y={row * ROW_H + (ROW_H - BAR_H) / 2}
      width={Math.max(2, x(to) - x(from))}
      height={BAR_H}
      rx={2}
    >
      <title>{title}</title>
    </rect>
  );

  return (
    <div ref={ref}>
      <svg
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`Attempts on a time axis from submission. ${spans.map((s) => describe(s, now)).join(' ')}`}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line className="gantt-tick" x1={x(t0 + t)} x2={x(t0 + t)} y1={0} y2={spans.length * ROW_H + 4} />
            <text className="gantt-axis" x={x(t0 + t)} y={spans.length * ROW_H + 16} textAnchor="middle">
              {t === 0 ? '0' : `+${span(t)}`}
            </text>
          </g>
        ))}
        <text className="gantt-axis" x={LABEL_W + plotW / 2} y={height - 2} textAnchor="middle">
          time since submission
        </text>
        {spans.map((s, row) => {
          const waitEnd = s.admitted ?? s.ended ?? now;
          return (
            <g key={s.attempt} data-attempt={s.attempt} data-outcome={s.outcome}>
              <text className="gantt-label" x={0} y={row * ROW_H + ROW_H / 2 + 4}>
                Attempt {s.attempt}
              </text>
              {bar(
                'wait',
                'gantt-wait',
                s.queued,
                waitEnd,
                row,
                `Attempt ${s.attempt}: waited ${span(waitEnd - s.queued)} in the queue`,
              )}
              {s.admitted !== null &&
                bar(
                  'start',
                  'gantt-start',
                  s.admitted,
                  s.started ?? s.ended ?? now,
                  row,
                  `Attempt ${s.attempt}: got resources and a worker in ${span((s.started ?? s.ended ?? now) - s.admitted)}`,
                )}
              {s.started !== null &&
                bar(
                  'run',
                  'gantt-run',
                  s.started,
                  s.ended ?? now,
                  row,
                  `Attempt ${s.attempt}: ran ${span((s.ended ?? now) - s.started)}; ${OUTCOME_TEXT[s.outcome]}`,
                  s.outcome,
                )}
            </g>
          );
        })}
      </svg>
    </div>
  );
}

/** The open bar of an unfinished job grows each second. */
function LiveGantt({ spans }: { spans: AttemptSpan[] }) {
  const now = useNow();
  return <Gantt spans={spans} now={now} />;
}

export function JobTimeline({ state, events }: { state: JobState; events: JobEvent[] | null }) {
  const spans = events ? attemptSpans(events) : [];
  if (spans.length === 0) return null;
  const finished = isFinished(state);
  const lastEvent = events?.at(-1);
  return (
    <Section title="Attempts over time" className="gantt">
      {finished ? (
        <Gantt spans={spans} now={lastEvent ? Date.parse(lastEvent.at) : Date.now()} />
      ) : (
        <LiveGantt spans={spans} />
      )}
      <ul className="legend gantt-legend" aria-label="Attempts over time: legend">
        <li>
          <span className="swatch gantt-wait" aria-hidden="true" /> waiting in the queue
        </li>
        <li>
          <span className="swatch gantt-start" aria-hidden="true" /> getting resources and a worker
        </li>
        <li>
          <span className="swatch gantt-run-ok" aria-hidden="true" /> ran, succeeded
        </li>
        <li>
          <span className="swatch gantt-run-failed" aria-hidden="true" /> ran, failed
        </li>
        <li>
          <span className="swatch gantt-run-requeued" aria-hidden="true" /> ran, evicted
        </li>
        <li>
          <span className="swatch gantt-run-running" aria-hidden="true" /> running
        </li>
      </ul>
    </Section>
  );
}
