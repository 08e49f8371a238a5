/**
 * The two WebAuthn ceremonies, with @simplewebauthn/server doing the
 * cryptography: adding a passkey (registration) for a signed-in person, and
 * authentication, for one of two uses: signing in with a passkey alone (a
 * discoverable credential, user verification required, so the passkey is
 * both factors) or as the second factor after a password (the person's own
 * credentials allowed, user verification preferred).
 *
 * Challenges: random, handed out by `passkey-options`, kept in the store
 * under their hash for CHALLENGE_TTL_SEC and taken (deleted) by the first
 * response that names them, valid or not: a challenge is answered once.
 * Registration and second-factor challenges are bound to the person they
 * were issued to.
 * @see https://www.w3.org/TR/webauthn-3/#sctn-cryptographic-challenges
 */
import { passkeyCredentialType } from '../credential-changes.js'
import { createHash } from 'node:crypto'
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server'
import { epochSeconds } from '../../clock.js'
import type { RequestContext } from '../../context.js'
import { hashToken } from '../../store/hash.js'
import type { PasskeyChallengeRecord, PasskeyRecord } from '../../store/types.js'
import type { Person } from '../claims.js'
import type { AsContext } from '../context.js'
import { challengeOf, readAssertion, readRegistration } from './response-shape.js'

/**
 * @simplewebauthn/server, loaded at the first ceremony: it is the heaviest
 * import of the process (docs/performance.md), and most deployments and
 * every gateway-only one never hold a passkey ceremony.
 */
let webauthnLibrary: Promise<typeof import('@simplewebauthn/server')> | null = null
function webauthn(): Promise<typeof import('@simplewebauthn/server')> {
  webauthnLibrary ??= import('@simplewebauthn/server')
  return webauthnLibrary
}

/** How long a page may take between asking for options and answering (WebAuthn's recommended ceremony timeout). */
export const CHALLENGE_TTL_SEC = 300
const TIMEOUT_MS = CHALLENGE_TTL_SEC * 1000
/** A person names a passkey; longer names are cut. */
export const MAX_PASSKEY_NAME = 60
/** A name as typed: trimmed, control characters dropped, cut to MAX_PASSKEY_NAME; null when nothing is left. */
export function passkeyName(raw: string | undefined): string | null {
  const name = (raw ?? '')
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, MAX_PASSKEY_NAME)
    .trim()
  return name === '' ? null : name
}

/** More passkeys than this for one person is a mistake or an attack on the store. */
export const MAX_PASSKEYS = 20

/**
 * The WebAuthn user handle of a person: a hash of their `sub`, so it is
 * fixed-size (at most 64 bytes), reveals nothing, and needs no storage.
 */
export function userHandleOf(sub: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(`bearward webauthn user\0${sub}`).digest())
}

async function keepChallenge(as: AsContext, challenge: string, purpose: PasskeyChallengeRecord['purpose'], sub: string | null): Promise<void> {
  await as.store.passkeys.putChallenge(hashToken(challenge), { purpose, sub, expiresAt: epochSeconds(as.clock) + CHALLENGE_TTL_SEC }, CHALLENGE_TTL_SEC)
}

/** The person's passkeys as credential descriptors: ids, with the transports their browser reported as hints. */
function descriptorsOf(passkeys: readonly PasskeyRecord[]): Array<{ id: string; transports: PasskeyRecord['transports'] }> {
  return passkeys.map((p) => ({ id: p.credentialId, transports: p.transports }))
}

/** Options for navigator.credentials.create: a discoverable credential with user verification; the person's passkeys excluded. */
export async function registrationOptions(as: AsContext, person: Person): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await as.store.passkeys.list(person.sub)
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: as.as.webauthn.rpName,
    rpID: as.as.webauthn.rpId,
    userName: person.username,
    userID: userHandleOf(person.sub),
    userDisplayName: typeof person.claims.name === 'string' ? person.claims.name : person.username,
    timeout: TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: descriptorsOf(existing),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  })
  await keepChallenge(as, options.challenge, 'register', person.sub)
  return options
}

/**
 * What an authentication is for: a passkey alone (`sign-in`), or a passkey
 * of `person` after their password (`second-factor`).
 */
export type AssertionUse = { purpose: 'sign-in' } | { purpose: 'second-factor'; person: Person }

function subOf(use: AssertionUse): string | null {
  return use.purpose === 'second-factor' ? use.person.sub : null
}

/**
 * Options for navigator.credentials.get. Alone: any discoverable credential
 * of this RP (no ids given away), user verification required. As a second
 * factor: the person's own credentials, user verification preferred.
 * @see https://www.w3.org/TR/webauthn-3/#dictdef-publickeycredentialrequestoptions
 */
export async function authenticationOptions(as: AsContext, use: AssertionUse): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const own = use.purpose === 'second-factor' ? await as.store.passkeys.list(use.person.sub) : null
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: as.as.webauthn.rpId,
    timeout: TIMEOUT_MS,
    userVerification: own === null ? 'required' : 'preferred',
    ...(own === null ? {} : { allowCredentials: descriptorsOf(own) }),
  })
  await keepChallenge(as, options.challenge, use.purpose, subOf(use))
  return options
}

/** What every response must have been made for: this challenge, one of our origins, our RP ID. */
function expected(as: AsContext, challenge: string): { expectedChallenge: string; expectedOrigin: string[]; expectedRPID: string } {
  return { expectedChallenge: challenge, expectedOrigin: as.as.webauthn.origins, expectedRPID: as.as.webauthn.rpId }
}

/** Why a ceremony was refused, for the log (the page says less). */
export type Refusal = { ok: false; reason: string }

/** Take the challenge the response signed, once; it must be unexpired and issued for this purpose (and person). */
async function takeChallenge(as: AsContext, clientDataJSON: string, purpose: PasskeyChallengeRecord['purpose'], sub: string | null): Promise<string | Refusal> {
  const challenge = challengeOf(clientDataJSON)
  if (challenge === null) return { ok: false, reason: 'no challenge in the client data' }
  const record = await as.store.passkeys.takeChallenge(hashToken(challenge))
  if (record === null) return { ok: false, reason: 'unknown, used or expired challenge' }
  if (record.purpose !== purpose || record.sub !== sub) return { ok: false, reason: 'challenge issued for another ceremony' }
  return challenge
}

/** Verify a registration for the signed-in `person` and store the passkey under `name`. */
export async function addPasskey(
  as: AsContext,
  person: Person,
  posted: string | undefined,
  name: string,
): Promise<{ ok: true; passkey: PasskeyRecord } | Refusal> {
  const response = readRegistration(posted)
  if (response === null) return { ok: false, reason: 'not a registration response' }
  const challenge = await takeChallenge(as, response.response.clientDataJSON, 'register', person.sub)
  if (typeof challenge !== 'string') return challenge
  if ((await as.store.passkeys.list(person.sub)).length >= MAX_PASSKEYS) return { ok: false, reason: 'too many passkeys' }
  let info: Awaited<ReturnType<typeof verifyRegistrationResponse>>
  try {
    info = await (await webauthn()).verifyRegistrationResponse({ response, ...expected(as, challenge), requireUserVerification: true })
  } catch (err) {
    return { ok: false, reason: `registration not verified: ${(err as Error).message}` }
  }
  if (!info.verified) return { ok: false, reason: 'registration not verified' }
  const { credential, credentialDeviceType, credentialBackedUp } = info.registrationInfo
  const passkey: PasskeyRecord = {
    credentialId: credential.id,
    sub: person.sub,
    username: person.username,
    name: passkeyName(name) ?? 'Passkey',
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports: response.response.transports ?? [],
    deviceType: credentialDeviceType,
    backedUp: credentialBackedUp,
    createdAt: epochSeconds(as.clock),
    lastUsedAt: null,
  }
  if (!(await as.store.passkeys.add(passkey))) return { ok: false, reason: 'credential id already registered' }
  await as.credentialChanges.emit({
    sub: person.sub,
    credentialType: passkeyCredentialType(passkey.transports),
    changeType: 'create',
    friendlyName: passkey.name,
  })
  return { ok: true, passkey }
}

/**
 * Verify an authentication: the challenge (taken once, issued for this use
 * and person), the credential (known, the person's own when it is a second
 * factor, of a local user still configured with the same sub, the user
 * handle that person's), the signature (with user verification when the
 * passkey is alone), then the signature counter moved forward atomically. A
 * counter that did not move (a cloned authenticator, or a replay) is logged
 * as a warning and refused.
 * @see https://www.w3.org/TR/webauthn-3/#sctn-verifying-assertion
 */
export async function verifyAssertion(
  as: AsContext,
  ctx: RequestContext,
  posted: string | undefined,
  use: AssertionUse,
): Promise<{ ok: true; person: Person; passkey: PasskeyRecord } | Refusal> {
  const response = readAssertion(posted)
  if (response === null) return { ok: false, reason: 'not an authentication response' }
  const challenge = await takeChallenge(as, response.response.clientDataJSON, use.purpose, subOf(use))
  if (typeof challenge !== 'string') return challenge
  const passkey = await as.store.passkeys.get(response.id)
  if (passkey === null) return { ok: false, reason: 'unknown passkey' }
  if (use.purpose === 'second-factor' && passkey.sub !== use.person.sub) return { ok: false, reason: "another person's passkey" }
  const user = await as.people.byUsername(passkey.username)
  if (user === undefined || user.sub !== passkey.sub) return { ok: false, reason: 'the passkey belongs to no configured user' }
  const handle = response.response.userHandle
  if (handle !== undefined && handle !== Buffer.from(userHandleOf(passkey.sub)).toString('base64url')) return { ok: false, reason: 'user handle mismatch' }
  let info: Awaited<ReturnType<typeof verifyAuthenticationResponse>>
  try {
    info = await (await webauthn()).verifyAuthenticationResponse({
      response,
      ...expected(as, challenge),
      credential: {
        id: passkey.credentialId,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
        counter: passkey.counter,
        transports: passkey.transports,
      },
      requireUserVerification: use.purpose === 'sign-in',
    })
  } catch (err) {
    const message = (err as Error).message
    if (/counter/i.test(message)) return cloneWarning(ctx, passkey, message)
    return { ok: false, reason: `assertion not verified: ${message}` }
  }
  if (!info.verified) return { ok: false, reason: 'assertion not verified' }
  const { newCounter, credentialBackedUp } = info.authenticationInfo
  const used = await as.store.passkeys.use(passkey.sub, passkey.credentialId, { counter: newCounter, backedUp: credentialBackedUp, at: epochSeconds(as.clock) })
  if (used === 'missing') return { ok: false, reason: 'the passkey was removed meanwhile' }
  if (used === 'regressed') return cloneWarning(ctx, passkey, `counter ${newCounter} is not above the stored one`)
  return { ok: true, person: user, passkey }
}

function cloneWarning(ctx: RequestContext, passkey: PasskeyRecord, detail: string): Refusal {
  ctx.log.warn(
    { event: 'passkey_counter_regressed', sub: passkey.sub, credential: passkey.credentialId.slice(0, 16), stored: passkey.counter },
    'passkey refused: its signature counter went backwards (a cloned authenticator?)',
  )
  return { ok: false, reason: `signature counter regressed: ${detail}` }
}
