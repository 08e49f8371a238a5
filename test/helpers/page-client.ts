/**
 * One browser of a person's (or a stranger's) on the sign-in pages: a cookie
 * jar at one client address, behind a trusted proxy (`X-Forwarded-For`), and
 * the authenticator-app codes it types. The second-factor tests
 * (test/as/second-factor-throttle.test.ts, test/security/sign-in-factors.test.ts)
 * drive the pages with it.
 */
import * as OTPAuth from 'otpauth'
import { ALICE_PASSWORD, formWith, setCookies } from './as-front.js'

/** The authenticator-app secret those tests store for their person. */
export const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'

export function codeAt(ms: number): string {
  return OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(TOTP_SECRET), timestamp: ms, algorithm: 'SHA1', digits: 6, period: 30 })
}

/** A code that is none of the three accepted now (this step, the one before and after). */
export function wrongCodeAt(ms: number): string {
  const accepted = new Set([codeAt(ms - 30_000), codeAt(ms), codeAt(ms + 30_000)])
  for (let n = 0; ; n++) {
    const c = String(n).padStart(6, '0')
    if (!accepted.has(c)) return c
  }
}

export class PageClient {
  readonly cookies = new Map<string, string>()
  constructor(
    readonly base: string,
    public address: string,
  ) {}

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    return { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'x-forwarded-for': this.address, ...extra }
  }

  #keep(res: Response): Response {
    for (const [name, c] of setCookies(res.headers)) {
      if (/max-age=0/i.test(c.attributes)) this.cookies.delete(name)
      else this.cookies.set(name, c.value)
    }
    return res
  }

  async get(path: string): Promise<{ status: number; html: string; location: string | null }> {
    const res = this.#keep(await fetch(`${this.base}/${path}`, { redirect: 'manual', headers: this.#headers() }))
    return { status: res.status, html: await res.text(), location: res.headers.get('location') }
  }

  async post(path: string, fields: Record<string, string>, origin = new URL(this.base).origin): Promise<Response> {
    const headers = this.#headers({ 'content-type': 'application/x-www-form-urlencoded', origin })
    return this.#keep(await fetch(`${this.base}/${path}`, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(fields) }))
  }

  /** The password at the account page's login form; the answer (303 to second-factor for a person with an app), its body read. */
  async password(username = 'alice', password = ALICE_PASSWORD): Promise<Response> {
    const page = await this.get('account')
    const csrf = formWith(page.html, `${this.base}/account`, 'password').fields.csrf ?? ''
    const res = await this.post('login', { csrf, username, password, next: 'account' })
    await res.arrayBuffer()
    return res
  }

  /** A code (or, with `field`, a recovery code) at the pending sign-in's page: its status and page. */
  async code(code: string, field = 'code'): Promise<{ status: number; html: string; res: Response }> {
    const res = await this.post('second-factor', { csrf: await this.codeCsrf(), [field]: code })
    return { status: res.status, html: await res.text(), res }
  }

  /** The pending sign-in's CSRF token, from its code page. */
  async codeCsrf(): Promise<string> {
    const page = await this.get('second-factor')
    return formWith(page.html, `${this.base}/second-factor`, 'code').fields.csrf ?? ''
  }
}
