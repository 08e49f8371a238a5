import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** A self-signed certificate for 127.0.0.1/localhost, written into `dir`. */
export function selfSignedCert(dir: string, name = 'server'): { certFile: string; keyFile: string; cert: string } {
  const certFile = join(dir, `${name}.crt`)
  const keyFile = join(dir, `${name}.key`)
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  )
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8') }
}

/** A certificate and its key, as files and as PEM text. */
export interface IssuedCertificate {
  certFile: string
  keyFile: string
  cert: string
  key: string
}

/** What a client certificate says about its holder. */
export interface CertificateNames {
  /** openssl's `-subj` form: `/CN=client/O=Example`. */
  subject: string
  /** subjectAltName entries in openssl's form: `DNS:client.example.com`, `URI:spiffe://…`, `IP:10.0.0.1`, `email:a@b`. */
  san?: string[]
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: 'pipe' })
  } catch (err) {
    throw new Error(`openssl failed (install it: apt-get install -y openssl): ${(err as { stderr?: Buffer }).stderr?.toString() ?? String(err)}`)
  }
}

function issued(certFile: string, keyFile: string): IssuedCertificate {
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') }
}

/** A certificate authority (P-256, two days), written into `dir` as `<name>.crt` and `<name>.key`. */
export function certificateAuthority(dir: string, name = 'ca'): IssuedCertificate {
  const certFile = join(dir, `${name}.crt`)
  const keyFile = join(dir, `${name}.key`)
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ])
  return issued(certFile, keyFile)
}

/**
 * A client certificate (extendedKeyUsage clientAuth) with `names`, signed by
 * `ca`, or self-signed when `ca` is null.
 */
export function clientCertificate(dir: string, name: string, names: CertificateNames, ca: IssuedCertificate | null): IssuedCertificate {
  const certFile = join(dir, `${name}.crt`)
  const keyFile = join(dir, `${name}.key`)
  const extensions = ['-addext', 'extendedKeyUsage=clientAuth', ...(names.san?.length ? ['-addext', `subjectAltName=${names.san.join(',')}`] : [])]
  const signer = ca === null ? [] : ['-CA', ca.certFile, '-CAkey', ca.keyFile]
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    names.subject,
    ...extensions,
    ...signer,
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ])
  return issued(certFile, keyFile)
}
