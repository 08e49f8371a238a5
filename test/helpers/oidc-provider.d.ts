/** The little of oidc-provider (a devDependency without types) the tests use. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'
  export interface Account {
    accountId: string
    claims(use: string, scope: string): Promise<Record<string, unknown>> | Record<string, unknown>
  }
  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    on(event: string, listener: (...args: unknown[]) => void): this
  }
  export default Provider
}
