const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'", apos: "'" }

function unescapeHtml(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39|#x27|apos);/g, (_m, e: string) => ENTITIES[e] ?? _m)
}

export interface HtmlForm {
  action: string
  method: string
  fields: Record<string, string>
  /** Names and values of submit buttons. */
  buttons: Array<{ name: string; value: string }>
}

/** Read the forms of a page the way a browser would submit them (enough for our server-rendered pages). */
export function parseForms(html: string, pageUrl: string): HtmlForm[] {
  const forms: HtmlForm[] = []
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = m[1] ?? ''
    const body = m[2] ?? ''
    const action = unescapeHtml(/\baction="([^"]*)"/i.exec(attrs)?.[1] ?? '')
    const method = (/\bmethod="([^"]*)"/i.exec(attrs)?.[1] ?? 'GET').toUpperCase()
    const fields: Record<string, string> = {}
    const buttons: Array<{ name: string; value: string }> = []
    for (const input of body.matchAll(/<(input|button)\b([^>]*)>/gi)) {
      const a = input[2] ?? ''
      const name = /\bname="([^"]*)"/i.exec(a)?.[1]
      if (name === undefined) continue
      const value = unescapeHtml(/\bvalue="([^"]*)"/i.exec(a)?.[1] ?? '')
      const type = (/\btype="([^"]*)"/i.exec(a)?.[1] ?? (input[1]?.toLowerCase() === 'button' ? 'submit' : 'text')).toLowerCase()
      if (type === 'submit') buttons.push({ name: unescapeHtml(name), value })
      else fields[unescapeHtml(name)] = value
    }
    forms.push({ action: new URL(action || pageUrl, pageUrl).toString(), method, fields, buttons })
  }
  return forms
}

/**
 * A minimal browser: a cookie jar, manual redirects, form submission. It lets
 * tests go through the login and consent pages the way a person would.
 */
export class Browser {
  readonly cookies = new Map<string, string>()
  /** The Origin header sent with form posts (a browser sends the page's origin). */
  origin: string | null = null

  #store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair?.indexOf('=') ?? -1
      if (!pair || eq <= 0) continue
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  #cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async get(url: string): Promise<Response> {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: this.#cookieHeader() } })
    this.#store(res)
    return res
  }

  async submit(form: HtmlForm, extra: Record<string, string> = {}): Promise<Response> {
    const body = new URLSearchParams({ ...form.fields, ...extra })
    const headers: Record<string, string> = { cookie: this.#cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' }
    headers.origin = this.origin ?? new URL(form.action).origin
    const res = await fetch(form.action, { method: form.method, redirect: 'manual', headers, body })
    this.#store(res)
    return res
  }

  /** Follow redirects (GET) while they stay on `origin`; return the last response and its URL. */
  async follow(res: Response, url: string, origin: string): Promise<{ res: Response; url: string }> {
    let current = res
    let at = url
    for (let i = 0; i < 10 && current.status >= 300 && current.status < 400; i++) {
      const next = new URL(current.headers.get('location') ?? '', at).toString()
      if (new URL(next).origin !== origin) return { res: current, url: at }
      at = next
      current = await this.get(next)
    }
    return { res: current, url: at }
  }
}

/**
 * Drive /authorize as a person: log in (if asked), then press allow or deny on
 * the consent page (if shown). Returns the final redirect to the client.
 */
export async function authorizeAsPerson(
  browser: Browser,
  authorizationUrl: string,
  user: { username: string; password: string },
  decision: 'allow' | 'deny' = 'allow',
): Promise<URL> {
  const origin = new URL(authorizationUrl).origin
  let { res, url } = await browser.follow(await browser.get(authorizationUrl), authorizationUrl, origin)
  for (let step = 0; step < 4; step++) {
    if (res.status >= 300 && res.status < 400) return new URL(res.headers.get('location') ?? '', url)
    const html = await res.text()
    if (res.status !== 200) throw new Error(`unexpected ${res.status} from ${url}: ${html.slice(0, 300)}`)
    const forms = parseForms(html, url)
    const login = forms.find((f) => 'password' in f.fields || /name="password"/.test(html))
    let sent: Response
    if (login && 'username' in login.fields) {
      sent = await browser.submit(login, { username: user.username, password: user.password })
    } else {
      const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
      if (!consent) throw new Error(`no login or consent form at ${url}: ${html.slice(0, 500)}`)
      sent = await browser.submit(consent, { decision })
    }
    const next = await browser.follow(sent, url, origin)
    res = next.res
    url = next.url
  }
  throw new Error('authorization did not finish within 4 pages')
}
