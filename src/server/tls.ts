/**
 * HTTPS for `berth server`: the certificate and key files read and checked once at start (a bad
 * file stops the server with a ConfigError naming its setting), and the lines the server prints
 * about them: an expired certificate, or one that does not name the address agents are given.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { readCaFile } from '../agent/trust.js';
import type { Config, TlsConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';

/** What the HTTPS server is made with. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  /** The first certificate of `cert`: the server's own. */
  certificate: X509Certificate;
}

function readSetting(file: string, key: string, configFile?: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String(code);
    throw new ConfigError(key, `cannot read ${file}: ${why}`, configFile);
  }
}

function parseCertificate(pem: Buffer, tls: TlsConfig, configFile?: string): X509Certificate {
  try {
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate');
    return new X509Certificate(pem);
  } catch {
    throw new ConfigError(tls.keys.cert, `${tls.cert} is not a PEM certificate`, configFile);
  }
}

function parseKey(pem: Buffer, tls: TlsConfig, configFile?: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new ConfigError(
      tls.keys.key,
      `${tls.key} is not a PEM private key (or it is encrypted, which berth cannot read)`,
      configFile,
    );
  }
}

/** Reads and checks tls.cert and tls.key: readable, PEM, and a pair. */
export function loadServerTls(tls: TlsConfig, configFile?: string): ServerTls {
  const cert = readSetting(tls.cert, tls.keys.cert, configFile);
  const key = readSetting(tls.key, tls.keys.key, configFile);
  const certificate = parseCertificate(cert, tls, configFile);
  if (!certificate.checkPrivateKey(parseKey(key, tls, configFile)))
    throw new ConfigError(tls.keys.key, `${tls.key} is not the private key of ${tls.cert}`, configFile);
  return { cert, key, certificate };
}

/**
 * Each factory's own `ca` (what its agents will trust) must be a readable PEM file now, not when
 * its first agent fails. The default, tls.cert, was checked with the server's certificate.
 */
export function checkFactoryCas(config: Config, configFile?: string): void {
  for (const [name, f] of Object.entries(config.factories)) {
    if (f.ca === undefined || f.ca === config.tls?.cert) continue;
    try {
      readCaFile(f.ca);
    } catch (e) {
      throw new ConfigError(`factories.${name}.ca`, (e as Error).message, configFile);
    }
  }
}

/**
 * Warnings about a certificate clients will refuse: expired, or not naming the host of `url`, the
 * address the local CLI and the agents are given.
 */
export function tlsWarnings(tls: ServerTls, url: string, keyName: string, now = new Date()): string[] {
  const lines: string[] = [];
  const expires = new Date(tls.certificate.validTo);
  if (expires < now)
    lines.push(
      `warning: ${keyName}: the certificate expired on ${expires.toISOString()}; clients will refuse it`,
    );
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const named = isIP(host) ? tls.certificate.checkIP(host) : tls.certificate.checkHost(host);
  if (named === undefined)
    lines.push(
      `warning: ${keyName}: the certificate does not name ${host}, so agents and the CLI that reach the server at ${url} will refuse it; set publicUrl to https://NAME:PORT with a name it has`,
    );
  return lines;
}
