import * as oidc from 'openid-client'

export type ProviderFailure =
  | { kind: 'unavailable'; reason: string }
  | { kind: 'refused'; error: string; reason: string }
  | { kind: 'rejected'; reason: string }

function isNetworkFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  // undici's fetch rejects with TypeError ("fetch failed"); openid-client's timeout aborts with TimeoutError.
  if (err instanceof TypeError || err.name === 'TimeoutError' || err.name === 'AbortError') return true
  return err.cause !== undefined && err.cause !== err && isNetworkFailure(err.cause)
}

/**
 * What a failure of the code exchange, id_token validation or UserInfo
 * means for the person: the provider is down (network, 5xx), it said no (an
 * OAuth error in the authorization response or at its token endpoint), or
 * its answer failed a check (state, iss, aud, nonce, signature, sub...).
 * The reason is for the log: error codes and check names, never a token.
 */
export function classifyProviderError(err: unknown): ProviderFailure {
  if (err instanceof oidc.AuthorizationResponseError) return { kind: 'refused', error: err.error, reason: `authorization response error ${err.error}` }
  if (err instanceof oidc.ResponseBodyError) {
    if (err.status >= 500) return { kind: 'unavailable', reason: `provider answered ${err.status}` }
    return { kind: 'refused', error: err.error, reason: `token endpoint error ${err.error}` }
  }
  if (isNetworkFailure(err)) return { kind: 'unavailable', reason: 'provider unreachable' }
  const code = err instanceof oidc.ClientError && typeof err.code === 'string' ? err.code : 'unknown'
  const message = err instanceof Error ? err.message : 'unknown'
  if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && /5\d\d/.test(String((err as { cause?: { status?: number } }).cause?.status ?? ''))) {
    return { kind: 'unavailable', reason: 'provider answered 5xx' }
  }
  return { kind: 'rejected', reason: `${code}: ${message}` }
}
