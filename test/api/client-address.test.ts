/**
 * The signed client-address header (api/client-address.ts): only a value signed with the
 * replicas' secret names an address; and a server records a request's own address whatever
 * header the client sends (on SQLite there is no secret: the header is never read). Forwarding
 * between replicas: test/replicas/client-address.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLIENT_ADDRESS, signAddress, verifyAddress } from '../../src/api/client-address.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, postFrom, useTestServer } from '../helpers/server.js';

describe('the signed client address', () => {
  const secret = 'f'.repeat(64);
  const req = { method: 'POST', url: '/api/v1/jobs/7/cancel', authorization: 'Bearer berth_u_abc' };
  const now = 1_800_000_000_000;

  it('reads back what was signed with the same secret for the same request, IPv4 and IPv6', () => {
    for (const address of ['10.0.0.7', '::1', '2001:db8::5', '::ffff:10.0.0.7'])
      assert.equal(verifyAddress(secret, signAddress(secret, address, req, now), req, now), address);
  });

  it('refuses another secret, a changed address, time or MAC, and what is not signed at all', () => {
    const signed = signAddress(secret, '10.0.0.7', req, now);
    const [, at, mac] = signed.split(';') as [string, string, string];
    for (const value of [
      signAddress('another', '10.0.0.7', req, now),
      `10.0.0.8;${at};${mac}`,
      `10.0.0.7;${Number(at) + 1};${mac}`,
      `10.0.0.7;${at};${mac.slice(0, -1)}${mac.endsWith('0') ? '1' : '0'}`,
      `10.0.0.7;${at};${mac.slice(0, 62)}`,
      `10.0.0.7;${at};${mac}00`,
      `10.0.0.7;${mac}`,
      '10.0.0.7',
      `;${at};${mac}`,
      '',
    ])
      assert.equal(verifyAddress(secret, value, req, now), undefined, value);
  });

  it('names the address only for the request it came with, and only for a minute', () => {
    const signed = signAddress(secret, '10.0.0.7', req, now);
    for (const other of [
      { ...req, method: 'DELETE' },
      { ...req, url: '/api/v1/jobs/8/cancel' },
      { ...req, authorization: 'Bearer berth_u_other' },
      { method: req.method, url: req.url },
    ])
      assert.equal(verifyAddress(secret, signed, other, now), undefined, JSON.stringify(other));
    assert.equal(verifyAddress(secret, signed, req, now + 59_000), '10.0.0.7');
    assert.equal(verifyAddress(secret, signed, req, now + 61_000), undefined, 'a minute later');
  });
});

describe('a client-sent client address', () => {
  const server = useTestServer({ config: localFactoryConfig() });

  it("is ignored: the audit row has the request's own address", async () => {
    const s = server();
    const job = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '60'] });
    const r = await postFrom('127.0.0.2', `${s.api}/jobs/${job.id}/cancel`, s.adminToken, {
      [CLIENT_ADDRESS]: signAddress('a guess', '10.6.6.6', {
        method: 'POST',
        url: `/api/v1/jobs/${job.id}/cancel`,
      }),
    });
    assert.equal(r.status, 200, r.text);
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'cancelled');
    const audit = await call<{ action: string; subject: string; address: string | null }[]>(
      s.api,
      s.adminToken,
      'GET',
      '/audit?project=default',
    );
    assert.deepEqual(
      audit.body.filter((e) => e.action === 'job.cancel').map((e) => [e.subject, e.address]),
      [[String(job.id), '127.0.0.2']],
    );
  });
});
