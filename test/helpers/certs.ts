/**
 * Real certificates for HTTPS tests, made at test time by Debian's openssl in a fresh directory:
 * a CA, a server certificate it signs for 127.0.0.1 and localhost, and a second CA that signed
 * nothing the server presents (what a client given the wrong CA trusts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const OPENSSL = '/usr/bin/openssl';

export interface TestCerts {
  dir: string;
  /** The CA that signed `cert`. */
  ca: string;
  /** The server's certificate (127.0.0.1, localhost) and its key. */
  cert: string;
  key: string;
  /** Another CA, and its key (a valid key that is not `cert`'s). */
  otherCa: string;
  otherKey: string;
  remove(): void;
}

/** openssl's arguments below are kept as on a command line, a flag beside its value. */
const openssl = (dir: string, args: string[]) =>
  execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

/** A self-signed CA (P-256, two days) named `cn`: its certificate and key files. */
function makeCa(dir: string, name: string, cn: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  // prettier-ignore
  openssl(dir, [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${cn}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'berth-certs-'));
  const ca = makeCa(dir, 'ca', 'berth test CA');
  const other = makeCa(dir, 'other-ca', 'some other CA');
  const cert = join(dir, 'server.pem');
  const key = join(dir, 'server.key');
  const csr = join(dir, 'server.csr');
  const ext = join(dir, 'server.ext');
  writeFileSync(
    ext,
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  // prettier-ignore
  openssl(dir, [
    'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', csr, '-subj', '/CN=localhost',
  ]);
  // prettier-ignore
  openssl(dir, [
    'x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial',
    '-out', cert, '-days', '2', '-extfile', ext,
  ]);
  return {
    dir,
    ca: ca.cert,
    cert,
    key,
    otherCa: other.cert,
    otherKey: other.key,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
