/**
 * The pages a person sees when a sign-in at an upstream provider does not
 * work out: each says what happened in plain words and offers a link (never
 * an automatic redirect, so a failing provider cannot cause a loop).
 */
import type { ServerResponse } from 'node:http'
import { messagePage } from '../views/message.js'
import { showPage } from '../interaction/respond.js'

export interface FailureLink {
  href: string
  text: string
}

/** From the callback (login/upstream/<id>/callback) back to the other pages' level, three up. */
export const CALLBACK_ASSET_PREFIX = '../../../'

function show(
  res: ServerResponse,
  status: number,
  title: string,
  message: string,
  o: { extra?: string; detail?: string; link?: FailureLink; cookies: readonly string[]; deep?: boolean },
): void {
  const page = messagePage({
    title,
    message,
    // The callback (login/upstream/<id>/callback) is three levels below the other pages.
    ...(o.deep ? { assetPrefix: CALLBACK_ASSET_PREFIX } : {}),
    ...(o.extra === undefined ? {} : { extra: o.extra }),
    ...(o.detail === undefined ? {} : { detail: o.detail }),
    ...(o.link === undefined ? {} : { link: o.link }),
  })
  showPage(res, status, page, { cookies: o.cookies })
}

/** The callback names no sign-in this browser started (bad or reused `state`, or too late). */
export function showSignInExpired(res: ServerResponse, cookies: readonly string[]): void {
  show(res, 400, 'This sign-in cannot be completed', 'The sign-in was not started in this browser, was already used, or took too long.', {
    extra: 'Go back to the application and sign in again.',
    detail: 'invalid_state',
    cookies,
    deep: true,
  })
}

/** The provider cannot be reached (discovery, token endpoint, keys or UserInfo down). */
export function showProviderUnavailable(
  res: ServerResponse,
  providerName: string,
  link: FailureLink | undefined,
  cookies: readonly string[],
  atCallback = true,
): void {
  show(res, 503, `${providerName} is not available`, `${providerName} cannot be reached right now, so you were not signed in.`, {
    extra: 'Please try again in a moment, or choose another way to sign in.',
    detail: 'temporarily_unavailable',
    ...(link === undefined ? {} : { link }),
    cookies,
    deep: atCallback,
  })
}

/** The provider answered with an error (the person cancelled, or it refused the sign-in). */
export function showProviderRefused(res: ServerResponse, providerName: string, error: string, link: FailureLink | undefined, cookies: readonly string[]): void {
  const message =
    error === 'access_denied'
      ? `${providerName} did not sign you in: the sign-in was cancelled or refused there.`
      : `${providerName} did not sign you in: it answered with an error.`
  show(res, 400, `${providerName} did not sign you in`, message, {
    extra: 'You can try again, or choose another way to sign in.',
    // Only a well-formed RFC 6749 error code is repeated; anything else could be text the provider chose.
    detail: /^[a-z_]{1,64}$/.test(error) ? error : 'server_error',
    ...(link === undefined ? {} : { link }),
    cookies,
    deep: true,
  })
}

/** The provider's answer failed a check (iss, aud, nonce, signature, state binding, sub). */
export function showProviderAnswerRejected(res: ServerResponse, providerName: string, link: FailureLink | undefined, cookies: readonly string[]): void {
  show(res, 502, 'This sign-in could not be verified', `The answer from ${providerName} did not pass bearward's checks, so you were not signed in.`, {
    extra: 'Try again. If this keeps happening, tell the people who run this service.',
    detail: 'invalid_response',
    ...(link === undefined ? {} : { link }),
    cookies,
    deep: true,
  })
}

/** `allowed` refused the person; `back` returns `access_denied` to the application. */
export function showNotAllowed(res: ServerResponse, providerName: string, who: string | null, back: FailureLink | undefined, cookies: readonly string[]): void {
  const account = who === null ? `Your ${providerName} account` : `Your ${providerName} account (${who})`
  show(res, 403, 'You cannot sign in here', `${account} is not allowed to sign in to this service.`, {
    extra: 'If you think you should have access, ask the people who run this service. You can also sign in with another account.',
    detail: 'access_denied',
    ...(back === undefined ? {} : { link: back }),
    cookies,
    deep: true,
  })
}
