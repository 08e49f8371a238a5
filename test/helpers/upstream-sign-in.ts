/**
 * A person signing in through an upstream identity provider, driven over
 * HTTP with a cookie jar (test/helpers/browser.ts): from an authorization
 * request, press "Continue with <provider>", sign in at node-oidc-provider's
 * dev pages (upstream-op.ts), consent there and here, until the client's
 * redirect or a page that is none of those.
 */
import { type Browser, type HtmlForm, parseForms } from './browser.js'

export type SignInEnding = { kind: 'client'; url: URL } | { kind: 'page'; status: number; html: string; url: string; headers: Headers }

export interface SignInOptions {
  /** Called with each redirect into our callback (to tamper with `state`, say, or stop the provider). */
  tamper?: (url: URL) => void
  /** At the provider's login page, press its "[ Cancel ]" link instead of signing in (the provider then says access_denied). */
  cancelAtProvider?: boolean
}

/**
 * @param start the authorization request URL at bearward
 * @param clientOrigin where the client's redirect URI lives: reaching it ends the walk
 */
export async function upstreamSignIn(
  browser: Browser,
  start: string,
  clientOrigin: string,
  provider: string,
  login: string,
  o: SignInOptions = {},
): Promise<SignInEnding> {
  let res = await browser.get(start)
  let at = start
  let clicked = false
  for (let step = 0; step < 25; step++) {
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location') ?? '', at)
      if (next.origin === clientOrigin) return { kind: 'client', url: next }
      if (o.tamper && next.pathname.includes('/login/upstream/')) o.tamper(next)
      at = next.toString()
      res = await browser.get(at)
      continue
    }
    const html = await res.text()
    if (res.status !== 200) return { kind: 'page', status: res.status, html, url: at, headers: res.headers }
    const forms = parseForms(html, at)
    const opLogin = forms.find((f) => 'login' in f.fields)
    const opConsent = forms.find((f) => f.fields.prompt === 'consent')
    const ourConsent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    const button = forms.find((f) => f.fields.provider === provider)
    let form: HtmlForm
    let extra: Record<string, string> = {}
    if (opLogin && o.cancelAtProvider) {
      const cancel = /<a href="([^"]*\/abort)"/.exec(html)?.[1]
      if (cancel === undefined) throw new Error("the provider's login page has no Cancel link")
      at = new URL(cancel.replaceAll('&amp;', '&'), at).toString()
      res = await browser.get(at)
      continue
    }
    if (opLogin) [form, extra] = [opLogin, { login, password: 'any password' }]
    else if (opConsent) form = opConsent
    else if (ourConsent) [form, extra] = [ourConsent, { decision: 'allow' }]
    else if (button && !clicked) [form, clicked] = [button, true]
    else return { kind: 'page', status: res.status, html, url: at, headers: res.headers }
    browser.origin = new URL(at).origin
    res = await browser.submit(form, extra)
    at = form.action
  }
  throw new Error('sign-in did not finish in 25 steps')
}
