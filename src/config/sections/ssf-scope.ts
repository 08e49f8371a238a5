/**
 * The scope a Shared Signals receiver's client-credentials token carries to
 * manage its stream (docs/signals.md). Built in (authorization-server.ts),
 * and left out of strangers' default scopes (registration, metadata
 * documents): those clients use the code flow.
 */
export const SSF_STREAM_SCOPE = 'ssf:stream'
