/**
 * A terminal inside a running job, in the page (xterm.js): `sh` run with a terminal of its own
 * (exec), or an interactive job's own terminal (attach), over the API's WebSocket
 * (`GET /jobs/{id}/exec`, `/attach`: api/routes/exec.ts) in exec's channel-numbered binary
 * frames. A browser's WebSocket sends no Authorization header: the token goes as a subprotocol
 * (api.ts `socketProtocols`). Its size follows its container's; closing it ends the shell (an
 * attach lets go of the job's terminal, and the job runs on).
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal as XTerm } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import { currentToken, socketProtocols, socketRefusal, socketUrl } from '../api.js';
import { EXEC_CHANNEL } from '../../../src/domain/exec-protocol.js';
import { Section } from './Section.js';
import { ErrorAlert } from './Status.js';

export type TerminalMode = 'exec' | 'attach';

type Phase =
  | { kind: 'connecting' }
  | { kind: 'open' }
  /** Its command ended (or the connection did), saying how. */
  | { kind: 'ended'; text: string }
  /** The server refused the upgrade, saying why. */
  | { kind: 'refused'; text: string };

/** What the server says when a session ends (channel 3). */
interface ExitStatus {
  exitCode?: number | null;
  signal?: string | number | null;
  message?: string;
}

/** The path (with its query) of the session `mode` opens in job `job` at a size. */
function sessionPath(job: number, mode: TerminalMode, cols: number, rows: number): string {
  const size = `cols=${cols}&rows=${rows}`;
  return mode === 'exec' ? `/jobs/${job}/exec?command=sh&tty=true&${size}` : `/jobs/${job}/attach?${size}`;
}

function endOf(status: ExitStatus): string {
  if (status.message) return status.message;
  if (status.signal !== null && status.signal !== undefined) return `ended by signal ${status.signal}`;
  if (typeof status.exitCode === 'number') return `exited with code ${status.exitCode}`;
  return 'ended';
}

function closeOf(e: CloseEvent): string {
  if (e.reason) return `the connection closed: ${e.reason}`;
  return e.code === 1006 ? 'the connection was lost' : `the connection closed (${e.code})`;
}

const frame = (channel: number, data: Uint8Array): Uint8Array => {
  const f = new Uint8Array(data.length + 1);
  f[0] = channel;
  f.set(data, 1);
  return f;
};

const GENERIC_REFUSAL = 'The server refused the terminal. Reload the page to see whether the job still runs.';

export function Terminal({ job, mode, onClose }: { job: number; mode: TerminalMode; onClose: () => void }) {
  const screen = useRef<HTMLDivElement>(null);
  const [phase, setPhase] = useState<Phase>({ kind: 'connecting' });

  useEffect(() => {
    const el = screen.current;
    if (!el) return;
    let disposed = false;
    const term = new XTerm({
      cursorBlink: true,
      fontFamily:
        "ui-monospace, 'SFMono-Regular', 'Cascadia Mono', 'DejaVu Sans Mono', Menlo, Consolas, monospace",
      fontSize: 13,
      scrollback: 5000,
      theme: { background: '#14181d', foreground: '#e6e9ed' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    fit.fit();
    setPhase({ kind: 'connecting' });

    const path = sessionPath(job, mode, term.cols, term.rows);
    const ws = new WebSocket(socketUrl(path), socketProtocols(currentToken() ?? ''));
    ws.binaryType = 'arraybuffer';
    const encoder = new TextEncoder();
    const send = (channel: number, data: Uint8Array) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(frame(channel, data));
    };
    const sendSize = () =>
      send(EXEC_CHANNEL.resize, encoder.encode(JSON.stringify({ cols: term.cols, rows: term.rows })));
    let opened = false;
    let ended = false;
    const end = (p: Phase) => {
      ended = true;
      term.options.disableStdin = true;
      term.options.cursorBlink = false;
      if (!disposed) setPhase(p);
    };

    ws.onopen = () => {
      opened = true;
      setPhase({ kind: 'open' });
      // Its size may have changed while it connected.
      sendSize();
      term.focus();
    };
    ws.onmessage = (e: MessageEvent<ArrayBuffer | string>) => {
      if (typeof e.data === 'string') return;
      const bytes = new Uint8Array(e.data);
      const channel = bytes[0];
      if (channel === EXEC_CHANNEL.stdout || channel === EXEC_CHANNEL.stderr) term.write(bytes.subarray(1));
      else if (channel === EXEC_CHANNEL.status) {
        let status: ExitStatus = {};
        try {
          status = JSON.parse(new TextDecoder().decode(bytes.subarray(1))) as ExitStatus;
        } catch {
          // said as "ended"
        }
        end({ kind: 'ended', text: endOf(status) });
      }
    };
    ws.onclose = (e) => {
      if (disposed || ended) return;
      if (opened) return end({ kind: 'ended', text: closeOf(e) });
      // The upgrade was refused: a browser does not say why, the same request as a GET does.
      ended = true;
      void socketRefusal(path).then((why) => {
        if (!disposed) setPhase({ kind: 'refused', text: why ?? GENERIC_REFUSAL });
      });
    };

    const typed = term.onData((data) => send(EXEC_CHANNEL.stdin, encoder.encode(data)));
    // Bytes that are no text (some mouse reports): each character one byte.
    const binary = term.onBinary((data) =>
      send(
        EXEC_CHANNEL.stdin,
        Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff),
      ),
    );
    const resized = term.onResize(sendSize);
    // Fitted in the next frame: a fit inside the observer's callback would be a loop it reports.
    let pending = 0;
    const observer = new ResizeObserver(() => {
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => fit.fit());
    });
    observer.observe(el);

    return () => {
      disposed = true;
      cancelAnimationFrame(pending);
      observer.disconnect();
      typed.dispose();
      binary.dispose();
      resized.dispose();
      ws.onmessage = null;
      ws.onclose = null;
      // A socket still connecting is closed once open (closing it before logs a warning).
      if (ws.readyState === WebSocket.CONNECTING) ws.onopen = () => ws.close(1000, 'closed');
      else {
        ws.onopen = null;
        ws.close(1000, 'closed');
      }
      term.dispose();
    };
  }, [job, mode]);

  let status: string;
  if (phase.kind === 'connecting') status = 'Connecting…';
  else if (phase.kind === 'open')
    status =
      mode === 'exec'
        ? `A shell inside job ${job}: closing the terminal ends it.`
        : `Attached to job ${job}'s terminal: closing lets go of it, and the job runs on.`;
  else if (phase.kind === 'ended') status = `Ended: ${phase.text.replace(/\.$/, '')}.`;
  else status = '';

  return (
    <Section title="Terminal" className="terminal-section">
      <div className="terminal-bar">
        <p className="muted terminal-status" role="status">
          {status}
        </p>
        <button type="button" className="button-quiet" onClick={onClose}>
          Close terminal
        </button>
      </div>
      {phase.kind === 'refused' && <ErrorAlert>{phase.text}</ErrorAlert>}
      <div ref={screen} className="terminal-screen" hidden={phase.kind === 'refused'} />
    </Section>
  );
}
