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

  it('reads back what was signed with the same secret, IPv4 and IPv6', () => {
    for (const address of ['10.0.0.7', '::1', '2001:db8::5', '::ffff:10.0.0.7'])
      assert.equal(verifyAddress(secret, signAddress(secret, address)), address);
  });

  it('refuses another secret, a changed address or MAC, and what is not signed at all', () => {
    const signed = signAddress(secret, '10.0.0.7');
    const mac = signed.slice(signed.indexOf(';') + 1);
    for (const value of [
      signAddress('another', '10.0.0.7'),
      `10.0.0.8;${mac}`,
      `10.0.0.7;${mac.slice(0, -1)}${mac.endsWith('0') ? '1' : '0'}`,
      `10.0.0.7;${mac.slice(0, 62)}`,
      `10.0.0.7;${mac}00`,
      `10.0.0.7;${'z'.repeat(64)}`,
      '10.0.0.7',
      `;${mac}`,
      '',
    ])
      assert.equal(verifyAddress(secret, value), undefined, value);
  });
});

describe('a client-sent client address', () => {
  const server = useTestServer({ config: localFactoryConfig() });

  it("is ignored: the audit row has the request's own address", async () => {
    const s = server();
    const job = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '60'] });
    const r = await postFrom('127.0.0.2', `${s.api}/jobs/${job.id}/cancel`, s.adminToken, {
      [CLIENT_ADDRESS]: signAddress('a guess', '10.6.6.6'),
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
