/**
 * The frames of a remote agent's channel (src/agent/channel-protocol.ts): every message comes back
 * as it was sent, bytes as bytes; and what is not a message — a short or unknown binary frame, JSON
 * of the wrong shape, a message meant for the other side — is refused, not half-taken: the server
 * takes nothing from a node's agent unchecked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeToAgent,
  decodeToServer,
  encode,
  type Frame,
  type ToAgent,
  type ToServer,
} from '../../src/agent/channel-protocol.js';

const bytes = Uint8Array.from([0, 1, 2, 255, 10, 13]);
const asFrame = (f: Frame): [Buffer, boolean] =>
  typeof f === 'string' ? [Buffer.from(f), false] : [f, true];

describe('the agent channel protocol', () => {
  const toAgent: ToAgent[] = [
    { type: 'exec', session: 1, jobId: 40, workerId: 7, rank: 0, command: ['sh', '-c', 'echo "é"'] },
    {
      type: 'exec',
      session: 2,
      jobId: 40,
      workerId: 7,
      rank: 3,
      command: ['bash'],
      tty: { cols: 80, rows: 24 },
    },
    { type: 'exec', session: 3, jobId: 40, workerId: 7, rank: 0, command: [], forward: 8888 },
    {
      type: 'exec',
      session: 4,
      jobId: 40,
      workerId: 7,
      rank: 0,
      command: [],
      attach: { cols: 1000, rows: 1 },
    },
    { type: 'exec-input', session: 4_294_967_295, data: bytes },
    { type: 'exec-input', session: 5, data: new Uint8Array(0) },
    { type: 'exec-input', session: 5, data: null },
    { type: 'exec-kill', session: 6 },
    { type: 'exec-flow', session: 6, paused: true },
    { type: 'exec-resize', session: 6, cols: 120, rows: 40 },
  ];
  const toServer: ToServer[] = [
    { type: 'exec-output', session: 1, stream: 'stdout', data: bytes },
    { type: 'exec-output', session: 1, stream: 'stderr', data: Buffer.from('oops\n') },
    { type: 'exec-exit', session: 1, exitCode: 0, signal: null },
    { type: 'exec-exit', session: 2, exitCode: null, signal: 'SIGKILL' },
    { type: 'exec-exit', session: 3, exitCode: null, signal: null, message: 'nothing listens' },
  ];
  /** A message with its bytes as plain arrays, so a Buffer and a Uint8Array of the same bytes compare equal. */
  const plain = (m: unknown): unknown =>
    m && typeof m === 'object'
      ? Object.fromEntries(
          Object.entries(m).map(([k, v]) => [k, v instanceof Uint8Array ? [...v] : plain(v)]),
        )
      : m;
  const same = (a: unknown, b: unknown) => assert.deepEqual(plain(a), plain(b));

  it('gives back every message as it was sent, bytes in binary frames', () => {
    for (const m of toAgent) {
      const f = encode(m);
      assert.equal(typeof f !== 'string', m.type === 'exec-input' && m.data !== null, m.type);
      same(decodeToAgent(...asFrame(f)), m);
      assert.equal(decodeToServer(...asFrame(f)), undefined, `${m.type} is not the server's to take`);
    }
    for (const m of toServer) {
      const f = encode(m);
      same(decodeToServer(...asFrame(f)), m);
      assert.equal(decodeToAgent(...asFrame(f)), undefined, `${m.type} is not the agent's to take`);
    }
  });

  it('refuses what is not a message', () => {
    const refused: [string, Buffer, boolean][] = [
      ['a binary frame shorter than its header', Buffer.of(1, 0, 0), true],
      ['an unknown kind of bytes', Buffer.of(9, 0, 0, 0, 1, 65), true],
      ['text that is not JSON', Buffer.from('{"type":'), false],
      ['a JSON array', Buffer.from('[1,2]'), false],
      [
        'an exit code past 255',
        Buffer.from('{"type":"exec-exit","session":1,"exitCode":300,"signal":null}'),
        false,
      ],
      [
        'a session that is not a number',
        Buffer.from('{"type":"exec-exit","session":"1","exitCode":0,"signal":null}'),
        false,
      ],
      [
        'a message that is not text',
        Buffer.from('{"type":"exec-exit","session":1,"exitCode":0,"signal":null,"message":{}}'),
        false,
      ],
      ['an unknown type', Buffer.from('{"type":"start","session":1}'), false],
    ];
    for (const [what, frame, binary] of refused) assert.equal(decodeToServer(frame, binary), undefined, what);
    const toAgentRefused: [string, string][] = [
      [
        'a command that is not strings',
        '{"type":"exec","session":1,"jobId":3,"workerId":1,"rank":0,"command":[1]}',
      ],
      [
        'a terminal of 0 columns',
        '{"type":"exec","session":1,"jobId":3,"workerId":1,"rank":0,"command":["sh"],"tty":{"cols":0,"rows":5}}',
      ],
      [
        'a port past 65535',
        '{"type":"exec","session":1,"jobId":3,"workerId":1,"rank":0,"command":[],"forward":70000}',
      ],
      ['input as text', '{"type":"exec-input","session":1,"data":"abc"}'],
      ['an exec naming no job', '{"type":"exec","session":1,"workerId":1,"rank":0,"command":["sh"]}'],
      ['a flow that is not a boolean', '{"type":"exec-flow","session":1,"paused":1}'],
    ];
    for (const [what, text] of toAgentRefused)
      assert.equal(decodeToAgent(Buffer.from(text), false), undefined, what);
  });

  it("keeps at most 4096 characters of an agent's message", () => {
    const long = JSON.stringify({
      type: 'exec-exit',
      session: 1,
      exitCode: 1,
      signal: null,
      message: 'x'.repeat(10_000),
    });
    const m = decodeToServer(Buffer.from(long), false);
    assert.equal(m?.type === 'exec-exit' ? m.message?.length : undefined, 4096);
  });
});
