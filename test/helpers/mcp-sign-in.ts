/**
 * The OAuth sign-in an MCP client walks through bearward, once for both SDKs
 * (1.x `@modelcontextprotocol/sdk` and 2.x `@modelcontextprotocol/client`):
 * an OAuthClientProvider that keeps its client, tokens and PKCE verifier in
 * memory and, asked to send the person to the authorization URL, is the
 * person: it signs in and allows on the pages over HTTP and keeps what the
 * redirect back carries. Each SDK's test subclasses it with its client
 * metadata; the provider types differ between the SDKs only in names.
 */
import { DEMO_PASSWORD } from './as-config.js'
import { Browser, authorizeAsPerson } from './browser.js'

export class PersonAtTheBrowser<ClientInformation, Tokens> {
  readonly browser = new Browser()
  /** Every authorization URL the client sent the person to, in order. */
  readonly authorizationUrls: URL[] = []
  /** Off: the person does not sign in again; the URL is only recorded. */
  signIn = true
  #client: ClientInformation | undefined
  #tokens: Tokens | undefined
  #verifier = ''
  #callback: URLSearchParams | null = null

  /** `redirectUrl`: the client's registered redirect URI; `person` signs in (alice of as-config.ts by default). */
  constructor(
    readonly redirectUrl: string,
    readonly person: { username: string; password: string } = { username: 'alice', password: DEMO_PASSWORD },
  ) {}

  clientInformation(): ClientInformation | undefined {
    return this.#client
  }

  saveClientInformation(info: ClientInformation): void {
    this.#client = info
  }

  tokens(): Tokens | undefined {
    return this.#tokens
  }

  saveTokens(tokens: Tokens): void {
    this.#tokens = tokens
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier
  }

  codeVerifier(): string {
    return this.#verifier
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrls.push(url)
    if (!this.signIn) return
    const back = await authorizeAsPerson(this.browser, url.toString(), this.person)
    if (back.origin + back.pathname !== this.redirectUrl) throw new Error(`the person was sent to ${back.toString()}`)
    this.#callback = back.searchParams
  }

  /** The query of the last redirect back (code, state, iss), once. */
  takeCallback(): URLSearchParams {
    const callback = this.#callback
    if (callback === null) throw new Error('no authorization response')
    this.#callback = null
    return callback
  }

  /** The code of the last redirect back, once. */
  takeCode(): string {
    const code = this.takeCallback().get('code')
    if (code === null) throw new Error('no authorization code')
    return code
  }
}

/** What `p` rejects with (null when it resolves): the SDKs stop at the redirect by rejecting. */
export function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (err: unknown) => err,
  )
}
